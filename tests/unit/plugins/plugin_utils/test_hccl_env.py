"""The HCCL environment of a node (plugins/plugin_utils/hccl_env.py): a valid node, the rendering, auto algo, every refusal
as a whole sentence, what is at the file's path, and the environment against the NPU ports."""

from __future__ import annotations

import hashlib
import os

import pytest
import yaml
from ansible.errors import AnsibleFilterError

from ansible_collections.npuops.ascend.plugins.plugin_utils import hccl_env as hccl_env_module
from ansible_collections.npuops.ascend.plugins.plugin_utils import hccl_rules
from ansible_collections.npuops.ascend.plugins.plugin_utils.hccl_env import (
    hccl_env,
    hccl_env_file,
    hccl_env_findings,
    hccl_env_node_check,
    pod_check_message,
    problem_texts,
    check_data,
)
from ansible_collections.npuops.ascend.tests.unit.plugins.plugin_utils.roce_samples import H, info, only, port

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
TQ2_ADVICE = ('hccl_env_task_queue_enable 2: level 2, the level torch_npu recommends, takes effect only when the operators '
              'run as binaries (jit_compile=False, the default on Atlas A2 and A3) and may raise the peak NPU memory; set 1 '
              'if a job runs short of NPU memory')
TQ1_ADVICE = ('hccl_env_task_queue_enable 1: level 1 is what torch_npu uses when TASK_QUEUE_ENABLE is not set, so writing it '
              'changes nothing; torch_npu recommends 2')

PORTS = [{'device': d, 'address': '10.20.%d.11' % d, 'netmask': '255.255.255.0'} for d in range(8)]
CONTEXT = {
    'node_count': 4,
    'parameter_plane': '10.20.0.0/16',
    'npu_addresses': PORTS,
    'management_ifname': 'enp1s0',
    'product': 'Atlas 800T A2',
    'allow_loopback_if_ip': False,
    'lossless_priority': 4,
    'lossless_dscp': 33,
}
VALUES = {
    'if_ip': '192.168.1.11',
    'socket_ifname': None,
    'if_base_port': 60000,
    'connect_timeout': 1200,
    'exec_timeout': 1836,
    'buffsize': 200,
    'op_expansion_mode': 'HOST',
    'deterministic': False,
    'rdma_sl': 4,
    'rdma_tc': 132,
    'algo': 'level0:NA;level1:NHR',
    'task_queue_enable': 1,
    'pytorch_npu_alloc_conf': 'expandable_segments:True',
    'intra_roce_enable': '',
    'whitelist_disable': 1,
}
ENV = [
    ['HCCL_IF_IP', '192.168.1.11'],
    ['HCCL_IF_BASE_PORT', '60000'],
    ['HCCL_CONNECT_TIMEOUT', '1200'],
    ['HCCL_EXEC_TIMEOUT', '1836'],
    ['HCCL_BUFFSIZE', '200'],
    ['HCCL_OP_EXPANSION_MODE', 'HOST'],
    ['HCCL_DETERMINISTIC', 'false'],
    ['HCCL_RDMA_SL', '4'],
    ['HCCL_RDMA_TC', '132'],
    ['HCCL_ALGO', 'level0:NA;level1:NHR'],
    ['HCCL_WHITELIST_DISABLE', '1'],
    ['TASK_QUEUE_ENABLE', '1'],
    ['PYTORCH_NPU_ALLOC_CONF', 'expandable_segments:True'],
]


def _env(values, **context):
    return hccl_env(values, dict(CONTEXT, **context))


# --- valid settings ---------------------------------------------------------------------------------------------

def test_a_valid_node_renders_in_the_fixed_order():
    result = _env(VALUES)
    assert result['problems'] == []
    assert result['env'] == ENV
    assert result['advice'] == [
        'hccl_env_if_base_port 60000: reserve the ports HCCL listens on so no other program takes them: sysctl -w '
        'net.ipv4.ip_local_reserved_ports=60000-60031',
        'hccl_env_algo level0:NA;level1:NHR: an explicit HCCL_ALGO turns off the adaptive algorithm selection of HCCL for the '
        'operators it covers',
        TQ1_ADVICE,
    ]
    assert result['algo'] == {'setting': 'level0:NA;level1:NHR', 'value': 'level0:NA;level1:NHR',
                              'why': 'an explicit HCCL_ALGO turns off the adaptive algorithm selection of HCCL for the '
                                     'operators it covers'}
    assert result['file'] is None


def test_the_order_does_not_depend_on_the_order_of_the_input():
    assert _env(dict(reversed(list(VALUES.items()))))['env'] == ENV


NOTHING = {'env': [], 'problems': [], 'advice': [], 'algo': None, 'file': None}


def test_nothing_set_writes_nothing():
    assert _env({}) == NOTHING
    assert _env({key: None for key in VALUES}) == NOTHING
    assert _env({key: '' for key in VALUES}) == NOTHING


def test_a_context_is_optional():
    assert hccl_env({'buffsize': 300})['env'] == [['HCCL_BUFFSIZE', '300']]


def test_strings_of_digits_and_booleans_are_accepted():
    result = _env({'buffsize': '400', 'rdma_sl': '4', 'rdma_tc': '132', 'deterministic': True, 'whitelist_disable': True,
                   'task_queue_enable': '0', 'connect_timeout': ' 120 '})
    assert result['problems'] == []
    assert result['env'] == [['HCCL_CONNECT_TIMEOUT', '120'], ['HCCL_BUFFSIZE', '400'], ['HCCL_DETERMINISTIC', 'true'],
                             ['HCCL_RDMA_SL', '4'], ['HCCL_RDMA_TC', '132'], ['HCCL_WHITELIST_DISABLE', '1'],
                             ['TASK_QUEUE_ENABLE', '0']]


@pytest.mark.parametrize('suffix, value, name, rendered', [
    ('if_ip', 'fd00::11', 'HCCL_IF_IP', 'fd00::11'),
    ('if_ip', ' 192.168.1.11 ', 'HCCL_IF_IP', '192.168.1.11'),
    ('socket_ifname', 'eth,enp189', 'HCCL_SOCKET_IFNAME', 'eth,enp189'),
    ('socket_ifname', '=enp189s0f0', 'HCCL_SOCKET_IFNAME', '=enp189s0f0'),
    ('socket_ifname', '^lo,docker0,enp1s0', 'HCCL_SOCKET_IFNAME', '^lo,docker0,enp1s0'),
    ('if_base_port', 1024, 'HCCL_IF_BASE_PORT', '1024'),
    ('connect_timeout', 7200, 'HCCL_CONNECT_TIMEOUT', '7200'),
    ('exec_timeout', 0, 'HCCL_EXEC_TIMEOUT', '0'),
    ('exec_timeout', 2147483647, 'HCCL_EXEC_TIMEOUT', '2147483647'),
    ('buffsize', 1, 'HCCL_BUFFSIZE', '1'),
    ('buffsize', 32768, 'HCCL_BUFFSIZE', '32768'),
    ('op_expansion_mode', 'AI_CPU', 'HCCL_OP_EXPANSION_MODE', 'AI_CPU'),
    ('op_expansion_mode', 'HOST_TS', 'HCCL_OP_EXPANSION_MODE', 'HOST_TS'),
    ('deterministic', 'strict', 'HCCL_DETERMINISTIC', 'strict'),
    ('algo', 'level0:NA;level1:H-D_R;level2:NHR', 'HCCL_ALGO', 'level0:NA;level1:H-D_R;level2:NHR'),
    ('algo', 'allreduce=level0:NA;level1:ring/allgather=level0:NA;level1:H-D_R', 'HCCL_ALGO',
     'allreduce=level0:NA;level1:ring/allgather=level0:NA;level1:H-D_R'),
    ('algo', 'alltoall=level0:NA;level1:pairwise/reducescatter=level0:NA;level1:NB', 'HCCL_ALGO',
     'alltoall=level0:NA;level1:pairwise/reducescatter=level0:NA;level1:NB'),
    ('task_queue_enable', 2, 'TASK_QUEUE_ENABLE', '2'),
    ('pytorch_npu_alloc_conf', 'max_split_size_mb:32,garbage_collection_threshold:0.6', 'PYTORCH_NPU_ALLOC_CONF',
     'max_split_size_mb:32,garbage_collection_threshold:0.6'),
    ('pytorch_npu_alloc_conf', 'expandable_segments:True,base_addr_aligned_kb:16,page_size:1g', 'PYTORCH_NPU_ALLOC_CONF',
     'expandable_segments:True,base_addr_aligned_kb:16,page_size:1g'),
    ('pytorch_npu_alloc_conf', 'roundup_power2_divisions:[256:1,512:2,1024:4,>:8],per_process_memory_fraction:0.5',
     'PYTORCH_NPU_ALLOC_CONF', 'roundup_power2_divisions:[256:1,512:2,1024:4,>:8],per_process_memory_fraction:0.5'),
    ('pytorch_npu_alloc_conf', {'expandable_segments': True, 'multi_stream_lazy_reclaim': False}, 'PYTORCH_NPU_ALLOC_CONF',
     'expandable_segments:True,multi_stream_lazy_reclaim:False'),
    ('whitelist_disable', 0, 'HCCL_WHITELIST_DISABLE', '0'),
])
def test_valid_setting(suffix, value, name, rendered):
    result = _env({suffix: value})
    assert result['problems'] == []
    assert result['env'] == [[name, rendered]]


def test_loopback_if_ip_on_the_simulated_pod():
    assert _env({'if_ip': '127.0.6.2'}, allow_loopback_if_ip=True)['env'] == [['HCCL_IF_IP', '127.0.6.2']]


def test_intra_roce_enable_where_it_applies():
    result = _env({'intra_roce_enable': 1}, product='Atlas 300T Pro')
    assert result == dict(NOTHING, env=[['HCCL_INTRA_ROCE_ENABLE', '1']], advice=[
        'hccl_env_intra_roce_enable 1: set HCCL_INTRA_PCIE_ENABLE to 0 as well (not written by this role): both 1, or one of '
        'them 0 with the other unset, is not supported'])
    assert _env({'intra_roce_enable': 0}, product='Atlas 800T A3')['env'] == [['HCCL_INTRA_ROCE_ENABLE', '0']]


# --- advice -----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize('values, advice', [
    ({'op_expansion_mode': 'AIV'},
     'hccl_env_op_expansion_mode AIV: on Atlas A2 servers (Atlas 800T A2) the CANN documentation gives AIV for inference '
     'only, not for training, and not for several communicators at once'),
    ({'op_expansion_mode': 'AIV', 'exec_timeout': 0},
     'hccl_env_exec_timeout 0: with HCCL_OP_EXPANSION_MODE AIV HCCL waits at most 1091 seconds (0 and anything above 1091 '
     'count as 1091), so HCCL_EXEC_TIMEOUT=1091 is written'),
    ({'op_expansion_mode': 'AIV', 'deterministic': 'true'},
     'hccl_env_op_expansion_mode AIV: HCCL ignores AIV while HCCL_DETERMINISTIC is true'),
    ({'if_ip': '192.168.1.11', 'socket_ifname': 'enp189s0f0'},
     'hccl_env_socket_ifname: HCCL_IF_IP is set as well and comes first, so HCCL does not use HCCL_SOCKET_IFNAME'),
    ({'if_base_port': 65510},
     'hccl_env_if_base_port 65510: HCCL uses the 32 ports 65510-65541 and the last of them lie above 65535; HCCL accepts '
     'bases up to 65520 (a range from the time it used 16 ports), keep it at most 65504'),
    ({'whitelist_disable': 0},
     'hccl_env_whitelist_disable 0: the whitelist check is on, so HCCL needs HCCL_WHITELIST_FILE, which this role does not '
     'write'),
    ({'task_queue_enable': 2}, TQ2_ADVICE),
    ({'task_queue_enable': 1}, TQ1_ADVICE),
    ({'pytorch_npu_alloc_conf': 'expandable_segments:True,segment_size_mb:40'},
     'hccl_env_pytorch_npu_alloc_conf: segment_size_mb is deprecated, large_segment_size_mb replaces it'),
])
def test_advice(values, advice):
    result = _env(values)
    assert result['problems'] == []
    assert advice in result['advice']


# --- HCCL_EXEC_TIMEOUT: what CANN does with it in each expansion mode --------------------------------------------------

AIV_CAP = ('hccl_env_exec_timeout %s: with HCCL_OP_EXPANSION_MODE AIV HCCL waits at most 1091 seconds (0 and anything '
           'above 1091 count as 1091), so HCCL_EXEC_TIMEOUT=1091 is written')


@pytest.mark.parametrize('value', [1092, 2000, '2000', 1091.5, 2147483647])
def test_aiv_exec_timeout_above_1091_is_what_cann_uses(value):
    """CANN clamps HCCL_EXEC_TIMEOUT to 1091 in AIV mode: not an error; the file says what HCCL will use."""
    result = _env({'op_expansion_mode': 'AIV', 'exec_timeout': value})
    assert result['problems'] == []
    assert result['env'] == [['HCCL_EXEC_TIMEOUT', '1091'], ['HCCL_OP_EXPANSION_MODE', 'AIV']]
    assert AIV_CAP % value in result['advice']


@pytest.mark.parametrize('value, rendered', [
    (1091, '1091'), (0.05, '0.05'), ('0.05', '0.05'), (12.5, '12.5'), ('1.50', '1.5'), ('30.00', '30'), (1, '1'),
    ('0.01', '0.01'), (' 7.25 ', '7.25'),
])
def test_aiv_exec_timeout_takes_10_ms_steps(value, rendered):
    result = _env({'op_expansion_mode': 'AIV', 'exec_timeout': value})
    assert result['problems'] == []
    assert result['env'] == [['HCCL_EXEC_TIMEOUT', rendered], ['HCCL_OP_EXPANSION_MODE', 'AIV']]
    assert not [line for line in result['advice'] if line.startswith('hccl_env_exec_timeout')]


def test_ai_cpu_exec_timeout_takes_10_ms_steps_on_a3_only():
    a3 = _env({'op_expansion_mode': 'AI_CPU', 'exec_timeout': 0.05}, product_family='A3')
    assert a3['problems'] == []
    assert a3['env'] == [['HCCL_EXEC_TIMEOUT', '0.05'], ['HCCL_OP_EXPANSION_MODE', 'AI_CPU']]
    a2 = _env({'op_expansion_mode': 'AI_CPU', 'exec_timeout': 0.05}, product_family='A2')
    assert [p['variable'] for p in a2['problems']] == ['hccl_env_exec_timeout']
    assert 'is not a whole number of seconds' in a2['problems'][0]['problem']


@pytest.mark.parametrize('mode', ['HOST', 'HOST_TS', None])
def test_host_exec_timeout_takes_whole_seconds(mode):
    result = _env({'op_expansion_mode': mode, 'exec_timeout': 1836.5})
    assert result['problems'][0]['problem'].startswith('hccl_env_exec_timeout 1836.5 is not a whole number of seconds')
    assert _env({'op_expansion_mode': mode, 'exec_timeout': 1836})['problems'] == []


@pytest.mark.parametrize('value', [0.005, '0.125', '1091.001'])
def test_aiv_exec_timeout_has_a_precision_of_10_ms(value):
    result = _env({'op_expansion_mode': 'AIV', 'exec_timeout': value})
    assert result['env'] == [['HCCL_OP_EXPANSION_MODE', 'AIV']]
    assert result['problems'] == [{
        'variable': 'hccl_env_exec_timeout', 'value': value,
        'problem': 'hccl_env_exec_timeout %r has more than two decimals: HCCL_EXEC_TIMEOUT has a precision of 10 ms (0.01 s) '
                   'in AIV mode' % (value,)}]


@pytest.mark.parametrize('value', [-1, '-0.5', 2147483648])
def test_aiv_exec_timeout_out_of_range(value):
    result = _env({'op_expansion_mode': 'AIV', 'exec_timeout': value})
    assert result['problems'][0]['problem'] == (
        'hccl_env_exec_timeout %r is outside 0-2147483647: HCCL_EXEC_TIMEOUT is in seconds, 0 means no limit' % (value,))


# --- auto algo: HCCL_ALGO only where HCCL does not choose the algorithm itself -------------------------------------------

ADAPTIVE = ('HCCL_ALGO is not written: on Atlas %s HCCL chooses the algorithm itself from the product, the number of '
            'servers and the data size, and a set HCCL_ALGO would turn that off')


@pytest.mark.parametrize('family', ['A2', 'A3'])
@pytest.mark.parametrize('nodes', [1, 2, 3, 4, 5, 6, 8, 12, None])
def test_auto_algo_leaves_the_adaptive_selection_on_a2_and_a3(family, nodes):
    result = _env({'algo': 'auto'}, node_count=nodes, product_family=family)
    assert result['problems'] == [] and result['env'] == []
    assert result['advice'] == ['hccl_env_algo auto: ' + ADAPTIVE % family]
    assert result['algo'] == {'setting': 'auto', 'value': None, 'why': ADAPTIVE % family}


def test_auto_algo_on_the_default_family_is_the_a2():
    assert _env({'algo': 'auto'}, node_count=3)['env'] == []
    assert hccl_env({'algo': 'auto'})['algo']['why'] == ADAPTIVE % 'A2'


@pytest.mark.parametrize('nodes, env, why', [
    (3, [['HCCL_ALGO', 'level0:NA;level1:NHR']],
     'HCCL_ALGO=level0:NA;level1:NHR for 3 nodes: without HCCL_ALGO the 910A uses ring for a node count that is not a '
     'power of two (steps linear in the node count); NHR takes a logarithmic number of steps at any node count'),
    (6, [['HCCL_ALGO', 'level0:NA;level1:NHR']],
     'HCCL_ALGO=level0:NA;level1:NHR for 6 nodes: without HCCL_ALGO the 910A uses ring for a node count that is not a '
     'power of two (steps linear in the node count); NHR takes a logarithmic number of steps at any node count'),
    (4, [], 'HCCL_ALGO is not written for 4 nodes (a power of two): without it the 910A uses H-D_R, which suits that count'),
    (1, [], 'HCCL_ALGO is not written for 1 node (a power of two): without it the 910A uses H-D_R, which suits that count'),
])
def test_auto_algo_on_the_910a(nodes, env, why):
    result = _env({'algo': 'auto'}, node_count=nodes, product_family='910A')
    assert result['problems'] == []
    assert result['env'] == env
    assert result['advice'] == ['hccl_env_algo auto: ' + why]
    assert result['algo'] == {'setting': 'auto', 'value': env[0][1] if env else None, 'why': why}


@pytest.mark.parametrize('family', ['310P', '310', '310B'])
def test_auto_algo_without_roce_ports(family):
    result = _env({'algo': 'auto'}, node_count=3, product_family=family)
    assert result['env'] == [] and result['problems'] == []
    assert result['algo']['why'] == ('HCCL_ALGO is not written: a %s node has no RoCE ports, so HCCL has no traffic between '
                                     'servers (level1) to choose an algorithm for' % family)


def test_auto_algo_on_the_910a_needs_the_node_count():
    assert _env({'algo': 'auto'}, node_count=None, product_family='910A')['problems'] == [{
        'variable': 'hccl_env_algo', 'value': 'auto',
        'problem': "hccl_env_algo 'auto' needs the number of nodes on the 910A: auto chooses HCCL_ALGO from the context "
                   "node_count, which is not given"}]


def test_an_explicit_algo_is_written_on_every_family():
    for family in ('A2', 'A3', '910A'):
        assert _env({'algo': 'level0:NA;level1:ring'}, product_family=family)['env'] == [
            ['HCCL_ALGO', 'level0:NA;level1:ring']]


# --- TASK_QUEUE_ENABLE and the role's defaults ------------------------------------------------------------------------

def test_task_queue_levels():
    for level in (0, 1, 2, '2'):
        assert _env({'task_queue_enable': level})['env'] == [['TASK_QUEUE_ENABLE', str(level)]]


def _role_file(*parts):
    return os.path.join(REPO, 'roles', 'hccl_env', *parts)


def test_role_defaults_are_the_sourced_values():
    """TASK_QUEUE_ENABLE 2 (torch_npu's recommended level; 1 is its own default) and HCCL_CONNECT_TIMEOUT 1200 (the CANN
    recommendation for training), the same in defaults/main.yml and meta/argument_specs.yml."""
    with open(_role_file('defaults', 'main.yml'), encoding='utf-8') as handle:
        defaults = yaml.safe_load(handle)
    with open(_role_file('meta', 'argument_specs.yml'), encoding='utf-8') as handle:
        options = yaml.safe_load(handle)['argument_specs']['main']['options']
    assert defaults['hccl_env_task_queue_enable'] == 2
    assert defaults['hccl_env_connect_timeout'] == 1200
    for name in ('hccl_env_task_queue_enable', 'hccl_env_connect_timeout', 'hccl_env_algo', 'hccl_env_mode',
                 'hccl_env_owner', 'hccl_env_group', 'hccl_env_path'):
        assert options[name]['default'] == defaults[name], name
    result = hccl_env({'task_queue_enable': defaults['hccl_env_task_queue_enable'],
                       'connect_timeout': defaults['hccl_env_connect_timeout'], 'algo': defaults['hccl_env_algo']},
                      dict(CONTEXT, node_count=3),
                      {'path': defaults['hccl_env_path'], 'owner': defaults['hccl_env_owner'],
                       'group': defaults['hccl_env_group'], 'mode': defaults['hccl_env_mode']})
    assert result['problems'] == []
    assert result['env'] == [['HCCL_CONNECT_TIMEOUT', '1200'], ['TASK_QUEUE_ENABLE', '2']]
    assert result['file'] == {'path': '/etc/profile.d/npuops-hccl.sh', 'owner': 'root', 'group': 'root', 'mode': '0644'}
    assert TQ2_ADVICE in result['advice']


# --- the file itself: path, owner, group and mode (root sources it) -------------------------------------------------------

FILE = {'path': '/etc/profile.d/npuops-hccl.sh', 'owner': 'root', 'group': 'root', 'mode': '0644'}


def _file(**settings):
    return hccl_env({}, CONTEXT, dict(FILE, **settings))


@pytest.mark.parametrize('settings, normal', [
    ({}, FILE),
    ({'mode': '644'}, dict(FILE, mode='0644')),
    ({'mode': 420}, dict(FILE, mode='0644')),            # YAML 1.1 reads an unquoted 0644 as 420
    ({'mode': '0640', 'group': 'hccl'}, dict(FILE, mode='0640', group='hccl')),
    ({'mode': '0600'}, dict(FILE, mode='0600')),
    ({'mode': '0444'}, dict(FILE, mode='0444')),
    ({'owner': 0, 'group': 0}, dict(FILE, owner='0', group='0')),
    ({'owner': '0', 'group': '1001'}, dict(FILE, owner='0', group='1001')),
    ({'path': '/opt/npuops/env/hccl.sh'}, dict(FILE, path='/opt/npuops/env/hccl.sh')),
    ({'path': ' /etc/profile.d/npuops-hccl.sh '}, FILE),
])
def test_file_settings_accepted(settings, normal):
    result = _file(**settings)
    assert result['problems'] == []
    assert result['file'] == normal


def test_missing_file_settings_take_the_role_defaults():
    assert hccl_env({}, CONTEXT, {})['file'] == FILE
    assert hccl_env({}, CONTEXT, {'mode': '0640'})['file'] == dict(FILE, mode='0640')


WRITE_FIX = ('root sources it (login shells read /etc/profile.d, and the launch scripts), so a write bit for them lets them '
             'run commands as root; use 0644 (or 0640 or 0600)')
NOT_OCTAL = "is not an octal file mode: give 3 or 4 octal digits as a string, such as '0644'"
OWNER_FIX = ("is not root: root's login shells (a file in /etc/profile.d) and the launch scripts source this file, so its "
             "owner could run commands as root; leave it root")
PLAIN_FIX = ("is not a plain file path: no '.' or '..' parts, no '//', no trailing '/', no blanks or control characters; "
             "write it as /etc/profile.d/npuops-hccl.sh")
BAD_FILE = [
    ('mode', '0666', "hccl_env_mode '0666' lets the group and other users write the file: " + WRITE_FIX),
    ('mode', '0664', "hccl_env_mode '0664' lets the group write the file: " + WRITE_FIX),
    ('mode', '0646', "hccl_env_mode '0646' lets other users write the file: " + WRITE_FIX),
    ('mode', '0777', "hccl_env_mode '0777' lets the group and other users write the file: " + WRITE_FIX),
    ('mode', '0622', "hccl_env_mode '0622' lets the group and other users write the file: " + WRITE_FIX),
    ('mode', '4755', "hccl_env_mode '4755' sets the setuid bit: the file is sourced, never run, so it takes no setuid, "
                     "setgid or sticky bit; use 0644"),
    ('mode', '3644', "hccl_env_mode '3644' sets the setgid and sticky bits: the file is sourced, never run, so it takes no "
                     "setuid, setgid or sticky bit; use 0644"),
    ('mode', 'u=rw,go=r', "hccl_env_mode 'u=rw,go=r' " + NOT_OCTAL),
    ('mode', '0648', "hccl_env_mode '0648' " + NOT_OCTAL),
    ('mode', '00644', "hccl_env_mode '00644' " + NOT_OCTAL),
    ('mode', 'preserve', "hccl_env_mode 'preserve' " + NOT_OCTAL),
    ('mode', '', "hccl_env_mode '' " + NOT_OCTAL),
    ('mode', None, 'hccl_env_mode None ' + NOT_OCTAL),
    ('mode', True, 'hccl_env_mode True ' + NOT_OCTAL),
    ('mode', 6.44, 'hccl_env_mode 6.44 ' + NOT_OCTAL),
    ('mode', 99999, 'hccl_env_mode 99999 ' + NOT_OCTAL),
    ('mode', 644, "hccl_env_mode 644 is a number, which Ansible applies as the mode 1204: it sets the sticky bit; write the "
                  "mode as a string, such as '0644'"),
    ('mode', 438, "hccl_env_mode 438 is a number, which Ansible applies as the mode 0666: it lets the group and other users "
                  "write the file; write the mode as a string, such as '0644'"),
    ('owner', 'nosuchuser', "hccl_env_owner 'nosuchuser' " + OWNER_FIX),
    ('owner', 'npuops', "hccl_env_owner 'npuops' " + OWNER_FIX),
    ('owner', 1000, 'hccl_env_owner 1000 ' + OWNER_FIX),
    ('owner', None, 'hccl_env_owner None ' + OWNER_FIX),
    ('owner', False, 'hccl_env_owner False ' + OWNER_FIX),
    ('owner', 0.0, 'hccl_env_owner 0.0 ' + OWNER_FIX),
    ('owner', 'root ; id', "hccl_env_owner 'root ; id' " + OWNER_FIX),
    ('group', 'a;b', "hccl_env_group 'a;b' is not a group name or number"),
    ('group', '', "hccl_env_group '' is not a group name or number"),
    ('group', None, 'hccl_env_group None is not a group name or number'),
    ('group', ['root'], "hccl_env_group ['root'] is not a group name or number"),
    ('group', -1, 'hccl_env_group -1 is not a group name or number'),
    ('path', 'npuops-hccl.sh',
     "hccl_env_path 'npuops-hccl.sh' is not an absolute path: a relative path is taken from the home directory of the "
     "connection user on each node (/root/npuops-hccl.sh for root), not a place the launch scripts read; give the full "
     "path, such as /etc/profile.d/npuops-hccl.sh"),
    ('path', 'profile.d/npuops-hccl.sh',
     "hccl_env_path 'profile.d/npuops-hccl.sh' is not an absolute path: a relative path is taken from the home directory "
     "of the connection user on each node (/root/profile.d/npuops-hccl.sh for root), not a place the launch scripts read; "
     "give the full path, such as /etc/profile.d/npuops-hccl.sh"),
    ('path', '~/npuops-hccl.sh',
     "hccl_env_path '~/npuops-hccl.sh' is not an absolute path: a relative path is taken from the home directory of the "
     "connection user on each node (/root/~/npuops-hccl.sh for root), not a place the launch scripts read; give the full "
     "path, such as /etc/profile.d/npuops-hccl.sh"),
    ('path', '/etc/profile.d/../npuops-hccl.sh', "hccl_env_path '/etc/profile.d/../npuops-hccl.sh' " + PLAIN_FIX),
    ('path', '/etc/profile.d/./npuops-hccl.sh', "hccl_env_path '/etc/profile.d/./npuops-hccl.sh' " + PLAIN_FIX),
    ('path', '/etc//profile.d/npuops-hccl.sh', "hccl_env_path '/etc//profile.d/npuops-hccl.sh' " + PLAIN_FIX),
    ('path', '/etc/profile.d/', "hccl_env_path '/etc/profile.d/' " + PLAIN_FIX),
    ('path', '/', "hccl_env_path '/' " + PLAIN_FIX),
    ('path', '/etc/profile.d/npuops hccl.sh', "hccl_env_path '/etc/profile.d/npuops hccl.sh' " + PLAIN_FIX),
    ('path', '/etc/profile.d/x.sh\n/etc/passwd', "hccl_env_path '/etc/profile.d/x.sh\\n/etc/passwd' " + PLAIN_FIX),
    ('path', '', "hccl_env_path '' is not a file path: give the absolute path of the file, such as "
                 "/etc/profile.d/npuops-hccl.sh"),
    ('path', None, 'hccl_env_path None is not a file path: give the absolute path of the file, such as '
                   '/etc/profile.d/npuops-hccl.sh'),
    ('path', 5, 'hccl_env_path 5 is not a file path: give the absolute path of the file, such as /etc/profile.d/npuops-hccl.sh'),
]


@pytest.mark.parametrize('key, value, message', BAD_FILE, ids=['%s=%r' % (key, value) for key, value, _m in BAD_FILE])
def test_refused_file_setting(key, value, message):
    result = _file(**{key: value})
    assert result['problems'] == [{'variable': 'hccl_env_' + key, 'value': value, 'problem': message}]
    assert result['file'] is None


def test_file_problems_come_with_the_others():
    result = hccl_env({'buffsize': 0}, CONTEXT, dict(FILE, mode='0666', owner='nobody'))
    assert [p['variable'] for p in result['problems']] == ['hccl_env_buffsize', 'hccl_env_owner', 'hccl_env_mode']
    assert result['file'] is None


@pytest.mark.parametrize('settings, advice', [
    ({'mode': '0640'}, "hccl_env_mode '0640': only root and the group root can read the file, so a launch script running "
                       "as another user cannot source it"),
    ({'mode': '0640', 'group': 'hccl'}, "hccl_env_mode '0640': only root and the group hccl can read the file, so a launch "
                                        "script running as another user cannot source it"),
    ({'mode': '0600'}, "hccl_env_mode '0600': only root can read the file, so a launch script running as another user "
                       "cannot source it"),
    ({'path': '/etc/profile.d/npuops-hccl'}, "hccl_env_path '/etc/profile.d/npuops-hccl': login shells read only the *.sh "
                                             "files of /etc/profile.d, so only the launch scripts that source it load it"),
])
def test_file_advice(settings, advice):
    result = _file(**settings)
    assert result['problems'] == []
    assert advice in result['advice']


def test_the_default_file_gets_no_advice():
    assert _file()['advice'] == []


def test_file_settings_argument_errors():
    with pytest.raises(AnsibleFilterError) as error:
        hccl_env({}, CONTEXT, {'path': '/x.sh', 'perms': '0644'})
    assert str(error.value) == 'hccl_env: file key perms is not known: the keys are path, owner, group, mode'
    with pytest.raises(AnsibleFilterError) as error:
        hccl_env({}, CONTEXT, '/etc/profile.d/npuops-hccl.sh')
    assert str(error.value) == ("hccl_env: file '/etc/profile.d/npuops-hccl.sh' is not a dict of path, owner, group, mode")


# --- what is at the path on the node (hccl_env_node_check) ---------------------------------------------------------------

def _stat(**stat):
    return {'changed': False, 'stat': stat}


REG = _stat(exists=True, islnk=False, isreg=True, isdir=False, mode='0644', uid=0, pw_name='root')
ETC = _stat(exists=True, islnk=False, isreg=False, isdir=True, mode='0755', uid=0, pw_name='root')
MISSING = _stat(exists=False)
SKIPPED = {'changed': False, 'skipped': True, 'skip_reason': 'Conditional result was False'}
GROUP_FOUND = {'changed': False, 'ansible_facts': {'getent_group': {'hccl': ['x', '1001', '']}}}
GROUP_MISSING = {'changed': False, 'ansible_facts': {'getent_group': {'nosuchgroup': None}},
                 'msg': 'One or more supplied key could not be found in the database.'}
SYMLINK_FIX = ('the file root sources is written only as a regular file, never through or in place of a link; remove the '
               'link or set hccl_env_path to another file')


def _checked(path_stat, dir_stat=None, group_entry=None, **settings):
    return hccl_env_node_check(_file(**settings), path_stat, ETC if dir_stat is None else dir_stat,
                               SKIPPED if group_entry is None else group_entry)


@pytest.mark.parametrize('path_stat, dir_stat, group, settings', [
    (REG, ETC, SKIPPED, {}),
    (MISSING, ETC, SKIPPED, {}),
    (MISSING, ETC, GROUP_FOUND, {'group': 'hccl'}),
    (REG, _stat(exists=True, isdir=True, islnk=False, mode='0755', uid=0, pw_name='root'), GROUP_FOUND,
     {'group': 'hccl', 'mode': '0640'}),
])
def test_node_check_passes(path_stat, dir_stat, group, settings):
    result = _checked(path_stat, dir_stat, group, **settings)
    assert result['problems'] == []
    assert result['file'] == dict(FILE, **settings)


@pytest.mark.parametrize('path_stat, dir_stat, group, settings, message', [
    (_stat(exists=True, islnk=True, isreg=False, isdir=False, lnk_target='/root/target.sh', lnk_source='/root/target.sh'),
     ETC, SKIPPED, {},
     "hccl_env_path '/etc/profile.d/npuops-hccl.sh' is a symbolic link to '/root/target.sh': " + SYMLINK_FIX),
    (_stat(exists=True, islnk=True, isreg=False, isdir=False, lnk_source='/etc/passwd'), ETC, SKIPPED, {},
     "hccl_env_path '/etc/profile.d/npuops-hccl.sh' is a symbolic link to '/etc/passwd': " + SYMLINK_FIX),
    (_stat(exists=True, islnk=False, isreg=False, isdir=True), ETC, SKIPPED, {},
     "hccl_env_path '/etc/profile.d/npuops-hccl.sh' is a directory, not a regular file: set hccl_env_path to a file"),
    (_stat(exists=True, islnk=False, isreg=False, isdir=False, isfifo=True), ETC, SKIPPED, {},
     "hccl_env_path '/etc/profile.d/npuops-hccl.sh' is a FIFO, not a regular file: set hccl_env_path to a file"),
    (MISSING, MISSING, SKIPPED, {},
     "hccl_env_path '/etc/profile.d/npuops-hccl.sh': its directory /etc/profile.d does not exist on this node; create it "
     "or choose another path"),
    (MISSING, REG, SKIPPED, {},
     "hccl_env_path '/etc/profile.d/npuops-hccl.sh': /etc/profile.d is not a directory on this node; choose another path"),
    (MISSING, _stat(exists=True, isdir=True, islnk=False, mode='1777', uid=0, pw_name='root'), SKIPPED,
     {'path': '/tmp/npuops-hccl.sh'},
     "hccl_env_path '/tmp/npuops-hccl.sh': its directory /tmp can be written by other users (mode 1777), who could put "
     "another file or a link in its place; choose a directory only root can write, such as /etc/profile.d"),
    (MISSING, _stat(exists=True, isdir=True, islnk=False, mode='0775', uid=0, pw_name='root'), SKIPPED,
     {'path': '/opt/env/hccl.sh'},
     "hccl_env_path '/opt/env/hccl.sh': its directory /opt/env can be written by other users (mode 0775), who could put "
     "another file or a link in its place; choose a directory only root can write, such as /etc/profile.d"),
    (REG, _stat(exists=True, isdir=True, islnk=False, mode='0755', uid=1000, pw_name='alice'), SKIPPED,
     {'path': '/home/alice/hccl.sh'},
     "hccl_env_path '/home/alice/hccl.sh': its directory /home/alice belongs to alice (uid 1000), who could replace the "
     "file; choose a directory only root can write, such as /etc/profile.d"),
    (REG, ETC, GROUP_MISSING, {'group': 'nosuchgroup'},
     "hccl_env_group 'nosuchgroup' is not a group on this node (getent group finds no such entry), so the file cannot be "
     "given to it; create the group or leave hccl_env_group root"),
    ({'failed': True, 'msg': 'Permission denied'}, ETC, SKIPPED, {},
     "hccl_env_path '/etc/profile.d/npuops-hccl.sh' could not be checked on this node: Permission denied"),
    (REG, ETC, {'failed': True, 'msg': 'Unable to find required getent'}, {'group': 'hccl'},
     "hccl_env_group 'hccl' could not be looked up on this node: Unable to find required getent"),
])
def test_node_check_refuses(path_stat, dir_stat, group, settings, message):
    result = _checked(path_stat, dir_stat, group, **settings)
    assert [p['problem'] for p in result['problems']] == [message]
    assert result['file'] is None


def test_node_check_keeps_the_problems_of_the_settings_and_copies():
    first = _file(mode='0666')
    checked = hccl_env_node_check(first, REG, ETC, SKIPPED)
    assert checked['problems'] == first['problems']
    linked = _stat(exists=True, islnk=True, isreg=False, isdir=False, lnk_source='/x')
    second = _file()
    assert hccl_env_node_check(second, linked, ETC, SKIPPED)['problems'] and second['problems'] == []


def test_node_check_of_a_result_without_a_file():
    with pytest.raises(AnsibleFilterError) as error:
        hccl_env_node_check(hccl_env({}), REG, ETC, SKIPPED)
    assert str(error.value) == ('hccl_env_node_check: the result has no file settings: call hccl_env with the file '
                                'argument (path, owner, group, mode) first')


# --- the HCCL_RDMA_TC=33 mistake and the HCCL defaults against the intent ------------------------------------------

def test_rdma_tc_33_is_the_dscp():
    result = _env({'rdma_tc': 33})
    assert result['env'] == []
    assert result['problems'] == [{
        'variable': 'hccl_env_rdma_tc', 'value': 33,
        'problem': 'hccl_env_rdma_tc 33 is the DSCP, not the ToS byte: HCCL_RDMA_TC takes the ToS byte DSCP x 4, so 132 for '
                   'DSCP 33, and HCCL rejects 33 (EI0001 "range[0, 255], Must be a multiple of 4")'}]


def test_unset_rdma_values_against_another_intent():
    result = _env({}, lossless_priority=3, lossless_dscp=26)
    assert result['problems'] == [
        {'variable': 'hccl_env_rdma_sl', 'value': None,
         'problem': 'hccl_env_rdma_sl None leaves HCCL_RDMA_SL at the HCCL default 4, but the lossless priority is 3: '
                    'HCCL_RDMA_SL must be the PFC-enabled priority, so set 3'},
        {'variable': 'hccl_env_rdma_tc', 'value': None,
         'problem': 'hccl_env_rdma_tc None leaves HCCL_RDMA_TC at the HCCL default 132 (DSCP 33), but the lossless DSCP is 26: '
                    'HCCL_RDMA_TC is DSCP x 4, so set 104'},
    ]
    assert _env({'rdma_sl': 3, 'rdma_tc': 104}, lossless_priority=3, lossless_dscp=26)['problems'] == []


# --- refusals: each one sentence naming the variable, the value and the range or the reason -------------------------

EI0001_TC = 'EI0001 "range[0, 255], Must be a multiple of 4"'
ALGOS = 'ring, H-D_R, NHR, NHR_V1, NB, AHC, pipeline, pairwise'
BAD = [
    # HCCL_IF_IP
    ('if_ip', '10.20.3.11',
     "hccl_env_if_ip '10.20.3.11' is the address of the RoCE port of NPU 3: HCCL_IF_IP is a host NIC address (CANN supports "
     "only host NICs for it) and the NPU ports are not host NICs"),
    ('if_ip', '10.20.200.1',
     "hccl_env_if_ip '10.20.200.1' lies inside the NPU parameter plane 10.20.0.0/16: HCCL_IF_IP is a host NIC address (CANN "
     "supports only host NICs for it) and the parameter plane holds the NPU RoCE ports"),
    ('if_ip', '127.0.0.1',
     "hccl_env_if_ip '127.0.0.1' is a loopback address: HCCL_IF_IP is the address of a host NIC the other nodes reach "
     "(loopback is accepted only with the context allow_loopback_if_ip, for a simulated PoD)"),
    ('if_ip', '::1',
     "hccl_env_if_ip '::1' is a loopback address: HCCL_IF_IP is the address of a host NIC the other nodes reach (loopback "
     "is accepted only with the context allow_loopback_if_ip, for a simulated PoD)"),
    ('if_ip', '192.168.1',
     "hccl_env_if_ip '192.168.1' is not an IP address: HCCL_IF_IP is one IPv4 or IPv6 address of a host NIC"),
    ('if_ip', '192.168.1.11,192.168.1.12',
     "hccl_env_if_ip '192.168.1.11,192.168.1.12' is not an IP address: HCCL_IF_IP is one IPv4 or IPv6 address of a host NIC"),
    ('if_ip', 3232235787,
     'hccl_env_if_ip 3232235787 is not an IP address: HCCL_IF_IP is one IPv4 or IPv6 address of a host NIC'),
    ('if_ip', '0.0.0.0',
     "hccl_env_if_ip '0.0.0.0' is not a unicast host address: HCCL_IF_IP is the address of a host NIC"),
    ('if_ip', '224.0.0.1',
     "hccl_env_if_ip '224.0.0.1' is not a unicast host address: HCCL_IF_IP is the address of a host NIC"),
    # HCCL_SOCKET_IFNAME
    ('socket_ifname', 'lo',
     "hccl_env_socket_ifname 'lo' selects lo, the loopback interface: HCCL needs a host NIC that reaches the other nodes"),
    ('socket_ifname', '=docker0',
     "hccl_env_socket_ifname '=docker0' selects docker0, a docker bridge: HCCL needs a host NIC that reaches the other nodes"),
    ('socket_ifname', 'eth0,virbr0',
     "hccl_env_socket_ifname 'eth0,virbr0' selects virbr0, a libvirt bridge: HCCL needs a host NIC that reaches the other "
     "nodes"),
    ('socket_ifname', '=cni0',
     "hccl_env_socket_ifname '=cni0' selects cni0, a container network (CNI) bridge: HCCL needs a host NIC that reaches the "
     "other nodes"),
    ('socket_ifname', '=br-3f2a1b0c',
     "hccl_env_socket_ifname '=br-3f2a1b0c' selects br-3f2a1b0c, a docker network bridge: HCCL needs a host NIC that reaches "
     "the other nodes"),
    ('socket_ifname', 'c',
     "hccl_env_socket_ifname 'c' selects cni*, a container network (CNI) bridge, through the prefix c: HCCL needs a host NIC "
     "that reaches the other nodes, so name the interface exactly (=name)"),
    ('socket_ifname', '=enp1s0',
     "hccl_env_socket_ifname '=enp1s0' selects enp1s0, the management interface: HCCL needs a host NIC that reaches the "
     "other nodes"),
    ('socket_ifname', 'enp',
     "hccl_env_socket_ifname 'enp' selects enp1s0, the management interface, through the prefix enp: HCCL needs a host NIC "
     "that reaches the other nodes, so name the interface exactly (=name)"),
    ('socket_ifname', 'eth0 eth1',
     "hccl_env_socket_ifname 'eth0 eth1' is not a valid HCCL_SOCKET_IFNAME value: 'eth0 eth1' is not an interface name (a "
     "comma list of names, optionally after ^ to exclude and = for exact names)"),
    ('socket_ifname', ['eth0'],
     "hccl_env_socket_ifname ['eth0'] is not a string of interface names: HCCL_SOCKET_IFNAME is a comma list of interface "
     "names or prefixes, optionally after ^ to exclude and = for exact names"),
    # HCCL_IF_BASE_PORT, HCCL_CONNECT_TIMEOUT, HCCL_EXEC_TIMEOUT
    ('if_base_port', 1023,
     'hccl_env_if_base_port 1023 is outside 1024-65520: HCCL_IF_BASE_PORT is the first of the 32 host ports HCCL listens on'),
    ('if_base_port', 65521,
     'hccl_env_if_base_port 65521 is outside 1024-65520: HCCL_IF_BASE_PORT is the first of the 32 host ports HCCL listens on'),
    ('if_base_port', '60000x',
     "hccl_env_if_base_port '60000x' is not an integer from 1024 to 65520: HCCL_IF_BASE_PORT is the first of the 32 host "
     "ports HCCL listens on"),
    ('connect_timeout', 119,
     'hccl_env_connect_timeout 119 is outside 120-7200: HCCL fails with EI0001 outside 120-7200 seconds, it does not clamp '
     'the value'),
    ('connect_timeout', 7201,
     'hccl_env_connect_timeout 7201 is outside 120-7200: HCCL fails with EI0001 outside 120-7200 seconds, it does not clamp '
     'the value'),
    ('connect_timeout', True,
     'hccl_env_connect_timeout True is not an integer from 120 to 7200: HCCL fails with EI0001 outside 120-7200 seconds, it '
     'does not clamp the value'),
    ('exec_timeout', -1,
     'hccl_env_exec_timeout -1 is outside 0-2147483647: HCCL_EXEC_TIMEOUT is in seconds, 0 means no limit'),
    ('exec_timeout', 2147483648,
     'hccl_env_exec_timeout 2147483648 is outside 0-2147483647: HCCL_EXEC_TIMEOUT is in seconds, 0 means no limit'),
    ('exec_timeout', 12.5,
     'hccl_env_exec_timeout 12.5 is not a whole number of seconds: HCCL_EXEC_TIMEOUT takes whole seconds in the HOST and '
     'HOST_TS modes (HOST is the default on Atlas A2); steps of 10 ms such as 0.05 only with HCCL_OP_EXPANSION_MODE AIV '
     '(or AI_CPU on Atlas A3)'),
    ('exec_timeout', '0.5',
     "hccl_env_exec_timeout '0.5' is not a whole number of seconds: HCCL_EXEC_TIMEOUT takes whole seconds in the HOST and "
     "HOST_TS modes (HOST is the default on Atlas A2); steps of 10 ms such as 0.05 only with HCCL_OP_EXPANSION_MODE AIV "
     "(or AI_CPU on Atlas A3)"),
    ('exec_timeout', 'soon',
     "hccl_env_exec_timeout 'soon' is not a number of seconds from 0 to 2147483647: HCCL_EXEC_TIMEOUT is in seconds, 0 "
     "means no limit"),
    ('exec_timeout', True,
     'hccl_env_exec_timeout True is not a number of seconds from 0 to 2147483647: HCCL_EXEC_TIMEOUT is in seconds, 0 means '
     'no limit'),
    # HCCL_BUFFSIZE
    ('buffsize', 2147483648,
     'hccl_env_buffsize 2147483648 is not a size in MB: HCCL_BUFFSIZE is in MB (default 200) and this looks like bytes '
     '(2147483648 B = 2048 MB); each communicator allocates 2 x HCCL_BUFFSIZE of HBM, so the largest usable value is 32768 '
     'on a 64 GB NPU'),
    ('buffsize', 1500000,
     'hccl_env_buffsize 1500000 is not a size in MB: HCCL_BUFFSIZE is in MB (default 200) and this looks like bytes '
     '(1500000 B = 1.4 MB); each communicator allocates 2 x HCCL_BUFFSIZE of HBM, so the largest usable value is 32768 on a '
     '64 GB NPU'),
    ('buffsize', 40000,
     'hccl_env_buffsize 40000 is above 32768: each communicator allocates 2 x HCCL_BUFFSIZE MB of HBM, 80000 MB here, more '
     'than the 64 GB of an NPU; HCCL_BUFFSIZE is in MB (default 200)'),
    ('buffsize', 0,
     'hccl_env_buffsize 0 is below 1: HCCL_BUFFSIZE is the buffer size in MB, 1 to 32768 (default 200)'),
    ('buffsize', '200MB',
     "hccl_env_buffsize '200MB' is not an integer number of MB: HCCL_BUFFSIZE is the buffer size in MB, 1 to 32768 (default "
     "200)"),
    # HCCL_OP_EXPANSION_MODE, HCCL_DETERMINISTIC
    ('op_expansion_mode', 'AICPU',
     "hccl_env_op_expansion_mode 'AICPU' is not an HCCL_OP_EXPANSION_MODE: the modes are AI_CPU, AIV, HOST, HOST_TS (names "
     "as written)"),
    ('op_expansion_mode', 'aiv',
     "hccl_env_op_expansion_mode 'aiv' is not an HCCL_OP_EXPANSION_MODE: the modes are AI_CPU, AIV, HOST, HOST_TS (names as "
     "written)"),
    ('deterministic', 'yes',
     "hccl_env_deterministic 'yes' is not false, true or strict: HCCL refuses any other HCCL_DETERMINISTIC (EI0001)"),
    ('deterministic', 1,
     'hccl_env_deterministic 1 is not false, true or strict: HCCL refuses any other HCCL_DETERMINISTIC (EI0001)'),
    # HCCL_RDMA_SL, HCCL_RDMA_TC
    ('rdma_sl', 3,
     'hccl_env_rdma_sl 3 is not the lossless priority 4: HCCL_RDMA_SL must be the PFC-enabled priority, so set 4, or the RDMA '
     'traffic of HCCL is not protected by PFC'),
    ('rdma_sl', 8,
     'hccl_env_rdma_sl 8 is outside 0-7: HCCL_RDMA_SL is the PFC-enabled priority of the RDMA traffic'),
    ('rdma_sl', 'four',
     "hccl_env_rdma_sl 'four' is not an integer: HCCL_RDMA_SL is the PFC-enabled priority of the RDMA traffic, 0 to 7"),
    ('rdma_tc', 130,
     'hccl_env_rdma_tc 130 is not a multiple of 4: HCCL_RDMA_TC is the ToS byte, DSCP x 4 (the DSCP sits in bits 2-7), and '
     'HCCL rejects it (%s)' % EI0001_TC),
    ('rdma_tc', 256,
     'hccl_env_rdma_tc 256 is outside 0-255: HCCL_RDMA_TC is the ToS byte, DSCP x 4 (132 for DSCP 33), and HCCL rejects it '
     '(%s)' % EI0001_TC),
    ('rdma_tc', 128,
     'hccl_env_rdma_tc 128 marks the RDMA traffic with DSCP 32, not the lossless DSCP 33: HCCL_RDMA_TC is DSCP x 4, so set '
     '132'),
    ('rdma_tc', True,
     'hccl_env_rdma_tc True is not an integer: HCCL_RDMA_TC is the ToS byte, DSCP x 4, an integer 0-255 and a multiple of 4 '
     '(132 for DSCP 33)'),
    # HCCL_ALGO
    ('algo', 'level0:ring;level1:reduce_scatter',
     "hccl_env_algo 'level0:ring;level1:reduce_scatter' is not a valid HCCL_ALGO: level0 (inside a server) takes only NA, "
     "not ring; reduce_scatter is an operator, not an algorithm (the algorithms are %s; as an operator it is written "
     "reducescatter, as in reducescatter=level0:NA;level1:ring)" % ALGOS),
    ('algo', 'level0:NA;level1:reduce_scatter',
     "hccl_env_algo 'level0:NA;level1:reduce_scatter' is not a valid HCCL_ALGO: reduce_scatter is an operator, not an "
     "algorithm (the algorithms are %s; as an operator it is written reducescatter, as in "
     "reducescatter=level0:NA;level1:ring)" % ALGOS),
    ('algo', 'reduce_scatter=level0:NA;level1:ring',
     "hccl_env_algo 'reduce_scatter=level0:NA;level1:ring' is not a valid HCCL_ALGO: reduce_scatter is not an operator "
     "token: the operator is written reducescatter"),
    ('algo', 'level0:NA;level1:nhr',
     "hccl_env_algo 'level0:NA;level1:nhr' is not a valid HCCL_ALGO: algorithm names are case-sensitive: nhr is written NHR"),
    ('algo', 'level0:NA;level1:fullmesh',
     "hccl_env_algo 'level0:NA;level1:fullmesh' is not a valid HCCL_ALGO: fullmesh is not an algorithm: the algorithms are "
     "%s" % ALGOS),
    ('algo', 'level0:NA;level1:ring/allreduce=level0:NA;level1:ring',
     "hccl_env_algo 'level0:NA;level1:ring/allreduce=level0:NA;level1:ring' is not a valid HCCL_ALGO: it mixes the global "
     "form and the per-operator form: use either level0:NA;level1:<algorithm> or "
     "<operator>=level0:NA;level1:<algorithm>/<operator>=..."),
    ('algo', 'level0:NA;level1:pairwise',
     "hccl_env_algo 'level0:NA;level1:pairwise' is not a valid HCCL_ALGO: pairwise is only for the alltoall operator (the "
     "global form applies to every operator): set it per operator, alltoall=level0:NA;level1:pairwise"),
    ('algo', 'allreduce=level0:NA;level1:pairwise',
     "hccl_env_algo 'allreduce=level0:NA;level1:pairwise' is not a valid HCCL_ALGO: pairwise is only for the alltoall "
     "operator (not allreduce): set it per operator, alltoall=level0:NA;level1:pairwise"),
    ('algo', 'level1:ring',
     "hccl_env_algo 'level1:ring' is not a valid HCCL_ALGO: level0 is missing: the syntax is "
     "level0:NA;level1:<algorithm>[;level2:<algorithm>]"),
    ('algo', 'level0:NA;level1:ring;level1:NHR',
     "hccl_env_algo 'level0:NA;level1:ring;level1:NHR' is not a valid HCCL_ALGO: level1 is given twice: each level at most "
     "once"),
    ('algo', 'level0:NA;level3:ring;level1:ring',
     "hccl_env_algo 'level0:NA;level3:ring;level1:ring' is not a valid HCCL_ALGO: 'level3' is not a level: the levels are "
     "level0 (inside a server), level1 (between servers) and level2 (between superpods)"),
    ('algo', 'allreduce=level0:NA;level1:ring/allreduce=level0:NA;level1:NHR',
     "hccl_env_algo 'allreduce=level0:NA;level1:ring/allreduce=level0:NA;level1:NHR' is not a valid HCCL_ALGO: allreduce is "
     "given twice: each operator at most once"),
    ('algo', 'alltoallv=level0:NA;level1:pairwise',
     "hccl_env_algo 'alltoallv=level0:NA;level1:pairwise' is not a valid HCCL_ALGO: 'alltoallv' is not an operator: the "
     "operators are allgather, reducescatter, allreduce, broadcast, reduce, scatter, alltoall"),
    ('algo', 'level0:NA;level1:ring;',
     "hccl_env_algo 'level0:NA;level1:ring;' is not a valid HCCL_ALGO: an empty level (a ; too many)"),
    ('algo', 5,
     'hccl_env_algo 5 is not a string: HCCL_ALGO is level0:NA;level1:<algorithm> or <operator>=level0:NA;level1:<algorithm>/'
     '..., or auto'),
    # TASK_QUEUE_ENABLE, HCCL_INTRA_ROCE_ENABLE, HCCL_WHITELIST_DISABLE
    ('task_queue_enable', 3,
     'hccl_env_task_queue_enable 3 is not 0, 1 or 2: TASK_QUEUE_ENABLE 0 turns the task queue off, 1 and 2 are its levels'),
    ('task_queue_enable', 'on',
     "hccl_env_task_queue_enable 'on' is not 0, 1 or 2: TASK_QUEUE_ENABLE 0 turns the task queue off, 1 and 2 are its levels"),
    ('intra_roce_enable', 1,
     'hccl_env_intra_roce_enable 1 is not for Atlas 800T A2: HCCL_INTRA_ROCE_ENABLE applies only to Atlas 300T Pro, Atlas '
     '200T A2 Box16 and Atlas A3 with LLM-DataDist, where it chooses RoCE instead of PCIe between the NPUs of a server'),
    ('intra_roce_enable', 0,
     'hccl_env_intra_roce_enable 0 is not for Atlas 800T A2: HCCL_INTRA_ROCE_ENABLE applies only to Atlas 300T Pro, Atlas '
     '200T A2 Box16 and Atlas A3 with LLM-DataDist, where it chooses RoCE instead of PCIe between the NPUs of a server'),
    ('whitelist_disable', 2,
     'hccl_env_whitelist_disable 2 is not 0 or 1: HCCL_WHITELIST_DISABLE 1 turns the whitelist check off (the default), 0 '
     'turns it on'),
    # PYTORCH_NPU_ALLOC_CONF
    ('pytorch_npu_alloc_conf', 'expandable_segments:True,max_split_size_mb:128',
     "hccl_env_pytorch_npu_alloc_conf 'expandable_segments:True,max_split_size_mb:128' is not a valid PYTORCH_NPU_ALLOC_CONF: "
     "expandable_segments:True cannot be combined with max_split_size_mb (torch_npu requires expandable_segments:False when "
     "max_split_size_mb or garbage_collection_threshold is set)"),
    ('pytorch_npu_alloc_conf', 'garbage_collection_threshold:0.8,expandable_segments:True',
     "hccl_env_pytorch_npu_alloc_conf 'garbage_collection_threshold:0.8,expandable_segments:True' is not a valid "
     "PYTORCH_NPU_ALLOC_CONF: expandable_segments:True cannot be combined with garbage_collection_threshold (torch_npu "
     "requires expandable_segments:False when max_split_size_mb or garbage_collection_threshold is set)"),
    ('pytorch_npu_alloc_conf', 'expandable_segments:true',
     "hccl_env_pytorch_npu_alloc_conf 'expandable_segments:true' is not a valid PYTORCH_NPU_ALLOC_CONF: "
     "expandable_segments:true is not valid, expandable_segments takes True or False"),
    ('pytorch_npu_alloc_conf', 'max_split_size_mb:20',
     "hccl_env_pytorch_npu_alloc_conf 'max_split_size_mb:20' is not a valid PYTORCH_NPU_ALLOC_CONF: max_split_size_mb:20 is "
     "not valid, max_split_size_mb takes an integer number of MB above 20"),
    ('pytorch_npu_alloc_conf', 'garbage_collection_threshold:1.0',
     "hccl_env_pytorch_npu_alloc_conf 'garbage_collection_threshold:1.0' is not a valid PYTORCH_NPU_ALLOC_CONF: "
     "garbage_collection_threshold:1.0 is not valid, garbage_collection_threshold takes a number between 0.0 and 1.0, both "
     "excluded"),
    ('pytorch_npu_alloc_conf', 'page_size:2g',
     "hccl_env_pytorch_npu_alloc_conf 'page_size:2g' is not a valid PYTORCH_NPU_ALLOC_CONF: page_size:2g is not valid, "
     "page_size takes 1g"),
    ('pytorch_npu_alloc_conf', 'base_addr_aligned_kb:17',
     "hccl_env_pytorch_npu_alloc_conf 'base_addr_aligned_kb:17' is not a valid PYTORCH_NPU_ALLOC_CONF: base_addr_aligned_kb:17 "
     "is not valid, base_addr_aligned_kb takes an integer number of KB from 0 to 16"),
    ('pytorch_npu_alloc_conf', 'roundup_power2_divisions:[256:3]',
     "hccl_env_pytorch_npu_alloc_conf 'roundup_power2_divisions:[256:3]' is not a valid PYTORCH_NPU_ALLOC_CONF: "
     "roundup_power2_divisions:[256:3] is not valid, roundup_power2_divisions takes a power of 2 or 0, or a list such as "
     "[256:1,512:2,1024:4,>:8]"),
    ('pytorch_npu_alloc_conf', 'expandable_segments:False,expandable_segments:True',
     "hccl_env_pytorch_npu_alloc_conf 'expandable_segments:False,expandable_segments:True' is not a valid "
     "PYTORCH_NPU_ALLOC_CONF: expandable_segments is given twice"),
    ('pytorch_npu_alloc_conf', 'expandable_segments: True',
     "hccl_env_pytorch_npu_alloc_conf 'expandable_segments: True' contains blanks: PYTORCH_NPU_ALLOC_CONF is "
     "<option1>:<value1>,<option2>:<value2> without blanks"),
    ('pytorch_npu_alloc_conf', 'expandable_segments',
     "hccl_env_pytorch_npu_alloc_conf 'expandable_segments' is not a valid PYTORCH_NPU_ALLOC_CONF: 'expandable_segments' is "
     "not key:value"),
    ('pytorch_npu_alloc_conf', 'large_segment_size_mb:64,max_split_size_mb:32',
     "hccl_env_pytorch_npu_alloc_conf 'large_segment_size_mb:64,max_split_size_mb:32' is not a valid PYTORCH_NPU_ALLOC_CONF: "
     "max_split_size_mb 32 is below large_segment_size_mb 64 (it must be at least as large)"),
    ('pytorch_npu_alloc_conf', 'pinned_mem_register:True,pin_memory_expandable_segments:True',
     "hccl_env_pytorch_npu_alloc_conf 'pinned_mem_register:True,pin_memory_expandable_segments:True' is not a valid "
     "PYTORCH_NPU_ALLOC_CONF: pinned_mem_register:True is not supported together with pin_memory_expandable_segments:True"),
    ('pytorch_npu_alloc_conf', 'max_split_size_mb:32,cuda_malloc:1',
     "hccl_env_pytorch_npu_alloc_conf 'max_split_size_mb:32,cuda_malloc:1' is not a valid PYTORCH_NPU_ALLOC_CONF: "
     "'cuda_malloc' is not a documented key (the keys are max_split_size_mb, garbage_collection_threshold, "
     "expandable_segments, base_addr_aligned_kb, page_size, segment_size_mb, roundup_power2_divisions, "
     "multi_stream_lazy_reclaim, pinned_use_background_threads, pin_memory_expandable_segments, pinned_mem_register, "
     "large_segment_size_mb, per_process_memory_fraction, throw_on_npumalloc_oom, pinned_max_round_threshold_mb, "
     "pinned_max_cached_size_mb)"),
    ('pytorch_npu_alloc_conf', 5,
     'hccl_env_pytorch_npu_alloc_conf 5 is not a string of key:value items (or a dict): PYTORCH_NPU_ALLOC_CONF is '
     '<option1>:<value1>,<option2>:<value2>'),
]


@pytest.mark.parametrize('suffix, value, message', BAD, ids=['%s=%r' % (suffix, value) for suffix, value, _m in BAD])
def test_refused_setting(suffix, value, message):
    result = _env({suffix: value})
    assert result['env'] == []
    assert result['problems'] == [{'variable': 'hccl_env_' + suffix, 'value': value, 'problem': message}]


def test_a_refused_setting_does_not_stop_the_others():
    result = _env(dict(VALUES, buffsize=2147483648, rdma_tc=33))
    assert [p['variable'] for p in result['problems']] == ['hccl_env_buffsize', 'hccl_env_rdma_tc']
    assert result['env'] == [item for item in ENV if item[0] not in ('HCCL_BUFFSIZE', 'HCCL_RDMA_TC')]


# --- argument errors ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize('values, context, message', [
    ('buffsize=200', CONTEXT, "hccl_env: values 'buffsize=200' is not a dict of the hccl_env settings (keys if_ip, "
                              "socket_ifname, if_base_port, connect_timeout, exec_timeout, buffsize, op_expansion_mode, "
                              "deterministic, rdma_sl, rdma_tc, algo, intra_roce_enable, whitelist_disable, "
                              "task_queue_enable, pytorch_npu_alloc_conf)"),
    ({'buffsize_mb': 200}, CONTEXT, 'hccl_env: values key buffsize_mb is not known: the keys are if_ip, socket_ifname, '
                                    'if_base_port, connect_timeout, exec_timeout, buffsize, op_expansion_mode, deterministic, '
                                    'rdma_sl, rdma_tc, algo, intra_roce_enable, whitelist_disable, task_queue_enable, '
                                    'pytorch_npu_alloc_conf'),
    ({}, ['node_count'], "hccl_env: context ['node_count'] is not a dict of node_count, parameter_plane, npu_addresses, "
                         "management_ifname, product, allow_loopback_if_ip, lossless_priority, lossless_dscp, product_family"),
    ({}, dict(CONTEXT, nodes=4), 'hccl_env: context key nodes is not known: the keys are node_count, parameter_plane, '
                                 'npu_addresses, management_ifname, product, allow_loopback_if_ip, lossless_priority, '
                                 'lossless_dscp, product_family'),
    ({}, dict(CONTEXT, node_count=0), 'hccl_env: context node_count 0 is not a number of nodes: it must be a positive integer'),
    ({}, dict(CONTEXT, parameter_plane='10.20.0.0/33'),
     "hccl_env: context parameter_plane '10.20.0.0/33' is not an IPv4 network in CIDR form such as 10.20.0.0/16"),
    ({}, dict(CONTEXT, npu_addresses='10.20.0.11'),
     "hccl_env: context npu_addresses '10.20.0.11' is not a list of the addresses of the NPU ports of this node"),
    ({}, dict(CONTEXT, npu_addresses=['10.20.0.300']),
     "hccl_env: context npu_addresses item 0 '10.20.0.300' is not an IP address (or a {device, address, netmask} port)"),
    ({}, dict(CONTEXT, management_ifname='eth 0'), "hccl_env: context management_ifname 'eth 0' is not an interface name"),
    ({}, dict(CONTEXT, product=800), 'hccl_env: context product 800 is not a product name such as Atlas 800T A2'),
    ({}, dict(CONTEXT, allow_loopback_if_ip='yes'), "hccl_env: context allow_loopback_if_ip 'yes' is not a boolean"),
    ({}, dict(CONTEXT, lossless_priority=8), 'hccl_env: context lossless_priority 8 is not an integer from 0 to 7'),
    ({}, dict(CONTEXT, lossless_dscp=64), 'hccl_env: context lossless_dscp 64 is not an integer from 0 to 63'),
    ({}, dict(CONTEXT, product_family='A5'),
     "hccl_env: context product_family 'A5' is not a product family: the families are A2, A3, 910A, 310P, 310, 310B"),
])
def test_argument_errors(values, context, message):
    with pytest.raises(AnsibleFilterError) as error:
        hccl_env(values, context)
    assert str(error.value) == message


def test_hccl_env_without_netaddr(monkeypatch):
    monkeypatch.setattr(hccl_rules, 'netaddr', None)
    with pytest.raises(AnsibleFilterError) as error:
        hccl_env(VALUES, CONTEXT)
    assert str(error.value) == ('hccl_env needs the Python library netaddr on the controller: pip install netaddr '
                                '(it is in the requirements.txt of npuops.ascend)')


# --- hccl_env_file ------------------------------------------------------------------------------------------------

FILE_TEXT = """\
# managed by npuops.ascend (role hccl_env): changes here are overwritten
# load it in the shell that starts the job: . /etc/profile.d/npuops-hccl.sh
export HCCL_IF_IP=192.168.1.11
export HCCL_IF_BASE_PORT=60000
export HCCL_CONNECT_TIMEOUT=1200
export HCCL_EXEC_TIMEOUT=1836
export HCCL_BUFFSIZE=200
export HCCL_OP_EXPANSION_MODE=HOST
export HCCL_DETERMINISTIC=false
export HCCL_RDMA_SL=4
export HCCL_RDMA_TC=132
export HCCL_ALGO='level0:NA;level1:NHR'
export HCCL_WHITELIST_DISABLE=1
export TASK_QUEUE_ENABLE=1
export PYTORCH_NPU_ALLOC_CONF=expandable_segments:True
"""


def test_file_text_from_the_result():
    assert hccl_env_file(_env(VALUES), path='/etc/profile.d/npuops-hccl.sh') == FILE_TEXT


def test_file_text_from_the_env_list_is_the_same_and_deterministic():
    first = hccl_env_file(ENV, path='/etc/profile.d/npuops-hccl.sh')
    assert first == FILE_TEXT
    assert hccl_env_file(ENV, path='/etc/profile.d/npuops-hccl.sh') == first


def test_file_quotes_what_the_shell_would_read_otherwise():
    text = hccl_env_file([['HCCL_SOCKET_IFNAME', '^lo,docker0'], ['HCCL_IF_IP', 'fd00::11'], ['X', "it's"],
                          ['HCCL_SOCKET_IFNAME2', '=eth0']])
    assert text == ("# managed by npuops.ascend (role hccl_env): changes here are overwritten\n"
                    "# load it in the shell that starts the job: . <this file>\n"
                    "export HCCL_SOCKET_IFNAME='^lo,docker0'\n"
                    "export HCCL_IF_IP=fd00::11\n"
                    "export X='it'\"'\"'s'\n"
                    "export HCCL_SOCKET_IFNAME2==eth0\n")


def test_file_with_another_header_and_no_variables():
    assert hccl_env_file([], header='site HCCL settings\n# see the runbook') == (
        '# site HCCL settings\n# see the runbook\n# load it in the shell that starts the job: . <this file>\n')


@pytest.mark.parametrize('env, kwargs, message', [
    ('HCCL_BUFFSIZE=200', {}, "hccl_env_file: env 'HCCL_BUFFSIZE=200' is not the env list of hccl_env, [[NAME, value], ...]"),
    ([['HCCL_BUFFSIZE']], {}, "hccl_env_file: env item 0 ['HCCL_BUFFSIZE'] is not a [NAME, value] pair"),
    ([['HCCL BUFFSIZE', '200']], {}, "hccl_env_file: env item 0 name 'HCCL BUFFSIZE' is not an environment variable name"),
    ([['A', '1'], ['A', '2']], {}, 'hccl_env_file: env item 1 name A is given twice: one export line per variable'),
    ([['A', None]], {}, 'hccl_env_file: env item 0 value None of A is not a text'),
    ([['A', 'x\0y']], {}, "hccl_env_file: env item 0 value 'x\\x00y' of A is not a text"),
    ([], {'header': 5}, 'hccl_env_file: header 5 is not a text'),
    ([], {'path': ''}, "hccl_env_file: path '' is not a file path"),
    ({'env': [], 'problems': [{'problem': 'hccl_env_rdma_tc 33 is the DSCP'}], 'advice': []}, {},
     'hccl_env_file: env has 1 problem, so no file is rendered: hccl_env_rdma_tc 33 is the DSCP'),
])
def test_file_errors(env, kwargs, message):
    with pytest.raises(AnsibleFilterError) as error:
        hccl_env_file(env, **kwargs)
    assert str(error.value) == message


# ---- hccl_env_problem_lines, hccl_env_findings ----------------------------------------------------------------------

def test_problem_texts_and_check_data():
    result = {'problems': [{'problem': 'hccl_env_buffsize 2147483648 is not a size in MB'}, 'plain text'],
              'settings_usable': False, 'file': None, 'env': [['HCCL_BUFFSIZE', '1']]}
    assert problem_texts(result) == ['hccl_env_buffsize 2147483648 is not a size in MB', 'plain text']
    assert problem_texts(None) == [] and problem_texts({'problems': []}) == []
    assert check_data(result) == {'settings_usable': False, 'file': None}
    assert check_data(None) == {'settings_usable': False, 'file': None}


def _check(problems, usable=True):
    return {'problems': problems, 'data': {'settings_usable': usable}}


def test_pod_check_message():
    path = '/etc/profile.d/npuops-hccl.sh'
    assert pod_check_message({'node01': _check([]), 'node02': _check([])}, [], path) is None
    # settings problems first, only theirs
    message = pod_check_message({'node01': _check(['a link']), 'node02': _check(['bad size', 'bad mode'], False)},
                                {'node03': 'no record'}, path)
    assert message == ('The HCCL settings are not usable (2 problem(s)), so %s was not written on any node: '
                       'node02: bad size | node02: bad mode' % path)
    message = pod_check_message({'node01': _check(['a link']), 'node02': _check([])}, {'node03': 'no record'}, path)
    assert message == ('The HCCL environment file cannot be written as asked (2 problem(s)), so %s was not written on '
                       'any node: node01: a link | node03: no record' % path)
    assert pod_check_message({}, {'node03': 'no record'}, path).endswith('node03: no record')


HCCL_RESULT = {'env': [['HCCL_CONNECT_TIMEOUT', '600'], ['HCCL_BUFFSIZE', '200'], ['HCCL_RDMA_SL', '4'],
                       ['HCCL_RDMA_TC', '132']], 'problems': [], 'advice': []}
LOADED = 'PATH=/usr/bin:/bin\nHCCL_CONNECT_TIMEOUT=600\nHCCL_BUFFSIZE=200\nHCCL_RDMA_SL=4\nHCCL_RDMA_TC=132\nPWD=/root\n'
HCCL_INTENT = {'lossless_dscp': 33, 'lossless_tc': 3}


def test_hccl_env_that_loads_and_matches_the_ports_has_no_finding():
    assert hccl_env_findings(HCCL_RESULT, H, LOADED, info(), HCCL_INTENT) == []


def test_hccl_env_value_missing_after_loading():
    loaded = LOADED.replace('HCCL_BUFFSIZE=200\n', '')
    assert hccl_env_findings(HCCL_RESULT, H, loaded) == [
        {'host': H, 'device': None, 'check': 'HCCL_BUFFSIZE', 'value': None, 'expected': '200', 'severity': 'fail',
         'msg': "node01: HCCL_BUFFSIZE is unset after loading the env file in sh, expected '200'"}]


def test_hccl_env_value_different_after_loading():
    loaded = LOADED.replace('HCCL_RDMA_TC=132', 'HCCL_RDMA_TC=33')
    assert only(hccl_env_findings(HCCL_RESULT, H, loaded)) == [
        (None, 'HCCL_RDMA_TC', 'fail', "node01: HCCL_RDMA_TC is '33' after loading the env file in sh, expected '132'")]


def test_hccl_env_not_loaded_is_not_checked():
    assert hccl_env_findings(HCCL_RESULT, H, None) == []


def test_hccl_env_against_ports_that_differ():
    ports = info(npu2=port(pfc_priorities=[3]), npu5=port(dscp_to_tc=[{'dscp': 33, 'tc': 0}]))
    expected = [
        (2, 'HCCL_RDMA_SL', 'fail', 'node01 NPU 2: HCCL_RDMA_SL=4 but the port has PFC on [3]: the RDMA traffic would not be '
                                    'lossless; run stage 4 (roce_lossless) or fix npuops_lossless_priority'),
        (5, 'HCCL_RDMA_TC', 'fail', 'node01 NPU 5: HCCL_RDMA_TC=132 marks DSCP 33, which the port maps to TC 0, not the '
                                    'lossless TC 3; run stage 4 (roce_lossless) or fix npuops_lossless_dscp')]
    assert only(hccl_env_findings(HCCL_RESULT, H, LOADED, ports, HCCL_INTENT)) == expected
    # the planned config list of a stage 4 dry run is checked the same way
    config = [dict(entry, device=int(dev)) for dev, entry in ports['devices'].items()]
    assert only(hccl_env_findings(HCCL_RESULT, H, LOADED, config, HCCL_INTENT)) == expected


def test_hccl_env_without_rdma_values_is_checked_with_hccls_defaults():
    result = {'env': [['HCCL_BUFFSIZE', '200']], 'problems': []}
    ports = info(npu1=port(pfc_priorities=[3]), npu4=port(dscp_to_tc=[{'dscp': 33, 'tc': 1}]))
    found = hccl_env_findings(result, H, None, ports, {'lossless_dscp': '33', 'lossless_tc': '3'})
    assert [(f['device'], f['check'], f['value'], f['expected']) for f in found] == [
        (1, 'HCCL_RDMA_SL', 4, [3]), (4, 'HCCL_RDMA_TC', 132, '3')]
    # a port that holds SL 4 and DSCP 33 -> TC 3 agrees with the defaults
    assert hccl_env_findings(result, H, None, info(), HCCL_INTENT) == []


def test_hccl_env_rdma_tc_of_another_dscp():
    result = {'env': [['HCCL_RDMA_SL', '4'], ['HCCL_RDMA_TC', '192']], 'problems': []}
    ports = info(ports=dict((d, port(dscp_to_tc=[{'dscp': 33, 'tc': 3}, {'dscp': 48, 'tc': 1}])) for d in range(2)))
    assert [f['msg'] for f in hccl_env_findings(result, H, None, ports, HCCL_INTENT)] == [
        'node01 NPU %d: HCCL_RDMA_TC=192 marks DSCP 48, which the port maps to TC 1, not the lossless TC 3; run stage 4 '
        '(roce_lossless) or fix npuops_lossless_dscp' % d for d in range(2)]


def test_hccl_env_ports_whose_pfc_or_map_could_not_be_read_and_no_intent():
    ports = info(npu0=port(pfc_priorities=None, dscp_to_tc=None), npu1=port(dscp_to_tc=[{'dscp': 33, 'tc': 0}]))
    # NPU 0 (PFC and map unread) gives nothing; NPU 1 maps the DSCP elsewhere
    assert [(f['device'], f['check']) for f in hccl_env_findings(HCCL_RESULT, H, None, ports, HCCL_INTENT)] == [
        (1, 'HCCL_RDMA_TC')]
    # without the lossless TC the map is not checked
    assert hccl_env_findings(HCCL_RESULT, H, None, ports, None) == []


def test_hccl_env_ports_that_could_not_be_read_are_a_warning():
    assert hccl_env_findings(HCCL_RESULT, H, LOADED, {'failed': True, 'msg': 'hccn_tool was not found', 'changed': False},
                             HCCL_INTENT) == [
        {'host': H, 'device': None, 'check': 'ports', 'value': None, 'expected': 'read', 'severity': 'warn',
         'msg': 'node01: the NPU ports could not be read to check HCCL_RDMA_SL/TC: hccn_tool was not found'}]


@pytest.mark.parametrize('ports', [None, SKIPPED, []])
def test_hccl_env_ports_not_read_on_purpose_are_no_finding(ports):
    assert hccl_env_findings(HCCL_RESULT, H, LOADED, ports, HCCL_INTENT) == []


# ---- the decisions of the stage 5 action (npuops.ascend.stage_hccl_env) --------------------------------------------

def test_the_reads_of_the_files_path_do_not_follow_a_link_and_only_a_group_other_than_root_is_looked_up():
    assert hccl_env_module.path_info_args('/etc/profile.d/x.sh') == {'paths': [
        {'path': '/etc/profile.d/x.sh', 'follow': False, 'checksum': True},
        {'path': '/etc/profile.d', 'follow': True, 'checksum': False}]}
    assert hccl_env_module.group_lookup_args('root') is None and hccl_env_module.group_lookup_args('0') is None
    assert hccl_env_module.group_lookup_args('daemon') == {'database': 'group', 'key': 'daemon', 'fail_key': False}


def test_the_path_info_reading_stands_where_two_stat_results_did():
    regular = {'exists': True, 'isreg': True}
    directory = {'exists': True, 'isdir': True}
    assert hccl_env_module.path_info_stats({'paths': [{'path': '/a/x', 'stat': regular},
                                                      {'path': '/a', 'stat': directory}]}) == (
        {'stat': regular}, {'stat': directory})
    assert hccl_env_module.path_info_stats({'paths': [{'path': '/a/x', 'failed': True, 'msg': 'denied'},
                                                      {'path': '/a', 'stat': directory}]}) == (
        {'failed': True, 'msg': 'denied'}, {'stat': directory})
    for broken in ({'failed': True, 'msg': 'boom'}, {'paths': []}, None):
        path_stat, dir_stat = hccl_env_module.path_info_stats(broken)
        assert path_stat['failed'] is True and dir_stat['failed'] is True


def test_the_check_result_says_whether_the_settings_were_usable():
    result = hccl_env(VALUES, CONTEXT, FILE)
    out = hccl_env_module.check_result(result, True)
    assert out['settings_usable'] is True and out['env'] == result['env'] and 'settings_usable' not in result
    assert hccl_env_module.check_result({'problems': [{'problem': 'x'}]}, 0)['settings_usable'] is False


def test_the_file_is_written_from_a_checked_result_with_its_settings():
    result = hccl_env(VALUES, CONTEXT, FILE)
    args = hccl_env_module.file_copy_args(result)
    assert args == {'content': hccl_env_file(result, path=FILE['path']), 'dest': FILE['path'], 'owner': FILE['owner'],
                    'group': FILE['group'], 'mode': FILE['mode'], 'follow': False, 'backup': True}
    assert args['content'].startswith('# managed by npuops.ascend')


@pytest.mark.parametrize('result, said', [
    ({'env': [], 'problems': [{'problem': 'hccl_env_mode 438 is a number'}], 'file': None},
     'stage_hccl_env: the file is written only from a checked result without problems (the check step); this one has '
     '1 problem(s): hccl_env_mode 438 is a number'),
    ({'env': [], 'problems': []}, 'this one has 0 problem(s): no file settings'),
    (None, 'this one has 0 problem(s): no file settings'),
])
def test_a_result_with_problems_or_without_file_settings_writes_nothing(result, said):
    with pytest.raises(AnsibleFilterError) as error:
        hccl_env_module.file_copy_args(result)
    assert said in str(error.value)


def test_the_file_is_loaded_in_sh_unless_a_dry_run_would_change_it():
    argv = hccl_env_module.load_args('/etc/profile.d/a b.sh')['argv']
    assert argv[:2] == ['sh', '-c'] and argv[3:] == ['sh', '/etc/profile.d/a b.sh']
    assert argv[2].startswith('. "$1" || exit $?; env; ')
    assert hccl_env_module.load_skipped(True, True) is True
    assert hccl_env_module.load_skipped(True, False) is False
    assert hccl_env_module.load_skipped(False, True) is False


def test_the_ports_checked_are_stage_4s_settings_when_given_else_the_read():
    read, given = info(), [{'device': 0, 'pfc_priorities': [4]}]
    assert hccl_env_module.ports_to_check(False, True, given, read) is None
    assert hccl_env_module.ports_to_check(True, True, given, read) is given
    assert hccl_env_module.ports_to_check(True, True, None, read) is None   # stage 4 gave null: nothing to check
    assert hccl_env_module.ports_to_check(True, False, None, read) is read
    assert hccl_env_module.ports_read_args([0, 1], 60) == {'queries': ['pfc', 'dscp_to_tc'], 'timeout': 60,
                                                           'devices': [0, 1]}
    assert 'devices' not in hccl_env_module.ports_read_args(None, 5)


def test_the_record_data_and_the_node_report():
    result = hccl_env(VALUES, CONTEXT, FILE)
    data = hccl_env_module.record_data(result, 1)
    assert data['changed'] is True and data['env'] == result['env']
    assert data['file'] == dict((key, result['file'][key]) for key in ('path', 'owner', 'group', 'mode'))
    assert data['algo'] == result['algo'] and data['advice'] == result['advice']
    assert hccl_env_module.record_data(None, False) == {'changed': False, 'env': [], 'algo': None, 'advice': [],
                                                        'file': {'path': None, 'owner': None, 'group': None, 'mode': None},
                                                        'files': []}
    found = [{'host': H, 'check': 'x'}]
    assert hccl_env_module.node_report(H, 'R1', result, False, found) == {
        'host': H, 'run': 'R1', 'path': FILE['path'], 'file': result['file'], 'changed': False, 'env': result['env'],
        'algo': result['algo'], 'advice': result['advice'], 'findings': found}


def test_the_record_keeps_the_file_it_left_with_the_sha1_of_its_text():
    text = '# managed by npuops.ascend\nexport HCCL_CONNECT_TIMEOUT=1200\nexport HCCL_ALGO="level0:NA;level1:NHR"\n'
    sha1 = hashlib.sha1(text.encode('utf-8')).hexdigest()
    data = hccl_env_module.record_data(hccl_env(VALUES, CONTEXT, FILE), True, text)
    assert data['files'] == [{'kind': 'hccl_env', 'path': '/etc/profile.d/npuops-hccl.sh', 'checksum': sha1,
                              'owner': 'root', 'group': 'root', 'mode': '0644'}]
    # the settings as checked: a three-digit mode is written, and kept, as four digits
    other = hccl_env(VALUES, CONTEXT, dict(FILE, path='/opt/npuops/hccl.sh', group='hccl', mode='640'))
    sha1 = hashlib.sha1('export A=\u00e9\n'.encode('utf-8')).hexdigest()     # the text as the node stores it (UTF-8)
    assert hccl_env_module.record_data(other, False, 'export A=\u00e9\n')['files'] == [
        {'kind': 'hccl_env', 'path': '/opt/npuops/hccl.sh', 'checksum': sha1, 'owner': 'root', 'group': 'hccl',
         'mode': '0640'}]
    # no text, or settings with problems (no file settings): nothing is named
    assert hccl_env_module.record_data(other, False)['files'] == []
    assert hccl_env_module.record_files({'file': None, 'problems': ['x']}, text) == []


# ---- the node read: HCCL_IF_IP on the NIC HCCL_SOCKET_IFNAME names, ASCEND_GLOBAL_LOG_LEVEL ---------------------------

IP_FIXTURE = os.path.join(REPO, 'tests', 'unit', 'fixtures', 'hccl_env', 'ip_-d_-j_addr_netplan.txt')


def _ip_text():
    with open(IP_FIXTURE, encoding='utf-8') as handle:
        return handle.read()


def _loaded(env_lines, ip_text, profile_lines=()):
    """The load command's output as LOAD_SCRIPT prints it (the environment, the ip marker and ip's JSON, the profile
    marker and grep's lines)."""
    return '\n'.join(list(env_lines) + [hccl_env_module.IP_MARKER, ip_text or '', '', hccl_env_module.PROFILE_MARKER]
                     + list(profile_lines)) + '\n'


def test_ip_json_of_iproute2_is_read_per_interface():
    interfaces = hccl_rules.interfaces_from_ip_json(_ip_text())
    assert sorted(interfaces) == ['enp0s31f6', 'lo', 'tun0', 'wg0', 'wlan0', 'wwan0']
    assert interfaces['enp0s31f6'][0] == '192.168.178.62' and interfaces['wwan0'] == []
    assert interfaces['tun0'] == ['2001:dead:beef::2']
    for text in ('', 'Object "addr" is unknown', '{}', '[1]', '[{"ifname": 3}]'):
        assert hccl_rules.interfaces_from_ip_json(text) is None


@pytest.mark.parametrize('value,ifname,selected', [
    ('eth,enp', 'enp0s31f6', True), ('eth,enp', 'wlan0', False), ('=enp0s31f6', 'enp0s31f6', True),
    ('=enp0', 'enp0s31f6', False), ('^eth,enp', 'enp0s31f6', False), ('^eth,enp', 'wlan0', True),
    ('^=enp0s31f6', 'enp0s31f6', False), ('^=enp0', 'enp0s31f6', True)])
def test_socket_ifname_selects_as_the_cann_reference_says(value, ifname, selected):
    assert hccl_rules.socket_ifname_selects(value, ifname) is selected


def test_if_ip_on_the_named_nic_passes():
    assert hccl_env_module.if_ip_findings('n1', '192.168.178.62', 'enp', _ip_text()) == []
    assert hccl_env_module.if_ip_findings('n1', '192.168.178.62', None, _ip_text()) == []
    assert hccl_env_module.if_ip_findings('n1', '2001:dead:beef::2', '=tun0', _ip_text()) == []


def test_if_ip_on_another_nic_names_node_address_and_both_nics():
    found = hccl_env_module.if_ip_findings('node02', '192.168.178.142', '=enp0s31f6', _ip_text())
    assert [(f['check'], f['value'], f['expected'], f['severity']) for f in found] == [
        ('HCCL_IF_IP', 'wlan0', ['enp0s31f6'], 'warn')]
    assert found[0]['msg'].startswith('node02: HCCL_IF_IP=192.168.178.142 is on wlan0, but HCCL_SOCKET_IFNAME=='
                                      'enp0s31f6 selects enp0s31f6')
    none = hccl_env_module.if_ip_findings('node02', '10.10.0.2', 'eth', _ip_text())
    assert 'selects no interface of this node' in none[0]['msg'] and none[0]['value'] == 'wg0'


def test_if_ip_on_no_interface_fails_and_a_missing_read_warns():
    found = hccl_env_module.if_ip_findings('node03', '192.168.178.99', 'enp', _ip_text())
    assert [(f['check'], f['severity']) for f in found] == [('HCCL_IF_IP', 'fail')]
    assert 'HCCL_IF_IP=192.168.178.99 is on no interface of this node (interfaces: enp0s31f6, lo, tun0, wg0, wlan0, ' \
           'wwan0)' in found[0]['msg']
    assert hccl_env_module.if_ip_findings('node03', '127.0.44.3', 'enp', _ip_text(), allow_loopback=True) == []
    assert hccl_env_module.if_ip_findings('node03', '127.0.44.3', 'enp', _ip_text())[0]['severity'] == 'fail'
    missing = hccl_env_module.if_ip_findings('node03', '192.168.178.62', 'enp', None)
    assert missing[0]['severity'] == 'warn' and 'iproute2 missing' in missing[0]['msg']


def test_the_node_read_feeds_the_findings():
    result = {'env': [['HCCL_IF_IP', '192.168.178.142'], ['HCCL_SOCKET_IFNAME', '=enp0s31f6']]}
    loaded = _loaded(['HCCL_IF_IP=192.168.178.142', 'HCCL_SOCKET_IFNAME==enp0s31f6', 'ASCEND_GLOBAL_LOG_LEVEL=1'],
                     _ip_text(), ['/etc/profile.d/ascend-debug.sh:export ASCEND_GLOBAL_LOG_LEVEL=0',
                                  '/etc/profile.d/ok.sh:ASCEND_GLOBAL_LOG_LEVEL="3"',
                                  '/etc/profile.d/x.sh:export ASCEND_SLOG_PRINT_TO_STDOUT=1'])
    found = hccl_env_module.hccl_env_findings(result, 'node04', loaded)
    assert [(f['check'], f['value'], f['severity']) for f in found] == [
        ('HCCL_IF_IP', 'wlan0', 'warn'), ('ASCEND_GLOBAL_LOG_LEVEL', 1, 'warn'), ('ASCEND_GLOBAL_LOG_LEVEL', 0, 'warn')]
    assert found[1]['msg'].startswith('node04: ASCEND_GLOBAL_LOG_LEVEL=1 (INFO) in the environment after loading the HCCL '
                                      'env file: below 3 (ERROR)')
    assert 'ASCEND_GLOBAL_LOG_LEVEL=0 (DEBUG) in /etc/profile.d/ascend-debug.sh' in found[2]['msg']
    assert 'envref_07_0122' in found[2]['msg']
    # the operator's minimum: 0 turns the check off, 1 keeps only DEBUG
    assert [f['value'] for f in hccl_env_module.hccl_env_findings(result, 'n', loaded, log_level_min=1)
            if f['check'] == 'ASCEND_GLOBAL_LOG_LEVEL'] == [0]
    assert all(f['check'] != 'ASCEND_GLOBAL_LOG_LEVEL'
               for f in hccl_env_module.hccl_env_findings(result, 'n', loaded, log_level_min=0))


def test_an_old_style_load_output_has_no_node_read():
    result = {'env': [['HCCL_IF_IP', '10.1.1.1']]}
    assert hccl_env_module.hccl_env_findings(result, 'n', 'HCCL_IF_IP=10.1.1.1\n') == []


def test_the_load_script_runs_in_sh_and_splits(tmp_path):
    import subprocess  # pylint: disable=import-outside-toplevel
    env_file = tmp_path / 'npuops-hccl.sh'
    env_file.write_text('export HCCL_IF_IP=192.168.178.62\nexport HCCL_SOCKET_IFNAME=enp\n')
    bin_dir = tmp_path / 'bin'
    bin_dir.mkdir()
    fake_ip = bin_dir / 'ip'
    fake_ip.write_text('#!/bin/sh\n[ "$1 $2 $3" = "-j addr show" ] || exit 1\ncat %s\n' % IP_FIXTURE)
    fake_ip.chmod(0o755)
    argv = hccl_env_module.load_args(str(env_file))['argv']
    done = subprocess.run(argv, env={'PATH': '%s:/usr/bin:/bin' % bin_dir}, capture_output=True, text=True, check=True,
                          timeout=30)
    env_text, ip_text, profile = hccl_env_module.split_loaded(done.stdout)
    assert 'HCCL_IF_IP=192.168.178.62' in env_text.splitlines() and hccl_env_module.IP_MARKER not in env_text
    assert hccl_rules.interfaces_from_ip_json(ip_text)['enp0s31f6'][0] == '192.168.178.62'
    assert all(':' in line for line in profile)
    # the command module returns stdout without its last newline: with no log setting in /etc/profile.d the marker of
    # that part ends the text, and the interfaces before it still parse
    stripped = done.stdout.rstrip('\n')
    if stripped.endswith(hccl_env_module.PROFILE_MARKER):
        assert hccl_env_module.split_loaded(stripped)[2] == []
    assert hccl_env_module.split_loaded(stripped)[1] == ip_text
    assert hccl_env_module.split_loaded('A=1\n%s\n[]\n\n%s' % (hccl_env_module.IP_MARKER, hccl_env_module.PROFILE_MARKER)) == (
        'A=1', '[]', [])
    failed = subprocess.run(hccl_env_module.load_args(str(tmp_path / 'missing.sh'))['argv'], capture_output=True,
                            text=True, check=False, timeout=30)
    assert failed.returncode != 0 and hccl_env_module.IP_MARKER not in failed.stdout
