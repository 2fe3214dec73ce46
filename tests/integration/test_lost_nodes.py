"""site.yml with a node that cannot be reached (npuops_max_lost_nodes).

The session's 2-node PoD plus node03, an inventory host whose SSH port refuses (port 9 of a loopback address). With the
default (0) the stage 0 gate stops the run naming it, as before; with npuops_max_lost_nodes=1 stages 0-3
run on node01 and node02, node03 is named once (a warning at the first gate, a line of the summary) and summary.json
lists it under ``lost``. Stages 0-3 change nothing on the nodes, so the PoD is left as the other tests expect it.
"""

import json
import os

import yaml

from conftest import NODES

STAGES = ["--tags", "stage0,stage1,stage2,stage3"]
LOST = "lost before the gate of stage 0 (health_check): unreachable; the run goes on without it"


def _with_unreachable_node(pod):
    """An inventory file beside the PoD's that adds node03, a copy of node02 on a port nothing listens on."""
    with open(pod.inventory, encoding="utf-8") as handle:
        inventory = yaml.safe_load(handle)
    hosts = inventory["all"]["children"]["ascend_pod"]["hosts"]
    node = json.loads(json.dumps(hosts[NODES[-1]]))
    node["ansible_port"] = 9
    node["npuops_hccl_if_ip"] = "127.0.0.3"
    for port in node.get("npuops_npu_ports") or []:
        port["address"] = ".".join(port["address"].split(".")[:3] + ["13"])
    path = os.path.join(pod.inventory_dir, "lost.yml")
    with open(path, "w", encoding="utf-8") as handle:
        yaml.safe_dump({"all": {"children": {"ascend_pod": {"hosts": {"node03": node}}}}}, handle)
    return path


def test_an_unreachable_node_stops_the_run_unless_npuops_max_lost_nodes_allows_it(pod):
    path = _with_unreachable_node(pod)
    try:
        rc, out = pod.playbook("site.yml", {"npuops_run_id": "lost-default"}, STAGES)
        assert rc == 4, out[-3000:]
        # stages 0-3 first connect in stage 0, whose gate then stops the run naming the node
        assert ("Stage 0 (health_check) gate failed on 1 node(s) (node03): node03: the node dropped out before the gate "
                "(unreachable, or a task failed on it)") in out, out[-3000:]
        assert "TASK [npuops.ascend.baseline" not in out

        rc, out = pod.playbook("site.yml", {"npuops_run_id": "lost-one", "npuops_max_lost_nodes": 1}, STAGES)
        assert rc == 4, out[-3000:]  # Ansible's code for a run with an unreachable host
        assert out.count(LOST) == 1, out[-3000:]
        for stage in ("Stage 0 (health_check)", "Stage 1 (baseline)", "Stage 2 (version_check)", "Stage 3 (hccl_bench)"):
            assert "gate failed" not in out.split(stage)[-1].split("\n")[0], stage
        with open(os.path.join(pod.reports, "lost-one", "summary.json"), encoding="utf-8") as handle:
            summary = json.load(handle)
        assert summary["lost"] == {"node03": {"stage": 0, "role": "health_check"}}
        for node in NODES:
            statuses = [summary["nodes"][node]["stage%d" % n]["status"] for n in range(4)]
            assert set(statuses) <= {"passed", "skipped"} and statuses[0] == statuses[2] == "passed", summary
        assert summary["nodes"]["node03"] == {}
        assert "node03       lost before the gate of stage0 health_check (unreachable); the run went on without it" in out

        rc, out = pod.playbook("site.yml", {"npuops_run_id": "lost-bad", "npuops_max_lost_nodes": "half"}, STAGES)
        assert rc == 2, out[-3000:]
        assert ("npuops_max_lost_nodes is \"half\": give a whole number from 0 (0, the default: a lost node stops the "
                "run) or a percentage of the nodes from 0% to 100%, such as 5%. Nothing was run on the nodes.") in out
    finally:
        os.unlink(path)
