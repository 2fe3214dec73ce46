# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The run's metrics for monitoring: run_metrics reads the same JSON reports of one run as the run's report
(``{path relative to the run directory: content}``, see report.run_report) and writes them in the Prometheus text
exposition format 0.0.4, for node_exporter's textfile collector.

Every family is a gauge named ``npuops_*`` with its unit in the name; HELP and TYPE come once per family, before its
samples. A figure the run does not have gives no sample (never a 0 in its place): a stage that did not run has no
``npuops_stage_status`` sample, a NPU the health check did not read has no temperature. Only numbers leave this
module, labelled with names the run chose (node, stage, role, status, NPU id, counter); no message, command, path or
environment value of the reports is written.
"""

from __future__ import annotations

import datetime
import re
import time
from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

from ansible_collections.npuops.ascend.plugins.plugin_utils.figures import is_number
from ansible_collections.npuops.ascend.plugins.plugin_utils.health import (
    _ecc_counts,
    _frequency,
    _pcie_counters,
    _rows,
    _temperature,
    by_device,
    npu_power,
)

# the status of a node's stage (summary.json, store.STATUSES) -> the value of npuops_stage_status
STATUS_CODES = (('passed', 0), ('skipped', 1), ('stopped', 2), ('failed', 3))
# the verdict of stage 9 (regression.regression_compare) -> the value of npuops_regression_verdict
VERDICT_CODES = (('regressed', -1), ('unchanged', 0), ('improved', 1))
# stage 9's figures: (metric of the comparison, family, divisor to the family's unit)
REGRESSION_FIGURES = (
    ('mean_ms', 'npuops_regression_step_time_seconds', 1000.0),
    ('tokens_per_s', 'npuops_regression_tokens_per_second', 1),
    ('mfu_pct', 'npuops_regression_mfu_percent', 1),
)

# name -> help; every family is a gauge, written in this order
FAMILIES = (
    ('npuops_run_info', 'The run these metrics are of (label run: its id); always 1.'),
    ('npuops_last_run_timestamp_seconds', 'When the report of the run was written (the end of the run), Unix time.'),
    ('npuops_run_start_timestamp_seconds', 'When the run started, Unix time (from a run id in the default format '
                                           'YYYYMMDDTHHMMSSZ; absent for a run id given with npuops_run_id).'),
    ('npuops_run_check_mode', '1 when the run was a dry run (--check), else 0 (summary.json).'),
    ('npuops_node_lost', '1 when the run lost the node (unreachable) and went on without it, else 0 (summary.json).'),
    ('npuops_node_stages', 'Stages of the node with this status in the run (summary.json; 0 when none).'),
    ('npuops_stage_status', "The node's result of the stage: 0 passed, 1 skipped, 2 stopped, 3 failed (the label "
                            'status says the same in words); no sample when the stage did not run on the node.'),
    ('npuops_findings', "Findings of the node's stage by severity (fail, warn), the PoD findings that name the node "
                        'included (summary.json).'),
    ('npuops_npu_healthy', "1 when the NPU's health is OK in npu-smi, else 0 (stage 0)."),
    ('npuops_npu_temperature_celsius', 'The highest temperature the NPU showed in npu-smi, degrees Celsius (stage 0).'),
    ('npuops_npu_power_watts', 'The highest power the NPU showed in npu-smi, watts (stage 0).'),
    ('npuops_npu_aicore_frequency_hertz', 'The current AI Core frequency of the NPU, hertz (npu-smi info -t common, '
                                          'stage 0; its most reduced chip).'),
    ('npuops_npu_aicore_rated_frequency_hertz', 'The rated AI Core frequency of the NPU, hertz (npu-smi info -t '
                                                'common, stage 0).'),
    ('npuops_npu_ecc_multi_bit_errors', 'Multi-bit (double-bit) ECC errors of the NPU, the larger of the current and '
                                        'the aggregate count (npu-smi info -t ecc, stage 0).'),
    ('npuops_npu_ecc_single_bit_errors', 'Single-bit ECC errors of the NPU, the current count (npu-smi info -t ecc, '
                                         'stage 0).'),
    ('npuops_npu_pcie_errors', 'A PCIe error counter of the NPU since its last reset (label counter; npu-smi info -t '
                               'pcie-err, stage 0).'),
    ('npuops_intra_node_busbw_gb_per_second', 'Peak intra-node AllReduce bus bandwidth of the node, GB/s (stage 3, '
                                              'hccl_test).'),
    ('npuops_intra_node_busbw_gate_gb_per_second', 'The lower end of the band the intra-node busbw is judged against, '
                                                   'GB/s (stage 3).'),
    ('npuops_intra_node_busbw_theory_gb_per_second', 'The theoretical intra-node (HCCS) busbw of the node, GB/s '
                                                     '(stage 3).'),
    ('npuops_intra_node_below_band', '1 when the intra-node busbw of the node is below its band, else 0 (stage 3).'),
    ('npuops_crossnode_busbw_gb_per_second', 'Cross-node AllReduce bus bandwidth of the PoD before and after the '
                                             'lossless RoCE change (label phase), GB/s (stage 4).'),
    ('npuops_crossnode_busbw_gate_gb_per_second', 'The cross-node busbw the stage 4 gate asks for, GB/s.'),
    ('npuops_scaling_busbw_gb_per_second', 'AllReduce bus bandwidth of a rung of the scaling ladder (label nodes), '
                                           'GB/s (stage 4).'),
    ('npuops_scaling_efficiency_percent', 'Busbw of a rung of the scaling ladder against the one-node rung, percent '
                                          '(stage 4).'),
    ('npuops_scaling_intra_share_percent', 'Busbw of a cross-node rung against the intra-node figure, percent '
                                           '(stage 4).'),
    ('npuops_scaling_min_efficiency_percent', 'The efficiency a cross-node rung must reach, percent '
                                              '(roce_lossless_scaling_min_pct).'),
    ('npuops_scaling_min_intra_share_percent', 'The share of the intra-node figure a cross-node rung must reach, '
                                               'percent (roce_lossless_crossnode_min_pct_of_intra).'),
    ('npuops_rail_busbw_gb_per_second', 'Bus bandwidth of rail npu (NPU npu of every node over its own port), GB/s '
                                        '(stage 4).'),
    ('npuops_rail_expected_share_percent', 'Busbw of the rail against the expected figure of one port, percent '
                                           '(stage 4).'),
    ('npuops_rail_median_share_percent', 'Busbw of the rail against the median rail, percent (stage 4).'),
    ('npuops_rail_expected_gb_per_second', 'The busbw one rail is expected to reach, GB/s (stage 4).'),
    ('npuops_rail_min_percent', 'The share of the expected figure and of the median rail a rail must reach, percent '
                                '(roce_lossless_rail_min_pct).'),
    ('npuops_regression_compared', '1 when stage 9 compared its measurement with the stage 1 baseline, else 0.'),
    ('npuops_regression_step_time_seconds', 'Mean step time of the benchmark, seconds: phase before (stage 1) and '
                                            'after (stage 9).'),
    ('npuops_regression_tokens_per_second', 'Tokens per second of the benchmark: phase before (stage 1) and after '
                                            '(stage 9).'),
    ('npuops_regression_mfu_percent', 'Model FLOPs utilisation of the benchmark, percent: phase before (stage 1) and '
                                      'after (stage 9).'),
    ('npuops_regression_change_percent', 'Change of a metric of the benchmark from stage 1 to stage 9, percent '
                                         '(label metric).'),
    ('npuops_regression_verdict', 'The verdict of stage 9: -1 regressed, 0 unchanged, 1 improved (the label verdict '
                                  'says the same in words); no sample when it did not compare.'),
    ('npuops_audit_timestamp_seconds', 'When the drift audit (playbooks/audit.yml) wrote these metrics, Unix time.'),
    ('npuops_audit_drift_findings', 'Managed settings of the node that the drift audit found differing from the intent '
                                    'or from the last applied run; 0 when none.'),
    ('npuops_audit_node_lost', '1 when the drift audit could not read the node (no audit record), else 0.'),
)
FAMILY_NAMES = tuple(name for name, _help in FAMILIES)

_LABEL = re.compile(r'[a-zA-Z_][a-zA-Z0-9_]*\Z')


def _mapping(value):
    return value if isinstance(value, Mapping) else {}


def escape_label(value):
    """A label value of the text format: backslash, double quote and line feed escaped."""
    return str(value).replace('\\', '\\\\').replace('"', '\\"').replace('\n', '\\n')


def escape_help(text):
    """A HELP text of the text format: backslash and line feed escaped."""
    return str(text).replace('\\', '\\\\').replace('\n', '\\n')


def number_text(value):
    """A sample value: an integral number without a decimal point, else Python's shortest repr of the float."""
    if isinstance(value, int) or (isinstance(value, float) and value.is_integer() and abs(value) < 2 ** 53):
        return str(int(value))
    return repr(float(value))


class Exposition:
    """The samples of the families in FAMILIES; a series given twice keeps its first value."""

    def __init__(self):
        self._samples = dict((name, {}) for name in FAMILY_NAMES)

    def add(self, name, labels, value):
        """Add one sample; a value that is not a finite number is left out (never written as 0)."""
        if name not in self._samples:
            raise ValueError('unknown metric family %s' % name)
        if not is_number(value):
            return
        labels = tuple((str(k), str(v)) for k, v in labels)
        for key, _value in labels:
            if not _LABEL.match(key) or key.startswith('__'):
                raise ValueError('bad label name %r of %s' % (key, name))
        self._samples[name].setdefault(labels, value)

    def text(self):
        out = []
        for name, text in FAMILIES:
            samples = self._samples[name]
            if not samples:
                continue
            out.append('# HELP %s %s' % (name, escape_help(text)))
            out.append('# TYPE %s gauge' % name)
            for labels, value in samples.items():
                shown = '{%s}' % ','.join('%s="%s"' % (k, escape_label(v)) for k, v in labels) if labels else ''
                out.append('%s%s %s' % (name, shown, number_text(value)))
        return '\n'.join(out) + '\n'


def _node_files(sources, folder):
    """{node: content} of <folder>/<node>.json (the PoD-wide files and the stage 1 snapshots left out)."""
    out = {}
    prefix = folder + '/'
    for path, content in sources.items():
        rest = path[len(prefix):] if path.startswith(prefix) else ''
        if rest.endswith('.json') and '/' not in rest:
            node = rest[:-len('.json')]
            if node and node not in ('pod', 'versions', 'baseline', 'regression') and not node.endswith('.snapshot'):
                out[node] = _mapping(content)
    return dict(sorted(out.items()))


def _stage_number(key, result):
    if is_number(result.get('stage')) and int(result['stage']) == result['stage']:
        return int(result['stage'])
    match = re.match(r'stage(\d+)\Z', str(key))
    return int(match.group(1)) if match else None


def _run_start(run_id):
    """The Unix time of a run id in the default format (the UTC start, 20261205T101500Z); None for another id."""
    try:
        moment = datetime.datetime.strptime(str(run_id), '%Y%m%dT%H%M%SZ')
    except ValueError:
        return None
    return (moment - datetime.datetime(1970, 1, 1)).total_seconds()


def _summary(out, summary):
    """Per node: lost, the count of stages per status, and per stage its status and its findings per severity."""
    nodes = _mapping(summary.get('nodes'))
    lost = _mapping(summary.get('lost'))
    if not nodes and not lost:
        return
    if isinstance(summary.get('check_mode'), bool):
        out.add('npuops_run_check_mode', (), int(summary['check_mode']))
    codes = dict(STATUS_CODES)
    for node in sorted(set(str(n) for n in nodes) | set(str(n) for n in lost)):
        out.add('npuops_node_lost', [('node', node)], 1 if node in lost else 0)
        counts = dict((status, 0) for status, _code in STATUS_CODES)
        rows = []
        for key, result in sorted(_mapping(nodes.get(node)).items()):
            result = _mapping(result)
            stage, status = _stage_number(key, result), result.get('status')
            if stage is None or status not in codes:
                continue
            counts[status] += 1
            rows.append((stage, str(result.get('role') or ''), status, result))
        for status, _code in STATUS_CODES:
            out.add('npuops_node_stages', [('node', node), ('status', status)], counts[status])
        for stage, role, status, result in sorted(rows, key=lambda row: row[0]):
            out.add('npuops_stage_status', [('node', node), ('stage', stage), ('role', role), ('status', status)], codes[status])
            for severity, key in (('fail', 'failures'), ('warn', 'warnings')):
                found = result.get(key)
                out.add('npuops_findings', [('node', node), ('stage', stage), ('severity', severity)],
                        len(found) if isinstance(found, list) else None)


def _npu_healthy(entry):
    """1 when every health word of the NPU (its rows of npu-smi info and the health view) is OK, 0 when one is not,
    None when the NPU shows none."""
    words = [row.get('health') for row in _rows(entry) if row.get('health') is not None]
    detail = _mapping(entry.get('health')).get('health')
    if detail is not None:
        words.append(detail)
    if not words:
        return None
    return 1 if all(word == 'OK' for word in words) else 0


def _health(out, sources):
    """Stage 0's figures of each NPU, as the health check reads them (plugins/plugin_utils/health.py)."""
    for node, data in _node_files(sources, 'stage0-health_check').items():
        npu = _mapping(data.get('npu'))
        try:
            devices = by_device(npu)
        except (AttributeError, TypeError, ValueError):
            continue
        for dev, entry in sorted(devices.items()):
            if not isinstance(entry, Mapping):
                continue
            labels = [('node', node), ('npu', dev)]
            out.add('npuops_npu_healthy', labels, _npu_healthy(entry))
            out.add('npuops_npu_temperature_celsius', labels, _temperature(entry))
            out.add('npuops_npu_power_watts', labels, npu_power(entry))
            frequency = _frequency(entry)
            if frequency:
                out.add('npuops_npu_aicore_frequency_hertz', labels, frequency[1] * 1e6)
                out.add('npuops_npu_aicore_rated_frequency_hertz', labels, frequency[0] * 1e6)
            if _mapping(entry.get('ecc')).get('chips'):
                multi, single = _ecc_counts(entry.get('ecc'))
                out.add('npuops_npu_ecc_multi_bit_errors', labels, multi)
                out.add('npuops_npu_ecc_single_bit_errors', labels, single)
            for counter, value in sorted(_pcie_counters(entry.get('pcie_err')).items()):
                out.add('npuops_npu_pcie_errors', labels + [('counter', counter)], value)


def _intra(out, sources):
    for node, data in _node_files(sources, 'stage3-hccl_bench').items():
        band = _mapping(data.get('band'))
        out.add('npuops_intra_node_busbw_gb_per_second', [('node', node)], data.get('peak_busbw_gb_s'))
        out.add('npuops_intra_node_busbw_gate_gb_per_second', [('node', node)], band.get('low_gb_s'))
        out.add('npuops_intra_node_busbw_theory_gb_per_second', [('node', node)], band.get('theory_gb_s'))
        below = data.get('below_band')
        if isinstance(below, bool):
            out.add('npuops_intra_node_below_band', [('node', node)], int(below))


def _crossnode(out, sources):
    busbw = _mapping(_mapping(sources.get('stage4-roce_lossless/pod.json')).get('busbw_gb_s'))
    for phase in ('before', 'after'):
        out.add('npuops_crossnode_busbw_gb_per_second', [('phase', phase)], busbw.get(phase))
    out.add('npuops_crossnode_busbw_gate_gb_per_second', (), busbw.get('gate'))
    data = _mapping(_mapping(sources.get('pod/stage4.json')).get('data'))
    scaling = _mapping(data.get('scaling'))
    if scaling and not scaling.get('skipped'):
        for rung in scaling.get('rungs') or []:
            rung = _mapping(rung)
            if not is_number(rung.get('nodes')):
                continue
            labels = [('nodes', int(rung['nodes']))]
            out.add('npuops_scaling_busbw_gb_per_second', labels, rung.get('busbw_gb_s'))
            out.add('npuops_scaling_efficiency_percent', labels, rung.get('efficiency_pct'))
            out.add('npuops_scaling_intra_share_percent', labels, rung.get('pct_of_intra'))
        out.add('npuops_scaling_min_efficiency_percent', (), scaling.get('min_pct'))
        out.add('npuops_scaling_min_intra_share_percent', (), scaling.get('intra_min_pct'))
    rails = _mapping(data.get('rails'))
    if rails and not rails.get('skipped'):
        for rail in rails.get('rails') or []:
            rail = _mapping(rail)
            if not is_number(rail.get('device')):
                continue
            labels = [('npu', int(rail['device']))]
            out.add('npuops_rail_busbw_gb_per_second', labels, rail.get('busbw_gb_s'))
            out.add('npuops_rail_expected_share_percent', labels, rail.get('pct_of_expected'))
            out.add('npuops_rail_median_share_percent', labels, rail.get('pct_of_median'))
        out.add('npuops_rail_expected_gb_per_second', (), rails.get('expected_gb_s'))
        out.add('npuops_rail_min_percent', (), rails.get('min_pct'))


def _regression(out, sources):
    data = _mapping(sources.get('stage9-regression/regression.json'))
    comparison = _mapping(data.get('comparison'))
    node = data.get('host') or comparison.get('host')
    if not data or not node:
        return
    node = str(node)
    compared = comparison.get('compared')
    if isinstance(compared, bool):
        out.add('npuops_regression_compared', [('node', node)], int(compared))
    rows = dict((_mapping(row).get('metric'), _mapping(row)) for row in comparison.get('metrics') or [])
    measured = _mapping(data.get('after'))
    for key, family, divisor in REGRESSION_FIGURES:
        row = rows.get(key, {})
        after = row.get('after')
        if after is None and measured.get('measured'):
            after = measured.get(key)
        for phase, value in (('before', row.get('before')), ('after', after)):
            if is_number(value):
                out.add(family, [('node', node), ('phase', phase)], round(value / divisor, 9))  # 2247.45 ms: 2.24745 s
    if compared:
        for key, row in rows.items():
            if key:
                out.add('npuops_regression_change_percent', [('node', node), ('metric', key)], row.get('change_pct'))
        verdict = comparison.get('verdict')
        codes = dict(VERDICT_CODES)
        if verdict in codes:
            out.add('npuops_regression_verdict', [('node', node), ('verdict', verdict)], codes[verdict])


def run_metrics(sources, run_id=None, now=None):
    """The metrics of a run in the Prometheus text format 0.0.4, from its JSON reports ``{path relative to the run
    directory: content}`` (the sources of report.run_report). ``now``: the Unix time the report was written (this
    moment when not given)."""
    if not isinstance(sources, Mapping):
        raise AnsibleFilterError('run_metrics expects {path relative to the run directory: parsed JSON}, got %s'
                                 % type(sources).__name__)
    if now is not None and not is_number(now):
        raise AnsibleFilterError('run_metrics: now must be a Unix time in seconds, got %r' % (now,))
    sources = dict((str(k).replace('\\', '/').lstrip('./'), v) for k, v in sources.items())
    summary = _mapping(sources.get('summary.json'))
    run = str(run_id or summary.get('run') or '')
    out = Exposition()
    if run:
        out.add('npuops_run_info', [('run', run)], 1)
    out.add('npuops_last_run_timestamp_seconds', (), time.time() if now is None else now)
    out.add('npuops_run_start_timestamp_seconds', (), _run_start(run))
    _summary(out, summary)
    _health(out, sources)
    _intra(out, sources)
    _crossnode(out, sources)
    _regression(out, sources)
    return out.text()


# The JSON reports of a run the metrics are made from (the same as the run's report reads, roles/report/tasks/main.yml)
SOURCE_PATTERNS = ('summary.json', 'stage0-health_check/*.json', 'stage1-baseline/baseline.json',
                   'stage2-version_check/versions.json', 'stage3-hccl_bench/*.json', 'stage4-roce_lossless/*.json',
                   'pod/stage4.json', 'stage9-regression/regression.json')


def read_run_sources(run_dir):
    """The JSON reports of the run directory ``run_dir`` that run_metrics reads: ``{relative path: content}``. Regular
    files only (no link is followed); a file that cannot be read or parsed is left out (its figures get no sample)."""
    import glob  # pylint: disable=import-outside-toplevel
    import json  # pylint: disable=import-outside-toplevel
    import os  # pylint: disable=import-outside-toplevel
    import stat  # pylint: disable=import-outside-toplevel
    out = {}
    for pattern in SOURCE_PATTERNS:
        for path in sorted(glob.glob(os.path.join(glob.escape(run_dir), pattern))):
            try:
                if not stat.S_ISREG(os.lstat(path).st_mode):
                    continue
                fd = os.open(path, os.O_RDONLY | getattr(os, 'O_NOFOLLOW', 0))
                with os.fdopen(fd, encoding='utf-8') as handle:
                    out[os.path.relpath(path, run_dir).replace(os.sep, '/')] = json.load(handle)
            except (OSError, ValueError):
                continue
    return out


def metrics_path(run_dir, metrics_file='', variable='npuops_metrics_file'):
    """Where the metrics of the run go: ``metrics_file`` (npuops_metrics_file) when given, else metrics.prom in the run
    directory. ValueError for a path node_exporter's textfile collector would not read."""
    import os  # pylint: disable=import-outside-toplevel
    path = str(metrics_file or '').strip() or os.path.join(run_dir, 'metrics.prom')
    if not os.path.isabs(path) or not path.endswith('.prom') or not os.path.isdir(os.path.dirname(path)):
        raise ValueError('%s is %r: it must be the absolute path of a file whose name ends in .prom, in a directory that '
                         'exists' % (variable, path))
    return path


def audit_metrics(document, now=None):
    """The drift audit's metrics (the audit.json document of plugins/plugin_utils/audit.py summary): per node the
    number of drifted settings (fail findings) and whether it was read, and the time."""
    import time  # pylint: disable=import-outside-toplevel
    document = _mapping(document)
    out = Exposition()
    out.add('npuops_audit_timestamp_seconds', (), time.time() if now is None else now)
    missing = _mapping(document.get('missing'))
    for node in document.get('nodes') or []:
        lost = node in missing
        out.add('npuops_audit_node_lost', (('node', node),), 1 if lost else 0)
        if not lost:
            drifted = [f for f in document.get('findings') or []
                       if isinstance(f, Mapping) and f.get('host') == node and f.get('severity') == 'fail']
            out.add('npuops_audit_drift_findings', (('node', node),), len(drifted))
    return out.text()


def write_text(path, text):
    """Write ``text`` to ``path`` atomically (a temporary file in the same directory, then rename; mode 0644)."""
    import os  # pylint: disable=import-outside-toplevel
    import tempfile  # pylint: disable=import-outside-toplevel
    handle, tmp = tempfile.mkstemp(prefix='.%s.' % os.path.basename(path), dir=os.path.dirname(path))
    try:
        with os.fdopen(handle, 'w', encoding='utf-8') as out:
            out.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path


def write_run_metrics(run_dir, run_id, metrics_file=''):
    """Write the metrics of the run in ``run_dir`` (read_run_sources, run_metrics) to metrics_path, atomically (a
    temporary file in the same directory, then rename; mode 0644). Returns the path."""
    path = metrics_path(run_dir, metrics_file)
    return write_text(path, run_metrics(read_run_sources(run_dir), run_id))
