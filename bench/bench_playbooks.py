"""The playbook benchmark of bench/run.sh: site.yml, the change window and stage 0 against the usual way.

Parts (``--only``):

- ``site``: playbooks/site.yml against bench/naive/site.yml (the same stages as command/shell tasks);
- ``window``: playbooks/roce_lossless.yml against bench/naive/window.yml (stage 4 alone);
- ``health``: playbooks/health_check.yml against the method's check script run over the PoD with pdsh
  (bench/check/run_pdsh.sh): the floor a tool with structure, gates and reports must come close to.

For each node count of ``--scale-nodes`` a fresh simulated PoD is brought up (per-call latency
``--playbook-latency-ms``, link flap ``--flap-seconds``) before every first run, so that the first run
changes every node and the second run finds nothing to do. Ours and naive alternate; each figure is the
median of ``--repeat`` runs. Per run the wall time, the controller CPU (user + sys of the ansible-playbook
process tree, from getrusage of the waited-for children) and the simulator CPU (the sum of the CPU the
simulated tool calls report in the nodes' call logs, when the simulator records it) are kept apart, so
a reader sees where the time goes. Forks = node count. Ours runs with inventories/example/ansible.cfg, the
naive playbooks with Ansible's stock settings (``--naive-config example``: with ours too); the change window
runs as one batch of every node (``--window-batch``), as the naive window does.
"""

import configparser
import json
import os
import resource
import shutil
import statistics
import subprocess
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SIM_GROUP_VARS = os.path.join(REPO, "inventories", "sim", "group_vars")
EXAMPLE_CFG = os.path.join(REPO, "inventories", "example", "ansible.cfg")
PARTS = {
    # part: (ours playbook, naive playbook or script)
    "site": (os.path.join(REPO, "playbooks", "site.yml"), os.path.join(REPO, "bench", "naive", "site.yml")),
    "window": (os.path.join(REPO, "playbooks", "roce_lossless.yml"), os.path.join(REPO, "bench", "naive", "window.yml")),
    "health": (os.path.join(REPO, "playbooks", "health_check.yml"), os.path.join(REPO, "bench", "check", "run_pdsh.sh")),
}
RUNS = ("first", "second")
# bench/callback_plugins/npuops_bench_stats.py: host-tasks per host and the main process's own CPU of every run
STATS_CALLBACK_DIR = os.path.join(REPO, "bench", "callback_plugins")
STATS_CALLBACK = "npuops_bench_stats"


def _cpu_children():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _why(stdout, stderr):
    """What a failed run said: the first failed task of its output (its message), else the end of the output."""
    lines = stdout.splitlines()
    for number, line in enumerate(lines):
        if line.startswith("fatal:") or line.startswith("failed:"):
            return "\n".join(lines[max(0, number - 2):number + 25]).strip()
    return (stdout[-2500:] + "\n" + stderr[-1500:]).strip()


def _callbacks_enabled(config):
    """The callbacks an ansible.cfg enables (the benchmark's own is added to them, never put in their place)."""
    parser = configparser.ConfigParser(interpolation=None, inline_comment_prefixes=None)
    parser.read(config)
    value = parser.get("defaults", "callbacks_enabled", fallback="")
    return [name.strip() for name in value.split(",") if name.strip()]


def task_figures(stats, nodes):
    """From the stats callback's JSON: host-tasks of the first node, the median over the other nodes (the figure a
    PoD grows by per node), and the main process's CPU per host-task in ms (over every host, localhost too)."""
    if not stats or not stats.get("hosts"):
        return {}
    hosts = stats["hosts"]
    first = hosts.get(nodes[0]) if nodes else None
    others = [hosts[node] for node in nodes[1:] if node in hosts]
    total = sum(hosts.values())
    return {
        "tasks_first_node": first,
        "tasks_per_node": _median(others),
        "host_tasks": total,
        "main_cpu_s": stats.get("main_cpu_s"),
        "main_cpu_ms_per_host_task": round(1000.0 * stats["main_cpu_s"] / total, 2) if total and stats.get(
            "main_cpu_s") is not None else None,
    }


def _median(values):
    values = [v for v in values if v is not None]
    return round(statistics.median(values), 3) if values else None


class PlaybookBench:
    """Runs one part at every node count; results go to bench.results[part] as a list of rows."""

    def __init__(self, bench):
        self.bench = bench
        self.args = bench.args
        self.reports = os.path.join(bench.workdir, "reports")
        # ours runs with the collection's example ansible.cfg (pipelining, ControlPersist, forks); the naive way
        # with Ansible's stock settings (an empty ansible.cfg), unless --naive-config example gives it ours too
        stock = os.path.join(bench.workdir, "stock-ansible.cfg")
        with open(stock, "w") as handle:
            handle.write("# Ansible's stock settings\n[defaults]\n")
        self.configs = {"ours": EXAMPLE_CFG, "naive": EXAMPLE_CFG if self.args.naive_config == "example" else stock}
        self.facts = os.path.join(bench.workdir, "facts")
        self.stats = os.path.join(bench.workdir, "stats.json")

    # --- the PoD ---------------------------------------------------------------------------
    def fresh_pod(self, nodes):
        """A PoD of fresh nodes (the state of a node that was never tuned), with the sim inventory's variables."""
        if self.bench.pod_up:
            self.bench.down()
        self.bench.up(nodes, self.args.playbook_latency_ms, self.args.flap_seconds)
        target = os.path.join(os.path.dirname(self.bench.inventory), "group_vars")
        if not os.path.isdir(target):
            shutil.copytree(SIM_GROUP_VARS, target)
        self.bench.warm_up()

    def calls(self):
        """(tool calls per node, simulator CPU seconds of all nodes or None) since the last clear."""
        counts, cpu, measured = [], 0.0, False
        for node in self.bench.nodes:
            calls = self.bench.read_calls(node)
            counts.append(len(calls))
            for call in calls:
                value = call.get("cpu_s")
                if isinstance(value, (int, float)):
                    cpu += value
                    measured = True
        return (sum(counts) / len(counts) if counts else 0.0), (round(cpu, 3) if measured else None)

    # --- one run ---------------------------------------------------------------------------
    def argv(self, who, part, nodes):
        ours, naive = PARTS[part]
        if who == "naive" and part == "health":
            # -b: the base checks (health, ECC, link, address, net_health), which health_check.yml also makes on a
            # PoD that is not tuned yet
            return [naive, self.bench.inventory, self.bench.ssh_config, "--", "-b"]
        playbook = ours if who == "ours" else naive
        argv = [self.bench.ansible_playbook, "-i", self.bench.inventory, "-f", str(nodes), playbook,
                "-e", "npuops_report_dir=%s" % self.reports]
        if who == "ours" and part == "window":
            # the naive window has no batches: ours changes the same nodes at once unless --window-batch says otherwise
            argv += ["-e", "roce_lossless_batch=%s" % self.args.window_batch]
        return argv

    def env(self, who):
        env = dict(self.bench.env, ANSIBLE_CONFIG=self.configs[who])
        env["ANSIBLE_CACHE_PLUGIN_CONNECTION"] = self.facts  # never the operator's own fact cache
        env["ANSIBLE_CALLBACK_PLUGINS"] = STATS_CALLBACK_DIR
        env["ANSIBLE_CALLBACKS_ENABLED"] = ",".join(_callbacks_enabled(self.configs[who]) + [STATS_CALLBACK])
        env["NPUOPS_BENCH_STATS"] = self.stats
        return env

    def timed(self, who, part, nodes):
        """One run: (wall s, controller CPU s, calls per node, simulator CPU s, rc)."""
        self.bench.clear_calls()
        if os.path.exists(self.stats):
            os.unlink(self.stats)
        cpu_before = _cpu_children()
        started = time.monotonic()
        proc = subprocess.run(self.argv(who, part, nodes), env=self.env(who), capture_output=True, text=True,
                              check=False)
        wall = time.monotonic() - started
        controller = _cpu_children() - cpu_before
        per_node, sim_cpu = self.calls()
        sample = {"wall": round(wall, 3), "controller_cpu": round(controller, 3), "calls": round(per_node, 1),
                  "sim_cpu": sim_cpu, "rc": proc.returncode}
        if os.path.exists(self.stats):
            with open(self.stats) as handle:
                sample.update(task_figures(json.load(handle), self.bench.nodes))
        if proc.returncode != 0 and not (part == "health" and who == "naive" and proc.returncode == 1):
            # the check script exits 1 on a problem; a fresh simulated PoD has none, so any failure is reported. The
            # run is kept out of the medians and goes on: one failed run must not lose the figures of the others.
            why = _why(proc.stdout, proc.stderr)
            sample["error"] = "%s %s on %d nodes failed (rc %d):\n%s" % (who, part, nodes, proc.returncode, why)
            self.log(sample["error"])
        return sample

    # --- a part at every node count ----------------------------------------------------------
    def run_part(self, part, log):
        self.log = log
        rows = []
        runs = ("first",) if part == "health" else RUNS
        for nodes in self.args.playbook_nodes:
            samples = {(who, run): [] for who in ("ours", "naive") for run in runs}
            for repeat in range(self.args.repeat):
                order = ("ours", "naive") if repeat % 2 == 0 else ("naive", "ours")
                for who in order:
                    self.fresh_pod(nodes)
                    for run in runs:
                        log("%s: %d nodes, %s, %s run %d/%d" % (part, nodes, who, run, repeat + 1, self.args.repeat))
                        samples[(who, run)].append(self.timed(who, part, nodes))
            for run in runs:
                failures = [dict(who=who, run=run, rc=x["rc"], error=x["error"]) for who in ("ours", "naive")
                            for x in samples[(who, run)] if "error" in x]
                ours = [x for x in samples[("ours", run)] if "error" not in x]
                naive = [x for x in samples[("naive", run)] if "error" not in x]
                row = {
                    "nodes": nodes, "run": run,
                    "ours_s": _median([s["wall"] for s in ours]),
                    "naive_s": _median([s["wall"] for s in naive]),
                    "ours_calls_per_node": _median([s["calls"] for s in ours]),
                    "naive_calls_per_node": _median([s["calls"] for s in naive]),
                    "controller_cpu_s": _median([s["controller_cpu"] for s in ours]),
                    "naive_controller_cpu_s": _median([s["controller_cpu"] for s in naive]),
                    "ours_sim_cpu_s": _median([s["sim_cpu"] for s in ours]),
                    "naive_sim_cpu_s": _median([s["sim_cpu"] for s in naive]),
                    "tasks_per_node": _median([s.get("tasks_per_node") for s in ours]),
                    "tasks_first_node": _median([s.get("tasks_first_node") for s in ours]),
                    "naive_tasks_per_node": _median([s.get("tasks_per_node") for s in naive]),
                    "main_cpu_ms_per_host_task": _median([s.get("main_cpu_ms_per_host_task") for s in ours]),
                    "controller_cpu_per_node_s": (round(_median([s["controller_cpu"] for s in ours]) / nodes, 3)
                                                  if ours else None),
                    "samples": {"ours": ours, "naive": naive},
                    "failures": failures,
                }
                rows.append(row)
        if self.bench.pod_up:
            self.bench.down()
        return rows


def table(part, rows):
    """Markdown table of one part."""
    naive = "pdsh check script" if part == "health" else "naive"
    lines = ["| nodes | run | ours | %s | ratio | calls/node ours / %s | controller CPU ours / %s | simulator CPU ours / %s "
             "| host-tasks per node (first node) ours / %s | main process CPU per host-task |"
             % (naive, naive, naive, naive, naive),
             "|---|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        if row["ours_s"] is None or row["naive_s"] is None:
            lines.append("| %d | %s | %s | %s | - | - | - | - | - | - |" % (
                row["nodes"], row["run"], "failed" if row["ours_s"] is None else "%.1f s" % row["ours_s"],
                "failed" if row["naive_s"] is None else "%.1f s" % row["naive_s"]))
            continue
        ratio = ("%.1fx" % (row["naive_s"] / row["ours_s"])) if row["ours_s"] else "-"

        def pair(a, b, fmt):
            return "%s / %s" % (fmt % a if a is not None else "-", fmt % b if b is not None else "-")
        tasks = "%s (%s) / %s" % tuple("-" if value is None else "%.0f" % value for value in (
            row.get("tasks_per_node"), row.get("tasks_first_node"), row.get("naive_tasks_per_node")))
        main_cpu = row.get("main_cpu_ms_per_host_task")
        lines.append("| %d | %s | %.1f s | %.1f s | %s | %s | %s | %s | %s | %s |" % (
            row["nodes"], row["run"], row["ours_s"], row["naive_s"], ratio,
            pair(row["ours_calls_per_node"], row["naive_calls_per_node"], "%.0f"),
            pair(row["controller_cpu_s"], row["naive_controller_cpu_s"], "%.1f s"),
            pair(row["ours_sim_cpu_s"], row["naive_sim_cpu_s"], "%.1f s"),
            tasks, "-" if main_cpu is None else "%.1f ms" % main_cpu))
    return "\n".join(lines)
