"""dataloader_advice: DataLoader workers per rank from the NUMA node the rank is bound to (stage 8's advice), on the
NUMA layout numa_info reads from real numactl, lscpu and npu-smi captures of an Atlas 800T A2 (8 NUMA nodes of 24
CPUs, two NPUs per even node)."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.npuops.ascend.plugins.modules import numa_info
from ansible_collections.npuops.ascend.tests.unit.plugins.modules.conftest import LSCPU, NPU_SMI, NUMACTL, sample

NUMACTL_H = sample('numa/numactl/atlas800t_a2_8node')
LSCPU_HOST = sample('numa/lscpu/blog_atlas800i_a2_new_layout')
TOPO = sample('npu_smi/topo/swift_910b3_24.1.rc1')


def advice(*args, **kwargs):
    from ansible_collections.npuops.ascend.plugins.plugin_utils.dataloader import dataloader_advice  # pylint: disable=import-outside-toplevel
    return dataloader_advice(*args, **kwargs)


@pytest.fixture
def a2(run_module):
    res = run_module(numa_info, {}, {(NUMACTL, '-H'): (0, NUMACTL_H, ''), (LSCPU,): (0, LSCPU_HOST, ''),
                                     (NPU_SMI, 'info', '-t', 'topo'): (0, TOPO, '')})
    assert not res.failed, res
    return res.result


def test_an_800t_a2_gets_8_workers_per_rank_not_12(a2):
    # stage 6 binds each rank to its NPU's NUMA node: 24 CPUs shared by the two ranks of NPUs 0 and 1 (node 6)
    out = advice(a2, 8, shm_mb=1024)
    assert out['workers'] == 8 and out['basis'] == 'numa'
    assert [(n['numa_node'], n['npus'], n['cpus'], n['cpus_per_rank'], n['workers']) for n in out['nodes']] == [
        (0, [4, 5], 24, 12, 8), (2, [6, 7], 24, 12, 8), (4, [2, 3], 24, 12, 8), (6, [0, 1], 24, 12, 8)]
    # two ranks of (8 workers + the main and task-queue threads) fit the 24 CPUs of their node; 2 x (12 + 2) did not
    assert all(n['ranks'] * (n['workers'] + n['reserved']) <= n['cpus'] for n in out['nodes'])
    assert out['nodes'][3]['text'] == (
        'NUMA node 6 (24 CPUs, 144-167) serves NPUs 0, 1: 24 CPUs / 2 ranks = 12 per rank, 2 of them for the rank\'s main '
        'thread and its task-queue thread, so num_workers=8 (the method: 4-8 per rank)')
    assert out['shm_mb_per_worker'] == 16.0  # 1024 MB / (8 ranks x 8 workers)


def test_the_method_range_and_the_reserved_cpus_are_options(a2):
    assert advice(a2, 8, workers=[4, 6])['workers'] == 6
    assert advice(a2, 8, reserved=6)['workers'] == 6      # 12 - 6


def test_a_crowded_numa_node_is_advised_below_the_method_and_says_so():
    # 8 CPUs per NUMA node, two NPUs on each: 4 per rank, 2 left after the rank's own threads
    numa = {'nodes': [{'id': 0, 'cpus': list(range(8))}, {'id': 1, 'cpus': list(range(8, 16))}],
            'npu': {'0': {'numa_node': 0}, '1': {'numa_node': 0}, '2': {'numa_node': 1}, '3': {'numa_node': 1}}}
    out = advice(numa, 4)
    assert out['workers'] == 2
    assert out['nodes'][0]['text'].endswith(
        'so num_workers=2, below the method\'s 4-8: the NUMA node has too few CPUs for its ranks (fewer ranks per NUMA '
        'node, or a host with more cores per node)')


def test_without_the_numa_layout_the_cpus_of_the_host_are_shared_and_it_says_so():
    out = advice({'failed': True, 'msg': 'numactl not found'}, 8, cpus=192)
    assert out['basis'] == 'cpus' and out['workers'] == 8
    assert out['nodes'][0]['text'] == (
        'no NUMA layout was read (numactl not found): 192 CPUs / 8 ranks = 24 per rank, 2 of them for the rank\'s main '
        'thread and its task-queue thread, so num_workers=8 (the method: 4-8 per rank); bind the ranks (stage 6) and '
        'count again per NUMA node')
    assert advice({}, 8)['workers'] is None


@pytest.mark.parametrize('kwargs, message', [
    ({'npus_per_node': 0}, 'npus_per_node must be a whole number of at least 1, got 0'),
    ({'workers': [8, 4]}, 'workers must be two whole numbers, the lower first, got [8, 4]'),
    ({'reserved': -1}, 'reserved must be a whole number of at least 0, got -1'),
])
def test_bad_options_are_errors(kwargs, message):
    options = dict({'npus_per_node': 8}, **kwargs)
    with pytest.raises(AnsibleFilterError, match=r'dataloader_advice: ' + message.replace('[', r'\[').replace(']', r'\]')):
        advice({}, **options)


def test_the_role_advises_from_the_numa_node():
    import os  # pylint: disable=import-outside-toplevel
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
    with open(os.path.join(repo, 'roles', 'io_check', 'templates', 'io_check.md.j2'), encoding='utf-8') as handle:
        template = handle.read()
    with open(os.path.join(repo, 'roles', 'io_check', 'tasks', 'measure.yml'), encoding='utf-8') as handle:
        tasks = handle.read()
    # the arithmetic is the filter's; the template only shows its result
    assert 'npuops.ascend.dataloader_advice' in tasks and '//' not in template and 'io_check_dataloader' in template
