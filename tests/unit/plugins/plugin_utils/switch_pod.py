"""A synthetic PoD for the switch tests: 2 nodes x 8 NPUs cabled to four leaf switches, one of each family, the LLDP
data their NPU ports see, the intents the golden files are rendered from, and helpers to read the golden files and the
problems of one switch.

Regenerate the golden files with NPUOPS_REGEN_GOLDEN=1 (test_switch_files.py writes them), then review the diff line by
line against ../shared/reference/switch-qos.md and its sources before committing.
"""

from __future__ import annotations

import os
import re

from ansible_collections.npuops.ascend.plugins.module_utils._parsers.hccn_tool import parse_lldp_get
from ansible_collections.npuops.ascend.plugins.plugin_utils.switch.files import switch_config

HERE = os.path.dirname(os.path.abspath(__file__))
CAPTURE = os.path.join(HERE, '..', '..', '..', 'fixtures', 'captures', 'hccn_tool_-lldp_-g.txt')
GOLDEN = os.path.join(HERE, '..', '..', 'fixtures', 'switch')
REGEN = os.environ.get('NPUOPS_REGEN_GOLDEN') == '1'

FAMILY_OF = {'leaf-a': 'huawei_ce_a', 'leaf-b': 'huawei_ce_b', 'leaf-s': 'sonic', 'leaf-c': 'cumulus'}
SWITCHES = dict((name, {'family': family}) for name, family in FAMILY_OF.items())
CASES = {
    'default': {},
    'p3_dscp26': {'lossless_priority': 3, 'lossless_dscp': 26, 'mtu': 9000},
    # DSCP 33 on priority 3: the CE default DiffServ domain puts 33 in queue 4, so CE needs its own domain
    'p3_dscp33': {'lossless_priority': 3, 'lossless_dscp': 33, 'mtu': 9000},
}


def lldp_text(port, system_name=None, mgmt=None, chassis=None, frame=9216):
    """A device-side lldptool blob in the shape of the real capture (TLV names at column 0, values after a TAB)."""
    lines = []
    if chassis:
        lines += ['Chassis ID TLV', '\tMAC: %s' % chassis]
    lines += ['Port ID TLV', '\tIfname: %s' % port]
    if system_name:
        lines += ['System Name TLV', '\t%s' % system_name]
    if mgmt:
        lines += ['Management Address TLV', '\tIPv4: %s' % mgmt]
    if frame:
        lines += ['Maximum Frame Size TLV', '\t%d' % frame]
    lines.append('End of LLDPDU TLV')
    return '\n'.join(lines) + '\n'


def _port_name(switch, index):
    if switch in ('leaf-a', 'leaf-b'):
        return '400GE1/1/%d:%d' % (index // 2 + 1, index % 2 + 1)
    if switch == 'leaf-s':
        return 'Ethernet%d' % (index * 8)
    return 'swp%ds%d' % (index // 2 + 1, index % 2)


def synthetic_nodes():
    """2 nodes x 8 NPUs over 4 switches: NPUs 0-1 on leaf-a, 2-3 on leaf-b, 4-5 on leaf-s, 6-7 on leaf-c."""
    names = ['leaf-a', 'leaf-b', 'leaf-s', 'leaf-c']
    nodes = []
    for node_index, node in enumerate(['node01', 'node02']):
        devices = {}
        for npu in range(8):
            switch = names[npu // 2]
            index = node_index * 2 + npu % 2  # 4 ports a switch
            text = lldp_text(_port_name(switch, index), system_name=switch, mgmt='10.0.0.%d' % (npu // 2 + 1),
                             chassis='00:11:22:33:44:%02x' % (npu // 2))
            devices[str(npu)] = {'link': 'UP', 'lldp': parse_lldp_get(text)}
        nodes.append({'node': node, 'devices': devices})
    return nodes


def render(neighbours, case):
    return switch_config(neighbours, CASES[case], SWITCHES)


def all_goldens(families=None):
    """[(case, file name, family, content)] of the golden files, of the given families only when named."""
    out = []
    for case in sorted(CASES):
        folder = os.path.join(GOLDEN, case)
        for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
            family = FAMILY_OF[name.split('.')[0]]
            if families is not None and family not in families:
                continue
            with open(os.path.join(GOLDEN, case, name), encoding='utf-8') as handle:
                out.append((case, name, family, handle.read()))
    return out


def problem(neighbours, family, intent=None, settings=None, switch=None):
    """The problems switch_config finds on the switch of ``family`` (no file rendered for it)."""
    switch = switch or [s for s, f in FAMILY_OF.items() if f == family][0]
    switches = dict(SWITCHES)
    switches[switch] = dict({'family': family}, **(settings or {}))
    result = switch_config(neighbours, intent or {}, switches)
    assert switch not in [f['switch'] for f in result['files']]
    return [p for p in result['problems'] if p['switch'] == switch]


def assert_named(problems, family, key, value, valid):
    match = [p for p in problems if p['key'] == key]
    assert match, problems
    found = match[0]
    assert found['family'] == family and found['value'] == value and found['range'] == valid
    for text in (family, key, str(value)):
        assert text in found['msg']


def assert_reference_lines(case, name, family, content, allowed):
    """Every line of a rendered file (comments aside) matches one of ``allowed``: [(pattern, source in the references)]."""
    patterns = [(re.compile(pattern + r'\Z'), source) for pattern, source in allowed]
    for line in content.splitlines():
        if line.startswith('# ') or (family == 'cumulus' and line.startswith('#')):
            continue
        assert any(p.match(line) for p, _source in patterns), '%s/%s: %r is not a line the reference shows' % (case, name, line)
