"""A run in parts (npuops_run_part): which part a task is in, the nodes a PoD step judges, the run's plan in the store,
and a node lost in a node part staying lost in the PoD part."""

from __future__ import annotations

import json
import os

import pytest

from ansible_collections.npuops.ascend.plugins.plugin_utils import gate, parts, store

RUN = 'pod-20261205'
NODES = ['node01', 'node02', 'node03', 'node04']


def play(part, active=None, group='ascend_pod'):
    return {'npuops_run_part': part, 'npuops_pod_group': group, 'groups': {'ascend_pod': NODES, 'all': NODES},
            'ansible_play_hosts_all': ['node01', 'node03'], 'ansible_play_hosts': active or ['node01', 'node03']}


def test_the_part_defaults_to_one_run_and_refuses_anything_else():
    assert parts.run_part({}) == 'all'
    assert parts.run_part({'npuops_run_part': None}) == 'all'
    assert parts.run_part({'npuops_run_part': 'nodes'}) == 'nodes'
    with pytest.raises(parts.PartError, match="npuops_run_part is 'slices': use all"):
        parts.run_part({'npuops_run_part': 'slices'})
    assert issubclass(parts.PartError, store.StoreError)  # the stage actions report it as they report the store's errors


def test_a_pod_step_judges_the_play_or_in_the_pod_part_the_whole_pod_group():
    assert parts.play_nodes(play('all', ['node01'])) == (['node01', 'node03'], ['node01'])
    assert parts.play_nodes(play('nodes')) == (['node01', 'node03'], ['node01', 'node03'])
    # the PoD part plays on one node; its steps judge every node of the group
    assert parts.play_nodes(play('pod', ['node01'])) == (NODES, NODES)
    with pytest.raises(parts.PartError, match="group 'pod7'"):
        parts.play_nodes(play('pod', group='pod7'))


def test_the_plan_is_written_once_over_the_pod_and_never_read_from_another_run(tmp_path):
    run_dir = str(tmp_path / RUN)
    assert store.read_plan(run_dir, RUN) == (None, None)
    path = store.write_plan(run_dir, store.make_plan(RUN, NODES))
    assert path == os.path.join(run_dir, 'pod', 'plan.json')
    plan, problem = store.read_plan(run_dir, RUN)
    assert problem is None and plan['nodes'] == NODES and plan['schema'] == 'npuops.ascend/run-plan'
    plan, problem = store.read_plan(run_dir, 'pod-20261204')
    assert plan is None and 'is of run %s, not of this run pod-20261204' % RUN in problem
    with open(path, 'w', encoding='utf-8') as handle:
        json.dump(dict(store.make_plan(RUN, NODES), nodes=[]), handle)
    assert store.read_plan(run_dir, RUN)[1].endswith('has no list of nodes')
    with pytest.raises(store.StoreError, match='needs the nodes of the PoD'):
        store.make_plan(RUN, [])
    with pytest.raises(store.StoreError, match='cannot name a directory'):
        store.make_plan(RUN, ['../etc'])


def test_a_node_lost_in_a_node_part_stays_lost_in_the_pod_part_and_is_named_once(tmp_path):
    run_dir = str(tmp_path / RUN)
    for node in ('node01', 'node02', 'node04'):
        store.write_record(run_dir, store.make_record(RUN, node, 0, 'health_check', []))
    # the node part of slice 1 (node01, node03): node03 unreachable, lost with npuops_max_lost_nodes 1
    sliced = gate.verdict(run_dir, RUN, 0, 'health_check', ['node01', 'node03'], ['node01'], failed=[], max_lost=1)
    assert sliced['passed'] and sliced['lost'] == ['node03'] and len(sliced['warnings']) == 1
    assert store.without_lost(run_dir, RUN, NODES) == ['node01', 'node02', 'node04']
    # the PoD part never connected to node03: it is in the play, yet lost, and not named again
    pod = gate.verdict(run_dir, RUN, 0, 'health_check', NODES, NODES, failed=[], max_lost=1)
    assert pod['passed'] and pod['lost'] == [] and pod['warnings'] == [] and pod['nodes'] == ['node01', 'node02', 'node04']
    # a limit of 0 in the PoD part: a node lost in a node part fails the gate there
    strict = gate.verdict(run_dir, RUN, 0, 'health_check', NODES, NODES, failed=[], max_lost=0)
    assert not strict['passed'] and any('node03' in text for text in strict['failures'])
    # a node with no record at all (its slice never ran) is a failure, never passed
    missing = gate.verdict(run_dir, RUN, 1, 'baseline', NODES, NODES, failed=[], max_lost=1)
    assert not missing['passed'] and len(missing['failures']) == 3
