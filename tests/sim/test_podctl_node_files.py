"""Inside simulated nodes: the host files over /proc and /sys, lspci, hccl_test and mpirun at their paths.

A 2-node PoD on 127.0.7.1-2 (``podctl up --nodes 2 --address-prefix 127.0.7``), brought up once for this
file; skipped without root, sshd or unshare (see test_podctl.py).
"""

import os
import re
import shlex
import subprocess

import pytest

from test_podctl import PODCTL, Pod, _port_busy, podctl

PREFIX = "127.0.7"
NAMES = ["node01", "node02"]
HCCL_TEST = "/usr/local/Ascend/ascend-toolkit/latest/tools/hccl_test/bin/all_reduce_test"
MPIRUN = "/usr/local/mpich/bin/mpirun"
ROW = re.compile(r"^(\d+) +\| (\d+\.\d\d) +\| (\d+\.\d{5}) +\| success$")


def _skip_reason():
    if os.geteuid() != 0:
        return "podctl needs root (namespaces, bind mounts, sshd for root logins)"
    if not os.access("/usr/sbin/sshd", os.X_OK):
        return "/usr/sbin/sshd missing: apt-get install openssh-server (make setup)"
    if subprocess.run(["sh", "-c", "command -v unshare"], capture_output=True, check=False).returncode:
        return "unshare (util-linux) missing"
    for index in range(1, len(NAMES) + 1):
        if _port_busy("%s.%d" % (PREFIX, index)):
            return "%s.%d:22 already accepts connections" % (PREFIX, index)
    return None


@pytest.fixture(scope="module")
def pod(tmp_path_factory):
    reason = _skip_reason()
    if reason:
        pytest.skip(reason)
    top = tmp_path_factory.mktemp("podfiles")
    pod = Pod(top / "pod", top / "inventory" / "hosts.yml")
    podctl("up", "--nodes", str(len(NAMES)), "--base", pod.base, "--address-prefix", PREFIX, "--inventory", pod.inventory)
    try:
        yield pod
    finally:
        podctl("down", "--base", pod.base, check=False)


def _files(pod, name):
    return os.path.join(pod.base, "nodes", name, "files")


def test_host_files_are_mounted_over_proc_and_sys(pod):
    out = pod.ssh("node01", "grep -E '^(MemTotal|HugePages_Total|HugePages_Free|Hugepagesize):' /proc/meminfo; "
                            "cat /proc/sys/vm/swappiness /sys/kernel/mm/transparent_hugepage/enabled").stdout
    assert "HugePages_Total:   15360\n" in out and "HugePages_Free:    15360\n" in out and "Hugepagesize:       2048 kB\n" in out
    assert out.endswith("10\nalways madvise [never]\n")
    total_kb = int(re.search(r"MemTotal: +(\d+) kB", out).group(1))
    numa_mb = sum(int(size) for size in re.findall(r"node \d+ size: (\d+) MB", pod.ssh("node01", "numactl -H").stdout))
    assert total_kb == numa_mb * 1024
    # the tools read the same files: sysctl, and Python as Ansible's fact gathering does
    assert pod.ssh("node01", "sysctl -n vm.swappiness").stdout == "10\n"
    # the host's own files are untouched
    with open("/proc/meminfo") as handle:
        assert "HugePages_Total:   15360" not in handle.read()


def test_state_set_and_writes_change_the_node_files(pod):
    pod.ssh("node02", "npu-sim state set host.swappiness 60 && npu-sim state set host.hugepages_total 0 && "
                      "npu-sim state set host.transparent_hugepage always")
    out = pod.ssh("node02", "grep ^HugePages_Total /proc/meminfo; cat /proc/sys/vm/swappiness "
                            "/sys/kernel/mm/transparent_hugepage/enabled").stdout
    assert out == "HugePages_Total:       0\n60\n[always] madvise never\n"
    # a write to the mounted file is the new value (sysctl -w writes the same file)
    pod.ssh("node02", "sysctl -q -w vm.swappiness=5")
    assert pod.ssh("node02", "cat /proc/sys/vm/swappiness").stdout.strip() == "5"
    with open(os.path.join(_files(pod, "node02"), "host", "proc", "sys", "vm", "swappiness")) as handle:
        assert handle.read().strip() == "5"
    assert pod.ssh("node01", "cat /proc/sys/vm/swappiness").stdout.strip() == "10"
    mounts = pod.ssh("node02", "findmnt -n -o SOURCE /proc/sys/vm/swappiness").stdout
    assert "/nodes/node02/files/host/proc/sys/vm/swappiness" in mounts


def test_lspci_in_a_node(pod):
    out = pod.ssh("node01", "lspci -D -n -d 19e5:").stdout.splitlines()
    assert out[0] == "0000:01:00.0 1200: 19e5:d802 (rev 20)" and len(out) == 8
    pod.ssh("node01", "npu-sim fault set pcie-missing --device 0")
    try:
        out = pod.ssh("node01", "lspci -D -n -d 19e5:").stdout
        assert "0000:c1:00.0" not in out and len(out.splitlines()) == 7
        assert "0000:C1:00.0" in pod.ssh("node01", "npu-smi info").stdout
    finally:
        pod.ssh("node01", "npu-sim fault clear pcie-missing")
    for target in ("/usr/bin/lspci", "/usr/sbin/lspci"):
        if os.path.isfile(target):
            assert "/files/sbin/lspci" in pod.ssh("node01", "findmnt -n -o SOURCE %s" % target).stdout


def _rows(out):
    rows = [ROW.match(line) for line in out.splitlines()[2:]]
    assert rows and all(rows), out
    return [(int(r.group(1)), float(r.group(3))) for r in rows]


def test_hccl_test_through_mpirun_across_two_nodes(pod):
    single = pod.ssh("node01", "%s -n 8 %s -b 1G -e 1G -f 2 -p 8" % (MPIRUN, HCCL_TEST)).stdout
    assert single.splitlines()[0] == "the minbytes is 1073741824, maxbytes is 1073741824, iters is 20, warmup_iters is 5"
    alg = _rows(single)[0][1]
    assert alg * 2 * 7 / 8 == pytest.approx(137.2, rel=0.01)
    pod.ssh("node01", "printf 'node01:8\\nnode02:8\\n' > /root/hostfile")
    both = pod.ssh("node01", "%s -f /root/hostfile -n 16 %s -b 1G -e 1G -f 2 -d fp32 -o sum -p 8"
                   % (MPIRUN, HCCL_TEST)).stdout
    lossy = _rows(both)[0][1]
    assert lossy * 2 * 15 / 16 == pytest.approx(3.0, rel=0.02)
    # a failing program's status comes back through mpirun
    proc = pod.ssh("node01", "%s -n 8 %s -p 12" % (MPIRUN, HCCL_TEST), check=False)
    assert proc.returncode == 255 and proc.stdout.startswith("Error: [-p,--npus")
    assert "/files/mpich" in pod.ssh("node01", "findmnt -n -o SOURCE /usr/local/mpich").stdout


def test_podctl_exec_reaches_the_tools(pod):
    proc = subprocess.run([PODCTL, "exec", "--base", pod.base, "node02", "--", "sh", "-c",
                           "lspci -n | wc -l && test -x " + shlex.quote(HCCL_TEST)], capture_output=True,
                          text=True, check=False, timeout=60)
    assert proc.returncode == 0 and proc.stdout.strip() == "8"


def test_ecc_singlebit_and_noise_through_the_node_wrappers(pod):
    out = pod.ssh("node02", "npu-sim fault set ecc-singlebit --device 4 --value 600000 >/dev/null && sleep 0.2 && "
                            "npu-smi info -t ecc -i 4 && npu-smi info -t ecc -i 3").stdout
    counts = [int(value) for value in re.findall(r"HBM Single Bit Error Count +: (\d+)", out)]
    assert counts[0] >= 1000 and counts[1] == 0
    pod.ssh("node02", "npu-sim fault clear ecc-singlebit")
    runs = pod.ssh("node02", "npu-sim fault set noise --value 10 >/dev/null; npu-sim train --steps 3; "
                             "npu-sim train --steps 3; npu-sim fault clear noise >/dev/null").stdout.splitlines()
    assert len(runs) == 6 and runs[:3] != runs[3:]
