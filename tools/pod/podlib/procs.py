"""/proc helpers: process identity, namespaces, and whether a PID is a node's."""

import os

from .common import SSHD


def read_text(path):
    try:
        with open(path, "rb") as fh:
            return fh.read().decode("utf-8", "replace")
    except OSError:
        return None


def proc_start_time(pid):
    """Start time of a process in clock ticks since boot (field 22 of /proc/PID/stat), or None."""
    stat = read_text("/proc/%d/stat" % pid)
    if not stat:
        return None
    fields = stat[stat.rfind(")") + 2:].split()
    return int(fields[19]) if len(fields) > 19 else None


def proc_cmdline(pid):
    text = read_text("/proc/%d/cmdline" % pid)
    return text.split("\0")[:-1] if text else []


def proc_exe(pid):
    try:
        return os.readlink("/proc/%d/exe" % pid)
    except OSError:
        return None


def proc_ns(pid, kind="uts"):
    try:
        return os.readlink("/proc/%d/ns/%s" % (pid, kind))
    except OSError:
        return None


def host_namespaces():
    """UTS namespaces that must never be killed: ours and PID 1's."""
    return {ns for ns in (proc_ns(os.getpid()), proc_ns(1)) if ns}


def all_pids():
    return [int(entry) for entry in os.listdir("/proc") if entry.isdigit()]


def node_pid_ok(pod, name, info, host_ns):
    """True when the recorded PID is still this node's sshd in a namespace of its own.

    sshd rewrites its command line ("sshd: /usr/sbin/sshd -D -e -f CFG [listener] ..."), so the
    executable is checked through /proc/PID/exe and the config path within the whole line.
    Guards against recycled PIDs (start time, executable and config must match) and against
    ever treating the host's namespace as a node's.
    """
    pid = info.get("pid")
    if not pid or proc_start_time(pid) != info.get("start_time"):
        return False
    if proc_exe(pid) != SSHD or pod.sshd_config(name) not in " ".join(proc_cmdline(pid)):
        return False
    ns = proc_ns(pid)
    return bool(ns) and ns not in host_ns


def ns_belongs_to_node(pid, pod, name):
    """True when the mount table of PID shows this node's state directory on /var/lib/npu-sim.

    Used when the node's sshd is gone but its namespace may still hold processes: the
    recorded namespace id alone could have been reused by an unrelated namespace.
    """
    state_dir = os.path.realpath(os.path.join(pod.node_dir(name), "state"))
    for line in (read_text("/proc/%d/mountinfo" % pid) or "").splitlines():
        fields = line.split()
        if len(fields) > 4 and fields[4] == "/var/lib/npu-sim":
            root = fields[3].replace("\\040", " ")
            return root != "/" and state_dir.endswith(root)
    return False
