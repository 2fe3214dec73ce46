"""The change window's batches follow failure domains (playbooks/roce_lossless.yml, roce_lossless_batch_domain).

A 6-node PoD of its own whose nodes hang on two groups of leaf switches (node01-03 on leaf-01..04, node04-06 on
rackB-leaf-01..04, set in the simulator's LLDP data): with batches of 2 by switch, the window sets the ports of
node01+node02, node03, node04+node05, node06, and the nodes' own call logs show them in that order, never more than 2
nodes with links down at once and never two domains at once. Inventory groups as domains (check mode) give the batches in the groups' order, and a node in no
listed group stops the window before any change.
"""

import json
import os
import re

import pytest

from conftest import own_pod

PREFIX = os.environ.get("NPUOPS_IT_DOMAIN_PREFIX", "127.0.15")
SIX = ["node%02d" % i for i in range(1, 7)]
SIM = "/usr/local/sbin/npu-sim"
FLAP_S = 1.0  # bring_up's --flap-seconds


@pytest.fixture(scope="module")
def racks(tmp_path_factory):
    def rack_b(pod):
        for node in SIX[3:]:
            pod.node(node, "sh", "-c", 'for d in 0 1 2 3 4 5 6 7; do "$0" state set npus.$d.net.lldp.system_name '
                     '"\\"rackB-leaf-0$((d / 2 + 1))\\"" >/dev/null || exit 1; done', SIM)
    yield from own_pod(tmp_path_factory, "domains", PREFIX, len(SIX), rack_b)


def _flaps(pod, node):
    """The start times of the node's MTU and PFC sets (each takes its link down for FLAP_S seconds)."""
    with open(os.path.join(pod.node_dir(node), "state", "calls.jsonl"), encoding="utf-8") as handle:
        calls = [json.loads(line) for line in handle if line.strip()]
    return [c["time"] for c in calls if c.get("tool") == "hccn_tool" and "-s" in c["argv"]
            and ("-mtu" in c["argv"] or "-pfc" in c["argv"])]


def test_batches_by_leaf_switch_take_one_domain_down_at_a_time(racks):
    rc, out = racks.playbook("roce_lossless.yml", {"roce_lossless_batch": 2, "roce_lossless_batch_domain": "switch",
                                                   "roce_lossless_bench_enabled": False})
    assert rc == 0, out[-4000:]
    assert ("2 failure domain(s) (leaf-01+leaf-02+leaf-03+leaf-04: node01, node02, node03; rackB-leaf-01+rackB-leaf-02+"
            "rackB-leaf-03+rackB-leaf-04: node04, node05, node06), 4 batch(es) of at most 2 node(s)") in out
    flaps = dict((node, _flaps(racks, node)) for node in SIX)
    assert all(flaps.values()), flaps
    # the batches as the window ran them (the nodes of each run of its set task), and in that order on the nodes: no
    # node of a batch sets a port before every node of the batch before it set its last one and that link's flap was
    # over (the window waits for the links to come back), however loaded the machine
    batches = [["node01", "node02"], ["node03"], ["node04", "node05"], ["node06"]]
    ran = [sorted(set(re.findall(r"^(?:changed|ok): \[(node\d+)\]", chunk, re.M))) for chunk in out.split("TASK [")[1:]
           if chunk.startswith("npuops.ascend.roce_lossless : Set the MTU, PFC and DSCP map of every NPU port")]
    assert ran == batches, ran
    for before, after in zip(batches, batches[1:]):
        done = max(max(flaps[node]) for node in before)
        start = min(min(flaps[node]) for node in after)
        assert start >= done + FLAP_S, (before, after, done, start)
    # the blast radius: at any moment, the nodes whose links are down
    intervals = [(t, t + FLAP_S, node) for node, times in flaps.items() for t in times]
    domain = dict((node, "A" if node in SIX[:3] else "B") for node in SIX)
    for moment, _end, _node in intervals:
        down = set(node for start, end, node in intervals if start <= moment < end)
        assert len(down) <= 2, (moment, down)
        assert len(set(domain[node] for node in down)) == 1, (moment, down)


def test_batches_by_inventory_group_in_check_mode_and_a_node_in_no_group(racks):
    groups = os.path.join(racks.inventory_dir, "racks.yml")
    with open(groups, "w", encoding="utf-8") as handle:
        handle.write("all:\n  children:\n    rack_b:\n      hosts: {node04: {}, node05: {}}\n"
                     "    rack_a:\n      hosts: {node01: {}, node02: {}, node03: {}, node06: {}}\n")
    try:
        calls = [len(_flaps(racks, node)) for node in SIX]
        rc, out = racks.playbook("roce_lossless.yml", {"roce_lossless_batch": "50%", "roce_lossless_batch_domain": "group",
                                                       "roce_lossless_domain_groups": ["rack_b", "rack_a"],
                                                       "roce_lossless_bench_enabled": False}, ["--check", "--diff"])
        assert rc == 0, out[-4000:]
        assert ("2 failure domain(s) (rack_b: node04, node05; rack_a: node01, node02, node03, node06), 3 batch(es) of at "
                "most 3 node(s), never two domains in one batch") in out
        rc, out = racks.playbook("roce_lossless.yml", {"roce_lossless_batch_domain": "group",
                                                       "roce_lossless_domain_groups": ["rack_b"],
                                                       "roce_lossless_bench_enabled": False})
        assert rc == 2, out[-4000:]
        assert "The batches of the change window cannot follow the failure domains (roce_lossless_batch_domain=group)" in out
        assert "node01: it is in none of the groups of roce_lossless_domain_groups (rack_b)" in out
        assert "Nothing was changed on any node." in out
        assert [len(_flaps(racks, node)) for node in SIX] == calls, "a port was set"
    finally:
        os.unlink(groups)
