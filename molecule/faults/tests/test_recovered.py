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


def _set_calls(host):
    calls = [json.loads(line) for line in host.check_output("/usr/local/sbin/npu-sim calls").splitlines() if line.strip()]
    return [call for call in calls if call["tool"] == "cpupower" and "frequency-set" in call["argv"]]


def test_no_stage_after_a_stopped_one_wrote_its_files(host):
    # every stage case stopped at or before its stage, and the cases whose stage 5 or 7 wrote before its gate put the
    # files back: no stage left a file of stage 5, 6 or 7 on any node
    assert not host.file("/etc/profile.d/npuops-hccl.sh").exists
    assert not host.file("/var/lib/npuops/numa-bind.json").exists
    assert not host.file("/var/lib/npuops/bin/npu-bind").exists
    conf = host.file("/usr/local/Ascend/mindie/latest/mindie-service/conf/config.json")
    assert conf.exists
    schedule = json.loads(conf.content_string)["BackendConfig"]["ScheduleConfig"]
    assert schedule["maxPrefillTokens"] != 1024  # the refused stage 7 setting
    assert not host.run("ls /usr/local/Ascend/mindie/latest/mindie-service/conf/ | grep -F 'config.json.'").stdout


def test_the_stage_6_case_set_no_governor(host):
    # the call log holds the last case only (stage 9); the governor would still be performance had stage 6 set it
    assert "performance" not in host.check_output("cpupower frequency-info -p")
    assert _set_calls(host) == []
