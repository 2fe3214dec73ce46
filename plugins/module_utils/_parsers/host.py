# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parsers for host facts an NPU node check needs: ``/proc/meminfo``, ``lspci``, ``/etc/os-release`` and the
transparent huge page mode (``/sys/kernel/mm/transparent_hugepage/enabled`` and ``defrag``).

Formats: ``/proc/meminfo`` is printed by ``meminfo_proc_show`` (``fs/proc/meminfo.c``) as ``%-16s%8lu kB``
lines (``HugePages_*`` are page counts without a unit); ``lspci`` (pciutils ``ls-kernel.c``/``lspci.c``)
prints one line per function: ``[domain:]bus:slot.func <class>: <vendor> <device> [(rev xx)]``, with ``-n``
the class and IDs as hex (``0000:c1:00.0 1200: 19e5:d802 (rev 20)``) and with ``-nn`` names followed by
the hex in brackets; ``/etc/os-release`` is the shell-compatible ``KEY=value`` file of os-release(5); the
huge page files hold the choices on one line with the active one in brackets (``mm/huge_memory.c``).
"""

from __future__ import annotations

import re

from ansible_collections.npuops.ascend.plugins.module_utils._parsers._common import lines_of, to_int

# ------------------------------------------------------------------------------------------------ meminfo

_MEMINFO_RE = re.compile(r'^([A-Za-z][A-Za-z0-9_()]*):[ \t]*([0-9]+)(?:[ \t]+(kB))?[ \t]*$')
_MEMINFO_KEYS = {
    'mem_total_kb': 'MemTotal',
    'mem_free_kb': 'MemFree',
    'mem_available_kb': 'MemAvailable',
    'hugepages_total': 'HugePages_Total',
    'hugepages_free': 'HugePages_Free',
    'hugepages_rsvd': 'HugePages_Rsvd',
    'hugepages_surp': 'HugePages_Surp',
    'hugepagesize_kb': 'Hugepagesize',
    'hugetlb_kb': 'Hugetlb',
}
_COUNTS = ('HugePages_Total', 'HugePages_Free', 'HugePages_Rsvd', 'HugePages_Surp')


def parse_meminfo(text):
    """Parse ``/proc/meminfo`` (or a ``grep`` of it).

    Sample::

        MemTotal:       24683568 kB
        MemFree:        24145236 kB
        MemAvailable:   24202468 kB
        HugePages_Total:      64
        HugePages_Free:       64
        HugePages_Rsvd:        0
        HugePages_Surp:        0
        Hugepagesize:     524288 kB
        Hugetlb:        33554432 kB

    Returns ``{'mem_total_kb': 24683568, 'mem_free_kb': 24145236, 'mem_available_kb': 24202468,
    'hugepages_total': 64, 'hugepages_free': 64, 'hugepages_rsvd': 0, 'hugepages_surp': 0,
    'hugepagesize_kb': 524288, 'hugetlb_kb': 33554432, 'fields': {'MemTotal': 24683568, ...}, 'unparsed': []}``.
    ``fields`` holds every line under its kernel name, in kB where the kernel prints kB (``HugePages_*`` are
    counts of pages). A key the text lacks is None (``MemAvailable`` is missing before Linux 3.14,
    ``Hugetlb`` before 4.16). Leading blanks (an indented copy) are accepted; a line that is not
    ``Name: number [kB]``, or a page count printed with a unit, goes to ``unparsed``.
    """
    fields = {}
    unparsed = []
    for line in lines_of(text):
        stripped = line.strip()
        if not stripped:
            continue
        match = _MEMINFO_RE.match(stripped)
        number = to_int(match.group(2)) if match else None
        if number is None or (match.group(1) in _COUNTS and match.group(3)):
            unparsed.append(line)
            continue
        fields[match.group(1)] = number
    out = {key: fields.get(name) for key, name in _MEMINFO_KEYS.items()}
    out['fields'] = fields
    out['unparsed'] = unparsed
    return out


# -------------------------------------------------------------------------------------------------- lspci

_ADDRESS = r'(?:([0-9a-f]{4,8}):)?([0-9a-f]{2}:[0-9a-f]{2}\.[0-7])'
_TAIL = r'(?: \(rev ([0-9a-f]{2})\))?(?: \(prog-if [0-9a-f]{2}(?: \[[^\]]*\])?\))?'
_NUMERIC_RE = re.compile(r'^' + _ADDRESS + r' ([0-9a-f]{4}): ([0-9a-f]{4}):([0-9a-f]{4})' + _TAIL + r'$')
_NAMED_RE = re.compile(r'^' + _ADDRESS + r' ([^:\[\]]+?)(?: \[([0-9a-f]{4})\])?: (.+)$')
_IDS_RE = re.compile(r'^(.*?) ?\[([0-9a-f]{4}):([0-9a-f]{4})\]$')
_REV_RE = re.compile(r'^(.*?)' + _TAIL + r'$')


def _device(domain, slot, klass=None, class_name=None, vendor=None, device=None, revision=None, description=None):
    return {'address': '%s:%s' % (domain or '0000', slot), 'class': klass, 'class_name': class_name,
            'vendor': vendor, 'device': device, 'revision': revision, 'description': description}


def parse_lspci(text):
    """Parse ``lspci -D -n [-d 19e5:]``, ``lspci -D -nn`` or ``lspci -D`` output (``-D`` is optional).

    Sample::

        0000:c1:00.0 1200: 19e5:d802 (rev 20)
        0000:00:01.0 Unassigned class [ffff]: Red Hat, Inc. Virtio 1.0 memory balloon [1af4:1045] (rev 01)
        42:00.0 Processing accelerators: Huawei Technologies Co., Ltd. Device d802 (rev 20)

    Returns ``{'devices': [{'address': '0000:c1:00.0', 'class': '1200', 'class_name': None, 'vendor': '19e5',
    'device': 'd802', 'revision': '20', 'description': None}, {'address': '0000:00:01.0', 'class': 'ffff',
    'class_name': 'Unassigned class', 'vendor': '1af4', 'device': '1045', 'revision': '01',
    'description': 'Red Hat, Inc. Virtio 1.0 memory balloon'}, {'address': '0000:42:00.0', 'class': None,
    'class_name': 'Processing accelerators', 'vendor': None, 'device': None, 'revision': '20',
    'description': 'Huawei Technologies Co., Ltd. Device d802'}], 'unparsed': []}``.

    IDs are lower-case hex strings as lspci prints them. An address without a domain (``lspci`` without
    ``-D`` leaves out domain 0000) gets ``0000:``. Without ``-n`` the class code is known only where lspci
    prints it (``[ffff]`` for an unassigned class) and vendor/device are None: the names stay in
    ``description`` (``Device d802`` is pciutils' text for an ID its database does not name). A
    ``(prog-if ..)`` suffix is accepted and left out; any other line goes to ``unparsed``.
    """
    out = {'devices': [], 'unparsed': []}
    for line in lines_of(text):
        stripped = line.strip()
        if not stripped:
            continue
        match = _NUMERIC_RE.match(stripped)
        if match:
            domain, slot, klass, vendor, device, revision = match.groups()
            out['devices'].append(_device(domain, slot, klass, None, vendor, device, revision))
            continue
        match = _NAMED_RE.match(stripped)
        if match:
            domain, slot, class_name, klass, rest = match.groups()
            rest_match = _REV_RE.match(rest)
            description, revision = rest_match.group(1), rest_match.group(2)
            vendor = device = None
            ids = _IDS_RE.match(description)
            if ids:
                description, vendor, device = ids.groups()
            if description.strip():
                out['devices'].append(_device(domain, slot, klass, class_name, vendor, device, revision,
                                              description.strip()))
                continue
        out['unparsed'].append(line)
    return out


# --------------------------------------------------------------------------------------------- os-release

_OS_RELEASE_RE = re.compile(r'^([A-Za-z_][A-Za-z0-9_]*)=(.*)$')
_ESCAPE_RE = re.compile(r'\\([\\"`$])')
_PLAIN_RE = re.compile(r'^[A-Za-z0-9_.,:/+@%=-]*$')


def _unquote(value):
    """The value of a shell-quoted os-release assignment, or None when the quoting is broken."""
    if len(value) >= 2 and value[0] == value[-1] == '"':
        inner = value[1:-1]
        if re.search(r'(?<!\\)(?:\\\\)*"', inner):
            return None
        return _ESCAPE_RE.sub(r'\1', inner)
    if len(value) >= 2 and value[0] == value[-1] == "'":
        inner = value[1:-1]
        return None if "'" in inner else inner
    return value if _PLAIN_RE.match(value) else None


def parse_os_release(text):
    """Parse ``/etc/os-release`` (os-release(5): shell-compatible ``KEY=value`` lines).

    Sample::

        NAME="openEuler"
        VERSION="22.03 (LTS-SP1)"
        ID="openEuler"
        VERSION_ID="22.03"
        PRETTY_NAME="openEuler 22.03 (LTS-SP1)"
        ANSI_COLOR="0;31"

    Returns ``{'name': 'openEuler', 'version': '22.03 (LTS-SP1)', 'id': 'openEuler', 'version_id': '22.03',
    'pretty_name': 'openEuler 22.03 (LTS-SP1)', 'ansi_color': '0;31', 'unparsed': []}``: one key per variable,
    lower-cased, the value unquoted (double quotes with backslash escapes of ``"``, backslash, ``$`` and
    backquote, single quotes, or a bare word). Values stay strings (``VERSION_ID`` ``22.03`` is not a number). Comments and blank
    lines are skipped; a line that is not an assignment, a value with broken quoting and a variable named
    ``UNPARSED`` go to ``unparsed``.
    """
    out = {}
    unparsed = []
    for line in lines_of(text):
        stripped = line.strip()
        if not stripped or stripped.startswith('#'):
            continue
        match = _OS_RELEASE_RE.match(stripped)
        value = _unquote(match.group(2).strip()) if match else None
        if value is None or match.group(1).lower() == 'unparsed':
            unparsed.append(line)
            continue
        out[match.group(1).lower()] = value
    out['unparsed'] = unparsed
    return out


# ---------------------------------------------------------------------------------------------------- thp

_MODE_RE = re.compile(r'^\[?[a-z][a-z+_]*\]?$')


def parse_thp(text):
    """Parse ``/sys/kernel/mm/transparent_hugepage/enabled`` (or ``defrag``).

    Sample::

        always madvise [never]

    Returns ``{'mode': 'never', 'modes': ['always', 'madvise', 'never'], 'unparsed': []}``: ``modes`` are the
    choices the kernel offers, ``mode`` the one in brackets. The ``defrag`` file has more choices
    (``always defer defer+madvise [madvise] never``). A line without exactly one bracketed choice, a second
    non-blank line, or a word that is not a mode name goes to ``unparsed``; empty text gives ``mode`` None.
    """
    out = {'mode': None, 'modes': [], 'unparsed': []}
    for line in lines_of(text):
        words = line.split()
        if not words:
            continue
        chosen = [word[1:-1] for word in words if word.startswith('[') and word.endswith(']') and len(word) > 2]
        if out['modes'] or len(chosen) != 1 or not all(_MODE_RE.match(word) for word in words):
            out['unparsed'].append(line)
            continue
        out['modes'] = [word.strip('[]') for word in words]
        out['mode'] = chosen[0]
    return out


PARSERS = {
    'meminfo': parse_meminfo,
    'lspci': parse_lspci,
    'os_release': parse_os_release,
    'thp': parse_thp,
}
