# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parsers for the IO side of a training node: ``vmstat``, ``iostat`` (its CPU report), ``fio`` (a sequential read,
plain output) and the ``/proc/mounts`` line of ``/dev/shm``.

Formats (real samples in tests/fixtures/captures: vmstat.txt, iostat_-c.txt, fio_seq_read.txt, dev_shm.txt; and in
tests/unit/fixtures/io: iostat -x of sysstat before and after 12, fio JSON of fio 3.1 and 3.42):

* ``vmstat`` (procps): a line of group titles, a line of column names, then one row of numbers per sample. The columns
  are found by their names (procps 3.2 has no ``st``, procps-ng 4.0.4 adds ``gu``); a wide value pushes the next
  columns right, so rows are split on whitespace. A collector may put a time first (``20:21:01 56 0 ...``).
* ``iostat`` (sysstat): ``<sys> <release> (<host>) <date> _<arch>_ (<n> CPU)``, then per report
  ``avg-cpu:  %user   %nice %system %iowait  %steal   %idle`` and a row of six numbers; device tables
  (``Device...`` header and rows) and ``-t`` time stamps may follow and are skipped.
* ``fio`` 3.x: ``<job>: (g=0): rw=read, bs=..., ioengine=..., iodepth=N``, ``fio-3.1``,
  ``read: IOPS=3070, BW=11.0MiB/s (12.6MB/s)(3598MiB/300002msec)`` per job and
  ``READ: bw=11.0MiB/s (12.6MB/s), ..., io=3598MiB (3773MB), run=300002-300002msec`` per group.
* ``iostat -x``: per report a ``Device`` (``Device:`` before sysstat 12) header and one row per device; the columns
  differ between versions (``await``/``svctm``/``avgqu-sz`` before 12, ``aqu-sz`` and no ``await`` from 12) and are
  read by their labels.
* ``fio --output-format=json``: one document with ``jobs[].read|write|trim`` (``bw_bytes`` bytes/s from fio 3.x;
  ``bw`` KiB/s), ``iops``, ``clat_ns``/``lat_ns`` and ``disk_util``.
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


# ------------------------------------------------------------------------------------------------ iostat -x devices

# Labels of the extended device report: the same quantity under the names of older (before 12) and newer sysstat.
_IOSTAT_DEVICE_KEYS = {
    '%util': 'util_pct', 'await': 'await_ms', 'r_await': 'r_await_ms', 'w_await': 'w_await_ms', 'd_await': 'd_await_ms',
    'f_await': 'f_await_ms', 'aqu-sz': 'queue', 'avgqu-sz': 'queue', 'r/s': 'r_s', 'w/s': 'w_s', 'svctm': 'svctm_ms',
    'rrqm/s': 'rrqm_s', 'wrqm/s': 'wrqm_s',
}
# Read and write rates in kB/s whatever unit the header names (-k default, -m, or sectors of 512 bytes).
_IOSTAT_RATE_KEYS = {'rkB/s': ('read_kb_s', 1.0), 'wkB/s': ('write_kb_s', 1.0), 'rMB/s': ('read_kb_s', 1024.0),
                     'wMB/s': ('write_kb_s', 1024.0), 'rsec/s': ('read_kb_s', 0.5), 'wsec/s': ('write_kb_s', 0.5)}


def parse_iostat_devices(text):
    """Parse the device reports of ``iostat -x [INTERVAL [COUNT]]`` (the CPU reports are :func:`parse_iostat`'s).

    Older sysstat (before 12) prints ``Device:`` and one ``await`` beside ``r_await``/``w_await``, ``avgqu-sz`` and
    ``svctm``; sysstat 12 and later print ``Device`` without the colon, no combined ``await`` and no ``svctm``,
    ``aqu-sz``, request sizes and discard/flush columns, in another order. Every column is read by its label:

        Device:  rrqm/s   wrqm/s     r/s     w/s    rMB/s    wMB/s avgrq-sz avgqu-sz   await r_await w_await  svctm  %util
        xvdf       0.00  2934.00    0.00 2000.00     0.00    48.69    49.86     2.59    1.30    0.00    1.30   0.50  99.60

    Returns ``{'reports': [[{'device': 'xvdf', 'util_pct': 99.6, 'await_ms': 1.3, 'r_await_ms': 0.0, 'w_await_ms': 1.3,
    'queue': 2.59, 'r_s': 0.0, 'w_s': 2000.0, 'read_kb_s': 0.0, 'write_kb_s': 49858.56, 'svctm_ms': 0.5, 'rrqm_s': 0.0,
    'wrqm_s': 2934.0, 'extra': {'avgrq-sz': 49.86}}], ...], 'columns': [...], 'unparsed': []}``: one list of devices per
    ``Device`` header (``reports[0]`` covers the time since boot unless ``-y``). A label this parser does not know is
    kept under ``extra``; a row with more or fewer values than the header goes to ``unparsed``. CPU reports, the
    system line and ``-t`` time stamps are skipped.
    """
    result = {'reports': [], 'columns': [], 'unparsed': []}
    labels = None
    skip_cpu_row = False
    for line in lines_of(text):
        stripped = line.strip()
        if not stripped:
            labels = None
            continue
        words = stripped.split()
        if skip_cpu_row:
            skip_cpu_row = False
            if all(to_float(word) is not None for word in words):
                continue
        if words[0] == 'avg-cpu:':
            labels = None
            skip_cpu_row = True
            continue
        if words[0].rstrip(':') == 'Device':
            labels = words[1:]
            if len(set(labels)) != len(labels) or not labels:
                result['unparsed'].append(line)
                labels = None
                continue
            result['columns'] = list(labels)
            result['reports'].append([])
            continue
        if labels is not None:
            values = [to_float(word) for word in words[1:]]
            if len(values) != len(labels) or None in values:
                result['unparsed'].append(line)
                continue
            row = {'device': words[0]}
            for label, value in zip(labels, values):
                if label in _IOSTAT_DEVICE_KEYS:
                    row[_IOSTAT_DEVICE_KEYS[label]] = value
                elif label in _IOSTAT_RATE_KEYS:
                    key, factor = _IOSTAT_RATE_KEYS[label]
                    row[key] = round(value * factor, 3)
                else:
                    keep_extra(row, label, value)
            result['reports'][-1].append(row)
            continue
        if _IOSTAT_HEADER_RE.match(stripped) or _IOSTAT_STAMP_RE.match(stripped):
            continue
        result['unparsed'].append(line)
    return result


# ------------------------------------------------------------------------------------------------ fio JSON

_FIO_DIRECTIONS = ('read', 'write', 'trim')


def _number(value):
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _fio_document(text):
    """The JSON document of fio's output and the other lines: ``--output-format=json,normal`` (or a job line and
    ``Starting N process`` printed before it) surround the document with plain text."""
    import json
    start = text.find('{')
    while start != -1:
        try:
            document, end = json.JSONDecoder().raw_decode(text[start:])
        except ValueError:
            start = text.find('{', start + 1)
            continue
        if isinstance(document, dict) and 'jobs' in document:
            return document, text[:start] + text[start + end:]
        start = text.find('{', start + 1)
    return None, text


def _fio_direction(jobs, name):
    """One direction (read/write/trim) summed over the jobs: bandwidth and IOPS add up, the latencies are the means
    weighted by the number of IOs; None when no job did any IO in that direction."""
    total = {'io_bytes': 0.0, 'bw_bytes': 0.0, 'iops': 0.0, 'runtime_ms': 0.0, 'ios': 0.0, 'lat_sum_ns': 0.0,
             'clat_sum_ns': 0.0, 'clat_p99_ns': None}
    seen = False
    for job in jobs:
        part = job.get(name) if isinstance(job, dict) else None
        if not isinstance(part, dict):
            continue
        io_bytes = _number(part.get('io_bytes'))
        if io_bytes is None and _number(part.get('io_kbytes')) is not None:
            io_bytes = _number(part.get('io_kbytes')) * 1024.0
        if not io_bytes:
            continue
        seen = True
        total['io_bytes'] += io_bytes
        bw_bytes = _number(part.get('bw_bytes'))
        if bw_bytes is None and _number(part.get('bw')) is not None:
            bw_bytes = _number(part.get('bw')) * 1024.0   # fio before 3.x bw_bytes: bw in KiB/s
        total['bw_bytes'] += bw_bytes or 0.0
        total['iops'] += _number(part.get('iops')) or 0.0
        total['runtime_ms'] = max(total['runtime_ms'], _number(part.get('runtime')) or 0.0)
        ios = _number(part.get('total_ios')) or 0.0
        total['ios'] += ios
        for key, field in (('lat_sum_ns', 'lat_ns'), ('clat_sum_ns', 'clat_ns')):
            stats = part.get(field)
            mean = _number(stats.get('mean')) if isinstance(stats, dict) else None
            if mean is not None:
                total[key] += mean * ios
        clat = part.get('clat_ns')
        percentiles = clat.get('percentile') if isinstance(clat, dict) else None
        p99 = _number(percentiles.get('99.000000')) if isinstance(percentiles, dict) else None
        if p99 is not None:
            total['clat_p99_ns'] = max(total['clat_p99_ns'] or 0.0, p99)
    if not seen:
        return None
    ios = total['ios']
    return {'bw_mib_s': round(total['bw_bytes'] / 1024.0 ** 2, 3), 'bw_mb_s': round(total['bw_bytes'] / 1000.0 ** 2, 3),
            'iops': round(total['iops'], 3), 'io_mib': round(total['io_bytes'] / 1024.0 ** 2, 3),
            'runtime_ms': int(total['runtime_ms']), 'total_ios': int(ios),
            'lat_mean_ms': round(total['lat_sum_ns'] / ios / 1e6, 4) if ios else None,
            'clat_mean_ms': round(total['clat_sum_ns'] / ios / 1e6, 4) if ios else None,
            'clat_p99_ms': None if total['clat_p99_ns'] is None else round(total['clat_p99_ns'] / 1e6, 4)}


def parse_fio_json(text):
    """Parse ``fio --output-format=json`` (also ``json,normal``: the plain lines around the document are skipped).

    Sample (fio-3.42, trimmed)::

        {
          "fio version" : "fio-3.42-6-g219f",
          "jobs" : [ { "jobname" : "/dev/nvme8n13", "error" : 0,
                       "write" : { "io_bytes" : 50966528, "bw_bytes" : 5096143, "bw" : 4976, "iops" : 1244.175582,
                                   "runtime" : 10001, "total_ios" : 12443, "clat_ns" : { "mean" : 794090.278389,
                                   "percentile" : { "99.000000" : 1695744 } }, "lat_ns" : { "mean" : 800770.079563 } } } ],
          "disk_util" : [ { "name" : "nvme8n13", "util" : 97.904063 } ]
        }

    Returns ``{'version': '3.42-6-g219f', 'jobs': 1, 'job_errors': [], 'read': None, 'write': {'bw_mib_s': 4.86,
    'bw_mb_s': 5.096, 'iops': 1244.176, 'io_mib': 48.605, 'runtime_ms': 10001, 'total_ios': 12443,
    'lat_mean_ms': 0.8008, 'clat_mean_ms': 0.7941, 'clat_p99_ms': 1.6957}, 'trim': None, 'disk_util':
    [{'name': 'nvme8n13', 'util_pct': 97.9}], 'errors': [], 'unparsed': []}``. A direction without IO is None; with
    several jobs (no ``--group_reporting``) bandwidth and IOPS are summed and latencies weighted by the IOs. fio 3.1
    has no ``bw_bytes``: its ``bw`` (KiB/s) is used. No JSON document: every value None and the text's lines in
    ``unparsed`` (``fio: ...`` lines in ``errors``).
    """
    result = {'version': None, 'jobs': 0, 'job_errors': [], 'read': None, 'write': None, 'trim': None, 'disk_util': [],
              'errors': [], 'unparsed': []}
    document, rest = _fio_document(text or '')
    for line in lines_of(rest):
        stripped = line.strip()
        match = _FIO_ERROR_RE.match(stripped)
        if match:
            result['errors'].append(match.group(1))
        elif document is None and stripped:
            result['unparsed'].append(line)
    if document is None:
        return result
    version = document.get('fio version')
    if isinstance(version, str):
        result['version'] = version[4:] if version.startswith('fio-') else version
    jobs = document.get('jobs')
    jobs = [job for job in jobs if isinstance(job, dict)] if isinstance(jobs, list) else []
    result['jobs'] = len(jobs)
    for job in jobs:
        if job.get('error'):
            result['job_errors'].append({'job': job.get('jobname'), 'error': job.get('error')})
    for name in _FIO_DIRECTIONS:
        result[name] = _fio_direction(jobs, name)
    disks = document.get('disk_util')
    for disk in disks if isinstance(disks, list) else []:
        if isinstance(disk, dict) and isinstance(disk.get('name'), str):
            util = _number(disk.get('util'))
            result['disk_util'].append({'name': disk['name'], 'util_pct': None if util is None else round(util, 2)})
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
    'iostat_devices': parse_iostat_devices,
    'fio': parse_fio,
    'fio_json': parse_fio_json,
    'mounts': parse_mounts,
}
