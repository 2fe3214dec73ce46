"""Stage 4 of site.yml in parts (npuops_run_part before, nodes, pod), as the AWX workflow runs it.

A 4-node PoD of its own, fresh (every NPU port away from the intent): tools/awx/run_in_parts.py plays stage 4 as the
part before (the lock of the ports held by the run id, the cross-node benchmark before the change), the node part in
2 slices at once (each changes and verifies its own nodes, the lock checked) and the PoD part (the benchmark after the
change, the slow nodes, the ECN marks read on every node, the report, the lock released, the gate). Clean, it changes
every node and passes; with a slow port, and with a switch port that marks no ECN, its summary is the one of stage 4 run
whole; a node part without the part before is refused before anything is read. The slow port (of one NPU of one node)
also drops the scaling ladder's rung that includes its node, and the ladder's finding names the node and the NPU.
"""

import json
import os
import re
import subprocess

import pytest

from conftest import REPO, own_pod

PREFIX = os.environ.get("NPUOPS_IT_PARTS4_PREFIX", "127.0.16")
FOUR = ["node%02d" % i for i in range(1, 5)]
SIM = "/usr/local/sbin/npu-sim"


@pytest.fixture(scope="module")
def four(tmp_path_factory):
    yield from own_pod(tmp_path_factory, "parts4", PREFIX, len(FOUR))


def _in_parts(pod, run_id, *extra):
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_HOST_KEY_CHECKING="False", ANSIBLE_FORKS="8")
    env.setdefault("ANSIBLE_COLLECTIONS_PATH", subprocess.run(
        [os.path.join(REPO, "tools", "dev", "collections_root.sh"), REPO], capture_output=True, text=True,
        check=True).stdout.strip())
    argv = [os.path.join(REPO, ".venv", "bin", "python"), os.path.join(REPO, "tools", "awx", "run_in_parts.py"),
            "-i", pod.inventory_dir, "--run-id", run_id, "--slices", "2", "--stages", "4",
            "--log-dir", os.path.join(pod.reports, run_id + "-logs")]
    if extra:
        argv += ["--"] + list(extra)
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=pod.reports, timeout=600, check=False)
    return proc.returncode, proc.stdout + proc.stderr


def _json(pod, *path):
    with open(os.path.join(pod.reports, *path), encoding="utf-8") as handle:
        return json.load(handle)


def _summary(pod, run_id):
    document = _json(pod, run_id, "summary.json")
    assert document.pop("run") == run_id
    return document


def _log(pod, run_id, name):
    with open(os.path.join(pod.reports, run_id + "-logs", name + ".log"), encoding="utf-8") as handle:
        return handle.read()


def _lock(pod):
    return os.path.join(pod.reports, ".npuops-window-ascend_pod.lock")


def test_stage_4_in_parts_changes_each_slice_and_passes(four):
    rc, out = _in_parts(four, "parts")
    assert rc == 0, out
    assert [line.split()[0] for line in out.splitlines() if line.startswith("stage")] == [
        "stage4-before", "stage4-nodes", "stage4-pod"]
    assert "stage4-nodes   Ascend PoD - node part     2 process(es) ok" in out, out
    assert not os.path.exists(_lock(four))  # the PoD part released the lock the part before took
    # the part before took the lock for the run, each node part found it held, the PoD part released it
    task = re.compile(r"TASK \[npuops\.ascend\.roce_lossless : %s[^\n]*\n(ok|changed): \[node0[12]\]")
    assert task.pattern % "Take the lock" and re.search(task.pattern % "Take the lock", _log(four, "parts", "stage4-before"))
    for index in (1, 2):
        assert re.search(task.pattern % "Take the lock", _log(four, "parts", "stage4-nodes-slice%d" % index))
    assert re.search(task.pattern % "Release the lock", _log(four, "parts", "stage4-pod"))
    # each slice changed its own nodes (AWX's rule: node01+node03, node02+node04), nothing else
    for index, mine in ((1, ["node01", "node03"]), (2, ["node02", "node04"])):
        recap = _log(four, "parts", "stage4-nodes-slice%d" % index).split("PLAY RECAP")[-1]
        assert sorted(line.split()[0] for line in recap.splitlines() if " : ok=" in line and "localhost" not in line) == mine
    for node in FOUR:
        data = _json(four, "parts", "nodes", node, "stage4.json")["data"]
        assert data["changed_devices"]["mtu"] == list(range(8)), (node, data)
        assert set(data["cnp"]["devices"]) == set(str(d) for d in range(8))  # kept for the PoD part's ECN check
    pod_record = _json(four, "parts", "pod", "stage4.json")
    before, after = pod_record["data"]["bench"]["before"], pod_record["data"]["bench"]["after"]
    assert before["peak_busbw_gb_s"] < after["peak_busbw_gb_s"] and not after["below_band"], pod_record["data"]["bench"]
    assert pod_record["findings"] == []
    # the scaling ladder: the AllReduce on node01, on node01 + node02 and the PoD's benchmark after the change
    rungs = pod_record["data"]["scaling"]["rungs"]
    assert [rung["nodes"] for rung in rungs] == [1, 2, 4] and rungs[2]["busbw_gb_s"] == after["peak_busbw_gb_s"]
    assert all(rung["efficiency_pct"] > 95 for rung in rungs), rungs
    report = open(os.path.join(four.reports, "parts", "stage4-roce_lossless", "roce_lossless.md"), encoding="utf-8").read()
    assert "| before | 4 | %s |" % before["peak_busbw_gb_s"] in report and "| after | 4 | %s |" % after["peak_busbw_gb_s"] in report
    assert all("| %s |" % node in report for node in FOUR)
    parts = _summary(four, "parts")
    assert sorted(parts["nodes"]) == FOUR
    assert {entry["stage4"]["status"] for entry in parts["nodes"].values()} == {"passed"}


def _counters_masked(summary):
    return json.loads(re.sub(r"(_num) \d+", r"\1 N", json.dumps(summary)))


def test_a_slow_port_is_named_by_the_pod_part_as_by_one_run_with_the_scaling_ladder(four):
    four.node("node03", SIM, "fault", "set", "slow-port", "--device", "3")
    try:
        rc, out = _in_parts(four, "parts-slow")
        assert rc != 0 and "stage4-pod     Ascend PoD - PoD part      1 process(es) failed" in out, out
        assert "gate failed on 1 node(s) (node03)" in _log(four, "parts-slow", "stage4-pod")
        assert not os.path.exists(_lock(four))  # released before the gate that failed
        rc, out = four.playbook("site.yml", {"npuops_run_id": "whole-slow"}, ["--tags", "stage4"])
        assert rc != 0 and "gate failed on 1 node(s) (node03)" in out, out[-3000:]
    finally:
        four.node("node03", SIM, "fault", "clear", "slow-port")
    parts, whole = _summary(four, "parts-slow"), _summary(four, "whole-slow")
    # the error counters of the slow port grow with time: the two runs differ in those numbers only
    assert _counters_masked(parts) == _counters_masked(whole)
    failures = parts["nodes"]["node03"]["stage4"]["failures"]
    assert any("node03 is in every slow pair" in text for text in failures), failures
    assert [node for node in FOUR if parts["nodes"][node]["stage4"]["status"] == "failed"] == ["node03"]
    # the scaling ladder after the change (1, 2 and 4 nodes): the rung with node03 drops, the finding names its NPU 3
    assert any(text.startswith("node03 NPU 3: the AllReduce over 4 nodes (node01, node02, node03, node04) reaches ")
               and "below 70 %" in text for text in failures), failures
    for run_id in ("parts-slow", "whole-slow"):
        rungs = _json(four, run_id, "pod", "stage4.json")["data"]["scaling"]["rungs"]
        assert [(rung["nodes"], rung["hosts"][-1]) for rung in rungs] == [(1, "node01"), (2, "node02"), (4, "node04")]
        assert rungs[1]["efficiency_pct"] > 95 > 70 > rungs[2]["efficiency_pct"], rungs


def test_a_port_without_ecn_marks_is_found_by_the_pod_part_on_its_node_as_by_one_run(four):
    four.node("node02", SIM, "fault", "set", "switch-no-ecn", "--device", "5")
    try:
        rc, out = _in_parts(four, "parts-ecn", "-e", "roce_lossless_switch_ecn_required=true")
        assert rc != 0 and "stage4-pod     Ascend PoD - PoD part      1 process(es) failed" in out, out
        # read on every node in one play of the PoD part (one task each), kept in each node's record
        log = _log(four, "parts-ecn", "stage4-pod")
        ecn = log.split("PLAY [PoD part of stage 4 in a run in parts - the ECN marks")[1].split("PLAY [")[0]
        assert sorted(re.findall(r"ok: \[(node0\d)\]", ecn)) == FOUR, ecn
        assert not os.path.exists(_lock(four))  # released by the last play of the PoD part, before its gate
        rc, out = four.playbook("site.yml", {"npuops_run_id": "whole-ecn", "roce_lossless_switch_ecn_required": True},
                                ["--tags", "stage4"])
        assert rc != 0, out[-3000:]
    finally:
        four.node("node02", SIM, "fault", "clear", "switch-no-ecn")
    parts, whole = _summary(four, "parts-ecn"), _summary(four, "whole-ecn")
    assert parts == whole
    assert [node for node in FOUR if parts["nodes"][node]["stage4"]["status"] == "failed"] == ["node02"]
    assert any(text.startswith("node02 NPU 5: no CNP was sent or received") for text in
               parts["nodes"]["node02"]["stage4"]["failures"]), parts["nodes"]["node02"]


def test_a_node_part_of_stage_4_needs_the_part_before(four):
    rc, out = four.playbook("site.yml", {"npuops_run_id": "no-before", "npuops_run_part": "nodes"}, ["--tags", "stage4"])
    assert rc != 0
    assert "no run holds the lock" in out and "-e npuops_run_part=before -e npuops_run_id=no-before --tags" in out, out[-3000:]
    # nothing was read on the nodes: no record, no check record of stage 4
    assert not os.path.exists(os.path.join(four.reports, "no-before", "nodes"))
