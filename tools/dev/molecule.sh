#!/usr/bin/env bash
# Run every molecule scenario (molecule/<scenario>/) on simulated PoDs, one after another.
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH="$PWD/.venv/bin:$PATH"
export NPUOPS_COLLECTIONS_ROOT="${NPUOPS_COLLECTIONS_ROOT:-/tmp/npuops-collections-$(id -u)}"
export ANSIBLE_COLLECTIONS_PATH="$NPUOPS_COLLECTIONS_ROOT"
export MOLECULE_GLOB='molecule/*/molecule.yml'
export PYTHONPATH="$NPUOPS_COLLECTIONS_ROOT${PYTHONPATH:+:$PYTHONPATH}"
if [ "$#" -gt 0 ]; then
  for scenario in "$@"; do molecule test -s "$scenario"; done
else
  molecule test --all
fi
