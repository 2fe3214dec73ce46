#!/usr/bin/env bash
# Run every molecule scenario (molecule/<scenario>/) on simulated PoDs, one after another.
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH="$PWD/.venv/bin:$PATH"
# this checkout's collections root (make setup links it); NPUOPS_COLLECTIONS_ROOT overrides it
NPUOPS_COLLECTIONS_ROOT=$(tools/dev/collections_root.sh)
export NPUOPS_COLLECTIONS_ROOT
export ANSIBLE_COLLECTIONS_PATH="$NPUOPS_COLLECTIONS_ROOT"
export MOLECULE_GLOB='molecule/*/molecule.yml'
export PYTHONPATH="$NPUOPS_COLLECTIONS_ROOT${PYTHONPATH:+:$PYTHONPATH}"
if [ "$#" -gt 0 ]; then
  for scenario in "$@"; do
    TIMEFORMAT="molecule.sh: scenario $scenario took %R s (CPU %U s user + %S s system)"
    time molecule test -s "$scenario"
  done
else
  molecule test --all
fi
