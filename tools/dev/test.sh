#!/usr/bin/env bash
# make test: every check, in six lanes that run side by side once `make setup` is done.
#   checks:        lint changelog-lint docs-check galaxy-importer sanity core219 compat unit
#   molecule-1:    the molecule scenarios a3, check_mode, default (PoDs on 127.0.12, 127.0.10, 127.0.2)
#   molecule-2:    the molecule scenarios faults, roce_change_window (PoDs on 127.0.20, 127.0.21)
#   integration-1: tests/integration but the files of INTEGRATION_2 in the Makefile (PoD on 127.0.4)
#   integration-2: the files of INTEGRATION_2 (PoDs on 127.0.18, 127.0.13, 127.0.15, 127.0.16, 127.0.17)
#   bench:         bench-smoke (PoD on 127.0.5)
# The PoD lanes mostly wait (SSH round trips, simulated tool latency, link flaps; the bench smoke
# also the naive playbooks' fixed sleeps) while the checks lane mostly computes, so together they
# take far less than one after the other on a 2-core machine. Each lane uses its own addresses and
# directories (tests/sim: 127.0.3). The output of each lane goes to build/test-<lane>.log and is printed when the lane
# ends, with the time every target took; the exit status is that of the first lane that failed.
#   tools/dev/test.sh [lane ...]     # default: all six
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
mkdir -p build

declare -A TARGETS=(
  [checks]="lint changelog-lint docs-check galaxy-importer sanity core219 compat unit"
  [molecule-1]="molecule-1"
  [molecule-2]="molecule-2"
  [integration-1]="integration-1"
  [integration-2]="integration-2"
  [bench]="bench-smoke"
)
lanes=("$@")
[ "${#lanes[@]}" -gt 0 ] || lanes=(checks molecule-1 molecule-2 integration-1 integration-2 bench)

run_lane() {
  local lane=$1 target started rc
  for target in ${TARGETS[$lane]}; do
    started=$SECONDS
    echo "== [$lane] make $target"
    # -o setup: make test ran setup once before the lanes; a lane must not rebuild the venv under another
    # the CPU time of the target's processes that were waited for (the 2 cores are the limit of make test)
    TIMEFORMAT="== [$lane] make $target: %R s, CPU %U s user + %S s system"
    time make --no-print-directory -o setup "$target"
    rc=$?
    if [ "$rc" -ne 0 ]; then
      echo "== [$lane] make $target FAILED (exit $rc) after $((SECONDS - started)) s"
      return "$rc"
    fi
    echo "== [$lane] make $target passed in $((SECONDS - started)) s"
  done
}

declare -A PIDS=()
for lane in "${lanes[@]}"; do
  if [ -z "${TARGETS[$lane]:-}" ]; then
    echo "test.sh: unknown lane $lane (lanes: ${!TARGETS[*]})" >&2
    exit 2
  fi
  run_lane "$lane" > "build/test-$lane.log" 2>&1 &
  PIDS[$lane]=$!
done

status=0
failed=()
started=$SECONDS
for lane in "${lanes[@]}"; do
  wait "${PIDS[$lane]}"
  rc=$?
  echo "==================== lane $lane: exit $rc ($((SECONDS - started)) s since the lanes started) ===================="
  cat "build/test-$lane.log"
  if [ "$rc" -ne 0 ]; then
    failed+=("$lane")
    [ "$status" -ne 0 ] || status=$rc
  fi
done
echo "== time per target:"
for lane in "${lanes[@]}"; do grep -h '^== \[' "build/test-$lane.log"; done | grep -E 'passed|FAILED|CPU'
if [ "${#failed[@]}" -gt 0 ]; then
  # the end of a failed lane's log again, last: a CI page that keeps only the tail of the output still shows why
  for lane in "${failed[@]}"; do
    echo "== the last 60 lines of the failed lane $lane (build/test-$lane.log):"
    tail -n 60 "build/test-$lane.log"
  done
  echo "make test FAILED in lane(s): ${failed[*]} (see above, or build/test-<lane>.log)"
fi
exit "$status"
