"""A 2-node simulated PoD over real SSH for the playbook tests of this directory, and a runner.

Needs root, util-linux ``unshare`` and ``/usr/sbin/sshd`` (``make setup`` installs them); without
them the tests are skipped. The nodes listen on 127.0.4.1-2 (the demo PoD uses 127.0.1, the
molecule scenarios 127.0.2, .10, .12, .20 and .21, tests/sim/test_podctl.py 127.0.3).
"""

import hashlib
import json
import os
import shutil
import socket
import subprocess

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PODCTL = os.path.join(REPO, "tools", "pod", "podctl")
# NPUOPS_IT_PREFIX runs a second session beside this one (each session brings up its own PoD)
PREFIX = os.environ.get("NPUOPS_IT_PREFIX", "127.0.4")
NODES = ["node01", "node02"]
GROUP_VARS = """---
npuops_parameter_plane: 10.20.0.0/16
npuops_npus_per_node: 8
npuops_lossless_priority: 4
npuops_lossless_dscp: 33
npuops_lossless_tc: 3
npuops_mtu: 9000
npuops_allow_loopback_if_ip: true
"""


def _skip_reason(prefix=PREFIX, nodes=None):
    """Why a PoD of ``nodes`` nodes on ``prefix``.N cannot be brought up here, or None."""
    if os.geteuid() != 0:
        return "the simulated PoD needs root (namespaces, bind mounts, sshd for root logins)"
    if not os.access("/usr/sbin/sshd", os.X_OK) or not shutil.which("unshare"):
        return "sshd or unshare missing (make setup installs them)"
    for index in range(1, (len(NODES) if nodes is None else nodes) + 1):
        try:
            with socket.create_connection(("%s.%d" % (prefix, index), 22), timeout=0.3):
                return "%s.%d:22 already accepts connections (another PoD is up)" % (prefix, index)
        except OSError:
            pass
    return None


class Pod:
    """The PoD of this test session: its inventory, the node directories on this host, and a playbook runner."""

    def __init__(self, top):
        self.base = os.path.join(top, "pod")
        self.inventory_dir = os.path.join(top, "inventory")
        self.inventory = os.path.join(self.inventory_dir, "hosts.yml")
        self.reports = os.path.join(top, "reports")

    def node_dir(self, node):
        return os.path.join(self.base, "nodes", node)

    def snapshot(self):
        """Every node's port settings (the simulator's state file; no get writes it), restore points and env file."""
        out = {}
        for node in NODES:
            root = self.node_dir(node)
            with open(os.path.join(root, "state", "state.json"), "rb") as handle:
                state = hashlib.sha256(handle.read()).hexdigest()
            backups = sorted(os.listdir(os.path.join(root, "npuops", "backup"))) \
                if os.path.isdir(os.path.join(root, "npuops", "backup")) else []
            env_file = os.path.join(root, "profile.d", "npuops-hccl.sh")
            env = hashlib.sha256(open(env_file, "rb").read()).hexdigest() if os.path.exists(env_file) else None
            out[node] = {"state": state, "backups": backups, "env_file": env}
        return out

    def node(self, node, *argv):
        """Run a command on a node (podctl exec, over SSH); its stdout. Fails the test when it fails."""
        proc = subprocess.run([PODCTL, "exec", "--base", self.base, node, "--"] + list(argv), capture_output=True,
                              text=True, timeout=120, check=False)
        assert proc.returncode == 0, "%s on %s: rc %d\n%s%s" % (argv, node, proc.returncode, proc.stdout, proc.stderr)
        return proc.stdout

    def playbook(self, playbook, extra_vars=None, args=()):
        """ansible-playbook <playbook> on the PoD; (rc, stdout + stderr)."""
        argv = [os.path.join(REPO, ".venv", "bin", "ansible-playbook"), "-i", self.inventory_dir,
                os.path.join(REPO, "playbooks", playbook)]
        if extra_vars:
            argv += ["-e", json.dumps(extra_vars)]
        argv += list(args)
        env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0", ANSIBLE_HOST_KEY_CHECKING="False",
                   ANSIBLE_CALLBACK_RESULT_FORMAT="json", ANSIBLE_FORKS="8")
        env.setdefault("ANSIBLE_COLLECTIONS_PATH", subprocess.run(
            [os.path.join(REPO, "tools", "dev", "collections_root.sh"), REPO], capture_output=True, text=True,
            check=True).stdout.strip())
        proc = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=self.reports, timeout=600, check=False)
        return proc.returncode, proc.stdout + "\n" + proc.stderr


def bring_up(top, prefix, nodes, group_vars, product=None):
    """A simulated PoD of ``nodes`` nodes on ``prefix``.N under ``top``, its inventory with ``group_vars``; the Pod."""
    pod = Pod(top)
    os.makedirs(os.path.join(pod.inventory_dir, "group_vars"))
    os.makedirs(pod.reports)
    with open(os.path.join(pod.inventory_dir, "group_vars", "ascend_pod.yml"), "w") as handle:
        handle.write(group_vars + "npuops_report_dir: %s\n" % pod.reports)
    argv = [PODCTL, "up", "--nodes", str(nodes), "--base", pod.base, "--address-prefix", prefix, "--inventory", pod.inventory,
            "--ssh-config", os.path.join(pod.base, "ssh_config"), "--flap-seconds", "1"]
    proc = subprocess.run(argv + (["--product", product] if product else []), capture_output=True, text=True, timeout=120,
                          check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return pod


def take_down(pod):
    subprocess.run([PODCTL, "down", "--base", pod.base], capture_output=True, timeout=120, check=False)


def own_pod(tmp_path_factory, name, prefix, count, prepare=None):
    """A module's own PoD of ``count`` nodes on ``prefix`` (skipped as the session's PoD is), taken down after it;
    ``prepare(pod)`` runs on it first. A generator for a fixture to ``yield from``."""
    reason = _skip_reason(prefix, count)
    if reason:
        pytest.skip(reason)
    pod = bring_up(str(tmp_path_factory.mktemp(name)), prefix, count, GROUP_VARS)
    try:
        if prepare is not None:
            prepare(pod)
        yield pod
    finally:
        take_down(pod)


@pytest.fixture(scope="session")
def pod(tmp_path_factory):
    reason = _skip_reason()
    if reason:
        pytest.skip(reason)
    pod = bring_up(str(tmp_path_factory.mktemp("integration")), PREFIX, len(NODES), GROUP_VARS)
    try:
        yield pod
    finally:
        take_down(pod)
