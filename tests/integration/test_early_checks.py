"""The checks before the first change: an inventory or a setting that cannot work stops the run on the controller, before
any play connects to a node, with a message that names the variable (or the host name), the nodes and the values.

Each case runs a playbook of the collection against the untuned 2-node simulated PoD of conftest.py and compares a
snapshot of every node taken just before the run with one taken after it: the simulator's state file (every port
setting; no read writes it), the restore points and the HCCL env file. The cases that need another inventory
(host_vars of one node, a renamed host, an empty group) write it for the case and remove it afterwards.
"""

import copy
import os
import shutil

import pytest
import yaml

ROCE = "roce_lossless.yml"
SITE = "site.yml"
HEALTH = "health_check.yml"
# what the run says when it stops in the inventory check or the settings check (nothing connected to a node yet)
STOPPED_EARLY = ("nothing was run on the nodes", "validation of arguments failed")
# the first play that connects to a node, per playbook
FIRST_NODE_PLAY = {ROCE: "PLAY [Stage 4 change window", SITE: "PLAY [Stage 0", HEALTH: "PLAY [Stage 0"}


def _run(pod, playbook, extra_vars=None, args=()):
    """Run ``playbook``; (rc, output). Fails the test when any node changed or a node was contacted."""
    before = pod.snapshot()
    rc, out = pod.playbook(playbook, extra_vars, list(args))
    assert rc != 0, out[-3000:]
    assert FIRST_NODE_PLAY[playbook] not in out, "the run reached the nodes:\n" + out[-3000:]
    assert pod.snapshot() == before, "a node changed:\n" + out[-3000:]
    return rc, out


def _said(out, *texts):
    missing = [text for text in texts if text not in out]
    assert not missing, "missing %s in:\n%s" % (missing, out[-4000:])


def _inventory_hosts(pod):
    with open(pod.inventory, encoding="utf-8") as handle:
        return yaml.safe_load(handle)["all"]["children"]["ascend_pod"]["hosts"]


@pytest.fixture
def host_vars(pod):
    """Write host_vars/<node>.yml beside the PoD's inventory for one case; removed afterwards."""
    directory = os.path.join(pod.inventory_dir, "host_vars")
    os.makedirs(directory, exist_ok=True)

    def write(node, variables):
        with open(os.path.join(directory, node + ".yml"), "w", encoding="utf-8") as handle:
            yaml.safe_dump(variables, handle)

    yield write
    shutil.rmtree(directory)


@pytest.fixture
def other_inventory(pod, tmp_path):
    """A copy of the PoD's inventory (its group_vars too) with the hosts changed by a function; a Pod that uses it."""

    def make(change):
        directory = tmp_path / "inventory"
        shutil.copytree(os.path.join(pod.inventory_dir, "group_vars"), str(directory / "group_vars"))
        with open(pod.inventory, encoding="utf-8") as handle:
            inventory = yaml.safe_load(handle)
        change(inventory["all"]["children"])
        with open(str(directory / "hosts.yml"), "w", encoding="utf-8") as handle:
            yaml.safe_dump(inventory, handle, allow_unicode=True)
        other = copy.copy(pod)
        other.inventory_dir = str(directory)
        return other

    return make


# ---- the lossless intent is the same on every node -------------------------------------------------------------

PRIORITY_3_ON_NODE02 = ("npuops_lossless_priority is 3 on node02 but 4 on node01: the lossless RoCE intent is PoD-wide "
                        "(stage 4 sets it on every port of every node and stage 5 derives HCCL_RDMA_SL and HCCL_RDMA_TC "
                        "from it); set it once in group_vars, not in host_vars or per host")


@pytest.mark.parametrize("playbook", [ROCE, SITE])
def test_a_priority_set_for_one_node_is_refused(pod, host_vars, playbook):
    host_vars("node02", {"npuops_lossless_priority": 3})
    _rc, out = _run(pod, playbook)
    _said(out, PRIORITY_3_ON_NODE02, "nothing was run on the nodes")


def test_an_mtu_set_for_one_node_is_refused(pod, host_vars):
    host_vars("node01", {"npuops_mtu": 4200})
    _rc, out = _run(pod, ROCE)
    _said(out, "npuops_mtu is 4200 on node01 but 9000 on node02: the lossless RoCE intent is PoD-wide")


def test_a_pod_wide_switch_setting_set_for_one_node_is_refused(pod, host_vars):
    host_vars("node02", {"npuops_pfc_watchdog_action": "forward"})
    _rc, out = _run(pod, SITE)
    _said(out, "npuops_pfc_watchdog_action is 'forward' on node02 but 'drop' on node01: it is PoD-wide")


# ---- the settings of every stage, before stage 0 -----------------------------------------------------------------

LATER_STAGE_OPTIONS = [
    ("io_check_seconds", "abc", "argument 'io_check_seconds' is of type str and we were unable to convert to int"),
    ("baseline_runs", "three", "argument 'baseline_runs' is of type str and we were unable to convert to int"),
    ("hccl_bench_mode", "mpi", "value of hccl_bench_mode must be one of: hccl_test, torch, got: mpi"),
    ("version_check_packages", {"torch": 1}, "argument 'version_check_packages' is of type dict"),
    ("regression_tolerance_pct", "2%", "argument 'regression_tolerance_pct' is of type str and we were unable to convert "
                                       "to float"),
]


def test_bad_options_of_later_stages_are_refused_before_stage_0_all_named_in_one_run(pod):
    # stages 4-7 would change every node before stage 8 or 9 starts: the options of every stage are checked first, and
    # the one check names each bad option of each stage (one run with the five)
    _rc, out = _run(pod, SITE, dict((variable, value) for variable, value, _text in LATER_STAGE_OPTIONS))
    _said(out, "Validation of arguments failed", *[text for _variable, _value, text in LATER_STAGE_OPTIONS])


def test_a_bad_option_of_a_stage_outside_the_tags_is_refused_before_the_first_change(pod):
    # Ansible checks the options of every stage role when its play starts, whatever the tags: without the early check
    # the run below would change the ports (stage 4), then stop at the play of stage 8
    _rc, out = _run(pod, SITE, {"io_check_seconds": "abc"}, ["--tags", "stage4"])
    _said(out, "argument 'io_check_seconds' is of type str and we were unable to convert to int")


STAGE_5_TO_7_OPTIONS = [
    ("numa_bind_governor", "turbo", "value of numa_bind_governor must be one of: performance"),
    ("hccl_env_check_ports", "sometimes", "argument 'hccl_env_check_ports' is of type str and we were unable to convert to bool"),
    ("mindie_config_engine", "triton", "value of mindie_config_engine must be one of: mindie, vllm, none, got: triton"),
]


def test_bad_options_of_stages_5_to_7_outside_the_tags_are_refused_before_the_first_change(pod):
    # the same for the stages with deeper checks: their options are checked whatever the tags, all in one run
    _rc, out = _run(pod, SITE, dict((variable, value) for variable, value, _text in STAGE_5_TO_7_OPTIONS), ["--tags", "stage4"])
    _said(out, "Validation of arguments failed", *[text for _variable, _value, text in STAGE_5_TO_7_OPTIONS])


def test_a_bad_run_user_of_stage_9_is_refused_before_the_first_change(pod):
    # a string option, so its type passes: the launch of stage 9 is checked in the settings play when stage 9 runs
    _rc, out = _run(pod, SITE, {"regression_run_user": "root;id"}, ["--tags", "stage4,stage9"])
    _said(out, "benchmark_launch: run_user 'root;id' is not a user name",
          "Check how stage 9 would launch the benchmark (regression_run_user")


def test_the_settings_of_a_stage_outside_the_tags_are_not_read(pod):
    # a mode of the right type that stage 5 would refuse (group/other write) does not stop a run without stage 5, and
    # the settings play reads nothing for stage 5 there
    before = pod.snapshot()
    rc, out = pod.playbook(SITE, {"hccl_env_mode": "0666"}, ["--tags", "stage0", "--check"])
    assert rc == 0, out[-3000:]
    for task in ("Read what is at the file's path on this node", "Check the NUMA binding settings and the run user"):
        section = out.split(task, 1)[1].split("TASK [", 1)[0]
        assert "skipping: [node01]" in section and "ok: [node01]" not in section, task + section
    assert pod.snapshot() == before


# ---- the address plan: one subnet per NPU of a node --------------------------------------------------------------

def test_two_npus_of_a_node_in_one_subnet_are_refused(pod, host_vars):
    ports = copy.deepcopy(_inventory_hosts(pod)["node02"]["npuops_npu_ports"])
    assert ports[1]["address"] == "10.20.1.12" and ports[1]["netmask"] == "255.255.255.0"
    ports[1]["address"] = "10.20.0.22"
    host_vars("node02", {"npuops_npu_ports": ports})
    _rc, out = _run(pod, ROCE, {"roce_lossless_addresses": "apply"})
    _said(out, "node02: npuops_npu_ports puts NPU 0 and NPU 1 in one subnet, 10.20.0.0/24: the PoD has the rail layout "
               "(node01 has each NPU in a subnet of its own): NPU d of every node is on rail d, in the subnet of rail d, so "
               "each NPU of a node needs a subnet of its own")


# ---- host names that cannot name a report file -------------------------------------------------------------------

@pytest.mark.parametrize("name, why", [("../../../tmp/npuops-escape", "it has '/'"), ("node02;touch pwned", "it has ';'")])
def test_a_host_name_that_cannot_name_a_file_is_refused(other_inventory, name, why):
    def rename(groups):
        hosts = groups["ascend_pod"]["hosts"]
        hosts[name] = hosts.pop("node02")

    renamed = other_inventory(rename)
    _rc, out = _run(renamed, ROCE)
    _said(out, "'%s': the inventory host name is not usable: %s" % (name, why),
          "rename the host in the inventory")


def test_a_non_ascii_host_name_is_accepted(other_inventory):
    def rename(groups):
        hosts = groups["ascend_pod"]["hosts"]
        hosts["nöde02-节点"] = hosts.pop("node02")

    renamed = other_inventory(rename)
    rc, out = renamed.playbook(HEALTH, None, ["--check"])
    assert rc == 0, out[-3000:]
    assert "nöde02-节点" in out


# ---- the PoD group -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("playbook", [SITE, ROCE, HEALTH])
def test_a_missing_pod_group_is_named(pod, playbook):
    _rc, out = _run(pod, playbook, {"npuops_pod_group": "nosuchgroup"})
    _said(out, "The inventory has no group 'nosuchgroup' (npuops_pod_group): put the PoD's nodes in a group and name "
               "it with npuops_pod_group, or leave npuops_pod_group unset for the group ascend_pod. Nothing was run on "
               "the nodes.")
    assert "has no attribute" not in out and "No first item" not in out


@pytest.mark.parametrize("playbook", [SITE, ROCE, HEALTH])
def test_an_empty_pod_group_is_named(pod, other_inventory, playbook):
    def add_empty(groups):
        groups["emptypod"] = {"hosts": {}}

    with_empty = other_inventory(add_empty)
    _rc, out = _run(with_empty, playbook, {"npuops_pod_group": "emptypod"})
    _said(out, "The group 'emptypod' (npuops_pod_group) has no node: put the PoD's nodes in it. Nothing was run on the "
               "nodes.")
    assert "has no attribute" not in out and "No first item" not in out


def test_a_metrics_file_the_collector_could_not_read_is_refused_before_stage_0(pod):
    # the run's metrics are written at its end (the report, or the gate that stops it): a relative path is refused first
    _rc, out = _run(pod, SITE, {"npuops_metrics_file": "npuops.prom"})
    _said(out, 'npuops_metrics_file is "npuops.prom": give the absolute path of a file whose name ends in .prom, in a '
               "directory that exists on the controller", "Nothing was run on the nodes.")
