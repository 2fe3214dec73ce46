#!/usr/bin/env bash
# Managed nodes run Python 3.9 / 3.10 (openEuler 22.03, Ubuntu 22.04). Everything that runs on
# a node (the modules and module_utils with the parsers) is tested on those interpreters too
# (from the image's pyenv builds), in small venvs with pytest. The simulator is not node-side
# code: the simulated nodes run it with the host's /usr/bin/python3 (tools/pod/podlib/host.py),
# and `make unit` tests it; it is left out here. The modules
# import Ansible's module_utils, which the controller ships with every module; here the
# installed ansible-core package is put on the path of the old interpreter for that.
set -euo pipefail
cd "$(dirname "$0")/../.."
shim=$(mktemp -d /tmp/npuops-compat.XXXXXX)
trap 'rm -rf "$shim"' EXIT
ln -s "$(.venv/bin/python -c 'import ansible, os; print(os.path.dirname(ansible.__file__))')" "$shim/ansible"
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
  if [ ! -x "$venv/bin/pytest" ] || ! "$venv/bin/python" -c 'import yaml' 2>/dev/null; then
    "$py" -m venv "$venv"
    "$venv/bin/pip" install -q --disable-pip-version-check 'pytest==8.3.5' 'PyYAML==6.0.2'
  fi
  echo "compat: Python $("$venv/bin/python" -c 'import sys; print(sys.version.split()[0])')"
  PYTHONPATH="$shim" "$venv/bin/python" -m pytest -q -p no:cacheprovider \
    tests/unit/plugins/module_utils tests/unit/plugins/modules
  ran=$((ran + 1))
done
[ "$ran" -gt 0 ] || echo "compat: no Python 3.9/3.10 interpreter here; node-side code was only checked by ruff's py39 target"
