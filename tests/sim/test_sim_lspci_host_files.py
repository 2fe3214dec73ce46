"""lspci and the host files (/proc/meminfo, vm.swappiness, THP): fidelity to the captures and behaviour."""

import os
import re

import pytest

from simhelpers import sample, samples, text
from npu_sim import host

# Bus ids of the Atlas 800I A2 in the blog post whose `lspci | grep d802` is the first lspci sample
# (its `npu-smi info` lists NPU 0-7 on C1, C2, 81, 82, 01, 02, 41, 42 - the simulator's plan).
BLOG = "wang-junjian"


def test_lspci_matches_the_910b_capture(sim):
    expected = sample("lspci_ascend.txt", BLOG)
    assert sim.sub("lspci") == (0, text(expected), "")
    assert sim.sub("lspci", "-d", "19e5:") == (0, text(expected), "")
    assert sim.sub("lspci", "-d", "19e5:d802:1200") == (0, text(expected), "")


@pytest.mark.parametrize("source", ["PaddleNLP", "Day4"])
def test_lspci_other_hosts_bus_layouts(sim, source):
    expected = sample("lspci_ascend.txt", source)
    buses = [line.split(":")[0] for line in expected][:8]
    sim.data["npus"] = sim.data["npus"][:len(buses)]
    for npu, bus in zip(sim.data["npus"], reversed(buses)):  # NPU order is not bus order; lspci sorts
        npu["bus_id"] = "0000:%s:00.0" % bus.upper()
    sim.save()
    assert sim.sub("lspci", "-d", "19e5:d802")[1] == text(expected[:len(buses)])


def _relabel(line, vendor, device, klass):
    return line.replace("19e5", vendor).replace("d802", device).replace("1200", klass)


def test_lspci_numeric_layouts_follow_pciutils(sim):
    """-n / -nn / -D as pciutils prints them (a 310 card's lines and pciutils 3.9.0 of the dev machine)."""
    nn_310 = sample("lspci_ascend.txt", "IOMMU group listing")[0]
    n_310 = sample("lspci_ascend.txt", "lspci -kvns")[0]
    ours_nn = sim.sub("lspci", "-nn", "-s", "c1:00.0")[1].rstrip("\n")
    ours_n = sim.sub("lspci", "-n", "-s", "c1:00.0")[1].rstrip("\n")
    assert ours_nn == "c1:00.0 Processing accelerators [1200]: Huawei Technologies Co., Ltd. Device [19e5:d802] (rev 20)"
    assert ours_n == "c1:00.0 1200: 19e5:d802 (rev 20)"
    assert re.sub("c1", "0c", ours_nn).replace("d802", "d100") == nn_310
    assert re.sub("c1", "0c", ours_n).replace("d802", "d100") == n_310
    dev = sample("lspci_ascend.txt", "pciutils 1:3.9.0-4")
    # the dev machine's pciutils: -D -n, -nn and the default of an unnamed device, then a named one
    d_n = re.compile(r"^0000:[0-9a-f]{2}:[0-9a-f]{2}\.\d [0-9a-f]{4}: [0-9a-f]{4}:[0-9a-f]{4}( \(rev [0-9a-f]{2}\))?$")
    d_nn = re.compile(r"^0000:[0-9a-f]{2}:[0-9a-f]{2}\.\d [A-Za-z ]+ \[[0-9a-f]{4}\]: .+ \[[0-9a-f]{4}:[0-9a-f]{4}\]"
                      r"( \(rev [0-9a-f]{2}\))?$")
    assert d_n.match(dev[0]) and d_n.match(dev[3]) and d_nn.match(dev[4])
    assert dev[1].endswith(" Device [8086:0d57]") and dev[2].endswith(" Device 0d57")
    ours_dn = sim.sub("lspci", "-D", "-n", "-s", "c1:00.0")[1].rstrip("\n")
    ours_dnn = sim.sub("lspci", "-Dnn", "-s", "0000:c1:00.0")[1].rstrip("\n")
    assert ours_dn == "0000:" + ours_n and d_n.match(ours_dn)
    assert ours_dnn == "0000:" + ours_nn and d_nn.match(ours_dnn)


def test_lspci_sample_shapes():
    """Every 910B line of the captures has one shape; the simulator's lines are of it."""
    shape = re.compile(r"^[0-9a-f]{2}:00\.0 Processing accelerators: Huawei Technologies Co\., Ltd\. Device d802 \(rev 20\)$")
    lines = [line for item in samples("lspci_ascend.txt") for line in item["lines"] if "d802" in line]
    assert len(lines) == 8 + 16 + 7 and all(shape.match(line) for line in lines)


def test_lspci_filters_and_errors(sim):
    assert sim.sub("lspci", "-d", "8086:") == (0, "", "")
    assert sim.sub("lspci", "-d", ":d803") == (0, "", "")
    assert sim.sub("lspci", "-n", "-d", "19e5::0200") == (0, "", "")
    assert sim.sub("lspci", "-s", "81:")[1] == "81:00.0 Processing accelerators: Huawei Technologies Co., Ltd. Device d802 (rev 20)\n"
    assert len(sim.sub("lspci", "-s", ".0")[1].splitlines()) == 8
    assert sim.sub("lspci", "-d", "zz:") == (1, "", "lspci: -d: Invalid vendor ID\n")
    assert sim.sub("lspci", "-d", "19e5") == (1, "", "lspci: -d: At least two fields must be given\n")
    assert sim.sub("lspci", "-s", "1:2:3:4") == (1, "", "lspci: -s: Too many fields\n")
    assert sim.sub("lspci", "-s", "c1:00.9") == (1, "", "lspci: -s: Invalid function number\n")
    rc, out, err = sim.sub("lspci", "-z")
    assert (rc, out) == (1, "") and err.startswith("lspci: invalid option -- 'z'\nUsage: lspci [<switches>]")
    assert sim.sub("lspci", "-v")[0] == 1


def test_pcie_missing_hides_an_npu_from_lspci_only(sim):
    assert sim.sub("npu-sim", "fault", "set", "pcie-missing", "--device", "1")[0] == 0
    out = sim.sub("lspci", "-D", "-n", "-d", "19e5:")[1]
    assert len(out.splitlines()) == 7 and "0000:c2:00.0" not in out and "0000:c1:00.0" in out
    # npu-smi and hccn_tool still see the device
    assert "0000:C2:00.0" in sim.run("npu-smi", "info")[1]
    assert sim.run("hccn_tool", "-i", "1", "-link", "-g")[1] == "link status: UP\n"
    assert sim.sub("npu-sim", "fault", "set", "pcie-missing")[0] == 0
    assert sim.sub("lspci")[1] == ""
    sim.sub("npu-sim", "fault", "clear", "pcie-missing")
    assert len(sim.sub("lspci")[1].splitlines()) == 8


# --- host files ---------------------------------------------------------------------------------

def _meminfo_capture():
    lines = sample("proc_meminfo_swappiness_thp.txt", "cat /proc/meminfo")
    return [line for line in lines if not line.startswith("DirectMap")]


def _pairs(lines):
    pairs = []
    for line in lines:
        key, rest = line.split(":", 1)
        pairs.append((key, int(rest.split()[0])))
    return pairs


def test_meminfo_layout_is_the_kernels(sim):
    capture = _meminfo_capture()
    # the formatter reproduces the real file byte for byte from its own values
    assert host.format_meminfo(_pairs(capture)) == capture
    # and the node's file has the same keys in the same order (no x86-only DirectMap lines)
    ours = host.render_meminfo(sim.data)
    assert [key for key, _v in _pairs(ours)] == [key for key, _v in _pairs(capture)]
    assert host.format_meminfo(_pairs(ours)) == ours


def test_meminfo_values_of_the_node(sim):
    values = dict(_pairs(host.render_meminfo(sim.data)))
    numa = sim.data["numa"]["nodes"]
    assert values["MemTotal"] == sum(node["size_mb"] for node in numa) * 1024  # as numactl -H reports
    assert values["MemFree"] == sum(node["free_mb"] for node in numa) * 1024
    assert (values["HugePages_Total"], values["HugePages_Free"], values["Hugepagesize"]) == (15360, 15360, 2048)
    assert values["Hugetlb"] == 15360 * 2048
    assert values["MemAvailable"] <= values["MemTotal"] and values["MemFree"] <= values["MemAvailable"]
    assert all(value % 4 == 0 for key, value in values.items() if not key.startswith("HugePages_"))


def test_swappiness_and_thp_files(sim):
    swap = sample("proc_meminfo_swappiness_thp.txt", "swappiness")
    thp = sample("proc_meminfo_swappiness_thp.txt", "transparent_hugepage")
    assert re.fullmatch(r"\d+", swap[0]) and thp[0].count("[") == 1
    assert host.render_swappiness(sim.data) == ["10"]
    assert host.render_thp(sim.data) == ["always madvise [never]"]
    assert sorted(thp[0].replace("[", "").replace("]", "").split()) == sorted(host.render_thp(sim.data)[0].replace(
        "[", "").replace("]", "").split())


def _read(path):
    with open(path) as handle:
        return handle.read()


def test_install_and_state_set_render_the_host_files(sim, tmp_path):
    prefix = str(tmp_path / "files")
    assert sim.sub("npu-sim", "install", "--prefix", prefix)[0] == 0
    meminfo = os.path.join(prefix, "host", "proc", "meminfo")
    swappiness = os.path.join(prefix, "host", "proc", "sys", "vm", "swappiness")
    thp = os.path.join(prefix, "host", "sys", "kernel", "mm", "transparent_hugepage", "enabled")
    assert "HugePages_Total:   15360\n" in _read(meminfo)
    assert _read(swappiness) == "10\n" and _read(thp) == "always madvise [never]\n"
    inodes = [os.stat(path).st_ino for path in (meminfo, swappiness, thp)]
    assert sim.sub("npu-sim", "state", "set", "host.swappiness", "60")[0] == 0
    assert sim.sub("npu-sim", "state", "set", "host.transparent_hugepage", "always")[0] == 0
    assert sim.sub("npu-sim", "state", "set", "host.hugepages_total", "0")[0] == 0
    assert _read(swappiness) == "60\n" and _read(thp) == "[always] madvise never\n"
    text_now = _read(meminfo)
    assert "HugePages_Total:       0\n" in text_now and "HugePages_Free:        0\n" in text_now
    assert "Hugetlb:               0 kB\n" in text_now
    # rewritten in place: a bind mount of the file keeps seeing it
    assert [os.stat(path).st_ino for path in (meminfo, swappiness, thp)] == inodes
    # a write to the file is the new value; a later state set wins again
    with open(swappiness, "w") as handle:
        handle.write("30\n")
    assert _read(swappiness) == "30\n"
    sim.sub("npu-sim", "state", "set", "host", '{"swappiness": 1, "hugepages_total": 512, "hugepages_free": 100}')
    assert _read(swappiness) == "1\n" and "HugePages_Free:      100\n" in _read(meminfo)
    # GETs never write the state
    before = _read(sim.path)
    sim.sub("lspci")
    sim.sub("npu-sim", "state", "get", "host.swappiness")
    assert _read(sim.path) == before


@pytest.mark.parametrize("key,value", [("host.transparent_hugepage", "sometimes"), ("host.swappiness", "-1"),
                                       ("host.swappiness", "201"), ("host.hugepages_total", '"many"')])
def test_host_values_are_checked(sim, key, value):
    assert sim.sub("npu-sim", "state", "set", key, value)[0] == 2


def test_whole_host_section_is_checked(sim):
    assert sim.sub("npu-sim", "state", "set", "host", '{"transparent_hugepage": "on"}')[0] == 2
    assert sim.sub("npu-sim", "state", "set", "host", '"text"')[0] == 2
