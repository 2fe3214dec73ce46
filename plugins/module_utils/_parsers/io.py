# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parsers for the IO side of a training node: ``vmstat``, ``iostat`` (its CPU report), ``fio`` (a sequential read,
plain output) and the ``/proc/mounts`` line of ``/dev/shm``.

Formats (real samples in tests/fixtures/captures: vmstat.txt, iostat_-c.txt, fio_seq_read.txt, dev_shm.txt):

* ``vmstat`` (procps): a line of group titles, a line of column names, then one row of numbers per sample. The columns
  are found by their names (procps 3.2 has no ``st``, procps-ng 4.0.4 adds ``gu``); a wide value pushes the next
  columns right, so rows are split on whitespace. A collector may put a time first (``20:21:01 56 0 ...``).
* ``iostat`` (sysstat): ``<sys> <release> (<host>) <date> _<arch>_ (<n> CPU)``, then per report
  ``avg-cpu:  %user   %nice %system %iowait  %steal   %idle`` and a row of six numbers; device tables
  (``Device...`` header and rows) and ``-t`` time stamps may follow and are skipped.
* ``fio`` 3.x: ``<job>: (g=0): rw=read, bs=..., ioengine=..., iodepth=N``, ``fio-3.1``,
  ``read: IOPS=3070, BW=11.0MiB/s (12.6MB/s)(3598MiB/300002msec)`` per job and
  ``READ: bw=11.0MiB/s (12.6MB/s), ..., io=3598MiB (3773MB), run=300002-300002msec`` per group.
* ``/proc/mounts``: ``<device> <mount point> <fstype> <options> 0 0``.

Every parser returns a dict with ``unparsed`` (the lines it did not recognise) and never raises on tool output.
"""

from __future__ import annotations

import re

from ansible_collections.npuops.ascend.plugins.module_utils._parsers._common import is_digits, keep_extra, lines_of, to_float, to_int

# ------------------------------------------------------------------------------------------------ vmstat

_TIME_RE = re.compile(r'^[0-9]{1,2}:[0-9]{2}(?::[0-9]{2})?$')
_VMSTAT_MIN_COLUMNS = ('r', 'b', 'us', 'sy', 'id')


def _is_vmstat_header(words):
    return all(name in words for name in _VMSTAT_MIN_COLUMNS)


def parse_vmstat(text):
    """Parse ``vmstat [INTERVAL [COUNT]]``.

    Sample (procps-ng 4.0.2)::

        procs -----------memory---------- ---swap-- -----io---- -system-- ------cpu-----
         r  b   swpd   free   buff  cache   si   so    bi    bo   in   cs us sy id wa st
         1  0      0 24085136  13888 427536    0    0   327   143  329  577 30  6 63  0  0
         1  0      0 24085136  13888 427536    0    0     0     0   51   80  0  2 99  0  0

    Returns ``{'columns': ['r', 'b', ..., 'st'], 'samples': [{'r': 1, 'b': 0, 'swpd': 0, 'free': 24085136, ...,
    'wa': 0, 'st': 0}, ...], 'unparsed': []}``. Values are ints; ``samples[0]`` is the average since boot (vmstat's
    first row), the later ones one interval each. A column vmstat did not print (``st`` of procps 3.2) is absent
    from the samples. A leading time column added by a collector is kept as ``time``.
    """
    columns = None
    samples = []
    unparsed = []
    for line in lines_of(text):
        words = line.split()
        if not words:
            continue
        if words[0] == 'procs' or (words[0].startswith('--') and 'procs' in words[1:2]):
            continue
        if _is_vmstat_header(words):
            columns = list(words)
            continue
        if columns is None:
            unparsed.append(line)
            continue
        stamp = None
        if len(words) == len(columns) + 1 and _TIME_RE.match(words[0]):
            stamp, words = words[0], words[1:]
        if len(words) != len(columns) or not all(is_digits(word) for word in words):
            unparsed.append(line)
            continue
        sample = dict(zip(columns, (int(word) for word in words)))
        if stamp is not None:
            sample['time'] = stamp
        samples.append(sample)
    return {'columns': columns or [], 'samples': samples, 'unparsed': unparsed}


# ------------------------------------------------------------------------------------------------ iostat

_IOSTAT_HEADER_RE = re.compile(r'^(\S+)\s+(\S+)\s+\((\S+)\)\s+(.+?)\s+_(\S+)_\s+\(([0-9]+) CPU\)\s*$')
_IOSTAT_CPU_KEYS = {'%user': 'user_pct', '%nice': 'nice_pct', '%system': 'system_pct', '%sys': 'system_pct',
                    '%iowait': 'iowait_pct', '%steal': 'steal_pct', '%idle': 'idle_pct'}
_IOSTAT_STAMP_RE = re.compile(r'^[0-9]{2}/[0-9]{2}/[0-9]{2,4}\s+[0-9]{2}:[0-9]{2}:[0-9]{2}(\s+[AP]M)?\s*$')


def parse_iostat(text):
    """Parse the CPU reports of ``iostat [-c] [INTERVAL [COUNT]]``.

    Sample (sysstat, CentOS 7)::

        Linux 3.10.0-957.21.3.el7.x86_64 (frytea-dev-test)      07/14/2020      _x86_64_        (2 CPU)

        avg-cpu:  %user   %nice %system %iowait  %steal   %idle
                   0.40    0.00    0.31    0.00    0.00   99.29

    Returns ``{'system': 'Linux', 'kernel': '3.10.0-957.21.3.el7.x86_64', 'host': 'frytea-dev-test',
    'date': '07/14/2020', 'arch': 'x86_64', 'cpus': 2, 'reports': [{'user_pct': 0.4, 'nice_pct': 0.0,
    'system_pct': 0.31, 'iowait_pct': 0.0, 'steal_pct': 0.0, 'idle_pct': 99.29}, ...], 'unparsed': []}``.
    ``reports[0]`` covers the time since boot (unless iostat ran with ``-y``). The CPU columns are read by their
    labels; a label this parser does not know (``%guest``) is kept under ``extra`` keyed by the label, and a row
    with more or fewer numbers than the labels goes to ``unparsed``. Device tables, their rows and ``-t`` time
    stamps are recognised and skipped; anything else goes to ``unparsed``.
    """
    result = {'system': None, 'kernel': None, 'host': None, 'date': None, 'arch': None, 'cpus': None,
              'reports': [], 'unparsed': []}
    cpu_keys = None
    in_devices = False
    for line in lines_of(text):
        stripped = line.strip()
        if not stripped:
            in_devices = False
            continue
        words = stripped.split()
        if cpu_keys is not None:
            keys, cpu_keys = cpu_keys, None
            values = [to_float(word) for word in words]
            if len(values) == len(keys) and None not in values:
                report = {}
                for label, value in zip(keys, values):
                    if label in _IOSTAT_CPU_KEYS:
                        report[_IOSTAT_CPU_KEYS[label]] = value
                    else:
                        keep_extra(report, label, value)
                result['reports'].append(report)
                continue
            result['unparsed'].append(line)
            continue
        if words[0] == 'avg-cpu:':
            if words[1:] and len(set(words[1:])) == len(words) - 1:
                cpu_keys = words[1:]
            else:
                result['unparsed'].append(line)
            in_devices = False
            continue
        if words[0].rstrip(':') == 'Device':
            in_devices = True
            continue
        if in_devices:
            continue
        match = _IOSTAT_HEADER_RE.match(stripped)
        if match and result['kernel'] is None:
            result.update(system=match.group(1), kernel=match.group(2), host=match.group(3), date=match.group(4).strip(),
                          arch=match.group(5), cpus=to_int(match.group(6)))
            continue
        if _IOSTAT_STAMP_RE.match(stripped):
            continue
        result['unparsed'].append(line)
    return result


# ------------------------------------------------------------------------------------------------ fio

_UNITS = {'': 1.0, 'B': 1.0, 'KIB': 1024.0, 'MIB': 1024.0 ** 2, 'GIB': 1024.0 ** 3, 'TIB': 1024.0 ** 4,
          'KB': 1000.0, 'MB': 1000.0 ** 2, 'GB': 1000.0 ** 3, 'TB': 1000.0 ** 4}
_RATE_RE = re.compile(r'^([0-9]+(?:\.[0-9]+)?)([KMGT]i?B|B)(?:/s)?$', re.IGNORECASE)
_FIO_JOB_RE = re.compile(r'^(\S+): \(g=([0-9]+)\): rw=([a-z]+), (.*)$')
_FIO_READ_RE = re.compile(r'^read: IOPS=([0-9.]+k?), BW=(\S+) \((\S+)\)\((\S+)/([0-9]+)msec\)')
_FIO_GROUP_RE = re.compile(r'^READ: bw=(\S+) \((\S+)\), .*io=(\S+) \((\S+)\), run=([0-9]+)-([0-9]+)msec')
_FIO_KNOWN = ('slat ', 'clat ', 'lat ', 'clat percentiles', '|', 'bw (', 'iops ', 'cpu ', 'IO depths', 'submit ',
              'complete ', 'issued ', 'latency ', 'Jobs:', 'Starting ', 'Run status group', 'Disk stats', 'WRITE:',
              'write:', 'TRIM:', 'trim:')
_FIO_ERROR_RE = re.compile(r'^fio: (.*)$')


def _bytes(text):
    """'11.0MiB/s' -> 11534336.0, '3598MiB' -> bytes; None when it is not a size."""
    match = _RATE_RE.match(text or '')
    if not match:
        return None
    return float(match.group(1)) * _UNITS[match.group(2).upper()]


def _iops(text):
    if text.endswith('k'):
        value = to_float(text[:-1])
        return None if value is None else value * 1000.0
    return to_float(text)


def parse_fio(text):
    """Parse the plain (normal) output of one ``fio --rw=read`` job.

    Sample (fio-3.1)::

        myjob: (g=0): rw=read, bs=(R) 4096B-4096B, (W) 4096B-4096B, (T) 4096B-4096B, ioengine=libaio, iodepth=4
        fio-3.1
           read: IOPS=3070, BW=11.0MiB/s (12.6MB/s)(3598MiB/300002msec)
        Run status group 0 (all jobs):
           READ: bw=11.0MiB/s (12.6MB/s), 11.0MiB/s-11.0MiB/s (12.6MB/s-12.6MB/s), io=3598MiB (3773MB), run=300002-300002msec

    Returns ``{'version': '3.1', 'job': 'myjob', 'rw': 'read', 'ioengine': 'libaio', 'iodepth': 4, 'read_iops': 3070.0,
    'read_bw_mib_s': 11.0, 'read_bw_mb_s': 12.6, 'read_io_mib': 3598.0, 'runtime_ms': 300002, 'errors': [],
    'unparsed': []}``. The group line (``READ: bw=``) wins over the job line for bandwidth, size and runtime (it sums
    the jobs of the group). ``fio: ...`` lines are collected in ``errors``. Values it cannot read are None.
    """
    result = {'version': None, 'job': None, 'rw': None, 'ioengine': None, 'iodepth': None, 'read_iops': None,
              'read_bw_mib_s': None, 'read_bw_mb_s': None, 'read_io_mib': None, 'runtime_ms': None,
              'errors': [], 'unparsed': []}
    for line in lines_of(text):
        stripped = line.strip()
        if not stripped:
            continue
        match = _FIO_JOB_RE.match(stripped)
        if match:
            result['job'], result['rw'] = match.group(1), match.group(3)
            for item in match.group(4).split(', '):
                key, _sep, value = item.partition('=')
                if key == 'ioengine':
                    result['ioengine'] = value
                elif key == 'iodepth':
                    result['iodepth'] = to_int(value)
            continue
        if stripped.startswith('fio-') and ' ' not in stripped:
            result['version'] = stripped[4:]
            continue
        if ': (groupid=' in stripped or ': Laying out IO file' in stripped:
            continue
        match = _FIO_READ_RE.match(stripped)
        if match:
            result['read_iops'] = _iops(match.group(1))
            rate, dec, size = _bytes(match.group(2)), _bytes(match.group(3)), _bytes(match.group(4))
            if result['read_bw_mib_s'] is None and rate is not None:
                result['read_bw_mib_s'] = round(rate / 1024.0 ** 2, 3)
            if result['read_bw_mb_s'] is None and dec is not None:
                result['read_bw_mb_s'] = round(dec / 1000.0 ** 2, 3)
            if result['read_io_mib'] is None and size is not None:
                result['read_io_mib'] = round(size / 1024.0 ** 2, 3)
            if result['runtime_ms'] is None:
                result['runtime_ms'] = to_int(match.group(5))
            continue
        match = _FIO_GROUP_RE.match(stripped)
        if match:
            rate, dec, size = _bytes(match.group(1)), _bytes(match.group(2)), _bytes(match.group(3))
            if rate is not None:
                result['read_bw_mib_s'] = round(rate / 1024.0 ** 2, 3)
            if dec is not None:
                result['read_bw_mb_s'] = round(dec / 1000.0 ** 2, 3)
            if size is not None:
                result['read_io_mib'] = round(size / 1024.0 ** 2, 3)
            result['runtime_ms'] = to_int(match.group(6))
            continue
        match = _FIO_ERROR_RE.match(stripped)
        if match:
            result['errors'].append(match.group(1))
            continue
        if stripped.startswith(_FIO_KNOWN) or re.match(r'^\S+: ios=', stripped) or re.match(r'^lat \((n|u|m)sec\)', stripped):
            continue
        result['unparsed'].append(line)
    return result


# ------------------------------------------------------------------------------------------------ /proc/mounts

def _unescape(field):
    """/proc/mounts escapes space, tab, newline and backslash as octal (\\040 ...)."""
    return re.sub(r'\\([0-7]{3})', lambda m: chr(int(m.group(1), 8)), field)


def _size_option_kb(value):
    """tmpfs 'size=' as /proc/mounts shows it ('24683568k', '1024m', '2g', bytes) -> kB, or None."""
    match = re.match(r'^([0-9]+)([kmgKMG]?)$', value or '')
    if not match:
        return None
    number = int(match.group(1))
    unit = match.group(2).lower()
    return {'': number // 1024, 'k': number, 'm': number * 1024, 'g': number * 1024 * 1024}[unit]


def parse_mounts(text, mount_point='/dev/shm'):
    """Find ``mount_point`` in ``/proc/mounts`` text.

    Sample::

        tmpfs /dev/shm tmpfs rw,relatime,size=24683568k 0 0

    Returns ``{'mounted': True, 'device': 'tmpfs', 'fstype': 'tmpfs', 'options': ['rw', 'relatime',
    'size=24683568k'], 'size_option_kb': 24683568, 'unparsed': []}`` (the LAST line for the mount point: the one on
    top). Not mounted: ``mounted`` False and the other values None. Lines with fewer than four fields go to
    ``unparsed``.
    """
    result = {'mounted': False, 'device': None, 'fstype': None, 'options': None, 'size_option_kb': None, 'unparsed': []}
    for line in lines_of(text):
        fields = line.split()
        if not fields:
            continue
        if len(fields) < 4:
            result['unparsed'].append(line)
            continue
        if _unescape(fields[1]) != mount_point:
            continue
        options = fields[3].split(',')
        size = None
        for option in options:
            if option.startswith('size='):
                size = _size_option_kb(option[5:])
        result.update(mounted=True, device=_unescape(fields[0]), fstype=fields[2], options=options, size_option_kb=size)
    return result


PARSERS = {
    'vmstat': parse_vmstat,
    'iostat': parse_iostat,
    'fio': parse_fio,
    'mounts': parse_mounts,
}
