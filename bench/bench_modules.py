"""Benchmark of the npuops.ascend info and change modules on a simulated PoD.

Brings up its own PoD (base /tmp/npuops-bench, nodes on 127.0.5.N) with tools/pod/podctl,
runs the measurements described in docs/performance.md, prints a table and always takes the
PoD down again. Python 3 standard library only; Ansible and ssh are run as subprocesses with
argv lists. Needs root (podctl).
"""

import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from bench_playbooks import PARTS as PLAYBOOK_PARTS
from bench_playbooks import PlaybookBench
from bench_playbooks import table as playbook_table

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PODCTL = os.path.join(REPO, "tools", "pod", "podctl")
TOOL_PATHS = {
    "hccn_tool": "/usr/local/Ascend/driver/tools/hccn_tool",
    "npu-smi": "/usr/local/sbin/npu-smi",
}
HCCN_TOOL = TOOL_PATHS["hccn_tool"]
DEVICES = list(range(8))
MTU = 9000
PFC_PRIORITIES = [4]


def log(msg):
    sys.stderr.write("bench: %s\n" % msg)
    sys.stderr.flush()


def pfc_bitmap(priorities):
    return ",".join("1" if prio in priorities else "0" for prio in range(8))


def summarize(values):
    """(median, min, max) of a list of numbers."""
    return statistics.median(values), min(values), max(values)


def fmt_s(values):
    med, low, high = summarize(values)
    if len(values) == 1:
        return "%.2f s" % med
    return "%.2f s (%.2f-%.2f)" % (med, low, high)


class BenchError(Exception):
    pass


class Bench:
    def __init__(self, args):
        self.args = args
        self.base = args.base
        self.prefix = args.address_prefix
        self.workdir = tempfile.mkdtemp(prefix="npuops-bench-")
        self.inventory = os.path.join(self.workdir, "inventory", "hosts.yml")
        self.ssh_config = os.path.join(self.base, "ssh_config")
        self.pod_up = False
        venv_bin = os.path.join(REPO, ".venv", "bin")
        self.ansible = self._tool(venv_bin, "ansible")
        self.ansible_playbook = self._tool(venv_bin, "ansible-playbook")
        self.env = dict(os.environ)
        collections = self.env.get("ANSIBLE_COLLECTIONS_PATH") or subprocess.check_output(
            [os.path.join(REPO, "tools", "dev", "collections_root.sh")], text=True).strip()
        if not os.path.isdir(os.path.join(collections, "ansible_collections", "npuops", "ascend")):
            raise BenchError("npuops.ascend is not installed under %s; run tools/dev/setup.sh (or make setup)" % collections)
        self.env.update({
            "ANSIBLE_COLLECTIONS_PATH": collections,
            "ANSIBLE_HOST_KEY_CHECKING": "False",
            "ANSIBLE_DEPRECATION_WARNINGS": "False",
            "ANSIBLE_RETRY_FILES_ENABLED": "False",
            "ANSIBLE_NOCOLOR": "1",
            "LC_ALL": "C.UTF-8",
        })
        self.results = {"machine": machine_info(), "settings": vars(args), "read": {}, "change": {}, "scale": []}

    @staticmethod
    def _tool(venv_bin, name):
        path = os.path.join(venv_bin, name)
        if os.access(path, os.X_OK):
            return path
        found = shutil.which(name)
        if not found:
            raise BenchError("%s not found (neither in %s nor on PATH)" % (name, venv_bin))
        return found

    # --- processes -------------------------------------------------------------------------
    def run(self, argv, check=True):
        """Run argv; returns (wall seconds, CompletedProcess)."""
        started = time.monotonic()
        proc = subprocess.run(argv, env=self.env, capture_output=True, text=True, check=False)
        elapsed = time.monotonic() - started
        if check and proc.returncode != 0:
            raise BenchError("command failed (rc %d): %s\n--- stdout (tail)\n%s\n--- stderr (tail)\n%s" % (
                proc.returncode, " ".join(shlex.quote(a) for a in argv),
                proc.stdout[-3000:], proc.stderr[-3000:]))
        return elapsed, proc

    def podctl(self, *args):
        return self.run([PODCTL] + list(args))

    def up(self, nodes, latency_ms, flap_seconds):
        self.pod_up = True
        self.podctl("up", "--nodes", str(nodes), "--base", self.base, "--address-prefix", self.prefix,
                    "--inventory", self.inventory, "--latency-ms", str(latency_ms),
                    "--flap-seconds", str(flap_seconds))
        self.nodes = ["node%02d" % i for i in range(1, nodes + 1)]

    def down(self):
        self.podctl("down", "--base", self.base)
        self.pod_up = False

    def ansible_adhoc(self, pattern, module, forks=8, module_args=None):
        argv = [self.ansible, "-i", self.inventory, pattern, "-m", module, "-f", str(forks)]
        if module_args:
            argv += ["-a", module_args]
        return self.run(argv)[0]

    def playbook(self, name, plays, forks=8):
        path = os.path.join(self.workdir, name)
        with open(path, "w") as handle:
            json.dump(plays, handle, indent=1)  # JSON is YAML
        return self.run([self.ansible_playbook, "-i", self.inventory, "-f", str(forks), path])[0]

    def ssh(self, node, script, check=True):
        return self.run(["ssh", "-F", self.ssh_config, node, script], check=check)

    def warm_up(self, pattern="all"):
        """One untimed round trip so every measurement starts with a warm SSH master connection."""
        self.ansible_adhoc(pattern, "ansible.builtin.ping", forks=16)
        for node in self.nodes[:1]:
            self.ssh(node, "true")

    # --- call log --------------------------------------------------------------------------
    def calls_path(self, node):
        return os.path.join(self.base, "nodes", node, "state", "calls.jsonl")

    def clear_calls(self):
        for node in self.nodes:
            with open(self.calls_path(node), "w"):
                pass

    def read_calls(self, node):
        path = self.calls_path(node)
        if not os.path.exists(path):
            return []
        with open(path) as handle:
            return [json.loads(line) for line in handle if line.strip()]

    @staticmethod
    def tool_window(calls):
        """Seconds from the start of the first tool call to the end of the last one."""
        if not calls:
            return 0.0
        return max(c["time"] + c["duration_s"] for c in calls) - min(c["time"] for c in calls)

    # --- benchmark A: read path ------------------------------------------------------------
    def bench_read(self):
        args = self.args
        log("A: read path, 1 node, latency %d ms per tool call" % args.latency_ms)
        self.up(1, args.latency_ms, 0)
        node = self.nodes[0]
        self.warm_up()
        out = self.results["read"]
        # Baselines: the cost of Ansible and of ssh alone.
        out["ansible_ping"] = [self.ansible_adhoc(node, "ansible.builtin.ping") for _run in range(args.repeat)]
        out["ssh_true"] = [self.ssh(node, "true")[0] for _run in range(args.repeat)]

        # (a) the modules, default options; the call log gives the argv list for (b) and (c).
        argvs = None
        for key, module in (("hccn_info", "npuops.ascend.hccn_info"), ("npu_info", "npuops.ascend.npu_info")):
            walls, windows, counts = [], [], []
            for _run in range(args.repeat):
                self.clear_calls()
                walls.append(self.ansible_adhoc(node, module))
                calls = self.read_calls(node)
                windows.append(self.tool_window(calls))
                counts.append(len(calls))
            out[key] = {"wall": walls, "tools": windows, "calls": counts}
            argvs = (argvs or []) + [c["argv"] for c in calls]
        out["argv_count"] = len(argvs)

        # (b) the same argv list, one call after the other, in one ssh session.
        script = "\n".join(" ".join(shlex.quote(a) for a in [TOOL_PATHS[argv[0]]] + argv[1:]) + " 2>&1"
                           for argv in argvs) + "\nexit 0\n"
        walls, windows, counts = [], [], []
        for _run in range(args.repeat):
            self.clear_calls()
            walls.append(self.ssh(node, script)[0])
            calls = self.read_calls(node)
            windows.append(self.tool_window(calls))
            counts.append(len(calls))
        out["sequential"] = {"wall": walls, "tools": windows, "calls": counts}

        # (c) the naive Ansible way: one ansible.builtin.command task execution per call.
        if not args.skip_naive_read:
            play = [{
                "name": "Naive read: one command task per device and query",
                "hosts": node, "gather_facts": False,
                "tasks": [{
                    "name": "Run one vendor tool query",
                    "ansible.builtin.command": {"argv": "{{ item }}"},
                    "loop": [[TOOL_PATHS[a[0]]] + a[1:] for a in argvs],
                    "changed_when": False, "failed_when": False,
                }],
            }]
            self.clear_calls()
            wall = self.playbook("naive_read.yml", play)
            calls = self.read_calls(node)
            out["naive_ansible"] = {"wall": [wall], "tools": [self.tool_window(calls)], "calls": [len(calls)]}
        self.down()

    # --- benchmark B: change path ----------------------------------------------------------
    def verify_changed(self, node):
        script = "; ".join("%s -i %d -mtu -g; %s -i %d -pfc -g; %s -i %d -link -g" % (
            HCCN_TOOL, d, HCCN_TOOL, d, HCCN_TOOL, d) for d in DEVICES)
        text = self.ssh(node, script)[1].stdout
        mtus = text.count("mtu:%d" % MTU)
        ups = text.count("UP")
        if mtus != len(DEVICES) or ups < len(DEVICES):
            raise BenchError("after the change, %d of %d ports have mtu %d and %d are UP:\n%s" % (
                mtus, len(DEVICES), MTU, ups, text))

    def bench_change(self):
        args = self.args
        flap = args.flap_seconds
        log("B: change path, 1 node, flap %.1f s, latency %d ms" % (flap, args.change_latency_ms))
        out = self.results["change"]
        config = [{"device": d, "mtu": MTU, "pfc_priorities": PFC_PRIORITIES} for d in DEVICES]
        bitmap = pfc_bitmap(PFC_PRIORITIES)

        def fresh_node():
            if self.pod_up:
                self.down()
            self.up(1, args.change_latency_ms, flap)
            self.warm_up()
            self.clear_calls()
            return self.nodes[0]

        # The module: one task for all eight devices.
        node = fresh_node()
        wall = self.playbook("change_module.yml", [{
            "name": "Set MTU and PFC on every NPU port with hccn_config",
            "hosts": node, "gather_facts": False,
            "tasks": [{"name": "Apply", "npuops.ascend.hccn_config": {"config": config}}],
        }])
        calls = self.read_calls(node)
        self.verify_changed(node)
        out["module"] = {"wall": wall, "tools": self.tool_window(calls), "calls": len(calls)}

        # Naive: per device set MTU, set PFC, then wait (fixed pause, or poll the link).
        for variant in ("pause", "poll"):
            node = fresh_node()
            tasks = []
            for dev in DEVICES:
                base = [HCCN_TOOL, "-i", str(dev)]
                tasks.append({"name": "Set MTU of NPU %d" % dev,
                              "ansible.builtin.command": {"argv": base + ["-mtu", "-s", "size", str(MTU)]}})
                tasks.append({"name": "Set PFC of NPU %d" % dev,
                              "ansible.builtin.command": {"argv": base + ["-pfc", "-s", "bitmap", bitmap]}})
                if variant == "pause":
                    tasks.append({"name": "Wait for the link flap of NPU %d" % dev,
                                  "ansible.builtin.pause": {"seconds": int(round(flap))}})
                else:
                    tasks.append({"name": "Wait until the link of NPU %d is UP" % dev,
                                  "ansible.builtin.command": {"argv": base + ["-link", "-g"]},
                                  "register": "link", "changed_when": False,
                                  "until": "'UP' in link.stdout", "retries": 120, "delay": 1})
            wall = self.playbook("change_naive_%s.yml" % variant, [{
                "name": "Naive change (%s)" % variant, "hosts": node, "gather_facts": False, "tasks": tasks}])
            calls = self.read_calls(node)
            self.verify_changed(node)
            out["naive_" + variant] = {"wall": wall, "tools": self.tool_window(calls), "calls": len(calls)}
        self.down()

    # --- scaling -----------------------------------------------------------------------------
    def bench_scale(self):
        args = self.args
        for count in args.scale_nodes:
            log("scale: %d nodes, forks %d, latency %d ms" % (count, args.forks, args.latency_ms))
            self.up(count, args.latency_ms, 0)
            self.warm_up()
            row = {"nodes": count, "forks": args.forks}
            for key, module in (("hccn_info", "npuops.ascend.hccn_info"), ("npu_info", "npuops.ascend.npu_info")):
                walls, counts = [], []
                for _run in range(args.repeat):
                    self.clear_calls()
                    walls.append(self.ansible_adhoc("all", module, forks=args.forks))
                    counts.append(sum(len(self.read_calls(n)) for n in self.nodes))
                row[key] = {"wall": walls, "calls": counts}
            self.results["scale"].append(row)
        if self.pod_up:
            self.down()

    # --- report ------------------------------------------------------------------------------
    def report(self):
        res = self.results
        lines = []
        m = res["machine"]
        lines.append("machine: %s, %s CPUs, Python %s, %s" % (m["kernel"], m["cpus"], m["python"], m["ansible"]))
        lines.append("load average (1/5/15 min) at start: %s, at end: %s" % (res.get("load_start"), res.get("load_end")))
        read = res["read"]
        if read:
            lines.append("")
            lines.append("A. read path: 1 node, 8 NPUs, %d ms per tool call, %d runs each (median, min-max)" % (
                self.args.latency_ms, self.args.repeat))
            lines.append("| what | wall time | tool window | tool calls |")
            lines.append("|---|---|---|---|")
            lines.append("| ansible -m ansible.builtin.ping (Ansible start + SSH + one module) | %s | - | 0 |" % fmt_s(read["ansible_ping"]))
            lines.append("| ssh node01 true (warm mux) | %s | - | 0 |" % fmt_s(read["ssh_true"]))
            rows = [("(a) ansible -m npuops.ascend.hccn_info", read["hccn_info"]),
                    ("(a) ansible -m npuops.ascend.npu_info", read["npu_info"])]
            both = {k: [x + y for x, y in zip(read["hccn_info"][k], read["npu_info"][k])] for k in ("wall", "tools", "calls")}
            rows.append(("(a) both modules (sum)", both))
            rows.append(("(b) same %d calls sequentially, one ssh session" % read["argv_count"], read["sequential"]))
            if "naive_ansible" in read:
                rows.append(("(c) ansible-playbook, one command task run per call", read["naive_ansible"]))
            for name, data in rows:
                lines.append("| %s | %s | %s | %d |" % (
                    name, fmt_s(data["wall"]), fmt_s(data["tools"]), statistics.median(data["calls"])))
            seq = statistics.median(read["sequential"]["tools"])
            mod = statistics.median(both["tools"])
            lines.append("speed-up of the modules over (b): tool window %.1fx, wall time %.1fx" % (
                seq / mod, statistics.median(read["sequential"]["wall"]) / statistics.median(both["wall"])))
            if "naive_ansible" in read:
                lines.append("speed-up of the modules over (c): wall time %.1fx" % (
                    read["naive_ansible"]["wall"][0] / statistics.median(both["wall"])))
        change = res["change"]
        if change:
            lines.append("")
            lines.append("B. change path: MTU %d + PFC priorities %s on 8 NPUs of 1 node, flap %.1f s, %d ms per call (one run each)" % (
                MTU, PFC_PRIORITIES, self.args.flap_seconds, self.args.change_latency_ms))
            lines.append("| what | wall time (ansible-playbook) | tool window | tool calls |")
            lines.append("|---|---|---|---|")
            names = {"module": "npuops.ascend.hccn_config, one task",
                     "naive_pause": "command tasks per device + pause %ds per device" % int(round(self.args.flap_seconds)),
                     "naive_poll": "command tasks per device + poll link (until, delay 1) per device"}
            for key in ("module", "naive_pause", "naive_poll"):
                if key in change:
                    data = change[key]
                    lines.append("| %s | %.2f s | %.2f s | %d |" % (names[key], data["wall"], data["tools"], data["calls"]))
        if res["scale"]:
            lines.append("")
            lines.append("C. scaling: info modules, %d ms per tool call, forks %d, %d runs each (median, min-max)" % (
                self.args.latency_ms, self.args.forks, self.args.repeat))
            lines.append("| nodes | hccn_info wall | npu_info wall | tool calls (hccn_info + npu_info) |")
            lines.append("|---|---|---|---|")
            if read:
                lines.append("| 1 | %s | %s | %d + %d |" % (
                    fmt_s(read["hccn_info"]["wall"]), fmt_s(read["npu_info"]["wall"]),
                    statistics.median(read["hccn_info"]["calls"]), statistics.median(read["npu_info"]["calls"])))
            for row in res["scale"]:
                lines.append("| %d | %s | %s | %d + %d |" % (
                    row["nodes"], fmt_s(row["hccn_info"]["wall"]), fmt_s(row["npu_info"]["wall"]),
                    statistics.median(row["hccn_info"]["calls"]), statistics.median(row["npu_info"]["calls"])))
        for part in PLAYBOOK_PARTS:
            if res.get(part):
                lines.append("")
                lines.append("%s: forks = nodes, %d ms per tool call, %.0f s link flap, median of %d runs" % (
                    part, self.args.playbook_latency_ms, self.args.flap_seconds, self.args.repeat))
                lines.append(playbook_table(part, res[part]))
        return "\n".join(lines)


def loadavg():
    with open("/proc/loadavg") as handle:
        return " ".join(handle.read().split()[:3])


def wait_idle(limit_s, threshold=1.0):
    """Wait (at most limit_s) until the 1-minute load average is below threshold."""
    deadline = time.monotonic() + limit_s
    while float(loadavg().split()[0]) >= threshold and time.monotonic() < deadline:
        log("load average %s; waiting for a quiet machine" % loadavg())
        time.sleep(10)


def machine_info():
    try:
        ansible = subprocess.run([os.path.join(REPO, ".venv", "bin", "ansible"), "--version"], stdout=subprocess.PIPE,
                                 stderr=subprocess.DEVNULL, text=True, check=False).stdout.splitlines()[0]
    except (OSError, IndexError):
        ansible = "ansible (version unknown)"
    return {"kernel": "%s %s" % (os.uname().sysname, os.uname().release), "cpus": os.cpu_count(),
            "python": sys.version.split()[0], "ansible": ansible}


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default="/tmp/npuops-bench", help="pod base directory (default %(default)s)")
    parser.add_argument("--address-prefix", default="127.0.5", help="nodes listen on PREFIX.N (default %(default)s)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per read measurement (default %(default)s)")
    parser.add_argument("--latency-ms", type=int, default=100, help="simulated latency per tool call, read path")
    parser.add_argument("--flap-seconds", type=float, default=5.0, help="simulated link flap, change path")
    parser.add_argument("--change-latency-ms", type=int, default=0, help="simulated latency per tool call, change path")
    parser.add_argument("--forks", type=int, default=8, help="Ansible forks for the scaling runs")
    parser.add_argument("--scale-nodes", type=lambda s: [int(x) for x in s.split(",") if x], default=None,
                        help="node counts, comma separated ('' to skip): of the scaling runs (default 4,16) and of the "
                             "playbook parts site, window, health (default 4,16,32)")
    parser.add_argument("--only", choices=("read", "change", "scale") + tuple(PLAYBOOK_PARTS), action="append",
                        help="run only these parts (repeatable); default read, change, scale. site: site.yml against "
                             "bench/naive/site.yml; window: roce_lossless.yml against bench/naive/window.yml; health: "
                             "health_check.yml against the check script over pdsh")
    parser.add_argument("--playbook-latency-ms", type=int, default=50,
                        help="simulated latency per tool call of the playbook parts (default %(default)s)")
    parser.add_argument("--naive-config", choices=("stock", "example"), default="stock",
                        help="ansible.cfg of the naive playbooks: Ansible's stock settings, or the collection's "
                             "inventories/example/ansible.cfg that ours uses (default %(default)s)")
    parser.add_argument("--window-batch", default="100%",
                        help="roce_lossless_batch of our change window in the window part (default %(default)s: "
                             "every node at once, as the naive window; the role's own default is 1)")
    parser.add_argument("--skip-naive-read", action="store_true", help="skip (c), the one-task-per-call playbook")
    parser.add_argument("--wait-idle", type=int, default=120, metavar="SECONDS",
                        help="first wait up to SECONDS for a 1-minute load average below 1 (default %(default)s)")
    parser.add_argument("--json", help="also write the raw results to this file")
    parser.add_argument("--quick", action="store_true",
                        help="the playbook parts site, window and health at 4 and 16 nodes, one run each (about 40 "
                             "minutes on 2 cores); --only, --scale-nodes and --repeat given as well win")
    args = parser.parse_args(argv)
    if args.quick:
        given = set(arg.split("=")[0] for arg in (argv or []))
        if "--only" not in given:
            args.only = ["site", "window", "health"]
        if "--scale-nodes" not in given:
            args.scale_nodes = [4, 16]
        if "--repeat" not in given:
            args.repeat = 1
    args.playbook_nodes = args.scale_nodes if args.scale_nodes is not None else [4, 16, 32]
    if args.scale_nodes is None:
        args.scale_nodes = [4, 16]
    return args


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if os.geteuid() != 0:
        log("needs root (podctl uses namespaces and sshd)")
        return 2
    parts = args.only or ["read", "change", "scale"]
    bench = None
    started = time.monotonic()
    try:
        bench = Bench(args)
        wait_idle(args.wait_idle)
        bench.results["load_start"] = loadavg()
        bench.podctl("down", "--base", args.base)  # a left-over PoD of an interrupted run
        if "read" in parts:
            bench.bench_read()
        if "change" in parts:
            bench.bench_change()
        if "scale" in parts and args.scale_nodes:
            bench.bench_scale()
        for part in [name for name in PLAYBOOK_PARTS if name in parts]:
            if args.playbook_nodes:
                try:
                    bench.results[part] = PlaybookBench(bench).run_part(part, log)
                except RuntimeError as exc:
                    raise BenchError(str(exc)) from exc
        bench.results["load_end"] = loadavg()
    except BenchError as exc:
        log(str(exc))
        return 1
    finally:
        if bench is not None:
            try:
                bench.podctl("down", "--base", args.base)
            except BenchError as exc:
                log("podctl down failed: %s" % exc)
            shutil.rmtree(bench.workdir, ignore_errors=True)
    bench.results["duration_s"] = round(time.monotonic() - started, 1)
    print(bench.report())
    print("benchmark duration: %.1f min (parts: %s)" % (bench.results["duration_s"] / 60.0, ", ".join(parts)))
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(bench.results, handle, indent=1, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
