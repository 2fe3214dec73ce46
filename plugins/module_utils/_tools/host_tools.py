# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""numactl and lscpu: the host tools that describe the NUMA layout, one small adapter each.

Each adapter says which package provides the tool, which argv the collection runs, which
parser reads it and what to do when it fails. cpupower lives in ``cpufreq.py``.
Python 3.9 compatible: this file runs on the managed nodes.
"""

from __future__ import annotations

from ansible_collections.npuops.ascend.plugins.module_utils._parsers import numa as numa_parsers
from ansible_collections.npuops.ascend.plugins.module_utils._tools.runner import failed_call, find_tool, where


class HostTool:
    """A host tool run with fixed arguments and parsed by one parser."""

    name = None
    args = ()
    parser = None
    missing_hint = None
    failure_hint = ''

    def __init__(self, path, host=None):
        self.path = path
        self.host = host

    @classmethod
    def find(cls, module, override=None, host=None):
        return cls(find_tool(module, cls.name, override, missing_hint=cls.missing_hint), host)

    def argv(self):
        return [self.path] + list(self.args)

    def check(self, argv, rc, stdout, stderr):
        """stdout of a finished call; a ToolError with the tool's hint when it failed."""
        if rc != 0:
            raise failed_call(argv, rc, stdout, stderr, hint=self.failure_hint, subject=where(self.host))
        return stdout


class Numactl(HostTool):
    name = 'numactl'
    args = ('-H',)
    parser = staticmethod(numa_parsers.PARSERS['numactl'])
    missing_hint = 'it comes with the numactl package'
    failure_hint = 'Check that the kernel has NUMA support (numactl -H must work on the host).'


class Lscpu(HostTool):
    name = 'lscpu'
    args = ()
    parser = staticmethod(numa_parsers.PARSERS['lscpu'])
    missing_hint = 'it comes with util-linux'
    failure_hint = 'Run lscpu on the host to see the error.'
