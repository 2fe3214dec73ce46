#!/usr/bin/env bash
# Idempotent development setup: system packages, the pinned .venv, ansible-test's pip bootstrap.
# A second run only checks and returns.
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$PWD

# --- system packages (only when missing) -----------------------------------------------------
missing=()
[ -x /usr/sbin/sshd ] || missing+=(openssh-server)
command -v ssh >/dev/null 2>&1 || missing+=(openssh-client)
command -v shellcheck >/dev/null 2>&1 || missing+=(shellcheck)
command -v unshare >/dev/null 2>&1 || missing+=(util-linux)
command -v ip >/dev/null 2>&1 || missing+=(iproute2)
command -v timeout >/dev/null 2>&1 || missing+=(coreutils)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
# the parallel shells of the benchmark's baseline (bench/check/run_pdsh.sh)
command -v clush >/dev/null 2>&1 || missing+=(clustershell)
command -v pdsh >/dev/null 2>&1 || missing+=(pdsh)
# the simulated nodes' thin tool client (tools/npu_sim/client.c); without it the tools run their own interpreter
command -v cc >/dev/null 2>&1 || missing+=(gcc libc6-dev)
if [ "${#missing[@]}" -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "setup: missing system packages ${missing[*]}; run as root or install them with apt-get" >&2
    exit 1
  fi
  echo "setup: installing ${missing[*]}"
  apt-get update -q
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# --- controller Python: pyenv 3.13 (ansible-core 2.21) if present, else the system 3.11 (2.19) --
py=""
for cand in "${PYENV_ROOT:-/root/.pyenv}"/versions/3.13.*/bin/python3; do
  [ -x "$cand" ] && py=$cand
done
if [ -z "$py" ]; then
  for cand in python3.13 python3.12 python3; do
    if command -v "$cand" >/dev/null 2>&1; then py=$(command -v "$cand"); break; fi
  done
fi
stamp=.venv/.npuops-setup
want="$("$py" -c 'import sys; print(sys.version.split()[0])') $(sha256sum requirements-dev.txt requirements.txt | sha256sum | cut -c1-16)"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  echo "setup: .venv is up to date ($want)"
else
  echo "setup: creating .venv with $py"
  rm -rf .venv
  "$py" -m venv .venv
  .venv/bin/pip install -q --disable-pip-version-check -r requirements-dev.txt -r requirements.txt
  echo "$want" > "$stamp"
fi

# --- ansible-test's pip bootstrap script, which it would download (unreachable here) ----------
reqs=$(.venv/bin/python -c 'import ansible_test, os; print(os.path.join(os.path.dirname(ansible_test.__file__), "_internal", "python_requirements.py"))')
pipver=$(grep -oE "pip='[0-9.]+'" "$reqs" | head -n1 | grep -oE '[0-9.]+')
cache="$HOME/.ansible/test/cache/get_pip_${pipver//./_}.py"
if ! cmp -s .ci/get_pip_standin.py "$cache"; then
  mkdir -p "$(dirname "$cache")"
  cp .ci/get_pip_standin.py "$cache"
  echo "setup: installed the pip bootstrap stand-in at $cache"
fi

# --- this checkout's own ansible_collections tree for ansible-playbook / ansible-doc / molecule --
root=$(tools/dev/collections_root.sh --link "$repo")
# compiled plugins, as a controller caches them on first use: with PYTHONDONTWRITEBYTECODE set (this image sets it)
# every task's worker process would compile the collection's filter plugins again (docs/performance.md)
.venv/bin/python -m compileall -q plugins >/dev/null
# the simulated nodes' thin tool client, built once here rather than by the first PoD's nodes at once
PYTHONPATH=tools "$(command -v /usr/bin/python3 || command -v python3)" -c 'from npu_sim import control; print("setup: simulator client", control.client_path() or "not built (no cc)")'
echo "setup: done ($(.venv/bin/ansible --version | head -n1)); collections root $root"
