"""site.yml through ansible-runner, the engine AWX and Automation Controller run playbooks with.

The private_data_dir is laid out the way AWX lays it out for a job (docs/awx.md):

- ``project/``: the project checkout with the playbook;
- ``inventory/hosts``: an executable script that prints the inventory as JSON, made from the PoD's
  inventory with ``ansible-inventory --list --export`` (what AWX's inventory import stores), group
  variables on the group ``ascend_pod``;
- ``env/ssh_key``: the private key of the machine credential (ansible-runner hands it to an ssh-agent;
  the hosts carry no key path);
- ``env/extravars``, ``env/envvars``, ``env/cmdline``, ``env/settings``: the job's extra variables, the
  environment (the collections root of this checkout, as in the execution environment's image),
  the job's tags and forks, and its timeout.

``ansible-runner run <dir> -p site.yml`` runs stages 0 and 2 on the 2-node PoD of conftest.py; the
job events must carry the gate results of both stages on both nodes.
"""

import glob
import json
import os
import stat
import subprocess
import sys
import time

import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)
IDENT = "7"  # AWX names the artifacts of a job by its id
NODES = ["node01", "node02"]


def _collections_root():
    return os.environ.get("ANSIBLE_COLLECTIONS_PATH") or subprocess.run(
        [os.path.join(REPO, "tools", "dev", "collections_root.sh"), REPO], capture_output=True, text=True, check=True).stdout.strip()


def _write(path, text, mode=0o600):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.chmod(path, mode)


def _private_data_dir(pod, top):
    """Lay out <top>/job as AWX does for a job of site.yml; (the directory, the reports directory of the job)."""
    pdd = os.path.join(top, "job")
    reports = os.path.join(top, "reports")
    os.makedirs(reports)
    with open(os.path.join(REPO, "playbooks", "site.yml"), encoding="utf-8") as handle:
        _write(os.path.join(pdd, "project", "site.yml"), handle.read(), 0o644)

    proc = subprocess.run([os.path.join(BIN, "ansible-inventory"), "-i", pod.inventory_dir, "--list", "--export"],
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    inventory = json.loads(proc.stdout)
    hostvars = inventory["_meta"]["hostvars"]
    assert sorted(inventory["ascend_pod"]["hosts"]) == NODES
    assert "npuops_parameter_plane" in inventory["ascend_pod"]["vars"]
    keys = {hostvars[node].pop("ansible_ssh_private_key_file") for node in NODES}
    assert len(keys) == 1
    with open(keys.pop(), encoding="utf-8") as handle:
        _write(os.path.join(pdd, "env", "ssh_key"), handle.read())
    # the script AWX writes: the inventory as one JSON document printed by python3
    _write(os.path.join(pdd, "inventory", "hosts"),
           "#! /usr/bin/env python3\n# -*- coding: utf-8 -*-\nprint(%r)\n" % json.dumps(inventory), stat.S_IRUSR | stat.S_IWUSR | stat.S_IXUSR)

    _write(os.path.join(pdd, "env", "extravars"), yaml.safe_dump({"npuops_report_dir": reports}))
    _write(os.path.join(pdd, "env", "envvars"), yaml.safe_dump({
        "ANSIBLE_COLLECTIONS_PATH": _collections_root(),
        "ANSIBLE_HOST_KEY_CHECKING": "False",
        "ANSIBLE_NOCOLOR": "1",
    }))
    _write(os.path.join(pdd, "env", "cmdline"), "--tags stage0,stage2 --forks 8")
    _write(os.path.join(pdd, "env", "settings"), yaml.safe_dump({"job_timeout": 300}))
    return pdd, reports


def _events(artifacts):
    events = []
    for path in glob.glob(os.path.join(artifacts, "job_events", "*.json")):
        with open(path, encoding="utf-8") as handle:
            events.append(json.load(handle))
    return sorted(events, key=lambda event: event["counter"])


def test_site_stages_0_and_2_through_ansible_runner_with_an_awx_private_data_dir(pod, tmp_path):
    pdd, reports = _private_data_dir(pod, str(tmp_path))
    env = dict(os.environ, PATH=BIN + os.pathsep + os.environ.get("PATH", ""))
    started = time.monotonic()
    proc = subprocess.run([os.path.join(BIN, "ansible-runner"), "run", pdd, "-p", "site.yml", "--ident", IDENT],
                          capture_output=True, text=True, env=env, cwd=str(tmp_path), timeout=400, check=False)
    elapsed = time.monotonic() - started
    artifacts = os.path.join(pdd, "artifacts", IDENT)
    with open(os.path.join(artifacts, "stdout"), encoding="utf-8") as handle:
        stdout = handle.read()
    assert proc.returncode == 0, "rc %d after %.0f s\n%s\n%s" % (proc.returncode, elapsed, stdout[-4000:], proc.stderr[-2000:])
    with open(os.path.join(artifacts, "status"), encoding="utf-8") as handle:
        assert handle.read().strip() == "successful"
    with open(os.path.join(artifacts, "rc"), encoding="utf-8") as handle:
        assert handle.read().strip() == "0"
    assert "PLAY RECAP" in stdout

    # the machine credential went through ssh-agent, the job's tags and forks reached ansible-playbook
    with open(os.path.join(artifacts, "command"), encoding="utf-8") as handle:
        command = json.load(handle)["command"]
    assert command[0] == "ssh-agent"
    assert "--tags stage0,stage2 --forks 8" in command[-1]

    events = _events(artifacts)
    assert [e for e in events if e["event"] == "playbook_on_start"][0]["event_data"]["playbook"] == "site.yml"
    assert not [e for e in events if e["event"] in ("runner_on_failed", "runner_on_unreachable") and not e["event_data"].get("ignore_errors")]

    # every node's record of each stage (the record step of npuops.ascend.stage_gate; the own actions of stages 0 and 2)
    results = {node: {} for node in NODES}
    for event in events:
        data = event.get("event_data", {})
        actions = ("npuops.ascend.stage_gate", "npuops.ascend.stage_health", "npuops.ascend.stage_versions")
        if event["event"] == "runner_on_ok" and data.get("task_action") in actions and "record" in data["res"]:
            record = data["res"]["record"]
            results[data["host"]]["stage%d" % record["stage"]] = record
    for node in NODES:
        assert {stage: result["status"] for stage, result in results[node].items()} == {"stage0": "passed", "stage2": "passed"}, results
        assert results[node]["stage0"]["role"] == "health_check" and results[node]["stage2"]["role"] == "version_check"

    # the gate of each stage across the PoD (the verdict step, over the records)
    gate_messages = [e["event_data"]["res"].get("msg") for e in events
                     if e["event"] == "runner_on_ok" and e["event_data"].get("task_action") == "npuops.ascend.stage_gate"]
    assert "Stage 0 (health_check) gate passed on 2 node(s)." in gate_messages
    assert "Stage 2 (version_check) gate passed on 2 node(s)." in gate_messages

    stats = [e for e in events if e["event"] == "playbook_on_stats"][-1]["event_data"]
    assert set(NODES) <= set(stats["ok"])
    assert not stats["failures"] and not stats["dark"]

    # the job's extra variables: the reports went to the directory they name
    summaries = glob.glob(os.path.join(reports, "*", "summary.json"))
    assert len(summaries) == 1, summaries
    # and the records the verdicts read are the run's store
    run_dir = os.path.dirname(summaries[0])
    for node in NODES:
        for stage in (0, 2):
            with open(os.path.join(run_dir, "nodes", node, "stage%d.json" % stage), encoding="utf-8") as handle:
                stored = json.load(handle)
            assert stored == results[node]["stage%d" % stage]
    print("ansible-runner: site.yml --tags stage0,stage2 on %d nodes in %.1f s" % (len(NODES), elapsed))
