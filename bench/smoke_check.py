"""Checks the JSON of a small playbook benchmark run (make bench-smoke): every part ran, ours and the naive way,
a first run and (but for the read-only health part) a second, with figures a reader can use, and our second
(no-change) run within its tool-call budget.

    python3 bench/smoke_check.py FILE.json [--max-second-calls-per-npu N]

Exit status 1 with one line per problem.
"""

import argparse
import json
import sys

KEYS = ("nodes", "run", "ours_s", "naive_s", "ours_calls_per_node", "naive_calls_per_node", "controller_cpu_s")


def problems(results, parts, npus, budget):
    out = []
    for part in parts:
        rows = results.get(part)
        if not rows:
            out.append("%s: no rows (did the part run?)" % part)
            continue
        runs = sorted(set(row.get("run") for row in rows))
        # the health part reads only (one run); site and window change, then run again to change nothing
        wanted = ["first"] if part == "health" else ["first", "second"]
        if runs != wanted:
            out.append("%s: runs %s, expected %s" % (part, runs, " and ".join("a %s run" % run for run in wanted)))
        for row in rows:
            where = "%s, %s nodes, %s run" % (part, row.get("nodes"), row.get("run"))
            for failure in row.get("failures") or []:
                out.append("%s: the %s run failed (rc %s): %s" % (where, failure.get("who"), failure.get("rc"),
                                                                  str(failure.get("error", ""))[-600:]))
            missing = [key for key in KEYS if row.get(key) is None]
            if missing:
                out.append("%s: no %s" % (where, ", ".join(missing)))
                continue
            for key in ("ours_s", "naive_s", "controller_cpu_s"):
                if not row[key] > 0:
                    out.append("%s: %s is %r, expected a time above 0" % (where, key, row[key]))
            if row.get("ours_sim_cpu_s") is None:
                out.append("%s: the simulator CPU of our run was not measured (no cpu_s in the call logs)" % where)
            if row["run"] == "second" and row["ours_calls_per_node"] > budget * npus:
                out.append("%s: %s tool calls per node on a run that changes nothing, more than the budget of %d per NPU "
                           "(%d NPUs): a stage reads again what it already read"
                           % (where, row["ours_calls_per_node"], budget, npus))
            if row["run"] == "first" and row["ours_calls_per_node"] <= (row["naive_calls_per_node"] or 0) / 10:
                out.append("%s: %s tool calls per node against %s of the naive way: did our run change anything?"
                           % (where, row["ours_calls_per_node"], row["naive_calls_per_node"]))
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file")
    parser.add_argument("--part", action="append", dest="parts", help="parts that must be there (default site, window)")
    parser.add_argument("--npus", type=int, default=8, help="NPUs per node of the simulated PoD (default %(default)s)")
    parser.add_argument("--max-second-calls-per-npu", type=int, default=None,
                        help="tool calls per NPU allowed on a run that changes nothing (default: window 16, site 60)")
    args = parser.parse_args(argv)
    with open(args.file) as handle:
        results = json.load(handle)
    found = []
    for part in args.parts or ["site", "window"]:
        budget = args.max_second_calls_per_npu or {"window": 16, "site": 60}.get(part, 60)
        found.extend(problems(results, [part], args.npus, budget))
    for line in found:
        print("bench smoke: %s" % line)
    if not found:
        for part in args.parts or ["site", "window"]:
            for row in results[part]:
                print("bench smoke: %s %d nodes %s run: ours %.1f s, naive %.1f s, calls/node %s / %s" % (
                    part, row["nodes"], row["run"], row["ours_s"], row["naive_s"], row["ours_calls_per_node"],
                    row["naive_calls_per_node"]))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
