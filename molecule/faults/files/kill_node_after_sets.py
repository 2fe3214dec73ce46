"""Make a simulated node drop off the network at a chosen moment of a change window (molecule test helper).

Waits until the watched node's simulator call log holds COUNT more `hccn_tool ... -s ...` calls than when it started,
then kills (by PID) every sshd of the victim node's UTS namespace as podctl recorded it in <base>/pod.json: only
processes whose executable is /usr/sbin/sshd and whose UTS namespace is the node's. `podctl up` restarts the node.
Prints what it killed as JSON; exits 1 when the count was not reached before the timeout.

    kill_node_after_sets.py --base /tmp/npuops-molecule-faults --victim node02 --watch node02 --count 1
"""

import argparse
import json
import os
import signal
import sys
import time


def set_calls(path, offset):
    count = 0
    if not os.path.exists(path):
        return 0
    with open(path, encoding="utf-8") as handle:
        handle.seek(offset)
        for line in handle:
            try:
                call = json.loads(line)
            except ValueError:
                continue
            if call.get("tool") == "hccn_tool" and "-s" in (call.get("argv") or []):
                count += 1
    return count


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--base", required=True)
    parser.add_argument("--victim", required=True)
    parser.add_argument("--watch", required=True)
    parser.add_argument("--count", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=240)
    args = parser.parse_args()
    calls = os.path.join(args.base, "nodes", args.watch, "state", "calls.jsonl")
    offset = os.path.getsize(calls) if os.path.exists(calls) else 0
    deadline = time.monotonic() + args.timeout
    while set_calls(calls, offset) < args.count:
        if time.monotonic() > deadline:
            print(json.dumps({"killed": [], "msg": "%s made fewer than %d sets" % (args.watch, args.count)}))
            return 1
        time.sleep(0.02)
    with open(os.path.join(args.base, "pod.json"), encoding="utf-8") as handle:
        uts = json.load(handle)["nodes"][args.victim]["uts_ns"]
    killed = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.readlink("/proc/%s/exe" % pid) == "/usr/sbin/sshd" and os.readlink("/proc/%s/ns/uts" % pid) == uts:
                os.kill(int(pid), signal.SIGKILL)
                killed.append(int(pid))
        except OSError:
            pass
    print(json.dumps({"killed": killed, "victim": args.victim}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
