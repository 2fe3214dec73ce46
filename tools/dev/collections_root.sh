#!/usr/bin/env bash
# Print the ansible_collections root of a checkout (default: the checkout holding this script):
#   $NPUOPS_COLLECTIONS_ROOT when set, else
#   /tmp/npuops-collections-<uid>-<first 12 hex digits of sha256 of the checkout's physical path>
# so two clones on one machine never share it. It lies outside the checkout on purpose: a link
# back to the repository inside the repository would make tree-walking tools recurse.
# conftest.py computes the same path in Python (tests/unit/test_collections_root.py compares).
#
# Usage: collections_root.sh [--link] [CHECKOUT]
#   --link  also point <root>/ansible_collections/npuops/ascend at the checkout (make setup)
set -euo pipefail
link=no
if [ "${1:-}" = "--link" ]; then
  link=yes
  shift
fi
repo=$(cd -- "${1:-$(dirname -- "${BASH_SOURCE[0]}")/../..}" >/dev/null && pwd -P)
if [ -n "${NPUOPS_COLLECTIONS_ROOT:-}" ]; then
  root=$NPUOPS_COLLECTIONS_ROOT
else
  root=/tmp/npuops-collections-$(id -u)-$(printf '%s' "$repo" | sha256sum | cut -c1-12)
fi
if [ "$link" = yes ]; then
  mkdir -p "$root/ansible_collections/npuops"
  if [ "$(readlink "$root/ansible_collections/npuops/ascend" 2>/dev/null)" != "$repo" ]; then
    ln -sfn "$repo" "$root/ansible_collections/npuops/ascend"
  fi
fi
printf '%s\n' "$root"
