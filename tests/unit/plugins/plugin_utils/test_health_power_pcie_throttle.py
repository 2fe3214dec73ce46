"""Stage 0's power, PCIe error, throttling and container findings (plugins/plugin_utils/health.py), fed with npu_info
results made by run_module from real samples of the fixture tree, and the node side of the container check
(plugins/module_utils/_domain/container_check.py) on a directory tree."""

from __future__ import annotations

import os

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.npuops.ascend.plugins.module_utils._domain import health_info as domain
from ansible_collections.npuops.ascend.plugins.module_utils._domain.container_check import check_container, container_evidence
from ansible_collections.npuops.ascend.plugins.modules import npu_info
from ansible_collections.npuops.ascend.plugins.plugin_utils import health
from ansible_collections.npuops.ascend.plugins.plugin_utils.health import health_findings, pod_power_findings
from ansible_collections.npuops.ascend.tests.unit.plugins.modules.conftest import NPU_SMI, sample

INFO_IDLE = sample('npu_smi/info/vllm198_910b3_23.0.7_idle')      # 8 x 910B3, 96.5-108.7 W, 54-59 C
POWER = sample('npu_smi/power/tg_910b')                              # 910B, 103.5 W
COMMON_OK = sample('npu_smi/common/gpustack_test')                   # 1000 of 1000 MHz, 46 C, 69.0 W
COMMON_IDLE_LOW = sample('npu_smi/common/drv950_doc_idle_low_freq')  # idle, 100 of 1650 MHz, 65 C, 298.6 W
PCIE_ZERO = sample('npu_smi/pcie_err/drv_source_tab_zero')           # every counter 0
PCIE_RX_RETRY = sample('npu_smi/pcie_err/drv950_zh_doc')             # RX Error Count 991, Retry Count 415
HEALTH_ALARM = sample('npu_smi/health/mc_910a_alarm_three_codes')
H = 'node-07'
VIEWS = {'power': POWER, 'common': COMMON_OK, 'pcie_err': PCIE_ZERO}


def _read(run_module, subsets=('power', 'common', 'pcie_err'), table=INFO_IDLE, **changed):
    """npu_info on the samples; ``changed`` maps '<view>_<device>' to the output of that one call."""
    cmds = {(NPU_SMI, 'info'): (0, table, '')}
    for dev in range(8):
        for view in subsets:
            name = 'pcie-err' if view == 'pcie_err' else view
            cmds[(NPU_SMI, 'info', '-t', name, '-i', str(dev))] = (0, changed.get('%s_%d' % (view, dev), VIEWS.get(view)), '')
    res = run_module(npu_info, {'gather_subset': list(subsets)}, cmds)
    assert not res.failed, res
    return res.result


def _checks(found, *names):
    return [(f['device'], f['check'], f['value']) for f in found if f['check'] in names]


def _data(npu, **more):
    return dict({'host': H, 'npu': npu}, **more)


# ---- power ------------------------------------------------------------------------------------------------------------

def test_the_real_table_and_views_give_no_finding(run_module):
    found = health_findings(_data(_read(run_module)))
    assert found == []


def test_power_comes_from_the_table_and_the_views(run_module):
    read = _read(run_module, common_3=COMMON_IDLE_LOW)
    powers = health.node_powers(read)
    # the table's Power(W) of NPU 0 is 102.8, -t power 103.5 (the higher wins), NPU 3's -t common 298.6
    assert powers['0'] == 103.5 and powers['3'] == 298.6 and len(powers) == 8


def test_an_npu_far_above_the_median_of_the_node_is_a_warning(run_module):
    found = health_findings(_data(_read(run_module, common_3=COMMON_IDLE_LOW)))
    assert _checks(found, 'power_vs_median', 'power') == [(3, 'power_vs_median', 298.6)]
    item = [f for f in found if f['check'] == 'power_vs_median'][0]
    assert item['severity'] == 'warn'
    assert item['msg'].startswith('node-07 NPU 3: power 298.6 W is ')
    assert 'median 103.5 W of the other 7 NPUs of the node (max_power_over_median_pct 30)' in item['msg']


def test_the_median_comparison_can_be_switched_off_or_widened(run_module):
    read = _read(run_module, common_3=COMMON_IDLE_LOW)
    assert _checks(health_findings(_data(read), {'max_power_over_median_pct': None}), 'power_vs_median') == []
    assert _checks(health_findings(_data(read), {'max_power_over_median_pct': 200}), 'power_vs_median') == []


def test_a_fixed_power_ceiling_fails(run_module):
    found = health_findings(_data(_read(run_module)), {'max_power_w': 105})
    # table Power(W): NPU 3 108.7, NPU 6 107.7, NPU 7 105.1; every -t power read 103.5
    assert _checks(found, 'power') == [(3, 'power', 108.7), (6, 'power', 107.7), (7, 'power', 105.1)]
    assert found[0]['severity'] == 'fail' and found[0]['msg'] == 'node-07 NPU 3: power 108.7 W is above 105 W (max_power_w)'


def test_pod_power_findings_compare_every_npu_of_the_pod():
    power = {'node01': {'0': 100.0, '1': 102.0}, 'node02': {'0': 101.0, '1': 180.0}, 'node03': None}
    found = pod_power_findings(power, 30)
    assert [(f['host'], f['device'], f['check']) for f in found] == [('node02', 1, 'power_vs_median')]
    assert 'of the other 3 NPUs of the PoD' in found[0]['msg']
    assert pod_power_findings({'node01': {'0': 100.0, '1': 100.0, '2': 300.0}}, 30) == []  # one node: its own check
    assert pod_power_findings(power, None) == []
    with pytest.raises(AnsibleFilterError):
        pod_power_findings(['node01'])


# ---- PCIe errors ------------------------------------------------------------------------------------------------------

def test_non_zero_pcie_error_counters_are_named_with_their_values(run_module):
    found = health_findings(_data(_read(run_module, pcie_err_5=PCIE_RX_RETRY)))
    assert _checks(found, 'pcie_errors', 'pcie_errors_growing') == [(5, 'pcie_errors', 991)]
    item = found[0]
    assert item['severity'] == 'warn'
    assert 'RX Error Count 991' in item['msg'] and 'Retry Count' not in item['msg']
    assert health_findings(_data(_read(run_module, pcie_err_5=PCIE_RX_RETRY)), {'max_pcie_errors': 1000}) == []


def test_pcie_counters_that_grow_between_the_two_reads_fail(run_module):
    first = _read(run_module, pcie_err_2=PCIE_RX_RETRY)
    grown = PCIE_RX_RETRY.replace('RX Error Count                 : 991', 'RX Error Count                 : 1003')
    grown = grown.replace('Retry Count                    : 415', 'Retry Count                    : 420')
    again = _read(run_module, subsets=('pcie_err',), pcie_err_2=grown)
    found = health_findings(_data(first, npu_again=again))
    growing = [f for f in found if f['check'] == 'pcie_errors_growing']
    assert [(f['device'], f['value'], f['severity']) for f in growing] == [(2, 17, 'fail')]
    assert growing[0]['msg'] == 'node-07 NPU 2: PCIe counters grew between two reads: RX Error Count 991 -> 1003, Retry Count 415 -> 420'


# ---- throttling -------------------------------------------------------------------------------------------------------

def test_an_idle_cool_npu_that_clocks_down_is_not_throttled(run_module):
    # the official doc sample: 100 of 1650 MHz at 0 % AI Core usage and 65 C
    found = health_findings(_data(_read(run_module, common_0=COMMON_IDLE_LOW)), {'max_power_over_median_pct': None})
    assert found == []


def test_a_reduced_frequency_while_hot_is_throttling(run_module):
    found = health_findings(_data(_read(run_module, common_0=COMMON_IDLE_LOW)),
                            {'throttle_temp_c': 60, 'max_power_over_median_pct': None})
    assert _checks(found, 'aicore_throttled') == [(0, 'aicore_throttled', 100)]
    assert found[0]['msg'] == ('node-07 NPU 0: AI Core runs at 100 MHz of its rated 1650 MHz (6 %, below 95 %) at 65 C '
                               '(throttle_temp_c 60 C): the NPU reduces its frequency (too hot or at its power limit); '
                               'check the cooling, the fans and the inlet temperature (npu-smi info -t common)')


def test_a_reduced_frequency_while_busy_is_throttling(run_module):
    busy = COMMON_IDLE_LOW.replace('Aicore Usage Rate(%)           : 0', 'Aicore Usage Rate(%)           : 87')
    found = health_findings(_data(_read(run_module, common_4=busy)), {'max_power_over_median_pct': None})
    assert _checks(found, 'aicore_throttled') == [(4, 'aicore_throttled', 100)]
    assert 'with the AI Cores 87 % busy' in found[0]['msg']


def test_the_frequency_margin_is_an_option(run_module):
    slight = COMMON_OK.replace('Aicore curFreq(MHZ)            : 1000', 'Aicore curFreq(MHZ)            : 960')
    hot = slight.replace('Temperature(C)                 : 46', 'Temperature(C)                 : 72')
    read = _read(run_module, common_1=hot)
    assert _checks(health_findings(_data(read)), 'aicore_throttled') == []   # 96 % of rated: within 95 %
    assert _checks(health_findings(_data(read), {'min_aicore_freq_pct': 99}), 'aicore_throttled') == [(1, 'aicore_throttled', 960)]


def test_a_temperature_alarm_of_the_health_view_is_named():
    entry = {'info': {'npu': 0, 'health': 'Warning', 'temp_c': 60},
             'health': {'health': 'Warning', 'error_codes': ['80E01801'],
                        'error_information': ['node type=SOC, sensor type=Temperature, event state=over temperature']}}
    found = health_findings({'host': H, 'npu': {'count': 1, 'devices': {'0': entry}}}, {'npus_per_node': 1})
    assert _checks(found, 'over_temperature', 'health') == [
        (0, 'health', 'Warning'), (0, 'over_temperature', 'node type=SOC, sensor type=Temperature, event state=over temperature')]


def test_other_health_texts_are_not_temperature_alarms(run_module):
    cmds = {(NPU_SMI, 'info'): (0, INFO_IDLE, '')}
    for dev in range(8):
        cmds[(NPU_SMI, 'info', '-t', 'health', '-i', str(dev))] = (0, HEALTH_ALARM, '')
    read = run_module(npu_info, {'gather_subset': ['health']}, cmds).result
    found = health_findings(_data(read))
    assert _checks(found, 'over_temperature') == [] and len(_checks(found, 'health')) == 8


# ---- container --------------------------------------------------------------------------------------------------------

def _tree(tmp_path, marker='.dockerenv', devices=range(8), management=True, driver=True):
    root = tmp_path / 'root'
    (root / 'dev').mkdir(parents=True)
    if marker:
        (root / marker).parent.mkdir(parents=True, exist_ok=True)
        (root / marker).write_text('')
    names = ['davinci%d' % dev for dev in devices] + (['davinci_manager', 'devmm_svm', 'hisi_hdc'] if management else [])
    for name in names:
        (root / 'dev' / name).write_text('')  # a regular file stands for the device node (mknod needs root)
    if driver:
        (root / 'usr/local/Ascend/driver').mkdir(parents=True)
        (root / 'usr/local/dcmi').mkdir(parents=True)
        (root / 'usr/local/bin').mkdir(parents=True)
        (root / 'usr/local/bin/npu-smi').write_text('')
        (root / 'etc').mkdir()
        (root / 'etc/ascend_install.info').write_text('')
    return str(root)


def test_outside_a_container_nothing_is_checked(tmp_path):
    root = _tree(tmp_path, marker=None, devices=[], management=False, driver=False)
    part = check_container(root, 'auto', 8)
    assert part['container'] is False and part['checked'] is False and part['missing_devices'] == []
    assert health_findings({'host': H, 'container': part}) == []


def test_container_evidence(tmp_path):
    assert container_evidence(_tree(tmp_path / 'a')) == '/.dockerenv'
    assert container_evidence(_tree(tmp_path / 'b', marker='run/.containerenv')) == '/run/.containerenv'
    root = _tree(tmp_path / 'c', marker=None)
    os.makedirs(os.path.join(root, 'proc/1'))
    with open(os.path.join(root, 'proc/1/cgroup'), 'w') as handle:
        handle.write('12:pids:/\n11:memory:/kubepods/burstable/pod1234/abcdef\n')
    assert container_evidence(root) == '/proc/1/cgroup: 11:memory:/kubepods/burstable/pod1234/abcdef'
    with open(os.path.join(root, 'proc/1/cgroup'), 'w') as handle:
        handle.write('0::/init.scope\n')
    assert container_evidence(root) is None


def test_a_container_missing_devices_and_driver_mounts(tmp_path):
    root = _tree(tmp_path, devices=range(7), driver=False)
    os.symlink('/dev/null', os.path.join(root, 'dev/davinci7'))  # a link is not followed, and not a device
    part = check_container(root, 'auto', 8)
    assert part['checked'] and part['evidence'] == '/.dockerenv'
    # regular files stand in for the device nodes here, so every one is "not a character device"
    assert part['devices']['/dev/davinci7'] == 'link' and part['devices']['/dev/davinci0'] == 'file'
    found = health_findings({'host': H, 'container': part})
    assert [(f['check'], len(f['value'])) for f in found] == [('container_device', 11), ('container_mount', 4)]
    devices, mounts = found
    assert devices['value'][7] == '/dev/davinci7' and mounts['value'] == [
        '/usr/local/Ascend/driver', '/usr/local/dcmi', '/usr/local/bin/npu-smi', '/etc/ascend_install.info']
    assert devices['msg'].startswith('node-07: /dev/davinci0 (a file, not a character device), ')
    assert '/dev/davinci7 (a link, not a character device)' in devices['msg']
    assert devices['msg'].endswith('are missing in a container (/.dockerenv): start the container with --device=/dev/davinci0 '
                                   '--device=/dev/davinci1 --device=/dev/davinci2 --device=/dev/davinci3 --device=/dev/davinci4 '
                                   '--device=/dev/davinci5 --device=/dev/davinci6 --device=/dev/davinci7 '
                                   '--device=/dev/davinci_manager --device=/dev/devmm_svm --device=/dev/hisi_hdc (an NPU cannot '
                                   'be used without them)')
    assert mounts['msg'] == ('node-07: /usr/local/Ascend/driver, /usr/local/dcmi, /usr/local/bin/npu-smi, '
                             '/etc/ascend_install.info are missing in a container (/.dockerenv): start the container with '
                             '-v /usr/local/Ascend/driver:/usr/local/Ascend/driver:ro -v /usr/local/dcmi:/usr/local/dcmi:ro '
                             '-v /usr/local/bin/npu-smi:/usr/local/bin/npu-smi:ro '
                             '-v /etc/ascend_install.info:/etc/ascend_install.info:ro')
    # npu-smi was not read here: nothing says the NPUs are unusable, so the missing mounts are warnings
    assert all(f['severity'] == 'warn' and f['device'] is None for f in found)


def test_missing_mounts_fail_when_the_npus_are_not_usable(tmp_path, run_module):
    part = check_container(_tree(tmp_path, devices=range(7)), 'auto', 8)
    seven = INFO_IDLE.split('| 7     910B3')[0]  # the real table cut before NPU 7's rows: npu-smi lists 7 NPUs
    cmds = {(NPU_SMI, 'info'): (0, seven, '')}
    read = run_module(npu_info, {'gather_subset': []}, cmds).result
    found = health_findings({'host': H, 'npu': read, 'container': part})
    checks = [(f['check'], f['severity']) for f in found]
    assert ('npu_count', 'fail') in checks and ('container_device', 'fail') in checks
    assert found[0]['check'] == 'container_device'  # the cause comes first
    healthy = run_module(npu_info, {'gather_subset': []}, {(NPU_SMI, 'info'): (0, INFO_IDLE, '')}).result
    assert set(f['severity'] for f in health_findings({'host': H, 'npu': healthy, 'container': part})) == {'warn'}


def test_a_complete_container_has_only_device_nodes_to_show(tmp_path):
    root = _tree(tmp_path)
    part = check_container(root, 'auto', 8)
    assert part['missing_driver_paths'] == []
    assert part['driver_paths']['/usr/local/dcmi'] == 'dir' and part['driver_paths']['/usr/local/bin/npu-smi'] == 'file'
    part = check_container(root, 'auto', 2)
    assert sorted(part['devices']) == ['/dev/davinci0', '/dev/davinci1', '/dev/davinci_manager', '/dev/devmm_svm', '/dev/hisi_hdc']


def test_container_modes(tmp_path):
    bare = _tree(tmp_path, marker=None, devices=[], management=False, driver=False)
    expected = ['/dev/davinci0', '/dev/davinci_manager', '/dev/devmm_svm', '/dev/hisi_hdc']
    assert check_container(bare, 'always', 1)['missing_devices'] == expected
    inside = _tree(tmp_path / 'x')
    assert check_container(inside, 'never', 8) == {
        'container': False, 'evidence': None, 'checked': False, 'root': inside,
        'devices': {}, 'driver_paths': {}, 'missing_devices': [], 'missing_driver_paths': []}


def test_the_container_part_counts_the_npus_the_npu_part_found():
    found = {'npu': {'devices': dict((str(dev), {}) for dev in range(4))}}
    assert domain.container_npus({'container_npus': None}, found) == 4
    assert domain.container_npus({'container_npus': 8}, found) == 8
    assert domain.container_npus({}, {}) == 8


# ---- the second read --------------------------------------------------------------------------------------------------

def test_the_second_read_takes_the_pcie_counters_when_the_first_had_them(run_module):
    assert domain.again_views({'npu_subset': ['board', 'ecc', 'pcie_err']}) == {'ecc', 'pcie_err'}
    assert domain.again_views({'npu_subset': ['board', 'ecc']}) == {'ecc'}
    read = _read(run_module, pcie_err_5=PCIE_RX_RETRY)
    assert domain.ecc_again_devices({'npu': read}) == [5]


# ---- a view the driver does not offer ---------------------------------------------------------------------------------

NOT_SUPPORTED = sample('npu_smi/errors/mc_910a_invalid_card')


def test_a_view_that_fails_is_a_warning_and_the_other_views_still_count(run_module):
    cmds = {(NPU_SMI, 'info'): (0, INFO_IDLE, '')}
    for dev in range(8):
        cmds[(NPU_SMI, 'info', '-t', 'pcie-err', '-i', str(dev))] = (0, PCIE_ZERO, '') if dev else (248, NOT_SUPPORTED, '')
        cmds[(NPU_SMI, 'info', '-t', 'common', '-i', str(dev))] = (0, COMMON_OK, '')
    res = run_module(npu_info, {'gather_subset': ['common', 'pcie_err']}, cmds)
    assert not res.failed, res
    read = res.result
    assert [(e['device'], e['query'], e['rc']) for e in read['errors']] == [(0, 'pcie_err', 248)]
    assert 'pcie_err' not in read['devices']['0'] and 'common' in read['devices']['0']
    assert read['summary']['all_healthy'] is True and read['summary']['unhealthy'] == []
    found = health_findings(_data(read))
    assert [(f['device'], f['check'], f['severity']) for f in found] == [(0, 'npu_pcie_err', 'warn')]
    assert found[0]['msg'].startswith('node-07 NPU 0: ') and found[0]['msg'].endswith(
        '; the checks that need it are left out for this NPU')
    assert 'Invalid card id' in found[0]['msg']


def test_a_failing_view_that_is_not_tolerated_still_fails_the_read(run_module):
    cmds = {(NPU_SMI, 'info'): (0, INFO_IDLE, '')}
    for dev in range(8):
        cmds[(NPU_SMI, 'info', '-t', 'power', '-i', str(dev))] = (0, POWER, '') if dev else (248, NOT_SUPPORTED, '')
    assert run_module(npu_info, {'gather_subset': ['power']}, cmds).failed
