# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Callback of the playbook benchmark (not part of the collection): at the end of a run, writes the host-tasks
of every host (ok + skipped + failed + unreachable of the recap) and the CPU Ansible's main process spent itself
(getrusage of this process, without the forked workers and the SSH clients) to the JSON file that
NPUOPS_BENCH_STATS names. bench/bench_playbooks.py enables it for every run it times.
"""

from __future__ import annotations

import json
import os
import resource

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = r"""
name: npuops_bench_stats
type: aggregate
short_description: host-tasks per host and the main process's CPU, for bench/run.sh
description:
  - "Writes C({hosts: {host: host-tasks}, main_cpu_s}) to the file NPUOPS_BENCH_STATS names at the end of a run."
"""


def host_tasks(summary):
    """Host-tasks of one host from the recap's counters: every task that ran or was skipped on it (``ok`` already
    counts the changed ones)."""
    return sum(int(summary.get(key, 0)) for key in ('ok', 'skipped', 'failures', 'unreachable'))


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = 'aggregate'
    CALLBACK_NAME = 'npuops_bench_stats'
    CALLBACK_NEEDS_ENABLED = True

    def v2_playbook_on_stats(self, stats):
        path = os.environ.get('NPUOPS_BENCH_STATS')
        if not path:
            return
        usage = resource.getrusage(resource.RUSAGE_SELF)
        hosts = dict((host, host_tasks(stats.summarize(host))) for host in sorted(stats.processed))
        with open(path, 'w') as handle:
            json.dump({'hosts': hosts, 'main_cpu_s': round(usage.ru_utime + usage.ru_stime, 3)}, handle)
