"""Host checks and subprocess helpers (the simulator is run as ``python3 -m npu_sim``)."""

import os
import shlex
import shutil
import subprocess
import sys

from .common import SIM_DIR, SSHD, PodError


def check_host():
    if os.geteuid() != 0:
        raise PodError("podctl needs root: it creates UTS/mount namespaces, bind mounts and runs sshd for root logins")
    missing = [tool for tool in ("unshare", "ssh", "ssh-keygen", "mount") if not shutil.which(tool)]
    if not os.access(SSHD, os.X_OK):
        raise PodError("%s is missing: run 'apt-get install openssh-server' (or 'make setup')" % SSHD)
    if missing:
        raise PodError("missing tools: %s (util-linux, openssh-client)" % ", ".join(missing))
    if not os.path.isfile(os.path.join(SIM_DIR, "npu_sim", "__main__.py")):
        raise PodError("the simulator is missing: %s/npu_sim/__main__.py not found" % SIM_DIR)


def run(argv, env=None, what=None, timeout=120):
    try:
        proc = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired as exc:
        raise PodError("%s timed out after %ss: %s" % (what or argv[0], timeout, shlex.join(argv))) from exc
    if proc.returncode != 0:
        detail = (proc.stderr or proc.stdout).strip()
        raise PodError("%s failed (rc %d): %s\n%s" % (what or argv[0], proc.returncode, shlex.join(argv), detail))
    return proc.stdout


def sim_env():
    env = dict(os.environ)
    env["PYTHONPATH"] = SIM_DIR + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["LC_ALL"] = "C"
    for name in ("NPU_SIM_LATENCY_MS", "NPU_SIM_STATE"):
        env.pop(name, None)
    return env


def npu_sim(args, what=None):
    """Run ``npu-sim ARGS``; every call names its state file with ``--state``."""
    return run([sys.executable, "-m", "npu_sim", "npu-sim"] + args, env=sim_env(), what=what or "npu-sim " + args[0])


def node_python():
    return "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else sys.executable
