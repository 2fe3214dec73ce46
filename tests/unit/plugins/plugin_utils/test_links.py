"""Stage 0's link quality over time (plugins/plugin_utils/links.py): what one read keeps of every port and NPU, the Rx
power against the module's own thresholds, and the comparison with the node's last run - on the real captures of
hccn_tool -optical/-stat/-link_stat -g and npu-smi info -t ecc (tests/unit/fixtures/parsers, each with its source)."""

from __future__ import annotations

import json
import os

import pytest

from ansible_collections.npuops.ascend.plugins.module_utils._parsers import hccn_tool as parsers
from ansible_collections.npuops.ascend.plugins.module_utils._parsers import npu_smi
from ansible_collections.npuops.ascend.plugins.plugin_utils import links, store
from ansible_collections.npuops.ascend.tests.unit.plugins.modules.conftest import sample

OPTICAL = parsers.parse_optical_get(sample('hccn_tool/optical/mc_910a_qsfp_dev0'))   # 'not present', 4 lanes
# the same real output with the module reported present (the current driver prints the power only then)
PRESENT = parsers.parse_optical_get(sample('hccn_tool/optical/mc_910a_qsfp_dev0').replace(': not present', ': present'))
STAT_TRIMMED = parsers.parse_stat_get(sample('hccn_tool/stat/mc_910a_trimmed'))       # roce_rx/tx_err_pkt_num 0
STAT_DOC = parsers.parse_stat_get(sample('hccn_tool/stat/mc_doc_elided'))             # roce_qp_status_err_num 0, elided
HISTORY = parsers.parse_link_stat_get(sample('hccn_tool/link_stat/mc_worker0_dev0'))  # up count 2, 2 DOWN records
DOWN_COUNT = parsers.parse_link_stat_get(sample('hccn_tool/link_stat/hccl_doc_link_down_count'))  # link down count 1
ECC = npu_smi.parse_ecc(sample('npu_smi/ecc/drv950_doc_hbm_only'))                   # every counter 0
WHEN = '2026-03-01T10:00:00Z'


def read(**ports):
    """A node's ports part: {NPU id: port entry}."""
    return {'devices': dict((str(dev), entry) for dev, entry in ports.items())}


def test_what_one_read_keeps_of_a_port_from_the_real_outputs():
    data = links.node_links(read(**{'0': {'optical': OPTICAL, 'stat': STAT_TRIMMED, 'link_stat': HISTORY}}),
                            {'devices': {'0': {'ecc': ECC}}}, WHEN)
    entry = data['devices']['0']
    assert data['time'] == WHEN
    assert entry['counters'] == {'roce_rx_err_pkt_num': 0, 'roce_tx_err_pkt_num': 0, 'link_up_count': 2,
                                 'link_down_records': 2, 'ecc_multi_bit': 0, 'ecc_single_bit': 0}
    # what this build's -stat -g did not print (the FCS counter only with the extended counters) is said
    assert entry['not_printed'] == ['mac_rx_fcs_err_pkt_num', 'mac_rx_bad_pkt_num', 'roce_qp_status_err_num',
                                    'roce_new_pkt_rty_num']
    assert entry['port_time'] == 'Wed Aug  2 03:36:43 2022'
    assert entry['link_down_times'] == ['Tue Aug  1 14:44:40 2022', 'Tue Aug  1 14:43:40 2022']
    optical = entry['optical']
    assert optical['present'] == 'not present' and len(optical['lanes']) == 4
    assert optical['lanes'][1] == {'lane': 1, 'tx_mw': 1.3968, 'rx_mw': 0.0054}
    assert (optical['rx_low_mw'], optical['rx_high_mw'], optical['tx_low_mw'], optical['tx_high_mw']) == (
        0.1445, 3.5481, 0.2818, 3.5481)
    json.dumps(data)   # it goes into the record as it is


def test_the_documented_stat_output_and_a_newer_link_history():
    entry = links.node_links(read(**{'3': {'stat': STAT_DOC, 'link_stat': DOWN_COUNT}}), None, WHEN)['devices']['3']
    assert entry['counters'] == {'roce_qp_status_err_num': 0, 'link_up_count': 2, 'link_down_count': 1,
                                 'link_down_records': 1}
    assert 'mac_rx_fcs_err_pkt_num' in entry['not_printed'] and 'optical' not in entry


def test_nothing_read_is_no_link_data():
    assert links.node_links(None, None, WHEN) is None
    assert links.node_links({'failed': True, 'msg': 'x'}, {'msg': 'y'}, WHEN) is None
    # the NPUs only (no RoCE port read): the ECC counts are still kept
    only = links.node_links(None, {'devices': {'2': {'ecc': ECC}}}, WHEN)
    assert only['devices']['2'] == {'counters': {'ecc_multi_bit': 0, 'ecc_single_bit': 0}}


def test_an_rx_lane_below_the_modules_low_threshold_fails():
    found = links.optical_findings('node01', links.node_links(read(**{'0': {'optical': PRESENT}}), None, WHEN))
    assert [(f['device'], f['check'], f['value'], f['severity']) for f in found] == [(0, 'optical_rx_power', 0.0054, 'fail')]
    assert found[0]['msg'].startswith("node01 NPU 0: Rx power below the module's RxPower Low Thres 0.1445 mW (-8.4 dBm): "
                                      'lane 1 0.0054 mW (-22.7 dBm) (hccn_tool -i 0 -optical -g)')


def test_a_module_that_is_not_present_is_not_judged():
    # the real 910A output prints a power with 'not present'; the current driver prints none then (tool.c)
    assert links.optical_findings('node01', links.node_links(read(**{'0': {'optical': OPTICAL}}), None, WHEN)) == []


def lanes(*powers, low=0.1445):
    optical = dict(PRESENT)
    for lane, power in enumerate(powers):
        optical['rx_power%d_mw' % lane] = power
    optical['rx_power_low_thres_mw'] = low
    return links.node_links(read(**{'5': {'optical': optical}}), None, WHEN)


def test_an_rx_lane_within_the_margin_is_a_warning():
    # 1 dB above 0.1445 mW is 0.1819 mW
    found = links.optical_findings('node01', lanes(1.0, 0.18, 0.95, 1.02))
    assert [(f['device'], f['check'], f['severity'], f['value']) for f in found] == [(5, 'optical_rx_power_low', 'warn', 0.18)]
    assert 'within 1.0 dB of' in found[0]['msg'] and 'lane 1 0.1800 mW' in found[0]['msg']
    assert links.optical_findings('node01', lanes(1.0, 0.19, 0.95, 1.02)) == []
    # a wider margin catches it sooner, none switches the warning off
    assert len(links.optical_findings('node01', lanes(1.0, 0.19, 0.95, 1.02), 3.0)) == 1
    assert links.optical_findings('node01', lanes(1.0, 0.15, 0.95, 1.02), 0) == []
    # a module that prints no low threshold (0) is not judged
    assert links.optical_findings('node01', lanes(0.0, 0.0, 0.0, 0.0, low=0.0)) == []


def test_lanes_printed_as_na_are_left_out():
    # a DR4 module prints 'Tx Power2 : NA' (tool.c tool_show_power_info)
    text = sample('hccn_tool/optical/mc_910a_qsfp_dev0').replace(': not present', ': present')
    text = text.replace('Rx Power2            : 0.9907 mW', 'Rx Power2            : NA')
    data = links.node_links(read(**{'0': {'optical': parsers.parse_optical_get(text)}}), None, WHEN)
    assert data['devices']['0']['optical']['lanes'][2] == {'lane': 2, 'tx_mw': 1.414, 'rx_mw': None}
    assert [f['value'] for f in links.optical_findings('node01', data)] == [0.0054]


# ---- the comparison with the last run -------------------------------------------------------------------------------

def port(fcs=None, bad=0, rx_err=0, retries=0, up=2, history=None, single=0):
    history = HISTORY if history is None else history
    stat = {'mac_rx_bad_pkt_num': bad, 'roce_rx_err_pkt_num': rx_err, 'roce_tx_err_pkt_num': 0,
            'roce_qp_status_err_num': 0, 'roce_new_pkt_rty_num': retries, 'unparsed': []}
    if fcs is not None:
        stat['mac_rx_fcs_err_pkt_num'] = fcs
    entry = {'stat': stat, 'link_stat': dict(history, link_up_count=up)}
    ecc = dict(ECC, chips=[dict(ECC['chips'][0], hbm_single_bit_error_count=single)])
    return entry, ecc


def node_read(time, **ports):
    entries = dict((dev, port(**values)) for dev, values in ports.items())
    return links.node_links(read(**dict((dev, entry) for dev, (entry, _ecc) in entries.items())),
                            {'devices': dict((dev, {'ecc': ecc}) for dev, (_entry, ecc) in entries.items())}, time)


def previous(data, run='A'):
    return {'run': run, 'time': data['time'], 'data': {'links': data}}


def test_a_crc_counter_that_grows_between_two_runs_is_a_finding():
    before = node_read('2026-03-01T10:00:00Z', **{'1': dict(fcs=0), '2': dict(fcs=5)})
    now = node_read('2026-03-02T10:00:00Z', **{'1': dict(fcs=120, bad=120), '2': dict(fcs=5)})
    found, summary = links.compare('node02', now, previous(before), 'B')
    assert [(f['host'], f['device'], f['check'], f['value'], f['severity']) for f in found] == [
        ('node02', 1, 'fcs_errors_growing', 240, 'warn')]
    assert found[0]['msg'].startswith(
        'node02 NPU 1: frames received with FCS/CRC errors grew between run A (2026-03-01T10:00:00Z) and run B: '
        'mac_rx_fcs_err_pkt_num 0 -> 120, mac_rx_bad_pkt_num 0 -> 120; frames arrive damaged')
    assert found[0]['expected'] == '0 since run A'
    assert summary['grown'] == [{'device': 1, 'counter': 'mac_rx_fcs_err_pkt_num', 'before': 0, 'now': 120},
                                {'device': 1, 'counter': 'mac_rx_bad_pkt_num', 'before': 0, 'now': 120}]
    assert summary['run'] == 'A' and summary['msg'] == 'compared with run A (2026-03-01T10:00:00Z); 2 counter(s) grew on NPU 1'


def test_roce_retransmissions_ecc_and_link_drops_each_make_one_finding_per_npu():
    later = dict(HISTORY, current_time='Wed Aug  3 03:36:43 2022',
                 records=[{'time': 'Tue Aug  2 20:00:00 2022', 'status': 'UP'},
                          {'time': 'Tue Aug  2 19:59:58 2022', 'status': 'DOWN'}] + HISTORY['records'])
    before = node_read('T1', **{'0': dict(), '4': dict()})
    now = node_read('T2', **{'0': dict(retries=900, rx_err=3, single=7), '4': dict(up=3, history=later)})
    found, _summary = links.compare('node01', now, previous(before), 'B', 'fail')
    assert [(f['device'], f['check'], f['severity']) for f in found] == [
        (0, 'roce_errors_growing', 'fail'), (0, 'ecc_growing', 'fail'), (4, 'link_down_growing', 'fail')]
    assert 'roce_rx_err_pkt_num 0 -> 3, roce_new_pkt_rty_num 0 -> 900' in found[0]['msg']
    assert 'single-bit ECC errors 0 -> 7' in found[1]['msg']
    # the history's records newer than the last run's read (the node's own clock), not its count
    assert ('link up count 2 -> 3, 1 LINK DOWN record(s) newer than the read of run A (newest Tue Aug  2 19:59:58 2022)'
            in found[2]['msg'])


def test_a_counter_that_fell_was_reset_and_is_not_a_growth():
    before = node_read('T1', **{'1': dict(fcs=500, bad=500, up=7)})
    now = node_read('T2', **{'1': dict(fcs=3, bad=3, up=1, history=dict(HISTORY, records=[]))})
    found, summary = links.compare('node02', now, previous(before), 'B')
    assert found == [] and summary['grown'] == []
    assert [(item['counter'], item['before'], item['now']) for item in summary['reset']] == [
        ('mac_rx_fcs_err_pkt_num', 500, 3), ('mac_rx_bad_pkt_num', 500, 3), ('link_up_count', 7, 1)]
    assert ('reset since then (a driver reload or a reboot; not a growth): node02 NPU 1 mac_rx_fcs_err_pkt_num 500 -> 3'
            in summary['msg'])


def test_off_compares_without_a_finding_and_a_bad_severity_is_refused():
    before = node_read('T1', **{'1': dict(fcs=0)})
    now = node_read('T2', **{'1': dict(fcs=9)})
    found, summary = links.compare('node02', now, previous(before), 'B', 'off')
    assert found == [] and summary['grown'][0]['now'] == 9 and 'not judged' in summary['msg']
    with pytest.raises(ValueError, match='counter_growth'):
        links.compare('node02', now, previous(before), 'B', 'loud')


def test_a_counter_only_one_run_printed_is_not_compared():
    before = node_read('T1', **{'1': dict()})            # a build without the FCS counter
    now = node_read('T2', **{'1': dict(fcs=50)})         # one with it
    assert links.compare('node02', now, previous(before), 'B') == ([], {
        'run': 'A', 'time': 'T1', 'grown': [], 'reset': [], 'msg': 'compared with run A (T1); no counter grew', 'changed_by_stage4': []})


# ---- the last run of the node ---------------------------------------------------------------------------------------

def record(report_dir, run, node, data, mtime, **change):
    document = store.make_record(run, node, 0, 'health_check', [], data=data)
    document.update(change)
    path = store.write_record(str(report_dir / run), document)
    os.utime(path, (mtime, mtime))
    return path


def test_the_newest_other_run_of_the_same_node_with_link_data_is_the_previous_one(tmp_path):
    data = node_read('T', **{'1': dict()})
    record(tmp_path, 'R1', 'node02', {'links': data}, 1000)
    record(tmp_path, 'R2', 'node02', {'links': data}, 2000)
    record(tmp_path, 'R3', 'node02', {'ports': None}, 3000)            # written by a collection without link data
    record(tmp_path, 'R4', 'node01', {'links': data}, 4000)            # another node
    record(tmp_path, 'R5', 'node02', {'links': data}, 5000, schema='someone/else')
    record(tmp_path, 'NOW', 'node02', {'links': data}, 6000)           # this run
    found, skipped = links.previous_record(str(tmp_path / 'NOW'), 'node02')
    assert found['run'] == 'R2' and found['node'] == 'node02'
    assert skipped[0].startswith("run R5: the record of stage 0 in the run store (") and "is not a stage record" in skipped[0]
    assert skipped[1] == 'run R3: its stage 0 record of node02 holds no link data'
    assert links.previous_record(str(tmp_path / 'NOW') + '/', 'node02')[0]['run'] == 'R2'


def test_no_previous_run_is_no_comparison_said_in_the_result(tmp_path):
    assert links.previous_record(str(tmp_path / 'NOW'), 'node02') == (None, [])
    record(tmp_path, 'R3', 'node02', {'ports': None}, 3000)
    found, skipped = links.previous_record(str(tmp_path / 'NOW'), 'node02')
    assert found is None
    said = links.no_comparison(str(tmp_path / 'NOW'), skipped)
    assert said['run'] is None and said['grown'] == [] and said['msg'] == (
        'no earlier run under %s holds a stage 0 record of this node with link data: nothing to compare with (run R3: '
        'its stage 0 record of node02 holds no link data)' % tmp_path)


def test_a_link_is_never_followed(tmp_path):
    data = node_read('T', **{'1': dict()})
    record(tmp_path / 'elsewhere', 'R1', 'node02', {'links': data}, 1000)
    (tmp_path / 'reports').mkdir()
    os.symlink(str(tmp_path / 'elsewhere' / 'R1'), str(tmp_path / 'reports' / 'R1'))
    assert links.previous_record(str(tmp_path / 'reports' / 'NOW'), 'node02') == (None, [])
    record(tmp_path / 'reports', 'R2', 'node02', {'links': data}, 1000)
    node_dir = tmp_path / 'reports' / 'R2' / 'nodes' / 'node02'
    os.rename(str(node_dir), str(tmp_path / 'moved'))
    os.symlink(str(tmp_path / 'moved'), str(node_dir))
    assert links.previous_record(str(tmp_path / 'reports' / 'NOW'), 'node02') == (None, [])


def test_link_drops_of_a_port_stage_4_changed_in_that_run_are_the_changes(tmp_path):
    """Stage 4 of run A changed MTU and PFC of NPU 1 after stage 0 read it: the link went down and up on purpose, so
    the drops since are not a finding there; on NPU 0, which stage 4 left alone, they are."""
    report = tmp_path / 'reports'
    run_a, run_b = report / 'A', report / 'B'
    stage4 = store.make_record('A', 'node02', 4, 'roce_lossless', [],
                               data={'changed_devices': {'mtu': [1], 'pfc': [1], 'dscp_to_tc': []}})
    store.write_record(str(run_a), stage4)
    previous = {'run': 'A', 'time': 'T1', 'data': {'links': {'time': 'T1', 'devices': {
        '0': {'counters': {'link_down_records': 1, 'link_up_count': 1}},
        '1': {'counters': {'link_down_records': 1, 'link_up_count': 1}}}}}}
    now = {'devices': {'0': {'counters': {'link_down_records': 3, 'link_up_count': 3}},
                       '1': {'counters': {'link_down_records': 3, 'link_up_count': 3}}}}
    changed = links.changed_by_stage4(str(run_b), 'node02', previous)
    assert changed == {1}
    found, compared = links.compare('node02', now, previous, 'B', changed=changed)
    assert [(f['device'], f['check']) for f in found] == [(0, 'link_down_growing')]
    assert compared['changed_by_stage4'] == [1]
    # no stage 4 record in that run: nothing is excused
    assert links.changed_by_stage4(str(run_b), 'node01', previous) == set()
