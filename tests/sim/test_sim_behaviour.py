"""Behaviour: sets change later gets, 910B limits with their real texts, link flap, ping, root, concurrency."""

import json
import os
import subprocess
import sys
import threading
import time

import pytest

from simhelpers import TOOLS

MTU_HELP = ("[ hccn_tool -i devid -mtu ] needs the following parameters:\n"
            "   [-s]        : set mtu cfg \n"
            "       size %d : set mtu size, ETH from 68 to 9702\n"
            "   [-g]        : get mtu cfg\n")


def _up(sim, flap=0.3):
    sim.data["settings"]["flap_seconds"] = flap
    sim.save()


def _wait_link(sim, dev, word, timeout=5.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if sim.run("hccn_tool", "-i", str(dev), "-link", "-g")[1] == "link status: %s\n" % word:
            return True
        time.sleep(0.05)
    return False


def test_set_then_get_every_setting(sim):
    _up(sim, 0.0)
    calls = [
        (("-ip", "-s", "address", "10.1.0.5", "netmask", "255.255.0.0"), ("-ip", "-g"), "ipaddr:10.1.0.5\nnetmask:255.255.0.0\n"),
        (("-gateway", "-s", "gateway", "10.1.0.1"), ("-gateway", "-g"), "default gateway:10.1.0.1, Iface:eth2\n"),
        (("-netdetect", "-s", "address", "10.1.0.1"), ("-netdetect", "-g"), "netdetect addr: 10.1.0.1\n"),
        (("-mtu", "-s", "size", "9000"), ("-mtu", "-g"), "mtu:9000\n"),
        (("-dscp_to_tc", "-s", "dscp", "33", "tc", "3"), ("-dscp_to_tc", "-g", "dscp", "33"), "dscp      tc\n  33       3\n"),
        (("-pfc", "-s", "bitmap", "0,0,0,0,1,0,0,0"), ("-pfc", "-g"), "PFC configuration:\npriority   0 1 2 3 4 5 6 7\nenabled    0 0 0 0 1 0 0 0\n"),
    ]
    for set_args, get_args, expected in calls:
        assert sim.run("hccn_tool", "-i", "2", *set_args) == (0, "Cmd executed successfully!\n", "")
        assert sim.run("hccn_tool", "-i", "2", *get_args) == (0, expected, "")
    assert sim.run("hccn_tool", "-i", "2", "-net_health", "-g")[1] == "net health status: Success\n"
    assert sim.run("hccn_tool", "-i", "2", "-tls", "-s", "enable", "0")[0] == 0
    assert "tls switch[0]" in sim.run("hccn_tool", "-i", "2", "-tls", "-g")[1]
    # other devices are untouched
    assert sim.run("hccn_tool", "-i", "3", "-mtu", "-g")[1] == "mtu:1500\n"


def test_untuned_defaults(sim):
    assert sim.run("hccn_tool", "-i", "0", "-mtu", "-g")[1] == "mtu:1500\n"
    assert sim.run("hccn_tool", "-i", "0", "-pfc", "-g")[1].endswith("enabled    0 0 0 0 0 0 0 0\n")
    table = sim.run("hccn_tool", "-i", "0", "-dscp_to_tc", "-g")[1].splitlines()
    assert table[0] == "dscp      tc" and len(table) == 65 and table[34] == "  33       2"
    assert sim.run("hccn_tool", "-i", "5", "-ip", "-g")[1] == "ipaddr:10.20.5.11\nnetmask:255.255.255.0\n"
    # a deployed node: the rail's gateway and netdetect address are configured, so net_health is Success
    assert sim.run("hccn_tool", "-i", "3", "-gateway", "-g") == (0, "default gateway:10.20.3.1, Iface:eth3\n", "")
    assert sim.run("hccn_tool", "-i", "3", "-netdetect", "-g") == (0, "netdetect addr: 10.20.3.1\n", "")
    assert sim.run("hccn_tool", "-i", "3", "-net_health", "-g")[1] == "net health status: Success\n"


def test_unset_gateway_and_netdetect(sim):
    for npu in sim.data["npus"]:
        npu["net"]["gateway"] = npu["net"]["netdetect"] = None
    sim.save()
    assert sim.run("hccn_tool", "-i", "0", "-gateway", "-g") == (2, "", "Get gateway failed, because no gateway was preset there!\n")
    # the driver source prints the device's netdetect address whatever it is: 0.0.0.0 when none is set
    assert sim.run("hccn_tool", "-i", "0", "-netdetect", "-g") == (0, "netdetect addr: 0.0.0.0\n", "")
    assert sim.run("hccn_tool", "-i", "0", "-net_health", "-g")[1] == "net health status: Init\n"
    assert sim.run("cpupower", "frequency-info", "-p")[1].count('"ondemand"') == 1


@pytest.mark.parametrize("args,rc,out,err", [
    (("-mtu", "-s", "value", "9000"), 3, MTU_HELP, "Get unknown option!\n"),
    (("-mtu", "-s", "size", "9703"), 13, MTU_HELP, "The value of mtu you input is out of the valid range!\n"),
    (("-mtu", "-s", "size", "67"), 13, MTU_HELP, "The value of mtu you input is out of the valid range!\n"),
    (("-pfc", "-s", "bitmap", "1,1,1,1,1,0,0,0"), 25, "The number of pfc priority queues exceeds the maximum value(4).\n", ""),
    (("-pfc", "-s", "bitmap", "1,1,1,1"), 1, None, "Get invalid parameters!\n"),
    (("-dscp_to_tc", "-s", "dscp", "33", "tc", "4"), 10, None, "The value of tc you input is out of the valid range!\n"),
    (("-dscp_to_tc", "-s", "dscp", "64", "tc", "3"), 9, None, "The value of dscp you input is out of the valid range!\n"),
    (("-ip", "-s", "address", "300.1.1.1", "netmask", "255.255.255.0"), 6, "", "The ip address you configured is invalid!\n"),
    (("-gateway", "-s", "gateway", "10.99.0.1"), 8, "", "The segment of configured gateway doesn't match that of the configured ip adress!\n"),
    (("-tls", "-s", "enable", "2"), 1, None, "Get invalid parameters!\n"),
    (("-nosuch", "-g"), 3, "", "Get invalid major cmd.\nEnter [ hccn_tool -h ] for more details.\n"),
])
def test_limits_and_error_texts(sim, args, rc, out, err):
    got_rc, got_out, got_err = sim.sub("hccn_tool", "-i", "0", *args)
    assert (got_rc, got_err) == (rc, err)
    if out is not None:
        assert got_out == out
    else:
        assert got_out.startswith("[ hccn_tool -i devid -")
    # nothing changed
    assert sim.run("hccn_tool", "-i", "0", "-mtu", "-g")[1] == "mtu:1500\n"


def test_bad_device_id(sim):
    for dev in ("8", "99", "abc", "-1"):
        assert sim.sub("hccn_tool", "-i", dev, "-link", "-g") == (4, "", "Get invalid device id.\n")
    assert sim.run("npu-smi", "info", "-t", "board", "-i", "8")[0] == 215


def test_no_major_type(sim):
    rc, out, err = sim.run("hccn_tool", "-link", "-g")
    assert rc == 1 and err.startswith("Get invalid major cmd type.")


def test_gateway_needs_ip(sim):
    sim.npu(1)["net"]["ip"] = None
    sim.save()
    assert sim.run("hccn_tool", "-i", "1", "-gateway", "-s", "gateway", "10.20.1.1") == (
        26, "", "Unable to configure gateway, because ip is not configured!\n")


def test_set_needs_root(sim):
    rc, out, err = sim.sub("hccn_tool", "-i", "0", "-mtu", "-s", "size", "9000", env={"NPU_SIM_EUID": "1000"})
    assert (rc, out, err) == (12, "", "permission denied: pls check this cmd run permission.\n")
    assert sim.sub("hccn_tool", "-i", "0", "-mtu", "-g", env={"NPU_SIM_EUID": "1000"}) == (0, "mtu:1500\n", "")
    assert sim.run("hccn_tool", "-i", "0", "-mtu", "-g")[1] == "mtu:1500\n"


def test_set_needs_root_monkeypatched(sim, monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert sim.run("hccn_tool", "-i", "0", "-pfc", "-s", "bitmap", "0,0,0,0,1,0,0,0")[0] == 12
    assert sim.run("cpupower", "frequency-set", "-g", "performance")[0] == 237


def test_pfc_set_flaps_link(sim):
    _up(sim, 0.3)
    assert sim.run("hccn_tool", "-i", "4", "-pfc", "-s", "bitmap", "0,0,0,0,1,0,0,0")[0] == 0
    assert sim.run("hccn_tool", "-i", "4", "-link", "-g")[1] == "link status: DOWN\n"
    assert sim.run("hccn_tool", "-i", "4", "-pfc", "-g") == (22, "", "Execute failed: Link status is down.\n")
    assert sim.run("hccn_tool", "-i", "5", "-link", "-g")[1] == "link status: UP\n"
    assert _wait_link(sim, 4, "UP")
    assert sim.run("hccn_tool", "-i", "4", "-pfc", "-g")[0] == 0
    records = sim.run("hccn_tool", "-i", "4", "-link_stat", "-g")[1].splitlines()
    assert records[1].endswith("link up count       : 2")
    assert records[3].endswith("LINK UP") and records[4].endswith("LINK DOWN")


def test_mtu_set_flaps_link_default_5s(sim):
    assert sim.data["settings"]["flap_seconds"] == 5.0
    sim.data["settings"]["clock"] = 1000.0
    sim.save()
    sim.run("hccn_tool", "-i", "0", "-mtu", "-s", "size", "9000")
    for clock, word in ((1004.9, "DOWN"), (1005.0, "UP")):
        sim.reload()
        sim.data["settings"]["clock"] = clock
        sim.save()
        assert sim.run("hccn_tool", "-i", "0", "-link", "-g")[1] == "link status: %s\n" % word


def test_dscp_set_does_not_flap(sim):
    sim.run("hccn_tool", "-i", "0", "-dscp_to_tc", "-s", "dscp", "33", "tc", "3")
    assert sim.run("hccn_tool", "-i", "0", "-link", "-g")[1] == "link status: UP\n"


def _two_nodes(nodes):
    one, two = nodes("node01", 1), nodes("node02", 2)
    for node in (one, two):
        node.data["settings"]["flap_seconds"] = 0.3
        node.save()
    return one, two


def test_ping_rules(nodes):
    one, two = _two_nodes(nodes)
    ping = ("-ping", "-g", "address", "10.20.0.12")
    assert one.run("hccn_tool", "-i", "0", *ping)[1].endswith("3 packets transmitted, 3 received, 0.00% packet loss\n")
    # different subnet (rail 1 -> rail 0 address)
    assert one.run("hccn_tool", "-i", "1", *ping)[1].endswith("3 received, 0.00% packet loss\n") is False
    # unknown address in the subnet
    out = one.run("hccn_tool", "-i", "0", "-ping", "-g", "address", "10.20.0.99")[1]
    assert out == "device 0 PING 10.20.0.99\n3 packets transmitted, 0 received, 100.00% packet loss\n"
    # packet size must fit both MTUs (1500 untuned): 1472 + 28 fits, 1473 does not
    assert "3 received" in one.run("hccn_tool", "-i", "0", *(ping + ("size", "1472")))[1]
    assert "0 received" in one.run("hccn_tool", "-i", "0", *(ping + ("size", "1473")))[1]
    one.run("hccn_tool", "-i", "0", "-mtu", "-s", "size", "9000")
    assert _wait_link(one, 0, "UP")
    assert "0 received" in one.run("hccn_tool", "-i", "0", *(ping + ("size", "8000")))[1]
    two.run("hccn_tool", "-i", "0", "-mtu", "-s", "size", "9000")
    # remote link is DOWN during its flap
    assert "0 received" in one.run("hccn_tool", "-i", "0", *(ping + ("size", "8000")))[1]
    assert _wait_link(two, 0, "UP")
    assert "3 received" in one.run("hccn_tool", "-i", "0", *(ping + ("size", "8000")))[1]
    # count
    assert "5 packets transmitted, 5 received" in one.run("hccn_tool", "-i", "0", *(ping + ("pkt", "5")))[1]
    assert "2 packets transmitted, 2 received" in one.run("hccn_tool", "-i", "0", *(ping + ("-n", "2")))[1]


def test_ip_conflict_with_pod_address(nodes):
    one, two = _two_nodes(nodes)
    assert one.run("hccn_tool", "-i", "0", "-ip", "-s", "address", "10.20.0.12", "netmask", "255.255.255.0") == (
        7, "", "The ip address configured is conflicted!\n")


def test_concurrent_sets_on_8_devices(sim):
    procs = []
    for dev in range(8):
        env = dict(os.environ, PYTHONPATH=TOOLS, NPU_SIM_STATE=sim.path)
        procs.append(subprocess.Popen([sys.executable, "-m", "npu_sim", "hccn_tool", "-i", str(dev), "-mtu", "-s", "size", str(9000 + dev)],
                                      env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE))
        procs.append(subprocess.Popen([sys.executable, "-m", "npu_sim", "hccn_tool", "-i", str(dev), "-dscp_to_tc", "-s", "dscp",
                                       str(dev), "tc", "3"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE))
    for proc in procs:
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
    data = sim.reload()
    assert [npu["net"]["mtu"] for npu in data["npus"]] == [9000 + dev for dev in range(8)]
    assert [npu["net"]["dscp_to_tc"][dev] for dev, npu in enumerate(data["npus"])] == [3] * 8


def test_concurrent_in_process_threads(sim):
    errors = []

    def worker(dev):
        for size in range(9000, 9010):
            rc = sim.run("hccn_tool", "-i", str(dev), "-mtu", "-s", "size", str(size))[0]
            if rc:
                errors.append(rc)
    threads = [threading.Thread(target=worker, args=(dev,)) for dev in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert [npu["net"]["mtu"] for npu in sim.reload()["npus"]] == [9009] * 8


def test_call_log_and_latency(sim):
    assert sim.sub("npu-sim", "calls", "--count") == (0, "0\n", "")
    started = time.time()
    sim.sub("hccn_tool", "-i", "0", "-link", "-g", env={"NPU_SIM_LATENCY_MS": "300"})
    assert time.time() - started >= 0.3
    sim.sub("hccn_tool", "-i", "9", "-link", "-g")
    sim.sub("npu-smi", "info")
    rc, out, _err = sim.sub("npu-sim", "calls")
    entries = [json.loads(line) for line in out.splitlines()]
    assert [e["argv"] for e in entries] == [["hccn_tool", "-i", "0", "-link", "-g"], ["hccn_tool", "-i", "9", "-link", "-g"], ["npu-smi", "info"]]
    assert [e["rc"] for e in entries] == [0, 4, 0]
    assert entries[0]["duration_s"] >= 0.3 and all("time" in e for e in entries)
    assert sim.sub("npu-sim", "calls", "--count", "--tool", "npu-smi")[1] == "1\n"
    assert sim.sub("npu-sim", "calls", "--clear")[0] == 0
    assert sim.sub("npu-sim", "calls", "--count")[1] == "0\n"


def test_latency_from_state_setting(sim):
    sim.data["settings"]["latency_ms"] = 250
    sim.save()
    started = time.time()
    sim.sub("npu-smi", "info", "-l")
    assert time.time() - started >= 0.25


def test_numactl_launcher_records_binding(sim):
    code = "import os; print(os.environ.get('NPU_SIM_NUMA_NODE'), os.environ.get('NPU_SIM_MEM_NODE'))"
    rc, out, err = sim.sub("numactl", "-N", "6", "-m", "6", "--", sys.executable, "-c", code)
    assert (rc, out, err) == (0, "6 6\n", "")
    rc, out, err = sim.sub("numactl", "--cpunodebind=2", "--membind=2", sys.executable, "-c", code)
    assert (rc, out) == (0, "2 2\n")
    rc, out, err = sim.sub("numactl", "-N", "9", "true")
    assert rc == 1 and "out of range" in err


def test_cpupower_set_governor(sim):
    rc, out, err = sim.sub("cpupower", "frequency-set", "-g", "performance")
    assert rc == 0 and out.splitlines()[0] == "Setting cpu: 0" and len(out.splitlines()) == 192
    assert sim.reload()["governor"] == "performance"
    assert '"performance"' in sim.run("cpupower", "frequency-info")[1]
    assert sim.sub("cpupower", "frequency-set", "-g", "turbo")[0] == 237


def test_cpupower_cpu_list(sim):
    rc, out, _err = sim.sub("cpupower", "-c", "0-2,5", "frequency-info", "-p")
    assert rc == 0
    assert [line for line in out.splitlines() if line.startswith("analyzing")] == [
        "analyzing CPU 0:", "analyzing CPU 1:", "analyzing CPU 2:", "analyzing CPU 5:"]
    assert len([line for line in sim.sub("cpupower", "-c", "all", "frequency-info", "-p")[1].splitlines()
                if line.startswith("analyzing")]) == 192
    rc, out, _err = sim.sub("cpupower", "-c", "190,191", "frequency-set", "-g", "performance")
    assert (rc, out) == (0, "Setting cpu: 190\nSetting cpu: 191\n")
    assert sim.sub("cpupower", "-c", "999", "frequency-info", "-p")[0] == 1


def test_state_show_get_set(sim):
    assert json.loads(sim.sub("npu-sim", "state", "show")[1])["hostname"] == "node01"
    assert sim.sub("npu-sim", "state", "set", "npus.3.net.mtu", "4200")[0] == 0
    assert sim.sub("npu-sim", "state", "get", "npus.3.net.mtu") == (0, "4200\n", "")
    assert sim.run("hccn_tool", "-i", "3", "-mtu", "-g")[1] == "mtu:4200\n"
    assert sim.sub("npu-sim", "state", "get", "no.such")[0] == 2


def test_init_refuses_overwrite(sim):
    rc, _out, err = sim.sub("npu-sim", "init", "--state", sim.path, "--hostname", "x", "--index", "3")
    assert rc == 2 and "exists" in err
    assert sim.sub("npu-sim", "init", "--state", sim.path, "--hostname", "x", "--index", "3", "--force")[0] == 0
    assert sim.run("hccn_tool", "-i", "0", "-ip", "-g")[1] == "ipaddr:10.20.0.13\nnetmask:255.255.255.0\n"


def test_missing_state_is_reported(tmp_path):
    env = dict(os.environ, PYTHONPATH=TOOLS, NPU_SIM_STATE=str(tmp_path / "none" / "state.json"))
    proc = subprocess.run([sys.executable, "-m", "npu_sim", "hccn_tool", "-i", "0", "-link", "-g"], env=env,
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 1 and "no simulator state" in proc.stderr


GETS = ("link", "ip", "gateway", "net_health", "netdetect", "tls", "pfc", "pfc_stat", "dscp_to_tc", "mtu",
        "optical", "stat", "lldp", "link_stat", "fec", "speed", "bandwidth")


def test_gets_leave_the_state_file_byte_identical(sim):
    # An Ansible check-mode run only reads: the state file must not change, whatever the faults.
    sim.run("hccn_tool", "-i", "0", "-pfc", "-s", "bitmap", "0,0,0,0,1,0,0,0")  # port 0 is flapping now
    for args in (("busy", "--device", "3", "--value", "2"), ("busy", "--tool", "npu-smi", "--value", "1"),
                 ("link-flap", "--device", "2"), ("health", "--device", "1"), ("process", "--device", "4"),
                 ("slow-port", "--device", "3"), ("slow-node",), ("pfc-storm", "--device", "0")):
        assert sim.sub("npu-sim", "fault", "set", *args)[0] == 0
    with open(sim.path, "rb") as handle:
        before = handle.read()
    for dev in (0, 2, 3):
        for command in GETS:
            sim.sub("hccn_tool", "-i", str(dev), "-%s" % command, "-g")
    sim.run("hccn_tool", "-i", "0", "-ping", "-g", "address", "10.20.0.12")
    for args in (("info",), ("info", "-l"), ("info", "-m"), ("info", "-t", "health", "-i", "1"),
                 ("info", "-t", "topo")):
        sim.sub("npu-smi", *args)
    for tool, args in (("lscpu", ()), ("numactl", ("-H",)), ("cpupower", ("frequency-info",))):
        sim.run(tool, *args)
    with open(sim.path, "rb") as handle:
        assert handle.read() == before
    # The counted faults were used up all the same.
    assert sim.run("hccn_tool", "-i", "3", "-link", "-g")[0] == 0
    assert sim.run("npu-smi", "info", "-l")[0] == 0
