"""The crc-growing and optical-low faults: the -stat -g and -optical -g output they change, in the real formats
(tests/fixtures/captures/hccn_tool_-stat_-g.txt: '<name>:<u64>' in the driver's order, the FCS counter only in a
build with the extended counters; hccn_tool_-optical_-g.txt: 'key<padded to 21>: value unit'), parsed by the
collection's parsers and judged by stage 0's link-quality decisions."""

import re

import pytest

from npu_sim import ports as ports_mod

CLOCK = 1767225600.0 + 3600  # an hour after the node was created
OPTICAL_RE = re.compile(r"^(.{21}): (.*)$")


def _parsers():
    from ansible_collections.npuops.ascend.plugins.module_utils._parsers import hccn_tool as parsers
    from ansible_collections.npuops.ascend.plugins.plugin_utils import links
    return parsers, links


def _at(sim, when):
    sim.reload()
    sim.data["settings"]["clock"] = when
    sim.save()


def _fault(sim, *args):
    rc, out, err = sim.sub("npu-sim", "fault", *args)
    assert rc == 0, err
    return out


def _stat(sim, dev):
    rc, out, err = sim.run("hccn_tool", "-i", str(dev), "-stat", "-g")
    assert (rc, err) == (0, "")
    return out


def _keys(out):
    lines = out.splitlines()
    assert lines[0] == "packet statistics:"
    assert all(re.match(r"^[a-z0-9_]+:[0-9]+$", line) for line in lines[1:]), out
    return [line.split(":")[0] for line in lines[1:]]


def test_the_extended_counters_are_printed_only_by_a_build_that_has_them(sim):
    assert _keys(_stat(sim, 0)) == list(ports_mod.STAT_KEYS)
    assert "mac_rx_fcs_err_pkt_num" not in _keys(_stat(sim, 0))
    _at(sim, CLOCK)
    sim.data["settings"]["hccn_ext_stat"] = True
    sim.save()
    keys = _keys(_stat(sim, 0))
    # the driver's order (tool.c): the FCS counter after mac_rx_bad_oct_num, roce_ecn_db_num after the retries
    assert keys[keys.index("mac_rx_bad_oct_num") + 1] == "mac_rx_fcs_err_pkt_num"
    assert keys[keys.index("roce_new_pkt_rty_num") + 1] == "roce_ecn_db_num"
    assert len(keys) == len(ports_mod.STAT_KEYS) + 2


def test_crc_growing_counts_fcs_errors_from_the_clock(sim):
    _at(sim, CLOCK)
    sim.data["settings"]["hccn_ext_stat"] = True
    sim.save()
    _fault(sim, "set", "crc-growing", "--device", "1", "--value", "120")
    parsers, _links = _parsers()
    for minutes, errors in ((0, 0), (1, 120), (2.5, 300)):
        _at(sim, CLOCK + minutes * 60)
        with open(sim.path, "rb") as handle:
            before = handle.read()
        counters = parsers.parse_stat_get(_stat(sim, 1))
        assert counters["unparsed"] == []
        assert counters["mac_rx_fcs_err_pkt_num"] == errors
        assert counters["mac_rx_bad_pkt_num"] == errors
        assert counters["mac_rx_bad_oct_num"] == errors * 1024
        assert parsers.parse_stat_get(_stat(sim, 2))["mac_rx_fcs_err_pkt_num"] == 0
        with open(sim.path, "rb") as handle:
            assert handle.read() == before, "a GET wrote the state"
    # the standard build does not print the FCS counter; the bad frames still show the errors
    sim.reload()
    sim.data["settings"]["hccn_ext_stat"] = False
    sim.save()
    counters = parsers.parse_stat_get(_stat(sim, 1))
    assert "mac_rx_fcs_err_pkt_num" not in counters and counters["mac_rx_bad_pkt_num"] == 300
    _fault(sim, "clear", "crc-growing")
    assert parsers.parse_stat_get(_stat(sim, 1))["mac_rx_bad_pkt_num"] == 0


def _links_of(sim, parsers, links, when):
    devices = {}
    for dev in range(8):
        devices[str(dev)] = {"stat": parsers.parse_stat_get(_stat(sim, dev)),
                             "link_stat": parsers.parse_link_stat_get(sim.run("hccn_tool", "-i", str(dev), "-link_stat", "-g")[1]),
                             "optical": parsers.parse_optical_get(sim.run("hccn_tool", "-i", str(dev), "-optical", "-g")[1])}
    return links.node_links({"devices": devices}, None, when)


def test_crc_growing_between_two_runs_is_a_finding_of_the_port(sim):
    parsers, links = _parsers()
    _at(sim, CLOCK)
    sim.data["settings"]["hccn_ext_stat"] = True
    sim.save()
    first = _links_of(sim, parsers, links, "2026-01-01T01:00:00Z")
    assert first["devices"]["1"]["counters"]["mac_rx_fcs_err_pkt_num"] == 0
    assert first["devices"]["1"]["not_printed"] == []
    _fault(sim, "set", "crc-growing", "--device", "1")   # default 600 per minute
    _at(sim, CLOCK + 30)
    second = _links_of(sim, parsers, links, "2026-01-01T01:00:30Z")
    found, summary = links.compare("node02", second, {"run": "A", "data": {"links": first}}, "B")
    assert [(f["device"], f["check"], f["severity"]) for f in found] == [(1, "fcs_errors_growing", "warn")]
    assert "mac_rx_fcs_err_pkt_num 0 -> 300" in found[0]["msg"] and "mac_rx_bad_pkt_num 0 -> 300" in found[0]["msg"]
    assert "run A" in found[0]["msg"] and "run B" in found[0]["msg"]
    assert summary["reset"] == [] and links.optical_findings("node02", second) == []


def _optical(sim, dev):
    rc, out, err = sim.run("hccn_tool", "-i", str(dev), "-optical", "-g")
    assert (rc, err) == (0, "")
    lines = out.splitlines()
    assert lines[0] == "optical info:"
    rows = dict(OPTICAL_RE.match(line).groups() for line in lines[1:])
    return out, dict((key.rstrip(), value) for key, value in rows.items())


@pytest.mark.parametrize("value, check, severity", [(None, "optical_rx_power_low", "warn"),
                                                    ("0.1", "optical_rx_power", "fail")])
def test_optical_low_lowers_every_rx_lane(sim, value, check, severity):
    parsers, links = _parsers()
    _fault(sim, "set", "optical-low", "--device", "4", *(("--value", value) if value else ()))
    out, rows = _optical(sim, 4)
    power = "%.4f mW" % float(value or 0.16)
    assert [rows["Rx Power%d" % lane] for lane in range(4)] == [power] * 4
    assert rows["RxPower Low Thres"] == "0.1445 mW" and rows["present"] == "present"
    assert _optical(sim, 3)[1]["Rx Power0"] == "1.0189 mW"
    parsed = parsers.parse_optical_get(out)
    assert parsed["unparsed"] == [] and parsed["rx_power2_mw"] == float(value or 0.16)
    data = links.node_links({"devices": {"3": {"optical": parsers.parse_optical_get(_optical(sim, 3)[0])},
                                         "4": {"optical": parsed}}}, None, "2026-01-01T00:00:00Z")
    found = links.optical_findings("node01", data, 1.0)
    assert [(f["device"], f["check"], f["severity"]) for f in found] == [(4, check, severity)]
    assert "RxPower Low Thres 0.1445 mW" in found[0]["msg"]


@pytest.mark.parametrize("args", [("crc-growing", "--value", "-1"), ("crc-growing", "--value", "many"),
                                  ("optical-low", "--value", "-0.5"), ("optical-low", "--value", "dim")])
def test_values_are_checked(sim, args):
    assert sim.sub("npu-sim", "fault", "set", *args)[0] == 2
