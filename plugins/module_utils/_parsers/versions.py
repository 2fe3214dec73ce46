# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parsers for the Ascend version files.

- ``/usr/local/Ascend/driver/version.info`` and ``/usr/local/Ascend/firmware/version.info``
- ``<toolkit>/latest/<arch>-linux/ascend_toolkit_install.info`` (and ``ascend_nnae_install.info``,
  ``/etc/ascend_install.info``: the same ``KEY=VALUE`` shape)
- ``<toolkit>/latest/version.cfg``
- ``<toolkit>/latest/opp_kernel/version.info`` (the CANN kernels package; ``toolkit/version.info`` has the same shape)
- ``/usr/local/Ascend/mindie/latest/version.info`` (``Key : Value`` lines)
- ``/proc/sys/kernel/osrelease`` (what ``uname -r`` prints)
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
        if len(value) >= 2 and value[0] == value[-1] == '"':    # required_package_*_version=">=7.6, <=8.3"
            value = value[1:-1]
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


_BUILD = re.compile(r'^(.*?)\.B\d+$')
_RELEASE = re.compile(r'^(\d+)\.(\d+)(?:\.(\d+))?')


def release_of(build):
    """'2.1.RC1.B152' -> '2.1.RC1': a MindIE build number without its ``.B<n>`` suffix."""
    text = str(build or '').strip()
    match = _BUILD.match(text)
    return match.group(1) if match else (text or None)


def parse_mindie_info(text):
    """Parse MindIE's ``/usr/local/Ascend/mindie/latest/version.info`` (``Key : Value``, spaces optional).

    Sample::

        Ascend-mindie : MindIE 2.1.RC1.B152
        mindie-rt: 2.1.RC1.B152
        mindie-llm: 2.1.RC1.B152
        mindie-sd:2.1.RC1.B152
        Platform : aarch64

    Returns ``{'version': '2.1.RC1.B152', 'release': '2.1.RC1', 'platform': 'aarch64',
    'components': {'mindie-rt': '2.1.RC1.B152', 'mindie-llm': '2.1.RC1.B152', 'mindie-sd': '2.1.RC1.B152'}}``;
    ``version`` is the ``Ascend-mindie`` line without its product word.
    """
    out = {'version': None, 'release': None, 'platform': None, 'components': {}, 'unparsed': []}
    for line in lines_of(text):
        stripped = line.strip()
        if not stripped:
            continue
        key, sep, value = stripped.partition(':')
        key, value = key.strip(), value.strip()
        if not sep or not key:
            out['unparsed'].append(line)
            continue
        lowered = key.lower()
        if lowered == 'ascend-mindie':
            words = value.split()
            out['version'] = words[-1] if words else None
        elif lowered == 'platform':
            out['platform'] = value or None
        else:
            out['components'][key] = value or None
    out['release'] = release_of(out['version'])
    return out


def parse_kernel_release(text):
    """Parse ``/proc/sys/kernel/osrelease`` (the text ``uname -r`` prints).

    Sample::

        5.10.0-60.18.0.50.oe2203.aarch64

    Returns ``{'release': '5.10.0-60.18.0.50.oe2203.aarch64', 'numbers': [5, 10, 0]}``; ``numbers`` is empty
    when the release does not start with ``<major>.<minor>``.
    """
    out = {'release': None, 'numbers': [], 'unparsed': []}
    lines = [line for line in lines_of(text) if line.strip()]
    if not lines:
        return out
    out['release'] = lines[0].strip()
    out['unparsed'] = lines[1:]
    match = _RELEASE.match(out['release'])
    if match:
        out['numbers'] = [int(part) for part in match.groups() if part is not None]
    return out


PARSERS = {
    'version_info': parse_version_info,
    'install_info': parse_version_info,
    'version_cfg': parse_version_cfg,
    'opp_kernel_info': parse_version_info,
    'mindie_info': parse_mindie_info,
    'kernel_release': parse_kernel_release,
}
