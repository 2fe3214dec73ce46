"""figures: which values count as numbers, and how the reports and findings write a number."""

from __future__ import annotations

import pytest

from ansible_collections.npuops.ascend.plugins.plugin_utils.figures import figure, is_number, signed


@pytest.mark.parametrize('value, expected', [(0, True), (2.5, True), (-1, True), (True, False), (False, False),
                                             (float('nan'), False), (float('inf'), False), ('2', False), (None, False)])
def test_is_number(value, expected):
    assert is_number(value) is expected


@pytest.mark.parametrize('value, digits, text', [
    (137.1, 2, '137.1'), (25, 2, '25'), (25.0, 4, '25'), (2.125, 2, '2.12'), (353.8944, 4, '353.8944'),
    (1.23456, 3, '1.235'), (0.0, 2, '0'), (-2.5, 2, '-2.5'), (100000.0, 2, '100000'),
    (None, 2, '-'), ('n/a', 2, 'n/a'), (True, 2, 'True'), (float('nan'), 2, 'nan'),
])
def test_figure(value, digits, text):
    assert figure(value, digits) == text


def test_figure_has_two_decimals_by_default():
    assert figure(33.33333) == '33.33'


def test_signed():
    assert (signed(5), signed(33.333), signed(-2.5), signed(0)) == ('+5', '+33.33', '-2.5', '0')
