#!/usr/bin/env bash
# Runs the module benchmark on its own simulated PoD (base /tmp/npuops-bench, 127.0.5.N) and
# prints the result table. Arguments are passed to bench/bench_modules.py (see --help).
# Needs root. See docs/performance.md.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD

# this checkout's collections root (make setup links it); an explicit ANSIBLE_COLLECTIONS_PATH wins
ANSIBLE_COLLECTIONS_PATH="${ANSIBLE_COLLECTIONS_PATH:-$(tools/dev/collections_root.sh)}"
export ANSIBLE_COLLECTIONS_PATH
export PATH="$repo/.venv/bin:$PATH"
export ANSIBLE_NOCOLOR=1

python=python3
if [ -x "$repo/.venv/bin/python3" ]; then
  python="$repo/.venv/bin/python3"
fi
# The controller's compiled plugins, as a controller keeps them after its first run (Python caches them in
# __pycache__). This image sets PYTHONDONTWRITEBYTECODE=1, so nothing would be cached and every task's worker
# process would compile the collection's filter plugins again (Ansible loads all of them to find one filter).
"$python" -m compileall -q "$repo/plugins" >/dev/null
exec "$python" "$repo/bench/bench_modules.py" "$@"
