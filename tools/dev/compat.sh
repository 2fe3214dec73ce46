#!/usr/bin/env bash
# Managed nodes run Python 3.9 / 3.10 (openEuler 22.03, Ubuntu 22.04). The parsers, the
# desired-state layer and the simulator need only the standard library, so their tests run
# on those interpreters too (from the image's pyenv builds), in small venvs with pytest.
set -euo pipefail
cd "$(dirname "$0")/../.."
ran=0
for want in 3.9 3.10; do
  py=""
  for cand in "${PYENV_ROOT:-/root/.pyenv}"/versions/"$want".*/bin/python3; do
    [ -x "$cand" ] && py=$cand
  done
  if [ -z "$py" ]; then
    echo "compat: no Python $want found under pyenv; skipping it"
    continue
  fi
  venv=.venv-py$want
  if [ ! -x "$venv/bin/pytest" ]; then
    "$py" -m venv "$venv"
    "$venv/bin/pip" install -q --disable-pip-version-check 'pytest==8.3.5'
  fi
  echo "compat: Python $("$venv/bin/python" -c 'import sys; print(sys.version.split()[0])')"
  "$venv/bin/python" -m pytest -q -p no:cacheprovider \
    tests/unit/plugins/module_utils/test_parsers.py tests/unit/plugins/module_utils/test_state.py \
    tests/sim --ignore=tests/sim/test_podctl.py
  ran=$((ran + 1))
done
[ "$ran" -gt 0 ] || echo "compat: no Python 3.9/3.10 interpreter here; node-side code was only checked by ruff's py39 target"
