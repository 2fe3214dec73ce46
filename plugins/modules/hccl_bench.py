#!/usr/bin/python
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: hccl_bench
short_description: Measure the AllReduce bus bandwidth of the NPUs with CANN's hccl_test (or a torchrun script)
version_added: 0.1.0
author:
  - npuops maintainers (@npuops)
description:
  - Runs CANN's C(hccl_test) the documented way, C(mpirun -n <ranks> .../hccl_test/bin/all_reduce_test -b 8K -e 1G
    -f 2 -p 8) (across nodes with C(-f <hostfile>)), or, with O(mode=torch), an AllReduce script under C(torchrun).
  - Parses the table, computes the bus bandwidth of every size (C(busbw = algbw x 2(n-1)/n) for n ranks), and compares
    the peak with a band of the theoretical bandwidth (O(theory_busbw), default the HCCS figure of an Atlas 800T A2).
  - Below the band the message says which processes hold NPUs on the node (from C(npu-smi info)) and points at
    C(HCCL_BUFFSIZE); with O(fail_below_band=true) (the default) the task then fails, otherwise RV(below_band) says it.
  - A benchmark changes nothing on the node, so the task never reports a change; in check mode it does not run and
    the task is skipped, saying so.
options:
  mode:
    description: V(hccl_test) runs CANN's C(all_reduce_test) under C(mpirun); V(torch) runs O(script) under C(torchrun).
    type: str
    choices: [hccl_test, torch]
    default: hccl_test
  npus:
    description: NPUs per node that take part (C(-p) of hccl_test, C(--nproc_per_node) of torchrun).
    type: int
    default: 8
  hosts:
    description:
      - For a run across nodes (V(hccl_test) only), the hosts in rank order, written to a temporary hostfile
        (C(host:npus) per line) given to C(mpirun -f); the ranks are O(npus) times their number.
      - Each host must reach the others for MPI (passwordless SSH), as the hccl_test documentation requires.
    type: list
    elements: str
    default: []
  host_groups:
    description:
      - Several runs across nodes at once, one per group of hosts (V(hccl_test) only) - each group gets its own hostfile
        and C(mpirun), all started together, and its result is one entry of RV(runs). The groups must not share a host
        (a node's NPUs take part in one run at a time); on a non-blocking fabric disjoint pairs do not slow each other.
      - A group below the band, or whose run fails, is said in its entry of RV(runs); the task does not fail for it
        (O(fail_below_band) applies to a single run). The search of the role roce_lossless for slow nodes measures its
        rounds of disjoint pairs this way.
      - Mutually exclusive with O(hosts) and O(rails).
    type: list
    elements: list
    default: []
  rails:
    description:
      - NPU ids to measure one rail at a time across the nodes of O(hosts) (V(hccl_test) only, two hosts or more) - NPU
        d of every node, over its own RoCE port. One run per id, all started together, each with C(-p 1), a hostfile of
        C(host:1) per host (the ranks are the number of hosts) and the variables of O(env) plus
        C(ASCEND_RT_VISIBLE_DEVICES=<id>) (also given with C(mpirun -genv); it overrides that variable of O(env)). CANN's
        runtime then shows the job only that NPU, so logical device 0 of every rank is physical NPU d. O(npus) does
        not apply.
      - Each id's result is one entry of RV(runs) with C(device); a run below the band or that fails is said in its
        entry, the task does not fail for it. Ids 0-63, each once.
      - Mutually exclusive with O(host_groups). The role roce_lossless measures the rails of stage 4 this way.
    type: list
    elements: int
    default: []
  min_bytes:
    description: Smallest message size (C(-b)), bytes with an optional K, M or G suffix.
    type: str
    default: 8K
  max_bytes:
    description: Largest message size (C(-e)), bytes with an optional K, M or G suffix.
    type: str
    default: 1G
  step_factor:
    description: Size multiplication factor between steps (C(-f)).
    type: int
    default: 2
  iters:
    description: Iterations per size (C(-n)); the tool's default when unset.
    type: int
  warmup_iters:
    description: Warm-up iterations per size (C(-w)); the tool's default when unset.
    type: int
  env:
    description:
      - Environment variables for the run, for example C(HCCL_BUFFSIZE) (MB) or C(HCCL_RDMA_TC); with V(hccl_test)
        they are also passed to the ranks with C(mpirun -genv).
    type: dict
    default: {}
  hccl_test_path:
    description: The C(all_reduce_test) binary of hccl_test.
    type: path
    default: /usr/local/Ascend/ascend-toolkit/latest/tools/hccl_test/bin/all_reduce_test
  mpirun_path:
    description:
      - Path of C(mpirun) or its directory. When unset, C(/usr/local/mpich/bin), C(/usr/local/openmpi/bin) and E(PATH)
        are searched (hccl_test is built against MPICH in its documentation).
    type: path
  script:
    description: For O(mode=torch), the AllReduce script on the node (the hccl_bench role ships one).
    type: path
  torchrun_path:
    description: For O(mode=torch), path of C(torchrun) or its directory; searched in E(PATH) when unset.
    type: path
  theory_busbw:
    description:
      - The theoretical bus bandwidth in GB/s the band is a share of. The default, 196, is 7 HCCS links of 28 GB/s
        each, what an NPU of an Atlas 800T A2 can reach inside the node.
      - For a run across nodes use the RoCE line rate instead (25 for 200GE).
    type: float
    default: 196.0
  band:
    description:
      - Expected range of the peak bus bandwidth, as two percentages of O(theory_busbw). Below the lower bound is a
        finding; above the upper one the result is reported as better than expected.
    type: list
    elements: float
    default: [60.0, 75.0]
  fail_below_band:
    description: Fail the task when the peak bus bandwidth is below the band.
    type: bool
    default: true
  timeout:
    description: Seconds the whole run may take (through coreutils C(timeout -k 5)). V(0) disables the limit.
    type: int
    default: 900
  npu_smi_path:
    description: Path of C(npu-smi) (or its directory), for the processes that hold NPUs. Searched when unset.
    type: path
extends_documentation_fragment:
  - npuops.ascend.attributes
attributes:
  check_mode:
    support: full
    details: The benchmark does not run in check mode; the task is skipped and says so.
  diff_mode:
    support: N/A
    details: Nothing is changed.
  idempotent:
    support: full
    details: Nothing is changed.
  platform:
    support: full
    platforms: posix
    description: Linux nodes with CANN (hccl_test built with MPI) or torch_npu.
notes:
  - hccl_test prints the algorithm bandwidth; the bus bandwidth of an AllReduce over n ranks is algbw x 2(n-1)/n.
seealso:
  - module: npuops.ascend.npu_info
"""

EXAMPLES = r"""
- name: Measure the intra-node AllReduce bandwidth of the 8 NPUs
  npuops.ascend.hccl_bench:
    env:
      HCCL_BUFFSIZE: 200
  register: bench

- name: Measure across two nodes against the 200GE line rate, without failing
  npuops.ascend.hccl_bench:
    hosts: [node01, node02]
    theory_busbw: 25
    band: [80, 95]
    fail_below_band: false
  run_once: true

- name: Measure two disjoint pairs of nodes at once
  npuops.ascend.hccl_bench:
    host_groups: [[node01, node02], [node03, node04]]
    theory_busbw: 25
    band: [80, 95]
  register: pairs
  run_once: true

- name: Measure each rail (NPU d of both nodes over its own port) on its own, all rails at once
  npuops.ascend.hccl_bench:
    hosts: [node01, node02]
    rails: [0, 1, 2, 3, 4, 5, 6, 7]
    min_bytes: 1G
    max_bytes: 1G
    theory_busbw: 25
    band: [85, 95]
  register: rails
  run_once: true
"""

RETURN = r"""
rows:
  description: One entry per message size (C(size_bytes), C(avg_time_us), C(algbw_gb_s), C(busbw_gb_s)).
  returned: when the benchmark ran
  type: list
  elements: dict
  sample: [{size_bytes: 1073741824, avg_time_us: 13698.2, algbw_gb_s: 78.38, busbw_gb_s: 137.17}]
peak_busbw_gb_s:
  description: The highest bus bandwidth of all sizes.
  returned: when the benchmark ran
  type: float
  sample: 137.17
peak_size_bytes:
  description: The message size of the peak.
  returned: when the benchmark ran
  type: int
ranks:
  description: Number of ranks (NPUs) of the run.
  returned: when the benchmark ran
  type: int
band:
  description: The band in GB/s (C(low_gb_s), C(high_gb_s), C(theory_gb_s), C(percent)).
  returned: always
  type: dict
below_band:
  description: Whether the peak is below the band.
  returned: when the benchmark ran
  type: bool
above_band:
  description: Whether the peak is above the band (better than expected).
  returned: when the benchmark ran
  type: bool
busy:
  description: NPU processes found on the node before the run (C(device), C(pid), C(name)).
  returned: when the benchmark ran
  type: list
  elements: dict
cmd:
  description: The command that ran.
  returned: when the benchmark ran
  type: str
stdout:
  description: What the benchmark printed.
  returned: when the benchmark ran
  type: str
runs:
  description:
    - With O(host_groups), one entry per group in their order - C(hosts), and C(peak_busbw_gb_s), C(peak_size_bytes),
      C(ranks), C(below_band), C(above_band), C(cmd) when it ran, or C(failed) true and C(msg) (what failed and what
      the tool printed) when it did not.
    - With O(rails), one entry per NPU id in their order, the same keys and C(device) (the NPU id of the rail);
      C(hosts) are O(hosts) and C(ranks) their number.
  returned: with O(host_groups) or O(rails), when the benchmarks ran
  type: list
  elements: dict
  sample: [{hosts: [node01, node02], peak_busbw_gb_s: 44.925, peak_size_bytes: 1073741824, ranks: 16, below_band: false,
            above_band: false}]
"""

import os  # noqa: E402
import re  # noqa: E402
import tempfile  # noqa: E402

from ansible_collections.npuops.ascend.plugins.module_utils._argspec import build_module, execute  # noqa: E402
from ansible_collections.npuops.ascend.plugins.module_utils._parsers import hccl_bench as bench_parsers  # noqa: E402
from ansible_collections.npuops.ascend.plugins.module_utils._tools.npu_smi import NpuSmi  # noqa: E402
from ansible_collections.npuops.ascend.plugins.module_utils._tools.runner import (  # noqa: E402
    ModuleFailure,
    Runner,
    cmd_to_text,
    failed_call,
    find_tool,
    host_name,
    in_parallel,
    parse_output,
    unparsed_warning,
)

MPI_DIRS = ['/usr/local/mpich/bin', '/usr/local/openmpi/bin']
_SIZE = re.compile(r'^([0-9]+)([KMG]?)$', re.I)
_UNITS = {'': 1, 'K': 1024, 'M': 1024 ** 2, 'G': 1024 ** 3}


def size_bytes(text):
    """'8K' -> 8192; ValueError for anything else."""
    match = _SIZE.match(str(text).strip())
    if not match:
        raise ValueError('%r is not a size (bytes with an optional K, M or G suffix)' % (text,))
    return int(match.group(1)) * _UNITS[match.group(2).upper()]


def band_of(params):
    low_pct, high_pct = params['band']
    theory = params['theory_busbw']
    return {'low_gb_s': round(theory * low_pct / 100.0, 3), 'high_gb_s': round(theory * high_pct / 100.0, 3),
            'theory_gb_s': theory, 'percent': [low_pct, high_pct]}


class Bench:
    def __init__(self, module, warnings):
        self.module = module
        self.params = module.params
        self.warnings = warnings
        self.host = host_name()
        self.runner = Runner(module, self.params['timeout'])

    def busy(self):
        """NPU processes on this node; [] (with a warning) when npu-smi cannot tell."""
        try:
            npu_smi = NpuSmi.find(self.module, Runner(self.module, 60), self.params['npu_smi_path'], self.host)
            found = npu_smi.processes(list(range(64)))
            self.warnings.extend(npu_smi.warnings)
            return found
        except ModuleFailure as exc:
            self.warnings.append('%s The processes on the NPUs are not known.' % exc.msg)
            return []

    def hccl_test_argv(self, hostfile, hosts=None, npus=None, env=None):
        params = self.params
        hosts = params['hosts'] if hosts is None else hosts
        npus = params['npus'] if npus is None else npus
        env = params['env'] if env is None else env
        mpirun = find_tool(self.module, 'mpirun', params['mpirun_path'], extra_dirs=MPI_DIRS,
                           missing_hint='MPI is needed by hccl_test (MPICH in the CANN documentation)')
        if not (os.path.isfile(params['hccl_test_path']) and os.access(params['hccl_test_path'], os.X_OK)):
            raise ModuleFailure('hccl_test not found at %s. Build it under <toolkit>/tools/hccl_test (make MPI_HOME=... '
                                'ASCEND_DIR=...) or set hccl_test_path.' % params['hccl_test_path'], subject=self.host)
        ranks = npus * max(1, len(hosts))
        argv = [mpirun]
        if hostfile:
            argv += ['-f', hostfile]
        argv += ['-n', str(ranks)]
        for key, value in sorted(env.items()):
            argv += ['-genv', str(key), str(value)]
        argv += [params['hccl_test_path'], '-b', params['min_bytes'], '-e', params['max_bytes'], '-f', str(params['step_factor']),
                 '-p', str(npus)]
        if params['iters'] is not None:
            argv += ['-n', str(params['iters'])]
        if params['warmup_iters'] is not None:
            argv += ['-w', str(params['warmup_iters'])]
        return argv, ranks

    def torch_argv(self):
        params = self.params
        torchrun = find_tool(self.module, 'torchrun', params['torchrun_path'], missing_hint='it comes with PyTorch')
        argv = [torchrun, '--nproc_per_node', str(params['npus']), params['script'],
                '--max-bytes', str(size_bytes(params['max_bytes']))]
        if params['iters'] is not None:
            argv += ['--trials', str(params['iters'])]
        return argv, params['npus']

    @staticmethod
    def hostfile(hosts, npus):
        """A temporary MPICH hostfile of ``hosts`` (``host:npus`` per line); the caller removes it."""
        handle, path = tempfile.mkstemp(prefix='npuops-hostfile-', text=True)
        with os.fdopen(handle, 'w') as out:
            out.write(''.join('%s:%d\n' % (host, npus) for host in hosts))
        return path

    def run(self):
        params = self.params
        band = band_of(params)
        if self.module.check_mode:
            return {'changed': False, 'skipped': True, 'band': band,
                    'msg': 'hccl_bench did not run: a measurement is skipped in check mode.'}
        busy = self.busy()
        if params['host_groups']:
            return self.run_groups(busy, band)
        if params['rails']:
            return self.run_rails(busy, band)
        hostfile = None
        try:
            if params['hosts']:
                hostfile = self.hostfile(params['hosts'], params['npus'])
            argv, ranks = self.hccl_test_argv(hostfile) if params['mode'] == 'hccl_test' else self.torch_argv()
            try:
                rc, out, err = self.runner.run(argv, env=params['env'])
            except ModuleFailure as exc:    # could not start, or ran out of time
                exc.at(self.host)
                raise
        finally:
            if hostfile:
                os.unlink(hostfile)
        return self.evaluate(argv, ranks, rc, out, err, busy, band)

    def run_groups(self, busy, band):
        """One run per group of hosts, all at once; each group's result (or failure) is an entry of ``runs``."""
        groups = [list(group) for group in self.params['host_groups']]
        files = []
        try:
            for group in groups:
                files.append(self.hostfile(group, self.params['npus']))
            results = in_parallel(lambda index: self.run_group(groups[index], files[index], busy, band),
                                  range(len(groups)), workers=len(groups))
        finally:
            for path in files:
                os.unlink(path)
        runs = []
        for group, result in zip(groups, results):
            if isinstance(result, ModuleFailure):
                runs.append({'hosts': group, 'failed': True, 'msg': result.msg})
            elif isinstance(result, BaseException):
                raise result
            else:
                runs.append(result)
        slow = [run for run in runs if run.get('failed') or run.get('below_band')]
        return {'changed': False, 'runs': runs, 'band': band, 'busy': busy,
                'msg': '%d run(s) across nodes at once, %d below the band or failed' % (len(runs), len(slow))}

    def run_group(self, hosts, hostfile, busy, band, npus=None, env=None):
        env = self.params['env'] if env is None else env
        argv, ranks = self.hccl_test_argv(hostfile, hosts, npus=npus, env=env)
        rc, out, err = self.runner.run(argv, env=env)
        result = self.evaluate(argv, ranks, rc, out, err, busy, band, fail_below=False)
        entry = {'hosts': hosts}
        for key in ('peak_busbw_gb_s', 'peak_size_bytes', 'ranks', 'below_band', 'above_band', 'cmd'):
            entry[key] = result[key]
        return entry

    def run_rails(self, busy, band):
        """One run per rail (NPU id) over ``hosts``, all at once: one NPU per node (``-p 1``, ``host:1``), the NPU made
        the only visible one with ASCEND_RT_VISIBLE_DEVICES; each rail's result (or failure) is an entry of ``runs``."""
        hosts = list(self.params['hosts'])
        rails = list(self.params['rails'])
        hostfile = self.hostfile(hosts, 1)
        try:
            results = in_parallel(
                lambda device: self.run_group(hosts, hostfile, busy, band, npus=1,
                                              env=dict(self.params['env'], ASCEND_RT_VISIBLE_DEVICES=str(device))),
                rails, workers=len(rails))
        finally:
            os.unlink(hostfile)
        runs = []
        for device, result in zip(rails, results):
            if isinstance(result, ModuleFailure):
                runs.append({'device': device, 'hosts': hosts, 'failed': True, 'msg': result.msg})
            elif isinstance(result, BaseException):
                raise result
            else:
                runs.append(dict(result, device=device))
        slow = [run for run in runs if run.get('failed') or run.get('below_band')]
        return {'changed': False, 'runs': runs, 'band': band, 'busy': busy,
                'msg': '%d rail run(s) across %d nodes at once, %d below the band or failed' % (
                    len(runs), len(hosts), len(slow))}

    def evaluate(self, argv, ranks, rc, out, err, busy, band, fail_below=True):
        key = 'hccl_test' if self.params['mode'] == 'hccl_test' else 'torch_allreduce'
        parsed, unparsed = parse_output(bench_parsers.PARSERS[key], argv, out)
        if unparsed:
            self.warnings.append(unparsed_warning(argv, unparsed))
        rows = self.rows(parsed, ranks)
        problems = parsed.get('errors') or []
        if parsed.get('failed_ranks'):
            problems = problems + ['check result failed on ranks %s' % ', '.join(str(r.get('rank')) for r in parsed['failed_ranks'])]
        if rc != 0 or problems or not rows:
            what = '; '.join(str(p) for p in problems[:3]) or 'no result rows'
            raise failed_call(argv, rc, out, err, subject=self.host,
                              hint='The benchmark did not finish (%s): check the CANN environment (set_env.sh), MPI and '
                                   'that no other job holds the NPUs.' % what)
        peak = max(rows, key=lambda row: row['busbw_gb_s'])
        result = {'changed': False, 'rows': rows, 'peak_busbw_gb_s': peak['busbw_gb_s'], 'peak_size_bytes': peak['size_bytes'],
                  'ranks': ranks, 'band': band, 'busy': busy, 'cmd': cmd_to_text(argv), 'stdout': out,
                  'below_band': peak['busbw_gb_s'] < band['low_gb_s'], 'above_band': peak['busbw_gb_s'] > band['high_gb_s']}
        if result['below_band']:
            result['msg'] = self.below_message(peak, band, busy)
            if self.params['fail_below_band'] and fail_below:
                raise ModuleFailure(result.pop('msg'), subject=self.host, **result)
        return result

    def rows(self, parsed, ranks):
        if self.params['mode'] == 'torch':
            if parsed.get('busbw_gb_s') is None:
                return []
            size = int((parsed.get('payload_gb') or 0) * 1e9)
            return [{'size_bytes': size, 'avg_time_us': None, 'algbw_gb_s': parsed.get('algbw_gb_s'),
                     'busbw_gb_s': parsed['busbw_gb_s']}]
        factor = bench_parsers.busbw_factor(ranks)
        return [{'size_bytes': row['data_size_bytes'], 'avg_time_us': row['avg_time_us'], 'algbw_gb_s': row['algbw_gb_s'],
                 'busbw_gb_s': round(row['algbw_gb_s'] * factor, 3)} for row in parsed.get('rows') or []]

    def below_message(self, peak, band, busy):
        text = ('AllReduce peak bus bandwidth %.1f GB/s (at %d bytes) is below the band %.1f-%.1f GB/s (%g-%g %% of %g GB/s).'
                % (peak['busbw_gb_s'], peak['size_bytes'], band['low_gb_s'], band['high_gb_s'], band['percent'][0],
                   band['percent'][1], band['theory_gb_s']))
        if busy:
            text += ' Processes hold NPUs of this node: %s; stop them and measure again.' % ', '.join(
                'NPU %s: pid %s (%s)' % (b['device'], b['pid'], b['name']) for b in busy)
        buffsize = self.params['env'].get('HCCL_BUFFSIZE')
        text += (' Check HCCL_BUFFSIZE (%s MB here, the default is 200; a buffer much smaller than the messages splits them '
                 'into more steps)' % (buffsize if buffsize is not None else 'unset, so 200'))
        return text + ' and that no other job uses the NPUs.'


def group_problems(params):
    """What is wrong with ``host_groups``: [] when it is empty or fit to run."""
    groups = params['host_groups']
    if not groups:
        return []
    problems = []
    if params['hosts']:
        problems.append('hosts and host_groups are mutually exclusive (one run, or several at once)')
    if params['mode'] == 'torch':
        problems.append('host_groups (runs across nodes) needs mode=hccl_test')
    seen = {}
    for index, group in enumerate(groups):
        if not all(isinstance(host, str) and host.strip() for host in group) or len(group) < 2:
            problems.append('host_groups[%d] is %r: each group is a list of two or more host names' % (index, group))
            continue
        for host in group:
            if host in seen:
                problems.append('%s is in host_groups[%d] and host_groups[%d]: the groups run at once, so a host can be in '
                                'one only' % (host, seen[host], index))
            seen.setdefault(host, index)
    return problems


def rail_problems(params):
    """What is wrong with ``rails``: [] when it is empty or fit to run."""
    rails = params['rails']
    if not rails:
        return []
    problems = []
    if params['mode'] == 'torch':
        problems.append('rails (runs across nodes) needs mode=hccl_test')
    if len(params['hosts']) < 2:
        problems.append('rails needs hosts, two or more (the nodes whose NPU d make rail d), got %d' % len(params['hosts']))
    if params['host_groups']:
        problems.append('rails and host_groups are mutually exclusive (one run per rail over hosts, or one per group)')
    bad = [device for device in rails if not 0 <= device <= 63]
    if bad:
        problems.append('rails holds %s: an NPU id is 0-63' % ', '.join(str(device) for device in bad))
    twice = sorted(set(device for device in rails if rails.count(device) > 1))
    if twice:
        problems.append('rails holds %s more than once: the rails run at once, each NPU in one run' % ', '.join(
            str(device) for device in twice))
    return problems


def main():
    module = build_module('hccl_bench', dict(
        mode=dict(type='str', choices=['hccl_test', 'torch'], default='hccl_test'),
        npus=dict(type='int', default=8),
        hosts=dict(type='list', elements='str', default=[]),
        host_groups=dict(type='list', elements='list', default=[]),
        rails=dict(type='list', elements='int', default=[]),
        min_bytes=dict(type='str', default='8K'),
        max_bytes=dict(type='str', default='1G'),
        step_factor=dict(type='int', default=2),
        iters=dict(type='int'),
        warmup_iters=dict(type='int'),
        env=dict(type='dict', default={}),
        hccl_test_path=dict(type='path', default='/usr/local/Ascend/ascend-toolkit/latest/tools/hccl_test/bin/all_reduce_test'),
        mpirun_path=dict(type='path'),
        script=dict(type='path'),
        torchrun_path=dict(type='path'),
        theory_busbw=dict(type='float', default=196.0),
        band=dict(type='list', elements='float', default=[60.0, 75.0]),
        fail_below_band=dict(type='bool', default=True),
        timeout=dict(type='int', default=900),
        npu_smi_path=dict(type='path'),
    ), supports_check_mode=True)
    params = module.params
    problems = []
    for name in ('min_bytes', 'max_bytes'):
        try:
            size_bytes(params[name])
        except ValueError as exc:
            problems.append('%s: %s' % (name, exc))
    if not problems and size_bytes(params['min_bytes']) > size_bytes(params['max_bytes']):
        problems.append('min_bytes %s is larger than max_bytes %s' % (params['min_bytes'], params['max_bytes']))
    if params['npus'] < 1 or params['step_factor'] < 2:
        problems.append('npus must be 1 or more and step_factor 2 or more (got %s, %s)' % (params['npus'], params['step_factor']))
    if len(params['band']) != 2 or not 0 < params['band'][0] < params['band'][1]:
        problems.append('band must be two increasing percentages above 0 (got %s)' % params['band'])
    if params['theory_busbw'] <= 0:
        problems.append('theory_busbw must be above 0 (got %s)' % params['theory_busbw'])
    if params['hosts'] and params['mode'] == 'torch':
        problems.append('hosts (a run across nodes) needs mode=hccl_test')
    problems.extend(group_problems(params))
    problems.extend(rail_problems(params))
    if params['mode'] == 'torch' and not params['script']:
        problems.append('mode=torch needs script (the AllReduce script on the node)')
    for item in (params['iters'], params['warmup_iters']):
        if item is not None and item < 0:
            problems.append('iters and warmup_iters must be 0 or more (got %s)' % item)
    if problems:
        module.fail_json(msg='hccl_bench: %s. Nothing ran.' % '; '.join(problems))
    execute(module, lambda warnings: Bench(module, warnings).run())


if __name__ == '__main__':
    main()
