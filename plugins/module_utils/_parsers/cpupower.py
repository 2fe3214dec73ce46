# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parser for ``cpupower frequency-info`` output (Linux kernel ``tools/power/cpupower``).

The text comes from ``tools/power/cpupower/utils/cpufreq-info.c`` (torvalds/linux @995d5f64):
``cmd_freq_info`` prints ``analyzing CPU %d:`` for each chosen CPU (line 598) and `` *is offline``
plus an empty line for an offline one (line 601); ``get_policy`` (lines 325-344) prints either
``  Unable to determine current policy`` or the three lines of the current policy, whose second
line names the governor (lines 338-339). Without ``-p`` the full report (``debug_output_one``)
adds driver, CPU sets, latency, hardware limits, available governors, current frequency and
boost lines around the same policy lines. cpupower prints the text untranslated under
``LC_ALL=C``; the runner always sets it.
"""

from __future__ import annotations

import re

from ansible_collections.npuops.ascend.plugins.module_utils._parsers._common import MAX_CPUS, lines_of, to_int

_ANALYZING_RE = re.compile(r'^analyzing CPU ([0-9]+):\s*$')
# the governor line; a reflowed copy may carry 'within this range.' on the same line
_GOVERNOR_RE = re.compile(r'The governor "([A-Za-z0-9_.+-]+)" may decide which speed to use(?:\s+within this range\.)?\s*$')
_NO_POLICY = (
    re.compile(r'^\s*Unable to determine current policy\s*$'),
    re.compile(r'^\s*\*is offline\s*$'),
    re.compile(r'^\s*no or unknown cpufreq driver is active on this CPU\s*$'),
)
# the other lines of a policy report and of the full report (printf formats of cpufreq-info.c and
# helpers/amd.c); their values are not needed to read the governor
_KNOWN = tuple(re.compile(pattern) for pattern in (
    r'^\s*current policy: frequency should be within \S.*$',
    r'^\s*within this range\.\s*$',
    r'^\s*driver: \S.*$',
    r'^\s*CPUs which run at the same hardware frequency: \S.*$',
    r'^\s*CPUs which need to have their frequency coordinated by software: \S.*$',
    r'^\s*maximum transition latency: .*\S.*$',
    r'^\s*energy performance preference: \S.*$',
    r'^\s*hardware limits: \S.*$',
    r'^Not Available\s*$',
    r'^\s*available frequency steps: .*\S.*$',
    r'^\s*available cpufreq governors: \S.*$',
    r'^\s*current CPU frequency: .*\S.*$',
    r'^\s*boost state support:\s*$',
    r'^\s*(?:Supported|Active): (?:yes|no)\s*$',
    r'^\s*(?:Boost|Total) States: [0-9]+\s*$',
    r'^\s*Pstate-Pb?[0-9]+: +[0-9]+MHz(?: \(boost state\))?\s*$',
    r'^\s*[0-9]+ MHz max turbo [0-9]+ active cores\s*$',
    r'^\s*boost frequency steps: \S.*$',
    r'^\s*AMD PSTATE [A-Za-z -]+ Performance: [0-9]+\. [A-Za-z -]+ Frequency: \S.*$',
))


def parse_frequency_info_policy(text):
    """Parse ``cpupower -c <cpus> frequency-info -p`` (also the full ``cpupower frequency-info``).

    Sample (``cpupower frequency-info --policy``, TiDB deployment guide)::

        analyzing CPU 0:
          current policy: frequency should be within 1.20 GHz and 3.20 GHz.
                          The governor "powersave" may decide which speed to use
                          within this range.

    Returns ``{'cpus': {0: 'powersave'}, 'unparsed': []}``: one key per ``analyzing CPU N:``
    block. A CPU without a governor maps to None: offline (`` *is offline``), no cpufreq driver
    (``no or unknown cpufreq driver is active on this CPU``) or ``Unable to determine current
    policy``. cpupower stops at the first CPU whose policy it cannot read (exit status non-zero),
    so CPUs after that one are missing, not None. A CPU number of ``MAX_CPUS`` or more, or a
    governor line outside a CPU block, goes to ``unparsed``.
    """
    out = {'cpus': {}, 'unparsed': []}
    cpu = None
    for line in lines_of(text):
        if not line.strip():
            continue
        match = _ANALYZING_RE.match(line)
        if match:
            number = to_int(match.group(1))
            if number is None or number >= MAX_CPUS:
                cpu = None
                out['unparsed'].append(line)
            else:
                cpu = number
                out['cpus'][cpu] = None
            continue
        match = _GOVERNOR_RE.search(line)
        if match:
            if cpu is None:
                out['unparsed'].append(line)
            else:
                out['cpus'][cpu] = match.group(1)
            continue
        if any(pattern.match(line) for pattern in _NO_POLICY + _KNOWN):
            continue
        out['unparsed'].append(line)
    return out


PARSERS = {
    'policy': parse_frequency_info_policy,
}
