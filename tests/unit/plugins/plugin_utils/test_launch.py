"""Stage 6: the per-rank launch of a node from the binding map (plugins/plugin_utils/launch.py).

The map is built the way stage 6 builds it, from real captures of an Atlas 800T A2: ``numactl -H``
(tests/unit/fixtures/parsers/numa/numactl/atlas800t_a2_8node.txt) and ``npu-smi info -t topo``
(tests/unit/fixtures/parsers/npu_smi/topo/swift_910b3_24.1.rc1.txt), each with its .source file naming the capture.
"""

from __future__ import annotations

import os

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.npuops.ascend.plugins.module_utils._domain.numa_info import merge
from ansible_collections.npuops.ascend.plugins.module_utils._parsers.npu_smi import parse_topo
from ansible_collections.npuops.ascend.plugins.module_utils._parsers.numa import parse_numactl
from ansible_collections.npuops.ascend.plugins.plugin_utils import launch
from ansible_collections.npuops.ascend.plugins.plugin_utils.numa import numa_bind_map

FIXTURES = os.path.join(os.path.dirname(__file__), '..', '..', 'fixtures', 'parsers')


def _read(*parts):
    with open(os.path.join(FIXTURES, *parts), encoding='utf-8') as handle:
        return handle.read()


@pytest.fixture(scope='module')
def binding():
    """The binding map of an Atlas 800T A2 from the real numactl -H and npu-smi info -t topo captures."""
    numa = merge(parse_numactl(_read('numa', 'numactl', 'atlas800t_a2_8node.txt')), {},
                 parse_topo(_read('npu_smi', 'topo', 'swift_910b3_24.1.rc1.txt')))
    return numa_bind_map(numa, 8)


def test_the_map_of_the_captures_is_the_800t_a2_layout(binding):
    assert [(e['npu'], e['numa_node'], e['cpus']) for e in binding] == [
        (0, 6, '144-167'), (1, 6, '144-167'), (2, 4, '96-119'), (3, 4, '96-119'),
        (4, 0, '0-23'), (5, 0, '0-23'), (6, 2, '48-71'), (7, 2, '48-71')]


def test_each_rank_of_the_second_node_gets_its_npu_numa_node_and_half_of_its_cpus(binding):
    plan = launch.rank_launch(binding, 'node02', ['node01', 'node02'], '127.0.1.1')
    assert (plan['node_rank'], plan['nnodes'], plan['nproc_per_node'], plan['world_size']) == (1, 2, 8, 16)
    got = [(r['local_rank'], r['rank'], r['npu'], r['numa_node'], r['memory_node'], r['cpus'], r['omp_num_threads'])
           for r in plan['ranks']]
    assert got == [(0, 8, 0, 6, 6, '144-155', 12), (1, 9, 1, 6, 6, '156-167', 12),
                   (2, 10, 2, 4, 4, '96-107', 12), (3, 11, 3, 4, 4, '108-119', 12),
                   (4, 12, 4, 0, 0, '0-11', 12), (5, 13, 5, 0, 0, '12-23', 12),
                   (6, 14, 6, 2, 2, '48-59', 12), (7, 15, 7, 2, 2, '60-71', 12)]
    assert plan['ranks'][3]['numa_cpus'] == '96-119'
    assert plan['ranks'][3]['env'] == {'LOCAL_RANK': '3', 'RANK': '11', 'WORLD_SIZE': '16', 'LOCAL_WORLD_SIZE': '8',
                                       'MASTER_ADDR': '127.0.1.1', 'MASTER_PORT': '29500', 'OMP_NUM_THREADS': '12'}
    assert plan['torchrun'] == ['--nnodes=2', '--node_rank=1', '--nproc_per_node=8', '--master_addr=127.0.1.1',
                                '--master_port=29500']
    assert plan['msrun'] == ['--worker_num=16', '--local_worker_num=8', '--master_addr=127.0.1.1',
                             '--master_port=29500', '--node_rank=1']
    assert plan['cpu_affinity_conf'] is None  # off by default: torch_npu reads it from 6.0.0 on


@pytest.mark.parametrize('mode', [1, 2])
def test_cpu_affinity_conf_is_the_documented_format_with_each_npus_share(binding, mode):
    plan = launch.rank_launch(binding, 'node01', ['node01'], 'node01.example', 29600, affinity_mode=mode)
    conf = '%d,npu0:144-155,npu1:156-167,npu2:96-107,npu3:108-119,npu4:0-11,npu5:12-23,npu6:48-59,npu7:60-71' % mode
    assert plan['cpu_affinity_conf'] == conf
    assert all(rank['env']['CPU_AFFINITY_CONF'] == conf for rank in plan['ranks'])
    assert plan['ranks'][7]['env']['MASTER_PORT'] == '29600' and plan['ranks'][7]['rank'] == 7


def test_a_share_that_is_not_one_run_of_cpus_is_written_as_several_ranges():
    # a NUMA node whose CPUs are two runs (0-3 and 8-11) and three NPUs on it: 3, 3 and 2 CPUs (the first NPUs one more)
    binding = [{'npu': 0, 'numa_node': 0, 'cpus': '0-3,8-11'}, {'npu': 1, 'numa_node': 0, 'cpus': '0-3,8-11'},
               {'npu': 2, 'numa_node': 0, 'cpus': '0-3,8-11'}, {'npu': 3, 'numa_node': 1, 'cpus': '4'}]
    plan = launch.rank_launch(binding, 'a', ['a'], '10.0.0.1', npus_per_node=4, affinity_mode=1, method='taskset')
    assert [(r['cpus'], r['omp_num_threads'], r['memory_node']) for r in plan['ranks']] == [
        ('0-2', 3, None), ('3,8-9', 3, None), ('10-11', 2, None), ('4', 1, None)]
    assert plan['cpu_affinity_conf'] == '1,npu0:0-2,npu1:3-3,npu1:8-9,npu2:10-11,npu3:4-4'


def test_more_npus_than_cpus_on_a_node_still_gives_each_one_thread():
    binding = [{'npu': 0, 'numa_node': 0, 'cpus': '0'}, {'npu': 1, 'numa_node': 0, 'cpus': '0'}]
    plan = launch.rank_launch(binding, 'a', ['a'], 'a', npus_per_node=2)
    assert [(r['cpus'], r['omp_num_threads']) for r in plan['ranks']] == [('0', 1), ('0', 1)]


@pytest.mark.parametrize('binding, nodes, node, words', [
    ([{'npu': 0, 'numa_node': 6, 'cpus': '144-167'}], ['a'], 'a',
     'the binding map does not bind NPU 1 of the 2 NPUs per node, so its rank would run unbound'),
    ([], ['a'], 'a', 'the binding map lists no NPU'),
    ([{'npu': 0, 'numa_node': 6, 'cpus': '1'}, {'npu': 0, 'numa_node': 6, 'cpus': '1'}], ['a'], 'a',
     'the binding map lists NPU 0 twice'),
    ([{'npu': 0, 'numa_node': None, 'cpus': '1'}, {'npu': 1, 'numa_node': 6, 'cpus': '1'}], ['a'], 'a',
     'the binding map gives NPU 0 no NUMA node'),
    ([{'npu': 0, 'numa_node': 6, 'cpus': 'x'}, {'npu': 1, 'numa_node': 6, 'cpus': '1'}], ['a'], 'a',
     "the CPU list 'x' is not a list of CPU numbers"),
    ([{'npu': 0, 'numa_node': 6, 'cpus': '1'}, {'npu': 1, 'numa_node': 6, 'cpus': '1'}], ['a', 'b'], 'c',
     "c is not in the run's node list (a, b), so it has no node rank"),
    ([{'npu': 0, 'numa_node': 6, 'cpus': '1'}, {'npu': 1, 'numa_node': 6, 'cpus': '1'}], ['a', 'a'], 'a',
     'the node list names a node twice: a'),
])
def test_bad_input_is_a_clear_error(binding, nodes, node, words):
    with pytest.raises(AnsibleFilterError) as error:
        launch.rank_launch(binding, node, nodes, '10.0.0.1', npus_per_node=2)
    assert words in str(error.value)


@pytest.mark.parametrize('address, port, words', [
    ('', 29500, "the master address '' is not a host name or address"),
    ('10.0.0.1; reboot', 29500, 'is not a host name or address (no spaces or shell characters)'),
    ('10.0.0.1', 70000, 'the master port 70000 is not a port from 1 to 65535'),
])
def test_a_bad_master_is_a_clear_error(binding, address, port, words):
    with pytest.raises(AnsibleFilterError) as error:
        launch.rank_launch(binding, 'a', ['a'], address, port)
    assert words in str(error.value)


def test_the_master_address_comes_from_the_override_the_node_itself_or_the_first_nodes_record():
    records = {'node01': {'data': {'launch_addr': '127.0.1.1'}}}
    assert launch.master_address(' 192.0.2.9 ', ['node01', 'node02'], {}, 'node02') == '192.0.2.9'
    assert launch.master_address('', ['node01', 'node02'], {}, 'node01', '127.0.9.9') == '127.0.9.9'
    assert launch.master_address('', ['node01', 'node02'], records, 'node02', '127.0.1.2') == '127.0.1.1'
    with pytest.raises(AnsibleFilterError) as error:
        launch.master_address('', ['node01', 'node02'], {'node01': {'data': {}}}, 'node02', '127.0.1.2')
    assert ('the first node node01 has no launch address in its stage 6 record of this run' in str(error.value)
            and 'Set numa_bind_master_addr' in str(error.value))


def test_the_launch_document_names_the_map_and_the_launcher_first(binding):
    settings = {'map_path': '/etc/npuops/numa-bind.json', 'launcher_path': '/usr/local/bin/npu-bind',
                'method': 'numactl'}
    document = launch.launch_document(settings, {'nodes': ['n1'], 'master_addr': 'n1', 'npus_per_node': '8'},
                                      binding, 'n1')
    assert list(document)[:5] == ['managed_by', 'map', 'launcher', 'method', 'node']
    assert document['launcher'] == '/usr/local/bin/npu-bind' and len(document['ranks']) == 8
    assert document['cpu_affinity_ranges'].startswith('npu0:144-155,npu1:156-167,')


@pytest.mark.parametrize('changes, words', [
    ({}, None),
    ({'enabled': False, 'path': 'relative'}, None),
    ({'path': 'launch.json'}, "numa_bind_launch_path 'launch.json' is not an absolute file path"),
    ({'script_path': '/usr/local/bin/'}, "numa_bind_launch_script_path '/usr/local/bin/' is not an absolute file path"),
    ({'master_port': 0}, 'numa_bind_master_port 0 is not a port from 1 to 65535'),
    ({'affinity_mode': 3}, 'numa_bind_cpu_affinity_conf 3 is not 0 (off), 1 (coarse) or 2 (fine binding)'),
    ({'grace_seconds': -1}, 'numa_bind_launch_grace_seconds -1 is outside 0-3600'),
    ({'master_addr': 'a b'}, "numa_bind_master_addr 'a b' is not a host name or address"),
])
def test_launch_problems(changes, words):
    settings = dict({'enabled': True, 'path': '/etc/npuops/launch.json', 'script_path': '/usr/local/bin/npu-launch',
                     'master_port': 29500, 'affinity_mode': 0, 'grace_seconds': 10, 'master_addr': ''}, **changes)
    problems = launch.launch_problems(settings)
    assert problems == ([words] if words else [])
