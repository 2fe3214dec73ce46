"""The collection's own calls of the internal gate role.

The stage roles and playbooks import npuops.ascend.gate statically with ``rolespec_validate: false``: validated at
run time, every call would cost one task per node (and an include another). These tests make the same check once,
here: every call names an entry point of roles/gate/meta/argument_specs.yml, passes only options of that entry point,
gives every required option, and passes a literal value of the right type where it passes one.
"""

import glob
import os

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GATE = "npuops.ascend.gate"
TYPES = {"int": int, "str": str, "list": list, "dict": dict, "bool": bool}


def _specs():
    with open(os.path.join(ROOT, "roles", "gate", "meta", "argument_specs.yml")) as handle:
        return yaml.safe_load(handle)["argument_specs"]


def _tasks(node):
    """Every task of a task list or play list, blocks and their rescue/always included."""
    if isinstance(node, list):
        for item in node:
            yield from _tasks(item)
    elif isinstance(node, dict):
        yield node
        for key in ("block", "rescue", "always", "tasks", "pre_tasks", "post_tasks"):
            if key in node:
                yield from _tasks(node[key])


def _calls():
    files = sorted(glob.glob(os.path.join(ROOT, "roles", "*", "tasks", "*.yml"))
                   + glob.glob(os.path.join(ROOT, "playbooks", "*.yml")))
    found = []
    for path in files:
        with open(path) as handle:
            data = yaml.safe_load(handle)
        for task in _tasks(data):
            for action in ("ansible.builtin.import_role", "ansible.builtin.include_role"):
                args = task.get(action)
                if isinstance(args, dict) and args.get("name") == GATE:
                    found.append((os.path.relpath(path, ROOT), task.get("name"), action, args, task.get("vars") or {}))
    return found


CALLS = _calls()


STAGE_ROLES = ("health_check", "baseline", "version_check", "hccl_bench", "roce_lossless", "hccl_env", "numa_bind",
               "mindie_config", "io_check", "regression")


def _verdicts(role):
    """The stage_gate verdict tasks of a role (in any of its task files), with the file they are in."""
    out = []
    for path in sorted(glob.glob(os.path.join(ROOT, "roles", role, "tasks", "*.yml"))):
        with open(path, encoding="utf-8") as handle:
            for task in _tasks(yaml.safe_load(handle) or []):
                args = task.get("npuops.ascend.stage_gate")
                if isinstance(args, dict) and args.get("step") == "verdict":
                    out.append((os.path.basename(path), task))
    return out


def test_the_stage_roles_call_the_gate():
    # every stage role imports the gate's run entry point (the report directory of the run)
    roles = {call[0].split(os.sep)[1] for call in CALLS if call[0].startswith("roles") and call[3].get("tasks_from") == "run"}
    assert set(STAGE_ROLES) <= roles, sorted(set(STAGE_ROLES) - roles)


@pytest.mark.parametrize("role", STAGE_ROLES)
def test_every_stage_role_ends_with_a_verdict_over_the_records_that_stops_every_node(role):
    verdicts = _verdicts(role)
    gate_imports = [call for call in CALLS
                    if call[0].startswith(os.path.join("roles", role) + os.sep) and "tasks_from" not in call[3]]
    assert verdicts or gate_imports, "roles/%s has no gate" % role
    for path, task in verdicts:
        assert task.get("run_once") is True and task.get("any_errors_fatal") is True, (role, path, task.get("name"))
        args = task["npuops.ascend.stage_gate"]
        assert args["run_dir"] == "{{ gate_run_dir }}" and args["run_id"] == "{{ gate_run_id }}", (role, path, args)
        # every verdict tells a node lost below npuops_max_lost_nodes from one that failed
        assert args.get("max_lost") == "{{ npuops_max_lost_nodes }}", (role, path, task.get("name"))


@pytest.mark.parametrize("path,name,action,args,task_vars", CALLS, ids=["%s: %s" % (c[0], c[1]) for c in CALLS])
def test_gate_call_matches_the_argument_spec(path, name, action, args, task_vars):
    specs = _specs()
    entry = args.get("tasks_from", "main")
    assert entry in specs, "%s (%s) calls gate entry point %r, which has no argument spec" % (path, name, entry)
    # static: an include would cost a task per node; unvalidated: the spec is checked here instead
    assert action == "ansible.builtin.import_role", "%s (%s): import the gate role, do not include it" % (path, name)
    assert args.get("rolespec_validate") is False, "%s (%s): rolespec_validate: false is checked here" % (path, name)
    options = specs[entry].get("options") or {}
    unknown = sorted(set(task_vars) - set(options))
    assert not unknown, "%s (%s) passes %s, not options of gate entry point %r" % (path, name, unknown, entry)
    missing = sorted(key for key, spec in options.items() if spec.get("required") and key not in task_vars)
    assert not missing, "%s (%s) does not pass the required %s" % (path, name, missing)
    for key, value in task_vars.items():
        if isinstance(value, str) and "{{" in value:
            continue  # templated: the stage role's tests and the PoD runs check what it renders to
        want = TYPES.get(options[key].get("type", "str"))
        assert want is None or isinstance(value, want), \
            "%s (%s): %s is %r, the spec wants %s" % (path, name, key, value, options[key].get("type"))


def test_a_wrong_option_would_be_found():
    # the check above can fail: an option the spec does not know is reported
    specs = _specs()
    assert "gate_stages" not in (specs["main"].get("options") or {})
    assert "gate_stage" in specs["main"]["options"]
