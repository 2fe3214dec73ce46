#!/usr/bin/python
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: profile_info
short_description: Read where the time of a training step goes from the torch_npu profiler's output
version_added: 0.1.0
author:
  - npuops maintainers (@npuops)
description:
  - Reads the C(ASCEND_PROFILER_OUTPUT) directory that the torch_npu profiler (C(torch_npu.profiler.profile) with
    C(tensorboard_trace_handler)) writes for each rank, and returns per rank and profiled step the split of the
    step time - computing, communication not overlapped by computing, free (the NPU neither computes nor
    communicates - host, data loading, launch) - the shares of the step in percent, and the AI Core utilisation.
  - Step figures come from C(step_trace_time.csv) (microseconds); the step time is C(Stage + Bubble), which equals
    Computing + Communication(Not Overlapped) + Free.
  - The AI Core utilisation is the time during which at least one compute kernel (Accelerator Core C(AI_CORE),
    C(AI_VECTOR_CORE), C(MIX_AIC) or C(MIX_AIV)) runs on the NPU, over the step time, in percent - from
    C(kernel_details.csv) (the union of the kernels' intervals of the step), else from C(op_statistic.csv) (the sum
    of the compute operators' Total Time, spread over the profiled steps by their step time, capped at 100).
  - The top communication operators come from C(communication.json) (milliseconds there, microseconds here), else
    from the communication kernels of C(kernel_details.csv) (core type C(HCCL) in older CANN, C(COMMUNICATION) in
    newer, or a name that starts with C(hcom_)).
  - When the directory holds an msprof-analyze C(cluster_analysis_output), its C(cluster_step_trace_time.csv)
    (ranks and the stage rows, maxima over a stage's ranks) and C(cluster_communication_matrix.json) are read too.
  - Read-only; never reports a change. Links are not followed.
options:
  path:
    description:
      - An C(ASCEND_PROFILER_OUTPUT) directory, a C(*_ascend_pt) directory holding one, or the directory the
        profiler writes into (the argument of C(tensorboard_trace_handler)), where the newest C(*_ascend_pt)
        directory is read (O(select=newest)) or every one of them (O(select=all), one per rank).
    type: path
    required: true
  select:
    description:
      - Which C(*_ascend_pt) directories of O(path) to read when O(path) holds several.
    type: str
    choices: [newest, all]
    default: newest
  max_file_mb:
    description:
      - Largest file read, in MB (1-65536). A larger C(kernel_details.csv) is left out with a warning (the AI Core
        utilisation then comes from C(op_statistic.csv)).
    type: int
    default: 512
  top:
    description:
      - How many communication operators to return per step (1-50).
    type: int
    default: 5
extends_documentation_fragment:
  - npuops.ascend.attributes
  - npuops.ascend.attributes.info_module
attributes:
  platform:
    support: full
    platforms: posix
    description: Any POSIX system; the profiler's output is read as files.
notes:
  - The rank of a C(*_ascend_pt) directory is read from the name of its C(profiler_info_<rank>.json); C(Device_id) of
    C(step_trace_time.csv) is the NPU the rank ran on, not the rank.
  - The field meanings are those of the msprof-analyze documentation (C(docs/recipe_output_format.md) of the Ascend
    mstt repository).
seealso:
  - module: npuops.ascend.io_info
"""

EXAMPLES = r"""
- name: Read the newest profile the training job wrote
  npuops.ascend.profile_info:
    path: /data/prof
  register: profile

- name: Read every rank's profile of the directory
  npuops.ascend.profile_info:
    path: /data/prof
    select: all
  register: profile_all

- name: Say when communication takes more than 15 percent of a step
  ansible.builtin.debug:
    msg: "rank {{ item.rank }} step {{ item.step }}: communication {{ item.comm_share_pct }} % of the step"
  loop: "{{ profile.steps | selectattr('comm_share_pct', 'gt', 15) | list }}"
"""

RETURN = r"""
dirs:
  description: The C(ASCEND_PROFILER_OUTPUT) directories read, with their rank (null when unknown).
  returned: success
  type: list
  elements: dict
  sample: [{path: /data/prof/node01_1234_20250101_ascend_pt/ASCEND_PROFILER_OUTPUT, rank: 0}]
steps:
  description:
    - One entry per rank and profiled step - C(rank), C(device_id), C(step), C(computing_us),
      C(comm_not_overlapped_us), C(overlapped_us), C(communication_us), C(free_us), C(stage_us), C(bubble_us),
      C(step_time_us), the shares C(compute_share_pct), C(comm_share_pct) (not overlapped), C(free_share_pct),
      C(aicore_util_pct) with C(aicore_from) (kernel_details or op_statistic), C(top_comm_ops)
      (C(op), C(count), C(total_us)) with C(top_comm_from).
  returned: success
  type: list
  elements: dict
  sample: [{rank: 0, device_id: 0, step: '10', computing_us: 820000.0, comm_not_overlapped_us: 90000.0,
            free_us: 30000.0, step_time_us: 940000.0, compute_share_pct: 87.23, comm_share_pct: 9.57,
            free_share_pct: 3.19, aicore_util_pct: 85.1, aicore_from: kernel_details,
            top_comm_ops: [{op: hcom_allReduce, count: 12, total_us: 95000.0}], top_comm_from: communication.json}]
summary:
  description:
    - Means over the entries of RV(steps) - C(ranks), C(steps), C(step_time_us), C(compute_share_pct),
      C(comm_share_pct), C(free_share_pct), C(aicore_util_pct) - and the worst rank of each share
      (C(worst_comm), C(worst_free), C(lowest_aicore)); null figures when nothing was read.
  returned: success
  type: dict
cluster:
  description:
    - The msprof-analyze cluster files when present - C(ranks) and C(stages) rows of C(cluster_step_trace_time.csv)
      (a stage row holds maxima over its ranks) and C(links) of C(cluster_communication_matrix.json) (the C(-total)
      figure of each link, the local C(i-i) link left out); null without a C(cluster_analysis_output).
  returned: success
  type: dict
errors:
  description: Files that could not be read or were left out (C(what), C(msg)).
  returned: success
  type: list
  elements: dict
"""

import json  # noqa: E402
import os  # noqa: E402
import re  # noqa: E402
import stat  # noqa: E402

from ansible_collections.npuops.ascend.plugins.module_utils._argspec import build_module  # noqa: E402
from ansible_collections.npuops.ascend.plugins.module_utils._parsers import profiler  # noqa: E402

OUTPUT = 'ASCEND_PROFILER_OUTPUT'
CLUSTER = 'cluster_analysis_output'
INFO_RE = re.compile(r'^profiler_info_([0-9]+)\.json$')


class ReadError(Exception):
    pass


def _is_dir(path):
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def read_text(path, max_bytes):
    """The file's text, never through a link; None when it is not there; ReadError when too large or unreadable."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ReadError('cannot examine %s: %s' % (path, exc.strerror)) from exc
    if not stat.S_ISREG(info.st_mode):
        raise ReadError('%s is not a regular file (a link or another kind of file is not followed)' % path)
    if info.st_size > max_bytes:
        sizes = (path, info.st_size // 2 ** 20, max_bytes // 2 ** 20)
        raise ReadError('%s has %d MB, more than max_file_mb %d: left out' % sizes)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, 'O_NOFOLLOW', 0))
        with os.fdopen(fd, 'r', encoding='utf-8', errors='replace', newline='') as handle:
            return handle.read()
    except OSError as exc:
        raise ReadError('cannot read %s: %s' % (path, exc.strerror)) from exc


def output_dirs(path, select):
    """``[(ASCEND_PROFILER_OUTPUT dir, *_ascend_pt dir or None)]`` under ``path``; ReadError when there is none."""
    if not _is_dir(path):
        raise ReadError('%s is not a directory (or is a link, which is not followed)' % path)
    if os.path.basename(os.path.normpath(path)) == OUTPUT:
        return [(path, os.path.dirname(os.path.normpath(path)))]
    if _is_dir(os.path.join(path, OUTPUT)):
        return [(os.path.join(path, OUTPUT), path)]
    found = []
    for name in sorted(os.listdir(path)):
        full = os.path.join(path, name)
        if name.endswith('_ascend_pt') and _is_dir(full) and _is_dir(os.path.join(full, OUTPUT)):
            found.append((os.lstat(os.path.join(full, OUTPUT)).st_mtime, full))
    if not found:
        raise ReadError('%s holds no %s directory and no *_ascend_pt directory with one: has the profiler run '
                        '(torch_npu.profiler with tensorboard_trace_handler) and finished its parsing?' % (path, OUTPUT))
    found.sort()
    chosen = found[-1:] if select == 'newest' else found
    return [(os.path.join(full, OUTPUT), full) for _mtime, full in chosen]


def rank_of(pt_dir):
    """The rank named by ``profiler_info_<rank>.json`` of a *_ascend_pt directory; None without one."""
    if not pt_dir or not _is_dir(pt_dir):
        return None
    for name in os.listdir(pt_dir):
        match = INFO_RE.match(name)
        if match:
            return int(match.group(1))
    return None


def _read(errors, what, path, max_bytes, parse):
    try:
        text = read_text(path, max_bytes)
        if text is None:
            return None
        if path.endswith('.json'):
            return parse(json.loads(text), what)
        return parse(text, what)
    except (ReadError, profiler.ProfilerParseError) as exc:
        errors.append({'what': what, 'msg': str(exc)})
    except ValueError as exc:
        errors.append({'what': what, 'msg': '%s is not valid JSON: %s' % (path, exc)})
    return None


def read_rank(out_dir, pt_dir, max_bytes, top, errors):
    rank = rank_of(pt_dir)
    where = 'rank %s (%s)' % (rank if rank is not None else '?', out_dir)
    rows = _read(errors, 'step_trace_time.csv of %s' % where, os.path.join(out_dir, 'step_trace_time.csv'),
                 max_bytes, profiler.parse_step_trace)
    if rows is None:
        if not any(error['what'].startswith('step_trace_time.csv of %s' % where) for error in errors):
            errors.append({'what': 'step_trace_time.csv of %s' % where,
                           'msg': 'missing: the profiler writes it at profiler_level Level0 and above'})
        return {'path': out_dir, 'rank': rank}, []
    kernels = _read(errors, 'kernel_details.csv of %s' % where, os.path.join(out_dir, 'kernel_details.csv'),
                    max_bytes, profiler.parse_kernel_details)
    op_stats = None
    if not kernels:
        op_stats = _read(errors, 'op_statistic.csv of %s' % where, os.path.join(out_dir, 'op_statistic.csv'),
                         max_bytes, profiler.parse_op_statistic)
    comm = _read(errors, 'communication.json of %s' % where, os.path.join(out_dir, 'communication.json'),
                 max_bytes, profiler.parse_communication)
    for row in rows:
        row['rank'] = rank
    return {'path': out_dir, 'rank': rank}, profiler.rank_split(rows, kernels, op_stats, comm, top)


def _mean(values):
    values = [value for value in values if value is not None]
    return round(sum(values) / len(values), 2) if values else None


def summarise(steps):
    """Means over the steps of every rank and the worst rank of each share."""
    def worst(key, lowest=False):
        known = [item for item in steps if item.get(key) is not None]
        if not known:
            return None
        item = (min if lowest else max)(known, key=lambda entry: entry[key])
        return {'rank': item.get('rank'), 'device_id': item.get('device_id'), 'step': item.get('step'),
                'value': item[key]}
    return {
        'ranks': len(set(item.get('rank') for item in steps)), 'steps': len(steps),
        'step_time_us': _mean(item.get('step_time_us') for item in steps),
        'compute_share_pct': _mean(item.get('compute_share_pct') for item in steps),
        'comm_share_pct': _mean(item.get('comm_share_pct') for item in steps),
        'free_share_pct': _mean(item.get('free_share_pct') for item in steps),
        'aicore_util_pct': _mean(item.get('aicore_util_pct') for item in steps),
        'worst_comm': worst('comm_share_pct'), 'worst_free': worst('free_share_pct'),
        'lowest_aicore': worst('aicore_util_pct', lowest=True),
    }


def read_cluster(path, max_bytes, errors):
    base = os.path.join(path, CLUSTER)
    if not _is_dir(base):
        return None
    rows = _read(errors, 'cluster_step_trace_time.csv', os.path.join(base, 'cluster_step_trace_time.csv'), max_bytes,
                 profiler.parse_step_trace) or []
    links = _read(errors, 'cluster_communication_matrix.json', os.path.join(base, 'cluster_communication_matrix.json'),
                  max_bytes, profiler.parse_communication_matrix) or []
    ranks = profiler.rank_split([row for row in rows if row['kind'] == 'rank'])
    stages = profiler.rank_split([row for row in rows if row['kind'] == 'stage'])
    for item, row in zip(stages, [row for row in rows if row['kind'] == 'stage']):
        item['ranks'] = row['ranks']
    return {'path': base, 'ranks': ranks, 'stages': stages, 'links': links}


def read_profile(path, select='newest', max_file_mb=512, top=5):
    """Everything the module returns, from the directory ``path``."""
    errors, dirs, steps = [], [], []
    max_bytes = int(max_file_mb) * 2 ** 20
    for out_dir, pt_dir in output_dirs(path, select):
        entry, rows = read_rank(out_dir, pt_dir, max_bytes, top, errors)
        dirs.append(entry)
        steps.extend(rows)
    cluster = read_cluster(path, max_bytes, errors) if _is_dir(path) else None
    return {'dirs': dirs, 'steps': steps, 'summary': summarise(steps), 'cluster': cluster, 'errors': errors}


def main():
    module = build_module('profile_info', dict(
        path=dict(type='path', required=True),
        select=dict(type='str', choices=['newest', 'all'], default='newest'),
        max_file_mb=dict(type='int', default=512),
        top=dict(type='int', default=5),
    ), supports_check_mode=True)
    params = module.params
    if not 1 <= params['max_file_mb'] <= 65536 or not 1 <= params['top'] <= 50:
        module.fail_json(msg='profile_info: max_file_mb must be 1-65536 and top 1-50, got %s and %s.'
                         % (params['max_file_mb'], params['top']))
    try:
        result = read_profile(params['path'], params['select'], params['max_file_mb'], params['top'])
    except ReadError as exc:
        module.fail_json(msg='profile_info: %s.' % exc)
    if not result['steps']:
        module.fail_json(msg='profile_info: no step figures under %s: %s. Profile at least one step '
                         '(torch_npu.profiler.schedule with active >= 1) and let the profiler finish parsing.'
                         % (params['path'], '; '.join(error['msg'] for error in result['errors']) or 'nothing read'),
                         **result)
    for error in result['errors']:
        module.warn('%s: %s' % (error['what'], error['msg']))
    module.exit_json(changed=False, **result)


if __name__ == '__main__':
    main()
