"""The node-side checks added to stage 5 and stage 8, on the simulated PoD: a log-level fault (ASCEND_GLOBAL_LOG_LEVEL
in a login script of the node's /etc/profile.d) is a stage 5 warning naming the node, the file and the level; a
disk-busy fault (the data disk at 99 % util with long reads) is a stage 8 warning naming the node and the disk; the
other node has neither."""

import glob
import json
import os
import re

SITE = "site.yml"
STAGE5 = ["--tags", "stage5"]
ENV_FILE = "/etc/profile.d/npuops-hccl.sh"
STAGE8 = "../tests/integration/playbooks/stage8.yml"


def _newest(pod, stage_dir, node):
    found = sorted(glob.glob(os.path.join(pod.reports, "*", stage_dir, node + ".json")), key=os.path.getmtime)
    assert found, stage_dir
    with open(found[-1], encoding="utf-8") as handle:
        return json.load(handle)


def test_log_level_in_a_login_script_is_a_stage5_warning(pod):
    pod.node("node02", "npu-sim", "fault", "set", "log-level", "--value", "0")
    try:
        assert "ASCEND_GLOBAL_LOG_LEVEL=0" in pod.node("node02", "cat", "/etc/profile.d/npu-sim-ascend-log.sh")
        rc, out = pod.playbook(SITE, {"hccl_env_check_ports": False}, STAGE5)
        assert rc == 0, out[-3000:]
        found = [f for f in _newest(pod, "stage5-hccl_env", "node02")["findings"] if f["check"] == "ASCEND_GLOBAL_LOG_LEVEL"]
        assert [(f["value"], f["expected"], f["severity"]) for f in found] == [(0, 3, "warn")]
        assert found[0]["msg"].startswith("node02: ASCEND_GLOBAL_LOG_LEVEL=0 (DEBUG) in "
                                          "/etc/profile.d/npu-sim-ascend-log.sh: below 3 (ERROR)")
        assert [f for f in _newest(pod, "stage5-hccl_env", "node01")["findings"]
                if f["check"] == "ASCEND_GLOBAL_LOG_LEVEL"] == []
    finally:
        pod.node("node02", "npu-sim", "fault", "clear", "log-level")
        for node in ("node01", "node02"):
            pod.node(node, "sh", "-c", "rm -f %s %s.*~" % (ENV_FILE, ENV_FILE))
    assert "npu-sim-ascend-log.sh" not in pod.node("node02", "ls", "/etc/profile.d")


def test_a_saturated_disk_is_a_stage8_warning(pod):
    pod.node("node02", "npu-sim", "fault", "set", "disk-busy", "--value", "99")
    try:
        rc, out = pod.playbook(STAGE8, {"io_check_seconds": 2})
    finally:
        pod.node("node02", "npu-sim", "fault", "clear", "disk-busy")
    assert rc == 0, out[-3000:]       # warnings never stop the run
    data = _newest(pod, "stage8-io_check", "node02")
    disks = dict((disk["device"], disk) for disk in data["iostat"]["devices"])
    assert sorted(disks) == ["nvme0n1", "sda"] and disks["nvme0n1"]["util_mean_pct"] >= 98.5
    checks = [(f["check"], f["severity"]) for f in data["findings"]]
    assert ("disk_util", "warn") in checks and ("disk_await", "warn") in checks
    # the mean of the samples sits near the fault's 99 % (98.5 to 100): the message carries it as measured
    busy = [re.match(r"node02: disk nvme0n1 is ([0-9.]+) % busy", f["msg"]) for f in data["findings"]]
    assert any(m and 98.5 <= float(m.group(1)) <= 100.0 and "at or above the limit of 95 %" in f["msg"]
               for m, f in zip(busy, data["findings"])), data["findings"]
    assert [f for f in _newest(pod, "stage8-io_check", "node01")["findings"] if f["check"].startswith("disk_")] == []
