"""Stage 2's findings (version_findings) and the fingerprints of a PoD, fed with version_info and npu_info results made by
run_module from real samples of the fixture tree."""

from __future__ import annotations

import os

import pytest
import yaml
from ansible.errors import AnsibleFilterError

from ansible_collections.npuops.ascend.plugins.modules import version_info
from ansible_collections.npuops.ascend.plugins.plugin_utils.findings import finding
from ansible_collections.npuops.ascend.plugins.plugin_utils.versions import (
    fingerprint_diff,
    fingerprint_drift,
    fingerprint_findings,
    pod_part,
    read_history,
    version_findings,
    write_history,
)
from ansible_collections.npuops.ascend.tests.unit.plugins.modules.conftest import sample
from ansible_collections.npuops.ascend.tests.unit.plugins.plugin_utils.node_reads import BOARD, H, npu_read, of

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..', '..'))
with open(os.path.join(ROOT, 'roles', 'version_check', 'vars', 'main.yml')) as _handle:
    TABLE = yaml.safe_load(_handle)['version_check_compatibility']
SOURCE = TABLE['torch_npu']['source']

DRIVER = sample('versions/version_info/mc_driver_23.0.7')            # family V100R001C15, firmware 7.0.0-7.1.99
DRIVER_25 = sample('versions/version_info/docker_driver_25.3.rc1')   # family V100R001C23, firmware 6.4.x and 7.0.0-8.9.9
FIRMWARE = sample('versions/version_info/mc_firmware_7.1.0.11.220')
TOOLKIT = sample('versions/install_info/vllm198_toolkit_8.0.0')        # declares V100R001C15 to C20
TOOLKIT_82 = sample('versions/install_info/vllm_toolkit_8.2.RC1')
TOOLKIT_70 = sample('versions/install_info/mc_toolkit_7.0.T10')        # declares C29, C30, C13, R003C10, R003C11
VERSION_CFG = sample('versions/version_cfg/notes_cann_8.0.0_full')

PYTHON = '/opt/venvs/train/bin/python3'


@pytest.fixture
def stack_read(run_module, tmp_path, monkeypatch):
    """version_info on version files in tmp_path filled with the samples, and the given package versions."""
    for key in list(os.environ):
        if key.startswith(('HCCL_', 'ASCEND_', 'TASK_QUEUE_', 'PYTORCH_NPU_')):
            monkeypatch.delenv(key)

    def read(driver=DRIVER, firmware=FIRMWARE, toolkit=TOOLKIT, torch='2.1.0', torch_npu='2.1.0.post10', name='node'):
        root = tmp_path / name
        for path, text in (('driver/version.info', driver), ('firmware/version.info', firmware),
                           ('toolkit/aarch64-linux/ascend_toolkit_install.info', toolkit), ('toolkit/version.cfg', VERSION_CFG)):
            if text is not None:
                (root / path).parent.mkdir(parents=True, exist_ok=True)
                (root / path).write_text(text)
        argv = (PYTHON, '-c', version_info.PACKAGES_SCRIPT, 'torch', 'torch_npu')
        out = '{"torch": %s, "torch_npu": %s}\n' % tuple('"%s"' % v if v else 'null' for v in (torch, torch_npu))
        args = {'driver_path': str(root / 'driver'), 'firmware_path': str(root / 'firmware'),
                'toolkit_path': str(root / 'toolkit'), 'python': PYTHON}
        res = run_module(version_info, args, {argv: (0, out, '')})
        assert not res.failed, res
        return res.result

    return read


def boards_read(run_module, **changed):
    return npu_read(run_module, ['board'], **changed)


def board_of(software, firmware):
    return BOARD.replace('23.0.5', software).replace('7.1.0.7.220', firmware)


def loaded(run_module, version='23.0.7', firmware='7.1.0.7.220'):
    """The board view of a node whose NPUs run the given driver and firmware (the 23.0.5 board sample, edited)."""
    text = board_of(version, firmware)
    return boards_read(run_module, **dict(('board_%d' % dev, text) for dev in range(8)))


def test_a_consistent_stack_has_no_finding(run_module, stack_read):
    stack = stack_read()
    checked = version_findings(stack, loaded(run_module), TABLE, host=H)
    assert checked['findings'] == []
    assert checked['fingerprint'] == {
        'driver': '23.0.7', 'firmware': '7.1.0.11.220', 'cann': '8.0.0', 'package:torch': '2.1.0',
        'package:torch_npu': '2.1.0.post10', 'npu_driver': '23.0.7', 'npu_firmware': '7.1.0.7.220'}


def test_firmware_outside_the_range_of_the_driver(run_module, stack_read):
    checked = version_findings(stack_read(), loaded(run_module, firmware='7.8.0.6.201'), TABLE, host=H)
    assert checked['findings'] == [{
        'host': H, 'device': None, 'check': 'firmware_pairing', 'value': '7.8.0.6.201', 'expected': [['7.0.0', '7.1.99']],
        'severity': 'fail', 'msg': 'node-07: firmware 7.8.0.6.201 is outside the range driver 23.0.7 declares '
                                   '(compatible_version_fw [7.0.0,7.1.99]): known bad'}]


def test_firmware_inside_one_of_several_ranges(run_module, stack_read):
    stack = stack_read(driver=DRIVER_25)
    checked = version_findings(stack, loaded(run_module, '25.3.rc1', '7.8.0.6.201'), TABLE, host=H)
    assert of('firmware_pairing', checked['findings']) == []


def test_firmware_of_version_info_is_checked_too(run_module, stack_read):
    stack = stack_read(firmware=FIRMWARE.replace('Version=7.1.0.11.220', 'Version=7.2.0.1.100'))
    assert [(f['check'], f['value']) for f in version_findings(stack, loaded(run_module), TABLE)['findings']] == [
        ('firmware_pairing', '7.2.0.1.100')]


def test_driver_family_not_declared_by_cann(run_module, stack_read):
    checked = version_findings(stack_read(toolkit=TOOLKIT_70), loaded(run_module), TABLE, host=H)
    assert of('cann_pairing', checked['findings']) == [{
        'host': H, 'device': None, 'check': 'cann_pairing', 'value': 'V100R001C15',
        'expected': ['V100R001C29', 'V100R001C30', 'V100R001C13', 'V100R003C10', 'V100R003C11'], 'severity': 'fail',
        'msg': 'node-07: CANN 7.0.T10 declares the driver families V100R001C29, V100R001C30, V100R001C13, V100R003C10, '
               'V100R003C11, the driver 23.0.7 is V100R001C15: known bad'}]


def test_driver_not_paired_with_the_cann_release_is_unknown(run_module, stack_read):
    stack = stack_read(toolkit=TOOLKIT_82, torch='2.1.0', torch_npu='2.1.0.post13')
    checked = version_findings(stack, loaded(run_module), TABLE, host=H)
    assert checked['findings'] == [{
        'host': H, 'device': None, 'check': 'cann_hdk', 'value': '23.0.7',
        'expected': ['25.2.0', '25.0.RC1', '24.1.0', '24.1.RC3', '24.1.RC2'], 'severity': 'warn',
        'msg': 'node-07: driver 23.0.7 is not among the HDK releases CANN 8.2.RC1 is paired with (25.2.0, 25.0.RC1, 24.1.0, '
               '24.1.RC3, 24.1.RC2; MindIE 2.1.RC1 installation page)'}]
    fatal = version_findings(stack, loaded(run_module), TABLE, host=H, unknown_is_fatal=True)
    assert [f['severity'] for f in fatal['findings']] == ['fail']


def test_torch_other_than_the_one_torch_npu_is_built_for(run_module, stack_read):
    checked = version_findings(stack_read(torch='2.3.1'), loaded(run_module), TABLE, host=H)
    assert checked['findings'] == [{
        'host': H, 'device': None, 'check': 'torch_pairing', 'value': '2.3.1', 'expected': '2.1.0', 'severity': 'fail',
        'msg': 'node-07: torch 2.3.1 with torch_npu 2.1.0.post10, which is built for torch 2.1.0 (%s): known bad' % SOURCE}]


def test_a_local_build_tag_of_torch_is_the_same_release(run_module, stack_read):
    assert version_findings(stack_read(torch='2.1.0+cpu'), loaded(run_module), TABLE)['findings'] == []


def test_torch_npu_tested_with_another_cann_is_a_warning(run_module, stack_read):
    checked = version_findings(stack_read(torch='2.4.0', torch_npu='2.4.0'), loaded(run_module), TABLE, host=H)
    assert checked['findings'] == [{
        'host': H, 'device': None, 'check': 'torch_npu_cann', 'value': '8.0.0', 'expected': '8.0.RC3', 'severity': 'warn',
        'msg': 'node-07: torch_npu 2.4.0 was tested with CANN 8.0.RC3, this node runs CANN 8.0.0 (%s)' % SOURCE}]


def test_unknown_torch_npu_warns_and_fails_when_unknown_is_fatal(run_module, stack_read):
    stack, boards = stack_read(torch='2.0.1', torch_npu='2.0.1'), loaded(run_module)
    expected = {'host': H, 'device': None, 'check': 'torch_npu', 'value': '2.0.1', 'expected': 'a release of the table',
                'severity': 'warn', 'msg': 'node-07: torch_npu 2.0.1 is not in the compatibility table (%s): pairing unknown' % SOURCE}
    assert version_findings(stack, boards, TABLE, host=H)['findings'] == [expected]
    assert version_findings(stack, boards, TABLE, host=H, unknown_is_fatal=True)['findings'] == [dict(expected, severity='fail')]


def test_without_torch_npu_nothing_is_checked_about_it(run_module, stack_read):
    assert version_findings(stack_read(torch=None, torch_npu=None), loaded(run_module), TABLE)['findings'] == []


def test_npu_running_another_driver_than_version_info(run_module, stack_read):
    boards = boards_read(run_module)        # the real board sample: driver 23.0.5 loaded, firmware 7.1.0.7.220
    checked = version_findings(stack_read(), boards, TABLE, host=H)
    assert [(f['device'], f['check']) for f in checked['findings']] == [(dev, 'driver_loaded') for dev in range(8)]
    assert checked['findings'][0] == {
        'host': H, 'device': 0, 'check': 'driver_loaded', 'value': '23.0.5', 'expected': '23.0.7', 'severity': 'fail',
        'msg': 'node-07 NPU 0: the NPU runs driver 23.0.5 but version.info says 23.0.7: the installed driver is not the '
               'loaded one (reboot pending?)'}
    assert checked['fingerprint']['npu_driver'] == '23.0.5'


def test_npus_of_one_node_on_different_firmware(run_module, stack_read):
    boards = boards_read(run_module, **dict(('board_%d' % dev, board_of('23.0.7', '7.1.0.7.220')) for dev in range(8) if dev != 3),
                         board_3=board_of('23.0.7', '7.1.0.11.220'))
    checked = version_findings(stack_read(), boards, TABLE, host=H)
    assert checked['findings'] == [{
        'host': H, 'device': 3, 'check': 'firmware', 'value': '7.1.0.11.220', 'expected': '7.1.0.7.220', 'severity': 'fail',
        'msg': 'node-07 NPU 3: firmware 7.1.0.11.220 differs from the 7.1.0.7.220 of the other NPUs of the node'}]
    assert checked['fingerprint']['npu_firmware'] == '7.1.0.11.220,7.1.0.7.220'


def test_no_driver_version_info(run_module, stack_read):
    checked = version_findings(stack_read(driver=None), loaded(run_module), TABLE, host=H)
    assert checked['findings'] == [{
        'host': H, 'device': None, 'check': 'driver', 'value': None, 'expected': 'version.info', 'severity': 'fail',
        'msg': 'node-07: no driver version.info was found; is the Ascend driver installed?'}]


def test_version_findings_arguments():
    with pytest.raises(AnsibleFilterError, match='version_findings expects the version_info result and the compatibility table'):
        version_findings(None, {}, TABLE)


def test_fingerprints_of_a_pod(run_module, stack_read):
    boards = loaded(run_module)
    prints = dict((name, version_findings(stack_read(name=name, **kwargs), boards, TABLE, host=name)['fingerprint'])
                  for name, kwargs in (('node01', {}), ('node02', {}), ('node03', {'driver': DRIVER_25, 'torch': '2.3.1'})))
    assert fingerprint_diff(prints) == [
        {'field': 'driver', 'values': {'node01': '23.0.7', 'node02': '23.0.7', 'node03': '25.3.rc1'}},
        {'field': 'package:torch', 'values': {'node01': '2.1.0', 'node02': '2.1.0', 'node03': '2.3.1'}},
    ]
    assert fingerprint_findings(prints) == [
        finding('node03', None, 'driver', '25.3.rc1', '23.0.7', 'driver is 25.3.rc1 while 2 other node(s) have 23.0.7'),
        finding('node03', None, 'package:torch', '2.3.1', '2.1.0', 'package:torch is 2.3.1 while 2 other node(s) have 2.1.0'),
    ]
    assert fingerprint_findings({'node01': prints['node01'], 'node02': prints['node02']}) == []


def test_fingerprint_of_a_field_one_node_lacks():
    prints = {'node01': {'env:HCCL_BUFFSIZE': '200'}, 'node02': {'env:HCCL_BUFFSIZE': '200'}, 'node03': {}}
    assert fingerprint_diff(prints) == [{'field': 'env:HCCL_BUFFSIZE', 'values': {'node01': '200', 'node02': '200', 'node03': None}}]
    assert [f['msg'] for f in fingerprint_findings(prints)] == ['node03: env:HCCL_BUFFSIZE is None while 2 other node(s) have 200']
    with pytest.raises(AnsibleFilterError, match=r'fingerprint_diff expects \{host: fingerprint\}, got list'):
        fingerprint_diff([])


def test_fingerprint_drift():
    before = {'node01': {'driver': '23.0.7', 'cann': '8.0.0'}, 'node02': {'driver': '23.0.7'}}
    after = {'node01': {'driver': '24.1.rc1', 'cann': '8.0.0'}, 'node03': {'driver': '23.0.7'}}
    assert fingerprint_drift(before, after) == [
        {'host': 'node01', 'field': 'driver', 'before': '23.0.7', 'after': '24.1.rc1', 'msg': 'node01: driver changed from 23.0.7 to 24.1.rc1'},
        {'host': 'node02', 'field': None, 'before': None, 'after': None, 'msg': 'node02: not in this run'},
        {'host': 'node03', 'field': None, 'before': None, 'after': None, 'msg': 'node03: new node since the previous run'},
    ]
    assert fingerprint_drift({}, after) == []
    assert fingerprint_drift(before, before) == []


# ---- the PoD part of stage 2, from the nodes' records ------------------------------------------------------------------

def _record(node, fingerprint, found=()):
    return {'node': node, 'findings': list(found), 'data': {'fingerprint': fingerprint}}


def test_the_pod_part_compares_the_records_in_the_order_of_the_play():
    odd = finding('node03', None, 'cann_pairing', 'x', 'y', 'a known-bad pairing')
    records = {'node03': _record('node03', {'driver': '24.1.0'}, [odd]), 'node01': _record('node01', {'driver': '25.2.0'}),
               'node02': _record('node02', {'driver': '25.2.0'})}
    part = pod_part(records, ['node01', 'node02', 'node03', 'node04'], previous={'run': 'R0', 'nodes': {
        'node01': {'driver': '25.2.0'}, 'node03': {'driver': '25.2.0'}}})
    assert list(part['fingerprints']) == ['node01', 'node02', 'node03']  # node04 has no record: the gate names it
    assert part['differences'] == [{'field': 'driver', 'values': {'node01': '25.2.0', 'node02': '25.2.0', 'node03': '24.1.0'}}]
    assert [f['msg'] for f in part['pod_findings']] == ['node03: driver is 24.1.0 while 2 other node(s) have 25.2.0']
    assert part['findings'] == [odd] + part['pod_findings']
    assert [d['msg'] for d in part['drift']] == ['node02: new node since the previous run',
                                                 'node03: driver changed from 25.2.0 to 24.1.0']
    assert pod_part({}, ['node01'])['drift'] == [] and pod_part({}, [], previous={'nodes': 'garbage'})['drift'] == []


def test_the_history_is_kept_atomically_and_a_bad_one_is_said_not_used(tmp_path):
    path = str(tmp_path / 'reports' / 'fingerprints.json')
    assert read_history(path) == ({}, None)
    write_history(path, 'R1', {'node01': {'driver': '25.2.0'}})
    assert read_history(path) == ({'run': 'R1', 'nodes': {'node01': {'driver': '25.2.0'}}}, None)
    assert open(path).read().startswith('{\n    "nodes": {')  # the layout to_nice_json wrote before
    assert os.listdir(str(tmp_path / 'reports')) == ['fingerprints.json']
    (tmp_path / 'reports' / 'fingerprints.json').write_text('[1, 2]')
    document, problem = read_history(path)
    assert document == {} and 'are not {run, nodes}; this run is not compared with it' in problem
    (tmp_path / 'reports' / 'fingerprints.json').write_text('{"run": ')
    assert 'cannot be read' in read_history(path)[1]
