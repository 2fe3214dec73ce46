# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The managed HCCL environment of a node: hccl_env (validate and render) and hccl_env_file (the file text).

The documentation of each filter is in the .yml file of the same name next to this file; the rules and their
sources are listed in hccl_env.yml.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

from ansible_collections.npuops.ascend.plugins.plugin_utils import _hccl_rules as rules
from ansible_collections.npuops.ascend.plugins.plugin_utils._hccl_rules import DSCP_MAX, PRIORITY_MAX, integer, show

# (suffix of the role variable hccl_env_<suffix>, environment variable), in the order of the rendered environment
ENV = (
    ('if_ip', 'HCCL_IF_IP'),
    ('socket_ifname', 'HCCL_SOCKET_IFNAME'),
    ('if_base_port', 'HCCL_IF_BASE_PORT'),
    ('connect_timeout', 'HCCL_CONNECT_TIMEOUT'),
    ('exec_timeout', 'HCCL_EXEC_TIMEOUT'),
    ('buffsize', 'HCCL_BUFFSIZE'),
    ('op_expansion_mode', 'HCCL_OP_EXPANSION_MODE'),
    ('deterministic', 'HCCL_DETERMINISTIC'),
    ('rdma_sl', 'HCCL_RDMA_SL'),
    ('rdma_tc', 'HCCL_RDMA_TC'),
    ('algo', 'HCCL_ALGO'),
    ('intra_roce_enable', 'HCCL_INTRA_ROCE_ENABLE'),
    ('whitelist_disable', 'HCCL_WHITELIST_DISABLE'),
    ('task_queue_enable', 'TASK_QUEUE_ENABLE'),
    ('pytorch_npu_alloc_conf', 'PYTORCH_NPU_ALLOC_CONF'),
)
SUFFIXES = tuple(suffix for suffix, _name in ENV)
CONTEXT_KEYS = ('node_count', 'parameter_plane', 'npu_addresses', 'management_ifname', 'product', 'allow_loopback_if_ip',
                'lossless_priority', 'lossless_dscp')
DEFAULT_PRODUCT = 'Atlas 800T A2'

PORTS_USED = 32                 # HCCL_IF_BASE_PORT: HCCL listens on 32 ports from the base (CANN 8.3 and later)
BASE_PORT_RANGE = (1024, 65520)
CONNECT_TIMEOUT_RANGE = (120, 7200)
EXEC_TIMEOUT_RANGE = (0, 2147483647)
EXEC_TIMEOUT_AIV_MAX = 1091
BUFFSIZE_MAX_MB = 32768         # 2 x 32768 MB per communicator is the whole 64 GB of HBM of a 910B
BYTES_PER_MB = 1024 * 1024
HCCL_DEFAULT_RDMA_SL = 4
HCCL_DEFAULT_RDMA_TC = 132
EXPANSION_MODES = ('AI_CPU', 'AIV', 'HOST', 'HOST_TS')
DETERMINISTIC = ('false', 'true', 'strict')
TASK_QUEUE_LEVELS = (0, 1, 2)

ALGO_OPERATORS = ('allgather', 'reducescatter', 'allreduce', 'broadcast', 'reduce', 'scatter', 'alltoall')
ALGO_NAMES = ('ring', 'H-D_R', 'NHR', 'NHR_V1', 'NB', 'AHC', 'pipeline', 'pairwise')
ALGO_LEVELS = ('level0', 'level1', 'level2')
ALGO_AUTO_NON_POWER_OF_TWO = 'level0:NA;level1:NHR'

# HCCL_INTRA_ROCE_ENABLE applies to these products only (CANN HCCL environment variable reference)
INTRA_ROCE_PRODUCTS = ('Atlas 300T Pro', 'Atlas 200T A2 Box16')

# PYTORCH_NPU_ALLOC_CONF keys of the torch_npu documentation and the kind of their value
BOOL = 'True or False'
ALLOC_KEYS = {
    'max_split_size_mb': ('int', 21, None, 'an integer number of MB above 20'),
    'garbage_collection_threshold': ('open_fraction', None, None, 'a number between 0.0 and 1.0, both excluded'),
    'expandable_segments': ('bool', None, None, BOOL),
    'base_addr_aligned_kb': ('int', 0, 16, 'an integer number of KB from 0 to 16'),
    'page_size': ('choice', ('1g',), None, '1g'),
    'segment_size_mb': ('int', 20, 512, 'an integer number of MB from 20 to 512'),
    'roundup_power2_divisions': ('roundup', None, None, 'a power of 2 or 0, or a list such as [256:1,512:2,1024:4,>:8]'),
    'multi_stream_lazy_reclaim': ('bool', None, None, BOOL),
    'pinned_use_background_threads': ('bool', None, None, BOOL),
    'pin_memory_expandable_segments': ('bool', None, None, BOOL),
    'pinned_mem_register': ('bool', None, None, BOOL),
    'large_segment_size_mb': ('int', 11, None, 'an integer number of MB above 10'),
    'per_process_memory_fraction': ('fraction', None, None, 'a number from 0.0 to 1.0'),
    'throw_on_npumalloc_oom': ('bool', None, None, BOOL),
    'pinned_max_round_threshold_mb': ('int', 1, None, 'a positive integer number of MB'),
    'pinned_max_cached_size_mb': ('int', 1, None, 'a positive integer number of MB'),
}
_NUMBER_RE = re.compile(r'^(?:[0-9]{1,18}(?:\.[0-9]{0,18})?|\.[0-9]{1,18})$')
_DIGITS_RE = re.compile(r'^[0-9]{1,18}$')

HEADER = '# managed by npuops.ascend (role hccl_env): changes here are overwritten'
_ENV_NAME_RE = re.compile(r'^[A-Za-z_][A-Za-z0-9_]*$')


def _error(name, text):
    raise AnsibleFilterError('%s: %s' % (name, text))


class _Report:
    """The problems and the advice of one hccl_env call."""

    def __init__(self):
        self.problems = []
        self.advice = []

    def problem(self, suffix, value, text):
        variable = 'hccl_env_' + suffix
        self.problems.append({'variable': variable, 'value': value, 'problem': '%s %s %s' % (variable, show(value), text)})

    def sentence(self, suffix, value, text):
        """A problem whose sentence is already complete (it names the variable and the value)."""
        self.problems.append({'variable': 'hccl_env_' + suffix, 'value': value, 'problem': text})


def _unset(value):
    """None, a blank string or an empty dict: not set, so not written (HCCL's default applies)."""
    return value is None or (isinstance(value, str) and not value.strip()) or (isinstance(value, Mapping) and not value)


def _whole(report, suffix, value, low, high, why):
    """The integer of ``value`` when it lies in [low, high], else None with the problem recorded."""
    number = integer(value)
    if number is None:
        report.problem(suffix, value, 'is not an integer from %d to %d: %s' % (low, high, why))
        return None
    if not low <= number <= high:
        report.problem(suffix, value, 'is outside %d-%d: %s' % (low, high, why))
        return None
    return number


# --- context --------------------------------------------------------------------------------------------------------

def _context(context):
    if context is None:
        context = {}
    if not isinstance(context, Mapping):
        _error('hccl_env', 'context %s is not a dict of %s' % (show(context), ', '.join(CONTEXT_KEYS)))
    unknown = sorted(str(key) for key in set(context) - set(CONTEXT_KEYS))
    if unknown:
        _error('hccl_env', 'context key %s is not known: the keys are %s' % (', '.join(unknown), ', '.join(CONTEXT_KEYS)))
    ctx = {}
    nodes = context.get('node_count')
    if nodes is not None and (integer(nodes) is None or integer(nodes) < 1):
        _error('hccl_env', 'context node_count %s is not a number of nodes: it must be a positive integer' % show(nodes))
    ctx['node_count'] = None if nodes is None else integer(nodes)
    plane = context.get('parameter_plane')
    ctx['parameter_plane'] = None
    if not _unset(plane):
        network = rules.ipv4_network(plane)
        if network is None:
            _error('hccl_env', 'context parameter_plane %s is not an IPv4 network in CIDR form such as 10.20.0.0/16' % show(plane))
        ctx['parameter_plane'] = network.cidr
    addresses = context.get('npu_addresses') or []
    if not isinstance(addresses, (list, tuple)):
        _error('hccl_env', 'context npu_addresses %s is not a list of the addresses of the NPU ports of this node' % show(addresses))
    ctx['npu_addresses'] = {}
    for index, item in enumerate(addresses):
        text = item.get('address') if isinstance(item, Mapping) else item
        device = item.get('device', index) if isinstance(item, Mapping) else index
        address = rules.ip(text.strip()) if isinstance(text, str) else None
        if address is None:
            _error('hccl_env', 'context npu_addresses item %d %s is not an IP address (or a {device, address, netmask} port)'
                   % (index, show(item)))
        ctx['npu_addresses'][address] = device
    management = context.get('management_ifname')
    if not _unset(management) and (not isinstance(management, str) or not rules.IFNAME_RE.match(management.strip())):
        _error('hccl_env', 'context management_ifname %s is not an interface name' % show(management))
    ctx['management_ifname'] = None if _unset(management) else management.strip()
    product = context.get('product')
    if _unset(product):
        product = DEFAULT_PRODUCT
    if not isinstance(product, str):
        _error('hccl_env', 'context product %s is not a product name such as %s' % (show(product), DEFAULT_PRODUCT))
    ctx['product'] = ' '.join(product.split())
    allow = context.get('allow_loopback_if_ip', False)
    if allow is None:
        allow = False
    if not isinstance(allow, bool):
        _error('hccl_env', 'context allow_loopback_if_ip %s is not a boolean' % show(allow))
    ctx['allow_loopback_if_ip'] = allow
    for key, high in (('lossless_priority', PRIORITY_MAX), ('lossless_dscp', DSCP_MAX)):
        value = context.get(key)
        number = None if value is None else integer(value)
        if value is not None and (number is None or not 0 <= number <= high):
            _error('hccl_env', 'context %s %s is not an integer from 0 to %d' % (key, show(value), high))
        ctx[key] = number
    return ctx


# --- the variables --------------------------------------------------------------------------------------------------

def _if_ip(report, value, ctx):
    address = rules.ip(value.strip()) if isinstance(value, str) else None
    if address is None:
        report.problem('if_ip', value, 'is not an IP address: HCCL_IF_IP is one IPv4 or IPv6 address of a host NIC')
        return None
    if address.is_loopback():
        if not ctx['allow_loopback_if_ip']:
            report.problem('if_ip', value, 'is a loopback address: HCCL_IF_IP is the address of a host NIC the other nodes reach '
                           '(loopback is accepted only with the context allow_loopback_if_ip, for a simulated PoD)')
            return None
    elif (address.is_multicast() or int(address) == 0 or (address.version == 4 and str(address) == '255.255.255.255')):
        report.problem('if_ip', value, 'is not a unicast host address: HCCL_IF_IP is the address of a host NIC')
        return None
    if address in ctx['npu_addresses']:
        report.problem('if_ip', value, 'is the address of the RoCE port of NPU %s: HCCL_IF_IP is a host NIC address (CANN '
                       'supports only host NICs for it) and the NPU ports are not host NICs' % ctx['npu_addresses'][address])
        return None
    plane = ctx['parameter_plane']
    if plane is not None and address.version == 4 and address in plane:
        report.problem('if_ip', value, 'lies inside the NPU parameter plane %s: HCCL_IF_IP is a host NIC address (CANN supports '
                       'only host NICs for it) and the parameter plane holds the NPU RoCE ports' % plane)
        return None
    return str(address)


def _socket_ifname(report, value, ctx):
    if not isinstance(value, str):
        report.problem('socket_ifname', value, 'is not a string of interface names: HCCL_SOCKET_IFNAME is a comma list of '
                       'interface names or prefixes, optionally after ^ to exclude and = for exact names')
        return None
    try:
        exclude, exact, names = rules.split_socket_ifname(value)
    except ValueError as exc:
        report.problem('socket_ifname', value, 'is not a valid HCCL_SOCKET_IFNAME value: %s' % exc)
        return None
    if exclude:
        return value.strip()
    refused = rules.refused_interfaces(names, exact, rules.LOOPBACK_AND_BRIDGES + rules.CNI_BRIDGES, ctx['management_ifname'])
    for name, shown, what, as_prefix in refused:
        if as_prefix:
            report.problem('socket_ifname', value, 'selects %s, %s, through the prefix %s: HCCL needs a host NIC that reaches the '
                           'other nodes, so name the interface exactly (=name)' % (shown, what, name))
        else:
            report.problem('socket_ifname', value, 'selects %s, %s: HCCL needs a host NIC that reaches the other nodes'
                           % (name, what))
    return None if refused else value.strip()


def _if_base_port(report, value, _ctx):
    port = _whole(report, 'if_base_port', value, BASE_PORT_RANGE[0], BASE_PORT_RANGE[1],
                  'HCCL_IF_BASE_PORT is the first of the %d host ports HCCL listens on' % PORTS_USED)
    if port is None:
        return None
    last = port + PORTS_USED - 1
    if last > 65535:
        report.advice.append('hccl_env_if_base_port %d: HCCL uses the %d ports %d-%d and the last of them lie above 65535; '
                             'HCCL accepts bases up to 65520 (a range from the time it used 16 ports), keep it at most %d'
                             % (port, PORTS_USED, port, last, 65536 - PORTS_USED))
    else:
        report.advice.append('hccl_env_if_base_port %d: reserve the ports HCCL listens on so no other program takes them: '
                             'sysctl -w net.ipv4.ip_local_reserved_ports=%d-%d' % (port, port, last))
    return str(port)


def _connect_timeout(report, value, _ctx):
    low, high = CONNECT_TIMEOUT_RANGE
    seconds = _whole(report, 'connect_timeout', value, low, high,
                     'HCCL fails with EI0001 outside %d-%d seconds, it does not clamp the value' % (low, high))
    return None if seconds is None else str(seconds)


def _exec_timeout(report, value, ctx):
    low, high = EXEC_TIMEOUT_RANGE
    seconds = _whole(report, 'exec_timeout', value, low, high, 'HCCL_EXEC_TIMEOUT is in seconds, 0 means no limit')
    if seconds is None:
        return None
    if ctx.get('mode') == 'AIV':
        if seconds > EXEC_TIMEOUT_AIV_MAX:
            report.problem('exec_timeout', value, 'is above %d: with HCCL_OP_EXPANSION_MODE AIV HCCL caps HCCL_EXEC_TIMEOUT at %d '
                           'seconds, so set at most %d' % (EXEC_TIMEOUT_AIV_MAX, EXEC_TIMEOUT_AIV_MAX, EXEC_TIMEOUT_AIV_MAX))
            return None
        if seconds == 0:
            report.advice.append('hccl_env_exec_timeout 0: with HCCL_OP_EXPANSION_MODE AIV there is no unlimited wait, '
                                 'HCCL uses %d seconds' % EXEC_TIMEOUT_AIV_MAX)
    return str(seconds)


def _buffsize(report, value, _ctx):
    number = integer(value)
    if number is None:
        report.problem('buffsize', value, 'is not an integer number of MB: HCCL_BUFFSIZE is the buffer size in MB, 1 to %d '
                       '(default 200)' % BUFFSIZE_MAX_MB)
        return None
    if number < 1:
        report.problem('buffsize', value, 'is below 1: HCCL_BUFFSIZE is the buffer size in MB, 1 to %d (default 200)'
                       % BUFFSIZE_MAX_MB)
        return None
    if number > BUFFSIZE_MAX_MB:
        if number >= BYTES_PER_MB:
            megabytes = number / BYTES_PER_MB
            shown = ('%d' % megabytes) if megabytes == int(megabytes) else '%.1f' % megabytes
            report.problem('buffsize', value, 'is not a size in MB: HCCL_BUFFSIZE is in MB (default 200) and this looks like bytes '
                           '(%d B = %s MB); each communicator allocates 2 x HCCL_BUFFSIZE of HBM, so the largest usable value is '
                           '%d on a 64 GB NPU' % (number, shown, BUFFSIZE_MAX_MB))
        else:
            report.problem('buffsize', value, 'is above %d: each communicator allocates 2 x HCCL_BUFFSIZE MB of HBM, %d MB here, '
                           'more than the 64 GB of an NPU; HCCL_BUFFSIZE is in MB (default 200)' % (BUFFSIZE_MAX_MB, 2 * number))
        return None
    return str(number)


def _op_expansion_mode(report, value, ctx):
    if value not in EXPANSION_MODES:
        report.problem('op_expansion_mode', value, 'is not an HCCL_OP_EXPANSION_MODE: the modes are %s (names as written)'
                       % ', '.join(EXPANSION_MODES))
        return None
    if value == 'AIV':
        report.advice.append('hccl_env_op_expansion_mode AIV: on Atlas A2 servers (%s) the CANN documentation gives AIV for '
                             'inference only, not for training, and not for several communicators at once' % ctx['product'])
    return value


def _deterministic(report, value, _ctx):
    text = ('true' if value else 'false') if isinstance(value, bool) else value.strip().lower() if isinstance(value, str) else None
    if text not in DETERMINISTIC:
        report.problem('deterministic', value, 'is not false, true or strict: HCCL refuses any other HCCL_DETERMINISTIC (EI0001)')
        return None
    if text == 'strict':
        report.advice.append('hccl_env_deterministic strict: the reduce order is kept, on Atlas A2 only for multi-node '
                             'deployments with the same NPU count on every node')
    return text


def _rdma_sl(report, value, ctx):
    text = rules.rdma_sl_problem('hccl_env_rdma_sl', value, ctx['lossless_priority'])
    if text:
        report.sentence('rdma_sl', value, text)
        return None
    return str(integer(value))


def _rdma_tc(report, value, ctx):
    text = rules.rdma_tc_problem('hccl_env_rdma_tc', value, ctx['lossless_dscp'])
    if text:
        report.sentence('rdma_tc', value, text)
        return None
    return str(integer(value))


def _algo_name(algo, operator):
    """Why ``algo`` is not an algorithm for ``operator`` (None: the global form), or None."""
    if algo in ALGO_NAMES:
        if algo == 'pairwise' and operator != 'alltoall':
            return ('pairwise is only for the alltoall operator (%s): set it per operator, alltoall=level0:NA;level1:pairwise'
                    % ('not %s' % operator if operator else 'the global form applies to every operator'))
        return None
    joined = algo.replace('_', '').replace('-', '').lower()
    if joined in ALGO_OPERATORS:
        return ('%s is an operator, not an algorithm (the algorithms are %s; as an operator it is written %s, as in '
                '%s=level0:NA;level1:ring)' % (algo, ', '.join(ALGO_NAMES), joined, joined))
    for name in ALGO_NAMES:
        if name.lower() == algo.lower():
            return 'algorithm names are case-sensitive: %s is written %s' % (algo, name)
    return '%s is not an algorithm: the algorithms are %s' % (algo or 'an empty name', ', '.join(ALGO_NAMES))


def _algo_levels(text, operator, reasons):
    where = ' for %s' % operator if operator else ''
    seen = set()
    for part in text.split(';'):
        if not part:
            reasons.append('an empty level%s (a ; too many)' % where)
            continue
        if part.count(':') != 1:
            reasons.append('%s%s is not level<N>:<algorithm>' % (show(part), where))
            continue
        level, algo = part.split(':')
        if level not in ALGO_LEVELS:
            reasons.append('%s%s is not a level: the levels are level0 (inside a server), level1 (between servers) and level2 '
                           '(between superpods)' % (show(level), where))
            continue
        if level in seen:
            reasons.append('%s is given twice%s: each level at most once' % (level, where))
            continue
        seen.add(level)
        if level == 'level0':
            if algo != 'NA':
                reasons.append('level0 (inside a server) takes only NA, not %s' % (algo or 'an empty name'))
            continue
        why = _algo_name(algo, operator)
        if why:
            reasons.append(why)
    for level in ('level0', 'level1'):
        if level not in seen:
            reasons.append('%s is missing%s: the syntax is level0:NA;level1:<algorithm>[;level2:<algorithm>]' % (level, where))


def _algo_reasons(text):
    reasons = []
    parts = text.split('/')
    if not any('=' in part for part in parts):
        if len(parts) > 1:
            return ['/ separates operators, each written <operator>=level0:NA;level1:<algorithm>']
        _algo_levels(text, None, reasons)
        return reasons
    seen = set()
    for part in parts:
        if '=' not in part:
            return ['it mixes the global form and the per-operator form: use either level0:NA;level1:<algorithm> or '
                    '<operator>=level0:NA;level1:<algorithm>/<operator>=...']
        operator, levels = part.split('=', 1)
        if ':' in operator or ';' in operator:
            return ['it mixes the global form and the per-operator form: use either level0:NA;level1:<algorithm> or '
                    '<operator>=level0:NA;level1:<algorithm>/<operator>=...']
        if operator not in ALGO_OPERATORS:
            joined = operator.replace('_', '').replace('-', '').lower()
            if joined in ALGO_OPERATORS:
                reasons.append('%s is not an operator token: the operator is written %s' % (operator, joined))
            else:
                reasons.append('%s is not an operator: the operators are %s' % (show(operator), ', '.join(ALGO_OPERATORS)))
            continue
        if operator in seen:
            reasons.append('%s is given twice: each operator at most once' % operator)
            continue
        seen.add(operator)
        if '=' in levels:
            reasons.append('%s has two = (operators are separated by /)' % operator)
            continue
        _algo_levels(levels, operator, reasons)
    return reasons


def _is_power_of_two(number):
    return number > 0 and number & (number - 1) == 0


def _algo(report, value, ctx):
    if not isinstance(value, str):
        report.problem('algo', value, 'is not a string: HCCL_ALGO is level0:NA;level1:<algorithm> or '
                       '<operator>=level0:NA;level1:<algorithm>/..., or auto')
        return None
    text = value.strip()
    if text == 'auto':
        nodes = ctx['node_count']
        if nodes is None:
            report.problem('algo', value, 'needs the number of nodes: auto chooses HCCL_ALGO from the context node_count, which '
                           'is not given')
            return None
        if _is_power_of_two(nodes):
            report.advice.append('hccl_env_algo auto: HCCL_ALGO is not set for %d node%s (a power of two), HCCL selects the '
                                 'algorithm itself' % (nodes, '' if nodes == 1 else 's'))
            return None
        report.advice.append('hccl_env_algo auto: HCCL_ALGO=%s for %d nodes (not a power of two, where H-D_R adds traffic)'
                             % (ALGO_AUTO_NON_POWER_OF_TWO, nodes))
        return ALGO_AUTO_NON_POWER_OF_TWO
    reasons = _algo_reasons(text)
    if reasons:
        report.problem('algo', value, 'is not a valid HCCL_ALGO: %s' % '; '.join(reasons))
        return None
    report.advice.append('hccl_env_algo %s: an explicit HCCL_ALGO turns off the adaptive algorithm selection of HCCL for the '
                         'operators it covers' % text)
    return text


def _intra_roce_enable(report, value, ctx):
    product = ctx['product']
    allowed = [name.lower() for name in INTRA_ROCE_PRODUCTS]
    is_a3 = re.search(r'(^|\s)A3(\s|$)', product) is not None
    if product.lower() not in allowed and not is_a3:
        report.problem('intra_roce_enable', value, 'is not for %s: HCCL_INTRA_ROCE_ENABLE applies only to Atlas 300T Pro, '
                       'Atlas 200T A2 Box16 and Atlas A3 with LLM-DataDist, where it chooses RoCE instead of PCIe between the '
                       'NPUs of a server' % product)
        return None
    number = _flag(report, 'intra_roce_enable', value, 'HCCL_INTRA_ROCE_ENABLE is 0 or 1')
    if number is None:
        return None
    report.advice.append('hccl_env_intra_roce_enable %d: set HCCL_INTRA_PCIE_ENABLE to %d as well (not written by this role): '
                         'both 1, or one of them 0 with the other unset, is not supported%s'
                         % (number, 1 - number, ' (on Atlas A3 only with LLM-DataDist)' if is_a3 else ''))
    return str(number)


def _flag(report, suffix, value, why):
    number = (1 if value else 0) if isinstance(value, bool) else integer(value)
    if number not in (0, 1):
        report.problem(suffix, value, 'is not 0 or 1: %s' % why)
        return None
    return number


def _whitelist_disable(report, value, _ctx):
    number = _flag(report, 'whitelist_disable', value, 'HCCL_WHITELIST_DISABLE 1 turns the whitelist check off (the default), '
                   '0 turns it on')
    if number == 0:
        report.advice.append('hccl_env_whitelist_disable 0: the whitelist check is on, so HCCL needs HCCL_WHITELIST_FILE, '
                             'which this role does not write')
    return None if number is None else str(number)


def _task_queue_enable(report, value, _ctx):
    number = integer(value)
    if number not in TASK_QUEUE_LEVELS:
        report.problem('task_queue_enable', value, 'is not 0, 1 or 2: TASK_QUEUE_ENABLE 0 turns the task queue off, 1 and 2 are '
                       'its levels')
        return None
    if number == 2:
        report.advice.append('hccl_env_task_queue_enable 2: level 2 works in binary mode only and may raise the peak NPU memory')
    return str(number)


def _alloc_items(text):
    """Split key:value items at the commas outside brackets."""
    items, depth, start = [], 0, 0
    for index, char in enumerate(text):
        if char == '[':
            depth += 1
        elif char == ']':
            depth -= 1
        elif char == ',' and depth == 0:
            items.append(text[start:index])
            start = index + 1
    items.append(text[start:])
    return items


def _roundup_ok(text):
    def divisions(part):
        return _DIGITS_RE.match(part) is not None and (int(part) == 0 or _is_power_of_two(int(part)))
    if not (text.startswith('[') and text.endswith(']')):
        return divisions(text)
    entries = text[1:-1].split(',')
    for entry in entries:
        if entry.count(':') != 1:
            return False
        size, number = entry.split(':')
        if not (size == '>' or (_DIGITS_RE.match(size) and _is_power_of_two(int(size)))) or not divisions(number):
            return False
    return bool(entries)


def _alloc_value_ok(kind, low, high, text):
    if kind == 'bool':
        return text in ('True', 'False')
    if kind == 'choice':
        return text in low
    if kind == 'roundup':
        return _roundup_ok(text)
    if kind == 'int':
        return _DIGITS_RE.match(text) is not None and int(text) >= low and (high is None or int(text) <= high)
    if not _NUMBER_RE.match(text):
        return False
    return 0.0 < float(text) < 1.0 if kind == 'open_fraction' else 0.0 <= float(text) <= 1.0


def _alloc_text(value):
    if isinstance(value, Mapping):
        return ','.join('%s:%s' % (key, ('True' if item else 'False') if isinstance(item, bool) else item)
                        for key, item in value.items())
    return value.strip() if isinstance(value, str) else None


def _alloc_conf(report, value, _ctx):
    text = _alloc_text(value)
    if text is None:
        report.problem('pytorch_npu_alloc_conf', value, 'is not a string of key:value items (or a dict): PYTORCH_NPU_ALLOC_CONF '
                       'is <option1>:<value1>,<option2>:<value2>')
        return None
    if re.search(r'\s', text):
        report.problem('pytorch_npu_alloc_conf', value, 'contains blanks: PYTORCH_NPU_ALLOC_CONF is <option1>:<value1>,'
                       '<option2>:<value2> without blanks')
        return None
    reasons, found = [], {}
    for item in _alloc_items(text):
        key, sep, setting = item.partition(':')
        if not sep or not setting:
            reasons.append('%s is not key:value' % show(item))
            continue
        if key not in ALLOC_KEYS:
            reasons.append('%s is not a documented key (the keys are %s)' % (show(key), ', '.join(ALLOC_KEYS)))
            continue
        if key in found:
            reasons.append('%s is given twice' % key)
            continue
        kind, low, high, allowed = ALLOC_KEYS[key]
        if not _alloc_value_ok(kind, low, high, setting):
            reasons.append('%s:%s is not valid, %s takes %s' % (key, setting, key, allowed))
            continue
        found[key] = setting
    if found.get('expandable_segments') == 'True':
        clash = [key for key in ('max_split_size_mb', 'garbage_collection_threshold') if key in found]
        if clash:
            reasons.append('expandable_segments:True cannot be combined with %s (torch_npu requires expandable_segments:False '
                           'when max_split_size_mb or garbage_collection_threshold is set)' % ' or '.join(clash))
    if 'large_segment_size_mb' in found and 'max_split_size_mb' in found and \
            int(found['max_split_size_mb']) < int(found['large_segment_size_mb']):
        reasons.append('max_split_size_mb %s is below large_segment_size_mb %s (it must be at least as large)'
                       % (found['max_split_size_mb'], found['large_segment_size_mb']))
    if found.get('pinned_mem_register') == 'True' and found.get('pin_memory_expandable_segments') == 'True':
        reasons.append('pinned_mem_register:True is not supported together with pin_memory_expandable_segments:True')
    if reasons:
        report.problem('pytorch_npu_alloc_conf', value, 'is not a valid PYTORCH_NPU_ALLOC_CONF: %s' % '; '.join(reasons))
        return None
    if 'segment_size_mb' in found:
        report.advice.append('hccl_env_pytorch_npu_alloc_conf: segment_size_mb is deprecated, large_segment_size_mb replaces it')
    return text


CHECKS = {
    'if_ip': _if_ip,
    'socket_ifname': _socket_ifname,
    'if_base_port': _if_base_port,
    'connect_timeout': _connect_timeout,
    'exec_timeout': _exec_timeout,
    'buffsize': _buffsize,
    'op_expansion_mode': _op_expansion_mode,
    'deterministic': _deterministic,
    'rdma_sl': _rdma_sl,
    'rdma_tc': _rdma_tc,
    'algo': _algo,
    'intra_roce_enable': _intra_roce_enable,
    'whitelist_disable': _whitelist_disable,
    'task_queue_enable': _task_queue_enable,
    'pytorch_npu_alloc_conf': _alloc_conf,
}


def _defaults_against_intent(report, values, ctx):
    """HCCL_RDMA_SL and HCCL_RDMA_TC left unset take HCCL's defaults 4 and 132: they must match the PoD's intent."""
    priority, dscp = ctx['lossless_priority'], ctx['lossless_dscp']
    if _unset(values.get('rdma_sl')) and priority is not None and priority != HCCL_DEFAULT_RDMA_SL:
        report.problem('rdma_sl', values.get('rdma_sl'), 'leaves HCCL_RDMA_SL at the HCCL default %d, but the lossless priority is '
                       '%d: HCCL_RDMA_SL must be the PFC-enabled priority, so set %d' % (HCCL_DEFAULT_RDMA_SL, priority, priority))
    if _unset(values.get('rdma_tc')) and dscp is not None and dscp * 4 != HCCL_DEFAULT_RDMA_TC:
        report.problem('rdma_tc', values.get('rdma_tc'), 'leaves HCCL_RDMA_TC at the HCCL default %d (DSCP 33), but the lossless '
                       'DSCP is %d: HCCL_RDMA_TC is DSCP x 4, so set %d' % (HCCL_DEFAULT_RDMA_TC, dscp, dscp * 4))


def hccl_env(values, context=None):
    """Validate and render the managed HCCL environment of a node: {env: [[NAME, value]], problems, advice}."""
    rules.require_netaddr('hccl_env')
    if not isinstance(values, Mapping):
        _error('hccl_env', 'values %s is not a dict of the hccl_env settings (keys %s)' % (show(values), ', '.join(SUFFIXES)))
    unknown = sorted(str(key) for key in set(values) - set(SUFFIXES))
    if unknown:
        _error('hccl_env', 'values key %s is not known: the keys are %s' % (', '.join(unknown), ', '.join(SUFFIXES)))
    ctx = _context(context)
    report = _Report()
    mode = values.get('op_expansion_mode')
    ctx['mode'] = mode if mode in EXPANSION_MODES else None
    env = []
    for suffix, name in ENV:
        value = values.get(suffix)
        if _unset(value):
            continue
        rendered = CHECKS[suffix](report, value, ctx)
        if rendered is not None:
            env.append([name, rendered])
    _defaults_against_intent(report, values, ctx)
    names = [name for name, _value in env]
    if 'HCCL_IF_IP' in names and 'HCCL_SOCKET_IFNAME' in names:
        report.advice.append('hccl_env_socket_ifname: HCCL_IF_IP is set as well and comes first, so HCCL does not use '
                             'HCCL_SOCKET_IFNAME')
    if ctx['mode'] == 'AIV' and dict(env).get('HCCL_DETERMINISTIC') == 'true':
        report.advice.append('hccl_env_op_expansion_mode AIV: HCCL ignores AIV while HCCL_DETERMINISTIC is true')
    return {'env': env, 'problems': report.problems, 'advice': report.advice}


# --- hccl_env_file --------------------------------------------------------------------------------------------------

def hccl_env_file(env, header=HEADER, path=None):
    """The text of the environment file: the header, how to load it, one export line per variable."""
    if isinstance(env, Mapping) and 'env' in env:
        problems = env.get('problems') or []
        if problems:
            _error('hccl_env_file', 'env has %d problem%s, so no file is rendered: %s' % (
                len(problems), '' if len(problems) == 1 else 's',
                ' '.join(str(p.get('problem') if isinstance(p, Mapping) else p) for p in problems)))
        env = env['env']
    if not isinstance(env, (list, tuple)):
        _error('hccl_env_file', 'env %s is not the env list of hccl_env, [[NAME, value], ...]' % show(env))
    if header is None:
        header = HEADER
    if not isinstance(header, str) or '\0' in header:
        _error('hccl_env_file', 'header %s is not a text' % show(header))
    if path is not None and (not isinstance(path, str) or not path.strip() or '\n' in path):
        _error('hccl_env_file', 'path %s is not a file path' % show(path))
    lines = [line if line.startswith('#') else '# ' + line if line else '#' for line in header.splitlines()]
    where = shlex.quote(path.strip()) if path else '<this file>'
    lines.append('# load it in the shell that starts the job: . %s' % where)
    seen = set()
    for index, item in enumerate(env):
        if not isinstance(item, (list, tuple)) or len(item) != 2:
            _error('hccl_env_file', 'env item %d %s is not a [NAME, value] pair' % (index, show(item)))
        name, value = item
        if not isinstance(name, str) or not _ENV_NAME_RE.match(name):
            _error('hccl_env_file', 'env item %d name %s is not an environment variable name' % (index, show(name)))
        if name in seen:
            _error('hccl_env_file', 'env item %d name %s is given twice: one export line per variable' % (index, name))
        seen.add(name)
        if isinstance(value, bool) or not isinstance(value, (str, int)) or '\0' in str(value):
            _error('hccl_env_file', 'env item %d value %s of %s is not a text' % (index, show(value), name))
        lines.append('export %s=%s' % (name, shlex.quote(str(value))))
    return '\n'.join(lines) + '\n'


class FilterModule:
    """npuops.ascend HCCL environment filters."""

    def filters(self):
        return {
            'hccl_env': hccl_env,
            'hccl_env_file': hccl_env_file,
        }
