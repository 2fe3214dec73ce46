#!/usr/bin/env bash
# The oldest ansible-core in the supported range: 2.19 on Python 3.11. Runs the unit tests and
# ansible-test sanity (but its style checks) with it, in its own venv, so both ends of the range are checked by make test.
set -euo pipefail
cd "$(dirname "$0")/../.."
if .venv/bin/python -c 'import sys; sys.exit(0 if sys.version_info[:2] < (3, 12) else 1)'; then
  echo "core219: the main .venv already runs ansible-core 2.19 (Python 3.11); nothing more to do"
  exit 0
fi
py=""
for cand in "${PYENV_ROOT:-/root/.pyenv}"/versions/3.11.*/bin/python3 /usr/bin/python3.11; do
  [ -x "$cand" ] && py=$cand
done
if [ -z "$py" ]; then
  echo "core219: no Python 3.11 here; ansible-core 2.19 not checked" >&2
  exit 1
fi
venv=.venv-core2.19
stamp=$venv/.npuops-setup
want="$(sha256sum requirements-dev.txt requirements.txt | sha256sum | cut -c1-16)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  rm -rf "$venv"
  "$py" -m venv "$venv"
  for attempt in 1 2 3; do  # a registry that drops a connection now and then must not fail make test
    "$venv/bin/pip" install -q --disable-pip-version-check -r requirements-dev.txt -r requirements.txt && break
    [ "$attempt" -lt 3 ] || exit 1
    echo "core219: pip install failed (attempt $attempt of 3); trying again in 10 s" >&2
    sleep 10
  done
  echo "$want" > "$stamp"
fi
reqs=$("$venv/bin/python" -c 'import ansible_test, os; print(os.path.join(os.path.dirname(ansible_test.__file__), "_internal", "python_requirements.py"))')
pipver=$(grep -oE "pip='[0-9.]+'" "$reqs" | head -n1 | grep -oE '[0-9.]+')
cache="$HOME/.ansible/test/cache/get_pip_${pipver//./_}.py"
cmp -s .ci/get_pip_standin.py "$cache" || { mkdir -p "$(dirname "$cache")"; cp .ci/get_pip_standin.py "$cache"; }
echo "core219: $("$venv/bin/ansible" --version | head -n1) on Python $("$venv/bin/python" -c 'import sys; print(sys.version.split()[0])')"
"$venv/bin/python" -m pytest -q -p no:cacheprovider tests/unit
# the sanity tests that depend on the ansible-core version (module docs and argument specs, imports, compile); the style
# checks (pylint, pep8, yamllint, shellcheck) give the same answer under either end of the range and run in make sanity
NPUOPS_VENV="$PWD/$venv" tools/dev/sanity.sh --skip-test pylint --skip-test pep8 --skip-test yamllint --skip-test shellcheck
