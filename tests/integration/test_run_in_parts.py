"""site.yml in parts (npuops_run_part), as the AWX workflow of docs/awx/site-workflow.yml runs it.

tools/awx/run_in_parts.py plays the workflow on the session's PoD: the node part of each stage in 2 slices at once, each
on an inventory pared down to its slice (AWX's rule), then the PoD part once. Stages 0-3, 8 and 9 (they change nothing
on the nodes, so the PoD stays as the other tests expect it). The run's summary.json must be the one of the same stages
in one run; a node part of stage 5 without the PoD part before it is refused.
"""

import json
import os
import subprocess

from conftest import NODES, REPO

STAGES = "0,1,2,3,8,9"


def _reports(pod):
    """The report directory of these runs: their own, so that the other tests' "latest run" stays theirs."""
    path = os.path.join(os.path.dirname(pod.reports), "parts-reports")
    os.makedirs(path, exist_ok=True)
    return path


def _run_in_parts(pod, run_id, stages, *extra):
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_HOST_KEY_CHECKING="False", ANSIBLE_FORKS="8")
    env.setdefault("ANSIBLE_COLLECTIONS_PATH", subprocess.run(
        [os.path.join(REPO, "tools", "dev", "collections_root.sh"), REPO], capture_output=True, text=True,
        check=True).stdout.strip())
    argv = [os.path.join(REPO, ".venv", "bin", "python"), os.path.join(REPO, "tools", "awx", "run_in_parts.py"),
            "-i", pod.inventory_dir, "--run-id", run_id, "--slices", "2", "--stages", stages,
            "--log-dir", os.path.join(_reports(pod), run_id + "-logs")] + list(extra)
    if "--" not in argv:
        argv.append("--")
    argv += ["-e", "npuops_report_dir=%s" % _reports(pod)]
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=pod.reports, timeout=900, check=False)
    return proc.returncode, proc.stdout + proc.stderr


def _summary(pod, run_id):
    with open(os.path.join(_reports(pod), run_id, "summary.json"), encoding="utf-8") as handle:
        document = json.load(handle)
    assert document.pop("run") == run_id
    return document


def test_a_run_in_parts_gives_the_summary_of_one_run(pod):
    tags = ",".join("stage%s" % n for n in STAGES.split(","))
    rc, out = pod.playbook("site.yml", {"npuops_run_id": "whole", "npuops_report_dir": _reports(pod), "io_check_seconds": 2},
                           ["--tags", tags])
    assert rc == 0, out[-3000:]

    rc, out = _run_in_parts(pod, "parts", STAGES, "--", "-e", "io_check_seconds=2")
    assert rc == 0, out
    lines = out.splitlines()
    assert [line.split()[0] for line in lines if line.startswith("stage")] == [
        "stage0-nodes", "stage0-pod", "stage1-nodes", "stage1-pod", "stage2-nodes", "stage2-pod", "stage3-nodes",
        "stage3-pod", "stage8-nodes", "stage8-pod", "stage9-pod"]
    assert all("2 process(es) ok" in line for line in lines if "-nodes " in line), out
    whole, parts = _summary(pod, "whole"), _summary(pod, "parts")
    assert sorted(parts["nodes"]) == NODES
    assert parts == whole
    assert {entry["status"] for node in NODES for entry in parts["nodes"][node].values()} <= {"passed", "skipped"}
    with open(os.path.join(_reports(pod), "parts", "pod", "plan.json"), encoding="utf-8") as handle:
        assert json.load(handle)["nodes"] == NODES
    # each slice saw one node: the node part's play held only its slice
    log = open(os.path.join(_reports(pod), "parts-logs", "stage0-nodes-slice1.log"), encoding="utf-8").read()
    assert "%s " % NODES[0] in log and "%s " % NODES[1] not in log.split("PLAY RECAP")[-1]


def test_a_node_part_of_stage_5_needs_the_pod_part_first(pod):
    rc, out = _run_in_parts(pod, "parts-no-plan", "5")
    assert rc != 0
    assert "Stage 5 in a node part (npuops_run_part=nodes) needs the number of nodes of" in out, out


def test_a_node_lost_in_a_slice_is_named_once_and_a_stale_record_is_refused(pod):
    from test_lost_nodes import _with_unreachable_node  # node03: an inventory host whose SSH port refuses

    path = _with_unreachable_node(pod)
    try:
        rc, out = pod.playbook("site.yml", {"npuops_run_id": "whole-lost", "npuops_max_lost_nodes": 1,
                                            "npuops_report_dir": _reports(pod)}, ["--tags", "stage0,stage2"])
        assert rc == 4, out[-3000:]
        rc, out = _run_in_parts(pod, "parts-lost", "0,2", "--", "-e", "npuops_max_lost_nodes=1")
        assert rc == 0, out
        # slice 1 (node01, node03) lost node03 (exit code 4); the PoD part went on and judged the store
        assert "stage0-nodes   Ascend PoD - node part     2 process(es) failed" in out and "rc 4" in out, out
        assert "stage2-nodes   Ascend PoD - node part     2 process(es) ok" in out, out
        whole, parts = _summary(pod, "whole-lost"), _summary(pod, "parts-lost")
        assert parts["lost"] == {"node03": {"stage": 0, "role": "health_check"}}
        assert parts == whole
        logs = os.path.join(_reports(pod), "parts-lost-logs")
        named = [name for name in sorted(os.listdir(logs))
                 if "lost before the gate of stage 0 (health_check)" in open(os.path.join(logs, name)).read()]
        assert named == ["stage0-nodes-slice1.log"]  # named once, by the part that lost it
        later = open(os.path.join(logs, "stage2-nodes-slice1.log"), encoding="utf-8").read()
        recap = [line.split() for line in later.split("PLAY RECAP")[-1].splitlines() if line.startswith("node03 ")]
        assert recap and "unreachable=0" in recap[0] and "failed=0" in recap[0], later[-2000:]  # never connected again
        assert "TASK [npuops.ascend.version_check" in later and "[node03]" not in later.split("Stage 2 - ")[-1]

        # a record of another run in the store: the PoD part's gate refuses it, naming the node
        record = os.path.join(_reports(pod), "parts-lost", "nodes", NODES[1], "stage2.json")
        with open(record, encoding="utf-8") as handle:
            stale = json.load(handle)
        stale["run"] = "older-run"
        with open(record, "w", encoding="utf-8") as handle:
            json.dump(stale, handle)
        rc, out = _run_in_parts(pod, "parts-lost", "2", "--start-at", "stage2-pod", "--", "-e",
                                "npuops_max_lost_nodes=1")
        assert rc == 2, out
        log = " ".join(open(os.path.join(_reports(pod), "parts-lost-logs", "stage2-pod.log"),
                            encoding="utf-8").read().split())
        assert "Stage 2 (version_check) gate failed" in log, log[-3000:]
        assert ("is of run older-run, not of this run parts-lost: a record of another run is never used" in log), log[-3000:]
    finally:
        os.remove(path)
