"""numa_info with a scripted run_command fed with real numactl, lscpu and npu-smi captures."""

from __future__ import annotations

from ansible_collections.npuops.ascend.plugins.modules import numa_info
from ansible_collections.npuops.ascend.tests.unit.plugins.modules.conftest import HOST, LSCPU, NPU_SMI, NUMACTL, TIMEOUT, sample

NUMACTL_H = sample('numa/numactl/atlas800t_a2_8node')        # Atlas 800T A2, 8 nodes x 24 CPUs
NUMACTL_WITH_NOTE = NUMACTL_H + '# Whitespace: node N cpus: lines have NO trailing space\n'  # + the annotation line after it
LSCPU_HOST = sample('numa/lscpu/blog_atlas800i_a2_new_layout')         # openEuler 22.03, sectioned layout
LSCPU_CONTAINER = sample('numa/lscpu/vllm198_container_flat')   # Ubuntu container, 'Socket(s): -'
TOPO = sample('npu_smi/topo/swift_910b3_24.1.rc1')
DEVICE_USED = sample('npu_smi/errors/device_used')

TOPO_ARGV = (NPU_SMI, 'info', '-t', 'topo')


def commands(numactl=NUMACTL_H, lscpu=LSCPU_HOST, topo=(0, TOPO, '')):
    return {(NUMACTL, '-H'): (0, numactl, ''), (LSCPU,): (0, lscpu, ''), TOPO_ARGV: topo}


def test_exact_argv_and_merged_result(run_module):
    res = run_module(numa_info, {}, commands())
    assert not res.failed, res
    # the three calls run concurrently, so their order is not fixed
    assert sorted(res.calls) == sorted([[NUMACTL, '-H'], [LSCPU], list(TOPO_ARGV)])
    result = res.result
    assert result['changed'] is False
    assert result['cpus_total'] == 192
    assert result['sockets'] == 4
    assert result['model_name'] == 'Kunpeng-920'
    assert [node['id'] for node in result['nodes']] == list(range(8))
    assert result['nodes'][0] == {'id': 0, 'cpus': list(range(24)), 'memory_mb': 193050, 'free_mb': 38779}
    assert result['nodes'][7]['cpus'] == list(range(168, 192))
    assert result['distances'][1][3] == 32
    assert sorted(result['npu']) == [str(npu) for npu in range(8)]
    assert result['npu']['0'] == {'numa_node': 6, 'cpus': list(range(144, 168)), 'cpu_affinity': '144-167'}
    assert {npu: entry['numa_node'] for npu, entry in result['npu'].items()} == {
        '0': 6, '1': 6, '2': 4, '3': 4, '4': 0, '5': 0, '6': 2, '7': 2}
    assert res.warnings == []


def test_three_tools_run_concurrently(run_module):
    res = run_module(numa_info, {}, commands(), delay=0.3)
    assert res.max_in_flight == 3
    assert res.elapsed < 0.8  # 0.9 s one after the other


def test_container_lscpu_without_sockets(run_module):
    res = run_module(numa_info, {}, commands(lscpu=LSCPU_CONTAINER))
    assert not res.failed, res
    assert res.result['sockets'] is None
    assert res.result['cpus_total'] == 192


def test_nodes_from_lscpu_when_numactl_lists_none(run_module):
    res = run_module(numa_info, {}, commands(numactl=''))
    assert not res.failed, res
    assert res.result['nodes'][2] == {'id': 2, 'cpus': list(range(48, 72)), 'memory_mb': None, 'free_mb': None}
    assert res.result['npu']['7']['numa_node'] == 2


def test_failing_npu_smi_still_gives_the_host_part(run_module):
    res = run_module(numa_info, {}, commands(topo=(172, DEVICE_USED, '')))
    assert not res.failed, res
    assert res.result['count'] == 0 and res.result['devices'] == {} and res.result['npu'] == {}
    assert [node['id'] for node in res.result['nodes']] == list(range(8))
    error = res.result['errors'][0]
    assert error['what'] == 'topo' and error['rc'] == 172 and error['cmd'] == '/usr/local/sbin/npu-smi info -t topo'
    assert error['msg'].startswith('node-07: /usr/local/sbin/npu-smi info -t topo failed (rc=172): dcmi model initialized failed')
    assert error['msg'].endswith('Another process or container holds the NPU: stop it, or run this where the device is visible.')
    assert res.warnings == [error['msg'] + ' The NUMA layout of the host is returned without the NPU affinity.']


def test_missing_npu_smi_still_gives_the_host_part(run_module):
    res = run_module(numa_info, {}, {(NUMACTL, '-H'): (0, NUMACTL_H, ''), (LSCPU,): (0, LSCPU_HOST, '')}, bin_paths={'npu-smi': None})
    assert not res.failed, res
    assert res.result['cpus_total'] == 192 and res.result['devices'] == {}
    assert 'npu-smi not found' in res.result['errors'][0]['msg']
    assert sorted(res.calls) == sorted([[NUMACTL, '-H'], [LSCPU]])


def test_missing_numactl(run_module):
    res = run_module(numa_info, {}, {}, bin_paths={'numactl': None})
    assert res.failed
    assert res.result['msg'].startswith(HOST + ': numactl not found: looked in /usr/local/Ascend/driver/tools')
    assert 'It comes with the numactl package; install it' in res.result['msg']
    assert res.calls == []


def test_timeout(run_module):
    prefix = (TIMEOUT, '-k', '5', '4')
    cmds = {prefix + (NUMACTL, '-H'): (124, '', ''), prefix + (LSCPU,): (0, LSCPU_HOST, ''), prefix + TOPO_ARGV: (0, TOPO, '')}
    res = run_module(numa_info, {'timeout': 4}, cmds, bin_paths={'timeout': TIMEOUT})
    assert res.failed
    assert res.result['msg'].startswith('node-07: /usr/bin/numactl -H timed out after 4 s.')
    assert res.result['cmd'] == '/usr/bin/numactl -H'
    assert res.result['rc'] == 124


def test_unparsed_output_warns_with_command(run_module):
    res = run_module(numa_info, {}, commands(numactl=NUMACTL_WITH_NOTE))
    assert not res.failed
    assert len(res.warnings) == 1
    assert '/usr/bin/numactl -H' in res.warnings[0]
    assert 'please report this with your driver version' in res.warnings[0]
