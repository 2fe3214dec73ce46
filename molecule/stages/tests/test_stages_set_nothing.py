"""The stages 0-3 only read the nodes: no simulated tool ever received a set command."""

import json

SET_OPTIONS = ("-s",)


def _calls(host):
    lines = host.check_output("/usr/local/sbin/npu-sim calls").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def test_the_stages_ran_the_tools(host):
    tools = {call["tool"] for call in _calls(host)}
    assert {"npu-smi", "hccn_tool", "numactl", "lscpu"} <= tools, tools


def test_no_set_command_reached_a_tool_except_the_fault_cases(host):
    name = host.check_output("hostname")
    # the side-effect cases set the MTU of node03 NPU 1 and the TLS switch of node01 NPU 6 on purpose
    allowed = {"node03": [["-i", "1", "-mtu", "-s", "size", "1500"]],
               "node01": [["-i", "6", "-tls", "-s", "enable", "0"], ["-i", "6", "-tls", "-s", "enable", "1"]]}.get(name, [])
    sets = [call["argv"][1:] for call in _calls(host) if call["tool"] == "hccn_tool" and "-s" in call["argv"]]
    assert [argv for argv in sets if argv not in allowed] == []
    assert not [call for call in _calls(host) if call["tool"] == "cpupower" and "frequency-set" in call["argv"]]


def test_every_npu_is_healthy_and_idle_again(host):
    faults = json.loads(host.check_output("/usr/local/sbin/npu-sim fault list"))
    assert faults == []
