# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The IO side of a training node (stage 8): /dev/shm, CPU time waiting for IO, and an optional fio sequential read.

One adapter per tool (package that provides it, argv, parser) and :class:`IoReader`, which reads everything for the
``io_info`` module. ``vmstat`` and ``iostat`` sample the same window concurrently; their first report (the average
since boot) is dropped, so ``seconds`` samples of one second each remain. A missing ``vmstat`` or ``iostat`` gives
null values and a warning naming its package, never a failure. fio runs only when asked (``fio_file``), never in
check mode, never over an existing file, and its file is removed afterwards.
Python 3.9 compatible: this file runs on the managed nodes.
"""

from __future__ import annotations

import os

from ansible_collections.npuops.ascend.plugins.module_utils._parsers import io as io_parsers
from ansible_collections.npuops.ascend.plugins.module_utils._tools.runner import (
    ModuleFailure,
    Runner,
    ToolError,
    cmd_to_text,
    failed_call,
    find_tool,
    host_name,
    in_parallel,
    parse_output,
    tool_output,
    unparsed_warning,
)

MOUNTS = '/proc/mounts'
# Seconds a sampling call may take beyond its window before the timeout stops it.
WINDOW_MARGIN = 15
# Seconds fio may take beyond its runtime (laying out the test file first, then reading it).
FIO_MARGIN = 120
MB = 1024 * 1024


class IoTool:
    """A host tool: its name, the package that provides it and its parser."""

    name = None
    package = None
    parser = None

    @classmethod
    def missing_hint(cls):
        return 'it comes with the %s package' % cls.package


class Vmstat(IoTool):
    name = 'vmstat'
    package = 'procps'   # procps-ng on openEuler/EL, procps on Ubuntu
    parser = staticmethod(io_parsers.PARSERS['vmstat'])

    @staticmethod
    def argv(path, seconds):
        return [path, '1', str(seconds + 1)]


def parse_iostat_x(text):
    """``iostat -x``: the CPU reports and the device reports of the same text (each parser skips the other's
    lines, so a line either leaves unread is unparsed)."""
    cpu = io_parsers.PARSERS['iostat'](text)
    devices = io_parsers.PARSERS['iostat_devices'](text)
    out = dict(cpu)
    out['devices'] = devices['reports']
    out['device_columns'] = devices['columns']
    out['unparsed'] = cpu['unparsed'] + [line for line in devices['unparsed'] if line not in cpu['unparsed']]
    return out


class Iostat(IoTool):
    name = 'iostat'
    package = 'sysstat'
    parser = staticmethod(parse_iostat_x)

    @staticmethod
    def argv(path, seconds):
        # -x: the CPU report and the extended device report (%util, r_await/w_await or await) in one run
        return [path, '-x', '1', str(seconds + 1)]


class Fio(IoTool):
    name = 'fio'
    package = 'fio'
    parser = staticmethod(io_parsers.PARSERS['fio_json'])

    @staticmethod
    def argv(path, params):
        # the method's line (stage 8.2): --rw=read --bs=1M --size=8G --numjobs=4 --iodepth=16 --direct=1
        # --group_reporting; the engine is named because iodepth has no effect on a synchronous one (psync, fio's default)
        return [path, '--name=npuops-%s' % params['fio_rw'], '--filename=%s' % params['fio_file'], '--rw=%s' % params['fio_rw'],
                '--bs=%s' % params['fio_block_size'], '--size=%dM' % params['fio_size_mb'],
                '--numjobs=%d' % params['fio_numjobs'], '--iodepth=%d' % params['fio_iodepth'],
                '--ioengine=%s' % params['fio_ioengine'], '--direct=%d' % int(params['fio_direct']),
                '--runtime=%d' % params['fio_runtime'], '--group_reporting', '--unlink=1', '--output-format=json']


# Pseudo block devices iostat lists that hold no dataset: loop devices, RAM disks, compressed swap in RAM.
PSEUDO_DEVICES = ('loop', 'ram', 'zram')


def _weighted_await(row):
    """The await of one device row: the combined column of older sysstat, else r_await and w_await weighted by r/s and
    w/s (what the combined column was), else the larger of the two."""
    if row.get('await_ms') is not None:
        return row['await_ms']
    r_await, w_await = row.get('r_await_ms'), row.get('w_await_ms')
    if r_await is None and w_await is None:
        return None
    reads, writes = row.get('r_s') or 0.0, row.get('w_s') or 0.0
    if reads + writes > 0 and r_await is not None and w_await is not None:
        return round((reads * r_await + writes * w_await) / (reads + writes), 2)
    return max(value for value in (r_await, w_await) if value is not None)


def device_summary(reports):
    """Per block device over the reports after the first (the time since boot): mean and largest %util, mean and
    largest await (ms), mean r_await/w_await and queue size. Pseudo devices (loop, ram, zram) are left out."""
    rows = {}
    for report in reports:
        for row in report:
            name = row.get('device')
            if not name or name.startswith(PSEUDO_DEVICES):
                continue
            rows.setdefault(name, []).append(row)
    out = []
    for name in sorted(rows):
        samples = rows[name]
        util = [row['util_pct'] for row in samples if row.get('util_pct') is not None]
        waits = [value for value in (_weighted_await(row) for row in samples) if value is not None]
        out.append({'device': name, 'samples': len(samples),
                    'util_mean_pct': _mean(util), 'util_max_pct': max(util) if util else None,
                    'await_mean_ms': _mean(waits), 'await_max_ms': max(waits) if waits else None,
                    'r_await_mean_ms': _mean([row['r_await_ms'] for row in samples if row.get('r_await_ms') is not None]),
                    'w_await_mean_ms': _mean([row['w_await_ms'] for row in samples if row.get('w_await_ms') is not None]),
                    'queue_mean': _mean([row['queue'] for row in samples if row.get('queue') is not None])})
    return out


def _mean(values):
    return round(sum(values) / float(len(values)), 2) if values else None


def _read_text(path):
    with open(path, 'rb') as handle:
        return handle.read().decode('utf-8', errors='replace')


class IoReader:
    """Read /dev/shm, sample vmstat and iostat -x together, and run fio when asked; ``gather()`` is the module result."""

    def __init__(self, module, warnings):
        self.module = module
        self.params = module.params
        self.warnings = warnings
        self.errors = []
        self.host = host_name()

    # ---------------------------------------------------------------------------------------- /dev/shm

    def shm(self):
        path = self.params['shm_path']
        result = {'path': path, 'mounted': False, 'fstype': None, 'options': None, 'size_mb': None, 'used_mb': None,
                  'free_mb': None, 'used_pct': None}
        try:
            text = _read_text(MOUNTS)
        except OSError as exc:
            self.errors.append({'what': 'shm', 'path': MOUNTS, 'msg': '%s: %s could not be read: %s' % (self.host, MOUNTS, exc)})
            return result
        mounts, unparsed = parse_output(lambda t: io_parsers.parse_mounts(t, path), ['cat', MOUNTS], text)
        if unparsed:
            self.warnings.append(unparsed_warning(['cat', MOUNTS], unparsed))
        if not mounts.get('mounted'):
            self.warnings.append('%s: %s is not a mount point (not in %s): PyTorch DataLoader workers share tensors '
                                 'through it; mount a tmpfs there.' % (self.host, path, MOUNTS))
            return result
        result.update(mounted=True, fstype=mounts['fstype'], options=mounts['options'])
        try:
            stat = os.statvfs(path)
        except OSError as exc:
            self.errors.append({'what': 'shm', 'path': path, 'msg': '%s: statvfs(%s) failed: %s' % (self.host, path, exc)})
            return result
        size = stat.f_blocks * stat.f_frsize
        free = stat.f_bavail * stat.f_frsize
        used = (stat.f_blocks - stat.f_bfree) * stat.f_frsize
        result.update(size_mb=round(size / float(MB), 1), used_mb=round(used / float(MB), 1), free_mb=round(free / float(MB), 1),
                      used_pct=round(100.0 * used / size, 1) if size else None)
        return result

    # ---------------------------------------------------------------------------------------- vmstat + iostat

    def _find(self, tool):
        try:
            return find_tool(self.module, tool.name, missing_hint=tool.missing_hint())
        except ToolError as exc:
            self.warnings.append('%s The %s values are null; install %s to measure them.' % (
                exc.msg, tool.name, tool.package))
            return None

    def _sample_one(self, job):
        tool, argv, runner = job
        rc, out, err = runner.run(argv)
        if rc != 0:
            raise failed_call(argv, rc, out, err, subject=self.host, hint='Run %s on the host to see the error.' % tool.name)
        data, unparsed = parse_output(tool.parser, argv, out)
        if unparsed:
            self.warnings.append(unparsed_warning(argv, unparsed))
        return data

    def sample(self):
        """vmstat and iostat over the same window, concurrently -> (vmstat result, iostat result)."""
        seconds = self.params['seconds']
        timeout = self.params['timeout']
        runner = Runner(self.module, max(timeout, seconds + WINDOW_MARGIN) if timeout else timeout)
        jobs = []
        for tool in (Vmstat, Iostat):
            path = self._find(tool)
            if path:
                jobs.append((tool, tool.argv(path, seconds), runner))
        results = dict(zip((job[0].name for job in jobs), in_parallel(self._sample_one, jobs, workers=2)))
        vmstat = {'samples': 0, 'wa_pct': [], 'wa_mean_pct': None, 'wa_max_pct': None, 'us_mean_pct': None,
                  'sy_mean_pct': None, 'id_mean_pct': None, 'cmd': None}
        iostat = {'samples': 0, 'iowait_pct': [], 'iowait_mean_pct': None, 'iowait_max_pct': None, 'idle_mean_pct': None,
                  'cpus': None, 'kernel': None, 'devices': [], 'device_columns': [], 'cmd': None}
        for job in jobs:
            target = vmstat if job[0] is Vmstat else iostat
            target['cmd'] = cmd_to_text(job[1])
        got = results.get('vmstat')
        if isinstance(got, ModuleFailure):
            self._record(got, 'vmstat')
        elif got is not None:
            rows = got['samples'][1:]   # the first row is the average since boot
            wa = [row['wa'] for row in rows if 'wa' in row]
            vmstat.update(samples=len(rows), wa_pct=wa, wa_mean_pct=_mean(wa), wa_max_pct=max(wa) if wa else None,
                          us_mean_pct=_mean([row['us'] for row in rows]), sy_mean_pct=_mean([row['sy'] for row in rows]),
                          id_mean_pct=_mean([row['id'] for row in rows]))
        got = results.get('iostat')
        if isinstance(got, ModuleFailure):
            self._record(got, 'iostat')
        elif got is not None:
            reports = got['reports'][1:]   # the first report covers the time since boot
            iowait = [report['iowait_pct'] for report in reports]
            iostat.update(samples=len(reports), iowait_pct=iowait, iowait_mean_pct=_mean(iowait),
                          iowait_max_pct=max(iowait) if iowait else None,
                          idle_mean_pct=_mean([report['idle_pct'] for report in reports]), cpus=got['cpus'], kernel=got['kernel'],
                          devices=device_summary(got.get('devices', [])[1:]), device_columns=got.get('device_columns', []))
        for name, target, key in (('vmstat', vmstat, 'wa_pct'), ('iostat', iostat, 'iowait_pct')):
            if target['cmd'] and name in results and not isinstance(results[name], BaseException) and not target[key]:
                self.warnings.append('%s: %s printed no sample after the one since boot; its values are null.' % (self.host, name))
        for got in results.values():
            if isinstance(got, BaseException) and not isinstance(got, ModuleFailure):
                raise got
        return vmstat, iostat

    def _record(self, exc, what):
        entry = {'what': what, 'msg': exc.msg}
        if isinstance(exc, ToolError):
            entry.update(cmd=cmd_to_text(exc.cmd), rc=exc.rc, stdout=exc.stdout, stderr=exc.stderr)
        self.errors.append(entry)
        self.warnings.append(exc.msg)

    # ---------------------------------------------------------------------------------------- fio

    def fio(self):
        params = self.params
        result = {'ran': False, 'file': params['fio_file'], 'skipped': None, 'rw': params['fio_rw'],
                  'block_size': params['fio_block_size'], 'size_mb': params['fio_size_mb'], 'numjobs': params['fio_numjobs'],
                  'iodepth': params['fio_iodepth'], 'ioengine': params['fio_ioengine'], 'bw_mib_s': None, 'bw_mb_s': None,
                  'iops': None, 'lat_mean_ms': None, 'clat_p99_ms': None, 'read_bw_mib_s': None, 'read_bw_mb_s': None,
                  'read_iops': None, 'read_io_mib': None, 'runtime_ms': None, 'disk_util': [], 'version': None, 'cmd': None,
                  'removed': None}
        if not params['fio_file']:
            result['skipped'] = 'no fio_file given'
            return result
        if self.module.check_mode:
            result['skipped'] = 'check mode: fio writes a test file, so the sequential read did not run'
            self.warnings.append('%s: %s' % (self.host, result['skipped']))
            return result
        path = find_tool_or_none(self.module, Fio)
        if not path:
            result['skipped'] = 'fio is not installed (package fio); nothing was installed and the sequential read did not run'
            self.warnings.append('%s: %s.' % (self.host, result['skipped']))
            return result
        argv = Fio.argv(path, params)
        result['cmd'] = cmd_to_text(argv)
        timeout = params['timeout']
        runner = Runner(self.module, max(timeout, params['fio_runtime'] + FIO_MARGIN) if timeout else timeout)
        try:
            rc, out, err = runner.run(argv)
        finally:
            result['removed'] = remove_file(params['fio_file'])
        if rc != 0:
            raise failed_call(argv, rc, out, err, subject=self.host,
                              hint='Check that the directory of fio_file has %d MB free.' % params['fio_size_mb'])
        data, unparsed = parse_output(Fio.parser, argv, out)
        if unparsed:
            self.warnings.append(unparsed_warning(argv, unparsed))
        if data.get('job_errors'):
            raise ToolError(cmd=argv, rc=rc, stdout=out, stderr=err, subject=self.host,
                            msg='%s reported job errors %s: %s' % (cmd_to_text(argv), data['job_errors'], tool_output(out, err)))
        directions = [data.get(name) for name in ('read', 'write') if data.get(name)]
        if not directions:
            raise ToolError(cmd=argv, rc=rc, stdout=out, stderr=err, subject=self.host,
                            msg='%s printed no JSON result with IO in it: %s' % (cmd_to_text(argv), tool_output(out, err)))
        result['ran'] = True
        # the aggregate of the group (--group_reporting): read and write added up for a mixed job
        total_ios = sum(part['total_ios'] for part in directions)
        result.update(
            bw_mib_s=round(sum(part['bw_mib_s'] for part in directions), 3),
            bw_mb_s=round(sum(part['bw_mb_s'] for part in directions), 3),
            iops=round(sum(part['iops'] for part in directions), 3),
            lat_mean_ms=(round(sum(part['lat_mean_ms'] * part['total_ios'] for part in directions) / total_ios, 4)
                         if total_ios and all(part['lat_mean_ms'] is not None for part in directions) else None),
            clat_p99_ms=max([part['clat_p99_ms'] for part in directions if part['clat_p99_ms'] is not None] or [None]),
            runtime_ms=max(part['runtime_ms'] for part in directions),
            disk_util=data.get('disk_util') or [], version=data.get('version'))
        read = data.get('read')
        if read:
            result.update(read_bw_mib_s=read['bw_mib_s'], read_bw_mb_s=read['bw_mb_s'], read_iops=read['iops'],
                          read_io_mib=read['io_mib'])
        return result

    # ---------------------------------------------------------------------------------------- all

    def gather(self):
        check_fio_file(self.params)
        shm = self.shm()
        vmstat, iostat = self.sample()
        fio = self.fio()
        cpus = iostat.get('cpus') or os.cpu_count()
        return {'changed': False, 'shm': shm, 'vmstat': vmstat, 'iostat': iostat, 'fio': fio, 'cpus': cpus,
                'errors': self.errors}


def find_tool_or_none(module, tool):
    try:
        return find_tool(module, tool.name, missing_hint=tool.missing_hint())
    except ToolError:
        return None


def remove_file(path):
    """Remove fio's test file if it is still there; True when it is gone."""
    try:
        os.remove(path)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return True


def check_fio_file(params):
    """fio_file must be a new file in an existing directory, and a path fio can take (':' separates files)."""
    path = params['fio_file']
    if not path:
        return
    if not os.path.isabs(path):
        raise ModuleFailure('fio_file must be an absolute path, got %s.' % path, subject=host_name())
    if ':' in path:
        raise ModuleFailure('fio_file %s contains ":", which fio reads as a list of files; choose another path.' % path,
                            subject=host_name())
    if os.path.lexists(path):
        raise ModuleFailure('fio_file %s already exists; io_info never overwrites a file. Give a path that does not exist '
                            '(it is created for the test and removed afterwards).' % path, subject=host_name())
    directory = os.path.dirname(path) or '/'
    if not os.path.isdir(directory):
        raise ModuleFailure('the directory of fio_file %s does not exist.' % path, subject=host_name())
