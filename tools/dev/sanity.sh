#!/usr/bin/env bash
# ansible-test sanity on a real (copied) ansible_collections/npuops/ascend tree.
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$PWD
work=$(mktemp -d /tmp/npuops-sanity.XXXXXX)
trap 'rm -rf "$work"' EXIT
dest=$work/ansible_collections/npuops/ascend
mkdir -p "$dest"
# tracked and untracked-but-not-ignored files, plus .git so ansible-test honours .gitignore
# (files deleted in the working tree but not yet committed are left out)
git ls-files -co --exclude-standard -z | while IFS= read -r -d '' f; do if [ -e "$f" ]; then printf '%s\0' "$f"; fi; done \
  | tar -C "$repo" --null -T - -cf - | tar -C "$dest" -xf -
cp -a .git "$dest/.git"
venv=${NPUOPS_VENV:-$repo/.venv}
pyver=$("$venv/bin/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
cd "$dest"
PATH="$venv/bin:$PATH" "$venv/bin/ansible-test" sanity --python "$pyver" --local --color no "$@"
