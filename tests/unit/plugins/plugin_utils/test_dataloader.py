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
    with open(os.path.join(repo, 'plugins', 'action', 'stage_io.py'), encoding='utf-8') as handle:
        action = handle.read()
    # the arithmetic is the filter's function (the node's task of stage 8 runs it); the template only shows its result
    assert 'dataloader.dataloader_advice(' in action and '//' not in template and '.dataloader' in template


# ---- io_findings, the record and the report of a node (stage 8) ----------------------------------------------------

def io_read(**parts):
    """An io_info result in the module's shape: a clean node unless a part is given."""
    out = {'changed': False, 'cpus': 192, 'errors': [],
           'shm': {'path': '/dev/shm', 'mounted': True, 'size_mb': 1024.0, 'used_pct': 0.0, 'free_mb': 1024.0},
           'iostat': {'samples': 2, 'iowait_mean_pct': 0.25, 'iowait_max_pct': 0.5},
           'vmstat': {'samples': 2, 'wa_mean_pct': 0, 'wa_max_pct': 0},
           'fio': {'ran': False, 'skipped': 'no fio_file given', 'read_bw_mb_s': None, 'file': None}}
    out.update(parts)
    return out


def io_findings(io, **limits):
    from ansible_collections.npuops.ascend.plugins.plugin_utils.dataloader import io_findings as decide  # pylint: disable=import-outside-toplevel
    return decide(io, 'node01', **limits)


def test_a_clean_node_has_no_io_finding():
    assert io_findings(io_read()) == []


def test_each_io_limit_is_a_finding_with_the_value_and_the_limit_as_given():
    found = io_findings(io_read(
        shm={'path': '/dev/shm', 'mounted': True, 'size_mb': 512.0, 'used_pct': 100.0, 'free_mb': 0.0},
        iostat={'samples': 2, 'iowait_mean_pct': 20.5, 'iowait_max_pct': 22.0},
        vmstat={'samples': 2, 'wa_mean_pct': 19.5, 'wa_max_pct': 21},
        fio={'ran': True, 'read_bw_mb_s': 80.5, 'file': '/data/fio.test'},
        errors=[{'msg': 'iostat printed no CPU line'}]), fio_min_mb_s=100)
    assert [(f['check'], f['value'], f['expected'], f['severity']) for f in found] == [
        ('shm_size', 512.0, 1024.0, 'fail'), ('shm_used', 100.0, 90.0, 'fail'), ('iowait', 20.5, 5.0, 'fail'),
        ('wa', 19.5, 2.0, 'fail'), ('fio_bw', 80.5, 100.0, 'warn'), ('io_info', None, None, 'warn')]
    assert [f['msg'] for f in found] == [
        'node01: /dev/shm is 512.0 MB, below the minimum of 1 GB (1024.0 MB)',
        'node01: /dev/shm is 100.0 % used (0.0 MB free), above the limit of 90 %',
        'node01: iowait 20.5 % (mean of 2 samples, max 22.0 %) is not under the limit of 5 %',
        'node01: vmstat wa 19.5 % (mean of 2 samples, max 21 %) is above the limit of 2 %',
        'node01: fio read on /data/fio.test: aggregate bandwidth 80.5 MB/s is below the floor of 100 MB/s',
        'node01: iostat printed no CPU line']
    assert all(f['host'] == 'node01' and f['device'] is None for f in found)
    # the limits' text as the role's variables give them; the comparisons as numbers
    assert io_findings(io_read(shm={'path': '/dev/shm', 'mounted': True, 'size_mb': 1024.0, 'used_pct': 1.0,
                                    'free_mb': 1.0}), shm_min_gb='1.5')[0]['msg'] == (
        'node01: /dev/shm is 1024.0 MB, below the minimum of 1.5 GB (1536.0 MB)')
    # iowait at the limit fails (must be under it), wa at the limit passes (must not exceed it)
    edge = io_read(iostat={'samples': 2, 'iowait_mean_pct': 5.0, 'iowait_max_pct': 5.0},
                   vmstat={'samples': 2, 'wa_mean_pct': 2.0, 'wa_max_pct': 2.0})
    assert [f['check'] for f in io_findings(edge)] == ['iowait']
    # fio without a minimum only reports its bandwidth
    assert io_findings(io_read(fio={'ran': True, 'read_bw_mb_s': 1.0, 'file': '/x'})) == []


def test_an_unmounted_shm_and_tools_that_did_not_measure():
    found = io_findings(io_read(shm={'path': '/dev/shm', 'mounted': False, 'size_mb': None, 'used_pct': None,
                                     'free_mb': None},
                                iostat={'samples': 0, 'iowait_mean_pct': None, 'iowait_max_pct': None},
                                vmstat={'samples': 0, 'wa_mean_pct': None, 'wa_max_pct': None}))
    assert [(f['check'], f['value'], f['expected'], f['severity'], f['msg']) for f in found] == [
        ('shm_mounted', False, True, 'fail',
         'node01: /dev/shm is not mounted (expected a tmpfs of at least 1 GB for the DataLoader workers)'),
        ('iowait', None, 5.0, 'warn', 'node01: iowait not measured (iostat, package sysstat, missing or failed)'),
        ('wa', None, 2.0, 'warn', 'node01: vmstat wa not measured (vmstat, package procps, missing or failed)')]


def test_io_info_that_did_not_measure_is_one_failure():
    assert io_findings({'failed': False, 'msg': 'node01: df not found'}) == [{
        'host': 'node01', 'device': None, 'check': 'io_info', 'value': None, 'expected': 'a measurement',
        'severity': 'fail', 'msg': 'node01: io_info failed: node01: df not found'}]
    assert io_findings(None)[0]['msg'] == 'node01: io_info failed: no result'


def test_the_record_and_the_report_of_a_node():
    from ansible_collections.npuops.ascend.plugins.plugin_utils import dataloader  # pylint: disable=import-outside-toplevel
    io = io_read()
    data = dataloader.io_record_data(dict(io, failed=False, msg='measured'), {'workers': 8})
    assert data == {'io': dict((key, io[key]) for key in ('shm', 'vmstat', 'iostat', 'fio', 'cpus')),
                    'dataloader': {'workers': 8}}
    assert dataloader.io_record_data(None, None) == {'io': {}, 'dataloader': None}
    report = dataloader.io_report(io, {'workers': 8}, [], 'node01', 'R1', False, ['w'])
    assert report == {'host': 'node01', 'run': 'R1', 'check_mode': False, 'shm': io['shm'], 'vmstat': io['vmstat'],
                      'iostat': io['iostat'], 'fio': io['fio'], 'cpus': 192, 'dataloader': {'workers': 8},
                      'warnings': ['w'], 'findings': []}
    assert dataloader.io_report({}, None, [], 'node01', 'R1', True)['shm'] is None
    assert dataloader.shm_for_advice(io) == 1024.0
    assert dataloader.shm_for_advice(io_read(shm={'mounted': False, 'size_mb': 1024.0})) is None
    assert dataloader.shm_for_advice({}) is None


# ---- stage 8: disks (iostat -x) and the fio job group ----------------------------------------------------------------

def _decide(**kwargs):
    from ansible_collections.npuops.ascend.plugins.plugin_utils.dataloader import io_findings  # pylint: disable=import-outside-toplevel
    return io_findings(**kwargs)


def _io(devices=None, fio=None):
    return {'shm': {'path': '/dev/shm', 'mounted': True, 'size_mb': 2048.0, 'used_pct': 1.0, 'free_mb': 2000.0},
            'iostat': {'samples': 5, 'iowait_mean_pct': 0.3, 'iowait_max_pct': 0.4, 'devices': devices or []},
            'vmstat': {'samples': 5, 'wa_mean_pct': 0.0, 'wa_max_pct': 0}, 'fio': fio or {'ran': False}}


BUSY = {'device': 'nvme1n1', 'samples': 5, 'util_mean_pct': 99.2, 'util_max_pct': 99.6, 'await_mean_ms': 48.5,
        'await_max_ms': 61.0, 'r_await_mean_ms': 48.5, 'w_await_mean_ms': 0.0, 'queue_mean': 15.8}
CALM = {'device': 'sda', 'samples': 5, 'util_mean_pct': 3.0, 'util_max_pct': 4.0, 'await_mean_ms': 0.4,
        'await_max_ms': 0.6, 'r_await_mean_ms': 0.3, 'w_await_mean_ms': 0.5, 'queue_mean': 0.01}


def test_a_saturated_disk_is_two_warnings_naming_node_and_disk():
    found = _decide(io=_io([CALM, BUSY]), host='node-03')
    assert [(f['check'], f['value'], f['expected'], f['severity']) for f in found] == [
        ('disk_util', 99.2, 95.0, 'warn'), ('disk_await', 48.5, 20.0, 'warn')]
    assert found[0]['msg'].startswith('node-03: disk nvme1n1 is 99.2 % busy')
    assert 'limit of 95 %' in found[0]['msg'] and 'max 99.6 %' in found[0]['msg']
    assert 'disk nvme1n1: requests wait 48.5 ms' in found[1]['msg'] and 'limit of 20 ms' in found[1]['msg']


def test_disk_limits_are_the_operators_and_zero_turns_them_off():
    assert _decide(io=_io([BUSY]), host='n', disk_util_max_pct=0, disk_await_max_ms=0) == []
    assert [f['check'] for f in _decide(io=_io([CALM]), host='n', disk_util_max_pct=2.5)] == ['disk_util']
    # at the limit is a finding for %util (saturated), above it for await
    edge = dict(CALM, util_mean_pct=95.0, await_mean_ms=20.0)
    assert [f['check'] for f in _decide(io=_io([edge]), host='n')] == ['disk_util']


def test_fio_floors_and_latency_limit():
    fio = {'ran': True, 'file': '/data/npuops-fio.test', 'rw': 'read', 'numjobs': 4, 'iodepth': 16, 'block_size': '1M',
           'ioengine': 'libaio', 'bw_mb_s': 850.0, 'iops': 810.7, 'lat_mean_ms': 78.9, 'clat_p99_ms': 160.4}
    assert _decide(io=_io(fio=fio), host='n') == []          # floors 0: reported only
    found = _decide(io=_io(fio=fio), host='n', fio_min_mb_s=2000, fio_min_iops=1000, fio_max_lat_ms=50)
    assert [(f['check'], f['value'], f['expected']) for f in found] == [
        ('fio_bw', 850.0, 2000.0), ('fio_iops', 810.7, 1000.0), ('fio_lat', 78.9, 50.0)]
    assert found[0]['msg'] == ('n: fio read (4 jobs, iodepth 16, bs 1M, libaio) on /data/npuops-fio.test: aggregate '
                               'bandwidth 850.0 MB/s is below the floor of 2000 MB/s')
    assert '99th percentile completion 160.4 ms' in found[2]['msg']
