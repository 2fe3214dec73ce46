"""The node's hccn.conf and ``npu-sim reboot``: which NPU port settings a simulated node keeps across a reboot.

/etc/hccn.conf holds ``address_N``, ``netmask_N``, ``netdetect_N``, ``gateway_N`` (and ``send_arp_status_N``)
(tests/fixtures/captures/hccn_tool_-gateway_-g.txt, the note on the related file; ``-ip -s`` persists to it:
hccn_tool_set_and_errors.txt). A reboot restores those and brings MTU, PFC, DSCP -> TC and TLS back at the driver
defaults. The tools' answers are read with the collection's parsers, not from the simulator's state.
"""

import os
import re
import stat

import pytest

from npu_sim import control, hccnconf
from npu_sim import node as node_mod
from simhelpers import CREATED, Sim

CLOCK = CREATED + 3600.0  # an hour after the node was created
FLAP = 5.0
CONF_LINE = re.compile(r"^(address|netmask|netdetect|gateway)_([0-9]+)=(\S+)$")
REBOOT_LINE = re.compile(r"^rebooted (\S+): (\d+) ports back at driver defaults \(mtu, pfc, dscp_to_tc, tls\), "
                         r"addresses from hccn\.conf, links up after (\S+)s, governor (\S+)(, (\d+) NPU processes ended)?$")


def _parsers():
    from ansible_collections.npuops.ascend.plugins.module_utils._parsers import cpupower
    from ansible_collections.npuops.ascend.plugins.module_utils._parsers import hccn_tool
    return hccn_tool, cpupower


def _ctl(*argv):
    res = control.run(list(argv))
    assert res.exit_code == 0, res.stderr
    return res.stdout


def _init(tmp_path, hostname="node01", index=1, *extra):
    """A node made by ``npu-sim init`` (which writes hccn.conf), its clock pinned at CLOCK."""
    path = str(tmp_path / hostname / "state" / "state.json")
    os.makedirs(os.path.dirname(path))
    _ctl("init", "--state", path, "--hostname", hostname, "--index", str(index), *extra)
    _ctl("state", "set", "settings.clock", repr(CLOCK), "--state", path)
    sim = Sim.__new__(Sim)  # the helper's runners on a state that init wrote
    sim.dir, sim.path = os.path.dirname(path), path
    sim.reload()
    return sim


def _conf_lines(sim):
    with open(os.path.join(sim.dir, "hccn.conf"), encoding="utf-8") as handle:
        return handle.read().splitlines()


def _conf(sim):
    """{device: {key: value}} of the node's hccn.conf, read line by line with the format of the real file."""
    result = {}
    for line in _conf_lines(sim):
        match = CONF_LINE.match(line)
        assert match, "not a key_N=value line of hccn.conf: %r" % line
        result.setdefault(int(match.group(2)), {})[match.group(1)] = match.group(3)
    return result


def _ok(sim, *args):
    rc, out, err = sim.run("hccn_tool", *args)
    assert (rc, out, err) == (0, "Cmd executed successfully!\n", ""), (args, rc, out, err)


def _get(sim, dev, what, *args):
    parsers = _parsers()[0]
    rc, out, err = sim.run("hccn_tool", "-i", str(dev), "-%s" % what, "-g", *args)
    assert rc == 0, (what, rc, out, err)
    parsed = getattr(parsers, "parse_%s_get" % what)(out)
    assert parsed["unparsed"] == [], out
    return parsed


def _governor(sim):
    rc, out, err = sim.run("cpupower", "-c", "0", "frequency-info", "-p")
    assert rc == 0, err
    return _parsers()[1].parse_frequency_info_policy(out)["cpus"][0]


def _at(sim, when):
    _ctl("state", "set", "settings.clock", repr(when), "--state", sim.path)


# ----------------------------------------------------------------------------- hccn.conf

def test_init_writes_the_address_plan_with_the_real_key_names(tmp_path):
    sim = _init(tmp_path, "node03", 3)
    path = os.path.join(sim.dir, "hccn.conf")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o644
    lines = _conf_lines(sim)
    assert len(lines) == 8 * 4
    # sorted by device, then key; no spaces around '='
    assert lines[:4] == ["address_0=10.20.0.13", "gateway_0=10.20.0.1", "netdetect_0=10.20.0.1", "netmask_0=255.255.255.0"]
    assert lines[-4:] == ["address_7=10.20.7.13", "gateway_7=10.20.7.1", "netdetect_7=10.20.7.1", "netmask_7=255.255.255.0"]
    conf = _conf(sim)
    assert sorted(conf) == list(range(8))
    # what the file holds is what the ports answer
    for dev in range(8):
        ip = _get(sim, dev, "ip")
        assert (ip["address"], ip["netmask"]) == (conf[dev]["address"], conf[dev]["netmask"])
        assert _get(sim, dev, "gateway")["gateway"] == conf[dev]["gateway"]
        assert _get(sim, dev, "netdetect")["netdetect"] == conf[dev]["netdetect"]
    assert not [name for name in os.listdir(sim.dir) if ".tmp." in name]


def test_persisted_sets_update_the_file_and_the_others_do_not(tmp_path):
    sim = _init(tmp_path)
    before = _conf_lines(sim)
    _ok(sim, "-i", "0", "-ip", "-s", "address", "10.20.0.99", "netmask", "255.255.0.0")
    _ok(sim, "-i", "1", "-gateway", "-s", "gateway", "10.20.1.254")
    _ok(sim, "-i", "2", "-netdetect", "-s", "address", "10.20.2.7")
    conf = _conf(sim)
    assert conf[0] == {"address": "10.20.0.99", "netmask": "255.255.0.0", "gateway": "10.20.0.1", "netdetect": "10.20.0.1"}
    assert conf[1]["gateway"] == "10.20.1.254"
    assert conf[2]["netdetect"] == "10.20.2.7"
    changed = [line for line in _conf_lines(sim) if line not in before]
    assert sorted(changed) == ["address_0=10.20.0.99", "gateway_1=10.20.1.254", "netdetect_2=10.20.2.7",
                               "netmask_0=255.255.0.0"]
    after = _conf_lines(sim)
    # MTU, PFC, DSCP -> TC and TLS have no key in hccn.conf; a refused set writes nothing
    _ok(sim, "-i", "3", "-mtu", "-s", "size", "9000")
    _ok(sim, "-i", "3", "-pfc", "-s", "bitmap", "0,0,0,1,0,0,0,0")
    _ok(sim, "-i", "3", "-dscp_to_tc", "-s", "dscp", "26", "tc", "3")
    _ok(sim, "-i", "3", "-tls", "-s", "enable", "0")
    assert sim.run("hccn_tool", "-i", "4", "-ip", "-s", "address", "10.20.4.300", "netmask", "255.255.255.0")[0] == 6
    assert sim.run("hccn_tool", "-i", "5", "-gateway", "-s", "gateway", "10.99.0.1")[0] == 8
    assert _conf_lines(sim) == after


def test_an_address_in_another_subnet_drops_the_gateway_from_the_file(tmp_path):
    sim = _init(tmp_path)
    _ok(sim, "-i", "4", "-ip", "-s", "address", "10.40.4.11", "netmask", "255.255.255.0")
    conf = _conf(sim)
    assert conf[4] == {"address": "10.40.4.11", "netmask": "255.255.255.0", "netdetect": "10.20.4.1"}
    assert sim.run("hccn_tool", "-i", "4", "-gateway", "-g")[0] == 2


def test_a_node_without_roce_ports_has_no_hccn_conf(tmp_path):
    sim = _init(tmp_path, "node02", 2, "--product", "atlas-300i-duo")
    assert not os.path.exists(os.path.join(sim.dir, "hccn.conf"))
    # an A2 state initialised over it has one, and a Duo state over that removes it again
    _ctl("init", "--state", sim.path, "--hostname", "node02", "--index", "2", "--force")
    assert len(_conf_lines(sim)) == 32
    _ctl("init", "--state", sim.path, "--hostname", "node02", "--index", "2", "--product", "atlas-300i-duo", "--force")
    assert not os.path.exists(os.path.join(sim.dir, "hccn.conf"))
    out = _ctl("reboot", "--state", sim.path)
    assert out == "rebooted node02: no RoCE ports, governor ondemand\n"
    assert not os.path.exists(os.path.join(sim.dir, "hccn.conf"))


# ----------------------------------------------------------------------------- npu-sim reboot

def test_reboot_brings_back_the_driver_defaults_and_the_persisted_addresses(tmp_path):
    sim = _init(tmp_path)
    defaults = {"mtu": _get(sim, 0, "mtu")["mtu"], "pfc": _get(sim, 0, "pfc")["priorities"],
                "dscp": _get(sim, 0, "dscp_to_tc")["map"], "tls": _get(sim, 0, "tls")["enabled"]}
    assert defaults["mtu"] == 1500 and defaults["pfc"] == [] and defaults["tls"] is True
    # the node is tuned: jumbo MTU, PFC on priority 3, DSCP 26 -> TC 3, TLS off, a new address, governor performance
    for dev in range(8):
        _ok(sim, "-i", str(dev), "-mtu", "-s", "size", "9000")
        _ok(sim, "-i", str(dev), "-pfc", "-s", "bitmap", "0,0,0,1,0,0,0,0")
        _ok(sim, "-i", str(dev), "-dscp_to_tc", "-s", "dscp", "26", "tc", "3")
        _ok(sim, "-i", str(dev), "-tls", "-s", "enable", "0")
    _ok(sim, "-i", "0", "-ip", "-s", "address", "10.20.0.99", "netmask", "255.255.255.0")
    assert sim.run("cpupower", "-c", "all", "frequency-set", "-g", "performance")[0] == 0
    _at(sim, CLOCK + 60)
    assert _get(sim, 0, "mtu")["mtu"] == 9000 and _get(sim, 0, "pfc")["priorities"] == [3]
    assert _get(sim, 0, "dscp_to_tc", "dscp", "26")["map"] == {26: 3}
    assert _governor(sim) == "performance"

    _at(sim, CLOCK + 120)
    out = _ctl("reboot", "--state", sim.path)
    match = REBOOT_LINE.match(out.rstrip("\n"))
    assert match, out
    assert match.group(1, 2, 3, 4) == ("node01", "8", "5", "ondemand") and match.group(5) is None

    # right after the reboot every link is DOWN (PFC cannot be read then), the values are the defaults again
    for dev in range(8):
        assert _get(sim, dev, "link")["link"] == "DOWN"
        assert _get(sim, dev, "mtu")["mtu"] == defaults["mtu"]
        assert _get(sim, dev, "dscp_to_tc")["map"] == defaults["dscp"]
        assert _get(sim, dev, "tls")["enabled"] is defaults["tls"]
    assert sim.run("hccn_tool", "-i", "0", "-pfc", "-g")[0] == 0x16
    ip = _get(sim, 0, "ip")
    assert (ip["address"], ip["netmask"]) == ("10.20.0.99", "255.255.255.0")  # from hccn.conf, not the plan
    assert _get(sim, 5, "ip")["address"] == "10.20.5.11"
    assert _get(sim, 0, "gateway")["gateway"] == "10.20.0.1"
    assert _get(sim, 0, "netdetect")["netdetect"] == "10.20.0.1"
    assert _governor(sim) == "ondemand"

    # after settings.flap_seconds the links are UP, the link history shows the reboot's DOWN and UP
    _at(sim, CLOCK + 120 + FLAP)
    for dev in range(8):
        assert _get(sim, dev, "link")["link"] == "UP"
        assert _get(sim, dev, "pfc")["priorities"] == defaults["pfc"]
    records = _get(sim, 0, "link_stat")["records"]
    assert [rec["status"] for rec in records[:2]] == ["UP", "DOWN"]


def test_reboot_takes_the_addresses_from_the_file_as_it_is(tmp_path):
    sim = _init(tmp_path)
    # the file edited on the node: device 2 gets another address, device 3 loses its gateway and its address
    lines = [line for line in _conf_lines(sim) if not line.startswith(("gateway_3=", "address_3=", "netmask_3="))]
    lines = [line.replace("address_2=10.20.2.11", "address_2=10.20.2.50") for line in lines]
    with open(os.path.join(sim.dir, "hccn.conf"), "w", encoding="utf-8") as handle:
        handle.write("\n".join(lines + ["send_arp_status_2=1", ""]))
    _ctl("reboot", "--state", sim.path)
    assert _get(sim, 2, "ip")["address"] == "10.20.2.50"
    assert sim.run("hccn_tool", "-i", "3", "-ip", "-g") == (0x0D, "", "Get ipconf failed, because no ip was preset there!\n")
    assert sim.run("hccn_tool", "-i", "3", "-gateway", "-g") == (2, "", "Get gateway failed, because no gateway was preset there!\n")
    assert _get(sim, 3, "netdetect")["netdetect"] == "10.20.3.1"
    # the file the reboot read is left as it was
    assert _conf_lines(sim)[-1] == "send_arp_status_2=1"
    # an address set after the reboot persists again
    _ok(sim, "-i", "3", "-ip", "-s", "address", "10.20.3.11", "netmask", "255.255.255.0")
    assert _conf(sim)[3] == {"address": "10.20.3.11", "netmask": "255.255.255.0", "netdetect": "10.20.3.1"}


def test_reboot_keeps_host_faults_and_ends_npu_processes(tmp_path):
    sim = _init(tmp_path)
    _ctl("state", "set", "host.swappiness", "60", "--state", sim.path)
    _ctl("state", "set", "npus.1.processes", '[{"pid": 4242, "name": "python", "memory_mb": 2000}]', "--state", sim.path)
    _ctl("fault", "set", "health", "--device", "6", "--value", "Warning", "--state", sim.path)
    rc, out, _err = sim.run("npu-smi", "info")
    assert rc == 0 and "4242" in out
    res = _ctl("reboot", "--state", sim.path)
    match = REBOOT_LINE.match(res.rstrip("\n"))
    assert match and match.group(6) == "1", res
    rc, out, _err = sim.run("npu-smi", "info")
    assert rc == 0 and "4242" not in out and "No running processes found in NPU 1" in out
    assert "Warning" in out  # the fault stays
    assert _ctl("state", "get", "host.swappiness", "--state", sim.path) == "60\n"


def test_reboot_with_a_stuck_link_leaves_it_down(tmp_path):
    sim = _init(tmp_path)
    _ctl("fault", "set", "link-stuck-down", "--device", "4", "--state", sim.path)
    _ctl("reboot", "--state", sim.path)
    _at(sim, CLOCK + 10 * FLAP)
    assert _get(sim, 4, "link")["link"] == "DOWN"
    assert _get(sim, 5, "link")["link"] == "UP"


def test_reboot_of_a_state_without_the_file(sim):
    """A state not written by ``npu-sim init`` (the test helpers'): the reboot uses the state's record of hccn.conf
    and writes the file; a state older than that record uses the ports' current values."""
    sim.data["settings"]["clock"] = CLOCK
    del sim.data["npus"][6]["net"]["persisted"]
    sim.data["npus"][6]["net"]["ip"] = "10.20.6.77"
    sim.data["npus"][7]["net"]["mtu"] = 9000
    sim.save()
    conf = os.path.join(sim.dir, "hccn.conf")
    assert not os.path.exists(conf)
    rc, out, err = sim.sub("npu-sim", "reboot", "--state", sim.path)
    assert rc == 0 and err == "" and out.startswith("rebooted node01: 8 ports"), (rc, out, err)
    assert _conf(sim)[6]["address"] == "10.20.6.77" and _conf(sim)[5]["address"] == "10.20.5.11"
    assert _get(sim, 6, "ip")["address"] == "10.20.6.77"
    assert _get(sim, 7, "mtu")["mtu"] == 1500


def test_reboot_usage_errors(tmp_path):
    res = control.run(["reboot", "--state", str(tmp_path / "none" / "state.json")])
    assert res.exit_code == 1 and "no simulator state" in res.stderr
    res = control.run(["reboot", "--keep-ports"])
    assert res.exit_code == 2


@pytest.mark.parametrize("text,expected", [
    ("address_0=10.0.0.1\nnetmask_0=255.255.255.0\n", {0: {"address": "10.0.0.1", "netmask": "255.255.255.0"}}),
    ("# comment\n\nsend_arp_status_1=1\ngateway_12=10.0.12.1\nbogus\n", {12: {"gateway": "10.0.12.1"}}),
    ("address_x=1.2.3.4\naddress_3=\n", {}),
])
def test_parse(text, expected):
    assert hccnconf.parse(text) == expected


def test_the_fresh_state_records_the_plan():
    st = node_mod.new_state("node09", 9, created=CREATED)
    assert hccnconf.render(st).splitlines()[:4] == [
        "address_0=10.20.0.19", "gateway_0=10.20.0.1", "netdetect_0=10.20.0.1", "netmask_0=255.255.255.0"]
