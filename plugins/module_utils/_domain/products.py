# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which Ascend product a node carries, read from the chip names and the layout of ``npu-smi info``.

The stages use it to apply the product's limits and to skip what does not apply: an Atlas 300I
Duo inference card (310P3) has no RoCE port for ``hccn_tool`` and no HCCS; an A3 node (Ascend
910C, two dies per NPU) has one RoCE port per die and SIO between the two dies of one NPU.

Facts per family (public Huawei product documentation):

- ``A2``: Atlas 800T/800I A2, Atlas 900 A2 PoD; Ascend 910B1-B4; one chip per NPU; HBM; one
  200GE RoCE v2 port per NPU; HCCS inside the node.
- ``A3``: Atlas 800T/800I A3, Atlas 900 A3 SuperPoD; Ascend 910C shown as ``Ascend910`` with a
  ``Chip  Phy-ID`` header; two dies per NPU, each with its own device id, HBM and RoCE port; SIO
  between the two dies of one NPU, HCCS between NPUs.
- ``910A``: Atlas 800 (model 9000/9010), Ascend 910 / 910A / 910 Pro; one chip per NPU; HBM plus
  on-board DDR; one 100GE RoCE port per NPU; HCCS inside groups of four NPUs.
- ``310P``: Atlas 300I Pro / Duo, Atlas 300V; Ascend 310P1/310P3; one or two chips per card;
  LPDDR memory, no HBM; no RoCE port; PCIe only.
- ``310``: Atlas 300I (model 3000/3010); Ascend 310; DDR; no RoCE port; PCIe only.
- ``310B``: Atlas 200I A2 / 200I DK A2; Ascend 310B; DDR; no RoCE port; one chip.

The RoCE limits are those hccn_tool of the 910B enforces (captured: ``-dscp_to_tc -s`` takes traffic
classes 0-3, ``-mtu -s`` 68-9702, eight PFC priorities). No capture shows them for the A3 or the
910A: there they are the 910B's, marked ``assumed``.
"""

from __future__ import annotations

import re

FAMILIES = {
    'A2': {'memory': 'HBM', 'roce_ports': True, 'intra_node_link': 'HCCS', 'dies_per_npu': 1},
    'A3': {'memory': 'HBM', 'roce_ports': True, 'intra_node_link': 'HCCS+SIO', 'dies_per_npu': 2},
    '910A': {'memory': 'HBM+DDR', 'roce_ports': True, 'intra_node_link': 'HCCS', 'dies_per_npu': 1},
    '310P': {'memory': 'DDR', 'roce_ports': False, 'intra_node_link': 'PCIe', 'dies_per_npu': 1},
    '310': {'memory': 'DDR', 'roce_ports': False, 'intra_node_link': 'PCIe', 'dies_per_npu': 1},
    '310B': {'memory': 'DDR', 'roce_ports': False, 'intra_node_link': 'PCIe', 'dies_per_npu': 1},
}
# The RoCE limits of a family with ports (hccn_tool of the 910B; assumed for the other families), written once:
# the node side and the controller side import these names.
MTU_MIN = 68            # hccn_tool -mtu -s size takes 68 to 9702
MTU_MAX = 9702
TC_MAX = 3              # hccn_tool -dscp_to_tc -s takes the traffic classes 0 to 3
PRIORITY_MAX = 7        # PFC has the eight priorities 0 to 7
DSCP_MAX = 63           # a DSCP has 6 bits
ROCE_LIMITS = {'tc_max': TC_MAX, 'pfc_priorities': PRIORITY_MAX + 1, 'dscp_max': DSCP_MAX, 'mtu_min': MTU_MIN,
               'mtu_max': MTU_MAX}

# Dense 16-bit (FP16/BF16) Cube peak of one NPU in TFLOP/s, by the chip name npu-smi prints: what MFU divides by.
# Huawei's torchtitan-npu divides by these for MFU ("MFU uses the BF16 Cube peak rather than the larger total-throughput
# figure"), next to the total figures 400 / 376 / 313 / 280 (torchtitan_npu/patches/tools/metrics.py,
# _patched_get_peak_flops). The Cube figures are the AI Cores x 4096 multiply-adds per cycle x 2 x the clock: 24 cores
# at 1.8 GHz = 353.8944 (910B2), 20 at 1.8 GHz = 294.912 (910B3), 20 at 1.5 GHz = 245.76 (910B4).
PEAK_TFLOPS = {'910B1': 373.88, '910B2': 353.8944, '910B3': 294.912, '910B4': 245.76}

_PATTERNS = (
    (re.compile(r'^(Ascend\s*)?910B\d*$', re.I), 'A2'),
    (re.compile(r'^(Ascend\s*)?910_?93$', re.I), 'A3'),
    (re.compile(r'^(Ascend\s*)?910C\d*$', re.I), 'A3'),
    (re.compile(r'^(Ascend\s*)?910(A|ProA|ProB|Pro|PremiumA)?$', re.I), '910A'),
    (re.compile(r'^(Ascend\s*)?310P\d*$', re.I), '310P'),
    (re.compile(r'^(Ascend\s*)?310B\d*$', re.I), '310B'),
    (re.compile(r'^(Ascend\s*)?310$', re.I), '310'),
)


def family_of_name(name, dies_per_npu=1, has_phy_id=False):
    """The family of one chip name as npu-smi prints it; ``None`` when the name is not known.

    ``Ascend910`` is the name of both an A3 die and (with the older drivers) a 910A: it is A3 when
    the table shows two dies per NPU or a ``Phy-ID`` column.
    """
    text = (name or '').strip()
    for pattern, family in _PATTERNS:
        if pattern.match(text):
            if family == '910A' and (dies_per_npu > 1 or has_phy_id):
                return 'A3'
            return family
    return None


def identify(devices):
    """The product of a node from the device rows of a parsed ``npu-smi info`` table.

    Returns ``{'family', 'chip_names', 'npus', 'chips', 'dies_per_npu', 'memory', 'roce_ports',
    'intra_node_link', 'known'}`` plus ``limits`` (the RoCE limits, or ``None`` without RoCE
    ports). An unknown or mixed node has family ``unknown`` and is treated like an A2 by the
    stages that need a family, with ``known`` false so that a report can say so.
    """
    rows = [row for row in devices or [] if isinstance(row, dict)]
    per_npu = {}
    for row in rows:
        per_npu.setdefault(row.get('npu'), []).append(row)
    dies = max([len(chips) for chips in per_npu.values()] or [1])
    has_phy = any(row.get('phy_id') is not None for row in rows)
    names = sorted(set(str(row.get('name')) for row in rows if row.get('name')))
    families = set(family_of_name(name, dies, has_phy) for name in names)
    family = families.pop() if len(families) == 1 else None
    known = family is not None
    facts = dict(FAMILIES.get(family or 'A2'))
    if dies > facts['dies_per_npu']:
        # 310P Duo cards carry two chips that npu-smi lists under one card id
        facts['dies_per_npu'] = dies
    return {
        'family': family or 'unknown',
        'known': known,
        'chip_names': names,
        'npus': len(per_npu),
        'chips': len(rows),
        'dies_per_npu': facts['dies_per_npu'],
        'memory': facts['memory'],
        'roce_ports': facts['roce_ports'],
        'intra_node_link': facts['intra_node_link'],
        'limits': dict(ROCE_LIMITS, assumed=family != 'A2') if facts['roce_ports'] else None,
    }
