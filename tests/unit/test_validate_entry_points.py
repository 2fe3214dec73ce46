"""The settings of every stage are checked before the first change.

site.yml's play "Check the settings of every stage before the first change" runs before stage 0. Its first task
(``npuops.ascend.settings_check``) checks the options of every stage role on every node with ansible-core's own
argument-spec check, whatever the tags; the stage plays import their role without checking them again. For every stage
play of site.yml (except stage 0, which only reads and runs first anyway) the settings play also imports the stage role's
early entry point (``validate``; ``intent`` for roce_lossless) with its deeper checks and its defaults. The options of an
early entry point are those of ``main``. An entry point without tasks is imported whatever the tags; one with more
checks is imported whatever the tags too when its stage comes after the first stage that changes the nodes (stage 4),
with its deeper checks only when the stage runs (``<role>_validate_settings``), and only when its stage runs otherwise.
"""

import glob
import os

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EARLY_PLAY = "Check the settings of every stage before the first change (reads only)"
EARLY_ENTRY = {"roce_lossless": "intent"}   # the others: validate
FIRST_STAGE = "health_check"                # stage 0 reads only and is the first stage: its own check comes first
FIRST_CHANGE = "roce_lossless"              # the first stage that changes the nodes


def _load(*parts):
    with open(os.path.join(ROOT, *parts), encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def _specs(role):
    return _load("roles", role, "meta", "argument_specs.yml")["argument_specs"]


def _site():
    return _load("playbooks", "site.yml")


def _stage_imports():
    """(role, tags, the import_role arguments) of every stage play of site.yml."""
    out = []
    for play in _site():
        if not play.get("name", "").startswith("Stage "):
            continue
        assert not play.get("roles"), "%s: a stage play imports its role in tasks (no second check of its options)" % play["name"]
        tasks = play.get("tasks") or []
        assert len(tasks) == 1 and "ansible.builtin.import_role" in tasks[0], play["name"]
        args = tasks[0]["ansible.builtin.import_role"]
        out.append((args["name"].split(".")[-1], play["tags"], args))
    return out


def _stage_plays():
    """(role, tags) of every stage play of site.yml."""
    return [(role, tags) for role, tags, _args in _stage_imports()]


def _settings_check():
    """{role: entry point} that the first task of the early play checks."""
    plays = [play for play in _site() if play.get("name") == EARLY_PLAY]
    first = plays[0]["tasks"][0]
    assert "npuops.ascend.settings_check" in first, "the first task of the early play checks every stage's options"
    return dict((item["role"], item["entry_point"]) for item in first["npuops.ascend.settings_check"]["roles"])


# Right after the options, before any check that reads a node: the nodes the run goes on with (not those an earlier
# part of a run in parts lost), the group the stage plays run on, and the end of the play for the lost ones.
RUN_NODES = ["Prepare the report directory of this run",
             "Find the nodes this run goes on with (without those an earlier part of the run lost)",
             "Put them in the group the stage plays run on",
             "Leave out the nodes an earlier part of the run lost"]


def test_the_early_play_leaves_out_the_lost_nodes_before_it_reads_a_node():
    plays = [play for play in _site() if play.get("name") == EARLY_PLAY]
    tasks = plays[0]["tasks"][1:len(RUN_NODES) + 1]
    assert tasks[0]["ansible.builtin.import_role"]["tasks_from"] == "run"
    assert tasks[1]["npuops.ascend.stage_gate"]["step"] == "reached" and tasks[1]["run_once"] is True
    assert tasks[2]["ansible.builtin.add_host"]["groups"] == "npuops_run_nodes"
    assert tasks[2]["loop"] == "{{ _npuops_reached.reached }}" and tasks[2]["run_once"] is True
    assert tasks[3]["ansible.builtin.meta"] == "end_host" and tasks[3]["when"] == "inventory_hostname in _npuops_reached.lost"
    # every stage play runs on that group (on its first node in the PoD part)
    for play in _site():
        if str(play.get("name", "")).startswith(("Stage ", "Summary")):
            assert str(play["hosts"]).startswith("npuops_run_nodes"), play["name"]


def _early_imports():
    """{role: (entry point, the tag conditions of the task's when, those of <role>_validate_settings)} of the early play."""
    plays = [play for play in _site() if play.get("name") == EARLY_PLAY]
    assert len(plays) == 1, "site.yml has no play %r" % EARLY_PLAY
    out = {}
    tasks = plays[0]["tasks"][1:]
    assert [task["name"] for task in tasks[:len(RUN_NODES)]] == RUN_NODES
    for task in tasks[len(RUN_NODES):]:
        args = task.get("ansible.builtin.import_role")
        assert isinstance(args, dict), "%s: the early play only imports the stage roles' checks" % task.get("name")
        role = args["name"].split(".")[-1]
        if args.get("tasks_from") != EARLY_ENTRY.get(role, "validate"):
            continue  # another read-only check of the role (numa_bind's run user), tested below
        when = task.get("when") or []
        settings = (task.get("vars") or {}).get("%s_validate_settings" % role)
        out[role] = (args.get("tasks_from"), [when] if isinstance(when, str) else when,
                     [settings] if isinstance(settings, str) else [])
    return out


STAGES = _stage_plays()
ROLES_WITH_VALIDATE = sorted(os.path.basename(os.path.dirname(os.path.dirname(path)))
                             for path in glob.glob(os.path.join(ROOT, "roles", "*", "meta", "argument_specs.yml"))
                             if "validate" in _load(path)["argument_specs"])


def test_site_yml_has_its_ten_stages():
    assert [role for role, _tags in STAGES] == ["health_check", "baseline", "version_check", "hccl_bench", "roce_lossless",
                                                "hccl_env", "numa_bind", "mindie_config", "io_check", "regression"]


@pytest.mark.parametrize("role, tags", [stage for stage in STAGES if stage[0] != FIRST_STAGE], ids=str)
def test_every_stage_is_checked_before_stage_0(role, tags):
    imports = _early_imports()
    assert role in imports, "the early play of site.yml does not check the settings of %s" % role
    entry, when, settings = imports[role]
    assert entry == EARLY_ENTRY.get(role, "validate"), (role, entry)
    assert entry in _specs(role), "roles/%s has no argument spec for its entry point %r" % (role, entry)
    tag_conditions = [condition for condition in when if "ansible_run_tags" in condition]
    if not _load("roles", role, "tasks", "%s.yml" % entry):
        # only the argument spec: Ansible checks the options of main at the stage's play in every run, whatever the tags
        # (that check is tagged always), so the early check must not depend on the tags either
        assert tag_conditions == [] and settings == [], (role, when)
        return
    if [stage for stage, _tags in STAGES].index(role) > [stage for stage, _tags in STAGES].index(FIRST_CHANGE):
        # after the first stage that changes the nodes: the options whatever the tags (no tag condition on the import),
        # the deeper checks only when the stage runs (<role>_validate_settings)
        assert tag_conditions == [], (role, when)
        assert len(settings) == 1, "%s: the import sets no %s_validate_settings" % (role, role)
        condition = settings[0]
    else:
        # the first changing stage itself: its own play checks its options before it changes anything
        assert len(tag_conditions) == 1, when
        condition = tag_conditions[0]
    for tag in list(tags) + ["all"]:
        assert "'%s' in ansible_run_tags" % tag in condition, (role, tag, condition)


@pytest.mark.parametrize("role, tags", STAGES, ids=str)
def test_every_stage_has_its_options_checked_by_the_first_task_and_not_again(role, tags):
    checked = _settings_check()
    assert checked.get(role) == ("main" if role == FIRST_STAGE else EARLY_ENTRY.get(role, "validate")), (role, checked)
    assert checked[role] in _specs(role)
    args = dict((r, a) for r, _t, a in _stage_imports())[role]
    assert args.get("rolespec_validate") is False and "tasks_from" not in args, args


def test_the_early_imports_do_not_check_the_options_again():
    plays = [play for play in _site() if play.get("name") == EARLY_PLAY]
    for task in plays[0]["tasks"][1:]:
        if "ansible.builtin.import_role" in task:
            assert task["ansible.builtin.import_role"].get("rolespec_validate") is False, task["name"]


def test_the_run_user_of_stage_6_is_checked_before_the_first_change():
    # one task per node: the validate entry point checks the settings and, told so, the run user - when stage 6 runs
    plays = [play for play in _site() if play.get("name") == EARLY_PLAY]
    wanted = {"name": "npuops.ascend.numa_bind", "tasks_from": "validate", "rolespec_validate": False}
    tasks = [task for task in plays[0]["tasks"][1:] if task.get("ansible.builtin.import_role") == wanted]
    assert len(tasks) == 1
    assert tasks[0]["vars"]["numa_bind_validate_run_user"] is True, tasks[0]
    condition = tasks[0]["vars"]["numa_bind_validate_settings"]
    assert any("'stage6' in ansible_run_tags" in part for part in condition.split(" or ")), tasks[0]
    validate = _load("roles", "numa_bind", "tasks", "validate.yml")
    assert len(validate) == 1 and validate[0]["when"] == "numa_bind_validate_settings | bool", validate
    check = validate[0]["npuops.ascend.stage_numa"]
    assert check["step"] == "check" and check["check_run_user"] == "{{ numa_bind_validate_run_user | bool }}", check
    assert "check_settings" not in check, check  # the settings are always checked there
    # the run_user entry point still makes the run user check alone
    run_user = _load("roles", "numa_bind", "tasks", "run_user.yml")
    assert len(run_user) == 1 and run_user[0]["npuops.ascend.stage_numa"]["step"] == "check", run_user


def test_stage_6_always_checks_its_own_settings():
    # the stage's first task on each node is the read step of npuops.ascend.stage_numa, which checks the settings
    # whatever it is told (tests/unit/plugins/action/test_stage_numa.py), before it reads or changes anything
    tasks = _load("roles", "numa_bind", "tasks", "main.yml")
    steps = [task for task in tasks if "npuops.ascend.stage_numa" in task]
    assert [task["npuops.ascend.stage_numa"]["step"] for task in steps] == ["read", "node"], steps
    assert "check_settings" not in steps[0]["npuops.ascend.stage_numa"] and steps[0]["any_errors_fatal"] is True
    assert tasks.index(steps[0]) == 1, "the read step comes right after the run's directory"
    validate = _load("roles", "numa_bind", "tasks", "validate.yml")
    assert len(validate) == 1 and validate[0]["when"] == "numa_bind_validate_settings | bool", validate


@pytest.mark.parametrize("role", ["hccl_env", "mindie_config"])
def test_a_stage_always_checks_its_own_settings(role):
    # the stage's main imports its validate tasks with <role>_validate_settings true, whatever the early play said
    # (stage 7 also decides npuMemSize auto there, which the settings play does not)
    tasks = _load("roles", role, "tasks", "main.yml")
    imports = [task for task in tasks if task.get("ansible.builtin.import_tasks") == "validate.yml"]
    decide = {"_mindie_config_decide": True} if role == "mindie_config" else {}
    assert len(imports) == 1 and imports[0]["vars"] == dict({"%s_validate_settings" % role: True}, **decide), imports
    validate = _load("roles", role, "tasks", "validate.yml")
    assert len(validate) == 1 and validate[0]["when"] == "%s_validate_settings | bool" % role, validate


def test_the_roles_with_a_validate_entry_point():
    assert ROLES_WITH_VALIDATE == ["baseline", "hccl_bench", "hccl_env", "io_check", "mindie_config", "numa_bind",
                                   "regression", "version_check"]


@pytest.mark.parametrize("role", ROLES_WITH_VALIDATE + ["roce_lossless"])
def test_an_early_entry_point_checks_every_option_of_main_the_same_way(role):
    specs = _specs(role)
    entry = EARLY_ENTRY.get(role, "validate")
    main = specs["main"].get("options") or {}
    early = specs[entry].get("options") or {}
    assert sorted(early) == sorted(main), "%s: options of %s and main differ: %s" % (
        role, entry, sorted(set(early) ^ set(main)))
    for name, spec in main.items():
        for key in ("type", "choices", "elements", "required", "options"):
            assert early[name].get(key) == spec.get(key), "%s: %s %s differs between main and %s" % (role, name, key, entry)
    assert os.path.isfile(os.path.join(ROOT, "roles", role, "tasks", "%s.yml" % entry)), "roles/%s/tasks/%s.yml" % (role, entry)


def test_stage_4s_pod_part_ends_in_two_plays_that_match_no_host_outside_it():
    plays = _site()
    names = [str(play.get("name", "")) for play in plays]
    at = [index for index, name in enumerate(names) if name.startswith("Stage 4 ")][0]
    ecn, end = plays[at + 1], plays[at + 2]
    assert names[at + 3].startswith("Measured after stage 4 ") and names[at + 4].startswith("Stage 5 ")
    for play, entry, hosts in ((ecn, "ecn", "npuops_run_nodes"), (end, "pod_end", "npuops_run_nodes[0]")):
        assert play["tags"] == plays[at]["tags"] == ["stage4", "roce_lossless"], play["name"]
        assert play["hosts"] == ("{{ '%s' if npuops_run_part | default('all') == 'pod' else "
                                 "'npuops_run_nodes:!npuops_run_nodes' }}" % hosts)
        args = play["tasks"][0]["ansible.builtin.import_role"]
        assert args == {"name": "npuops.ascend.roce_lossless", "rolespec_validate": False, "tasks_from": entry}
        assert os.path.exists(os.path.join(ROOT, "roles", "roce_lossless", "tasks", entry + ".yml"))
    # the ECN reads never stop the run before the lock is released; the gate play stops it
    assert "any_errors_fatal" not in ecn and end["any_errors_fatal"] is True


def test_each_tuning_stage_is_followed_by_its_measurement_play():
    """npuops_measure_each_stage: a play right after each tuning stage (after stage 4's PoD part) runs the regression
    role's stage_measure entry on one node, with that stage's tags and number; it is one skipped task when off."""
    plays = _site()
    names = [str(play.get("name", "")) for play in plays]
    for stage in (4, 5, 6, 7, 8):
        at = [index for index, name in enumerate(names) if name.startswith("Measured after stage %d " % stage)]
        assert len(at) == 1, names
        play = plays[at[0]]
        following = names[at[0] + 1]
        assert following.startswith("Stage %d " % (stage + 1)), following
        stage_play = [p for p in plays if str(p.get("name", "")).startswith("Stage %d " % stage)][0]
        assert play["tags"] == stage_play["tags"], play["name"]
        assert play["hosts"] == "npuops_run_nodes[0]"
        task = play["tasks"][0]
        expected = {"name": "npuops.ascend.regression", "tasks_from": "stage_measure", "rolespec_validate": False}
        assert task["ansible.builtin.include_role"] == expected
        assert task["vars"] == {"regression_measure_stage": stage}
    entry = _load("roles", "regression", "tasks", "stage_measure.yml")
    assert len(entry) == 1 and "npuops_measure_each_stage | bool" in entry[0]["when"]
    assert "npuops_run_part in ['all', 'pod']" in entry[0]["when"]
    assert "stage_measure" in _specs("regression")
