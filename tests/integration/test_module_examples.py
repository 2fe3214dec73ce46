"""The EXAMPLES of every module, as written in its documentation, run against the simulated PoD: each module's
examples are one play on the PoD group, run in check mode (an example may set things; check mode shows them and
changes nothing), and must finish without a failed task. A module whose examples no longer match its options, or
name a tool the nodes do not have, fails here."""

import ast
import os

import pytest
import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODULES = sorted(name[:-3] for name in os.listdir(os.path.join(REPO, "plugins", "modules")) if name.endswith(".py") and name != "__init__.py")


# Option values of an example that name what the simulated nodes do not have: they share this host's CPUs
# (two here, not the 192 of an Atlas 800T A2) and its cpufreq (none in sysfs here: the simulator provides
# cpupower), have no /data file system and no mindie user, and their ports keep the untuned MTU 1500 (the
# ping examples assume stage 4 set jumbo frames). (module, option) -> the value used instead.
HOST_BOUND = {
    ("hccn_ping", "size"): 1472,
    ("cpu_governor", "cpus"): ["0-1"],
    ("cpu_governor", "method"): "cpupower",
    ("io_info", "fio_file"): "/var/lib/npuops/npuops-fio.test",
    ("mindie_config", "owner"): "root",
    ("mindie_config", "group"): "root",
    ("profile_info", "path"): "/var/lib/npuops/profile",
}
# What a module's examples need on every node first: profile_info reads the profiler's output a training job wrote (the
# simulated job writes it when NPU_SIM_PROFILE_DIR is set).
PREPARE = {
    "profile_info": "NPU_SIM_PROFILE_DIR=/var/lib/npuops/profile /usr/local/sbin/npu-sim train --steps 12 >/dev/null",
}
# Files an example reads on the controller, written beside the playbook: name -> shell command run on node01
# (the hccn_config example parses text captured from hccn_tool GET commands).
CAPTURES = {
    "hccn_config": {"node07-hccn.txt": 'for q in ip mtu pfc dscp_to_tc; do echo "hccn_tool -i 0 -$q -g"; '
                                       '/usr/local/Ascend/driver/tools/hccn_tool -i 0 -$q -g; done'},
}


def _examples(module):
    path = os.path.join(REPO, "plugins", "modules", module + ".py")
    with open(path, encoding="utf-8") as handle:
        tree = ast.parse(handle.read(), path)
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == "EXAMPLES":
            tasks = yaml.safe_load(node.value.value)
            for task in tasks:
                args = task.get("npuops.ascend." + module)
                for (name, option), value in HOST_BOUND.items():
                    if name == module and isinstance(args, dict) and option in args:
                        args[option] = value
            return tasks
    raise AssertionError("%s has no EXAMPLES" % module)


@pytest.mark.parametrize("module", MODULES)
def test_the_examples_of_the_module_run_on_the_pod(pod, module, tmp_path):
    tasks = _examples(module)
    assert tasks, module
    play = [{"name": "The EXAMPLES of %s" % module, "hosts": "ascend_pod", "gather_facts": False, "tasks": tasks}]
    if module in PREPARE:
        for node in ("node01", "node02"):
            pod.node(node, "sh", "-c", PREPARE[module])
    for name, command in CAPTURES.get(module, {}).items():
        (tmp_path / name).write_text(pod.node("node01", "sh", "-c", command), encoding="utf-8")
    playbook = tmp_path / ("examples_%s.yml" % module)
    playbook.write_text(yaml.safe_dump(play, sort_keys=False), encoding="utf-8")
    before = pod.snapshot()
    rc, out = pod.playbook(str(playbook), None, ["--check", "--diff"])
    assert rc == 0, out[-4000:]
    assert "failed=0" in out and "unreachable=0" in out, out[-2000:]
    assert pod.snapshot() == before, "check mode changed a node"
