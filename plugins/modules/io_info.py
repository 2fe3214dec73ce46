#!/usr/bin/python
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: io_info
short_description: Measure the IO side of a training node (/dev/shm, IO wait, disk %util and await, optional fio read)
version_added: 0.1.0
author:
  - npuops maintainers (@npuops)
description:
  - Reads C(/dev/shm) (mount options from C(/proc/mounts), size, used and free space from C(statvfs)).
  - Runs C(vmstat 1 N) and C(iostat -x 1 N) at the same time over a window of O(seconds) seconds and returns the CPU
    time waiting for IO as both tools see it (vmstat C(wa), iostat C(%iowait)), per sample, mean and maximum, and per
    block device the C(%util) and the await (C(await) of sysstat before 12, else C(r_await) and C(w_await) weighted
    by C(r/s) and C(w/s)), mean and maximum. The columns are read by their labels. The first report of each tool (the
    average since boot) is left out; loop, ram and zram devices are left out.
  - A missing C(vmstat) (package procps) or C(iostat) (package sysstat) gives null values and a warning; nothing is
    installed.
  - Only when O(fio_file) is given and C(fio) is installed, runs one fio job group on that file with JSON output
    (by default the method's sequential read, 4 jobs, queue depth 16, 8192 MB, 1M blocks, O_DIRECT, libaio; fio first
    writes the file, then reads it for at most O(fio_runtime) seconds) and removes the file afterwards. Returns the
    aggregate bandwidth, IOPS, mean and 99th percentile latency. The file must not exist beforehand; nothing else is
    written.
  - Never reports a change.
options:
  seconds:
    description:
      - Length of the sampling window in seconds (one sample per second from each tool).
    type: int
    default: 5
  shm_path:
    description:
      - The shared-memory mount to read.
    type: path
    default: /dev/shm
  fio_file:
    description:
      - Absolute path of a test file for the fio sequential read, on the file system the training data is read from.
        It must not exist; it is created by fio and removed afterwards. Unset, fio does not run.
    type: path
  fio_size_mb:
    description:
      - Size of the fio test file in MB (1-65536); each job reads this much of it.
    type: int
    default: 8192
  fio_numjobs:
    description:
      - Number of fio jobs reading the file at once (1-64).
    type: int
    default: 4
  fio_iodepth:
    description:
      - IO units each job keeps in flight (1-1024). It has no effect with a synchronous O(fio_ioengine) (psync, sync).
    type: int
    default: 16
  fio_ioengine:
    description:
      - The fio IO engine.
    type: str
    choices: [libaio, io_uring, psync, sync, posixaio]
    default: libaio
  fio_rw:
    description:
      - The fio IO pattern. Write patterns write only the test file.
    type: str
    choices: [read, randread, write, randwrite]
    default: read
  fio_runtime:
    description:
      - Longest time of the fio read in seconds (1-600).
    type: int
    default: 30
  fio_block_size:
    description:
      - Block size of the fio read, a number with an optional k, m or g suffix (C(1M), C(128k)).
    type: str
    default: 1M
  fio_direct:
    description:
      - Read with O_DIRECT (bypassing the page cache, what a cold dataset read sees).
    type: bool
    default: true
extends_documentation_fragment:
  - npuops.ascend.tool_options
  - npuops.ascend.attributes
  - npuops.ascend.attributes.info_module
attributes:
  platform:
    support: full
    platforms: posix
    description: Linux (procfs).
notes:
  - In check mode the reads run; the fio read does not (fio writes its test file), and RV(fio) says so in C(skipped).
  - O(timeout) (seconds per command, 0 for none) is raised for the sampling calls to O(seconds) + 15 and for fio to
    O(fio_runtime) + 120 when it is shorter.
seealso:
  - module: npuops.ascend.host_info
"""

EXAMPLES = r"""
- name: Measure /dev/shm and the CPU time waiting for IO over 5 seconds
  npuops.ascend.io_info:
    seconds: 5
  register: io

- name: Also run the method's fio read (4 jobs, queue depth 16, 8 GB) on the dataset file system
  npuops.ascend.io_info:
    fio_file: /data/npuops-fio.test
    fio_size_mb: 8192
    fio_numjobs: 4
    fio_iodepth: 16
    fio_runtime: 60
  register: io_fio

- name: Stop when the node waits for IO
  ansible.builtin.assert:
    that: io.iostat.iowait_mean_pct is none or io.iostat.iowait_mean_pct < 5
    fail_msg: "{{ inventory_hostname }}: iowait {{ io.iostat.iowait_mean_pct }} %, limit 5 %"
"""

RETURN = r"""
shm:
  description: The shared-memory mount; sizes in MB, null when it is not mounted.
  returned: success
  type: dict
  sample: {path: /dev/shm, mounted: true, fstype: tmpfs, options: [rw, nosuid, nodev, relatime, size=1048576k],
           size_mb: 1024.0, used_mb: 0.0, free_mb: 1024.0, used_pct: 0.0}
vmstat:
  description: C(wa) of vmstat (percent of CPU time waiting for IO, an integer per sample), mean and maximum; the means
    of C(us), C(sy), C(id); null values when vmstat is missing or failed.
  returned: success
  type: dict
  sample: {samples: 5, wa_pct: [0, 0, 1, 0, 0], wa_mean_pct: 0.2, wa_max_pct: 1, us_mean_pct: 3.0, sy_mean_pct: 1.0,
           id_mean_pct: 95.8, cmd: /usr/bin/vmstat 1 6}
iostat:
  description: C(%iowait) of iostat per report, mean and maximum, the mean C(%idle), and the CPU count and kernel of its
    header; null values when iostat is missing or failed.
  returned: success
  type: dict
  sample: {samples: 5, iowait_pct: [0.3, 0.31, 0.29, 0.3, 0.3], iowait_mean_pct: 0.3, iowait_max_pct: 0.31,
           idle_mean_pct: 95.6, cpus: 192, kernel: 5.10.0-182.0.0.95.oe2203sp3.aarch64,
           devices: [{device: nvme0n1, samples: 5, util_mean_pct: 3.1, util_max_pct: 4.0, await_mean_ms: 0.2,
                      await_max_ms: 0.3, r_await_mean_ms: 0.18, w_await_mean_ms: 0.25, queue_mean: 0.02}],
           device_columns: [r/s, rkB/s, rrqm/s, '%rrqm', r_await, rareq-sz, w/s, wkB/s, wrqm/s, '%wrqm', w_await, wareq-sz,
                            aqu-sz, '%util'],
           cmd: /usr/bin/iostat -x 1 6}
fio:
  description: The sequential read. C(ran) false with the reason in C(skipped) when it did not run (no O(fio_file),
    check mode, fio not installed); C(removed) says the test file is gone.
  returned: success
  type: dict
  sample: {ran: true, file: /data/npuops-fio.test, skipped: null, rw: read, block_size: 1M, size_mb: 8192, numjobs: 4,
           iodepth: 16, ioengine: libaio, bw_mib_s: 1874.0, bw_mb_s: 1965.0, iops: 1874.0, lat_mean_ms: 34.1,
           clat_p99_ms: 61.0, read_bw_mib_s: 1874.0, read_bw_mb_s: 1965.0, read_iops: 1874.0, read_io_mib: 32768.0,
           runtime_ms: 17486, disk_util: [{name: nvme0n1, util_pct: 99.1}], version: "3.29", removed: true,
           cmd: "/usr/bin/fio --name=npuops-read ... --output-format=json"}
cpus:
  description: CPUs of the node (from the iostat header, else the module's own count).
  returned: success
  type: int
  sample: 192
errors:
  description: What could not be read or run (C(what), C(msg), and C(cmd), C(rc), C(stdout), C(stderr) for a command);
    its values are null.
  returned: success
  type: list
  elements: dict
"""

import re  # noqa: E402

from ansible_collections.npuops.ascend.plugins.module_utils._argspec import build_module, execute, tool_options  # noqa: E402
from ansible_collections.npuops.ascend.plugins.module_utils._domain.io import IoReader  # noqa: E402

RANGES = {
    'seconds': (1, 300),
    'fio_size_mb': (1, 65536),
    'fio_runtime': (1, 600),
    'fio_numjobs': (1, 64),
    'fio_iodepth': (1, 1024),
}


def problems(params):
    found = []
    for name, (low, high) in sorted(RANGES.items()):
        if not low <= params[name] <= high:
            found.append('%s must be %d-%d, got %d' % (name, low, high, params[name]))
    if not re.match(r'^[0-9]+[kKmMgG]?$', params['fio_block_size']):
        found.append('fio_block_size must be a number with an optional k, m or g suffix (1M, 128k), got %s' % params['fio_block_size'])
    return found


def main():
    argument_spec = dict(
        seconds=dict(type='int', default=5),
        shm_path=dict(type='path', default='/dev/shm'),
        fio_file=dict(type='path'),
        fio_size_mb=dict(type='int', default=8192),
        fio_runtime=dict(type='int', default=30),
        fio_numjobs=dict(type='int', default=4),
        fio_iodepth=dict(type='int', default=16),
        fio_ioengine=dict(type='str', default='libaio', choices=['libaio', 'io_uring', 'psync', 'sync', 'posixaio']),
        fio_rw=dict(type='str', default='read', choices=['read', 'randread', 'write', 'randwrite']),
        fio_block_size=dict(type='str', default='1M'),
        fio_direct=dict(type='bool', default=True),
    )
    argument_spec.update(tool_options('timeout'))
    module = build_module('io_info', argument_spec, supports_check_mode=True)
    found = problems(module.params)
    if found:
        module.fail_json(msg='io_info: %s.' % '; '.join(found))
    execute(module, lambda warnings: IoReader(module, warnings).gather())


if __name__ == '__main__':
    main()
