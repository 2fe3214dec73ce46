# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Stage 0, link quality over time: what one read shows of every NPU port and NPU, and what changed since the last run.

``node_links`` keeps, per NPU, the Rx/Tx power of each lane of the optical module with the module's own thresholds
(``hccn_tool -i N -optical -g``), the error counters of ``-stat -g`` (FCS/CRC, RoCE errors and retransmissions), the
link history of ``-link_stat -g`` and the ECC counts of ``npu-smi info -t ecc``: the ``data.links`` of the node's
stage 0 record. ``optical_findings`` judges the Rx power of each lane against the module's low alarm threshold;
``previous_record`` finds the newest stage 0 record of the same node with link data in another run directory of the
report directory, and ``compare`` names every counter that grew since then (one that fell was reset, which is said,
not judged).
"""

from __future__ import annotations

import math
import os
import stat
import time

from ansible_collections.npuops.ascend.plugins.plugin_utils import health, store
from ansible_collections.npuops.ascend.plugins.plugin_utils.findings import FAIL, WARN, finding, where

LINK_LIMITS = {
    # how close (dB) to the module's own low alarm threshold (RxPower Low Thres) an Rx lane may come before it is a
    # warning: a project choice (one dB is a quarter of the power), not a vendor figure
    'optical_margin_db': 1.0,
    # the severity of a counter that grew since the last run: warn, fail, or off (compared and recorded, not judged)
    'counter_growth': WARN,
}
GROWTH_SEVERITIES = (WARN, FAIL, 'off')

# the counters of -stat -g kept and compared. mac_rx_fcs_err_pkt_num is printed only by a tool built with
# HCCN_TOOL_SHOW_EXT_STAT (driver source tool.c tool_display_mac_info); mac_rx_bad_pkt_num, which every build prints,
# counts the frames received with errors, FCS errors among them
FCS_COUNTERS = ('mac_rx_fcs_err_pkt_num', 'mac_rx_bad_pkt_num')
ROCE_COUNTERS = ('roce_rx_err_pkt_num', 'roce_tx_err_pkt_num', 'roce_qp_status_err_num', 'roce_new_pkt_rty_num')
LINK_COUNTERS = ('link_up_count', 'link_down_count', 'link_down_records')
ECC_COUNTERS = ('ecc_multi_bit', 'ecc_single_bit')
# (check, counters, what they count, what to do): one finding per NPU and group
GROUPS = (
    ('fcs_errors_growing', FCS_COUNTERS, 'frames received with FCS/CRC errors',
     'frames arrive damaged: clean or replace the fibre, reseat or replace the optical module, check the switch port '
     '(hccn_tool -i %d -stat -g, -optical -g)'),
    ('roce_errors_growing', ROCE_COUNTERS, 'RoCE errors and retransmissions',
     'packets are lost or rejected on the RoCE path: check the port, its optics and the switch (PFC/ECN, drops) '
     '(hccn_tool -i %d -stat -g)'),
    ('link_down_growing', LINK_COUNTERS, 'link drops',
     'the link went down and up again: check the cable, the optical module and the switch port (hccn_tool -i %d '
     '-link_stat -g)'),
    ('ecc_growing', ECC_COUNTERS, 'ECC errors of the NPU memory',
     'the memory of the NPU degrades: watch it, drain the node and have the NPU checked if it goes on '
     '(npu-smi info -t ecc -i %d)'),
)
LABELS = {'link_down_records': 'LINK DOWN records', 'link_up_count': 'link up count', 'link_down_count': 'link down count',
          'ecc_multi_bit': 'multi-bit ECC errors', 'ecc_single_bit': 'single-bit ECC errors'}


def _number(value):
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _count(value):
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _ecc_counts(entry):
    """(multi-bit, single-bit) error counts of one NPU's ``ecc`` view, as stage 0 counts them; None when not read."""
    if not isinstance(entry, dict) or not entry.get('chips'):
        return None
    return health.ecc_counts(entry)


def _optical(parsed):
    """What one ``-optical -g`` read shows of the power: ``present``, the lanes (``{lane, tx_mw, rx_mw}``, a value the
    tool printed as NA or not at all is null) and the module's thresholds in mW; None when it was not read."""
    if not isinstance(parsed, dict):
        return None
    lanes = []
    for lane in range(8):
        tx, rx = _number(parsed.get('tx_power%d_mw' % lane)), _number(parsed.get('rx_power%d_mw' % lane))
        if ('tx_power%d_mw' % lane) in parsed or ('rx_power%d_mw' % lane) in parsed or tx is not None or rx is not None:
            lanes.append({'lane': lane, 'tx_mw': tx, 'rx_mw': rx})
        elif ('tx_power%d' % lane) in parsed or ('rx_power%d' % lane) in parsed:
            lanes.append({'lane': lane, 'tx_mw': None, 'rx_mw': None})  # printed as NA (a DR4 module's lanes 2-3)
    return {'present': parsed.get('present'), 'lanes': lanes,
            'rx_low_mw': _number(parsed.get('rx_power_low_thres_mw')),
            'rx_high_mw': _number(parsed.get('rx_power_high_thres_mw')),
            'tx_low_mw': _number(parsed.get('tx_power_low_thres_mw')),
            'tx_high_mw': _number(parsed.get('tx_power_high_thres_mw'))}


def _device_links(port, ecc):
    """The ``data.links`` entry of one NPU from its port entry of hccn_info and its ``ecc`` view (either may be None)."""
    port = port if isinstance(port, dict) else {}
    counters, not_printed = {}, []
    stat_read = port.get('stat')
    if isinstance(stat_read, dict):
        for name in FCS_COUNTERS + ROCE_COUNTERS:
            value = _count(stat_read.get(name))
            if value is None:
                not_printed.append(name)
            else:
                counters[name] = value
    history = port.get('link_stat')
    port_time, down_times = None, None
    if isinstance(history, dict):
        for name in ('link_up_count', 'link_down_count'):
            if _count(history.get(name)) is not None:
                counters[name] = history[name]
        down_times = [str(record.get('time')) for record in history.get('records') or []
                      if isinstance(record, dict) and record.get('status') == 'DOWN']
        counters['link_down_records'] = len(down_times)
        port_time = history.get('current_time')
    counts = _ecc_counts(ecc)
    if counts is not None:
        counters['ecc_multi_bit'], counters['ecc_single_bit'] = counts
    out = {'counters': counters}
    if isinstance(stat_read, dict):
        out['not_printed'] = not_printed
    if 'optical' in port:
        out['optical'] = _optical(port.get('optical'))
    if history is not None:
        out['port_time'] = port_time
        out['link_down_times'] = down_times or []
    return out


def node_links(ports, npu, when):
    """``data.links`` of the node's record: ``{time, devices: {<NPU id>: {counters, not_printed, optical, port_time,
    link_down_times}}}`` from the ports part (hccn_info's result) and the npu part (npu_info's); ``when`` is the UTC
    time of the read. None when neither part holds an NPU."""
    port_devices = (ports or {}).get('devices') if isinstance(ports, dict) else None
    npu_devices = (npu or {}).get('devices') if isinstance(npu, dict) else None
    port_devices = port_devices if isinstance(port_devices, dict) else {}
    npu_devices = npu_devices if isinstance(npu_devices, dict) else {}
    ids = sorted(set(str(key) for key in list(port_devices) + list(npu_devices) if str(key).isdigit()), key=int)
    if not ids:
        return None
    devices = {}
    for dev in ids:
        entry = npu_devices.get(dev, npu_devices.get(int(dev))) or {}
        devices[dev] = _device_links(port_devices.get(dev, port_devices.get(int(dev))), entry.get('ecc') if isinstance(entry, dict) else None)
    return {'time': when, 'devices': devices}


def _dbm(milliwatts):
    return 10.0 * math.log10(milliwatts) if milliwatts and milliwatts > 0 else float('-inf')


def _lane_text(lane):
    return 'lane %d %.4f mW (%.1f dBm)' % (lane['lane'], lane['rx_mw'], _dbm(lane['rx_mw']))


def optical_findings(host, links, margin_db=LINK_LIMITS['optical_margin_db']):
    """The Rx lanes of every port below the module's low alarm threshold (a failure) or within ``margin_db`` of it
    (a warning), one finding per port. A module that is not present (the driver then prints no power) or prints no
    low threshold is not judged."""
    out = []
    for dev, entry in sorted(((links or {}).get('devices') or {}).items(), key=lambda item: int(item[0])):
        optical = entry.get('optical') if isinstance(entry, dict) else None
        if not isinstance(optical, dict) or optical.get('present') != 'present':
            continue
        low = optical.get('rx_low_mw')
        if not low or low <= 0:
            continue
        near_mw = low * 10 ** (float(margin_db or 0) / 10.0)
        lanes = [lane for lane in optical.get('lanes') or [] if _number(lane.get('rx_mw')) is not None]
        below = [lane for lane in lanes if lane['rx_mw'] < low]
        near = [lane for lane in lanes if low <= lane['rx_mw'] < near_mw]
        npu = int(dev)
        threshold = "the module's RxPower Low Thres %.4f mW (%.1f dBm)" % (low, _dbm(low))
        if below:
            worst = min(lane['rx_mw'] for lane in below)
            out.append(finding(host, npu, 'optical_rx_power', worst, '>= %.4f mW' % low,
                               'Rx power below %s: %s (hccn_tool -i %d -optical -g): the port loses frames or the link '
                               'drops; clean the fibre ends, reseat or replace the optical module, check the far end'
                               % (threshold, ', '.join(_lane_text(lane) for lane in below), npu)))
        elif near:
            worst = min(lane['rx_mw'] for lane in near)
            out.append(finding(host, npu, 'optical_rx_power_low', worst, '>= %.4f mW' % near_mw,
                               'Rx power within %s dB of %s: %s (health_check_optical_margin_db %s dB; hccn_tool -i %d '
                               '-optical -g): clean the fibre ends and watch it before it drops below'
                               % (margin_db, threshold, ', '.join(_lane_text(lane) for lane in near), margin_db, npu), WARN))
    return out


def _own_dir(path):
    """True when ``path`` is a directory and not a link (the store follows no link)."""
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def previous_record(run_dir, node):
    """The newest stage 0 record of ``node`` with link data in another run directory beside ``run_dir`` (the report
    directory holds one directory per run, named by its run id): ``(record, skipped)``, ``skipped`` saying why each
    newer one could not be used; ``(None, skipped)`` when there is none. Newest: the record file written last. Only
    this node's records are read, through the store (schema, version, run id and node checked); no link is followed."""
    run_dir = os.path.abspath(str(run_dir).rstrip(os.sep) or os.sep)

    def with_links(record):
        links = (record.get('data') or {}).get('links')
        if isinstance(links, dict) and isinstance(links.get('devices'), dict):
            return None
        return 'its stage 0 record of %s holds no link data' % node

    return store.newest_record(os.path.dirname(run_dir), node, 0, with_links, exclude=os.path.basename(run_dir))


def _clock(text):
    """Seconds of an asctime text of the node's clock ('Wed Aug  2 03:36:43 2022'); None when it is not one."""
    try:
        return time.mktime(time.strptime(' '.join(str(text).split()), '%a %b %d %H:%M:%S %Y'))
    except (TypeError, ValueError, OverflowError):
        return None


def _downs_since(before, now):
    """The LINK DOWN records of ``now`` newer than the read of ``before`` (the node's own clock of -link_stat -g);
    None when the times cannot be told (then the counts are compared)."""
    then = _clock(before.get('port_time'))
    times = now.get('link_down_times')
    if then is None or not isinstance(times, list):
        return None
    stamps = [_clock(text) for text in times]
    if any(stamp is None for stamp in stamps):
        return None
    return [text for text, stamp in zip(times, stamps) if stamp > then]


def _label(name):
    return LABELS.get(name, name)


def changed_by_stage4(run_dir, node, previous):
    """The NPUs whose port stage 4 of the run of ``previous`` (a stage 0 record) changed on ``node`` (``changed_devices``
    of its stage 4 record in that run's store): a change of MTU or PFC takes the link down and up, so their LINK DOWN
    records since that read are the change's, not a fault's. An empty set when that run has no such record."""
    if not previous or not previous.get('run'):
        return set()
    report_dir = os.path.dirname(os.path.abspath(str(run_dir).rstrip(os.sep) or os.sep))
    other = os.path.join(report_dir, str(previous['run']))
    if not _own_dir(other):
        return set()
    record, _problem = store.read_record(other, previous['run'], node, 4)
    changed = ((record or {}).get('data') or {}).get('changed_devices') or {}
    out = set()
    for devices in (changed.values() if isinstance(changed, dict) else []):
        out |= set(int(d) for d in devices or [] if isinstance(d, int) or str(d).isdigit())
    return out


def compare(host, links, previous, run_id, severity=LINK_LIMITS['counter_growth'], changed=None):
    """The findings of the counters of ``links`` (this run's ``data.links``) that grew since ``previous`` (the stage 0
    record of the same node in an earlier run, from ``previous_record``), one per NPU and group of ``GROUPS``, with
    ``severity`` (warn, fail; off: none), and what the comparison found: ``(findings, {run, time, grown, reset,
    msg})``. A counter that fell was reset (driver reload, reboot): it is listed in ``reset``, not judged. ``changed``:
    the NPUs whose port stage 4 of that run changed after the read (changed_by_stage4): their link drops are the
    change's, so link-down records are not judged there (listed in ``changed``)."""
    changed = set(changed or ())
    if severity not in GROWTH_SEVERITIES:
        raise ValueError('counter_growth must be one of %s, got %r' % (', '.join(GROWTH_SEVERITIES), severity))
    before_links = ((previous or {}).get('data') or {}).get('links') or {}
    before_run, before_time = (previous or {}).get('run'), before_links.get('time') or (previous or {}).get('time')
    grown, reset, findings = [], [], []
    now_devices = (links or {}).get('devices') or {}
    before_devices = before_links.get('devices') or {}
    for dev in sorted(set(now_devices) & set(before_devices), key=int):
        now, before = now_devices[dev] or {}, before_devices[dev] or {}
        now_counts, before_counts = now.get('counters') or {}, before.get('counters') or {}
        downs = _downs_since(before, now)
        fell = [name for name in now_counts if _count(before_counts.get(name)) is not None
                and _count(now_counts[name]) is not None and now_counts[name] < before_counts[name]
                and name != 'link_down_records']
        for name in fell:
            reset.append({'device': int(dev), 'counter': name, 'before': before_counts[name], 'now': now_counts[name]})
        for check, names, what, advice in GROUPS:
            items = []
            for name in names:
                if name in LINK_COUNTERS and int(dev) in changed:
                    continue  # stage 4 of that run took this port down and up on purpose
                was, value = _count(before_counts.get(name)), _count(now_counts.get(name))
                if name == 'link_down_records' and downs is not None:
                    if downs:
                        items.append((name, None, len(downs), '%d LINK DOWN record(s) newer than the read of run %s '
                                      '(newest %s)' % (len(downs), before_run, downs[0])))
                    continue
                if was is None or value is None or value <= was:
                    continue
                if name == 'link_down_records' and any(_count(now_counts.get(other)) is not None and other in fell
                                                       for other in ('link_up_count', 'link_down_count')):
                    continue  # a reset history: its records say nothing about the time since the last run
                items.append((name, was, value, '%s %d -> %d' % (_label(name), was, value)))
            if not items:
                continue
            growth = sum((value - was) if was is not None else value for _name, was, value, _text in items)
            for name, was, value, _text in items:
                grown.append({'device': int(dev), 'counter': name, 'before': was, 'now': value})
            if severity == 'off':
                continue
            findings.append(finding(host, int(dev), check, growth, '0 since run %s' % before_run,
                                    '%s grew between run %s (%s) and run %s: %s; %s'
                                    % (what, before_run, before_time, run_id, ', '.join(text for _n, _w, _v, text in items),
                                       advice % int(dev)), severity))
    msg = _summary(host, before_run, before_time, grown, reset, severity)
    return findings, {'run': before_run, 'time': before_time, 'grown': grown, 'reset': reset, 'msg': msg,
                      'changed_by_stage4': sorted(changed)}


def _summary(host, before_run, before_time, grown, reset, severity):
    parts = ['compared with run %s (%s)' % (before_run, before_time)]
    if grown:
        parts.append('%d counter(s) grew on NPU %s%s' % (
            len(grown), ', '.join(sorted(set(str(item['device']) for item in grown), key=int)),
            ' (health_check_counter_growth: off, not judged)' if severity == 'off' else ''))
    else:
        parts.append('no counter grew')
    if reset:
        parts.append('reset since then (a driver reload or a reboot; not a growth): %s' % ', '.join(
            '%s %s %d -> %d' % (where(host, item['device']), _label(item['counter']), item['before'], item['now'])
            for item in reset))
    return '; '.join(parts)


def no_comparison(run_dir, skipped):
    """What the result says when there is no earlier record to compare with."""
    report_dir = os.path.dirname(os.path.abspath(str(run_dir).rstrip(os.sep) or os.sep))
    text = 'no earlier run under %s holds a stage 0 record of this node with link data: nothing to compare with' % report_dir
    if skipped:
        text += ' (%s)' % '; '.join(skipped[:3] + (['and %d more' % (len(skipped) - 3)] if len(skipped) > 3 else []))
    return {'run': None, 'time': None, 'grown': [], 'reset': [], 'msg': text}
