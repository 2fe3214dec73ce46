"""The reference inventory inventories/example: its graph (4 nodes in ascend_pod) and the checks site.yml makes before it
connects to a node (tests/integration/playbooks/validate_example.yml), on the inventory alone.

No simulated PoD: these tests do not use the ``pod`` fixture of conftest.py, so they run (and are not skipped) without
root, sshd or unshare; nothing contacts the example's hosts (their addresses are documentation addresses).
"""

import json
import os
import subprocess

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
INVENTORY = os.path.join(REPO, "inventories", "example")
PLAYBOOK = os.path.join(REPO, "tests", "integration", "playbooks", "validate_example.yml")
HOSTS = ["a2-node01", "a2-node02", "a2-node03", "a2-node04"]


def _env():
    """The environment of conftest.Pod.playbook: plain output and this checkout's collections root."""
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0", ANSIBLE_HOST_KEY_CHECKING="False",
               ANSIBLE_CALLBACK_RESULT_FORMAT="json", ANSIBLE_FORKS="8")
    env.setdefault("ANSIBLE_COLLECTIONS_PATH", subprocess.run(
        [os.path.join(REPO, "tools", "dev", "collections_root.sh"), REPO], capture_output=True, text=True,
        check=True).stdout.strip())
    return env


def _run(*argv):
    """(rc, stdout + stderr, stdout) of a command run in the checkout."""
    proc = subprocess.run(list(argv), capture_output=True, text=True, env=_env(), cwd=REPO, timeout=300, check=False)
    return proc.returncode, proc.stdout + "\n" + proc.stderr, proc.stdout


def _tool(name):
    return os.path.join(REPO, ".venv", "bin", name)


def test_the_graph_has_four_nodes_in_ascend_pod():
    rc, out, _stdout = _run(_tool("ansible-inventory"), "-i", INVENTORY, "--graph")
    assert rc == 0, out
    lines = [line.strip().lstrip("|").lstrip("-") for line in out.splitlines()]
    assert "@ascend_pod:" in lines, out
    group = out.split("@ascend_pod:", 1)[1]
    assert [host for host in HOSTS if "--%s" % host in group] == HOSTS, out


def test_the_ports_come_from_the_one_plan():
    rc, out, stdout = _run(_tool("ansible-inventory"), "-i", INVENTORY, "--host", "a2-node03")
    assert rc == 0, out
    variables = json.loads(stdout)
    assert "npuops_npu_ip_plan" in variables
    # the per-node list is derived in group_vars, never written by hand
    assert "npu_ip_plan" in variables["npuops_npu_ports"]
    assert variables["npuops_node_index"] == 3


def test_the_validation_of_site_yml_passes_without_a_connection(tmp_path):
    reports = tmp_path / "reports"
    rc, out, _stdout = _run(_tool("ansible-playbook"), "-i", INVENTORY, PLAYBOOK, "-e", "npuops_report_dir=%s" % reports,
                            "-e", "npuops_run_id=validate1")
    assert rc == 0, out[-4000:]
    # the settings checks of stages 5 and 7 wrote each node's check record to the run's store, and read them back
    for host in HOSTS:
        for stage in (5, 7):
            with open(reports / "validate1" / "nodes" / host / ("check%d.json" % stage)) as handle:
                record = json.load(handle)
            assert (record["run"], record["node"], record["usable"]) == ("validate1", host, True), record
    # every node got its eight ports from the plan: NPU d of node n is 198.18.d.(10 + n)
    for index, host in enumerate(HOSTS, 1):
        addresses = " ".join("198.18.%d.%d" % (device, 10 + index) for device in range(8))
        assert "%s ports: %s" % (host, addresses) in out, out[-4000:]
    assert "unreachable=1" not in out and "failed=1" not in out


def test_the_validation_refuses_two_nodes_with_one_index(tmp_path):
    # the checks do see the derived ports: the same node index everywhere gives every address twice
    rc, out, _stdout = _run(_tool("ansible-playbook"), "-i", INVENTORY, PLAYBOOK, "-e", "npuops_node_index=1",
                            "-e", "npuops_report_dir=%s" % tmp_path)
    assert rc == 2, out[-4000:]
    assert "a2-node02: npuops_npu_ports NPU 0 address 198.18.0.11 is also used by NPU 0 on a2-node01" in out
