"""Nodes: keys and sshd configuration, preparation, start, readiness, and stopping by namespace."""

import concurrent.futures
import contextlib
import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import time

from .common import (DIR_MOUNTS, DOWN_TIMEOUT_S, HOST_FILE_MOUNTS, MARKER, POLL_S, SHIM_MOUNTS, SHM_DEFAULT_MB, SHM_MOUNT,
                     SHM_OPTIONS, SHM_PID_FILE, SIM_DIR, SSH_PORT, SSHD, STATE_KEYS, UP_TIMEOUT_S, PodError)
from .host import node_python, npu_sim, run
from .pod import node_index
from .procs import all_pids, host_namespaces, node_pid_ok, ns_belongs_to_node, proc_ns, proc_start_time, read_text


def make_keys(pod):
    os.makedirs(pod.keys_dir, mode=0o700, exist_ok=True)
    for path, comment in ((pod.host_key, "npuops-pod-host"), (pod.client_key, "npuops-pod-client")):
        if not os.path.exists(path):
            run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", path], what="ssh-keygen")
    with open(pod.client_key + ".pub") as fh:
        pub = fh.read()
    with open(pod.authorized_keys, "w") as fh:
        fh.write(pub)
    os.makedirs(pod.mux_dir, mode=0o700, exist_ok=True)


def write_sshd_config(pod, name):
    lines = [
        MARKER,
        "ListenAddress %s:%d" % (pod.node_address(node_index(name)), SSH_PORT),
        "HostKey %s" % pod.host_key,
        "AuthorizedKeysFile %s" % pod.authorized_keys,
        "PermitRootLogin prohibit-password",
        "PubkeyAuthentication yes",
        "PasswordAuthentication no",
        "KbdInteractiveAuthentication no",
        "UsePAM no",
        "StrictModes no",
        "UseDNS no",
        "PidFile none",
        "PrintMotd no",
        "X11Forwarding no",
        "Subsystem sftp internal-sftp",
        "MaxSessions 64",
        "MaxStartups 128:30:256",
        "LogLevel ERROR",
    ]
    with open(pod.sshd_config(name), "w") as fh:
        fh.write("\n".join(lines) + "\n")


def prepare_node(pod, name, settings, product=None):
    """Create the node directories, the node state (of ``product``, a key of npu_sim's profiles) and files; return
    the node's state file."""
    node_dir = pod.node_dir(name)
    for sub in ("state", "files", "root", "npuops"):
        os.makedirs(os.path.join(node_dir, sub), exist_ok=True)
    profile = os.path.join(node_dir, "profile.d")
    if not os.path.isdir(profile):
        # the node's own /etc/profile.d: the host's scripts, and what the collection writes there stays on the node
        if os.path.isdir("/etc/profile.d"):
            shutil.copytree("/etc/profile.d", profile, symlinks=True)
        else:
            os.makedirs(profile)
    state = pod.state_file(name)
    if not os.path.exists(state):
        npu_sim(["init", "--state", state, "--hostname", name, "--index", str(node_index(name)), "--pod-dir", pod.nodes_dir]
                + (["--product", product] if product else []))
    if not all(os.path.isfile(os.path.join(node_dir, source)) for _target, source in SHIM_MOUNTS + HOST_FILE_MOUNTS):
        npu_sim(["install", "--state", state, "--prefix", os.path.join(node_dir, "files"), "--python", node_python()])
    apply_settings(state, settings)
    write_sshd_config(pod, name)
    return state


def apply_settings(state, settings):
    for key, value in settings.items():
        if value is not None:
            npu_sim(["state", "set", STATE_KEYS[key], json.dumps(value), "--state", state])


def node_script(pod, name):
    node_dir = pod.node_dir(name)
    lines = ["set -e", "hostname %s" % shlex.quote(name)]
    for target, source in DIR_MOUNTS:
        lines.append("mount --bind %s %s" % (shlex.quote(os.path.join(node_dir, source)), shlex.quote(target)))
    mounted = set()
    for target, source in SHIM_MOUNTS + HOST_FILE_MOUNTS:
        shim = os.path.join(node_dir, source)
        real = os.path.realpath(target)  # /sbin/x and /usr/sbin/x may be one file (merged /usr)
        if os.path.isfile(target) and os.path.isfile(shim) and real not in mounted:
            mounted.add(real)
            lines.append("mount --bind %s %s" % (shlex.quote(shim), shlex.quote(target)))
    if os.path.isdir(SHM_MOUNT):
        # the node's own /dev/shm; a shm-full fault of the state is applied to it right away
        lines.append("mount -t tmpfs -o %s,size=%dm tmpfs %s" % (SHM_OPTIONS, shm_size_mb(pod.state_file(name)), SHM_MOUNT))
        lines.append("PYTHONPATH=%s %s -m npu_sim npu-sim shm sync --state %s >/dev/null 2>&1 || true" % (
            shlex.quote(SIM_DIR), shlex.quote(node_python()), shlex.quote(pod.state_file(name))))
    if os.environ.get("NPU_SIM_SERVER", "on") != "off":
        # the node's resident simulator (tools/npu_sim/server.py): the wrappers' thin client hands it their calls
        lines.append("%s -I -S -c %s %s %s </dev/null >>%s 2>&1 &" % (
            shlex.quote(node_python()), shlex.quote(SERVER_BOOTSTRAP), shlex.quote(SIM_DIR), shlex.quote(SERVER_SOCKET),
            shlex.quote(os.path.join(os.path.dirname(pod.state_file(name)), "server.log"))))
    lines.append("exec %s -D -e -f %s" % (shlex.quote(SSHD), shlex.quote(pod.sshd_config(name))))
    return "\n".join(lines)


SERVER_BOOTSTRAP = "import sys; sys.path.insert(0, sys.argv.pop(1)); from npu_sim import server; sys.exit(server.main())"
# where the server listens inside the node: beside the node's state, mounted at /var/lib/npu-sim
SERVER_SOCKET = "/var/lib/npu-sim/server.sock"


def shm_size_mb(state):
    """host.shm_size_mb of the node state (MB of its /dev/shm), SHM_DEFAULT_MB when unset or unreadable."""
    try:
        with open(state, encoding="utf-8") as fh:
            value = (json.load(fh).get("host") or {}).get("shm_size_mb")
    except (OSError, ValueError):
        return SHM_DEFAULT_MB
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 1 else SHM_DEFAULT_MB


def write_namespace_pid(pod, name, pid):
    """Record a PID of the node's mount namespace beside its state (npu-sim reaches the node's /dev/shm through it)."""
    target = os.path.join(os.path.dirname(pod.state_file(name)), SHM_PID_FILE)
    with open(target + ".tmp", "w") as fh:
        fh.write("%d\n" % pid)
    os.replace(target + ".tmp", target)


def start_node(pod, name):
    """Start the node's namespace and sshd; unshare without --fork execs, so the PID is sshd's."""
    argv = ["unshare", "--uts", "--mount", "--propagation", "private", "--", "sh", "-c", node_script(pod, name)]
    with open(pod.sshd_log(name), "ab") as logf:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=logf, stderr=logf, start_new_session=True, cwd="/")
    return proc, {"pid": proc.pid, "start_time": proc_start_time(proc.pid)}


def tcp_accepts(address, timeout=0.2):
    try:
        with socket.create_connection((address, SSH_PORT), timeout=timeout):
            return True
    except OSError:
        return False


def wait_listening(pod, started, timeout):
    """Poll until every started node's sshd accepts TCP; fail early if one exits."""
    pending = dict(started)
    deadline = time.monotonic() + timeout
    while pending:
        for name, proc in list(pending.items()):
            if proc.poll() is not None:
                tail = (read_text(pod.sshd_log(name)) or "").strip().splitlines()[-5:]
                raise PodError("%s: sshd exited with rc %s:\n  %s" % (name, proc.returncode, "\n  ".join(tail) or "(no output)"))
            if tcp_accepts(pod.node_address(node_index(name))):
                del pending[name]
        if not pending:
            break
        if time.monotonic() > deadline:
            raise PodError("sshd not accepting within %.0fs on: %s" % (timeout, ", ".join(sorted(pending, key=node_index))))
        time.sleep(POLL_S)


def close_mux(pod, names):
    procs = []
    for name in names:
        if os.path.exists(os.path.join(pod.mux_dir, name)):
            argv = ["ssh", "-F", pod.ssh_config, "-O", "exit", name]
            procs.append(subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    for proc in procs:
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def kill_nodes(pod, nodes):
    """Kill every process in the given nodes' UTS namespaces, by PID, one /proc pass per round.

    Returns the names of nodes whose namespace could not be identified safely.
    """
    host_ns = host_namespaces()
    targets, unverified, orphaned = {}, [], {}
    for name, info in nodes.items():
        if node_pid_ok(pod, name, info, host_ns):
            targets[proc_ns(info["pid"])] = name
        elif info.get("uts_ns") and info["uts_ns"] not in host_ns:
            orphaned[info["uts_ns"]] = name
        else:
            unverified.append(name)
    deadline = time.monotonic() + DOWN_TIMEOUT_S
    while targets or orphaned:
        alive = 0
        for pid in all_pids():
            ns = proc_ns(pid)
            if ns in orphaned and ns_belongs_to_node(pid, pod, orphaned[ns]):
                targets[ns] = orphaned.pop(ns)
            if ns in targets and pid != os.getpid():
                alive += 1
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        orphaned.clear()
        if not alive:
            break
        if time.monotonic() > deadline:
            raise PodError("processes still running in the namespaces of: %s" % ", ".join(sorted(set(targets.values()))))
        time.sleep(POLL_S)
    return unverified


def remove_nodes(pod, record, names):
    nodes = {name: record["nodes"][name] for name in names}
    close_mux(pod, names)
    kill_nodes(pod, nodes)
    for name in names:
        shutil.rmtree(pod.node_dir(name), ignore_errors=True)
        del record["nodes"][name]


def ensure_nodes(pod, record, wanted, settings, product=None):
    """Start the wanted nodes that are not running (a new node gets a state of ``product``); return the names started."""
    host_ns = host_namespaces()
    to_start = [name for name in wanted if not node_pid_ok(pod, name, record["nodes"].get(name, {}), host_ns)]
    if not to_start:
        return []
    stale = {name: record["nodes"][name] for name in to_start if name in record["nodes"]}
    if stale:
        kill_nodes(pod, stale)
    busy = [name for name in to_start if tcp_accepts(pod.node_address(node_index(name)))]
    if busy:
        raise PodError("something already listens on port %d of %s; is another PoD up with another --base?" % (
            SSH_PORT, ", ".join(pod.node_address(node_index(n)) for n in busy)))
    workers = min(32, max(4, 2 * (os.cpu_count() or 1)))
    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        list(pool.map(lambda n: prepare_node(pod, n, settings, product), to_start))
    started = {}
    for name in to_start:
        proc, info = start_node(pod, name)
        started[name] = proc
        record["nodes"][name] = info
        write_namespace_pid(pod, name, proc.pid)
    pod.save(record)
    wait_listening(pod, started, UP_TIMEOUT_S)
    for name in to_start:
        record["nodes"][name]["uts_ns"] = proc_ns(record["nodes"][name]["pid"])
    return to_start
