"""The drift audit (playbooks/audit.yml) on the simulated PoD: after stages 4-6, a simulated reboot of node02 (its ports
back at the driver defaults, only what hccn.conf holds restored; the governor back at ondemand) makes the audit fail
naming node02, every NPU, the setting, expected and found, and the playbook that brings it back; roce_lossless.yml
brings the ports back and ``site.yml --tags numa_bind`` the governor, after which the audit passes. The audit changes
nothing: the node state is the same before and after it.
"""

import json
import os
import re

SIM = "/usr/local/sbin/npu-sim"
# the simulated nodes' node-local paths (as inventories/sim/group_vars/ascend_pod/main.yml)
NODE_LOCAL = {
    "numa_bind_map_path": "/var/lib/npuops/numa-bind.json",
    "numa_bind_launcher_path": "/var/lib/npuops/bin/npu-bind",
    "numa_bind_launch_path": "/var/lib/npuops/launch.json",
    "numa_bind_launch_script_path": "/var/lib/npuops/bin/npu-launch",
    "audit_hccn_conf": "/var/lib/npu-sim/hccn.conf",
}


def _audit(pod, audit_id):
    rc, out = pod.playbook("audit.yml", dict(NODE_LOCAL, audit_id=audit_id))
    with open(os.path.join(pod.reports, "audit", audit_id, "audit.json"), encoding="utf-8") as handle:
        return rc, out, json.load(handle)


def _state(pod, node):
    return json.loads(pod.node(node, SIM, "state", "show"))


def test_a_reboot_that_loses_the_port_settings_is_found_and_roce_lossless_brings_them_back(pod):
    rc, out = pod.playbook("site.yml", dict(NODE_LOCAL, npuops_run_id="audit-tuned"),
                           ["--tags", "stage4,stage5,stage6"])
    assert rc == 0, out[-4000:]

    before = _state(pod, "node01")
    rc, out, clean = _audit(pod, "a-clean")
    assert rc == 0, out[-4000:]
    assert clean["status"] == "clean" and clean["findings"] == [], clean["findings"]
    assert clean["compared"]["node02"]["4"] == "run audit-tuned"
    # what the driver keeps across a reboot is stated, from the real key names of hccn.conf
    with open(os.path.join(pod.reports, "audit", "a-clean", "audit.md"), encoding="utf-8") as handle:
        report = handle.read()
    assert ("node02: /var/lib/npu-sim/hccn.conf holds address, netmask, netdetect, gateway of NPU 0-7, which the "
            "driver restores at boot; mtu, pfc_priorities, dscp_to_tc have no key there") in report, report
    after = _state(pod, "node01")
    assert after["npus"] == before["npus"]  # the audit changed nothing

    pod.node("node02", SIM, "reboot")
    rc, out, drift = _audit(pod, "a-reboot")
    assert rc != 0
    assert drift["drifted"] == ["node02"]
    pfc = sorted(f["device"] for f in drift["findings"] if f["check"] == "pfc_priorities")
    assert pfc == list(range(8)), drift["findings"]
    assert {(f["host"], tuple(f["value"]), tuple(f["expected"])) for f in drift["findings"]
            if f["check"] == "pfc_priorities"} == {("node02", (), (4,))}
    assert {f["check"] for f in drift["findings"]} == {"mtu", "pfc_priorities", "dscp_to_tc", "governor"}
    text = re.sub(r"\s+", " ", out)
    assert ("node02 NPU 0-7: pfc_priorities is [], expected [4] (run audit-tuned set [4]); playbooks/roce_lossless.yml"
            in text), out[-4000:]
    assert "node02: the CPU governor is ondemand on CPUs" in text and "playbooks/site.yml --tags numa_bind" in text

    rc, out = pod.playbook("roce_lossless.yml", dict(NODE_LOCAL, npuops_run_id="audit-window"))
    assert rc == 0, out[-4000:]
    rc, out, ports_back = _audit(pod, "a-window")
    assert rc != 0
    assert [(f["host"], f["check"]) for f in ports_back["findings"]] == [("node02", "governor")], ports_back["findings"]

    rc, out = pod.playbook("site.yml", dict(NODE_LOCAL, npuops_run_id="audit-governor"), ["--tags", "numa_bind"])
    assert rc == 0, out[-4000:]
    rc, out, back = _audit(pod, "a-back")
    assert rc == 0, out[-4000:]
    assert back["status"] == "clean" and back["compared"]["node02"]["4"] == "run audit-window"
