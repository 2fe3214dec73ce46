"""host_info with the host files in tmp_path (real /proc, /etc and /sys samples) and a scripted lspci."""

from __future__ import annotations

import os
import resource

import pytest

from ansible_collections.npuops.ascend.plugins.modules import host_info
from ansible_collections.npuops.ascend.plugins.module_utils._domain import host_info as _host_info
from ansible_collections.npuops.ascend.tests.unit.plugins.modules.conftest import TIMEOUT, fake_host_files, sample

LSPCI = '/usr/sbin/lspci'
ARGV = (LSPCI, '-D', '-n', '-d', '19e5:')

# Real samples (tests/fixtures/captures/host_*.txt, proc_meminfo_swappiness_thp.txt).
MEMINFO = sample('host/meminfo/aarch64_64k_full_4_18')                 # 0 huge pages of 512 MB
MEMINFO_HUGE = sample('host/meminfo/aarch64_64k_grep_huge_64_pages')   # grep Huge: 64 pages, no MemTotal
THP = sample('host/thp/netcore_enabled_never')                          # always madvise [never]
LSPCI_910C = sample('host/lspci/mock_910c_n')                          # one 910C, -D -n
LSPCI_310 = sample('host/lspci/ascend310_n')                           # one 310, -n without a domain
LSPCI_NONE = sample('host/lspci/vm_D_n_d19e5_empty')                    # -D -n -d 19e5: on a host without Huawei devices
LSPCI_NAMES = sample('host/lspci/atlas_a2_kunpeng_full')               # plain lspci of an 8 x d802 Kunpeng node

# pciutils (lib/init.c) when no access method to the PCI configuration works, exit code 1
NO_ACCESS = (1, '', 'lspci: Cannot find any working access method.\n')

NO_LSPCI = ('node-07: lspci not found: looked in /usr/sbin, /sbin, /usr/local/Ascend/driver/tools, /usr/local/sbin, '
            '/usr/local/bin and PATH. It comes with the pciutils package; install it or set the path option of the module.')


@pytest.fixture
def host(tmp_path, monkeypatch):
    """The host files of host_info in tmp_path, filled with real samples; returns their paths by FILES key."""
    return fake_host_files(tmp_path, monkeypatch, MEMINFO)


def sysfs(root, devices):
    """A /sys/bus/pci/devices tree: {address: (vendor, device, class, revision)} as the kernel prints them."""
    for address, ids in devices.items():
        folder = root / address
        folder.mkdir(parents=True)
        for leaf, value in zip(('vendor', 'device', 'class', 'revision'), ids):
            if value is not None:
                (folder / leaf).write_text(value + '\n')
    return str(root)


# A node with the d802 functions of the Atlas lspci samples, as sysfs holds their ids.
SYSFS_NODE = {
    '0000:00:00.0': ('0x19e5', '0xa120', '0x060400', '0x30'),    # a HiSilicon root port: Huawei, but a PCI bridge
    '0000:01:00.0': ('0x19e5', '0xd802', '0x120000', '0x20'),
    '0000:02:00.0': ('0x19e5', '0xd802', '0x120000', '0x20'),
    '0000:81:00.0': ('0x1e3b', '0x1515', '0x010802', '0x00'),    # the DERA NVMe controller of the full lspci sample
    '0000:c1:00.0': ('0x19E5', '0xD802', '0x120000', '0x20'),    # upper-case hex is read the same
    '0000:c2:00.0': ('0x19e5', '0xd802', '0x120000', None),      # no revision file: skipped
}


def test_exact_argv_and_result_shape(run_module, host):
    res = run_module(host_info, {}, {ARGV: (0, LSPCI_910C, '')}, bin_paths={'lspci': LSPCI})
    assert not res.failed, res
    assert res.calls == [list(ARGV)]
    assert res.warnings == []
    assert res.result == {
        'changed': False,
        'count': 1,
        'devices': {'0000:81:00.0': {'class': '1200', 'vendor': '19e5', 'device': 'd803', 'revision': '20'}},
        'errors': [],
        'os': {'id': 'openEuler', 'version_id': '22.03', 'pretty_name': 'openEuler 22.03 (LTS-SP1)',
               'kernel': '5.10.0-136.12.0.86.oe2203sp1.aarch64', 'machine': 'aarch64'},
        'memory': {'mem_total_kb': 265856640, 'mem_available_kb': 331200, 'hugepages_total': 0, 'hugepages_free': 0,
                   'hugepagesize_kb': 524288},
        'swappiness': 10,
        'transparent_hugepage': 'never',
        'nofile': {'soft': 65535, 'hard': 65535},
    }


def test_an_address_without_domain_gets_0000(run_module, host):
    res = run_module(host_info, {}, {ARGV: (0, LSPCI_310, '')}, bin_paths={'lspci': LSPCI})
    assert res.result['devices'] == {'0000:0c:00.0': {'class': '1200', 'vendor': '19e5', 'device': 'd100', 'revision': '20'}}


def test_no_npu_on_pcie(run_module, host):
    res = run_module(host_info, {}, {ARGV: (0, LSPCI_NONE, '')}, bin_paths={'lspci': LSPCI})
    assert not res.failed, res
    assert (res.result['count'], res.result['devices']) == (0, {})


def test_named_lspci_output_counts_the_processing_accelerators_only(run_module, host):
    """Output in the plain layout has no class code: the class name tells the NPUs from the other devices."""
    res = run_module(host_info, {}, {ARGV: (0, LSPCI_NAMES, '')}, bin_paths={'lspci': LSPCI})
    assert not res.failed, res
    assert res.result['count'] == 8
    assert sorted(res.result['devices']) == ['0000:08:00.0', '0000:0c:00.0', '0000:42:00.0', '0000:46:00.0',
                                             '0000:96:00.0', '0000:ab:00.0', '0000:c1:00.0', '0000:d6:00.0']
    assert res.result['devices']['0000:c1:00.0'] == {'class': None, 'vendor': None, 'device': None, 'revision': '20'}


def test_huge_pages_and_thp_of_other_samples(run_module, host, tmp_path):
    (tmp_path / 'meminfo').write_text(MEMINFO_HUGE)
    (tmp_path / 'thp').write_text(sample('host/thp/vm_enabled_madvise'))
    (tmp_path / 'os_release').write_text(sample('host/os_release/debian_12'))
    res = run_module(host_info, {}, {ARGV: (0, LSPCI_NONE, '')}, bin_paths={'lspci': LSPCI})
    assert res.result['memory'] == {'mem_total_kb': None, 'mem_available_kb': None, 'hugepages_total': 64,
                                    'hugepages_free': 64, 'hugepagesize_kb': 524288}
    assert res.result['transparent_hugepage'] == 'madvise'
    assert (res.result['os']['id'], res.result['os']['version_id']) == ('debian', '12')
    assert res.result['errors'] == []


def test_unlimited_nofile_is_null(run_module, host, monkeypatch):
    monkeypatch.setattr(resource, 'getrlimit', lambda which: (1024, resource.RLIM_INFINITY))
    res = run_module(host_info, {}, {ARGV: (0, LSPCI_NONE, '')}, bin_paths={'lspci': LSPCI})
    assert res.result['nofile'] == {'soft': 1024, 'hard': None}


def test_a_missing_file_is_null_and_an_error_not_a_failure(run_module, host, tmp_path):
    os.unlink(host['thp'])
    res = run_module(host_info, {}, {ARGV: (0, LSPCI_910C, '')}, bin_paths={'lspci': LSPCI})
    assert not res.failed, res
    assert res.result['transparent_hugepage'] is None
    assert res.result['errors'] == [{
        'what': 'thp', 'path': host['thp'],
        'msg': "node-07: %s could not be read: [Errno 2] No such file or directory: '%s'" % (host['thp'], host['thp']),
    }]
    # everything else is still read
    assert res.result['swappiness'] == 10
    assert res.result['memory']['mem_total_kb'] == 265856640
    assert res.result['count'] == 1


def test_missing_os_release_and_meminfo_give_null_values(run_module, host):
    os.unlink(host['os_release'])
    os.unlink(host['meminfo'])
    res = run_module(host_info, {}, {ARGV: (0, LSPCI_910C, '')}, bin_paths={'lspci': LSPCI})
    assert not res.failed, res
    assert [error['what'] for error in res.result['errors']] == ['os_release', 'meminfo']
    assert (res.result['os']['id'], res.result['os']['pretty_name']) == (None, None)
    assert res.result['os']['kernel'] == '5.10.0-136.12.0.86.oe2203sp1.aarch64'
    assert set(res.result['memory'].values()) == {None}


def test_unreadable_swappiness_is_an_error_entry(run_module, host, tmp_path):
    (tmp_path / 'swappiness').write_text('')
    res = run_module(host_info, {}, {ARGV: (0, LSPCI_910C, '')}, bin_paths={'lspci': LSPCI})
    assert not res.failed, res
    assert res.result['swappiness'] is None
    assert res.result['errors'] == [{
        'what': 'swappiness', 'path': host['swappiness'],
        'msg': "node-07: %s could not be read: invalid literal for int() with base 10: ''" % host['swappiness'],
    }]


def test_unknown_line_in_a_file_is_a_warning(run_module, host, tmp_path):
    (tmp_path / 'thp').write_text(THP + 'garbage [x] [y]\n')
    res = run_module(host_info, {}, {ARGV: (0, LSPCI_910C, '')}, bin_paths={'lspci': LSPCI})
    assert res.result['transparent_hugepage'] == 'never'
    assert res.warnings == [
        "1 line(s) of the output of cat %s were not understood: 'garbage [x] [y]'. The values read from them are missing; "
        "please report this with your driver version." % host['thp']]


def test_without_lspci_the_npus_come_from_sysfs_with_a_warning(run_module, host, tmp_path, monkeypatch):
    root = sysfs(tmp_path / 'devices', SYSFS_NODE)
    monkeypatch.setattr(_host_info, 'PCI_DEVICES', root)
    res = run_module(host_info, {}, {})
    assert not res.failed, res
    assert res.calls == []
    assert res.warnings == [NO_LSPCI + ' Reading the NPUs from %s instead.' % root]
    assert res.result['count'] == 3
    assert res.result['devices'] == {
        '0000:01:00.0': {'class': '1200', 'vendor': '19e5', 'device': 'd802', 'revision': '20'},
        '0000:02:00.0': {'class': '1200', 'vendor': '19e5', 'device': 'd802', 'revision': '20'},
        '0000:c1:00.0': {'class': '1200', 'vendor': '19e5', 'device': 'd802', 'revision': '20'},
    }
    assert res.result['errors'] == []


def test_sysfs_fallback_without_sysfs_is_an_error_entry(run_module, host):
    res = run_module(host_info, {}, {})
    assert not res.failed, res
    missing = _host_info.PCI_DEVICES
    assert res.result['count'] == 0
    assert res.result['errors'] == [{
        'what': 'pci', 'path': missing,
        'msg': "node-07: %s could not be read: [Errno 2] No such file or directory: '%s'" % (missing, missing),
    }]


def test_failing_lspci_falls_back_to_sysfs(run_module, host, tmp_path, monkeypatch):
    root = sysfs(tmp_path / 'devices', SYSFS_NODE)
    monkeypatch.setattr(_host_info, 'PCI_DEVICES', root)
    res = run_module(host_info, {}, {ARGV: NO_ACCESS}, bin_paths={'lspci': LSPCI})
    assert not res.failed, res
    assert res.calls == [list(ARGV)]
    assert res.warnings == [
        'node-07: /usr/sbin/lspci -D -n -d 19e5: failed (rc=1): lspci: Cannot find any working access method. '
        'Run lspci on the host to see the error. Reading the NPUs from %s instead.' % root]
    assert res.result['count'] == 3


def executable(path):
    path.write_text('#!/bin/sh\n')
    path.chmod(0o755)
    return str(path)


def test_explicit_lspci_path_is_used(run_module, host, tmp_path):
    lspci = executable(tmp_path / 'lspci')
    res = run_module(host_info, {'lspci_path': str(tmp_path)}, {(lspci, '-D', '-n', '-d', '19e5:'): (0, LSPCI_910C, '')})
    assert not res.failed, res
    assert res.calls == [[lspci, '-D', '-n', '-d', '19e5:']]
    assert res.result['count'] == 1


def test_explicit_wrong_lspci_path_fails_naming_it(run_module, host, tmp_path):
    wrong = str(tmp_path / 'bin' / 'lspci')
    res = run_module(host_info, {'lspci_path': wrong}, {}, bin_paths={'lspci': LSPCI})
    assert res.failed
    assert res.result['msg'] == (
        'node-07: lspci not found at %s (set by the module option): no executable file there. Point the option at the lspci '
        'binary or leave it unset to search /usr/local/Ascend/driver/tools, /usr/local/sbin, /usr/local/bin and PATH.' % wrong)
    assert res.calls == []


def test_explicit_lspci_that_fails_is_a_failure_with_the_tool_words(run_module, host, tmp_path):
    lspci = executable(tmp_path / 'lspci')
    argv = (lspci, '-D', '-n', '-d', '19e5:')
    res = run_module(host_info, {'lspci_path': lspci}, {argv: NO_ACCESS})
    assert res.failed
    assert res.result['msg'] == ('node-07: %s -D -n -d 19e5: failed (rc=1): lspci: Cannot find any working access method. '
                                 'Run lspci on the host to see the error.' % lspci)
    assert (res.result['cmd'], res.result['rc']) == ('%s -D -n -d 19e5:' % lspci, 1)
    assert res.result['stderr'] == 'lspci: Cannot find any working access method.\n'


def test_other_vendor_id(run_module, host):
    argv = (LSPCI, '-D', '-n', '-d', '1af4:')
    res = run_module(host_info, {'pci_vendor': '1AF4'}, {argv: (0, LSPCI_NONE, '')}, bin_paths={'lspci': LSPCI})
    assert not res.failed, res
    assert res.calls == [list(argv)]


@pytest.mark.parametrize('vendor', ['19e', 'huawei', '19e5:', '0x19e5'])
def test_non_hex_vendor_is_refused_before_any_call(run_module, host, vendor):
    res = run_module(host_info, {'pci_vendor': vendor}, {}, bin_paths={'lspci': LSPCI})
    assert res.failed
    assert res.result['msg'] == 'host_info: pci_vendor must be four hex digits (got %s); Huawei is 19e5.' % vendor
    assert res.calls == []


def test_check_mode_reads_the_same(run_module, host):
    cmds = {ARGV: (0, LSPCI_910C, '')}
    normal = run_module(host_info, {}, cmds, bin_paths={'lspci': LSPCI})
    checked = run_module(host_info, {}, cmds, bin_paths={'lspci': LSPCI}, check_mode=True)
    assert not checked.failed, checked
    assert checked.calls == normal.calls == [list(ARGV)]
    assert checked.result == normal.result
    assert checked.result['changed'] is False


def test_timeout_wraps_lspci(run_module, host):
    cmds = {(TIMEOUT, '-k', '5', '7') + ARGV: (0, LSPCI_910C, '')}
    res = run_module(host_info, {'timeout': 7}, cmds, bin_paths={'lspci': LSPCI, 'timeout': TIMEOUT})
    assert not res.failed, res
    assert res.calls == [[TIMEOUT, '-k', '5', '7'] + list(ARGV)]
    assert res.result['count'] == 1
