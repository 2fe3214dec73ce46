"""What one simulated tool call costs: CPU (user+sys) and wall time per call, through the installed wrappers.

    python3 tools/npu_sim/bench_cost.py [--calls 40] [--rounds 3] [--python /usr/bin/python3] [--json FILE]

Makes a node state in a temporary directory (``npu-sim init``, ``npu-sim install --python PY``, settings
``latency_ms`` 0 and ``flap_seconds`` 0, so a set never leaves the port DOWN for the next query), then runs
each query of QUERIES ``--calls`` times per round through its generated wrapper and measures every call with
``resource.getrusage(RUSAGE_CHILDREN)`` deltas (the wrapper's sh execs Python, so that is one process) and the
wall clock. The figures are the median over the rounds of the mean per call. Baselines: a bare ``PY -c pass``,
``PY -I -S -c pass`` and ``sh -c 'exec PY -I -S -c pass'`` (the floor of a sh wrapper).

The wrappers read the fixed state path /var/lib/npu-sim/state.json (they unset NPU_SIM_STATE, as inside a
simulated node), so the calls run in a private mount namespace (``unshare --mount``; ``--user
--map-root-user`` too when not root) in which the temporary state directory is bind-mounted there, the way
tools/pod/podctl does for a node; the host's /var/lib/npu-sim is never touched.

Then it starts the node's resident simulator (server.py) in the namespace and runs every query again, marked
"served": the wrappers' thin client hands the calls to it. A served call's CPU is the client's (getrusage) plus
what the server and its workers used meanwhile (/proc/PID/stat of the server and of each worker, live or
reaped). Without the server the client finds no socket and runs the wrapper's own interpreter: the rows before.

The table also shows what the call log says (``cpu_s``, ``start_cpu_s`` of each entry, see
``npu-sim calls --cpu``), when the simulator records it. Standard library only; imports nothing of npu_sim
(the simulator under test is run as subprocesses only).
"""

import argparse
import json
import os
import platform
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

TOOLS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VAR_LIB = "/var/lib"
NODE_STATE_DIR = "/var/lib/npu-sim"
# Installed wrapper of each tool, relative to the install prefix (control.WRAPPER_PATHS).
WRAPPERS = {"hccn_tool": "Ascend/driver/tools/hccn_tool", "npu-smi": "sbin/npu-smi", "numactl": "sbin/numactl"}
QUERIES = (
    ("hccn_tool", "-i", "0", "-pfc", "-g"),
    ("hccn_tool", "-i", "0", "-link", "-g"),
    ("hccn_tool", "-i", "0", "-mtu", "-g"),
    ("npu-smi", "info"),
    ("npu-smi", "info", "-t", "board", "-i", "0"),
    ("numactl", "-H"),
    ("hccn_tool", "-i", "0", "-mtu", "-s", "size", "9000"),
)
WARMUP = 3
# The environment of the calls: what sshd gives a root session on a simulated node (no PYTHON* variables, so
# Python reads and writes the modules' .pyc files); --keep-env passes the caller's environment instead.
SESSION_ENV = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/root", "USER": "root",
               "LOGNAME": "root", "SHELL": "/bin/sh"}


def sim(python, *args):
    """Run ``npu-sim ARGS`` of the simulator under test (outside the namespace: every call names --state)."""
    env = dict(os.environ, PYTHONPATH=TOOLS)
    env.pop("NPU_SIM_STATE", None)
    proc = subprocess.run([python, "-m", "npu_sim", "npu-sim"] + list(args), env=env, capture_output=True, text=True,
                          check=False)
    if proc.returncode:
        raise SystemExit("bench_cost: npu-sim %s failed: %s" % (" ".join(args), proc.stderr.strip()))
    return proc.stdout


def measure(argv, calls, env, expect_rc=0):
    """-> (CPU ms per call, list of wall ms) of ``calls`` runs of ``argv`` (output captured, rc checked)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    walls = []
    for _call in range(calls):
        started = time.perf_counter()
        proc = subprocess.run(argv, capture_output=True, env=env, check=False)
        walls.append((time.perf_counter() - started) * 1000.0)
        if proc.returncode != expect_rc:
            raise SystemExit("bench_cost: %s: rc %d: %s" % (shlex.join(argv), proc.returncode, proc.stderr.decode()))
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) * 1000.0
    return cpu / calls, walls


def logged_cpu(log, since):
    """Mean cpu_s and start_cpu_s (ms) of the call log entries from line ``since`` on; None without those fields."""
    with open(log, encoding="utf-8") as handle:
        entries = [json.loads(line) for line in handle.readlines()[since:] if line.strip()]
    cpu = [entry["cpu_s"] for entry in entries if "cpu_s" in entry]
    start = [entry["start_cpu_s"] for entry in entries if "start_cpu_s" in entry]
    if not cpu:
        return None, None
    return statistics.mean(cpu) * 1000.0, (statistics.mean(start) * 1000.0 if start else None)


SERVER_BOOT = "import sys; sys.path.insert(0, sys.argv.pop(1)); from npu_sim import server; sys.exit(server.main())"


def tree_cpu_ms(pid):
    """CPU ms of a process, its reaped children and its live children (the server and its workers)."""
    def stat(target):
        try:
            with open("/proc/%d/stat" % target, encoding="ascii") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            return 0, 0
        return int(fields[11]) + int(fields[12]), int(fields[13]) + int(fields[14])
    own, reaped = stat(pid)
    total = own + reaped
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid), encoding="ascii") as handle:
            children = [int(child) for child in handle.read().split()]
    except OSError:
        children = []
    for child in children:
        total += stat(child)[0]
    return total * 1000.0 / os.sysconf("SC_CLK_TCK")


def log_lines(log):
    if not os.path.exists(log):
        return 0
    with open(log, encoding="utf-8") as handle:
        return sum(1 for _line in handle)


def _measure_row(row, args, env, log, server=None):
    measure(row["argv"], WARMUP, env)
    since = log_lines(log)
    before = tree_cpu_ms(server) if server else 0.0
    cpu, walls = measure(row["argv"], args.calls, env)
    if server:
        cpu += (tree_cpu_ms(server) - before) / args.calls
    row["cpu"].append(cpu)
    row["wall"].extend(walls)
    if "log_cpu" not in row:
        return  # a baseline: no call log
    log_cpu, log_start = logged_cpu(log, since)
    if log_cpu is not None:
        row["log_cpu"].append(log_cpu)
    if log_start is not None:
        row["log_start"].append(log_start)


def inner(args):
    """Inside the mount namespace: check that the node path is the bench state, then measure."""
    state = os.path.join(args.base, "npu-sim", "state.json")
    if os.stat(os.path.join(NODE_STATE_DIR, "state.json")).st_ino != os.stat(state).st_ino:
        raise SystemExit("bench_cost: %s is not the bench state; not running any wrapper" % NODE_STATE_DIR)
    python = args.python
    env = None if args.keep_env else dict(SESSION_ENV)
    baselines = (("%s -c pass" % python, [python, "-c", "pass"]),
                 ("%s -I -S -c pass" % python, [python, "-I", "-S", "-c", "pass"]),
                 ("sh -c 'exec %s -I -S -c pass'" % python, ["/bin/sh", "-c", "exec %s -I -S -c pass" % shlex.quote(python)]))
    rows = [{"name": name, "argv": argv, "cpu": [], "wall": []} for name, argv in baselines]
    log = os.path.join(NODE_STATE_DIR, "calls.jsonl")
    for query in QUERIES:
        argv = [os.path.join(args.base, "files", WRAPPERS[query[0]])] + list(query[1:])
        rows.append({"name": " ".join(query), "argv": argv, "cpu": [], "wall": [], "log_cpu": [], "log_start": []})
    served = []
    for query in QUERIES:
        argv = [os.path.join(args.base, "files", WRAPPERS[query[0]])] + list(query[1:])
        served.append({"name": " ".join(query) + " (served)", "argv": argv, "cpu": [], "wall": [], "log_cpu": [],
                       "log_start": []})
    for _round in range(args.rounds):
        for row in rows:
            _measure_row(row, args, env, log)
    socket_path = os.path.join(NODE_STATE_DIR, "server.sock")
    server = subprocess.Popen([python, "-I", "-S", "-c", SERVER_BOOT, TOOLS, socket_path], stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        while not os.path.exists(socket_path):
            if server.poll() is not None or time.monotonic() > deadline:
                raise SystemExit("bench_cost: the simulator's server did not start")
            time.sleep(0.02)
        for _round in range(args.rounds):
            for row in served:
                _measure_row(row, args, env, log, server.pid)
    finally:
        server.kill()
        server.wait()
    rows.extend(served)
    result = []
    for row in rows:
        item = {"name": row["name"], "cpu_ms": statistics.median(row["cpu"]), "cpu_ms_rounds": row["cpu"],
                "wall_ms": statistics.median(row["wall"])}
        if row.get("log_cpu"):
            item["log_cpu_ms"] = statistics.median(row["log_cpu"])
        if row.get("log_start"):
            item["log_start_cpu_ms"] = statistics.median(row["log_start"])
        result.append(item)
    json.dump(result, sys.stdout)


def version_of(python):
    return subprocess.run([python, "-c", "import sys; print(sys.version.split()[0])"], capture_output=True, text=True,
                          check=True).stdout.strip()


def table(result, args, python_version):
    machine = "machine: %d CPUs (nproc), %s, %s; load average at the start %s" % (
        os.cpu_count(), platform.machine(), platform.release(), args.loadavg)
    wrappers = "python of the wrappers: %s (%s); %d rounds x %d calls per row, median of the round means; %s" % (
        args.python, python_version, args.rounds, args.calls,
        "the caller's environment" if args.keep_env else "clean session environment")
    lines = [machine,
             wrappers,
             "",
             "| call | CPU ms/call | wall ms/call | logged cpu_s ms | of it start-up ms |",
             "|---|---:|---:|---:|---:|"]
    for item in result:
        logged = "%.1f" % item["log_cpu_ms"] if "log_cpu_ms" in item else "-"
        start = "%.1f" % item["log_start_cpu_ms"] if "log_start_cpu_ms" in item else "-"
        lines.append("| `%s` | %.1f | %.1f | %s | %s |" % (item["name"], item["cpu_ms"], item["wall_ms"], logged, start))
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description="CPU and wall time per simulated tool call (see the module docstring).")
    parser.add_argument("--calls", type=int, default=40, help="calls per query and round (default 40)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds over all queries (default 3)")
    parser.add_argument("--python", default="/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable,
                        help="interpreter of the wrappers (npu-sim install --python; default as npu-sim install)")
    parser.add_argument("--keep-env", action="store_true",
                        help="run the calls in this environment (default: a clean ssh-like session, SESSION_ENV)")
    parser.add_argument("--json", help="also write the figures to this file")
    parser.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--base", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.inner:
        inner(args)
        return 0
    for tool in ("unshare", "mount"):
        if not shutil.which(tool):
            raise SystemExit("bench_cost: needs %s (util-linux)" % tool)
    with open("/proc/loadavg", encoding="utf-8") as handle:
        args.loadavg = " ".join(handle.read().split()[:3])
    base = tempfile.mkdtemp(prefix="npu-sim-cost-")
    try:
        state = os.path.join(base, "npu-sim", "state.json")
        sim(args.python, "init", "--state", state, "--hostname", "node01", "--index", "1")
        sim(args.python, "install", "--state", state, "--prefix", os.path.join(base, "files"), "--python", args.python)
        for key, value in (("settings.latency_ms", "0"), ("settings.flap_seconds", "0")):
            sim(args.python, "state", "set", key, value, "--state", state)
        # bind the bench state over the node path: over /var/lib/npu-sim when the host has that directory,
        # else the bench's own directory over /var/lib (in the private namespace only)
        if os.path.isdir(NODE_STATE_DIR):
            source, target = os.path.join(base, "npu-sim"), NODE_STATE_DIR
        else:
            source, target = base, VAR_LIB
        unshare = ["unshare", "--mount", "--propagation", "private"]
        if os.geteuid() != 0:
            unshare[1:1] = ["--user", "--map-root-user"]
        script = 'mount --bind "$1" "$2" && shift 2 && exec "$@"'
        command = unshare + ["--", "sh", "-c", script, "sh", source, target, sys.executable, os.path.abspath(__file__),
                             "--inner", "--base", base, "--python", args.python, "--calls", str(args.calls),
                             "--rounds", str(args.rounds)] + (["--keep-env"] if args.keep_env else [])
        proc = subprocess.run(command, capture_output=True, text=True, check=False)
        if proc.returncode:
            raise SystemExit("bench_cost: the measurement failed (rc %d): %s" % (proc.returncode, proc.stderr.strip()))
        result = json.loads(proc.stdout)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    print(table(result, args, version_of(args.python)))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump({"python": args.python, "calls": args.calls, "rounds": args.rounds, "loadavg": args.loadavg,
                       "nproc": os.cpu_count(), "rows": result}, handle, indent=1)
            handle.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
