#!/usr/bin/python
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: io_info
short_description: Measure the IO side of a training node (/dev/shm, CPU time waiting for IO, optional fio sequential read)
version_added: 0.1.0
author:
  - npuops maintainers (@npuops)
description:
  - Reads C(/dev/shm) (mount options from C(/proc/mounts), size, used and free space from C(statvfs)).
  - Runs C(vmstat 1 N) and C(iostat -c 1 N) at the same time over a window of O(seconds) seconds and returns the CPU
    time waiting for IO as both tools see it (vmstat C(wa), iostat C(%iowait)), per sample, mean and maximum. The first
    report of each tool (the average since boot) is left out.
  - A missing C(vmstat) (package procps) or C(iostat) (package sysstat) gives null values and a warning; nothing is
    installed.
  - Only when O(fio_file) is given and C(fio) is installed, runs one sequential read with fio on that file (fio first
    writes it, O(fio_size_mb) MB, then reads it for at most O(fio_runtime) seconds) and removes the file afterwards. The
    file must not exist beforehand; nothing else is written.
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
      - Size of the fio test file in MB (1-65536).
    type: int
    default: 1024
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

- name: Also read 2 GB sequentially from the dataset file system
  npuops.ascend.io_info:
    fio_file: /data/npuops-fio.test
    fio_size_mb: 2048
    fio_runtime: 30
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
           idle_mean_pct: 95.6, cpus: 192, kernel: 5.10.0-182.0.0.95.oe2203sp3.aarch64, cmd: /usr/bin/iostat -c 1 6}
fio:
  description: The sequential read. C(ran) false with the reason in C(skipped) when it did not run (no O(fio_file),
    check mode, fio not installed); C(removed) says the test file is gone.
  returned: success
  type: dict
  sample: {ran: true, file: /data/npuops-fio.test, skipped: null, read_bw_mib_s: 1874.0, read_bw_mb_s: 1965.0,
           read_iops: 1874.0, read_io_mib: 1024.0, runtime_ms: 546, version: "3.29", removed: true,
           cmd: "/usr/bin/fio --name=npuops-seqread ..."}
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
        fio_size_mb=dict(type='int', default=1024),
        fio_runtime=dict(type='int', default=30),
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
