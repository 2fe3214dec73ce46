"""switch_config: the switch files of a synthetic PoD over four switches (one per family) against their golden files,
the file names, the order, and the switches skipped or refused whatever their family.

Regenerate the golden files with NPUOPS_REGEN_GOLDEN=1, then review the diff line by line against
../shared/reference/switch-qos.md and its sources before committing. The lines of each family are checked against the
references in test_switch_<family>.py.
"""

from __future__ import annotations

import json
import os

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.npuops.ascend.plugins.module_utils._parsers.hccn_tool import parse_lldp_get
from ansible_collections.npuops.ascend.plugins.plugin_utils.switch import FAMILIES
from ansible_collections.npuops.ascend.plugins.plugin_utils.switch.files import switch_config
from ansible_collections.npuops.ascend.plugins.plugin_utils.switch.intent import INTENT_DEFAULTS
from ansible_collections.npuops.ascend.plugins.plugin_utils.switch.neighbours import switch_neighbours
from ansible_collections.npuops.ascend.tests.unit.plugins.plugin_utils import switch_pod as pod


@pytest.fixture(scope='module')
def neighbours():
    return switch_neighbours(pod.synthetic_nodes())


# --- golden files --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize('case', sorted(pod.CASES))
def test_golden_files(neighbours, case):
    result = pod.render(neighbours, case)
    assert result['problems'] == [] and result['skipped'] == []
    assert sorted(f['family'] for f in result['files']) == sorted(pod.FAMILY_OF.values())
    for item in result['files']:
        path = os.path.join(pod.GOLDEN, case, item['filename'])
        if pod.REGEN:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, 'w', encoding='utf-8', newline='') as handle:
                handle.write(item['content'])
        with open(path, encoding='utf-8', newline='') as handle:
            assert item['content'] == handle.read(), 'rendered %s differs from its golden file %s' % (item['filename'], path)
        assert [p['port'] for p in item['ports']] == [p['port'] for p in neighbours['switches'][item['switch']]['ports']]


def test_goldens_exist_for_every_case_and_family():
    assert sorted((case, family) for case, _name, family, _content in pod.all_goldens()) == sorted(
        (case, family) for case in pod.CASES for family in pod.FAMILY_OF.values())


def test_filenames(neighbours):
    names = sorted(f['filename'] for f in pod.render(neighbours, 'default')['files'])
    assert names == ['leaf-a.cfg', 'leaf-b.cfg', 'leaf-c.nvue.sh', 'leaf-s.json']


def test_deterministic(neighbours):
    first = json.dumps(pod.render(neighbours, 'p3_dscp33'), sort_keys=True)
    again = switch_neighbours(list(reversed(pod.synthetic_nodes())))
    switches = dict(reversed(list(pod.SWITCHES.items())))
    second = json.dumps(switch_config(again, pod.CASES['p3_dscp33'], switches), sort_keys=True)
    assert first == second


def test_numbers_as_strings_from_jinja(neighbours):
    text = dict((key, str(value)) for key, value in INTENT_DEFAULTS.items())
    assert switch_config(neighbours, text, pod.SWITCHES) == pod.render(neighbours, 'default')


def test_two_names_that_read_the_same_get_their_own_file():
    lldp = [parse_lldp_get(pod.lldp_text('Ethernet%d' % (8 * npu), system_name=name)) for npu, name in enumerate(['a b', 'a/b'])]
    nodes = [{'node': 'node01', 'devices': dict((str(npu), {'lldp': entry}) for npu, entry in enumerate(lldp))}]
    result = switch_config(switch_neighbours(nodes), {}, default_family='sonic')
    assert [f['filename'] for f in result['files']] == ['a_b.json', 'a_b_2.json']


# --- what no family renders ----------------------------------------------------------------------------------------

def test_a_port_two_npus_claim_is_a_problem():
    lldp = parse_lldp_get(pod.lldp_text('400GE1/1/5:1', system_name='leaf1'))
    result = switch_neighbours([{'node': 'node01', 'devices': {'0': {'lldp': lldp}}},
                                {'node': 'node02', 'devices': {'5': {'lldp': lldp}}}])
    config = switch_config(result, {}, default_family='huawei_ce_a')
    assert config['files'] == []
    assert config['problems'][0]['key'] == 'ports' and 'node01 NPU 0, node02 NPU 5' in config['problems'][0]['msg']


def test_switch_without_family_is_skipped(neighbours):
    result = switch_config(neighbours, {}, {'leaf-a': {'family': 'huawei_ce_a'}, 'leaf-x': {'family': 'sonic'}})
    assert [f['switch'] for f in result['files']] == ['leaf-a']
    skipped = dict((s['switch'], s['reason']) for s in result['skipped'])
    assert sorted(skipped) == ['leaf-b', 'leaf-c', 'leaf-s', 'leaf-x']
    assert 'npuops_switches[' in skipped['leaf-b'] and 'npuops_switch_family' in skipped['leaf-b']
    assert 'no NPU port' in skipped['leaf-x']


def test_default_family(neighbours):
    result = switch_config(neighbours, {}, {'leaf-s': {'family': 'sonic'}}, default_family='cumulus')
    assert sorted((f['switch'], f['family']) for f in result['files']) == [
        ('leaf-a', 'cumulus'), ('leaf-b', 'cumulus'), ('leaf-c', 'cumulus'), ('leaf-s', 'sonic')]


def test_unknown_family(neighbours):
    result = switch_config(neighbours, {}, {'leaf-a': {'family': 'arista'}})
    problem = result['problems'][0]
    assert problem['key'] == 'family' and problem['value'] == 'arista'
    for family in FAMILIES:
        assert family in problem['msg']


@pytest.mark.parametrize('bad', [{'lossless_priority': 'four'}, {'speed': 1}, 'x', {'pfcwd_action': 'pause'}])
def test_switch_config_refuses_a_bad_intent(neighbours, bad):
    with pytest.raises(AnsibleFilterError, match='switch_config'):
        switch_config(neighbours, bad, pod.SWITCHES)


def test_switch_config_refuses_bad_arguments(neighbours):
    with pytest.raises(AnsibleFilterError, match='neighbours'):
        switch_config({'ports': []}, {})
    with pytest.raises(AnsibleFilterError, match='key size is not known'):
        switch_config(neighbours, {}, {'leaf-a': {'family': 'sonic', 'size': 1}})
