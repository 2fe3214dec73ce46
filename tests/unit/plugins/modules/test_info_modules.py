"""What every info module shares: one result shape, read-only, the same reads in check mode, the shared options."""

from __future__ import annotations

import pytest
import yaml

from ansible_collections.npuops.ascend.plugins.module_utils._argspec import GROUP_OPTIONS
from ansible_collections.npuops.ascend.plugins.modules import hccn_config, hccn_info, hccn_ping, npu_info, numa_info
from ansible_collections.npuops.ascend.tests.unit.plugins.modules import test_hccn_info, test_npu_info, test_numa_info

INFO_MODULES = [
    pytest.param(npu_info, {'workers': 1}, test_npu_info.commands, id='npu_info'),
    pytest.param(hccn_info, {'workers': 1}, test_hccn_info.commands, id='hccn_info'),
    pytest.param(numa_info, {'workers': 1}, test_numa_info.commands, id='numa_info'),
]


@pytest.mark.parametrize('module, args, commands', INFO_MODULES)
def test_check_mode_reads_the_same_and_changes_nothing(run_module, module, args, commands):
    normal = run_module(module, args, commands())
    checked = run_module(module, args, commands(), check_mode=True)
    assert not normal.failed, normal
    assert sorted(checked.calls) == sorted(normal.calls)   # numa_info runs its three tools concurrently
    assert checked.result == normal.result
    assert checked.result['changed'] is False and 'diff' not in checked.result


@pytest.mark.parametrize('module, args, commands', INFO_MODULES)
def test_one_result_shape(run_module, module, args, commands):
    result = run_module(module, args, commands()).result
    assert result['count'] == len(result['devices']) == 8
    assert sorted(result['devices']) == [str(n) for n in range(8)]
    assert all(isinstance(entry, dict) for entry in result['devices'].values())
    assert result['errors'] == []


def _doc(module):
    return yaml.safe_load(module.DOCUMENTATION)


@pytest.mark.parametrize('module', [npu_info, hccn_info, numa_info, hccn_config, hccn_ping], ids=lambda m: m.__name__.split('.')[-1])
def test_group_members_take_the_shared_options_from_the_doc_fragment(module):
    doc = _doc(module)
    assert 'npuops.ascend.tool_options' in doc['extends_documentation_fragment']
    assert 'npuops.ascend.tool_options.group' in doc['extends_documentation_fragment']
    assert 'npuops.ascend.attributes.actiongroup_npu' in doc['extends_documentation_fragment']
    for name in GROUP_OPTIONS:
        assert name not in doc['options'], '%s documents %s itself instead of using the fragment' % (module.__name__, name)


def test_the_action_group_lists_exactly_the_modules_that_take_the_shared_options():
    import os
    root = os.path.join(os.path.dirname(hccn_info.__file__), '..', '..')
    with open(os.path.join(root, 'meta', 'runtime.yml')) as handle:
        runtime = yaml.safe_load(handle)
    members = sorted(name[:-3] for name in os.listdir(os.path.join(root, 'plugins', 'modules'))
                     if name.endswith('.py') and 'npuops.ascend.attributes.actiongroup_npu'
                     in open(os.path.join(root, 'plugins', 'modules', name)).read())
    # every module that documents membership of the group is in it, and only those
    assert sorted(runtime['action_groups']['npu']) == members
    assert members == ['hccn_config', 'hccn_info', 'hccn_ping', 'health_info', 'npu_info', 'numa_info']


def test_hccn_config_documents_exactly_the_table():
    from ansible_collections.npuops.ascend.plugins.module_utils._domain.port_table import PORTS
    suboptions = _doc(hccn_config)['options']['config']['suboptions']
    spec = PORTS.argspec()
    assert sorted(suboptions) == sorted(spec)
    for key, option in spec.items():
        assert suboptions[key]['type'] == option['type'], key
        assert suboptions[key].get('elements') == option.get('elements'), key
        assert bool(suboptions[key].get('required')) == bool(option.get('required')), key
        if 'options' in option:
            assert sorted(suboptions[key]['suboptions']) == sorted(option['options'])


def test_hccn_info_documents_its_queries_and_the_table_keys():
    doc = _doc(hccn_info)
    assert doc['options']['queries']['choices'] == hccn_info.ALL_QUERIES
    returned = set(yaml.safe_load(hccn_info.RETURN)['devices']['contains'])
    from ansible_collections.npuops.ascend.plugins.module_utils._domain.port_table import PORTS
    assert set(PORTS.keys) <= returned
