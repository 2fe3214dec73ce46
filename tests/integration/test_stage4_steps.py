"""The two ways stage 4 changes a node (roce_lossless_steps): one pass per node (default) and the method's steps.

Each case changes the 2-node PoD for real through the change window, checks the restore point it leaves and what the
ports hold, then rolls the PoD back with playbooks/rollback.yml, so the PoD is untuned again for the other tests.
"""

import glob
import json
import os
import re

HCCN_TOOL = "/usr/local/Ascend/driver/tools/hccn_tool"


def _newest_backup(pod, node):
    names = sorted(glob.glob(os.path.join(pod.node_dir(node), "npuops", "backup", "hccn-%s-*.json" % node)),
                   key=os.path.getmtime)
    assert names, "no restore point on %s" % node
    with open(names[-1], encoding="utf-8") as handle:
        return names[-1], json.load(handle)


def _mtus(pod, node):
    out = pod.node(node, "sh", "-c", 'for i in 0 1 2 3 4 5 6 7; do "$0" -i $i -mtu -g; done', HCCN_TOOL)
    return re.findall(r"mtu:(\d+)", out)


def _node_report(pod, node):
    runs = sorted(glob.glob(os.path.join(pod.reports, "*", "stage4-roce_lossless", node + ".json")), key=os.path.getmtime)
    with open(runs[-1], encoding="utf-8") as handle:
        return json.load(handle)


def _roll_back(pod):
    rc, out = pod.playbook("rollback.yml")
    assert rc == 0, out[-3000:]
    for node in ("node01", "node02"):
        assert "%s: restored NPU 0, 1, 2, 3, 4, 5, 6, 7" % node in out, out[-3000:]
        assert _mtus(pod, node) == ["1500"] * 8


def test_one_pass_change_sets_every_port_once_and_its_backup_is_the_restore_point(pod):
    assert _mtus(pod, "node01") == ["1500"] * 8
    rc, out = pod.playbook("roce_lossless.yml", {"roce_lossless_batch": "100%"})
    assert rc == 0, out[-3000:]
    assert "Change ticket (roce_lossless): 2 node(s) of 2 change, 16 port(s), 16 link flap(s) in all (the settings of a " \
           "port are set in one pass" in out
    assert "Set the MTU, PFC and DSCP map of every NPU port in one pass (one link flap per port)" in out
    # the stepwise tasks are not even included, no separate restore point was taken, and the set took the first read
    # of the pause counters itself (no separate module run for it)
    assert "Set the jumbo MTU on every NPU port" not in out
    assert "Take a restore point of every NPU port of this node" not in out
    assert "Read the PFC pause counters (first read)" not in out
    for node in ("node01", "node02"):
        assert _mtus(pod, node) == ["9000"] * 8
        path, backup = _newest_backup(pod, node)
        # the values the one pass changed, as they were before it: enough to put the ports back
        assert backup["host"] == node
        assert [d["device"] for d in backup["devices"]] == list(range(8))
        assert {d["mtu"] for d in backup["devices"]} == {1500}
        assert {tuple(d["pfc_priorities"]) for d in backup["devices"]} == {()}
        assert "tls" not in backup["devices"][0] and "gateway" not in backup["devices"][0]
        report = _node_report(pod, node)
        assert report["steps"] == "together"
        assert report["backup_file"] == "/var/lib/npuops/backup/" + os.path.basename(path)
        assert report["changed_devices"] == {"address": [], "mtu": list(range(8)), "pfc": list(range(8)),
                                             "dscp_to_tc": list(range(8))}
        assert [f for f in report["findings"] if f["severity"] == "fail"] == []
    # a second run changes nothing and writes no restore point
    before = pod.snapshot()
    rc, out = pod.playbook("roce_lossless.yml", {"roce_lossless_batch": "100%"})
    assert rc == 0, out[-3000:]
    assert "0 node(s) of 2 change, 0 port(s), 0 link flap(s)" in out
    assert not re.search(r"node0[12]\s+: .*changed=[1-9]", out), out[-1500:]
    assert [pod.snapshot()[n]["backups"] for n in ("node01", "node02")] == [before[n]["backups"] for n in ("node01", "node02")]
    _roll_back(pod)


def test_stepwise_change_follows_the_method_after_a_full_restore_point(pod):
    rc, out = pod.playbook("roce_lossless.yml", {"roce_lossless_batch": "100%", "roce_lossless_steps": "stepwise"})
    assert rc == 0, out[-3000:]
    assert "Change ticket (roce_lossless): 2 node(s) of 2 change, 16 port(s), 32 link flap(s) in all (each MTU or PFC " \
           "set takes" in out
    order = [out.index("TASK [npuops.ascend.roce_lossless : %s]" % name) for name in (
        "Take a restore point of every NPU port of this node", "Set the jumbo MTU on every NPU port",
        "Ping the same NPU of the ring neighbours at the largest size the MTU allows",
        "Enable PFC on the lossless priority only", "Map the lossless DSCP to the lossless traffic class")]
    assert order == sorted(order)
    assert not re.search(r"in one pass \(one link flap per port\)\] \*+\n(ok|changed):", out)
    for node in ("node01", "node02"):
        assert _mtus(pod, node) == ["9000"] * 8
        _path, backup = _newest_backup(pod, node)
        # every attribute of every port, taken before the first set
        assert {d["mtu"] for d in backup["devices"]} == {1500}
        assert "tls" in backup["devices"][0] and "address" in backup["devices"][0]
        report = _node_report(pod, node)
        assert report["steps"] == "stepwise"
        assert report["changed_devices"]["mtu"] == list(range(8))
        assert report["changed_devices"]["pfc"] == list(range(8))
    _roll_back(pod)


def test_one_pass_change_sets_the_planned_address_with_roce_lossless_addresses_apply(pod):
    sim = "/usr/local/sbin/npu-sim"
    # NPU 3 of node02 holds an address that is not the plan's (10.20.3.12)
    pod.node("node02", sim, "state", "set", "npus.3.net.ip", "10.20.3.99")
    try:
        rc, out = pod.playbook("roce_lossless.yml", {"roce_lossless_batch": "100%"}, ["--check"])
        assert rc == 2, out[-3000:]
        assert "the port has 10.20.3.99/255.255.255.0, the plan (npuops_npu_ports / npuops_npu_ip_plan) says 10.20.3.12/255.255.255.0" in out
        rc, out = pod.playbook("roce_lossless.yml", {"roce_lossless_batch": "100%", "roce_lossless_addresses": "apply"})
        assert rc == 0, out[-3000:]
        assert "NPU 3: address 10.20.3.99 -> 10.20.3.12; DSCP 33 -> TC 3 (was 2); mtu 1500 -> 9000; pfc_priorities [] -> [4]; " \
               "1 link flap" in out
        assert "ipaddr:10.20.3.12" in pod.node("node02", HCCN_TOOL, "-i", "3", "-ip", "-g").replace(" ", "")
        _path, backup = _newest_backup(pod, "node02")
        assert [(d["device"], d["address"]) for d in backup["devices"] if d["device"] == 3] == [(3, "10.20.3.99")]
        report = _node_report(pod, "node02")
        assert report["changed_devices"]["address"] == [3]
        assert report["changed_devices"]["mtu"] == list(range(8))
        _roll_back(pod)
        assert "ipaddr:10.20.3.99" in pod.node("node02", HCCN_TOOL, "-i", "3", "-ip", "-g").replace(" ", "")
    finally:
        pod.node("node02", sim, "state", "set", "npus.3.net.ip", "10.20.3.12")
