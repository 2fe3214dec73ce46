"""After the fault cases every node is healthy again and its ports are as they started."""

import json

from ansible_collections.npuops.ascend.plugins.module_utils._parsers import hccn_tool, npu_smi

HCCN_TOOL = "/usr/local/Ascend/driver/tools/hccn_tool"


def test_no_fault_left(host):
    faults = json.loads(host.check_output("/usr/local/sbin/npu-sim fault list"))
    assert faults == []


def test_every_npu_healthy_and_idle(host):
    table = npu_smi.PARSERS["info"](host.check_output("npu-smi info"))
    assert table["unparsed"] == []
    assert len(table["devices"]) == 8
    assert {d["health"] for d in table["devices"]} == {"OK"}
    assert table["processes"] == []


def test_ports_back_at_their_untuned_values(host):
    for device in range(8):
        mtu = hccn_tool.PARSERS["mtu"](host.check_output("%s -i %d -mtu -g" % (HCCN_TOOL, device)))
        pfc = hccn_tool.PARSERS["pfc"](host.check_output("%s -i %d -pfc -g" % (HCCN_TOOL, device)))
        link = hccn_tool.PARSERS["link"](host.check_output("%s -i %d -link -g" % (HCCN_TOOL, device)))
        assert (link["link"], mtu["mtu"], pfc["priorities"]) == ("UP", 1500, []), device
