"""After stages 0, 2 and 4 on the A3 PoD (run twice): only stage 4 set anything, the lossless intent once on each
die's port; every die's port was read; the reports name the A3 family, its 8 NPUs of two dies and one row per die."""

import glob
import json
import os

from ansible_collections.npuops.ascend.plugins.module_utils._parsers import npu_smi

HCCN = "/usr/local/Ascend/driver/tools/hccn_tool"
DIES = list(range(16))
# stage 4 sets, per die, exactly these (the fresh simulated node has MTU 1500, no PFC, DSCP 33 on TC 2)
INTENT = [["-mtu", "-s", "size", "9000"], ["-pfc", "-s", "bitmap", "0,0,0,0,1,0,0,0"], ["-dscp_to_tc", "-s", "dscp", "33", "tc", "3"]]


def _calls(host):
    lines = host.check_output("/usr/local/sbin/npu-sim calls").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def _last_report(name):
    runs = sorted(glob.glob(os.path.join(os.environ["NPUOPS_REPORTS"], "2*")))
    assert runs, "no report directory under %s" % os.environ["NPUOPS_REPORTS"]
    return os.path.join(runs[-1], "stage0-health_check", name)


def test_the_node_prints_the_a3_layout(host):
    table = npu_smi.parse_info(host.check_output("npu-smi info"))
    assert table["unparsed"] == [] and not table.get("errors")
    assert sorted({row["npu"] for row in table["devices"]}) == list(range(8))
    assert sorted(row["phy_id"] for row in table["devices"]) == DIES
    assert {row["name"] for row in table["devices"]} == {"Ascend910"}


def test_only_stage_4_set_the_intent_once_on_every_die(host):
    sets = [call["argv"][1:] for call in _calls(host) if "-s" in call["argv"] or "set" in call["argv"]]
    assert sorted(sets) == sorted(["-i", str(device)] + command for device in DIES for command in INTENT)
    for device in DIES:
        assert host.check_output("%s -i %d -mtu -g" % (HCCN, device)).strip() == "mtu:9000"


def test_every_die_port_was_read(host):
    links = {call["argv"][call["argv"].index("-i") + 1] for call in _calls(host)
             if call["tool"] == "hccn_tool" and "-link" in call["argv"]}
    assert links == {str(device) for device in DIES}


def test_the_health_report_names_the_family_and_one_row_per_die(host):
    name = host.check_output("hostname")
    with open(_last_report(name + ".json"), encoding="utf-8") as handle:
        report = json.load(handle)
    product = report["npu"]["summary"]["product"]
    assert (product["family"], product["npus"], product["chips"], product["intra_node_link"]) == ("A3", 8, 16, "HCCS+SIO")
    assert sorted(int(dev) for dev in report["ports"]["devices"]) == DIES
    dies = report["npu"]["devices"]["3"]["dies"]
    assert [(die["chip"], die["phy_id"], die["device"]) for die in dies] == [(0, 6, 6), (1, 7, 7)]
    assert [f for f in report["findings"] if f["severity"] == "fail"] == []
    with open(_last_report(name + ".md"), encoding="utf-8") as handle:
        markdown = handle.read()
    rows = [line for line in markdown.splitlines() if line.startswith("| ") and " / chip " in line]
    assert len(rows) == 16, rows
    assert rows[7].startswith("| 3 / chip 1 | 7 | OK |"), rows[7]
    assert "| UP | 10.20.7." in rows[7]
