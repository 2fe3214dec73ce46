"""tools/pod/podctl: a 3-node simulated PoD over real SSH, brought up once for this file.

Needs root, util-linux ``unshare`` and ``/usr/sbin/sshd`` (``make setup`` installs openssh-server);
without them the PoD tests are skipped and only the tests of the ``podlib`` package's pure parts run.
The PoD uses its own base and inventory under pytest's tmp dir, but the node addresses are
fixed (127.0.3.1-3, port 22, ``--address-prefix 127.0.3``), apart from the demo PoD (127.0.1.N)
and the molecule scenarios (127.0.2.N).
"""

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PODCTL = os.path.join(REPO, "tools", "pod", "podctl")
SIM_MAIN = os.path.join(REPO, "tools", "npu_sim", "__main__.py")
NAMES = ["node01", "node02", "node03"]
PREFIX = "127.0.3"
LATENCY_MS = 3

# The podlib package (tools/pod/podlib), for the tests of its parts.
if os.path.join(REPO, "tools", "pod") not in sys.path:
    sys.path.insert(0, os.path.join(REPO, "tools", "pod"))

from podlib import inventory as pod_inventory  # noqa: E402
from podlib import pod as pod_model  # noqa: E402
from podlib import procs as pod_procs  # noqa: E402


def _port_busy(address):
    try:
        with socket.create_connection((address, 22), timeout=0.3):
            return True
    except OSError:
        return False


def _skip_reason(check_ports=True):
    if os.geteuid() != 0:
        return "podctl needs root (namespaces, bind mounts, sshd for root logins)"
    if not os.access("/usr/sbin/sshd", os.X_OK):
        return "/usr/sbin/sshd missing: apt-get install openssh-server (make setup)"
    if not shutil.which("unshare"):
        return "unshare (util-linux) missing"
    if not os.path.isfile(SIM_MAIN):
        return "the simulator tools/npu_sim is missing"
    busy = [n for n in range(1, len(NAMES) + 1) if check_ports and _port_busy("%s.%d" % (PREFIX, n))]
    if busy:
        return PREFIX + ".%d:22 already accepts connections (another PoD is up)" % busy[0]
    return None


def _require_pod_host(check_ports=True):
    reason = _skip_reason(check_ports)
    if reason:
        pytest.skip(reason)


def podctl(*args, check=True, timeout=120):
    proc = subprocess.run([PODCTL] + list(args), capture_output=True, text=True, timeout=timeout, check=False)
    if check:
        assert proc.returncode == 0, "podctl %s: rc %d\n%s%s" % (" ".join(args), proc.returncode, proc.stdout, proc.stderr)
    return proc


class Pod:
    def __init__(self, base, inventory):
        self.base = str(base)
        self.inventory = str(inventory)
        self.ssh_config = os.path.join(self.base, "ssh_config")
        self.up_output = ""

    def record(self):
        with open(os.path.join(self.base, "pod.json")) as fh:
            return json.load(fh)

    def ssh(self, node, command, check=True):
        argv = ["ssh", "-F", self.ssh_config, node, command]
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL, check=False)
        if check:
            assert proc.returncode == 0, "%s: rc %d\n%s%s" % (command, proc.returncode, proc.stdout, proc.stderr)
        return proc

    def state_file(self, node):
        return os.path.join(self.base, "nodes", node, "state", "state.json")


@pytest.fixture(scope="module")
def pod(tmp_path_factory):
    _require_pod_host()
    top = tmp_path_factory.mktemp("podctl")
    pod = Pod(top / "pod", top / "inventory" / "hosts.yml")
    pod.mount_points_before = {p: os.path.exists(p) for p in ("/usr/local/Ascend", "/var/lib/npu-sim")}
    started = time.monotonic()
    proc = podctl("up", "--nodes", str(len(NAMES)), "--base", pod.base, "--address-prefix", PREFIX,
                  "--inventory", pod.inventory, "--latency-ms", str(LATENCY_MS))
    pod.up_seconds = time.monotonic() - started
    pod.up_output = proc.stdout
    try:
        yield pod
    finally:
        podctl("down", "--base", pod.base, check=False)


def test_two_pods_in_one_process_keep_their_own_prefix():
    """The address prefix belongs to each Pod object: nothing module-wide carries it over."""
    first = pod_model.Pod("/tmp/npuops-pod-a", prefix="127.0.5")
    second = pod_model.Pod("/tmp/npuops-pod-b", prefix="127.0.6")
    default = pod_model.Pod("/tmp/npuops-pod-c")
    assert [first.node_address(i) for i in (1, 12)] == ["127.0.5.1", "127.0.5.12"]
    assert [second.node_address(i) for i in (1, 12)] == ["127.0.6.1", "127.0.6.12"]
    assert default.node_address(3) == pod_model.DEFAULT_PREFIX + ".3" == "127.0.1.3"
    assert first.node_address(1) == "127.0.5.1", "creating another Pod changed the first one's addresses"
    moved = first.with_prefix("127.0.7")
    assert (moved.base, moved.node_address(2), first.node_address(2)) == (first.base, "127.0.7.2", "127.0.5.2")
    names = pod_model.node_names(2)
    assert "HostName 127.0.5.2" in pod_inventory.ssh_config_text(first, names)
    assert "HostName 127.0.6.2" in pod_inventory.ssh_config_text(second, names)
    assert pod_inventory.hccl_if_ip(second, 2) == "127.0.6.2"


@pytest.mark.parametrize("prefix", ["10.0.0", "127.0", "127.0.1.1", "127.0.256", "127.a.1", ""])
def test_pod_refuses_a_prefix_that_is_not_loopback(prefix):
    with pytest.raises(pod_model.PodUsageError, match="--address-prefix must look like 127.X.Y"):
        pod_model.Pod("/tmp/npuops-pod-a", prefix=prefix)


def test_up_reports_and_records_nodes(pod):
    assert "started 3 (node01..node03)" in pod.up_output
    record = pod.record()
    assert sorted(record["nodes"]) == NAMES
    assert pod.up_seconds < 30


def test_inventory_matches_node_states(pod):
    yaml = pytest.importorskip("yaml")
    with open(pod.inventory) as fh:
        inventory = yaml.safe_load(fh)
    hosts = inventory["all"]["children"]["ascend_pod"]["hosts"]
    assert sorted(hosts) == NAMES
    for index, name in enumerate(NAMES, 1):
        host = hosts[name]
        assert host["ansible_host"] == "%s.%d" % (PREFIX, index)
        assert host["ansible_user"] == "root"
        assert host["ansible_python_interpreter"] == "/usr/bin/python3"
        assert os.path.isfile(host["ansible_ssh_private_key_file"])
        assert "StrictHostKeyChecking=no" in host["ansible_ssh_common_args"]
        assert host["npuops_hccl_socket_ifname"]
        # a simulated node is not a container even when the host running the PoD is one
        assert host["health_check_container"] == "never"
        socket.inet_aton(host["npuops_hccl_if_ip"])
        assert not {"npu_ports", "hccl_if_ip", "hccl_socket_ifname"} & set(host), "old variable names"
        ports = host["npuops_npu_ports"]
        assert [p["device"] for p in ports] == list(range(8))
        for port in ports:
            socket.inet_aton(port["address"])
            socket.inet_aton(port["netmask"])
        with open(pod.state_file(name)) as fh:
            state_text = fh.read()
        assert all(port["address"] in state_text for port in ports)
    addresses = [p["address"] for h in hosts.values() for p in h["npuops_npu_ports"]]
    assert len(set(addresses)) == len(addresses), "NPU addresses must differ across the PoD"
    assert os.path.isfile(os.path.join(os.path.dirname(pod.inventory), "ssh_config"))


def test_inventory_elsewhere_carries_the_intent(pod):
    """An inventory outside inventories/sim/ gets the simulated PoD's intent beside it, so the playbooks accept it."""
    intent = os.path.join(os.path.dirname(pod.inventory), "group_vars", "ascend_pod", "main.yml")
    with open(intent) as fh:
        text = fh.read()
    assert text.split("\n")[1] == pod_inventory.MARKER
    assert pod.record()["inventory_intent"] == intent
    ansible_inventory = os.path.join(os.path.dirname(sys.executable), "ansible-inventory")
    if not os.access(ansible_inventory, os.X_OK):
        pytest.skip("ansible-inventory is not beside this interpreter")
    proc = subprocess.run([ansible_inventory, "-i", pod.inventory, "--host", "node01"], capture_output=True, text=True,
                          timeout=120, check=True)
    hostvars = json.loads(proc.stdout)
    assert hostvars["npuops_parameter_plane"] == "10.20.0.0/16"
    assert hostvars["npuops_lossless_priority"] == 4 and hostvars["npuops_mtu"] == 9000
    assert hostvars["npuops_npu_ports"][0]["device"] == 0


def test_intent_copy_keeps_the_users_own_group_vars(tmp_path):
    """Group variables of the user's beside the inventory are theirs: no copy is written, an earlier copy goes."""
    inventory = str(tmp_path / "hosts.yml")
    record = {"inventory": inventory}
    target = pod_inventory.write_intent(record)
    assert target == str(tmp_path / "group_vars" / "ascend_pod" / "main.yml") and os.path.isfile(target)
    assert pod_inventory.write_intent(record) == target  # a second up rewrites nothing and keeps it
    with open(tmp_path / "group_vars" / "ascend_pod.yml", "w") as fh:
        fh.write("npuops_mtu: 9000\n")
    assert pod_inventory.write_intent(record) is None
    assert not os.path.exists(target) and not os.path.exists(os.path.dirname(target))
    assert os.path.isfile(tmp_path / "group_vars" / "ascend_pod.yml")
    mine = tmp_path / "other" / "group_vars" / "ascend_pod"
    mine.mkdir(parents=True)
    (mine / "main.yml").write_text("npuops_mtu: 9000\n")
    with pytest.raises(pod_model.PodError):
        pod_inventory.write_generated(str(mine / "main.yml"), "x", marker_line=1)
    assert pod_inventory.write_intent({"inventory": str(tmp_path / "other" / "hosts.yml")}) is None
    assert (mine / "main.yml").read_text() == "npuops_mtu: 9000\n"


def test_default_inventory_uses_the_committed_intent():
    assert pod_inventory.intent_path(pod_inventory.os.path.join(REPO, "inventories", "sim", "hosts.yml")) is None


def test_each_node_has_its_own_hostname_and_state(pod):
    states = {}
    for name in NAMES:
        assert pod.ssh(name, "hostname").stdout.strip() == name
        remote = pod.ssh(name, "cat /var/lib/npu-sim/state.json").stdout
        with open(pod.state_file(name)) as fh:
            assert json.loads(remote) == json.load(fh)
        states[name] = remote
    assert len(set(states.values())) == len(NAMES)
    assert socket.gethostname() not in NAMES, "the host's hostname must stay unchanged"


def test_node_mounts_are_private(pod):
    out = pod.ssh("node02", "findmnt -n -o SOURCE /root; findmnt -n -o SOURCE /usr/local/Ascend").stdout
    assert "/nodes/node02/root" in out and "/nodes/node02/files/Ascend" in out
    with open("/proc/self/mountinfo") as fh:
        host_mounts = fh.read()
    assert pod.base not in host_mounts
    for target in ("/usr/bin/lscpu", "/usr/bin/numactl", "/usr/bin/cpupower"):
        if os.path.isfile(target):
            shim = pod.ssh("node01", "findmnt -n -o SOURCE %s" % target).stdout
            assert "/nodes/node01/files/sbin/" in shim, target
            assert " %s " % target not in host_mounts


def test_npu_smi_info_shows_eight_npus(pod):
    out = pod.ssh("node03", "npu-smi info").stdout
    rows = re.findall(r"^\|\s*(\d+)\s+910\w*\s*\|", out, re.M)
    assert rows == [str(i) for i in range(8)], out


def test_latency_is_in_node_state(pod):
    for name in NAMES:
        assert pod.ssh(name, "npu-sim state get settings.latency_ms").stdout.strip() == str(LATENCY_MS)
    calls = pod.ssh("node01", "npu-sim calls --clear >/dev/null; npu-smi info >/dev/null; npu-sim calls").stdout
    assert "npu-smi" in calls


def test_status_and_exec(pod):
    proc = podctl("status", "--base", pod.base)
    lines = [line.split() for line in proc.stdout.splitlines() if line.startswith("node")]
    assert [row[0] for row in lines] == NAMES
    assert all(row[3:5] == ["yes", "yes"] for row in lines)
    proc = podctl("exec", "--base", pod.base, "node02", "--", "sh", "-c", 'echo "$0 $(hostname)"', "a  b")
    assert proc.stdout.strip() == "a  b node02"


def test_second_up_is_a_noop(pod):
    before = pod.record()["nodes"]
    proc = podctl("up", "--nodes", str(len(NAMES)), "--base", pod.base, "--address-prefix", PREFIX, "--inventory", pod.inventory)
    assert proc.stdout.startswith("already up")
    assert pod.record()["nodes"] == before


def test_down_ignores_recycled_pid(tmp_path):
    """A record whose PID now belongs to an unrelated process must kill nothing."""
    _require_pod_host(check_ports=False)
    victim = subprocess.Popen(["sleep", "60"])
    try:
        base = tmp_path / "stale"
        (base / "nodes" / "node01").mkdir(parents=True)
        record = {"nodes": {"node01": {"pid": victim.pid, "start_time": pod_procs.proc_start_time(victim.pid),
                                       "uts_ns": pod_procs.proc_ns(victim.pid)}},
                  "settings": {}, "inventory": str(tmp_path / "none.yml"), "inventory_ssh_config": str(tmp_path / "ssh_config")}
        (base / "pod.json").write_text(json.dumps(record))
        proc = podctl("down", "--base", str(base))
        assert victim.poll() is None, "down killed an unrelated process"
        assert "no running sshd found for node01" in proc.stdout
        assert not base.exists()
    finally:
        victim.kill()
        victim.wait()


def _processes_in(namespaces):
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.readlink("/proc/%s/ns/uts" % entry) in namespaces:
                    found.append(int(entry))
            except OSError:
                pass
    return found


def test_down_leaves_nothing(pod):
    record = pod.record()
    namespaces = {info["uts_ns"] for info in record["nodes"].values()}
    assert len(namespaces) == len(NAMES) and os.readlink("/proc/self/ns/uts") not in namespaces
    proc = podctl("down", "--base", pod.base)
    assert proc.stdout.startswith("down: 3 nodes stopped")
    assert _processes_in(namespaces) == []
    assert not os.path.exists(pod.base)
    assert not os.path.exists(pod.inventory)
    assert not os.path.exists(os.path.join(os.path.dirname(pod.inventory), "ssh_config"))
    assert not os.path.exists(os.path.join(os.path.dirname(pod.inventory), "group_vars"))
    for index in range(1, len(NAMES) + 1):
        assert not _port_busy("%s.%d" % (PREFIX, index))
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open("/proc/%s/mountinfo" % entry) as fh:
                    assert pod.base not in fh.read(), "a mount from the PoD is left in pid %s" % entry
            except OSError:
                pass
    registry_pods = "/run/npuops-pod/pods"
    if not (os.path.isdir(registry_pods) and os.listdir(registry_pods)):
        for path, existed in pod.mount_points_before.items():
            assert os.path.exists(path) == existed, path
    assert podctl("down", "--base", pod.base).stdout.startswith("already down")
