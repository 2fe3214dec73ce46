"""``python -m npu_sim <tool> [args]``: dispatch, per-call latency and the call log."""

import json
import os
import sys
import time

from . import TOOLS
from . import control
from . import hccn
from . import host
from . import mpi
from . import npusmi
from . import state as st_mod
from .output import Result

VENDOR_TOOLS = ("hccn_tool", "npu-smi", "numactl", "lscpu", "cpupower", "lspci", "all_reduce_test", "mpirun", "vmstat", "iostat")
# The host IO tools (stage 8) come after the tools of npu_sim.TOOLS.
ALL_TOOLS = TOOLS + ("vmstat", "iostat")
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
        return float(st_mod.load(path).get("settings", {}).get("latency_ms") or 0)
    except (st_mod.StateError, OSError):
        return 0.0


def log_call(path, tool, args, rc, started):
    log = st_mod.calls_path(path)
    if not os.path.isdir(os.path.dirname(log)):
        return
    entry = {"time": round(started, 6), "tool": tool, "argv": [tool] + list(args), "rc": rc,
             "duration_s": round(time.time() - started, 6), "pid": os.getpid()}
    line = json.dumps(entry) + "\n"
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


def _numactl(args, path):
    return host.numactl(args, path, launch=False)


# tool -> function(args, state path) -> Result
DISPATCH = {
    "hccn_tool": hccn.run,
    "npu-smi": npusmi.run,
    "lscpu": host.lscpu,
    "cpupower": host.cpupower,
    "numactl": _numactl,
    "lspci": host.lspci,
    "all_reduce_test": mpi.all_reduce_test,
    "mpirun": mpi.mpirun,
    "vmstat": host.vmstat,
    "iostat": host.iostat,
}


def run_tool(tool, args, path):
    """Run one simulated vendor tool in-process; returns a Result (numactl/mpirun launches are not executed)."""
    if tool not in DISPATCH:
        raise ValueError(tool)
    try:
        return DISPATCH[tool](args, path)
    except st_mod.StateError as exc:
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
        res = control.run(args)
        _emit(res)
        return res.exit_code
    path = st_mod.state_path()
    started = time.time()
    delay = _latency_ms(path)
    if delay > 0:
        time.sleep(delay / 1000.0)
    res = run_tool(tool, args, path)
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


if __name__ == "__main__":
    sys.exit(main())
