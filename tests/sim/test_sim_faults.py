"""Each fault kind, set and cleared through `npu-sim fault`, and the installed wrappers."""

import json
import os
import subprocess
import sys
import time

import pytest

from simhelpers import TOOLS


def _fault(sim, *args):
    rc, out, err = sim.sub("npu-sim", "fault", *args)
    assert rc == 0, err
    return out


def test_fault_list_set_clear(sim):
    _fault(sim, "set", "health", "--device", "2", "--value", "Warning")
    _fault(sim, "set", "busy", "--device", "3")
    faults = json.loads(_fault(sim, "list"))
    assert [(f["kind"], f["device"], f["value"]) for f in faults] == [("health", 2, "Warning"), ("busy", 3, None)]
    assert _fault(sim, "clear", "busy") == "fault cleared: 1\n"
    assert [f["kind"] for f in json.loads(_fault(sim, "list"))] == ["health"]
    _fault(sim, "clear")
    assert json.loads(_fault(sim, "list")) == []


@pytest.mark.parametrize("args", [("set", "nosuch"), ("set", "health", "--value", "Bad"), ("set", "busy", "--device", "8"),
                                  ("set", "version", "--value", "kernel=1"), ("set", "missing-tool", "--value", "ls")])
def test_fault_validation(sim, args):
    assert sim.sub("npu-sim", "fault", *args)[0] == 2


def test_link_stuck_down(sim):
    sim.data["settings"]["flap_seconds"] = 0.2
    sim.save()
    _fault(sim, "set", "link-stuck-down", "--device", "1")
    sim.run("hccn_tool", "-i", "0", "-mtu", "-s", "size", "9000")
    sim.run("hccn_tool", "-i", "1", "-mtu", "-s", "size", "9000")
    time.sleep(0.3)
    assert sim.run("hccn_tool", "-i", "0", "-link", "-g")[1] == "link status: UP\n"
    assert sim.run("hccn_tool", "-i", "1", "-link", "-g")[1] == "link status: DOWN\n"
    _fault(sim, "clear", "link-stuck-down")
    assert sim.run("hccn_tool", "-i", "1", "-link", "-g")[1] == "link status: UP\n"


def test_link_flap(sim):
    _fault(sim, "set", "link-flap", "--device", "0", "--value", "10")
    for clock, word in ((2000.0, "UP"), (2004.9, "UP"), (2005.0, "DOWN"), (2009.9, "DOWN"), (2010.0, "UP")):
        sim.reload()
        sim.data["settings"]["clock"] = clock
        sim.save()
        assert sim.run("hccn_tool", "-i", "0", "-link", "-g")[1] == "link status: %s\n" % word
        assert sim.run("hccn_tool", "-i", "1", "-link", "-g")[1] == "link status: UP\n"


def test_busy_always_and_counted(sim):
    _fault(sim, "set", "busy", "--device", "0")
    assert sim.sub("hccn_tool", "-i", "0", "-link", "-g") == (11, "hccn_tool is busy, please try again.\n", "")
    assert sim.sub("hccn_tool", "-i", "1", "-link", "-g")[0] == 0
    _fault(sim, "clear", "busy")
    _fault(sim, "set", "busy", "--value", "2")
    assert sim.run("hccn_tool", "-i", "5", "-mtu", "-g")[0] == 11
    assert sim.run("hccn_tool", "-i", "6", "-mtu", "-g")[0] == 11
    assert sim.run("hccn_tool", "-i", "5", "-mtu", "-g") == (0, "mtu:1500\n", "")


def test_npu_smi_busy(sim):
    _fault(sim, "set", "busy", "--tool", "npu-smi")
    assert sim.sub("npu-smi", "info") == (172, "dcmi model initialized failed, because the device is used. ret is -8020\n", "")
    assert sim.sub("hccn_tool", "-i", "0", "-link", "-g")[0] == 0


def test_hang(sim):
    _fault(sim, "set", "hang", "--device", "0", "--value", "30")
    with pytest.raises(subprocess.TimeoutExpired):
        sim.sub("hccn_tool", "-i", "0", "-link", "-g", timeout=1.5)
    assert sim.sub("hccn_tool", "-i", "1", "-link", "-g", timeout=10)[0] == 0
    _fault(sim, "clear", "hang")
    _fault(sim, "set", "hang", "--value", "30", "--tool", "npu-smi")
    with pytest.raises(subprocess.TimeoutExpired):
        sim.sub("npu-smi", "info", timeout=1.5)
    assert sim.sub("hccn_tool", "-i", "0", "-link", "-g", timeout=10)[0] == 0


@pytest.mark.parametrize("level,codes", [("Warning", "80E18402"), ("Alarm", "A4025021 8C03A000"), ("Critical", "80E01801")])
def test_health(sim, level, codes):
    _fault(sim, "set", "health", "--device", "4", "--value", level)
    table = sim.run("npu-smi", "info")[1].splitlines()
    row = [line for line in table if line.startswith("| 4     910B3")][0]
    assert row.split("|")[2].strip() == level
    health = sim.run("npu-smi", "info", "-t", "health", "-i", "4")[1].splitlines()
    assert health[0] == "\tHealth Status                  : %s" % level
    assert health[1] == "\tError Code                     : %s" % codes
    assert sim.run("npu-smi", "info", "-t", "health", "-i", "3")[1].splitlines()[0].endswith(": OK")
    _fault(sim, "clear", "health")
    assert sim.run("npu-smi", "info", "-t", "health", "-i", "4")[1].splitlines()[0].endswith(": OK")


def test_ecc_multibit(sim):
    _fault(sim, "set", "ecc-multibit", "--device", "1", "--value", "3")
    ecc = dict(line.strip().split(" : ") for line in sim.run("npu-smi", "info", "-t", "ecc", "-i", "1")[1].splitlines())
    assert ecc["HBM Double Bit Error Count".ljust(40)] == "3"
    assert "Alarm" in sim.run("npu-smi", "info", "-t", "health", "-i", "1")[1]
    _fault(sim, "clear")
    ecc = dict(line.strip().split(" : ") for line in sim.run("npu-smi", "info", "-t", "ecc", "-i", "1")[1].splitlines())
    assert ecc["HBM Double Bit Error Count".ljust(40)] == "0"


def test_process(sim):
    _fault(sim, "set", "process", "--device", "6", "--value", "python:30780")
    table = sim.run("npu-smi", "info")[1]
    assert "| 6       0                 | 139066        | python                   | 30780                   |" in table
    assert "| No running processes found in NPU 5" in table
    proc = sim.run("npu-smi", "info", "-t", "proc-mem", "-i", "6")[1].splitlines()
    assert proc[1] == "\tProcess id:139066  Process name:python            Process memory(MB):30780"
    _fault(sim, "clear", "process")
    assert "No running processes found in NPU 6" in sim.run("npu-smi", "info")[1]


def test_ip_conflict(sim):
    _fault(sim, "set", "ip-conflict", "--device", "2")
    assert sim.run("hccn_tool", "-i", "2", "-ip", "-s", "address", "10.20.2.50", "netmask", "255.255.255.0") == (
        7, "", "The ip address configured is conflicted!\n")
    assert sim.run("hccn_tool", "-i", "3", "-ip", "-s", "address", "10.20.3.50", "netmask", "255.255.255.0")[0] == 0
    _fault(sim, "clear", "ip-conflict")
    assert sim.run("hccn_tool", "-i", "2", "-ip", "-s", "address", "10.20.2.50", "netmask", "255.255.255.0")[0] == 0


def _install(sim, tmp_path):
    prefix = str(tmp_path / "files")
    assert sim.sub("npu-sim", "install", "--prefix", prefix)[0] == 0
    return prefix


def _read(path):
    with open(path) as handle:
        return handle.read()


def test_version_fault_rerenders_files(sim, tmp_path):
    prefix = _install(sim, tmp_path)
    driver = os.path.join(prefix, "Ascend", "driver", "version.info")
    firmware = os.path.join(prefix, "Ascend", "firmware", "version.info")
    cfg = os.path.join(prefix, "Ascend", "ascend-toolkit", "latest", "version.cfg")
    assert _read(driver).startswith("Version=25.2.0\n")
    _fault(sim, "set", "version", "--value", "driver=23.0.7,firmware=7.1.0.11.220,cann=8.0.0")
    assert _read(driver).startswith("Version=23.0.7\n") and "Innerversion=V100R001C15SPC012B220\n" in _read(driver)
    assert _read(firmware).startswith("Version=7.1.0.11.220\n")
    assert "runtime_running_version=[7.6.0.1.220:8.0.0]\n" in _read(cfg)
    assert "| npu-smi 23.0.7 " in sim.run("npu-smi", "info")[1]
    _fault(sim, "clear", "version")
    assert _read(driver).startswith("Version=25.2.0\n")
    assert "| npu-smi 25.2.0 " in sim.run("npu-smi", "info")[1]


def test_missing_tool(sim, tmp_path):
    prefix = _install(sim, tmp_path)
    hccn = os.path.join(prefix, "Ascend", "driver", "tools", "hccn_tool")
    smi = os.path.join(prefix, "sbin", "npu-smi")
    assert os.access(hccn, os.X_OK) and os.access(smi, os.X_OK)
    _fault(sim, "set", "missing-tool", "--value", "hccn_tool")
    assert not os.path.exists(hccn) and os.path.exists(smi)
    _fault(sim, "clear", "missing-tool")
    assert os.access(hccn, os.X_OK)


def test_installed_wrappers(sim, tmp_path):
    prefix = _install(sim, tmp_path)
    text = _read(os.path.join(prefix, "sbin", "npu-smi"))
    assert text.startswith("#!/bin/sh\n") and "unset NPU_SIM_STATE\n" in text and 'npu-smi "$@"' in text
    for name in ("npu-sim", "numactl", "lscpu", "cpupower"):
        assert os.access(os.path.join(prefix, "sbin", name), os.X_OK)
    # The wrapper ignores NPU_SIM_STATE (the default path is used inside a simulated node);
    # run it with PYTHONPATH only to check that it starts the package.
    proc = subprocess.run([os.path.join(prefix, "sbin", "npu-sim"), "--state", sim.path, "state", "get", "hostname"],
                          capture_output=True, text=True, check=False)
    assert (proc.returncode, proc.stdout) == (0, '"node01"\n')
    assert sim.reload()["install_prefix"] == prefix


def test_counted_busy_never_over_answers_under_concurrency(sim):
    # 'busy --value 3': exactly three of eight concurrent calls answer busy, whatever the timing.
    _fault(sim, "set", "busy", "--value", "3")
    env = dict(os.environ, PYTHONPATH=TOOLS, NPU_SIM_STATE=sim.path)
    procs = [subprocess.Popen([sys.executable, "-m", "npu_sim", "hccn_tool", "-i", str(dev), "-link", "-g"],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE) for dev in range(8)]
    codes = []
    for proc in procs:
        proc.communicate(timeout=60)
        codes.append(proc.returncode)
    assert sorted(codes) == [0] * 5 + [11] * 3
    assert sim.run("hccn_tool", "-i", "0", "-link", "-g")[0] == 0


def test_npu_smi_busy_counted(sim):
    _fault(sim, "set", "busy", "--tool", "npu-smi", "--value", "1")
    assert sim.sub("npu-smi", "info", "-l")[0] == 172
    assert sim.sub("npu-smi", "info", "-l")[0] == 0


def test_npu_smi_hang_of_one_card(sim):
    _fault(sim, "set", "hang", "--device", "0", "--value", "30", "--tool", "npu-smi")
    assert sim.sub("npu-smi", "info", "-t", "board", "-i", "1", timeout=10)[0] == 0
    with pytest.raises(subprocess.TimeoutExpired):
        sim.sub("npu-smi", "info", "-t", "board", "-i", "0", timeout=1.5)
    with pytest.raises(subprocess.TimeoutExpired):
        sim.sub("npu-smi", "info", timeout=1.5)


def test_link_flap_shows_in_link_stat(sim):
    clock = 1767225600.0  # a multiple of the period: the port is UP at the fault's start
    sim.data["settings"]["clock"] = clock
    sim.save()
    _fault(sim, "set", "link-flap", "--device", "2", "--value", "4")
    sim.sub("npu-sim", "state", "set", "settings.clock", str(clock + 9.0))
    rc, out, err = sim.run("hccn_tool", "-i", "2", "-link_stat", "-g")
    assert (rc, err) == (0, "")
    words = [line.split("LINK ")[1] for line in out.splitlines() if "    LINK " in line]
    # newest first: UP at +8, DOWN at +6, UP at +4, DOWN at +2, then the UP of the node's creation
    assert words == ["UP", "DOWN", "UP", "DOWN", "UP"]
    assert "[devid 2]link up count       : 3\n" in out
    assert sim.run("hccn_tool", "-i", "2", "-link", "-g")[1] == "link status: UP\n"
    assert "    LINK DOWN" not in sim.run("hccn_tool", "-i", "3", "-link_stat", "-g")[1]


def _ecc(sim, dev):
    out = sim.run("npu-smi", "info", "-t", "ecc", "-i", str(dev))[1]
    return dict((key.strip(), int(value)) for key, value in (line.split(" : ") for line in out.splitlines()))


def test_ecc_singlebit_counters_grow_with_time(sim):
    clock = 1767225600.0
    sim.data["settings"]["clock"] = clock
    sim.save()
    _fault(sim, "set", "ecc-singlebit", "--device", "2", "--value", "30")
    _fault(sim, "set", "ecc-singlebit", "--device", "5")  # default: 60 per minute
    before = open(sim.path).read()
    assert _ecc(sim, 2)["HBM Single Bit Error Count"] == 0
    for minutes, two, five in ((1, 30, 60), (2.5, 75, 150), (10, 300, 600)):
        sim.reload()
        sim.data["settings"]["clock"] = clock + minutes * 60
        sim.save()
        before = open(sim.path).read()
        ecc = _ecc(sim, 2)
        assert ecc["HBM Single Bit Error Count"] == two
        assert ecc["HBM Single Bit Aggregate Total Err Cnt"] == two
        assert ecc["HBM Double Bit Error Count"] == 0
        assert _ecc(sim, 5)["HBM Single Bit Error Count"] == five
        assert _ecc(sim, 3)["HBM Single Bit Error Count"] == 0
        assert open(sim.path).read() == before, "a GET wrote the state"
    _fault(sim, "clear", "ecc-singlebit")
    assert _ecc(sim, 2)["HBM Single Bit Error Count"] == 0


def test_ecc_singlebit_with_the_real_clock(sim):
    _fault(sim, "set", "ecc-singlebit", "--device", "0", "--value", "6000")  # 100 per second
    time.sleep(0.3)
    assert _ecc(sim, 0)["HBM Single Bit Error Count"] >= 20


@pytest.mark.parametrize("args", [("set", "noise", "--value", "x"), ("set", "ecc-singlebit", "--value", "-3"),
                                  ("set", "pcie-missing", "--device", "9")])
def test_new_fault_validation(sim, args):
    assert sim.sub("npu-sim", "fault", *args)[0] == 2


def _stat(sim, dev):
    rc, out, err = sim.sub("hccn_tool", "-i", str(dev), "-stat", "-g")
    assert (rc, err) == (0, "") and out.startswith("packet statistics:\n")
    return dict((key, int(value)) for key, value in (line.split(":") for line in out.splitlines()[1:]))


def test_slow_port_shows_why_in_link_stat_and_stat(sim):
    clock = 1767225600.0 + 3600  # an hour after the node was created (its first LINK UP)
    sim.data["settings"]["clock"] = clock
    sim.save()
    _fault(sim, "set", "slow-port", "--device", "5")
    sim.sub("npu-sim", "state", "set", "settings.clock", str(clock + 10.0))
    with open(sim.path, "rb") as handle:
        before = handle.read()
    rc, out, err = sim.sub("hccn_tool", "-i", "5", "-link_stat", "-g")
    assert (rc, err) == (0, "")
    lines = out.splitlines()
    stamp = time.asctime(time.localtime(clock + 10.0))
    assert lines[0] == "[devid 5]current time        : %s" % stamp
    assert lines[2] == "[devid 5]link change records :"
    # three retrains, 30 s apart, each DOWN for 2 s; the last one ended when the fault was set
    expected = []
    for back in (0, 30, 60):
        expected.append("[devid 5]    %s    LINK UP" % time.asctime(time.localtime(clock - back)))
        expected.append("[devid 5]    %s    LINK DOWN" % time.asctime(time.localtime(clock - back - 2)))
    assert lines[3:9] == expected
    assert lines[9:] == ["[devid 5]    %s    LINK UP" % time.asctime(time.localtime(clock - 3600))]
    assert lines[1] == "[devid 5]link up count       : 4"
    # the port is UP (slow, not down) and counts errors: 20 bad frames, 50 out-of-order, 200 retries per second
    assert sim.sub("hccn_tool", "-i", "5", "-link", "-g")[1] == "link status: UP\n"
    stat = _stat(sim, 5)
    assert (stat["mac_rx_bad_pkt_num"], stat["mac_rx_bad_oct_num"]) == (200, 204800)
    assert (stat["roce_out_of_order_num"], stat["roce_new_pkt_rty_num"]) == (500, 2000)
    assert set(v for k, v in stat.items() if k not in SLOW_PORT_KEYS) == {0}
    # other ports are clean
    assert set(_stat(sim, 4).values()) == {0}
    assert "    LINK DOWN" not in sim.sub("hccn_tool", "-i", "4", "-link_stat", "-g")[1]
    with open(sim.path, "rb") as handle:
        assert handle.read() == before, "a GET wrote the state"
    _fault(sim, "clear", "slow-port")
    assert set(_stat(sim, 5).values()) == {0}
    assert "    LINK DOWN" not in sim.sub("hccn_tool", "-i", "5", "-link_stat", "-g")[1]


SLOW_PORT_KEYS = ("mac_rx_bad_pkt_num", "mac_rx_bad_oct_num", "roce_out_of_order_num", "roce_new_pkt_rty_num")


def test_slow_node_shows_nothing_on_the_ports(sim):
    _fault(sim, "set", "slow-node", "--value", "0.5")
    for dev in (0, 7):
        assert set(_stat(sim, dev).values()) == {0}
        assert "    LINK DOWN" not in sim.sub("hccn_tool", "-i", str(dev), "-link_stat", "-g")[1]


def test_link_stuck_down_for_a_counted_number_of_sets(sim):
    """--value 1: the first PFC/MTU set leaves the port DOWN, the next one (a roll-back) brings it back."""
    sim.data["settings"]["flap_seconds"] = 0.2
    sim.save()
    _fault(sim, "set", "link-stuck-down", "--device", "1", "--value", "1")
    sim.run("hccn_tool", "-i", "1", "-mtu", "-s", "size", "9000")
    time.sleep(0.3)
    assert sim.run("hccn_tool", "-i", "1", "-link", "-g")[1] == "link status: DOWN\n"
    rc, _out, err = sim.run("hccn_tool", "-i", "1", "-pfc", "-g")
    assert rc == 22 and "Link status is down" in err
    sim.run("hccn_tool", "-i", "1", "-mtu", "-s", "size", "1500")
    time.sleep(0.3)
    assert sim.run("hccn_tool", "-i", "1", "-link", "-g")[1] == "link status: UP\n"
    assert sim.run("hccn_tool", "-i", "1", "-mtu", "-g")[1] == "mtu:1500\n"
    # the fault stays listed; the port is not stuck again by later sets
    assert [f["kind"] for f in json.loads(_fault(sim, "list"))] == ["link-stuck-down"]


def test_link_stuck_down_value_is_validated(sim):
    for value in ("0", "x", "-1"):
        assert sim.sub("npu-sim", "fault", "set", "link-stuck-down", "--value", value)[0] == 2
