"""The power-high, pcie-err and throttle faults: the npu-smi views they change, printed in the real formats
(tests/fixtures/captures/npu-smi_info_-t_power.txt, npu-smi_info_-t_common.txt, extra_npu-smi_info_-t_pcie-err.txt),
and the stage 0 findings each one produces when the views are parsed and judged."""

import json
import re

import pytest

# '\t' + key left-justified to 30 + ' : ' + value: the printf of every -t view (npu_info_print.c)
KV_RE = re.compile(r"^\t(.{30}) : (.*)$")


def _fault(sim, *args):
    rc, out, err = sim.sub("npu-sim", "fault", *args)
    assert rc == 0, err
    return out


def _view(sim, view, dev):
    rc, out, err = sim.run("npu-smi", "info", "-t", view, "-i", str(dev))
    assert rc == 0, err
    return out


def _kv(text):
    """{key: value} of a -t view; every line that is not blank is a real-format key line."""
    out = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        match = KV_RE.match(line)
        assert match, "not in the '\\t%%-30s : value' format: %r" % line
        out.setdefault(match.group(1).rstrip(), match.group(2))
    return out


def _health():
    from ansible_collections.npuops.ascend.plugins.module_utils._parsers import npu_smi as parsers
    from ansible_collections.npuops.ascend.plugins.plugin_utils import health
    return parsers, health


def _node_read(sim, parsers, views):
    """An npu_info-shaped result of the node from the simulator's own output, parsed by the collection's parsers."""
    rc, table, err = sim.run("npu-smi", "info")
    assert rc == 0, err
    parsed = parsers.parse_info(table)
    devices = {}
    for row in parsed["devices"]:
        entry = {"info": row}
        for view in views:
            entry[view.replace("-", "_")] = parsers.PARSERS[view.replace("-", "_")](_view(sim, view, row["npu"]))
        devices[str(row["npu"])] = entry
    return {"count": len(devices), "devices": devices, "summary": {}}


@pytest.mark.parametrize("args", [("power-high", "--value", "0"), ("power-high", "--value", "hot"),
                                  ("pcie-err", "--value", "0"), ("pcie-err", "--value", "-3"),
                                  ("throttle", "--value", "fast")])
def test_values_are_checked(sim, args):
    assert sim.sub("npu-sim", "fault", "set", *args)[0] == 2


def test_power_high_shows_in_the_table_and_the_views(sim):
    _fault(sim, "set", "power-high", "--device", "3", "--value", "412.5")
    assert _kv(_view(sim, "power", 3))["NPU Real-time Power(W)"] == "412.5"
    assert _kv(_view(sim, "common", 3))["NPU Real-time Power(W)"] == "412.5"
    assert _kv(_view(sim, "power", 2))["NPU Real-time Power(W)"] != "412.5"
    table = sim.run("npu-smi", "info")[1]
    row = [line for line in table.splitlines() if re.match(r"^\| 3 +910B3", line)][0]
    assert "| 412.5 " in row


def test_power_high_is_a_finding(sim):
    parsers, health = _health()
    _fault(sim, "set", "power-high", "--device", "5", "--value", "300")
    data = _node_read(sim, parsers, ["power"])
    found = [f for f in health.health_findings({"host": "node01", "npu": data}, {"npus_per_node": 8})
             if f["check"].startswith("power")]
    assert [(f["device"], f["check"], f["value"]) for f in found] == [(5, "power_vs_median", 300.0)]
    assert found[0]["msg"].startswith("node01 NPU 5: power 300.0 W is ")
    strict = health.health_findings({"host": "node01", "npu": data}, {"npus_per_node": 8, "max_power_w": 250})
    assert [(f["device"], f["value"]) for f in strict if f["check"] == "power"] == [(5, 300.0)]


def test_pcie_err_adds_to_rx_and_retry(sim):
    before = _kv(_view(sim, "pcie-err", 1))
    assert list(before) == ["NPU ID", "TX Error Count", "RX Error Count", "Lcrc Error Count", "Ecrc Error Count", "Retry Count"]
    _fault(sim, "set", "pcie-err", "--device", "1", "--value", "7")
    after = _kv(_view(sim, "pcie-err", 1))
    assert int(after["RX Error Count"]) == int(before["RX Error Count"]) + 7
    assert int(after["Retry Count"]) == int(before["Retry Count"]) + 7
    assert after["TX Error Count"] == before["TX Error Count"]
    assert _kv(_view(sim, "pcie-err", 0)) == dict(before, **{"NPU ID": "0"})


def test_pcie_err_is_a_finding(sim):
    parsers, health = _health()
    _fault(sim, "set", "pcie-err", "--device", "6", "--value", "4")
    data = _node_read(sim, parsers, ["pcie-err"])
    found = [f for f in health.health_findings({"host": "node01", "npu": data}, {"npus_per_node": 8})
             if f["check"].startswith("pcie")]
    assert [(f["device"], f["check"], f["value"], f["severity"]) for f in found] == [(6, "pcie_errors", 4, "warn")]
    assert "RX Error Count 4" in found[0]["msg"]


def test_throttle_drops_the_current_frequency_and_heats(sim):
    before = _kv(_view(sim, "common", 2))
    assert before["Aicore curFreq(MHZ)"] == before["Aicore Freq(MHZ)"]
    _fault(sim, "set", "throttle", "--device", "2", "--value", "800")
    after = _kv(_view(sim, "common", 2))
    assert after["Aicore Freq(MHZ)"] == before["Aicore Freq(MHZ)"]
    assert after["Aicore curFreq(MHZ)"] == "800"
    assert int(after["Temperature(C)"]) >= 75
    assert int(_kv(_view(sim, "temp", 2))["NPU Temperature (C)"]) == int(after["Temperature(C)"])


def test_throttle_is_a_finding(sim):
    parsers, health = _health()
    _fault(sim, "set", "throttle", "--device", "4")
    data = _node_read(sim, parsers, ["common"])
    found = [f for f in health.health_findings({"host": "node01", "npu": data}, {"npus_per_node": 8})
             if f["check"] in ("aicore_throttled", "temperature")]
    assert [(f["device"], f["check"]) for f in found] == [(4, "aicore_throttled")]
    assert "of its rated" in found[0]["msg"] and "C (throttle_temp_c 70 C)" in found[0]["msg"]


def test_faults_list_their_values(sim):
    _fault(sim, "set", "throttle", "--device", "0", "--value", "900")
    _fault(sim, "set", "pcie-err", "--device", "1")
    faults = json.loads(_fault(sim, "list"))
    assert [(f["kind"], f["device"], f["value"]) for f in faults] == [("throttle", 0, "900"), ("pcie-err", 1, None)]


def _at(sim, clock):
    sim.reload()
    sim.data["settings"]["clock"] = clock
    sim.save()


def test_pcie_err_growing_grows_with_the_clock_and_is_a_failure(sim):
    parsers, health = _health()
    _at(sim, 1000.0)
    _fault(sim, "set", "pcie-err-growing", "--device", "3", "--value", "120")
    _at(sim, 1000.0)
    first = _node_read(sim, parsers, ["pcie-err"])
    _at(sim, 1030.0)
    again = _node_read(sim, parsers, ["pcie-err"])
    rx = [data["devices"]["3"]["pcie_err"]["chips"][0]["rx_error_count"] for data in (first, again)]
    assert rx[1] - rx[0] == 60  # 120 per minute for 30 s
    assert again["devices"]["2"]["pcie_err"] == first["devices"]["2"]["pcie_err"]
    found = [f for f in health.health_findings({"host": "node01", "npu": first, "npu_again": again}, {"npus_per_node": 8})
             if f["check"] == "pcie_errors_growing"]
    assert [(f["device"], f["value"], f["severity"]) for f in found] == [(3, 120, "fail")]
    assert "RX Error Count %d -> %d" % tuple(rx) in found[0]["msg"]
