"""The run's metrics for node_exporter's textfile collector (plugins/plugin_utils/metrics.py): the text parses with the
official parser of the Prometheus client, every node has a sample, labels are escaped, nothing the run did not measure
becomes a sample, and each family has its HELP and TYPE once. The stage 0 figures come from npu_info run on real
npu-smi samples of the fixture tree; the stage 4 ladder and the stage 9 comparison from the functions that make them."""

from __future__ import annotations

import calendar
import os
import re

import pytest
import yaml
from ansible.errors import AnsibleFilterError
from prometheus_client.parser import text_string_to_metric_families

from ansible_collections.npuops.ascend.plugins.modules import npu_info
from ansible_collections.npuops.ascend.plugins.plugin_utils import metrics
from ansible_collections.npuops.ascend.plugins.plugin_utils.regression import regression_compare
from ansible_collections.npuops.ascend.tests.unit.plugins.modules.conftest import NPU_SMI, sample
from ansible_collections.npuops.ascend.tests.unit.plugins.plugin_utils.test_report import BEFORE, _ladder, after, pod_record

NOW = 1796466900.5

INFO_IDLE = sample('npu_smi/info/vllm198_910b3_23.0.7_idle')        # 8 x 910B3 OK, 54-59 C, 96.5-107.7 W
COMMON_OK = sample('npu_smi/common/gpustack_test')                    # 1000 of 1000 MHz
COMMON_IDLE_LOW = sample('npu_smi/common/drv950_doc_idle_low_freq')   # 100 of 1650 MHz, 298.6 W
PCIE_ZERO = sample('npu_smi/pcie_err/drv_source_tab_zero')            # every counter 0
PCIE_RX_RETRY = sample('npu_smi/pcie_err/drv950_zh_doc')              # RX Error Count 991, Retry Count 415
ECC = sample('npu_smi/ecc/drv950_doc_hbm_only')                      # every counter 0
ECC_3 = ECC.replace('HBM Double Bit Error Count               : 0', 'HBM Double Bit Error Count               : 3')
HEALTH_OK = sample('npu_smi/health/mc_910a_ok')
HEALTH_ALARM = sample('npu_smi/health/mc_910a_alarm_three_codes')


def npu_read(run_module):
    """npu_info with the views of stage 0 on the samples: NPU 2 in alarm, NPU 3 at 100 of 1650 MHz, NPU 4 with 3
    multi-bit ECC errors, NPU 5 with PCIe RX errors."""
    changed = {('health', 2): HEALTH_ALARM, ('common', 3): COMMON_IDLE_LOW, ('ecc', 4): ECC_3, ('pcie_err', 5): PCIE_RX_RETRY}
    views = {'health': HEALTH_OK, 'ecc': ECC, 'common': COMMON_OK, 'pcie_err': PCIE_ZERO}
    cmds = {(NPU_SMI, 'info'): (0, INFO_IDLE, '')}
    for dev in range(8):
        for view, text in views.items():
            name = 'pcie-err' if view == 'pcie_err' else view
            cmds[(NPU_SMI, 'info', '-t', name, '-i', str(dev))] = (0, changed.get((view, dev), text), '')
    res = run_module(npu_info, {'gather_subset': list(views)}, cmds)
    assert not res.failed, res
    return res.result


def _stage(number, role, status, failures=(), warnings=()):
    return {'stage': number, 'role': role, 'status': status, 'failures': list(failures), 'warnings': list(warnings)}


def sources(npu=None):
    """A run of two nodes: node01 ran stages 0, 3, 4 and 9 (9 failed), node02 only stage 0 and 3."""
    comparison = regression_compare(after(), BEFORE, host='node01', baseline_run='R1')
    record = pod_record(_ladder())
    record['data']['rails'] = {
        'mode': 'auto', 'min_pct': 85.0, 'expected_gb_s': 25.0, 'median_gb_s': 22.5, 'findings': [],
        'rails': [{'device': 0, 'busbw_gb_s': 22.5, 'pct_of_expected': 90.0, 'pct_of_median': 100.0},
                  {'device': 2, 'busbw_gb_s': None, 'pct_of_expected': None, 'pct_of_median': None},
                  {'device': 3, 'busbw_gb_s': 2.25, 'pct_of_expected': 9.0, 'pct_of_median': 10.0}]}
    return {
        'summary.json': {'run': '20261205T101500Z', 'check_mode': False, 'nodes': {
            'node01': {'stage0': _stage(0, 'health_check', 'passed', warnings=['node01: open-file limit is 20000']),
                       'stage3': _stage(3, 'hccl_bench', 'passed'),
                       'stage4': _stage(4, 'roce_lossless', 'passed'),
                       'stage9': _stage(9, 'regression', 'failed', failures=['node01: step time worse', 'node01: spread'])},
            'node02': {'stage0': _stage(0, 'health_check', 'passed'), 'stage3': _stage(3, 'hccl_bench', 'skipped')}}},
        'stage0-health_check/node01.json': {'host': 'node01', 'npu': npu or {}, 'findings': []},
        'stage3-hccl_bench/node01.json': {'peak_busbw_gb_s': 137.0, 'below_band': False,
                                          'band': {'low_gb_s': 117.6, 'theory_gb_s': 196.0}},
        # node02's stage 3 in check mode: nothing measured
        'stage3-hccl_bench/node02.json': {'skipped': True, 'msg': 'check mode'},
        'stage4-roce_lossless/pod.json': {'busbw_gb_s': {'before': 3.0, 'after': 136.48, 'gate': 109.6}},
        'pod/stage4.json': record,
        'stage9-regression/regression.json': {'host': 'node01', 'comparison': comparison, 'improvement_pct': 5,
                                              'tolerance_pct': 2, 'baseline': {'run': 'R1'}, 'after': after()},
    }


def parse(text):
    """{(name, ((label, value), ...)): value} of every sample; fails on a series given twice."""
    out = {}
    for family in text_string_to_metric_families(text):
        assert family.type == 'gauge', family
        for item in family.samples:
            key = (item.name, tuple(sorted(item.labels.items())))
            assert key not in out, 'series given twice: %s' % (key,)
            out[key] = item.value
    return out


def values(samples, name, **labels):
    """{labels other than those given: value} of the samples of one family that carry ``labels``."""
    want = set((k, str(v)) for k, v in labels.items())
    return dict((tuple(kv for kv in key if kv not in want), value) for (family, key), value in samples.items()
                if family == name and want <= set(key))


def test_bad_input():
    with pytest.raises(AnsibleFilterError, match='run_metrics expects'):
        metrics.run_metrics([])
    with pytest.raises(AnsibleFilterError, match='now must be a Unix time'):
        metrics.run_metrics({}, 'R', now='yesterday')


def test_the_families_are_named_by_the_conventions():
    names = [name for name, _help in metrics.FAMILIES]
    assert len(set(names)) == len(names)
    for name, text in metrics.FAMILIES:
        assert re.match(r'npuops_[a-z0-9_]+\Z', name), name
        assert text and '\n' not in text
    units = ('_seconds', '_celsius', '_watts', '_hertz', '_gb_per_second', '_percent', '_errors', '_info', '_status',
             '_findings', '_stages', '_lost', '_mode', '_healthy', '_band', '_compared', '_verdict', '_second')
    assert [name for name in names if not name.endswith(units) and name != 'npuops_findings'] == []


def test_a_whole_run_parses_and_holds_its_figures(run_module):
    text = metrics.run_metrics(sources(npu_read(run_module)), '20261205T101500Z', now=NOW)
    assert text.endswith('\n') and not text.endswith('\n\n')
    samples = parse(text)
    assert values(samples, 'npuops_run_info') == {(('run', '20261205T101500Z'),): 1}
    assert values(samples, 'npuops_last_run_timestamp_seconds') == {(): NOW}
    assert values(samples, 'npuops_run_start_timestamp_seconds') == {(): calendar.timegm((2026, 12, 5, 10, 15, 0))}
    assert values(samples, 'npuops_run_check_mode') == {(): 0}
    # the stages of each node, as codes and as words
    status = values(samples, 'npuops_stage_status')
    assert status == {(('node', 'node01'), ('role', 'health_check'), ('stage', '0'), ('status', 'passed')): 0,
                      (('node', 'node01'), ('role', 'hccl_bench'), ('stage', '3'), ('status', 'passed')): 0,
                      (('node', 'node01'), ('role', 'roce_lossless'), ('stage', '4'), ('status', 'passed')): 0,
                      (('node', 'node01'), ('role', 'regression'), ('stage', '9'), ('status', 'failed')): 3,
                      (('node', 'node02'), ('role', 'health_check'), ('stage', '0'), ('status', 'passed')): 0,
                      (('node', 'node02'), ('role', 'hccl_bench'), ('stage', '3'), ('status', 'skipped')): 1}
    assert values(samples, 'npuops_findings', node='node01', stage=9) == {(('severity', 'fail'),): 2, (('severity', 'warn'),): 0}
    assert values(samples, 'npuops_findings', node='node01', stage=0) == {(('severity', 'fail'),): 0, (('severity', 'warn'),): 1}
    assert values(samples, 'npuops_node_stages', node='node01') == {
        (('status', 'passed'),): 3, (('status', 'failed'),): 1, (('status', 'skipped'),): 0, (('status', 'stopped'),): 0}
    assert values(samples, 'npuops_node_lost') == {(('node', 'node01'),): 0, (('node', 'node02'),): 0}
    # stage 0, per NPU, from the samples: the table's temperature and power, the common view's frequency
    assert values(samples, 'npuops_npu_temperature_celsius', node='node01', npu=7) == {(): 59}
    assert values(samples, 'npuops_npu_power_watts', node='node01', npu=0) == {(): 102.8}
    assert values(samples, 'npuops_npu_power_watts', node='node01', npu=3) == {(): 298.6}
    assert values(samples, 'npuops_npu_aicore_frequency_hertz', node='node01', npu=3) == {(): 100e6}
    assert values(samples, 'npuops_npu_aicore_rated_frequency_hertz', node='node01', npu=3) == {(): 1650e6}
    assert values(samples, 'npuops_npu_aicore_frequency_hertz', node='node01', npu=0) == {(): 1000e6}
    healthy = values(samples, 'npuops_npu_healthy', node='node01')
    assert len(healthy) == 8 and [k for k, v in healthy.items() if v == 0] == [(('npu', '2'),)]
    assert values(samples, 'npuops_npu_ecc_multi_bit_errors', node='node01', npu=4) == {(): 3}
    assert sum(values(samples, 'npuops_npu_ecc_multi_bit_errors').values()) == 3
    assert values(samples, 'npuops_npu_pcie_errors', node='node01', npu=5) == {
        (('counter', 'ecrc_error_count'),): 0, (('counter', 'lcrc_error_count'),): 0, (('counter', 'retry_count'),): 415,
        (('counter', 'rx_error_count'),): 991, (('counter', 'tx_error_count'),): 0}
    # stage 3 and 4
    assert values(samples, 'npuops_intra_node_busbw_gb_per_second') == {(('node', 'node01'),): 137.0}
    assert values(samples, 'npuops_intra_node_busbw_gate_gb_per_second') == {(('node', 'node01'),): 117.6}
    assert values(samples, 'npuops_intra_node_below_band') == {(('node', 'node01'),): 0}
    assert values(samples, 'npuops_crossnode_busbw_gb_per_second') == {(('phase', 'before'),): 3.0, (('phase', 'after'),): 136.48}
    assert values(samples, 'npuops_crossnode_busbw_gate_gb_per_second') == {(): 109.6}
    assert values(samples, 'npuops_scaling_efficiency_percent') == {
        (('nodes', '1'),): 100.0, (('nodes', '2'),): 60.0, (('nodes', '8'),): 92.9}
    assert values(samples, 'npuops_scaling_busbw_gb_per_second') == {
        (('nodes', '1'),): 140.0, (('nodes', '2'),): 84.0, (('nodes', '8'),): 130.0}
    assert values(samples, 'npuops_scaling_intra_share_percent') == {(('nodes', '2'),): 56.0, (('nodes', '8'),): 86.7}
    assert values(samples, 'npuops_scaling_min_efficiency_percent') == {(): 70.0}
    assert values(samples, 'npuops_rail_busbw_gb_per_second') == {(('npu', '0'),): 22.5, (('npu', '3'),): 2.25}
    assert values(samples, 'npuops_rail_expected_share_percent') == {(('npu', '0'),): 90.0, (('npu', '3'),): 9.0}
    assert values(samples, 'npuops_rail_min_percent') == {(): 85.0}
    # stage 9
    assert values(samples, 'npuops_regression_step_time_seconds') == {
        (('node', 'node01'), ('phase', 'before')): 2.0, (('node', 'node01'), ('phase', 'after')): 1.5}
    assert values(samples, 'npuops_regression_tokens_per_second', phase='after') == {(('node', 'node01'),): 133333.0}
    assert values(samples, 'npuops_regression_mfu_percent', phase='before') == {(('node', 'node01'),): 16.0}
    assert values(samples, 'npuops_regression_change_percent', metric='mean_ms') == {(('node', 'node01'),): -25.0}
    assert values(samples, 'npuops_regression_verdict') == {(('node', 'node01'), ('verdict', 'improved')): 1}
    assert values(samples, 'npuops_regression_compared') == {(('node', 'node01'),): 1}


def test_help_and_type_once_per_family_before_its_samples(run_module):
    text = metrics.run_metrics(sources(npu_read(run_module)), 'R', now=NOW)
    lines = text.splitlines()
    helps = [line.split()[2] for line in lines if line.startswith('# HELP ')]
    types = [line.split()[2] for line in lines if line.startswith('# TYPE ')]
    assert helps == types and len(set(helps)) == len(helps) and len(helps) >= 30
    seen = set()
    for number, line in enumerate(lines):
        if line.startswith('# HELP '):
            name = line.split()[2]
            assert lines[number + 1] == '# TYPE %s gauge' % name
            seen.add(name)
        elif not line.startswith('#'):
            name = re.match(r'[a-z_0-9]+', line).group(0)
            assert name in seen and name == sorted(seen, key=helps.index)[-1], line
            assert re.match(r'[a-z_0-9]+(\{[^\n]*\})? -?[0-9.e+]+\Z', line), line


def test_every_node_has_a_sample_even_with_nothing_else():
    summary = {'run': 'R', 'check_mode': True, 'nodes': {'node01': {}, 'node02': {}},
               'lost': {'node03': {'stage': 0, 'role': 'health_check'}}}
    samples = parse(metrics.run_metrics({'summary.json': summary}, now=NOW))
    assert values(samples, 'npuops_node_lost') == {(('node', 'node01'),): 0, (('node', 'node02'),): 0, (('node', 'node03'),): 1}
    assert sorted(set(dict(k)['node'] for k in values(samples, 'npuops_node_stages'))) == ['node01', 'node02', 'node03']
    assert values(samples, 'npuops_node_stages', node='node03', status='passed') == {(): 0}
    assert values(samples, 'npuops_run_check_mode') == {(): 1}
    assert values(samples, 'npuops_stage_status') == {} and values(samples, 'npuops_findings') == {}
    assert values(samples, 'npuops_run_info') == {(('run', 'R'),): 1}


def test_what_did_not_run_or_measure_gives_no_sample():
    data = sources()
    samples = parse(metrics.run_metrics(data, 'R', now=NOW))
    names = set(name for name, _labels in samples)
    # node02 ran stages 0 and 3 only; its stage 3 measured nothing; stage 0 read no NPU
    assert not values(samples, 'npuops_stage_status', node='node02', stage=9)
    assert not values(samples, 'npuops_findings', node='node02', stage=4)
    assert not values(samples, 'npuops_intra_node_busbw_gb_per_second', node='node02')
    assert not any(name.startswith('npuops_npu_') for name in names)
    # rail 2 and the 4-node rung did not measure: no sample, never a 0
    assert not values(samples, 'npuops_rail_busbw_gb_per_second', npu=2)
    assert not values(samples, 'npuops_scaling_busbw_gb_per_second', nodes=4)
    assert not values(samples, 'npuops_run_start_timestamp_seconds')  # 'R' is not a start time
    # stage 4 in check mode: the ladder and the rails skipped, no busbw
    data['pod/stage4.json']['data'] = {'scaling': {'skipped': True, 'msg': 'check mode'},
                                       'rails': {'skipped': True, 'rails': [], 'msg': 'check mode'}}
    data['stage4-roce_lossless/pod.json'] = {'check_mode': True, 'busbw_gb_s': {'before': None, 'after': None, 'gate': None}}
    # stage 9 that did not compare (no baseline) and measured nothing
    data['stage9-regression/regression.json'] = {
        'host': 'node01', 'after': {'measured': False, 'reason': 'check mode'},
        'comparison': regression_compare({'measured': False, 'reason': 'check mode'}, BEFORE, host='node01')}
    names = set(name for name, _labels in parse(metrics.run_metrics(data, 'R', now=NOW)))
    assert not any(name.startswith(('npuops_scaling_', 'npuops_rail_', 'npuops_crossnode_')) for name in names)
    assert [name for name in names if name.startswith('npuops_regression_')] == ['npuops_regression_compared']
    # nothing at all: the run and the time only
    assert parse(metrics.run_metrics({}, 'R', now=NOW)) == {
        ('npuops_run_info', (('run', 'R'),)): 1, ('npuops_last_run_timestamp_seconds', ()): NOW}


def test_stage_9_measured_but_not_compared_keeps_its_measurement():
    data = sources()
    data['stage9-regression/regression.json']['comparison'] = regression_compare(after(), {}, host='node01')
    samples = parse(metrics.run_metrics(data, 'R', now=NOW))
    assert values(samples, 'npuops_regression_step_time_seconds') == {(('node', 'node01'), ('phase', 'after')): 1.5}
    assert values(samples, 'npuops_regression_compared') == {(('node', 'node01'),): 0}
    assert not values(samples, 'npuops_regression_verdict') and not values(samples, 'npuops_regression_change_percent')


def test_hostile_labels_are_escaped_and_messages_stay_out():
    evil = 'node"01\\x\nnext{a="b"} 1'
    data = sources()
    data['summary.json']['nodes'][evil] = {'stage0': _stage(0, 'health_check\n"x"', 'failed',
                                                            failures=['%s: token=s3cr3t "bad" \\ line\n' % evil])}
    # a file name of the run directory has no backslash (a path separator in the sources' keys)
    data['stage3-hccl_bench/%s.json' % evil.replace('\\', '')] = {'peak_busbw_gb_s': 12.5,
                                                                  'cmd': 'HCCL_TOKEN=s3cr3t all_reduce_test'}
    data['stage9-regression/regression.json']['command'] = 'API_KEY=s3cr3t train'
    data['stage7-mindie_config/node01.json'] = {'env': [['VLLM_API_KEY', 's3cr3t']]}
    text = metrics.run_metrics(data, 'run"1\\', now=NOW)
    assert 's3cr3t' not in text and 'bad' not in text
    assert 'node="node\\"01\\\\x\\nnext{a=\\"b\\"} 1"' in text
    assert 'npuops_run_info{run="run\\"1\\\\"} 1' in text
    samples = parse(text)
    assert values(samples, 'npuops_intra_node_busbw_gb_per_second', node=evil.replace('\\', '')) == {(): 12.5}
    assert values(samples, 'npuops_stage_status', node=evil) == {(('role', 'health_check\n"x"'), ('stage', '0'),
                                                                  ('status', 'failed')): 3}
    assert values(samples, 'npuops_run_info') == {(('run', 'run"1\\'),): 1}
    # no line of the text starts anywhere but at a sample or a comment
    assert all(re.match(r'(# (HELP|TYPE) )?npuops_[a-z0-9_]+[ {]', line) for line in text.splitlines())


def test_escaping_and_numbers():
    assert metrics.escape_label('a\\b"c\nd') == 'a\\\\b\\"c\\nd'
    assert metrics.escape_help('a\\b\nc"') == 'a\\\\b\\nc"'
    assert [metrics.number_text(v) for v in (0, 3, 2.0, 0.1, 1.65e9, -25.0, 1796466900.5)] == [
        '0', '3', '2', '0.1', '1650000000', '-25', '1796466900.5']
    out = metrics.Exposition()
    for value in (None, float('nan'), float('inf'), True, '3'):
        out.add('npuops_run_check_mode', (), value)
    assert out.text() == '\n'
    with pytest.raises(ValueError, match='unknown metric family'):
        out.add('npuops_nothing', (), 1)


def test_docs_name_every_family_and_the_alert_rules_use_only_them():
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', '..')
    with open(os.path.join(root, 'docs', 'metrics.md'), encoding='utf-8') as handle:
        page = handle.read()
    names = [name for name, _help in metrics.FAMILIES]
    assert [name for name in names if '| `%s` |' % name not in page] == []
    rules = yaml.safe_load('groups:' + page.split('```yaml\ngroups:', 1)[1].split('```', 1)[0])['groups'][0]['rules']
    assert len(rules) >= 5
    used = set()
    for rule in rules:
        assert rule['alert'] and rule['expr'] and rule['annotations']['summary']
        used.update(re.findall(r'\bnpuops_[a-z0-9_]+', rule['expr']))
    assert used and used <= set(names), used - set(names)
