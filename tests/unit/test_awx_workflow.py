"""The AWX workflow of site.yml in parts (docs/awx/site-workflow.yml) against playbooks/site.yml, and the command-line
driver's slicing (tools/awx/run_in_parts.py) against AWX's rule."""

from __future__ import annotations

import importlib.util
import os

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WORKFLOW = os.path.join(ROOT, 'docs', 'awx', 'site-workflow.yml')


def driver():
    spec = importlib.util.spec_from_file_location('run_in_parts', os.path.join(ROOT, 'tools', 'awx', 'run_in_parts.py'))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def site_stage_tags():
    with open(os.path.join(ROOT, 'playbooks', 'site.yml'), encoding='utf-8') as handle:
        plays = yaml.safe_load(handle)
    # the stage plays (the plays that end stage 4's PoD part in a run in parts carry its tags too)
    return [tag for play in plays if play['name'].startswith('Stage ') for tag in play.get('tags') or []
            if tag.startswith('stage')]


def test_the_workflow_runs_every_stage_of_site_yml_once_in_order_and_slices_only_node_parts():
    templates, chain, workflow_vars = driver().load_workflow(WORKFLOW)
    assert site_stage_tags() == ['stage%d' % n for n in range(10)]
    steps = []
    for node in chain:
        template = templates[node['unified_job_template']['name']]
        assert template['playbook'] == 'playbooks/site.yml'
        part = template['extra_vars']['npuops_run_part']
        tags = node.get('job_tags') or template.get('job_tags')
        assert tags in site_stage_tags() and node['identifier'] == '%s-%s' % (tags, part)
        # only node parts are sliced; the PoD parts and the part before of stage 4 are one job each
        assert (template['job_slice_count'] > 1) == (part == 'nodes')
        if part == 'before':
            assert template['job_tags'] == 'stage4'  # only stage 4 has a part before its node parts
        else:
            assert template['ask_tags_on_launch'] is True  # the node gives the stage's tags
        # a node part always goes on to its PoD part (the gate there judges the store, lost nodes included); every
        # other edge is on success, so a failed gate stops the workflow
        related = node.get('related') or {}
        if part == 'nodes':
            assert set(related) == {'always_nodes'} and related['always_nodes'] == [{'identifier': '%s-pod' % tags}]
        else:
            assert set(related) == {'success_nodes'} and len(related['success_nodes']) <= 1
        steps.append((int(tags[len('stage'):]), part))
    assert [stage for stage, _part in steps] == sorted(stage for stage, _part in steps)
    expected = []
    for stage in range(10):
        if stage == 4:
            # the lock and the benchmark before the change, the slices' changes, the benchmark after and the gate
            expected += [(4, 'before'), (4, 'nodes'), (4, 'pod')]
        elif stage == 9:
            expected.append((9, 'pod'))  # stage 9 is a PoD part only
        else:
            expected += [(stage, 'nodes'), (stage, 'pod')]
    assert steps == expected
    assert 'npuops_report_dir' in workflow_vars  # one store every job of the workflow writes


def test_the_workflow_refuses_a_chain_that_forks_or_skips(tmp_path):
    module = driver()
    with open(WORKFLOW, encoding='utf-8') as handle:
        document = yaml.safe_load(handle)
    nodes = document['workflow_job_template']['workflow_nodes']
    nodes[0]['related']['success_nodes'] = [{'identifier': 'stage1-nodes'}]  # beside its always edge
    path = tmp_path / 'forks.yml'
    path.write_text(yaml.safe_dump(document))
    try:
        module.load_workflow(str(path))
    except SystemExit as exc:
        assert 'stage0-nodes has 2 edges' in str(exc)
    else:
        raise AssertionError('a forking workflow was accepted')


def test_slices_follow_awx_rule_and_the_pared_inventory_holds_only_the_slice():
    module = driver()
    hosts = ['node%02d' % n for n in range(10, 0, -1)]
    slices = module.awx_slices(hosts, 4)
    assert slices == [['node01', 'node05', 'node09'], ['node02', 'node06', 'node10'], ['node03', 'node07'],
                      ['node04', 'node08']]
    assert module.awx_slices(['b', 'a'], 4) == [['a'], ['b']]
    inventory = {'_meta': {'hostvars': {'node01': {'ansible_port': 22}, 'node02': {'ansible_port': 23}}},
                 'all': {'children': ['ungrouped', 'ascend_pod']},
                 'ascend_pod': {'hosts': ['node01', 'node02'], 'vars': {'npuops_mtu': 9000}}}
    pared = module.pare_inventory(inventory, ['node02'])
    assert pared['_meta']['hostvars'] == {'node02': {'ansible_port': 23}}
    assert pared['ascend_pod'] == {'hosts': ['node02'], 'vars': {'npuops_mtu': 9000}}
    assert pared['all'] == inventory['all'] and inventory['ascend_pod']['hosts'] == ['node01', 'node02']
