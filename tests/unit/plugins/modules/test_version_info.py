"""version_info on version files in tmp_path (real samples), a scripted or a real Python, and env files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib import metadata

import pytest

from ansible_collections.npuops.ascend.plugins.modules import version_info
from ansible_collections.npuops.ascend.tests.unit.plugins.modules.conftest import TIMEOUT, sample

# Real samples (tests/fixtures/captures/version_files.txt): a 23.0.7 driver with its 7.1.0.11.220 firmware and CANN 8.0.0.
DRIVER = sample('versions/version_info/mc_driver_23.0.7')
DRIVER_24 = sample('versions/version_info/mc_doc_driver_24.1.rc1')     # no package_version line
FIRMWARE = sample('versions/version_info/mc_firmware_7.1.0.11.220')
INSTALL = sample('versions/install_info/vllm198_toolkit_8.0.0')
INSTALL_NNAE = sample('versions/install_info/mc_nnae_8.0.RC3')           # compatible_version=[C13,C19],[C30]
VERSION_CFG = sample('versions/version_cfg/notes_cann_8.0.0_full')
VERSION_CFG_RC3 = sample('versions/version_cfg/lab_guide_cann_8.0.RC3_running_only')
# Real samples (tests/fixtures/captures/version_files_stack.txt): the kernels and MindIE of the mindie:2.1.RC1 image, and
# the kernel release of an openEuler 22.03 node.
KERNELS = sample('versions/opp_kernel_info/mindie_image_kernels_8.2.RC1')
KERNELS_83 = sample('versions/opp_kernel_info/tritonjit_kernels_8.3.RC1.alpha001')
MINDIE = sample('versions/mindie_info/mindie_image_2.1.RC1')
OSRELEASE = sample('versions/kernel_release/openeuler_2203_5.10.0')

PYTHON = '/opt/venvs/train/bin/python3'
PACKAGES_ARGV = (PYTHON, '-c', version_info.PACKAGES_SCRIPT, 'torch', 'torch_npu')
PACKAGES_OUT = (0, '{"python": "3.11.6", "packages": {"torch": "2.1.0", "torch_npu": "2.1.0.post10"}}\n', '')


@pytest.fixture
def stack(tmp_path, monkeypatch):
    """driver, firmware and toolkit directories in tmp_path; the module options that point at them."""
    for name, text in (('driver/version.info', DRIVER), ('firmware/version.info', FIRMWARE),
                       ('toolkit/aarch64-linux/ascend_toolkit_install.info', INSTALL), ('toolkit/version.cfg', VERSION_CFG),
                       ('toolkit/opp_kernel/version.info', KERNELS), ('osrelease', OSRELEASE)):
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    monkeypatch.setattr(version_info, 'OSRELEASE', str(tmp_path / 'osrelease'))
    for key in list(os.environ):
        if key.startswith(('HCCL_', 'ASCEND_', 'TASK_QUEUE_', 'PYTORCH_NPU_')):
            monkeypatch.delenv(key)
    return {'driver_path': str(tmp_path / 'driver'), 'firmware_path': str(tmp_path / 'firmware'),
            'toolkit_path': str(tmp_path / 'toolkit'), 'mindie_path': str(tmp_path / 'mindie'), 'python': PYTHON,
            'packages': ['torch', 'torch_npu']}


def test_family_of_an_innerversion():
    assert version_info.family('V100R001C15SPC012B220') == 'V100R001C15'
    assert version_info.family('V100R001C13B222') == 'V100R001C13'
    assert version_info.family('7.1.0.11.220') is None
    assert version_info.family(None) is None


def test_compatible_version_groups_are_flattened():
    assert version_info.flat_groups([['V100R001C13', 'V100R001C19'], ['V100R001C30']]) == ['V100R001C13', 'V100R001C19', 'V100R001C30']
    assert version_info.flat_groups([['V100R001C15SPC012B220'], ['V100R001C15']]) == ['V100R001C15']
    assert version_info.flat_groups(None) == []


def test_exact_argv_and_result(run_module, stack):
    res = run_module(version_info, stack, {PACKAGES_ARGV: PACKAGES_OUT})
    assert not res.failed, res
    assert res.calls == [list(PACKAGES_ARGV)]
    assert res.warnings == []
    result = res.result
    assert (result['changed'], result['count'], result['devices'], result['errors']) == (False, 0, {}, [])
    assert result['driver'] == {
        'version': '23.0.7', 'innerversion': 'V100R001C15SPC012B220', 'family': 'V100R001C15',
        'compatible_version_fw': [['7.0.0', '7.1.99']],
        'compatible_version': ['V100R001C29', 'V100R001C30', 'V100R001C13', 'V100R001C15'],
    }
    assert result['firmware'] == {'version': '7.1.0.11.220', 'innerversion': None, 'family': None}
    assert result['cann'] == {
        'version': '8.0.0', 'innerversion': 'V100R001C20SPC001B251', 'family': 'V100R001C20',
        'compatible_version': ['V100R001C15', 'V100R001C17', 'V100R001C18', 'V100R001C19', 'V100R001C20'],
        'components': {name: '8.0.0' for name in ('runtime', 'compiler', 'hccl', 'opp', 'toolkit', 'aoe', 'ncs')},
    }
    assert result['packages'] == {'torch': '2.1.0', 'torch_npu': '2.1.0.post10'}
    assert result['python'] == '3.11.6'
    assert result['cann_kernels'] == {'release': '8.2.RC1', 'version': '8.2.0.0.201', 'timestamp': '20250724_194044950',
                                      'required_toolkit': '>=7.6, <=8.2'}
    assert result['mindie'] is None
    assert result['kernel'] == {'release': '5.10.0-60.18.0.50.0e2203.aarch64', 'numbers': [5, 10, 0]}
    assert result['environment'] == {}
    assert result['fingerprint'] == {'driver': '23.0.7', 'firmware': '7.1.0.11.220', 'cann': '8.0.0', 'cann_kernels': '8.2.RC1',
                                     'mindie': None, 'kernel': '5.10.0-60.18.0.50.0e2203.aarch64', 'python': '3.11.6',
                                     'package:torch': '2.1.0', 'package:torch_npu': '2.1.0.post10'}


def test_the_default_packages_are_the_frameworks_and_engines_of_the_method(run_module, stack):
    args = dict(stack)
    del args['packages']
    names = ('torch', 'torch_npu', 'mindspeed', 'vllm', 'vllm_ascend')
    out = {'python': '3.10.14', 'packages': {'torch': '2.5.1', 'torch_npu': '2.5.1.post1', 'mindspeed': None,
                                             'vllm': '0.9.1+empty', 'vllm_ascend': '0.9.1'}}
    res = run_module(version_info, args, {(PYTHON, '-c', version_info.PACKAGES_SCRIPT) + names: (0, json.dumps(out) + '\n', '')})
    assert not res.failed, res
    assert res.result['packages'] == out['packages']
    assert res.result['fingerprint']['package:vllm_ascend'] == '0.9.1'
    assert res.result['fingerprint']['python'] == '3.10.14'


def test_mindie_version_info_and_the_kernels_of_another_release(run_module, stack, tmp_path):
    (tmp_path / 'mindie').mkdir()
    (tmp_path / 'mindie' / 'version.info').write_text(MINDIE)
    (tmp_path / 'toolkit' / 'opp_kernel' / 'version.info').write_text(KERNELS_83)
    res = run_module(version_info, stack, {PACKAGES_ARGV: PACKAGES_OUT})
    assert not res.failed, res
    assert res.result['mindie'] == {'version': '2.1.RC1.B152', 'release': '2.1.RC1', 'components': {
        'mindie-rt': '2.1.RC1.B152', 'mindie-torch': '2.1.RC1.B152', 'mindie-service': '2.1.RC1.B152',
        'mindie-llm': '2.1.RC1.B152', 'mindie-sd': '2.1.RC1.B152'}}
    assert res.result['fingerprint']['mindie'] == '2.1.RC1.B152'
    assert res.result['cann_kernels']['release'] == '8.3.RC1.alpha001'
    assert res.result['cann_kernels']['version'] == '8.3.T5.0.B028'
    assert res.result['errors'] == [] and res.warnings == []


def test_missing_kernels_next_to_a_toolkit_is_an_error_and_a_null(run_module, stack, tmp_path):
    os.unlink(str(tmp_path / 'toolkit' / 'opp_kernel' / 'version.info'))
    res = run_module(version_info, stack, {PACKAGES_ARGV: PACKAGES_OUT})
    path = str(tmp_path / 'toolkit' / 'opp_kernel' / 'version.info')
    assert res.result['cann_kernels'] is None and res.result['fingerprint']['cann_kernels'] is None
    assert [(e['what'], e['path']) for e in res.result['errors']] == [('cann_kernels', path)]


def test_the_kernel_release_falls_back_to_uname(run_module, stack, monkeypatch, tmp_path):
    monkeypatch.setattr(version_info, 'OSRELEASE', str(tmp_path / 'no-such-osrelease'))
    monkeypatch.setattr(version_info.platform, 'release', lambda: '4.19.90-2112.8.0.0131.oe1.aarch64')
    res = run_module(version_info, stack, {PACKAGES_ARGV: PACKAGES_OUT})
    assert res.result['kernel'] == {'release': '4.19.90-2112.8.0.0131.oe1.aarch64', 'numbers': [4, 19, 90]}
    assert res.result['errors'] == []


def test_version_from_package_version_and_grouped_compatible_versions(run_module, stack, tmp_path):
    (tmp_path / 'driver' / 'version.info').write_text(DRIVER_24)
    (tmp_path / 'toolkit' / 'aarch64-linux' / 'ascend_toolkit_install.info').write_text(INSTALL_NNAE)
    (tmp_path / 'toolkit' / 'version.cfg').write_text(VERSION_CFG_RC3)
    res = run_module(version_info, stack, {PACKAGES_ARGV: PACKAGES_OUT})
    assert res.result['driver']['version'] == '24.1.rc1'
    assert res.result['driver']['family'] == 'V100R001C15'
    assert res.result['cann']['compatible_version'] == ['V100R001C13', 'V100R001C19', 'V100R001C30']
    assert res.result['cann']['family'] == 'V100R001C19'
    assert res.result['cann']['components']['opp_kernel'] == '8.0.RC3'


def test_missing_files_are_errors_not_failures(run_module, stack, tmp_path):
    empty = tmp_path / 'empty'
    empty.mkdir()
    args = dict(stack, driver_path=str(empty), firmware_path=str(empty), toolkit_path=str(empty))
    res = run_module(version_info, args, {PACKAGES_ARGV: PACKAGES_OUT})
    assert not res.failed, res
    assert (res.result['driver'], res.result['firmware'], res.result['cann'], res.result['cann_kernels']) == (None, None, None, None)
    info = os.path.join(str(empty), 'version.info')
    assert res.result['errors'] == [
        {'what': 'driver', 'path': info, 'msg': "node-07: %s could not be read: [Errno 2] No such file or directory: '%s'" % (info, info)},
        {'what': 'firmware', 'path': info, 'msg': "node-07: %s could not be read: [Errno 2] No such file or directory: '%s'" % (info, info)},
        {'what': 'cann', 'path': os.path.join(str(empty), '<arch>-linux', 'ascend_toolkit_install.info'),
         'msg': 'node-07: no ascend_toolkit_install.info under %s' % empty},
    ]
    assert res.result['fingerprint'] == {'driver': None, 'firmware': None, 'cann': None, 'cann_kernels': None, 'mindie': None,
                                         'kernel': '5.10.0-60.18.0.50.0e2203.aarch64', 'python': '3.11.6',
                                         'package:torch': '2.1.0', 'package:torch_npu': '2.1.0.post10'}


def test_cann_from_version_cfg_alone(run_module, stack, tmp_path):
    os.unlink(str(tmp_path / 'toolkit' / 'aarch64-linux' / 'ascend_toolkit_install.info'))
    res = run_module(version_info, stack, {PACKAGES_ARGV: PACKAGES_OUT})
    assert res.result['cann']['version'] == '8.0.0'
    assert (res.result['cann']['innerversion'], res.result['cann']['family'], res.result['cann']['compatible_version']) == (None, None, [])
    assert [error['what'] for error in res.result['errors']] == ['cann']


def test_a_python_that_fails_gives_a_warning_and_nulls(run_module, stack):
    traceback = ('Traceback (most recent call last):\n  File "<string>", line 2, in <module>\n'
                 "ModuleNotFoundError: No module named 'importlib.metadata'\n")
    res = run_module(version_info, stack, {PACKAGES_ARGV: (1, '', traceback)})
    assert not res.failed, res
    assert res.result['packages'] == {'torch': None, 'torch_npu': None}
    assert res.result['fingerprint']['package:torch'] is None
    assert res.result['python'] is None
    assert res.warnings == [
        'node-07: the Python version and package versions could not be read with %s -c ... (rc=1): %s' % (PYTHON, traceback.strip())]


@pytest.mark.parametrize('out', ['Python 2.7.18\n', '["torch"]\n', '', '{"torch": "2.1.0", "torch_npu": "2.1.0"}\n'])
def test_output_that_is_not_the_json_object_gives_a_warning_and_nulls(run_module, stack, out):
    res = run_module(version_info, stack, {PACKAGES_ARGV: (0, out, '')})
    assert not res.failed, res
    assert res.result['packages'] == {'torch': None, 'torch_npu': None}
    assert res.warnings == ['node-07: the Python version and package versions could not be read with %s -c ... (rc=0): %s' % (PYTHON, out.strip())]


def test_a_missing_python_gives_a_warning_and_nulls(run_module, stack):
    gone = FileNotFoundError(2, 'No such file or directory', PYTHON)
    res = run_module(version_info, stack, {PACKAGES_ARGV: gone})
    assert not res.failed, res
    assert res.result['packages'] == {'torch': None, 'torch_npu': None}
    assert res.warnings == ["node-07: the Python version and package versions could not be read with %s -c ... (rc=None): "
                            "[Errno 2] No such file or directory: '%s'" % (PYTHON, PYTHON)]


def test_a_python_that_hangs_gives_a_warning_and_nulls(run_module, stack):
    res = run_module(version_info, dict(stack, timeout=20), {(TIMEOUT, '-k', '5', '20') + PACKAGES_ARGV: (124, '', '')},
                     bin_paths={'timeout': TIMEOUT})
    assert not res.failed, res
    assert res.result['packages'] == {'torch': None, 'torch_npu': None}
    assert res.warnings == ['node-07: the Python version and package versions could not be read with %s -c ... (rc=None): timed out after 20 s' % PYTHON]


def test_no_packages_still_reads_the_python_version_of_the_environment(run_module, stack):
    argv = (PYTHON, '-c', version_info.PACKAGES_SCRIPT)
    res = run_module(version_info, dict(stack, packages=[]), {argv: (0, '{"python": "3.9.9", "packages": {}}\n', '')})
    assert res.calls == [list(argv)]
    assert res.result['packages'] == {}
    assert res.result['python'] == '3.9.9'
    assert not any(key.startswith('package:') for key in res.result['fingerprint'])


def test_no_packages_and_no_python_runs_nothing(run_module, stack):
    args = dict(stack, packages=[])
    del args['python']
    res = run_module(version_info, args, {})
    assert res.calls == []
    assert res.result['python'] == '%d.%d.%d' % sys.version_info[:3]


def test_the_real_script_reads_installed_packages_and_null_for_absent_ones(run_module, stack, tmp_path):
    # one more installed distribution, with a dashed name, on the path of the interpreter
    info = tmp_path / 'site' / 'npuops_fake_dist-1.2.3.dist-info'
    info.mkdir(parents=True)
    (info / 'METADATA').write_text('Metadata-Version: 2.1\nName: npuops-fake-dist\nVersion: 1.2.3\n')
    env = dict(os.environ, PYTHONPATH=str(tmp_path / 'site'))

    def run_for_real(argv):
        done = subprocess.run(argv, capture_output=True, text=True, check=False, env=env)
        return done.returncode, done.stdout, done.stderr

    names = ['pytest', 'npuops_fake_dist', 'npuops-fake-dist', 'npuops_no_such_distribution']
    res = run_module(version_info, dict(stack, python=sys.executable, packages=names), {}, default=run_for_real)
    assert not res.failed, res
    assert res.calls == [[sys.executable, '-c', version_info.PACKAGES_SCRIPT] + names]
    assert res.result['python'] == '%d.%d.%d' % sys.version_info[:3]
    assert res.result['packages'] == {
        'pytest': metadata.version('pytest'),
        'npuops_fake_dist': '1.2.3',
        'npuops-fake-dist': '1.2.3',
        'npuops_no_such_distribution': None,
    }
    assert res.warnings == []


def test_the_python_of_the_module_is_the_default(run_module, stack):
    args = dict(stack)
    del args['python']
    argv = (sys.executable, '-c', version_info.PACKAGES_SCRIPT, 'torch', 'torch_npu')
    res = run_module(version_info, args, {argv: PACKAGES_OUT})
    assert res.calls == [list(argv)]


@pytest.mark.parametrize('text, value', [
    ('400', '400'),
    ('"1200"', '1200'),
    ("'1800'", '1800'),
    ('132   # DSCP 33', '132'),
    ('"64000"  # the first of 16 ports', '64000'),
    ('"a # b"', 'a # b'),
    ('"a" # say "b"', 'a'),
    ('0,1,2,3', '0,1,2,3'),
    ('', ''),
])
def test_shell_value(text, value):
    assert version_info.shell_value(text) == value


ENV_FILE = '''# HCCL settings of the training job
export HCCL_BUFFSIZE=400
export HCCL_CONNECT_TIMEOUT="1200"
HCCL_EXEC_TIMEOUT='1800'
export HCCL_RDMA_TC=132   # DSCP 33
export HCCL_IF_BASE_PORT="64000"  # the first of 16 ports
# export HCCL_INTRA_ROCE_ENABLE=1
  export ASCEND_RT_VISIBLE_DEVICES=0,1,2,3,4,5,6,7
OMP_NUM_THREADS=1
source /usr/local/Ascend/ascend-toolkit/set_env.sh
'''


def test_env_files_with_export_quotes_and_comments(run_module, stack, tmp_path, monkeypatch):
    monkeypatch.setenv('HCCL_BUFFSIZE', '200')        # the file wins over the module's environment
    monkeypatch.setenv('TASK_QUEUE_ENABLE', '1')
    monkeypatch.setenv('PATH_NOT_REPORTED', 'x')
    env_file = tmp_path / 'hccl.env'
    env_file.write_text(ENV_FILE)
    res = run_module(version_info, dict(stack, env_files=[str(env_file)]), {PACKAGES_ARGV: PACKAGES_OUT})
    assert not res.failed, res
    assert res.result['environment'] == {
        'HCCL_BUFFSIZE': '400',
        'HCCL_CONNECT_TIMEOUT': '1200',
        'HCCL_EXEC_TIMEOUT': '1800',
        'HCCL_RDMA_TC': '132',
        'HCCL_IF_BASE_PORT': '64000',
        'ASCEND_RT_VISIBLE_DEVICES': '0,1,2,3,4,5,6,7',
        'TASK_QUEUE_ENABLE': '1',
    }
    assert res.result['fingerprint']['env:HCCL_BUFFSIZE'] == '400'
    assert res.result['fingerprint']['env:TASK_QUEUE_ENABLE'] == '1'
    assert 'env:OMP_NUM_THREADS' not in res.result['fingerprint']
    assert res.result['errors'] == []


def test_later_env_file_wins_and_prefixes_are_an_option(run_module, stack, tmp_path):
    first, second = tmp_path / 'a.env', tmp_path / 'b.env'
    first.write_text('export HCCL_BUFFSIZE=200\nexport OMP_NUM_THREADS=4\n')
    second.write_text('export HCCL_BUFFSIZE=800\n')
    args = dict(stack, env_files=[str(first), str(second)], env_prefixes=['HCCL_', 'OMP_'])
    res = run_module(version_info, args, {PACKAGES_ARGV: PACKAGES_OUT})
    assert res.result['environment'] == {'HCCL_BUFFSIZE': '800', 'OMP_NUM_THREADS': '4'}


def test_unreadable_env_file_is_an_error(run_module, stack, tmp_path):
    missing = str(tmp_path / 'gone.env')
    res = run_module(version_info, dict(stack, env_files=[missing]), {PACKAGES_ARGV: PACKAGES_OUT})
    assert not res.failed, res
    assert res.result['environment'] == {}
    assert res.result['errors'] == [{
        'what': 'env_files', 'path': missing,
        'msg': "node-07: %s could not be read: [Errno 2] No such file or directory: '%s'" % (missing, missing),
    }]


def test_fingerprints_of_two_nodes_differ_exactly_where_their_stacks_do(run_module, stack, tmp_path):
    first = run_module(version_info, stack, {PACKAGES_ARGV: PACKAGES_OUT}).result['fingerprint']
    (tmp_path / 'driver' / 'version.info').write_text(DRIVER_24)
    other = (0, json.dumps({'python': '3.10.14', 'packages': {'torch': '2.1.0', 'torch_npu': '2.1.0.post8'}}) + '\n', '')
    (tmp_path / 'osrelease').write_text('5.10.0-182.0.0.95.oe2203sp3.aarch64\n')
    second = run_module(version_info, stack, {PACKAGES_ARGV: other}).result['fingerprint']
    assert sorted(key for key in first if first[key] != second[key]) == ['driver', 'kernel', 'package:torch_npu', 'python']


def test_unknown_line_of_a_version_file_is_a_warning(run_module, stack, tmp_path):
    path = tmp_path / 'firmware' / 'version.info'
    path.write_text(FIRMWARE + '---\n')
    res = run_module(version_info, stack, {PACKAGES_ARGV: PACKAGES_OUT})
    assert res.result['firmware']['version'] == '7.1.0.11.220'
    assert res.warnings == ["1 line(s) of the output of cat %s were not understood: '---'. The values read from them are "
                            "missing; please report this with your driver version." % path]


def test_check_mode_reads_the_same(run_module, stack):
    normal = run_module(version_info, stack, {PACKAGES_ARGV: PACKAGES_OUT})
    checked = run_module(version_info, stack, {PACKAGES_ARGV: PACKAGES_OUT}, check_mode=True)
    assert checked.calls == normal.calls == [list(PACKAGES_ARGV)]
    assert checked.result == normal.result
