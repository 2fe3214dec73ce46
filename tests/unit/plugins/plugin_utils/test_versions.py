"""Stage 2's findings (version_findings) and the fingerprints of a PoD, fed with version_info and npu_info results made by
run_module from real samples of the fixture tree."""

from __future__ import annotations

import json
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
# Real samples (tests/fixtures/captures/version_files_stack.txt)
KERNELS_82 = sample('versions/opp_kernel_info/mindie_image_kernels_8.2.RC1')         # version_dir=8.2.RC1
KERNELS_83 = sample('versions/opp_kernel_info/tritonjit_kernels_8.3.RC1.alpha001')   # version_dir=8.3.RC1.alpha001
MINDIE_21 = sample('versions/mindie_info/mindie_image_2.1.RC1')                      # 2.1.RC1.B152
MINDIE_21RC2 = sample('versions/mindie_info/notes_2.1.RC2')                          # 2.1.RC2.B080
OSRELEASE = sample('versions/kernel_release/openeuler_2203_5.10.0')                  # 5.10.0-60.18.0.50.0e2203.aarch64
NAMES = ('torch', 'torch_npu', 'mindspeed', 'vllm', 'vllm_ascend')

PYTHON = '/opt/venvs/train/bin/python3'


@pytest.fixture
def stack_read(run_module, tmp_path, monkeypatch):
    """version_info on version files in tmp_path filled with the samples, and the given package versions."""
    for key in list(os.environ):
        if key.startswith(('HCCL_', 'ASCEND_', 'TASK_QUEUE_', 'PYTORCH_NPU_')):
            monkeypatch.delenv(key)

    def read(driver=DRIVER, firmware=FIRMWARE, toolkit=TOOLKIT, torch='2.1.0', torch_npu='2.1.0.post10', name='node',
             kernels=None, mindie=None, osrelease=OSRELEASE, python='3.10.14', **packages):
        root = tmp_path / name
        if kernels is None and toolkit is not None:     # the kernels of the toolkit's own release (the 8.2.RC1 sample, edited)
            release = version_info.version_parsers.parse_version_info(toolkit)['version']
            kernels = KERNELS_82.replace('version_dir=8.2.RC1', 'version_dir=%s' % release)
        for path, text in (('driver/version.info', driver), ('firmware/version.info', firmware),
                           ('toolkit/aarch64-linux/ascend_toolkit_install.info', toolkit), ('toolkit/version.cfg', VERSION_CFG),
                           ('toolkit/opp_kernel/version.info', kernels or None), ('mindie/version.info', mindie),
                           ('osrelease', osrelease)):
            if text is not None:
                (root / path).parent.mkdir(parents=True, exist_ok=True)
                (root / path).write_text(text)
        monkeypatch.setattr(version_info, 'OSRELEASE', str(root / 'osrelease'))
        argv = (PYTHON, '-c', version_info.PACKAGES_SCRIPT) + NAMES
        found = dict(dict.fromkeys(NAMES), torch=torch, torch_npu=torch_npu, **packages)
        out = json.dumps({'python': python, 'packages': found}) + '\n'
        args = {'driver_path': str(root / 'driver'), 'firmware_path': str(root / 'firmware'),
                'toolkit_path': str(root / 'toolkit'), 'mindie_path': str(root / 'mindie'), 'python': PYTHON}
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
        'driver': '23.0.7', 'firmware': '7.1.0.11.220', 'cann': '8.0.0', 'cann_kernels': '8.0.0', 'mindie': None,
        'kernel': '5.10.0-60.18.0.50.0e2203.aarch64', 'python': '3.10.14', 'package:torch': '2.1.0',
        'package:torch_npu': '2.1.0.post10', 'package:mindspeed': None, 'package:vllm': None, 'package:vllm_ascend': None,
        'npu_driver': '23.0.7', 'npu_firmware': '7.1.0.7.220'}
    assert version_findings(stack, loaded(run_module), TABLE, host=H, min_kernel='5.10')['findings'] == []


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
        finding('node03', None, 'driver', '25.3.rc1', '23.0.7', 'driver is 25.3.rc1 while 2 other node(s) have 23.0.7 (node01, node02)'),
        finding('node03', None, 'package:torch', '2.3.1', '2.1.0',
                'package:torch is 2.3.1 while 2 other node(s) have 2.1.0 (node01, node02)'),
    ]
    assert fingerprint_findings({'node01': prints['node01'], 'node02': prints['node02']}) == []


def test_fingerprint_of_a_field_one_node_lacks():
    prints = {'node01': {'env:HCCL_BUFFSIZE': '200'}, 'node02': {'env:HCCL_BUFFSIZE': '200'}, 'node03': {}}
    assert fingerprint_diff(prints) == [{'field': 'env:HCCL_BUFFSIZE', 'values': {'node01': '200', 'node02': '200', 'node03': None}}]
    assert [f['msg'] for f in fingerprint_findings(prints)] == [
        'node03: env:HCCL_BUFFSIZE is None while 2 other node(s) have 200 (node01, node02)']
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
    assert [f['msg'] for f in part['pod_findings']] == ['node03: driver is 24.1.0 while 2 other node(s) have 25.2.0 (node01, node02)']
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


# ---- the kernels package, the kernel floor, the engines and frameworks ----------------------------------------------

def _checks(checked, *prefixes):
    return [(f['check'], f['severity']) for f in checked['findings'] if f['check'].startswith(prefixes)]


def test_kernels_of_the_toolkit_release_pass_and_another_release_fails(run_module, stack_read):
    boards = loaded(run_module)
    same = version_findings(stack_read(toolkit=TOOLKIT_82, kernels=KERNELS_82, torch_npu='2.5.1.post1', torch='2.5.1'),
                            boards, TABLE, host=H)
    assert _checks(same, 'cann_kernels') == []
    other = version_findings(stack_read(kernels=KERNELS_83), boards, TABLE, host=H)
    assert [f for f in other['findings'] if f['check'] == 'cann_kernels'] == [finding(
        H, None, 'cann_kernels', '8.3.RC1.alpha001', '8.0.0',
        'the CANN kernels package is 8.3.RC1.alpha001 while the toolkit is 8.0.0: install the kernels of the same release '
        '(method: toolkit and kernels of one CANN release)')]
    assert other['fingerprint']['cann_kernels'] == '8.3.RC1.alpha001'


def test_a_toolkit_without_kernels_warns(run_module, stack_read):
    checked = version_findings(stack_read(kernels=''), loaded(run_module), TABLE, host=H)
    missing = [f for f in checked['findings'] if f['check'] == 'cann_kernels']
    assert [(f['severity'], f['value'], f['expected']) for f in missing] == [('warn', None, '8.0.0')]
    assert 'no CANN kernels package (opp_kernel/version.info) next to the CANN 8.0.0 toolkit' in missing[0]['msg']


@pytest.mark.parametrize('release, floor, expected', [
    (OSRELEASE, '5.10', []),
    (OSRELEASE, '5.10.0', []),
    (OSRELEASE, '5.11', [('kernel', 'fail')]),
    ('4.19.90-2112.8.0.0131.oe1.aarch64\n', '5.10', [('kernel', 'fail')]),
    ('6.6.0-28.0.0.34.oe2403.aarch64\n', '5.10', []),
    ('custom-build\n', '5.10', [('kernel', 'warn')]),
    ('4.19.90-2112.8.0.0131.oe1.aarch64\n', None, []),
])
def test_the_kernel_floor(run_module, stack_read, release, floor, expected):
    checked = version_findings(stack_read(osrelease=release), loaded(run_module), TABLE, host=H, min_kernel=floor)
    assert _checks(checked, 'kernel') == expected
    assert checked['fingerprint']['kernel'] == release.strip()


def test_an_old_kernel_names_node_value_and_floor(run_module, stack_read):
    checked = version_findings(stack_read(osrelease='4.19.90-2112.8.0.0131.oe1.aarch64\n'), loaded(run_module), TABLE,
                               host=H, min_kernel='5.10')
    assert [f['msg'] for f in checked['findings']] == [
        'node-07: kernel 4.19.90-2112.8.0.0131.oe1.aarch64 is older than 5.10 (method prerequisite; version_check_min_kernel)']


VA_SOURCE = TABLE['vllm_ascend']['source']
GOOD_VA = dict(toolkit=TOOLKIT_82, torch='2.5.1', torch_npu='2.5.1.post1', vllm='0.9.1+empty', vllm_ascend='0.9.1')


def test_a_vllm_ascend_stack_of_the_matrix_passes(run_module, stack_read):
    checked = version_findings(stack_read(**GOOD_VA), loaded(run_module), TABLE, host=H)
    assert _checks(checked, 'vllm_ascend', 'torch', 'cann_kernels') == []
    assert checked['fingerprint']['package:vllm_ascend'] == '0.9.1'


@pytest.mark.parametrize('change, expected', [
    ({'vllm': '0.9.2'}, [('vllm_ascend_vllm', 'fail')]),
    ({'vllm': None}, [('vllm_ascend_vllm', 'fail')]),
    ({'torch': '2.6.0', 'torch_npu': '2.6.0'}, [('vllm_ascend_torch', 'fail'), ('vllm_ascend_torch_npu', 'fail')]),
    ({'python': '3.12.1'}, [('vllm_ascend_python', 'fail')]),
    ({'python': '3.8.18'}, [('vllm_ascend_python', 'fail')]),
    ({'toolkit': TOOLKIT, 'torch_npu': '2.5.1.post1'}, [('vllm_ascend_cann', 'warn')]),
    ({'vllm_ascend': '0.6.0'}, [('vllm_ascend', 'warn')]),
])
def test_vllm_ascend_pairings(run_module, stack_read, change, expected):
    checked = version_findings(stack_read(**dict(GOOD_VA, **change)), loaded(run_module), TABLE, host=H)
    assert _checks(checked, 'vllm_ascend') == expected


def test_vllm_ascend_messages_name_the_versions_and_the_source(run_module, stack_read):
    checked = version_findings(stack_read(**dict(GOOD_VA, vllm='0.9.2', python='3.12.1')), loaded(run_module), TABLE, host=H)
    assert [f['msg'] for f in checked['findings'] if f['check'].startswith('vllm_ascend')] == [
        'node-07: vLLM 0.9.2 with vLLM-Ascend 0.9.1, which is released for vLLM 0.9.1 (%s): known bad' % VA_SOURCE,
        'node-07: Python 3.12.1 is outside the >= 3.9, < 3.12 that vLLM-Ascend 0.9.1 supports (%s): known bad' % VA_SOURCE,
    ]
    fatal = version_findings(stack_read(**dict(GOOD_VA, vllm_ascend='0.6.0')), loaded(run_module), TABLE, host=H,
                             unknown_is_fatal=True)
    assert _checks(fatal, 'vllm_ascend') == [('vllm_ascend', 'fail')]


def test_a_vllm_release_with_two_names_and_a_v_prefix():
    row = [r for r in TABLE['vllm_ascend']['rows'] if r['vllm_ascend'] == '0.10.1rc1'][0]
    assert row['vllm'] == ['0.10.1', '0.10.1.1']
    stack = {'packages': {'vllm_ascend': 'v0.10.1rc1', 'vllm': '0.10.1.1', 'torch': '2.7.1', 'torch_npu': '2.7.1.dev20250724'},
             'python': '3.11.6', 'cann': {'version': '8.2.RC1'}}
    assert _checks(version_findings(stack, {}, TABLE, host=H), 'vllm_ascend') == []
    stack['packages']['vllm'] = '0.10.2'
    assert _checks(version_findings(stack, {}, TABLE, host=H), 'vllm_ascend') == [('vllm_ascend_vllm', 'fail')]


@pytest.mark.parametrize('change, expected', [
    ({'mindspeed': '2.1.0', 'toolkit': TOOLKIT_82, 'torch': '2.6.0', 'torch_npu': '2.6.0'}, []),
    ({'mindspeed': '2.1.0', 'toolkit': TOOLKIT_82, 'torch': '2.5.1', 'torch_npu': '2.5.1.post1'}, [('mindspeed_torch', 'fail')]),
    ({'mindspeed': '2.0.0'}, [('mindspeed_cann', 'warn')]),
    ({'mindspeed': '0.12.1'}, [('mindspeed', 'warn')]),
])
def test_mindspeed_pairings(run_module, stack_read, change, expected):
    checked = version_findings(stack_read(**change), loaded(run_module), TABLE, host=H)
    assert _checks(checked, 'mindspeed') == expected


def test_mindie_with_its_cann_passes_with_another_fails_and_an_unknown_release_warns(run_module, stack_read):
    boards = loaded(run_module)
    good = version_findings(stack_read(mindie=MINDIE_21, toolkit=TOOLKIT_82, torch='2.5.1', torch_npu='2.5.1.post1'),
                            boards, TABLE, host=H)
    assert _checks(good, 'mindie') == []
    assert good['fingerprint']['mindie'] == '2.1.RC1.B152'
    bad = version_findings(stack_read(mindie=MINDIE_21), boards, TABLE, host=H)
    assert [f['msg'] for f in bad['findings'] if f['check'] == 'mindie_cann'] == [
        'node-07: MindIE 2.1.RC1.B152 is built for CANN 8.2.RC1, this node runs CANN 8.0.0 (%s): known bad'
        % TABLE['mindie']['rows'][0]['source']]
    unknown = version_findings(stack_read(mindie=MINDIE_21RC2), boards, TABLE, host=H)
    assert _checks(unknown, 'mindie') == [('mindie', 'warn')]


def test_every_new_component_differing_on_one_node_is_a_pod_finding(run_module, stack_read):
    boards = loaded(run_module)
    prints = dict((name, version_findings(stack_read(name=name, **kwargs), boards, TABLE, host=name)['fingerprint'])
                  for name, kwargs in (
                      ('node01', {'mindie': MINDIE_21}), ('node02', {'mindie': MINDIE_21}),
                      ('node03', {'mindie': MINDIE_21RC2, 'kernels': KERNELS_83, 'python': '3.11.6',
                                  'osrelease': '5.10.0-182.0.0.95.oe2203sp3.aarch64\n', 'vllm': '0.9.1'})))
    assert [d['field'] for d in fingerprint_diff(prints)] == ['cann_kernels', 'kernel', 'mindie', 'package:vllm', 'python']
    assert [f['msg'] for f in fingerprint_findings(prints)] == [
        'node03: cann_kernels is 8.3.RC1.alpha001 while 2 other node(s) have 8.0.0 (node01, node02)',
        'node03: kernel is 5.10.0-182.0.0.95.oe2203sp3.aarch64 while 2 other node(s) have 5.10.0-60.18.0.50.0e2203.aarch64 '
        '(node01, node02)',
        'node03: mindie is 2.1.RC2.B080 while 2 other node(s) have 2.1.RC1.B152 (node01, node02)',
        'node03: package:vllm is 0.9.1 while 2 other node(s) have None (node01, node02)',
        'node03: python is 3.11.6 while 2 other node(s) have 3.10.14 (node01, node02)',
    ]


def test_a_pod_split_three_ways_names_the_other_outliers():
    prints = {'node01': {'python': '3.10.14'}, 'node02': {'python': '3.10.14'}, 'node03': {'python': '3.11.6'},
              'node04': {'python': '3.9.9'}}
    assert [f['msg'] for f in fingerprint_findings(prints)] == [
        'node03: python is 3.11.6 while 2 other node(s) have 3.10.14 (node01, node02); also differing: node04 3.9.9',
        'node04: python is 3.9.9 while 2 other node(s) have 3.10.14 (node01, node02); also differing: node03 3.11.6',
    ]


def test_two_nodes_that_disagree_are_both_named():
    prints = {'node01': {'cann_kernels': '8.3.RC2', 'python': '3.11.6'}, 'node02': {'cann_kernels': '8.2.RC1', 'python': '3.11.6'}}
    assert [(f['host'], f['msg']) for f in fingerprint_findings(prints)] == [
        ('node01', 'node01: cann_kernels is 8.3.RC2; the nodes disagree and no value is held by most of them '
                   '(node01 8.3.RC2, node02 8.2.RC1)'),
        ('node02', 'node02: cann_kernels is 8.2.RC1; the nodes disagree and no value is held by most of them '
                   '(node01 8.3.RC2, node02 8.2.RC1)'),
    ]
