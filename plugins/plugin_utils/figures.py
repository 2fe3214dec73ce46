# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Figures in the controller's text: whether a value is a usable number, and how a number is written."""

from __future__ import annotations

import math


def is_number(value):
    """A finite int or float; a boolean is not a number here."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def figure(value, digits=2):
    """A number with at most ``digits`` decimals and no trailing zeros ('2.5', '137.1', '25'); '-' for None; any
    other value as its text."""
    if value is None:
        return '-'
    if is_number(value):
        text = ('%.' + str(digits) + 'f') % value
        return text.rstrip('0').rstrip('.') if '.' in text else text
    return str(value)


def signed(pct):
    """A change in percent with its sign: '+5', '-2.5', '0'."""
    return ('+' if pct > 0 else '') + figure(pct)
