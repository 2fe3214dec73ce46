#!/usr/bin/env bash
# make demo: a simulated PoD of N nodes (default 4), then playbooks/site.yml on it and its report.
set -euo pipefail
cd "$(dirname "$0")/../.."
nodes=${1:-4}
export PATH="$PWD/.venv/bin:$PATH"
# this checkout's collections root (make setup links it); NPUOPS_COLLECTIONS_ROOT overrides it
ANSIBLE_COLLECTIONS_PATH=$(tools/dev/collections_root.sh)
export ANSIBLE_COLLECTIONS_PATH
export ANSIBLE_HOST_KEY_CHECKING=False ANSIBLE_PIPELINING=True ANSIBLE_FORKS=8
export ANSIBLE_STDOUT_CALLBACK=ansible.builtin.default ANSIBLE_CALLBACK_RESULT_FORMAT=yaml
reports=$PWD/npuops-reports
tools/pod/podctl up --nodes "$nodes" --flap-seconds 2
inv=inventories/sim/hosts.yml
started=$(date +%s)
rc=0
ansible-playbook -i "$inv" playbooks/site.yml -e "npuops_report_dir=$reports" || rc=$?
run=""
for dir in "$reports"/[0-9]*T[0-9]*Z; do
  [ -d "$dir" ] && run=$(basename "$dir")   # run ids sort by time: the last one is this run
done
echo
echo "== site.yml on $nodes simulated nodes: exit $rc after $(( $(date +%s) - started )) s"
if [ -n "$run" ]; then
  echo "== Stage reports (JSON for tools, Markdown for people) in $reports/$run:"
  (cd "$reports/$run" && find . -type f | sort | sed 's#^\./#   #')
  echo
  echo "== Result of every stage on every node ($reports/$run/summary.json):"
  python3 - "$reports/$run/summary.json" <<'PY'
import json, sys
summary = json.load(open(sys.argv[1]))
for node, stages in sorted(summary["nodes"].items()):
    for key in sorted(stages, key=lambda k: int(k[5:])):
        item = stages[key]
        print("   %-8s stage%s %-14s %-8s %s" % (node, item["stage"], item["role"], item["status"],
                                                "; ".join(item["failures"] or item["warnings"])[:100]))
PY
  if [ -f "$reports/$run/stage3-hccl_bench/bandwidth.md" ]; then
    echo
    cat "$reports/$run/stage3-hccl_bench/bandwidth.md"
  fi
  if [ -f "$reports/$run/stage1-baseline/baseline.md" ]; then
    echo
    cat "$reports/$run/stage1-baseline/baseline.md"
  fi
  if [ -f "$reports/$run/stage4-roce_lossless/roce_lossless.md" ]; then
    echo
    sed -n '/^## Cross-node/,$p' "$reports/$run/stage4-roce_lossless/roce_lossless.md"
  fi
  if [ -f "$reports/$run/stage5-hccl_env/hccl_env.md" ]; then
    echo
    sed -n '/^## Parallel strategy/,$p' "$reports/$run/stage5-hccl_env/hccl_env.md"
  fi
  if [ -f "$reports/$run/stage9-regression/regression.md" ]; then
    echo
    cat "$reports/$run/stage9-regression/regression.md"
  fi
  echo
  [ -f "$reports/$run/report.html" ] && echo "The run's report: $reports/$run/report.html (and report.md beside it)"
fi
echo
echo "The simulated PoD stays up: ssh -F inventories/sim/ssh_config node01 npu-smi info"
echo "Take it down with: make demo-down"
exit "$rc"
