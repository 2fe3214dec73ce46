# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parsers for the Ascend version files.

- ``/usr/local/Ascend/driver/version.info`` and ``/usr/local/Ascend/firmware/version.info``
- ``<toolkit>/latest/<arch>-linux/ascend_toolkit_install.info`` (and ``ascend_nnae_install.info``,
  ``/etc/ascend_install.info``: the same ``KEY=VALUE`` shape)
- ``<toolkit>/latest/version.cfg``
"""

from __future__ import annotations

import re

from ansible_collections.npuops.ascend.plugins.module_utils._parsers._common import lines_of, snake

_GROUP_RE = re.compile(r'\[([^\]]*)\]')


def _groups(value):
    """'[a],[b,c]' -> [['a'], ['b', 'c']]; None when the value is not a bracket list."""
    # one way only to split the spaces around a comma: the pattern stays linear on long values
    if not re.match(r'^(?:\[[^\]]*\]\s*(?:,\s*)?)+$', value):
        return None
    return [[item.strip() for item in group.split(',') if item.strip()] for group in _GROUP_RE.findall(value)]


def parse_version_info(text):
    """Parse ``KEY=VALUE`` version/install files (driver, firmware, toolkit, nnae, install info).

    Sample (driver ``version.info``)::

        Version=23.0.7
        Innerversion=V100R001C15SPC012B220
        compatible_version=[V100R001C29],[V100R001C30]
        compatible_version_fw=[7.0.0,7.1.99]
        package_version=23.0.7

    Returns snake_case keys with string values; bracket lists become lists of groups:
    ``{'version': '23.0.7', 'innerversion': 'V100R001C15SPC012B220',
    'compatible_version': [['V100R001C29'], ['V100R001C30']],
    'compatible_version_fw': [['7.0.0', '7.1.99']], 'package_version': '23.0.7'}``.
    """
    out = {'unparsed': []}
    for line in lines_of(text):
        stripped = line.strip()
        if not stripped:
            continue
        match = re.match(r'^([A-Za-z_][\w.]*)\s*=\s*(.*)$', stripped)
        if not match:
            out['unparsed'].append(line)
            continue
        key = snake(match.group(1))
        value = match.group(2).strip()
        groups = _groups(value)
        out[key] = groups if groups is not None else value
    return out


def parse_version_cfg(text):
    """Parse ``<toolkit>/latest/version.cfg``.

    Sample::

        # version: 1.0
        runtime_running_version=[7.6.0.1.220:8.0.0]
        toolkit_running_version=[7.6.0.1.220:8.0.0]
        toolkit_installed_version=[7.6.0.1.220:8.0.0]

    Returns ``{'format_version': '1.0', 'cann_version': '8.0.0', 'components': {'runtime':
    {'running': [{'inner': '7.6.0.1.220', 'cann': '8.0.0'}]}, 'toolkit': {...}}}``;
    ``cann_version`` is the running toolkit version (else the first running one).
    """
    out = {'format_version': None, 'cann_version': None, 'components': {}, 'unparsed': []}
    for line in lines_of(text):
        stripped = line.strip()
        if not stripped:
            continue
        header = re.match(r'^#\s*version\s*:\s*(\S+)$', stripped)
        if header:
            out['format_version'] = header.group(1)
            continue
        match = re.match(r'^(\w+?)_(running|upgrade|installed)_version\s*=\s*(.*)$', stripped)
        if not match:
            out['unparsed'].append(line)
            continue
        entries = []
        for group in _GROUP_RE.findall(match.group(3)):
            inner, sep, cann = group.partition(':')
            entries.append({'inner': inner.strip(), 'cann': cann.strip() if sep else None})
        if not entries and match.group(3).strip():
            out['unparsed'].append(line)
            continue
        out['components'].setdefault(match.group(1), {})[match.group(2)] = entries
    running = [(name, states['running']) for name, states in out['components'].items() if states.get('running')]
    preferred = [entries for name, entries in running if name == 'toolkit'] or [entries for _name, entries in running]
    if preferred:
        out['cann_version'] = preferred[0][0]['cann']
    return out


PARSERS = {
    'version_info': parse_version_info,
    'install_info': parse_version_info,
    'version_cfg': parse_version_cfg,
}
