"""Link quality over time on the simulated PoD: stage 0 keeps every port's counters in the node's record, and the next
run of stage 0 names a CRC counter that grew in between (a crc-growing fault on node02 NPU 1), with both run ids.

Two short runs of ``site.yml --tags stage0`` on the session's 2-node PoD (conftest.py). node02's hccn_tool prints the
extended counters (settings.hccn_ext_stat, as a build with HCCN_TOOL_SHOW_EXT_STAT) so that mac_rx_fcs_err_pkt_num is
there to compare; the fault and the setting are removed afterwards.
"""

import json
import os
import time

SIM = "/usr/local/sbin/npu-sim"
HCCN_TOOL = "/usr/local/Ascend/driver/tools/hccn_tool"
FCS = "mac_rx_fcs_err_pkt_num"


def _fcs(pod, node, dev):
    out = pod.node(node, HCCN_TOOL, "-i", str(dev), "-stat", "-g")
    values = dict(line.split(":", 1) for line in out.splitlines()[1:] if ":" in line)
    return int(values[FCS])


def _record(pod, run, node):
    with open(os.path.join(pod.reports, run, "nodes", node, "stage0.json"), encoding="utf-8") as handle:
        return json.load(handle)


def test_a_crc_counter_that_grows_between_two_runs_is_a_finding(pod):
    first, second = "links-a", "links-b"
    pod.node("node02", SIM, "state", "set", "settings.hccn_ext_stat", "true")
    try:
        rc, out = pod.playbook("site.yml", {"npuops_run_id": first}, ["--tags", "stage0"])
        assert rc == 0, out[-4000:]
        before = _record(pod, first, "node02")["data"]["links"]["devices"]["1"]["counters"][FCS]
        pod.node("node02", SIM, "fault", "set", "crc-growing", "--device", "1", "--value", "6000")
        deadline = time.time() + 60
        while _fcs(pod, "node02", 1) <= before:
            assert time.time() < deadline, "the FCS counter of node02 NPU 1 did not grow"
            time.sleep(0.2)
        rc, out = pod.playbook("site.yml", {"npuops_run_id": second}, ["--tags", "stage0"])
        assert rc == 0, out[-4000:]   # a warning by default (health_check_counter_growth: warn)
    finally:
        pod.node("node02", SIM, "fault", "clear", "crc-growing")
        pod.node("node02", SIM, "state", "set", "settings.hccn_ext_stat", "false")
    record = _record(pod, second, "node02")
    grown = [f for f in record["findings"] if f["check"] == "fcs_errors_growing"]
    assert [(f["host"], f["device"], f["severity"]) for f in grown] == [("node02", 1, "warn")], record["findings"]
    msg = grown[0]["msg"]
    assert msg.startswith("node02 NPU 1: frames received with FCS/CRC errors grew between run %s (" % first), msg
    assert "and run %s: %s %d -> " % (second, FCS, before) in msg, msg
    assert record["data"]["links"]["compared"]["run"] == first
    # the other node, and node02's other ports, did not grow
    assert not [f for f in _record(pod, second, "node01")["findings"] if f["check"].endswith("_growing")]
