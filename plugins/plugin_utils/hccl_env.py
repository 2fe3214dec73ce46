# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The managed HCCL environment of a node (stage 5): hccl_env (validate and render), hccl_env_node_check (what is at the
file's path on the node), hccl_env_file (the file text), and the environment against the node's NPU ports
(hccl_env_findings), and what the settings check over the PoD says (pod_check_message).

The documentation of each filter is in plugins/filter/<name>.yml; the rules and their sources are listed in
plugins/filter/hccl_env.yml.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Mapping
from decimal import Decimal

from ansible.errors import AnsibleFilterError

from ansible_collections.npuops.ascend.plugins.module_utils._domain.products import DSCP_MAX, PRIORITY_MAX
from ansible_collections.npuops.ascend.plugins.plugin_utils import hccl_rules as rules
from ansible_collections.npuops.ascend.plugins.plugin_utils import node_files
from ansible_collections.npuops.ascend.plugins.plugin_utils.findings import WARN, finding
from ansible_collections.npuops.ascend.plugins.plugin_utils.hccl_rules import HCCL_DEFAULT_RDMA_SL, HCCL_DEFAULT_RDMA_TC, integer, show
from ansible_collections.npuops.ascend.plugins.plugin_utils.roce.ports import by_device, dscp_map, port_text

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
                'lossless_priority', 'lossless_dscp', 'product_family')
DEFAULT_PRODUCT = 'Atlas 800T A2'
# npuops_product_family (docs/products.md): A2 and A3 select the HCCL algorithm adaptively; the 910A (Atlas training
# series) has a fixed default; the 310 families have no RoCE ports (no HCCL traffic between servers)
FAMILIES = ('A2', 'A3', '910A', '310P', '310', '310B')
DEFAULT_FAMILY = 'A2'
ADAPTIVE_ALGO_FAMILIES = ('A2', 'A3')
NO_ROCE_FAMILIES = ('310P', '310', '310B')

# the managed file: the role's defaults, and what its settings are called
FILE_KEYS = ('path', 'owner', 'group', 'mode')
FILE_DEFAULTS = {'path': '/etc/profile.d/npuops-hccl.sh', 'owner': 'root', 'group': 'root', 'mode': '0644'}
# the kind of the file in the ``files`` of the node's record (what the drift audit compares)
FILE_KIND = 'hccl_env'

PORTS_USED = 32                 # HCCL_IF_BASE_PORT: HCCL listens on 32 ports from the base (CANN 8.3 and later)
BASE_PORT_RANGE = (1024, 65520)
CONNECT_TIMEOUT_RANGE = (120, 7200)
EXEC_TIMEOUT_RANGE = (0, 2147483647)
EXEC_TIMEOUT_AIV_MAX = 1091     # AIV mode: 0 and anything above count as 1091 (CANN envref_07_0078)
EXEC_TIMEOUT_DECIMALS = 2       # 10 ms precision in AIV mode (and AI_CPU mode on A3)
BUFFSIZE_MAX_MB = 32768         # 2 x 32768 MB per communicator is the whole 64 GB of HBM of a 910B
BYTES_PER_MB = 1024 * 1024
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
_SECONDS_RE = re.compile(r'^-?[0-9]{1,18}(?:\.[0-9]{1,18})?$')
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
        self.algo = None

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
    family = context.get('product_family')
    if _unset(family):
        family = DEFAULT_FAMILY
    if not isinstance(family, str) or family.strip() not in FAMILIES:
        _error('hccl_env', 'context product_family %s is not a product family: the families are %s'
               % (show(family), ', '.join(FAMILIES)))
    ctx['product_family'] = family.strip()
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


def _seconds(value):
    """The Decimal of an int, a float or a string of a decimal number of seconds, else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, float):
        value = repr(value)
    if isinstance(value, str) and _SECONDS_RE.match(value.strip()):
        return Decimal(value.strip())
    return None


def _plain(number):
    """A Decimal as HCCL reads it: no exponent, no trailing zeros after the point (30.00 -> 30, 1.50 -> 1.5)."""
    text = format(number, 'f')
    return text.rstrip('0').rstrip('.') if '.' in text else text


def _exec_timeout(report, value, ctx):
    low, high = EXEC_TIMEOUT_RANGE
    why = 'HCCL_EXEC_TIMEOUT is in seconds, 0 means no limit'
    seconds = _seconds(value)
    if seconds is None:
        report.problem('exec_timeout', value, 'is not a number of seconds from %d to %d: %s' % (low, high, why))
        return None
    if not low <= seconds <= high:
        report.problem('exec_timeout', value, 'is outside %d-%d: %s' % (low, high, why))
        return None
    # 10 ms steps in AIV mode, and in AI_CPU mode on A3; whole seconds in the HOST / HOST_TS modes (CANN envref_07_0078)
    fine = ctx.get('mode') == 'AIV' or (ctx.get('mode') == 'AI_CPU' and ctx['product_family'] == 'A3')
    if seconds != seconds.to_integral_value():
        if not fine:
            report.problem('exec_timeout', value, 'is not a whole number of seconds: HCCL_EXEC_TIMEOUT takes whole seconds in '
                           'the HOST and HOST_TS modes (HOST is the default on Atlas A2); steps of 10 ms such as 0.05 only '
                           'with HCCL_OP_EXPANSION_MODE AIV (or AI_CPU on Atlas A3)')
            return None
        if seconds != seconds.quantize(Decimal(1).scaleb(-EXEC_TIMEOUT_DECIMALS)):
            report.sentence('exec_timeout', value, 'hccl_env_exec_timeout %r has more than two decimals: HCCL_EXEC_TIMEOUT has '
                            'a precision of 10 ms (0.01 s) in AIV mode' % (value,))
            return None
    if ctx.get('mode') == 'AIV' and (seconds == 0 or seconds > EXEC_TIMEOUT_AIV_MAX):
        report.advice.append('hccl_env_exec_timeout %s: with HCCL_OP_EXPANSION_MODE AIV HCCL waits at most %d seconds (0 and '
                             'anything above %d count as %d), so HCCL_EXEC_TIMEOUT=%d is written'
                             % (value, EXEC_TIMEOUT_AIV_MAX, EXEC_TIMEOUT_AIV_MAX, EXEC_TIMEOUT_AIV_MAX, EXEC_TIMEOUT_AIV_MAX))
        return str(EXEC_TIMEOUT_AIV_MAX)
    return _plain(seconds)


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


def _auto_algo(report, value, ctx):
    """What auto writes, and why: nothing where HCCL selects the algorithm itself (A2, A3; CANN envref_07_0079), nothing
    without RoCE ports, and on the 910A NHR for a node count that is not a power of two (its fixed default is ring)."""
    family = ctx['product_family']
    written = None
    if family in ADAPTIVE_ALGO_FAMILIES:
        why = ('HCCL_ALGO is not written: on Atlas %s HCCL chooses the algorithm itself from the product, the number of '
               'servers and the data size, and a set HCCL_ALGO would turn that off' % family)
    elif family in NO_ROCE_FAMILIES:
        why = ('HCCL_ALGO is not written: a %s node has no RoCE ports, so HCCL has no traffic between servers (level1) to '
               'choose an algorithm for' % family)
    else:
        nodes = ctx['node_count']
        if nodes is None:
            report.problem('algo', value, 'needs the number of nodes on the %s: auto chooses HCCL_ALGO from the context '
                           'node_count, which is not given' % family)
            return None
        if _is_power_of_two(nodes):
            why = ('HCCL_ALGO is not written for %d node%s (a power of two): without it the %s uses H-D_R, which suits that '
                   'count' % (nodes, '' if nodes == 1 else 's', family))
        else:
            written = ALGO_AUTO_NON_POWER_OF_TWO
            why = ('HCCL_ALGO=%s for %d nodes: without HCCL_ALGO the %s uses ring for a node count that is not a power of two '
                   '(steps linear in the node count); NHR takes a logarithmic number of steps at any node count'
                   % (written, nodes, family))
    report.advice.append('hccl_env_algo auto: ' + why)
    report.algo = {'setting': 'auto', 'value': written, 'why': why}
    return written


def _algo(report, value, ctx):
    if not isinstance(value, str):
        report.problem('algo', value, 'is not a string: HCCL_ALGO is level0:NA;level1:<algorithm> or '
                       '<operator>=level0:NA;level1:<algorithm>/..., or auto')
        return None
    text = value.strip()
    if text == 'auto':
        return _auto_algo(report, value, ctx)
    reasons = _algo_reasons(text)
    if reasons:
        report.problem('algo', value, 'is not a valid HCCL_ALGO: %s' % '; '.join(reasons))
        return None
    why = 'an explicit HCCL_ALGO turns off the adaptive algorithm selection of HCCL for the operators it covers'
    report.advice.append('hccl_env_algo %s: %s' % (text, why))
    report.algo = {'setting': text, 'value': text, 'why': why}
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
    # torch_npu docs/zh/api/environment_variable/op_execution/TASK_QUEUE_ENABLE.md; set_compile_mode (binary mode)
    if number == 2:
        report.advice.append('hccl_env_task_queue_enable 2: level 2, the level torch_npu recommends, takes effect only when the '
                             'operators run as binaries (jit_compile=False, the default on Atlas A2 and A3) and may raise the '
                             'peak NPU memory; set 1 if a job runs short of NPU memory')
    elif number == 1:
        report.advice.append('hccl_env_task_queue_enable 1: level 1 is what torch_npu uses when TASK_QUEUE_ENABLE is not set, '
                             'so writing it changes nothing; torch_npu recommends 2')
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


# --- the file: root sources it, so it is root's, never group/other-writable, at a plain absolute path -----------------

def _file_path(report, value):
    kind = rules.path_kind(value)
    if kind is None:
        report.problem('path', value, 'is not a file path: give the absolute path of the file, such as %s'
                       % FILE_DEFAULTS['path'])
        return None
    if kind == 'relative':
        report.problem('path', value, 'is not an absolute path: a relative path is taken from the home directory of the '
                       'connection user on each node (/root/%s for root), not a place the launch scripts read; give the full '
                       'path, such as %s' % (value.strip(), FILE_DEFAULTS['path']))
        return None
    if kind != 'absolute':
        report.problem('path', value, "is not a plain file path: no '.' or '..' parts, no '//', no trailing '/', no blanks or "
                       "control characters; write it as %s" % FILE_DEFAULTS['path'])
        return None
    path = value.strip()
    directory, name = posixpath.split(path)
    if directory == '/etc/profile.d' and not name.endswith('.sh'):
        report.advice.append('hccl_env_path %s: login shells read only the *.sh files of /etc/profile.d, so only the launch '
                             'scripts that source it load it' % show(value))
    return path


def _file_owner(report, value):
    root = (isinstance(value, int) and not isinstance(value, bool) and value == 0) or (isinstance(value, str) and value.strip() in ('root', '0'))
    if not root:
        report.problem('owner', value, "is not root: root's login shells (a file in /etc/profile.d) and the launch scripts "
                       "source this file, so its owner could run commands as root; leave it root")
        return None
    return str(value).strip()


def _file_group(report, value):
    text = str(value).strip() if isinstance(value, int) and not isinstance(value, bool) else value
    if not isinstance(text, str) or not rules.GROUP_RE.match(text.strip()):
        report.problem('group', value, 'is not a group name or number')
        return None
    return text.strip()


def _file_mode(report, value, group):
    mode, as_number = rules.file_mode(value)
    if mode is None:
        report.problem('mode', value, "is not an octal file mode: give 3 or 4 octal digits as a string, such as '0644'")
        return None
    writers, special = rules.write_bits(mode), rules.special_bits(mode)
    if writers:
        why = ('lets %s write the file: root sources it (login shells read /etc/profile.d, and the launch scripts), so a '
               'write bit for them lets them run commands as root; use 0644 (or 0640 or 0600)' % writers)
    elif special:
        why = 'sets %s: the file is sourced, never run, so it takes no setuid, setgid or sticky bit; use 0644' % special
    else:
        why = None
    if why and as_number:
        report.problem('mode', value, "is a number, which Ansible applies as the mode %04o: it %s; write the mode as a string, "
                       "such as '0644'" % (mode, why.split(':')[0]))
        return None
    if why:
        report.problem('mode', value, why)
        return None
    if not mode & 0o004:
        readers = 'root' if not mode & 0o040 else 'root and the group %s' % (group or 'of the file')
        report.advice.append('hccl_env_mode %s: only %s can read the file, so a launch script running as another user cannot '
                             'source it' % (show(value), readers))
    return '%04o' % mode


def _file_settings(report, file):
    """The file settings, checked (path, owner, group, mode; a missing one takes the role's default), or None."""
    if not isinstance(file, Mapping):
        _error('hccl_env', 'file %s is not a dict of %s' % (show(file), ', '.join(FILE_KEYS)))
    unknown = sorted(str(key) for key in set(file) - set(FILE_KEYS))
    if unknown:
        _error('hccl_env', 'file key %s is not known: the keys are %s' % (', '.join(unknown), ', '.join(FILE_KEYS)))
    settings = dict(FILE_DEFAULTS, **file)
    before = len(report.problems)
    path = _file_path(report, settings['path'])
    owner = _file_owner(report, settings['owner'])
    group = _file_group(report, settings['group'])
    mode = _file_mode(report, settings['mode'], group)
    if len(report.problems) > before:
        return None
    return {'path': path, 'owner': owner, 'group': group, 'mode': mode}


def _defaults_against_intent(report, values, ctx):
    """HCCL_RDMA_SL and HCCL_RDMA_TC left unset take HCCL's defaults 4 and 132: they must match the PoD's intent."""
    priority, dscp = ctx['lossless_priority'], ctx['lossless_dscp']
    if _unset(values.get('rdma_sl')) and priority is not None and priority != HCCL_DEFAULT_RDMA_SL:
        report.problem('rdma_sl', values.get('rdma_sl'), 'leaves HCCL_RDMA_SL at the HCCL default %d, but the lossless priority is '
                       '%d: HCCL_RDMA_SL must be the PFC-enabled priority, so set %d' % (HCCL_DEFAULT_RDMA_SL, priority, priority))
    if _unset(values.get('rdma_tc')) and dscp is not None and dscp * 4 != HCCL_DEFAULT_RDMA_TC:
        report.problem('rdma_tc', values.get('rdma_tc'), 'leaves HCCL_RDMA_TC at the HCCL default %d (DSCP 33), but the lossless '
                       'DSCP is %d: HCCL_RDMA_TC is DSCP x 4, so set %d' % (HCCL_DEFAULT_RDMA_TC, dscp, dscp * 4))


def hccl_env(values, context=None, file=None):
    """Validate and render the managed HCCL environment of a node: {env: [[NAME, value]], problems, advice, algo, file};
    ``file`` ({path, owner, group, mode}) is checked as the settings of a file that root sources."""
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
    settings = None if file is None else _file_settings(report, file)
    return {'env': env, 'problems': report.problems, 'advice': report.advice, 'algo': report.algo, 'file': settings}


# --- hccl_env_node_check --------------------------------------------------------------------------------------------

_KINDS = (('isdir', 'a directory'), ('isfifo', 'a FIFO'), ('issock', 'a socket'), ('ischr', 'a character device'),
          ('isblk', 'a block device'))


def _read(result):
    """The registered result of a read: (None, None) when skipped, (None, msg) when it failed, (result, None) otherwise."""
    if not isinstance(result, Mapping) or result.get('skipped'):
        return None, None
    if result.get('failed'):
        return None, str(result.get('msg') or 'the read failed')
    return result, None


def _path_problem(path, found):
    stat = found.get('stat') or {}
    if not stat.get('exists'):
        return None
    if stat.get('islnk'):
        return ('hccl_env_path %s is a symbolic link to %s: the file root sources is written only as a regular file, never '
                'through or in place of a link; remove the link or set hccl_env_path to another file'
                % (show(path), show(stat.get('lnk_target') or stat.get('lnk_source') or '?')))
    if not stat.get('isreg'):
        kind = next((what for key, what in _KINDS if stat.get(key)), 'not a file')
        return 'hccl_env_path %s is %s, not a regular file: set hccl_env_path to a file' % (show(path), kind)
    return None


def _directory_problem(path, found):
    stat = found.get('stat') or {}
    directory = posixpath.dirname(path)
    if not stat.get('exists'):
        return ('hccl_env_path %s: its directory %s does not exist on this node; create it or choose another path'
                % (show(path), directory))
    if not stat.get('isdir'):
        return 'hccl_env_path %s: %s is not a directory on this node; choose another path' % (show(path), directory)
    mode = int(str(stat.get('mode') or '0'), 8)
    if rules.write_bits(mode):
        return ('hccl_env_path %s: its directory %s can be written by other users (mode %04o), who could put another file or '
                'a link in its place; choose a directory only root can write, such as /etc/profile.d'
                % (show(path), directory, mode))
    if stat.get('uid') not in (0, None):
        owner = stat.get('pw_name') or '?'
        return ('hccl_env_path %s: its directory %s belongs to %s (uid %s), who could replace the file; choose a directory '
                'only root can write, such as /etc/profile.d' % (show(path), directory, owner, stat.get('uid')))
    return None


def hccl_env_node_check(result, path_stat, dir_stat=None, group_entry=None):
    """The hccl_env result with the problems of what is at the file's path on this node: a link, not a regular file, a
    missing or writable directory (``path_stat``: stat with follow false; ``dir_stat``: stat of its directory), a group
    that is not there (``group_entry``: getent group with fail_key false, or a skipped task)."""
    if not isinstance(result, Mapping) or not isinstance(result.get('file'), Mapping):
        if isinstance(result, Mapping) and result.get('problems'):
            return dict(result)
        _error('hccl_env_node_check', 'the result has no file settings: call hccl_env with the file argument (path, owner, '
               'group, mode) first')
    settings = result['file']
    path = settings['path']
    problems = []
    found, failed = _read(path_stat)
    if failed is not None:
        problems.append({'variable': 'hccl_env_path', 'value': path,
                         'problem': 'hccl_env_path %s could not be checked on this node: %s' % (show(path), failed)})
    elif found is not None:
        text = _path_problem(path, found)
        if text:
            problems.append({'variable': 'hccl_env_path', 'value': path, 'problem': text})
    found, failed = _read(dir_stat)
    if failed is not None:
        problems.append({'variable': 'hccl_env_path', 'value': path,
                         'problem': 'hccl_env_path %s: its directory could not be checked on this node: %s'
                                    % (show(path), failed)})
    elif found is not None and not problems:
        text = _directory_problem(path, found)
        if text:
            problems.append({'variable': 'hccl_env_path', 'value': path, 'problem': text})
    found, failed = _read(group_entry)
    group = settings['group']
    if failed is not None:
        problems.append({'variable': 'hccl_env_group', 'value': group,
                         'problem': 'hccl_env_group %s could not be looked up on this node: %s' % (show(group), failed)})
    elif found is not None:
        entries = (found.get('ansible_facts') or {}).get('getent_group') or {}
        if not any(entry is not None for entry in entries.values()):
            problems.append({'variable': 'hccl_env_group', 'value': group,
                             'problem': 'hccl_env_group %s is not a group on this node (getent group finds no such entry), '
                                        'so the file cannot be given to it; create the group or leave hccl_env_group root'
                                        % show(group)})
    out = dict(result)
    out['problems'] = list(result.get('problems') or []) + problems
    if problems:
        out['file'] = None
    return out


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


# --- the HCCL environment of a node against its ports (stage 5) ------------------------------------------------------

def problem_texts(result):
    """The text of each problem of one node's hccl_env result (what its check record keeps)."""
    return [str(p.get('problem') if isinstance(p, Mapping) else p) for p in (result or {}).get('problems') or []]


def check_data(result):
    """What a node's check record of stage 5 keeps besides its problems: whether its settings were usable (false:
    nothing was read on the node) and the file's checked settings (path, owner, group, mode)."""
    result = result or {}
    return {'settings_usable': bool(result.get('settings_usable')), 'file': result.get('file')}


def pod_check_message(checks, missing, path):
    """Why stage 5 stops on every node before a file is written, or None: ``checks`` the nodes' check records (node ->
    record, in the play's order), ``missing`` why a node has no usable record (node -> text). Problems of the settings
    themselves come first; then every problem at the file's path on any node, and every node without a record."""
    unusable = ['%s: %s' % (node, text) for node, record in checks.items()
                if not (record.get('data') or {}).get('settings_usable', True) for text in record.get('problems') or []]
    if unusable:
        return ('The HCCL settings are not usable (%d problem(s)), so %s was not written on any node: %s'
                % (len(unusable), path, ' | '.join(unusable)))
    lines = ['%s: %s' % (node, text) for node, record in checks.items() for text in record.get('problems') or []]
    lines += ['%s: %s' % (node, text) for node, text in (missing or {}).items()]
    if lines:
        return ('The HCCL environment file cannot be written as asked (%d problem(s)), so %s was not written on any '
                'node: %s' % (len(lines), path, ' | '.join(lines)))
    return None


def hccl_env_findings(result, host=None, loaded=None, ports=None, intent=None, log_level_min=3,
                      allow_loopback_if_ip=False):
    """Stage 5 findings: the file, loaded by a shell, sets every value; HCCL_IF_IP is an address of the node on the
    NIC HCCL_SOCKET_IFNAME names; ASCEND_GLOBAL_LOG_LEVEL is not below ``log_level_min`` in the loaded environment or
    in /etc/profile.d; HCCL_RDMA_SL / HCCL_RDMA_TC (written or HCCL's defaults) match the PFC priority and the DSCP map
    of every NPU port (``ports``: an hccn_info result, or the planned config list of stage 4 in a dry run)."""
    host = host or 'this node'
    out = []
    env = dict((name, str(value)) for name, value in (result or {}).get('env') or [])
    if loaded is not None:
        env_text, ip_text, profile_lines = split_loaded(loaded)
        seen = dict(line.split('=', 1) for line in env_text.splitlines() if '=' in line)
        for name, value in sorted(env.items()):
            if seen.get(name) != value:
                out.append(finding(host, None, name, seen.get(name), value,
                                   '%s is %s after loading the env file in sh, expected %s' % (
                                       name, 'unset' if seen.get(name) is None else repr(seen.get(name)), repr(value))))
        if ip_text is not None or IP_MARKER in str(loaded):
            out.extend(if_ip_findings(host, seen.get('HCCL_IF_IP', env.get('HCCL_IF_IP')),
                                      seen.get('HCCL_SOCKET_IFNAME', env.get('HCCL_SOCKET_IFNAME')), ip_text,
                                      bool(allow_loopback_if_ip)))
        if int(log_level_min) > 0:
            out.extend(log_level_findings(host, seen, profile_lines, log_level_min))
    entries = by_device(ports) if isinstance(ports, (list, tuple)) or (isinstance(ports, Mapping) and ports.get('devices')) else {}
    if entries:
        intent = intent or {}
        sl = int(env.get('HCCL_RDMA_SL', HCCL_DEFAULT_RDMA_SL))
        tc_value = int(env.get('HCCL_RDMA_TC', HCCL_DEFAULT_RDMA_TC))
        dscp = tc_value // 4
        lossless_tc = intent.get('lossless_tc')
        for dev, entry in sorted(entries.items()):
            priorities = entry.get('pfc_priorities')
            if priorities is not None and sl not in priorities:
                out.append(finding(host, dev, 'HCCL_RDMA_SL', sl, priorities,
                                   'HCCL_RDMA_SL=%d but the port has PFC on %s: the RDMA traffic would not be lossless; run '
                                   'stage 4 (roce_lossless) or fix npuops_lossless_priority' % (sl, port_text(priorities))))
            table = dscp_map(entry)
            if table is not None and lossless_tc is not None and table.get(dscp) != int(lossless_tc):
                out.append(finding(host, dev, 'HCCL_RDMA_TC', tc_value, lossless_tc,
                                   'HCCL_RDMA_TC=%d marks DSCP %d, which the port maps to TC %s, not the lossless TC %s; run '
                                   'stage 4 (roce_lossless) or fix npuops_lossless_dscp' % (tc_value, dscp, table.get(dscp),
                                                                                            lossless_tc)))
    elif isinstance(ports, Mapping) and not ports.get('skipped'):
        out.append(finding(host, None, 'ports', None, 'read', 'the NPU ports could not be read to check HCCL_RDMA_SL/TC: %s'
                           % ports.get('msg'), WARN))
    return out


# --- the stage 5 action (npuops.ascend.stage_hccl_env) ------------------------------------------------------------------

STAGE = 5
ROLE = 'hccl_env'
REPORT_DIR = 'stage5-hccl_env'
# The one read of the node part: the file loaded in sh as a launch script does, then the environment, the interfaces
# and their addresses (ip -j addr show) and the log settings of the login scripts in /etc/profile.d (regular files only,
# a link is not followed), each after a marker line. A missing ip or grep leaves its part empty.
IP_MARKER = '### npuops: ip -j addr show'
PROFILE_MARKER = '### npuops: /etc/profile.d log settings'
LOG_VARIABLES = ('ASCEND_GLOBAL_LOG_LEVEL', 'ASCEND_SLOG_PRINT_TO_STDOUT')
LOAD_SCRIPT = ('. "$1" || exit $?; env; echo "%s"; ip -j addr show 2>/dev/null; echo; echo "%s"; '
               'for f in /etc/profile.d/*.sh; do if [ -f "$f" ] && [ ! -L "$f" ]; then '
               'grep -H -E "^[[:space:]]*(export[[:space:]]+)?(%s)=" "$f" 2>/dev/null; fi; done; exit 0'
               % (IP_MARKER, PROFILE_MARKER, '|'.join(LOG_VARIABLES)))
# ASCEND_GLOBAL_LOG_LEVEL: 0 DEBUG, 1 INFO, 2 WARNING, 3 ERROR (the default), 4 NULL (CANN environment variable
# reference envref_07_0122: DEBUG can slow the job down by the volume of logs).
LOG_LEVELS = {0: 'DEBUG', 1: 'INFO', 2: 'WARNING', 3: 'ERROR', 4: 'NULL'}
LOG_LEVEL_DEFAULT = 3


def split_loaded(stdout):
    """(environment text, ip -j text or None, profile.d lines) of the load command's output; an output without the
    markers (an older load script) is all environment."""
    text = str(stdout or '')
    head, sep, rest = text.partition('\n%s\n' % IP_MARKER)
    if not sep:
        return text, None, []
    # the command module drops the output's last newline: the marker may end the text when no script sets a level
    ip_text, sep, profile = rest.partition(PROFILE_MARKER)
    return head, ip_text.strip() or None, [line for line in profile.splitlines() if line.strip()]


def _profile_settings(lines):
    """[(file, variable, value)] of the profile.d lines ``<file>:[export ]NAME=VALUE`` (quotes dropped)."""
    out = []
    for line in lines:
        path, sep, assignment = line.partition(':')
        if not sep:
            continue
        assignment = assignment.strip()
        if assignment.startswith('export'):
            assignment = assignment[len('export'):].strip()
        name, sep, value = assignment.partition('=')
        if sep and name in LOG_VARIABLES:
            value = value.split('#', 1)[0].strip().strip('"').strip("'")
            out.append((path, name, value))
    return out


def log_level_findings(host, env_seen, profile_lines, log_level_min=LOG_LEVEL_DEFAULT):
    """ASCEND_GLOBAL_LOG_LEVEL below ``log_level_min`` (default 3, ERROR, CANN's default) in the environment the
    jobs get (the environment after loading the managed file) or in a login script of /etc/profile.d: warnings naming
    where it is set. 0 as ``log_level_min`` turns the check off."""
    out = []
    minimum = int(log_level_min)
    sources = []
    if 'ASCEND_GLOBAL_LOG_LEVEL' in env_seen:
        sources.append(('the environment after loading the HCCL env file', env_seen['ASCEND_GLOBAL_LOG_LEVEL']))
    sources.extend((path, value) for path, name, value in _profile_settings(profile_lines)
                   if name == 'ASCEND_GLOBAL_LOG_LEVEL')
    for where, value in sources:
        level = integer(value)
        if level is None or level not in LOG_LEVELS or level >= minimum:
            continue
        out.append(finding(host, None, 'ASCEND_GLOBAL_LOG_LEVEL', level, minimum,
                           'ASCEND_GLOBAL_LOG_LEVEL=%d (%s) in %s: below %d (%s); logging at this level can slow the job '
                           'down by the volume of logs (CANN environment variable reference, ASCEND_GLOBAL_LOG_LEVEL, '
                           'envref_07_0122); set 3 (ERROR, the default) for performance runs'
                           % (level, LOG_LEVELS[level], where, minimum, LOG_LEVELS.get(minimum, minimum)), WARN))
    return out


def if_ip_findings(host, if_ip, socket_ifname, ip_text, allow_loopback=False):
    """HCCL_IF_IP must be an address of this node, on an interface HCCL_SOCKET_IFNAME selects (when both are set;
    HCCL_IF_IP wins over HCCL_SOCKET_IFNAME, CANN environment variable reference envref_07_0075). ``ip_text``: the
    node's ``ip -j addr show``. A loopback HCCL_IF_IP of a simulated PoD (``allow_loopback``) that no interface
    holds is not judged (the node is a process on a shared host)."""
    if not if_ip:
        return []
    interfaces = rules.interfaces_from_ip_json(ip_text) if ip_text else None
    if interfaces is None:
        return [finding(host, None, 'HCCL_IF_IP', if_ip, 'an address of this node',
                        'HCCL_IF_IP=%s could not be checked against the interfaces: ip -j addr show printed %s' % (
                            if_ip, 'nothing (iproute2 missing?)' if not ip_text else 'no interface list'), WARN)]
    address = rules.ip(str(if_ip))
    holders = sorted(name for name, addresses in interfaces.items()
                     if any(rules.ip(item.split('%', 1)[0]) == address for item in addresses))
    if not holders:
        if allow_loopback and address is not None and address.is_loopback():
            return []
        return [finding(host, None, 'HCCL_IF_IP', if_ip, 'an address of this node',
                        'HCCL_IF_IP=%s is on no interface of this node (interfaces: %s): HCCL binds its root-info '
                        'socket to this host address and fails to create the communicator (CANN environment variable '
                        'reference, HCCL_IF_IP)' % (if_ip, ', '.join(sorted(interfaces)) or 'none'))]
    if not socket_ifname:
        return []
    try:
        selected = [name for name in holders if rules.socket_ifname_selects(str(socket_ifname), name)]
    except ValueError:
        return []   # the settings check reports a malformed HCCL_SOCKET_IFNAME
    if selected:
        return []
    wanted = sorted(name for name in interfaces if rules.socket_ifname_selects(str(socket_ifname), name))
    return [finding(host, None, 'HCCL_IF_IP', holders[0], wanted or str(socket_ifname),
                    'HCCL_IF_IP=%s is on %s, but HCCL_SOCKET_IFNAME=%s selects %s: HCCL uses HCCL_IF_IP (it wins over '
                    'HCCL_SOCKET_IFNAME, CANN environment variable reference envref_07_0075), so the two settings name '
                    'different NICs; put HCCL_IF_IP on the NIC HCCL_SOCKET_IFNAME names or fix HCCL_SOCKET_IFNAME'
                    % (if_ip, ', '.join(holders), socket_ifname, ', '.join(wanted) if wanted else 'no interface of this node'),
                    WARN)]


def path_info_args(path):
    """The arguments of the one read-only npuops.ascend.path_info run of the check step: the file's path (a link is not
    followed; the SHA-1 of a regular file) and its directory (followed)."""
    return {'paths': [{'path': path, 'follow': False, 'checksum': True},
                      {'path': posixpath.dirname(path), 'follow': True, 'checksum': False}]}


def path_info_stats(read):
    """(path_stat, dir_stat) in the shape of ansible.builtin.stat results (``{stat: ...}``, or ``{failed, msg}``) from
    the path_info result of :func:`path_info_args`."""
    if not isinstance(read, Mapping) or read.get('failed') or len(read.get('paths') or []) != 2:
        failed = {'failed': True, 'msg': str((read or {}).get('msg') or 'path_info returned no reading')
                  if isinstance(read, Mapping) else 'path_info returned no reading'}
        return failed, dict(failed)
    out = []
    for item in read['paths']:
        if item.get('failed'):
            out.append({'failed': True, 'msg': str(item.get('msg') or 'could not examine %s' % item.get('path'))})
        else:
            out.append({'stat': item.get('stat') or {}})
    return out[0], out[1]


def group_lookup_args(group):
    """The arguments of the getent lookup of the file's group, or None when the group is root (no lookup)."""
    if group in ('root', '0'):
        return None
    return {'database': 'group', 'key': group, 'fail_key': False}


def check_result(result, settings_usable):
    """What the check step returns (and the role registers as hccl_env_result): the hccl_env result (after the node's
    check when the settings were usable) and ``settings_usable`` - false when the settings themselves have problems,
    in which case nothing was read on the node and every problem is a problem of the settings."""
    out = dict(result)
    out['settings_usable'] = bool(settings_usable)
    return out


def file_copy_args(result):
    """The arguments of the copy that writes the managed file: the checked settings (``result['file']``) and the text,
    never through a link, with a backup of the file it replaces. An error when the result has problems."""
    settings = result.get('file') if isinstance(result, Mapping) else None
    problems = (result.get('problems') if isinstance(result, Mapping) else None) or []
    if problems or not isinstance(settings, Mapping):
        _error('stage_hccl_env', 'the file is written only from a checked result without problems (the check step); '
               'this one has %d problem(s): %s' % (len(problems), ' | '.join(
                   str(p.get('problem') if isinstance(p, Mapping) else p) for p in problems) or 'no file settings'))
    return {'content': hccl_env_file(result, path=settings['path']), 'dest': settings['path'],
            'owner': settings['owner'], 'group': settings['group'], 'mode': settings['mode'],
            'follow': False, 'backup': True}


def load_args(path):
    """The command that loads the file in sh, as a launch script does, and prints the environment."""
    return {'argv': ['sh', '-c', LOAD_SCRIPT, 'sh', path]}


def load_skipped(check_mode, written_changed):
    """A dry run that would change the file does not load it: the file on the node is still the old one."""
    return bool(check_mode and written_changed)


def ports_read_args(devices, timeout):
    """The hccn_info read of the PFC priorities and the DSCP map that HCCL_RDMA_SL and HCCL_RDMA_TC must match."""
    out = {'queries': ['pfc', 'dscp_to_tc'], 'timeout': timeout}
    if devices is not None:
        out['devices'] = devices
    return out


def ports_to_check(check_ports, stage4_given, stage4_ports, read):
    """The port settings HCCL_RDMA_SL/TC are checked against: None when the ports are not checked; the settings stage 4
    of this run verified (or would set, in a dry run) when it gave them; else the hccn_info read of the node."""
    if not check_ports:
        return None
    return stage4_ports if stage4_given else read


def record_files(result, content):
    """The record's ``files``: the one file stage 5 manages, ``[{kind: hccl_env, path, checksum, owner, group, mode}]``
    with the SHA-1 of ``content`` (the text the node step wrote, found in place, or would write in a dry run); empty
    when there is no content or no file settings (nothing was written)."""
    settings = (result or {}).get('file') if isinstance(result, Mapping) else None
    if content is None or not isinstance(settings, Mapping) or not settings.get('path'):
        return []
    return [{'kind': FILE_KIND, 'path': settings['path'], 'checksum': node_files.checksum(content),
             'owner': settings.get('owner'), 'group': settings.get('group'), 'mode': settings.get('mode')}]


def record_data(result, changed, content=None):
    """The ``data`` of the node's record of stage 5: whether the file changed and what it holds, and for the report of
    the PoD (which in the PoD part of a run in parts has only the records) the file's settings, HCCL_ALGO and the
    advice; ``files`` (:func:`record_files`) for the drift audit, from ``content``, the text the file was left with."""
    result = result or {}
    settings = result.get('file') or {}
    return {'changed': bool(changed), 'env': result.get('env') or [],
            'file': dict((key, settings.get(key)) for key in ('path', 'owner', 'group', 'mode')),
            'algo': result.get('algo'), 'advice': list(result.get('advice') or []),
            'files': record_files(result, content)}


def node_report(host, run_id, result, changed, findings):
    """The per-node JSON report of stage 5 (``<run dir>/stage5-hccl_env/<node>.json``)."""
    settings = result.get('file') or {}
    return {'host': host, 'run': run_id, 'path': settings.get('path'), 'file': settings, 'changed': bool(changed),
            'env': result.get('env'), 'algo': result.get('algo'), 'advice': result.get('advice'), 'findings': findings}
