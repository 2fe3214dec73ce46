# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which product a node carries, from the rows of a parsed ``npu-smi info`` table."""

from __future__ import annotations

import pytest

from ansible_collections.npuops.ascend.plugins.module_utils._domain import products as _products


def _rows(name, npus, dies=1, phy=False):
    rows = []
    for npu in range(npus):
        for chip in range(dies):
            row = {'npu': npu, 'chip': chip, 'name': name}
            if phy:
                row['phy_id'] = npu * dies + chip
            rows.append(row)
    return rows


@pytest.mark.parametrize('name,expected', [
    ('910B3', 'A2'), ('910B1', 'A2'), ('Ascend 910B4', 'A2'), ('910A', '910A'), ('910ProB', '910A'),
    ('310P3', '310P'), ('310P1', '310P'), ('310B1', '310B'), ('310', '310'), ('Ascend910_93', 'A3'),
    ('xxx', None), ('', None), (None, None),
])
def test_family_of_one_name(name, expected):
    assert _products.family_of_name(name) == expected


def test_ascend910_is_an_a3_die_when_two_rows_share_an_npu_or_a_phy_id_is_shown():
    assert _products.family_of_name('Ascend910') == '910A'
    assert _products.family_of_name('Ascend910', dies_per_npu=2) == 'A3'
    assert _products.family_of_name('Ascend910', has_phy_id=True) == 'A3'


def test_a2_node():
    found = _products.identify(_rows('910B3', 8))
    assert (found['family'], found['known'], found['npus'], found['chips'], found['dies_per_npu']) == ('A2', True, 8, 8, 1)
    assert found['roce_ports'] and found['memory'] == 'HBM' and found['intra_node_link'] == 'HCCS'
    assert found['limits'] == {'tc_max': 3, 'pfc_priorities': 8, 'dscp_max': 63, 'mtu_min': 68, 'mtu_max': 9702, 'assumed': False}


def test_a3_node_has_two_dies_per_npu_and_sio():
    found = _products.identify(_rows('Ascend910', 8, dies=2, phy=True))
    assert (found['family'], found['npus'], found['chips'], found['dies_per_npu']) == ('A3', 8, 16, 2)
    assert found['roce_ports'] and found['intra_node_link'] == 'HCCS+SIO' and found['limits']['assumed'] is True


def test_300i_duo_host_has_no_roce_ports_and_no_limits():
    found = _products.identify(_rows('310P3', 4, dies=2))
    assert (found['family'], found['chips'], found['dies_per_npu'], found['memory']) == ('310P', 8, 2, 'DDR')
    assert found['roce_ports'] is False and found['limits'] is None and found['intra_node_link'] == 'PCIe'


def test_unknown_or_mixed_names_are_not_guessed():
    redacted = _products.identify(_rows('xxx', 8))
    assert redacted['family'] == 'unknown' and redacted['known'] is False and redacted['chip_names'] == ['xxx']
    mixed = _products.identify(_rows('910B3', 1) + [{'npu': 1, 'chip': 0, 'name': '310P3'}])
    assert mixed['family'] == 'unknown' and mixed['chip_names'] == ['310P3', '910B3']
    assert _products.identify([])['family'] == 'unknown'


def test_health_view_of_two_chips_keeps_the_worst_word_and_every_code():
    from ansible_collections.npuops.ascend.plugins.module_utils._parsers import npu_smi
    text = ('\tHealth Status                  : Alarm\n'
            '\tError Code                     : A4025021 8C03A000\n'
            '\tChip ID                        : 0\n'
            '\tHealth Status                  : OK\n'
            '\tError Code                     : NA\n'
            '\tChip ID                        : 1\n')
    parsed = npu_smi.parse_health(text)
    assert parsed['health'] == 'Alarm' and parsed['error_codes'] == ['A4025021', '8C03A000'] and parsed['unparsed'] == []
    swapped = text.replace('Alarm', 'TMP').replace(': OK', ': Alarm').replace('TMP', 'OK')
    assert npu_smi.parse_health(swapped)['health'] == 'Alarm'


def test_upper_case_rc_versions_of_910a_drivers_are_kept_as_printed():
    """No public 910A table with an upper-case RC version (22.0.RC3) was found: the real 21.0.4 table with its title
    rewritten shows that the version is kept as printed and the rows are read the same."""
    import os
    from ansible_collections.npuops.ascend.plugins.module_utils._parsers import npu_smi
    path = os.path.join(os.path.dirname(__file__), '..', '..', 'fixtures', 'parsers', 'npu_smi', 'info', 'paddle_910a_21.0.4.txt')
    with open(path, encoding='utf-8') as handle:
        real = handle.read()
    assert '21.0.4' in real
    upper = real.replace('21.0.4', '22.0.RC3')
    parsed, before = npu_smi.parse_info(upper), npu_smi.parse_info(real)
    assert parsed['version'] == '22.0.RC3' and parsed['unparsed'] == []
    assert parsed['devices'] == before['devices'] and parsed['devices']
    assert _products.identify(parsed['devices'])['family'] == '910A'
