"""``python -m npu_sim <tool> [args]``: dispatch, per-call latency and the call log.

A call imports only the module of its tool (the control command ``npu-sim`` and its argparse only for
``npu-sim``), reads the state once when no latency is set, and appends one line to the call log. Each line
records the CPU time of the call: ``cpu_s`` (user+sys of the process when the line is written, the wrapper's
sh and the interpreter's start-up included) and ``start_cpu_s`` (the part spent before the simulator's code
began, npu_sim.START_CPU); ``npu-sim calls --cpu`` sums them. See docs/simulator-cost.md.
"""

import importlib
import os
import sys
import time

from . import START_CPU, TOOLS
from . import jsoncodec
from . import statefile
from .output import Result

VENDOR_TOOLS = ("hccn_tool", "npu-smi", "numactl", "lscpu", "cpupower", "lspci", "all_reduce_test", "mpirun", "vmstat", "iostat", "fio", "ip")
# The host IO tools (stage 8) come after the tools of npu_sim.TOOLS.
ALL_TOOLS = TOOLS + ("vmstat", "iostat", "fio", "ip")
# For a call the node's resident simulator runs (npu_sim.server): CPU seconds spent for it outside this process
# (the thin client, the server's dispatch), added to the call log's ``cpu_s`` and ``start_cpu_s``, and this
# process's CPU time when the call began, subtracted from both. Both 0 when the wrapper's own interpreter runs it.
CPU_OFFSET = 0.0
CALL_CPU0 = 0.0
# What a launcher prints when its program cannot be started, and the exit status then.
EXEC_FAILURE = {"numactl": ("numactl: execution of `%s': %s", 1),
                "mpirun": ("mpirun: execvp error on file %s (%s)", 255)}


def _latency_ms(path):
    env = os.environ.get("NPU_SIM_LATENCY_MS")
    if env not in (None, ""):
        try:
            return float(env)
        except ValueError:
            return 0.0
    try:
        st = statefile.load(path)
    except (statefile.StateError, OSError):
        return 0.0
    delay = float(st.get("settings", {}).get("latency_ms") or 0)
    if delay <= 0:
        # no sleep before the tool runs: it gets this state instead of reading the file again
        statefile.handover(path, st)
    return delay


def log_call(path, tool, args, rc, started):
    log = statefile.calls_path(path)
    if not os.path.isdir(os.path.dirname(log)):
        return
    entry = {"time": round(started, 6), "tool": tool, "argv": [tool] + list(args), "rc": rc,
             "duration_s": round(time.time() - started, 6), "pid": os.getpid(),
             "cpu_s": round(time.process_time() - CALL_CPU0 + CPU_OFFSET, 6),
             "start_cpu_s": round(START_CPU - CALL_CPU0 + CPU_OFFSET, 6)}
    line = jsoncodec.dumps(entry) + "\n"
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode("utf-8"))
    finally:
        os.close(fd)


def _emit(res):
    sys.stdout.write(res.stdout)
    sys.stdout.flush()
    sys.stderr.write(res.stderr)
    sys.stderr.flush()


# tool -> (module of npu_sim, function(args, state path) -> Result); the module is imported when its tool runs
DISPATCH = {
    "hccn_tool": ("hccn", "run"),
    "npu-smi": ("npusmi", "run"),
    "lscpu": ("host", "lscpu"),
    "cpupower": ("host", "cpupower"),
    "numactl": ("host", "numactl_tool"),
    "lspci": ("host", "lspci"),
    "all_reduce_test": ("mpi", "all_reduce_test"),
    "mpirun": ("mpi", "mpirun"),
    "vmstat": ("host", "vmstat"),
    "iostat": ("host", "iostat"),
    "fio": ("host", "fio"),
    "ip": ("host", "ip"),
}


def _tool_function(tool):
    module, function = DISPATCH[tool]
    return getattr(importlib.import_module("." + module, __package__ or "npu_sim"), function)


def run_tool(tool, args, path):
    """Run one simulated vendor tool in-process; returns a Result (numactl/mpirun launches are not executed)."""
    if tool not in DISPATCH:
        raise ValueError(tool)
    try:
        return _tool_function(tool)(args, path)
    except statefile.StateError as exc:
        res = Result()
        res.e("%s: %s" % (tool, exc))
        return res.fail(1)


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in ALL_TOOLS:
        sys.stderr.write("usage: python -m npu_sim {%s} [args...]\n" % ",".join(ALL_TOOLS))
        return 2
    tool, args = argv[0], argv[1:]
    if tool == "npu-sim":
        from . import control
        res = control.run(args)
        _emit(res)
        return res.exit_code
    path = statefile.state_path()
    started = time.time()
    delay = _latency_ms(path)
    if delay > 0:
        time.sleep(delay / 1000.0)
    try:
        res = run_tool(tool, args, path)
    finally:
        statefile.handover(path, None)
    log_call(path, tool, args, res.exit_code, started)
    _emit(res)
    command = getattr(res, "exec_argv", None)
    if command and res.exit_code == 0:
        environ = dict(os.environ)
        environ.update(res.exec_env)
        try:
            os.execvpe(command[0], command, environ)
        except OSError as exc:
            text, code = EXEC_FAILURE.get(tool, EXEC_FAILURE["numactl"])
            sys.stderr.write(text % (command[0], exc.strerror) + "\n")
            return code
    return res.exit_code


def boot():
    """What the installed wrappers run (control.BOOTSTRAP): main(), then the process ends without the interpreter's
    finalization, which costs a call about 1 ms of CPU and has nothing to do here: the output is flushed and every
    file a call writes is closed by then. An exception still ends the process the usual way (traceback, status 1)."""
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    sys.exit(main())
