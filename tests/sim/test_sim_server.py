"""The node's resident simulator (tools/npu_sim/server.py) and its thin client (client.c): a call the server runs
prints, exits and changes the state exactly as the same call run by the wrapper's own interpreter; each call gets
the caller's environment, user and descriptors and nothing of the call before; a caller that goes away takes its
call with it; and without a server the client runs the call itself."""

import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time

import pytest

from npu_sim import control
from npu_sim import node as node_mod
from npu_sim import statefile
from simhelpers import CREATED, TOOLS

PYTHON = "/usr/bin/python3"
NOBODY = 65534
SERVER_BOOT = "import sys; sys.path.insert(0, sys.argv.pop(1)); from npu_sim import server; sys.exit(server.main())"
COMMAND = [PYTHON, "-I", "-S", "-c", control.BOOTSTRAP, TOOLS]

pytestmark = pytest.mark.skipif(not os.access(PYTHON, os.X_OK), reason="needs %s" % PYTHON)

# calls whose answers depend only on the state: reads, a refused set, errors, usage
CALLS = [
    ["hccn_tool", "-i", "0", "-pfc", "-g"],
    ["hccn_tool", "-i", "3", "-link", "-g"],
    ["hccn_tool", "-i", "5", "-mtu", "-g"],
    ["hccn_tool", "-i", "2", "-ip", "-g"],
    ["hccn_tool", "-i", "1", "-dscp_to_tc", "-g"],
    ["hccn_tool", "-i", "9", "-link", "-g"],
    ["hccn_tool", "-i", "0", "-mtu", "-s", "mtu", "9000"],
    ["hccn_tool"],
    ["npu-smi", "info"],
    ["npu-smi", "info", "-t", "board", "-i", "0"],
    ["npu-smi", "info", "-t", "health", "-i", "2"],
    ["npu-smi", "info", "-t", "nonsense", "-i", "0"],
    ["lscpu"],
    ["lspci"],
]


@pytest.fixture(scope="module")
def client():
    path = control.client_path()
    if path is None:
        pytest.skip("no C compiler to build the client")
    return path


class Node:
    def __init__(self, top):
        self.top = top
        self.path = os.path.join(top, "state", "state.json")
        self.sock = os.path.join(top, "state", "server.sock")
        self.log = os.path.join(top, "server.log")
        self.proc = None

    def start(self, **env):
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen([PYTHON, "-I", "-S", "-c", SERVER_BOOT, TOOLS, self.sock], stdin=subprocess.DEVNULL,
                                         stdout=log, stderr=log, start_new_session=True, env=dict(os.environ, **env))
        deadline = time.monotonic() + 20
        while not os.path.exists(self.sock):
            assert self.proc.poll() is None, self.server_log()
            assert time.monotonic() < deadline, "the server did not listen within 20 s"
            time.sleep(0.02)

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def server_log(self):
        with open(self.log, encoding="utf-8", errors="replace") as handle:
            return handle.read()

    def calls(self):
        with open(statefile.calls_path(self.path), encoding="utf-8") as handle:
            return [json.loads(line) for line in handle if line.strip()]

    def workers(self):
        """PIDs of the server's workers (its children)."""
        with open("/proc/%d/task/%d/children" % (self.proc.pid, self.proc.pid), encoding="ascii") as handle:
            return [int(pid) for pid in handle.read().split()]


def _node(top, name="node"):
    node = Node(os.path.join(top, name))
    statefile.save(node.path, node_mod.new_state("node01", 1, created=CREATED))
    with open(statefile.calls_path(node.path), "w", encoding="utf-8"):
        pass
    return node


@pytest.fixture
def pair():
    """Two nodes of the same state: one served, one whose calls run in their own interpreter."""
    top = tempfile.mkdtemp(prefix="npu-sim-server-")
    os.chmod(top, 0o755)
    served, direct = _node(top, "served"), _node(top, "direct")
    for node in (served, direct):
        os.chmod(os.path.dirname(node.top), 0o755)
        os.chmod(node.top, 0o755)
        os.chmod(os.path.dirname(node.path), 0o755)
    served.start()
    try:
        yield served, direct
    finally:
        served.stop()
        shutil.rmtree(top)


def _env(node, **extra):
    env = {"PATH": "/usr/bin:/bin", "NPU_SIM_STATE": node.path, "PYTHONPATH": TOOLS}
    env.update(extra)
    return env


def _served(client, node, argv, user=None, **env):
    return subprocess.run([client, node.sock, str(len(COMMAND))] + COMMAND + list(argv), capture_output=True,
                          env=_env(node, **env), timeout=60, check=False, cwd="/", preexec_fn=user)


def _direct(node, argv, user=None, **env):
    return subprocess.run(COMMAND + list(argv), capture_output=True, env=_env(node, **env), timeout=60, check=False,
                          cwd="/", preexec_fn=user)


def _nobody():
    os.setgroups([])
    os.setgid(NOBODY)
    os.setuid(NOBODY)


def test_served_calls_answer_byte_for_byte_as_their_own_interpreter(client, pair):
    served, direct = pair
    for argv in CALLS:
        ours, theirs = _served(client, served, argv), _direct(direct, argv)
        assert (ours.returncode, ours.stdout, ours.stderr) == (theirs.returncode, theirs.stdout, theirs.stderr), argv
    pids = {entry["pid"] for entry in served.calls()}
    assert len(served.calls()) == len(direct.calls()) == len(CALLS)
    # the calls ran in the server's workers, not in interpreters of their own (a worker runs many calls)
    assert len(pids) < len(CALLS)
    assert pids <= set(served.workers())


def test_a_served_set_changes_the_state_as_its_own_interpreter(client, pair):
    served, direct = pair
    for argv in (["hccn_tool", "-i", "4", "-mtu", "-s", "size", "9000"], ["hccn_tool", "-i", "4", "-mtu", "-g"],
                 ["hccn_tool", "-i", "4", "-tls", "-s", "enable", "0"]):
        ours, theirs = _served(client, served, argv), _direct(direct, argv)
        assert (ours.returncode, ours.stdout, ours.stderr) == (theirs.returncode, theirs.stdout, theirs.stderr), argv
    assert statefile.load(served.path)["npus"][4]["net"]["mtu"] == statefile.load(direct.path)["npus"][4]["net"]["mtu"] == 9000


def test_each_call_gets_its_callers_environment_and_none_of_the_last(client, pair):
    served, _direct_node = pair
    refused = _served(client, served, ["hccn_tool", "-i", "0", "-mtu", "-s", "size", "9000"], NPU_SIM_EUID="1000")
    assert refused.returncode != 0
    assert statefile.load(served.path)["npus"][0]["net"]["mtu"] == 1500
    for _attempt in range(3):  # whichever worker takes it, nothing of the call before is left in its environment
        allowed = _served(client, served, ["hccn_tool", "-i", "0", "-mtu", "-s", "size", "9000"])
        assert allowed.returncode == 0, allowed.stderr
    assert statefile.load(served.path)["npus"][0]["net"]["mtu"] == 9000


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to call as another user")
def test_a_non_root_caller_is_served_as_itself(client, pair):
    served, direct = pair
    before = len(served.calls())
    for argv in (["npu-smi", "info", "-t", "usages", "-i", "0"], ["hccn_tool", "-i", "0", "-mtu", "-s", "size", "9000"]):
        ours, theirs = _served(client, served, argv, user=_nobody), _direct(direct, argv, user=_nobody)
        assert (ours.returncode, ours.stdout, ours.stderr) == (theirs.returncode, theirs.stdout, theirs.stderr), argv
    assert statefile.load(served.path)["npus"][0]["net"]["mtu"] == 1500
    assert len(served.calls()) == before  # a non-root call leaves no call log line, as before
    ok = _served(client, served, ["hccn_tool", "-i", "0", "-mtu", "-s", "size", "9000"])
    assert ok.returncode == 0, ok.stderr  # the worker that served nobody still serves root as root


def test_a_caller_that_goes_away_takes_its_call_with_it(client, pair):
    served, _direct_node = pair
    _served(client, served, ["npu-smi", "info", "-t", "board", "-i", "0"])
    subprocess.run(COMMAND + ["npu-sim", "fault", "set", "hang", "--device", "0", "--value", "600", "--state", served.path],
                   check=True, capture_output=True, env=_env(served))
    proc = subprocess.Popen([client, served.sock, str(len(COMMAND))] + COMMAND + ["hccn_tool", "-i", "0", "-link", "-g"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env(served))
    deadline = time.monotonic() + 20
    busy = None
    while busy is None and time.monotonic() < deadline:
        for pid in served.workers():
            with open("/proc/%d/wchan" % pid, encoding="ascii") as handle:
                if "sleep" in handle.read():
                    busy = pid
        time.sleep(0.05)
    assert busy is not None, "no worker took the hanging call"
    proc.kill()
    proc.communicate(timeout=10)
    deadline = time.monotonic() + 10
    while busy in served.workers() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert busy not in served.workers(), "the worker of the abandoned call is still running"
    subprocess.run(COMMAND + ["npu-sim", "fault", "clear", "hang", "--state", served.path], check=True, capture_output=True,
                   env=_env(served))
    after = _served(client, served, ["hccn_tool", "-i", "0", "-link", "-g"])
    assert (after.returncode, after.stdout) == (0, b"link status: UP\n")


def test_concurrent_calls_each_get_their_own_answer(client, pair):
    served, _direct_node = pair
    procs = [subprocess.Popen([client, served.sock, str(len(COMMAND))] + COMMAND + ["hccn_tool", "-i", str(dev), "-ip", "-g"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env(served, NPU_SIM_LATENCY_MS="300"))
             for dev in range(8) for _twice in range(2)]
    outputs = [proc.communicate(timeout=60) for proc in procs]
    for proc, (out, err) in zip(procs, outputs):
        assert proc.returncode == 0 and out.startswith(b"ipaddr:"), err
    addresses = [out for out, _err in outputs]
    assert addresses[0] == addresses[1] and addresses[0] != addresses[2]
    # the 300 ms calls overlapped: several workers held calls at once
    assert len({entry["pid"] for entry in served.calls()}) >= 4


def test_the_call_log_counts_the_client_and_the_server(client, pair):
    served, _direct_node = pair
    for _call in range(3):
        _served(client, served, ["hccn_tool", "-i", "0", "-pfc", "-g"])
    for entry in served.calls():
        assert 0 < entry["start_cpu_s"] <= entry["cpu_s"] < 1.0, entry


def test_without_a_server_the_client_runs_the_call_itself(client, pair):
    served, direct = pair
    served.stop()
    for argv in CALLS[:4]:
        ours, theirs = _served(client, served, argv), _direct(direct, argv)
        assert (ours.returncode, ours.stdout, ours.stderr) == (theirs.returncode, theirs.stdout, theirs.stderr), argv
    os.unlink(served.sock)
    ours = _served(client, served, CALLS[0])
    assert ours.returncode == 0 and ours.stdout.startswith(b"PFC configuration:")


def test_a_bad_request_is_refused_and_the_server_goes_on(client, pair):
    served, _direct_node = pair
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.connect(served.sock)
        sock.sendall(b"\x05\x00\x00\x00hello")
        sock.settimeout(10)
        assert sock.recv(4) == b""
    assert "npu-sim server" in served.server_log()
    ok = _served(client, served, CALLS[0])
    assert ok.returncode == 0 and ok.stdout.startswith(b"PFC configuration:")


def test_the_wrapper_uses_the_client_only_for_served_tools(client):
    for tool in ("hccn_tool", "npu-smi", "lscpu"):
        text = control.wrapper_text(tool, PYTHON, client)
        assert "exec %s %s %d %s" % (client, control.SERVER_SOCKET, control.CLIENT_COMMAND_WORDS, PYTHON) in text
        assert text.rstrip().splitlines()[-1].startswith("exec %s -I -S -c" % PYTHON)
    for tool in ("numactl", "mpirun", "npu-sim"):
        assert client not in control.wrapper_text(tool, PYTHON, client)
    assert client not in control.wrapper_text("hccn_tool", PYTHON, None)


def test_a_worker_that_ends_after_its_calls_leaves_no_call_unanswered(client, pair):
    served, _direct_node = pair
    served.stop()
    served.start(NPU_SIM_WORKER_CALLS="3")
    for dev in list(range(8)) * 2:
        proc = _served(client, served, ["hccn_tool", "-i", str(dev), "-mtu", "-g"])
        assert (proc.returncode, proc.stdout) == (0, b"mtu:1500\n"), proc.stderr
    pids = [entry["pid"] for entry in served.calls()]
    assert len(pids) == 16 and len(set(pids)) >= 6  # a worker serves at most 3 calls
    assert max(pids.count(pid) for pid in set(pids)) <= 3


@pytest.mark.parametrize("served", [True, False])
def test_a_restored_wrapper_is_written_as_installed(client, tmp_path, served):
    state, prefix = str(tmp_path / "state.json"), str(tmp_path / "files")
    statefile.save(state, node_mod.new_state("node01", 1, created=CREATED))
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": TOOLS}

    def sim(*argv):
        proc = subprocess.run([PYTHON, "-m", "npu_sim", "npu-sim"] + list(argv) + ["--state", state], capture_output=True,
                              text=True, env=env, timeout=60, check=False)
        assert proc.returncode == 0, proc.stderr
    sim("install", "--prefix", prefix, "--python", PYTHON, *([] if served else ["--no-server"]))
    wrapper = os.path.join(prefix, control.WRAPPER_PATHS["npu-smi"])
    with open(wrapper, encoding="utf-8") as handle:
        installed = handle.read()
    assert (client in installed) is served
    sim("fault", "set", "missing-tool", "--value", "npu-smi")
    assert not os.path.exists(wrapper)
    sim("fault", "clear", "missing-tool")
    with open(wrapper, encoding="utf-8") as handle:
        assert handle.read() == installed
