"""hccl_bench with a scripted run_command fed with real hccl_test, torch all-reduce and npu-smi output."""

from __future__ import annotations

import os
import tempfile
import threading

import pytest

from ansible_collections.npuops.ascend.plugins.modules import hccl_bench
from ansible_collections.npuops.ascend.tests.unit.plugins.modules.conftest import HOST as HOST_NAME
from ansible_collections.npuops.ascend.tests.unit.plugins.modules.conftest import NPU_SMI, TIMEOUT, sample

MPIRUN = '/usr/local/mpich/bin/mpirun'
TORCHRUN = '/usr/local/bin/torchrun'
SCRIPT = '/var/lib/npuops/allreduce_bench.py'
INFO = (NPU_SMI, 'info')

# Real samples (tests/fixtures/captures/extra_hccl_test.txt, extra_torch_allreduce_busbw.txt, npu-smi_info.txt).
TABLE_DOC = sample('hccl_bench/hccl_test/oam_doc_table_avg_time')            # 14 sizes 8K..64M, peak algbw 23.76245 GB/s
TABLE_TWO_ROWS = sample('hccl_bench/hccl_test/secondhand_128rank_collapsed')  # 1K and 1G, algbw 102.82543 GB/s at 1G
TABLE_16_RANKS = sample('hccl_bench/hccl_test/contest_hccl_vm_allreduce_16rank')
RANK_FAILED = sample('hccl_bench/hccl_test/derived_rank_failure_and_warning')
RETCODE_7 = sample('hccl_bench/hccl_test/faq_retcode7')
LIBMPI_MISSING = sample('hccl_bench/hccl_test/faq_libmpi_missing')
GETHOSTBYNAME = sample('hccl_bench/hccl_test/faq_mpich_gethostbyname')
TORCH_4_RANKS = sample('hccl_bench/torch_allreduce/todi_4rank')
TORCH_PREFIXED = sample('hccl_bench/torch_allreduce/gke_a3_16rank_prefixed')
INFO_IDLE = sample('npu_smi/info/vllm198_910b3_23.0.7_idle')
INFO_BUSY = sample('npu_smi/info/vllm5111_910b2_25.2.0_busy')                # one VLLMWorker_DP process on each NPU

SIZES = ['-b', '8K', '-e', '1G', '-f', '2', '-p', '8']
BAND = {'low_gb_s': 117.6, 'high_gb_s': 147.0, 'theory_gb_s': 196.0, 'percent': [60.0, 75.0]}


@pytest.fixture
def hccl_test(tmp_path):
    """An executable all_reduce_test in tmp_path (the module checks that the file is there)."""
    path = tmp_path / 'all_reduce_test'
    path.write_text('#!/bin/sh\n')
    path.chmod(0o755)
    return str(path)


@pytest.fixture
def hostfiles(monkeypatch, tmp_path):
    """The paths of the temporary hostfiles the module makes (in tmp_path), in the order made."""
    made = []
    real_mkstemp = tempfile.mkstemp

    def mkstemp(**kwargs):
        handle, path = real_mkstemp(dir=str(tmp_path), **kwargs)
        made.append(path)
        return handle, path

    monkeypatch.setattr(tempfile, 'mkstemp', mkstemp)
    return made


def argv(test, *extra, ranks=8, env=()):
    out = [MPIRUN, '-n', str(ranks)]
    for key, value in env:
        out += ['-genv', key, value]
    return tuple(out + [test] + SIZES + list(extra))


def run(run_module, test, output, args=None, info=INFO_IDLE, extra=(), env=(), rc=0, err='', **kwargs):
    options = dict({'hccl_test_path': test}, **(args or {}))
    cmds = {INFO: (0, info, ''), argv(test, *extra, env=env): (rc, output, err)}
    return run_module(hccl_bench, options, cmds, bin_paths=dict({'mpirun': MPIRUN}, **kwargs.pop('bin_paths', {})), **kwargs)


def test_exact_argv_and_busbw_of_every_row(run_module, hccl_test):
    res = run(run_module, hccl_test, TABLE_DOC, {'fail_below_band': False, 'iters': 20, 'warmup_iters': 5}, extra=('-n', '20', '-w', '5'))
    assert not res.failed, res
    assert res.calls == [list(INFO), [MPIRUN, '-n', '8', hccl_test] + SIZES + ['-n', '20', '-w', '5']]
    result = res.result
    assert result['ranks'] == 8
    assert [row['size_bytes'] for row in result['rows']] == [8192 * 2 ** k for k in range(14)]
    # busbw = algbw x 2(n-1)/n = algbw x 1.75 for 8 ranks
    assert [(row['algbw_gb_s'], row['busbw_gb_s']) for row in result['rows'][-2:]] == [
        (18.22317, round(18.22317 * 2 * 7 / 8, 3)), (23.76245, round(23.76245 * 2 * 7 / 8, 3))]
    assert all(row['busbw_gb_s'] == round(row['algbw_gb_s'] * 1.75, 3) for row in result['rows'])
    assert result['rows'][0] == {'size_bytes': 8192, 'avg_time_us': 764.55, 'algbw_gb_s': 0.00998, 'busbw_gb_s': 0.017}
    assert (result['peak_busbw_gb_s'], result['peak_size_bytes']) == (41.584, 67108864)
    assert result['cmd'] == '%s -n 8 %s -b 8K -e 1G -f 2 -p 8 -n 20 -w 5' % (MPIRUN, hccl_test)
    assert result['stdout'] == TABLE_DOC
    assert result['changed'] is False
    assert res.warnings == []


def test_env_goes_to_the_ranks_and_to_the_command(run_module, hccl_test):
    env = {'HCCL_RDMA_TC': 132, 'HCCL_BUFFSIZE': 200}
    res = run(run_module, hccl_test, TABLE_TWO_ROWS, {'env': env}, env=(('HCCL_BUFFSIZE', '200'), ('HCCL_RDMA_TC', '132')))
    assert not res.failed, res
    assert res.calls[-1] == [MPIRUN, '-n', '8', '-genv', 'HCCL_BUFFSIZE', '200', '-genv', 'HCCL_RDMA_TC', '132', hccl_test] + SIZES
    assert res.fake.kwargs[-1]['environ_update'] == {'HCCL_BUFFSIZE': '200', 'HCCL_RDMA_TC': '132', 'LC_ALL': 'C', 'LANG': 'C'}


def test_above_the_band(run_module, hccl_test):
    res = run(run_module, hccl_test, TABLE_TWO_ROWS)
    assert not res.failed, res
    assert res.result['rows'][1] == {'size_bytes': 1073741824, 'avg_time_us': 10442.38, 'algbw_gb_s': 102.82543,
                                     'busbw_gb_s': round(102.82543 * 1.75, 3)}
    assert res.result['peak_busbw_gb_s'] == 179.945
    assert res.result['band'] == BAND
    assert (res.result['below_band'], res.result['above_band']) == (False, True)
    assert 'msg' not in res.result
    assert res.result['busy'] == []


def test_within_the_band(run_module, hccl_test):
    # 179.945 GB/s against 85-95 % of 196 GB/s = 166.6-186.2 GB/s
    res = run(run_module, hccl_test, TABLE_TWO_ROWS, {'band': [85, 95]})
    assert not res.failed, res
    assert res.result['band'] == {'low_gb_s': 166.6, 'high_gb_s': 186.2, 'theory_gb_s': 196.0, 'percent': [85.0, 95.0]}
    assert (res.result['below_band'], res.result['above_band']) == (False, False)


def test_below_the_band_fails_naming_host_busbw_band_busy_processes_and_buffsize(run_module, hccl_test):
    res = run(run_module, hccl_test, TABLE_DOC, {'env': {'HCCL_BUFFSIZE': 200}}, info=INFO_BUSY, env=(('HCCL_BUFFSIZE', '200'),))
    assert res.failed
    busy = ', '.join('NPU %d: pid %d (VLLMWorker_DP)' % (npu, 16143 + npu) for npu in range(8))
    assert res.result['msg'] == (
        'node-07: AllReduce peak bus bandwidth 41.6 GB/s (at 67108864 bytes) is below the band 117.6-147.0 GB/s '
        '(60-75 %% of 196 GB/s). Processes hold NPUs of this node: %s; stop them and measure again. Check HCCL_BUFFSIZE '
        '(200 MB here, the default is 200; a buffer much smaller than the messages splits them into more steps) and that '
        'no other job uses the NPUs.' % busy)
    # the measurement stays in the failed result
    assert res.result['peak_busbw_gb_s'] == 41.584
    assert res.result['below_band'] is True
    assert len(res.result['rows']) == 14
    assert res.result['busy'][0] == {'device': 0, 'pid': 16143, 'name': 'VLLMWorker_DP'}
    assert len(res.result['busy']) == 8


def test_below_the_band_without_busy_processes_and_buffsize_unset(run_module, hccl_test):
    res = run(run_module, hccl_test, TABLE_DOC)
    assert res.failed
    assert res.result['msg'] == (
        'node-07: AllReduce peak bus bandwidth 41.6 GB/s (at 67108864 bytes) is below the band 117.6-147.0 GB/s '
        '(60-75 % of 196 GB/s). Check HCCL_BUFFSIZE (unset, so 200 MB here, the default is 200; a buffer much smaller than '
        'the messages splits them into more steps) and that no other job uses the NPUs.')


def test_below_the_band_without_failing(run_module, hccl_test):
    res = run(run_module, hccl_test, TABLE_DOC, {'fail_below_band': False}, info=INFO_BUSY)
    assert not res.failed, res
    assert (res.result['below_band'], res.result['above_band']) == (True, False)
    assert res.result['msg'].startswith('AllReduce peak bus bandwidth 41.6 GB/s (at 67108864 bytes) is below the band')
    assert len(res.result['busy']) == 8


def test_check_mode_is_skipped_without_any_call(run_module, hccl_test):
    res = run_module(hccl_bench, {'hccl_test_path': hccl_test}, {}, bin_paths={'mpirun': MPIRUN}, check_mode=True)
    assert not res.failed, res
    assert res.calls == []
    assert res.result == {'changed': False, 'skipped': True, 'band': BAND,
                          'msg': 'hccl_bench did not run: a measurement is skipped in check mode.'}


def test_across_hosts_with_a_temporary_hostfile(run_module, hccl_test, hostfiles):
    made = hostfiles
    seen = {}

    def mpirun(call):
        assert call[:2] == [MPIRUN, '-f']
        with open(call[2]) as handle:
            seen['hostfile'] = handle.read()
        seen['argv'] = call
        return 0, TABLE_16_RANKS, ''

    options = {'hccl_test_path': hccl_test, 'hosts': ['node01', 'node02'], 'theory_busbw': 25, 'fail_below_band': False}
    res = run_module(hccl_bench, options, {INFO: (0, INFO_IDLE, '')}, bin_paths={'mpirun': MPIRUN}, default=mpirun)
    assert not res.failed, res
    assert len(made) == 1
    assert os.path.basename(made[0]).startswith('npuops-hostfile-')
    assert seen['argv'] == [MPIRUN, '-f', made[0], '-n', '16', hccl_test] + SIZES
    assert seen['hostfile'] == 'node01:8\nnode02:8\n'
    assert not os.path.exists(made[0])
    # 16 ranks: busbw = algbw x 2 x 15 / 16
    assert res.result['ranks'] == 16
    assert res.result['rows'] == [{'size_bytes': 524288, 'avg_time_us': 1000.0, 'algbw_gb_s': 0.52429,
                                   'busbw_gb_s': round(0.52429 * 30 / 16, 3)}]
    assert res.result['band'] == {'low_gb_s': 15.0, 'high_gb_s': 18.75, 'theory_gb_s': 25.0, 'percent': [60.0, 75.0]}
    assert res.result['below_band'] is True


def test_the_hostfile_is_deleted_when_the_run_fails(run_module, hccl_test, hostfiles):
    made = hostfiles
    options = {'hccl_test_path': hccl_test, 'hosts': ['node01', 'node02']}
    res = run_module(hccl_bench, options, {INFO: (0, INFO_IDLE, '')}, bin_paths={'mpirun': MPIRUN},
                     default=lambda call: (1, '', GETHOSTBYNAME))
    assert res.failed
    assert res.result['rc'] == 1
    assert 'gethostbyname failed, HW-AI-LC-1-1 (errno 2)' in res.result['msg']
    assert len(made) == 1 and not os.path.exists(made[0])


def test_hccl_test_missing(run_module, tmp_path):
    missing = str(tmp_path / 'hccl_test' / 'bin' / 'all_reduce_test')
    res = run_module(hccl_bench, {'hccl_test_path': missing}, {INFO: (0, INFO_IDLE, '')}, bin_paths={'mpirun': MPIRUN})
    assert res.failed
    assert res.result['msg'] == ('node-07: hccl_test not found at %s. Build it under <toolkit>/tools/hccl_test '
                                 '(make MPI_HOME=... ASCEND_DIR=...) or set hccl_test_path.' % missing)
    assert res.calls == [list(INFO)]


def test_hccl_test_not_executable(run_module, tmp_path):
    path = tmp_path / 'all_reduce_test'
    path.write_text('')
    res = run_module(hccl_bench, {'hccl_test_path': str(path)}, {INFO: (0, INFO_IDLE, '')}, bin_paths={'mpirun': MPIRUN})
    assert res.failed
    assert res.result['msg'].startswith('node-07: hccl_test not found at %s.' % path)


def test_mpirun_not_found(run_module, hccl_test):
    res = run_module(hccl_bench, {'hccl_test_path': hccl_test}, {INFO: (0, INFO_IDLE, '')}, bin_paths={'mpirun': None})
    assert res.failed
    assert res.result['msg'] == (
        'node-07: mpirun not found: looked in /usr/local/mpich/bin, /usr/local/openmpi/bin, /usr/local/Ascend/driver/tools, '
        '/usr/local/sbin, /usr/local/bin and PATH. MPI is needed by hccl_test (MPICH in the CANN documentation); install it '
        'or set the path option of the module.')
    assert res.calls == [list(INFO)]


def test_explicit_mpirun_path_wrong(run_module, hccl_test, tmp_path):
    wrong = str(tmp_path / 'mpich' / 'bin' / 'mpirun')
    res = run_module(hccl_bench, {'hccl_test_path': hccl_test, 'mpirun_path': wrong}, {INFO: (0, INFO_IDLE, '')},
                     bin_paths={'mpirun': MPIRUN})
    assert res.failed
    assert res.result['msg'] == (
        'node-07: mpirun not found at %s (set by the module option): no executable file there. Point the option at the '
        'mpirun binary or leave it unset to search /usr/local/Ascend/driver/tools, /usr/local/sbin, /usr/local/bin and PATH.'
        % wrong)
    assert res.calls == [list(INFO)]


def test_explicit_mpirun_directory(run_module, hccl_test, tmp_path):
    folder = tmp_path / 'mpich' / 'bin'
    folder.mkdir(parents=True)
    (folder / 'mpirun').write_text('#!/bin/sh\n')
    (folder / 'mpirun').chmod(0o755)
    mpirun = str(folder / 'mpirun')
    cmds = {INFO: (0, INFO_IDLE, ''), (mpirun, '-n', '8', hccl_test, *SIZES): (0, TABLE_TWO_ROWS, '')}
    res = run_module(hccl_bench, {'hccl_test_path': hccl_test, 'mpirun_path': str(folder)}, cmds)
    assert not res.failed, res
    assert res.calls[-1][0] == mpirun


def test_tool_exit_non_zero_fails_with_the_tool_words(run_module, hccl_test):
    res = run(run_module, hccl_test, '', rc=127, err=LIBMPI_MISSING)
    assert res.failed
    loader = ('./all_reduce_test: error while loading shared libraries: libmpi.so.12: cannot open shared object file: '
              'No such file or directory')
    assert res.result['msg'] == (
        'node-07: %s -n 8 %s -b 8K -e 1G -f 2 -p 8 failed (rc=127): %s %s. The benchmark did not finish (no result rows): '
        'check the CANN environment (set_env.sh), MPI and that no other job holds the NPUs.' % (MPIRUN, hccl_test, loader, loader))
    assert (res.result['rc'], res.result['stderr'], res.result['stdout']) == (127, LIBMPI_MISSING, '')
    assert res.result['cmd'] == '%s -n 8 %s -b 8K -e 1G -f 2 -p 8' % (MPIRUN, hccl_test)
    assert 'rows' not in res.result


def test_error_lines_with_exit_0_fail_with_the_tool_words(run_module, hccl_test):
    res = run(run_module, hccl_test, RETCODE_7)
    assert res.failed
    err = 'hccl interface return err ./common/src/hccl_test_common.cc:538, retcode: 7'
    assert res.result['msg'] == (
        'node-07: %s -n 8 %s -b 8K -e 1G -f 2 -p 8 failed (rc=0): the minbytes is 8192, maxbytes is 2147483648, iters is 20, '
        'warmup_iters is 5 %s  This is an error in init_hcclComm. %s  This is an error in init_hcclComm. %s  This is an error '
        'in init_hcclComm. %s  This is an error in init_hcclComm. The benchmark did not finish (%s; This is an error in '
        'init_hcclComm.; %s): check the CANN environment (set_env.sh), MPI and that no other job holds the NPUs.'
        % (MPIRUN, hccl_test, err, err, err, err, err, err))


def test_a_rank_whose_check_failed_fails_naming_the_rank(run_module, hccl_test):
    res = run(run_module, hccl_test, RANK_FAILED)
    assert res.failed
    assert res.result['msg'].endswith('The benchmark did not finish (check result failed on ranks 3): check the CANN '
                                      'environment (set_env.sh), MPI and that no other job holds the NPUs.')


def test_mpirun_that_cannot_start_is_a_failure(run_module, hccl_test):
    cmds = {INFO: (0, INFO_IDLE, ''), argv(hccl_test): PermissionError(13, 'Permission denied', MPIRUN)}
    res = run_module(hccl_bench, {'hccl_test_path': hccl_test}, cmds, bin_paths={'mpirun': MPIRUN})
    assert res.failed
    assert res.result['msg'] == (
        "node-07: Could not run %s -n 8 %s -b 8K -e 1G -f 2 -p 8: [Errno 13] Permission denied: '%s'. Check that the file is an "
        "executable for this host." % (MPIRUN, hccl_test, MPIRUN))


def test_timeout_of_the_whole_run(run_module, hccl_test):
    cmds = {(TIMEOUT, '-k', '5', '60') + INFO: (0, INFO_IDLE, ''), (TIMEOUT, '-k', '5', '900') + argv(hccl_test): (124, '', '')}
    res = run_module(hccl_bench, {'hccl_test_path': hccl_test}, cmds, bin_paths={'mpirun': MPIRUN, 'timeout': TIMEOUT})
    assert res.failed
    assert res.result['msg'] == (
        'node-07: %s -n 8 %s -b 8K -e 1G -f 2 -p 8 timed out after 900 s. The driver may be hung or busy; check dmesg and '
        '`npu-smi info`, or raise the timeout option.' % (MPIRUN, hccl_test))
    assert res.result['rc'] == 124
    # npu-smi has its own limit of 60 s
    assert res.calls[0] == [TIMEOUT, '-k', '5', '60', NPU_SMI, 'info']


def test_without_npu_smi_the_processes_are_unknown(run_module, hccl_test):
    res = run(run_module, hccl_test, TABLE_TWO_ROWS, bin_paths={'npu-smi': None})
    assert not res.failed, res
    assert res.result['busy'] == []
    assert res.warnings == [
        'node-07: npu-smi not found: looked in /usr/local/Ascend/driver/tools, /usr/local/sbin, /usr/local/bin and PATH. '
        'The Ascend driver (npu-smi) may be missing or not installed; install it or set the path option of the module. '
        'The processes on the NPUs are not known.']


@pytest.mark.parametrize('options, problem', [
    ({'min_bytes': '8X'}, "min_bytes: '8X' is not a size (bytes with an optional K, M or G suffix)"),
    ({'max_bytes': '1.5G'}, "max_bytes: '1.5G' is not a size (bytes with an optional K, M or G suffix)"),
    ({'min_bytes': '2G', 'max_bytes': '1G'}, 'min_bytes 2G is larger than max_bytes 1G'),
    ({'npus': 0}, 'npus must be 1 or more and step_factor 2 or more (got 0, 2)'),
    ({'step_factor': 1}, 'npus must be 1 or more and step_factor 2 or more (got 8, 1)'),
    ({'band': [75, 60]}, 'band must be two increasing percentages above 0 (got [75.0, 60.0])'),
    ({'band': [60]}, 'band must be two increasing percentages above 0 (got [60.0])'),
    ({'band': [0, 60]}, 'band must be two increasing percentages above 0 (got [0.0, 60.0])'),
    ({'theory_busbw': 0}, 'theory_busbw must be above 0 (got 0.0)'),
    ({'hosts': ['node01', 'node02'], 'mode': 'torch', 'script': SCRIPT}, 'hosts (a run across nodes) needs mode=hccl_test'),
    ({'mode': 'torch'}, 'mode=torch needs script (the AllReduce script on the node)'),
    ({'iters': -1}, 'iters and warmup_iters must be 0 or more (got -1)'),
    ({'warmup_iters': -5}, 'iters and warmup_iters must be 0 or more (got -5)'),
])
def test_invalid_options_are_refused_before_any_call(run_module, hccl_test, options, problem):
    res = run_module(hccl_bench, dict({'hccl_test_path': hccl_test}, **options), {}, bin_paths={'mpirun': MPIRUN})
    assert res.failed
    assert res.result['msg'] == 'hccl_bench: %s. Nothing ran.' % problem
    assert res.calls == []


def test_several_problems_in_one_message(run_module, hccl_test):
    res = run_module(hccl_bench, {'hccl_test_path': hccl_test, 'min_bytes': 'x', 'iters': -1}, {}, bin_paths={'mpirun': MPIRUN})
    assert res.result['msg'] == ("hccl_bench: min_bytes: 'x' is not a size (bytes with an optional K, M or G suffix); "
                                 "iters and warmup_iters must be 0 or more (got -1). Nothing ran.")


def test_size_bytes():
    assert [hccl_bench.size_bytes(text) for text in ('8K', '8k', '1G', '64M', '512')] == [8192, 8192, 1 << 30, 64 << 20, 512]
    with pytest.raises(ValueError):
        hccl_bench.size_bytes('1T')


def torch_argv(*extra, npus=8, max_bytes='1073741824'):
    return (TORCHRUN, '--nproc_per_node', str(npus), SCRIPT, '--max-bytes', max_bytes) + extra


def test_mode_torch_argv_and_parsing(run_module):
    cmds = {INFO: (0, INFO_IDLE, ''), torch_argv('--trials', '20', npus=4): (0, TORCH_4_RANKS, '')}
    res = run_module(hccl_bench, {'mode': 'torch', 'script': SCRIPT, 'npus': 4, 'iters': 20, 'env': {'HCCL_BUFFSIZE': 200}},
                     cmds, bin_paths={'torchrun': TORCHRUN})
    assert not res.failed, res
    assert res.calls == [list(INFO), list(torch_argv('--trials', '20', npus=4))]
    assert res.fake.kwargs[-1]['environ_update'] == {'HCCL_BUFFSIZE': '200', 'LC_ALL': 'C', 'LANG': 'C'}
    assert res.result['ranks'] == 4
    assert res.result['rows'] == [{'size_bytes': 4000000000, 'avg_time_us': None, 'algbw_gb_s': 218.635, 'busbw_gb_s': 327.952}]
    assert (res.result['peak_busbw_gb_s'], res.result['above_band']) == (327.952, True)


def test_mode_torch_with_launcher_prefixes(run_module):
    cmds = {INFO: (0, INFO_IDLE, ''), torch_argv(max_bytes='4294967296'): (0, TORCH_PREFIXED, '')}
    res = run_module(hccl_bench, {'mode': 'torch', 'script': SCRIPT, 'max_bytes': '4G', 'fail_below_band': False},
                     cmds, bin_paths={'torchrun': TORCHRUN})
    assert not res.failed, res
    assert res.result['peak_busbw_gb_s'] == 84.275
    assert res.result['below_band'] is True


def test_mode_torch_without_a_result_fails(run_module):
    cmds = {INFO: (0, INFO_IDLE, ''), torch_argv(): (1, '', 'ModuleNotFoundError: No module named \'torch_npu\'\n')}
    res = run_module(hccl_bench, {'mode': 'torch', 'script': SCRIPT}, cmds, bin_paths={'torchrun': TORCHRUN})
    assert res.failed
    assert res.result['msg'] == (
        "node-07: %s --nproc_per_node 8 %s --max-bytes 1073741824 failed (rc=1): ModuleNotFoundError: No module named "
        "'torch_npu'. The benchmark did not finish (no result rows): check the CANN environment (set_env.sh), MPI and "
        "that no other job holds the NPUs." % (TORCHRUN, SCRIPT))


def test_mode_torch_without_torchrun(run_module):
    res = run_module(hccl_bench, {'mode': 'torch', 'script': SCRIPT}, {INFO: (0, INFO_IDLE, '')}, bin_paths={'torchrun': None})
    assert res.failed
    assert res.result['msg'] == (
        'node-07: torchrun not found: looked in /usr/local/Ascend/driver/tools, /usr/local/sbin, /usr/local/bin and PATH. '
        'It comes with PyTorch; install it or set the path option of the module.')


# ---- host_groups: several runs across nodes at once -----------------------------------------------------------------

def test_host_groups_run_at_once_each_with_its_hostfile_and_result(run_module, hccl_test, hostfiles):
    made = hostfiles
    together = threading.Barrier(3, timeout=10)  # broken (and the test failed) unless the three runs are under way at once
    seen = {}

    def mpirun(call):
        with open(call[2]) as handle:
            hosts = handle.read()
        seen[hosts] = call

        def answer():  # called outside the fake's lock, as a real run would overlap the others
            together.wait()
            return (1, '', GETHOSTBYNAME) if hosts.startswith('node05') else (0, TABLE_16_RANKS, '')
        return answer

    groups = [['node01', 'node02'], ['node03', 'node04'], ['node05', 'node06']]
    options = {'hccl_test_path': hccl_test, 'host_groups': groups, 'theory_busbw': 25, 'band': [3, 5]}
    res = run_module(hccl_bench, options, {INFO: (0, INFO_IDLE, '')}, bin_paths={'mpirun': MPIRUN}, default=mpirun)
    assert not res.failed, res
    assert sorted(seen) == ['node01:8\nnode02:8\n', 'node03:8\nnode04:8\n', 'node05:8\nnode06:8\n']
    assert all(call[:2] == [MPIRUN, '-f'] and call[3:] == ['-n', '16', hccl_test] + SIZES for call in seen.values())
    assert len(made) == 3 and not any(os.path.exists(path) for path in made)
    runs = res.result['runs']
    assert [run['hosts'] for run in runs] == groups
    busbw = round(0.52429 * 30 / 16, 3)
    assert runs[0] == {'hosts': ['node01', 'node02'], 'peak_busbw_gb_s': busbw, 'peak_size_bytes': 524288, 'ranks': 16,
                       'below_band': False, 'above_band': False, 'cmd': runs[0]['cmd']}
    assert runs[1]['peak_busbw_gb_s'] == busbw
    assert runs[2]['failed'] is True and set(runs[2]) == {'hosts', 'failed', 'msg'}
    assert runs[2]['msg'].startswith('%s: ' % HOST_NAME)
    assert 'gethostbyname failed, HW-AI-LC-1-1 (errno 2)' in runs[2]['msg']
    assert res.result['msg'] == '3 run(s) across nodes at once, 1 below the band or failed'
    assert res.result['changed'] is False


def test_a_group_below_the_band_does_not_fail_the_task(run_module, hccl_test):
    options = {'hccl_test_path': hccl_test, 'host_groups': [['node01', 'node02']], 'theory_busbw': 25}
    res = run_module(hccl_bench, options, {INFO: (0, INFO_IDLE, '')}, bin_paths={'mpirun': MPIRUN},
                     default=lambda call: (0, TABLE_16_RANKS, ''))
    assert not res.failed, res
    assert res.result['runs'][0]['below_band'] is True
    assert 'msg' not in res.result['runs'][0]


def test_host_groups_in_check_mode_run_nothing(run_module, hccl_test):
    res = run_module(hccl_bench, {'hccl_test_path': hccl_test, 'host_groups': [['node01', 'node02']]}, {},
                     bin_paths={'mpirun': MPIRUN}, check_mode=True)
    assert res.calls == [] and res.result['skipped'] is True


@pytest.mark.parametrize('options, problem', [
    ({'host_groups': [['node01', 'node02'], ['node02', 'node03']]},
     'node02 is in host_groups[0] and host_groups[1]: the groups run at once, so a host can be in one only'),
    ({'host_groups': [['node01']]}, "host_groups[0] is ['node01']: each group is a list of two or more host names"),
    ({'host_groups': [['node01', '']]}, "host_groups[0] is ['node01', '']: each group is a list of two or more host names"),
    ({'host_groups': [['node01', 'node02']], 'hosts': ['node01', 'node02']},
     'hosts and host_groups are mutually exclusive (one run, or several at once)'),
    ({'host_groups': [['node01', 'node02']], 'mode': 'torch', 'script': SCRIPT},
     'host_groups (runs across nodes) needs mode=hccl_test'),
])
def test_bad_host_groups_are_refused_before_any_call(run_module, hccl_test, options, problem):
    res = run_module(hccl_bench, dict({'hccl_test_path': hccl_test}, **options), {}, bin_paths={'mpirun': MPIRUN})
    assert res.failed
    assert problem in res.result['msg'] and res.result['msg'].endswith('. Nothing ran.')
    assert res.calls == []


# ---- rails: NPU d of every node over its own port, one run per NPU id, all at once ---------------------------------

def rail_argv(test, hostfile, device, ranks=2):
    """A rail's mpirun: the hostfile, the ranks (one per host), the env with the NPU made the only visible one, -p 1."""
    return [MPIRUN, '-f', hostfile, '-n', str(ranks), '-genv', 'ASCEND_RT_VISIBLE_DEVICES', str(device),
            '-genv', 'HCCL_BUFFSIZE', '200', '-genv', 'HCCL_RDMA_TC', '132', test, '-b', '8K', '-e', '1G', '-f', '2', '-p', '1']


def test_rails_run_at_once_each_with_one_npu_per_node_made_visible(run_module, hccl_test, hostfiles):
    made = hostfiles
    together = threading.Barrier(3, timeout=10)  # broken (and the test failed) unless the three rails run at once
    seen = {}

    def mpirun(call):
        with open(call[2]) as handle:
            seen.setdefault('hostfile', handle.read())
        device = int(call[call.index('ASCEND_RT_VISIBLE_DEVICES') + 1])
        seen[device] = call

        def answer():
            together.wait()
            if device == 7:
                return 1, '', GETHOSTBYNAME
            return 0, (TABLE_16_RANKS if device == 3 else TABLE_DOC), ''
        return answer

    options = {'hccl_test_path': hccl_test, 'hosts': ['node01', 'node02'], 'rails': [0, 3, 7],
               'env': {'HCCL_BUFFSIZE': 200, 'HCCL_RDMA_TC': 132}, 'theory_busbw': 25, 'band': [85, 96]}
    res = run_module(hccl_bench, options, {INFO: (0, INFO_IDLE, '')}, bin_paths={'mpirun': MPIRUN}, default=mpirun)
    assert not res.failed, res
    # one hostfile of host:1 lines for every rail, removed afterwards
    assert len(made) == 1 and not os.path.exists(made[0])
    assert seen['hostfile'] == 'node01:1\nnode02:1\n'
    for device in (0, 3, 7):
        assert seen[device] == rail_argv(hccl_test, made[0], device)
    # the run's environment holds the rail's NPU as well, beside the env of the module
    environs = sorted((kw['environ_update'] for kw in res.fake.kwargs[1:]), key=lambda e: e['ASCEND_RT_VISIBLE_DEVICES'])
    assert [e['ASCEND_RT_VISIBLE_DEVICES'] for e in environs] == ['0', '3', '7']
    assert all(e['HCCL_BUFFSIZE'] == '200' and e['HCCL_RDMA_TC'] == '132' for e in environs)
    runs = res.result['runs']
    assert [run['device'] for run in runs] == [0, 3, 7]
    # 2 ranks: busbw = algbw x 2 x 1 / 2 = algbw
    assert runs[0] == {'device': 0, 'hosts': ['node01', 'node02'], 'peak_busbw_gb_s': 23.762, 'peak_size_bytes': 67108864,
                       'ranks': 2, 'below_band': False, 'above_band': False, 'cmd': runs[0]['cmd']}
    assert runs[0]['cmd'].endswith('-genv ASCEND_RT_VISIBLE_DEVICES 0 -genv HCCL_BUFFSIZE 200 -genv HCCL_RDMA_TC 132 %s '
                                   '-b 8K -e 1G -f 2 -p 1' % hccl_test)
    assert (runs[1]['peak_busbw_gb_s'], runs[1]['below_band']) == (0.524, True)
    assert runs[2]['failed'] is True and set(runs[2]) == {'device', 'hosts', 'failed', 'msg'}
    assert 'gethostbyname failed, HW-AI-LC-1-1 (errno 2)' in runs[2]['msg']
    assert res.result['msg'] == '3 rail run(s) across 2 nodes at once, 2 below the band or failed'
    assert res.result['band'] == {'low_gb_s': 21.25, 'high_gb_s': 24.0, 'theory_gb_s': 25.0, 'percent': [85.0, 96.0]}


def test_a_rail_overrides_the_visible_devices_of_env_and_ignores_npus(run_module, hccl_test, hostfiles):
    calls = []

    def mpirun(call):
        calls.append(call)
        return 0, TABLE_DOC, ''

    options = {'hccl_test_path': hccl_test, 'hosts': ['node01', 'node02', 'node03'], 'rails': [5], 'npus': 8,
               'env': {'ASCEND_RT_VISIBLE_DEVICES': '0,1,2,3,4,5,6,7'}}
    res = run_module(hccl_bench, options, {INFO: (0, INFO_IDLE, '')}, bin_paths={'mpirun': MPIRUN}, default=mpirun)
    assert not res.failed, res
    assert calls == [[MPIRUN, '-f', hostfiles[0], '-n', '3', '-genv', 'ASCEND_RT_VISIBLE_DEVICES', '5', hccl_test,
                      '-b', '8K', '-e', '1G', '-f', '2', '-p', '1']]
    assert res.fake.kwargs[-1]['environ_update']['ASCEND_RT_VISIBLE_DEVICES'] == '5'
    # 3 ranks: busbw = algbw x 2 x 2 / 3; below the default band of 196 GB/s, without failing the task
    assert res.result['runs'][0]['peak_busbw_gb_s'] == round(23.76245 * 4 / 3, 3)
    assert res.result['runs'][0]['ranks'] == 3 and res.result['runs'][0]['below_band'] is True


def test_rails_in_check_mode_run_nothing(run_module, hccl_test):
    res = run_module(hccl_bench, {'hccl_test_path': hccl_test, 'hosts': ['node01', 'node02'], 'rails': [0, 1]}, {},
                     bin_paths={'mpirun': MPIRUN}, check_mode=True)
    assert res.calls == [] and res.result['skipped'] is True


@pytest.mark.parametrize('options, problem', [
    ({'rails': [0, 1]}, 'rails needs hosts, two or more (the nodes whose NPU d make rail d), got 0'),
    ({'rails': [0], 'hosts': ['node01']}, 'rails needs hosts, two or more (the nodes whose NPU d make rail d), got 1'),
    ({'rails': [0], 'hosts': ['node01', 'node02'], 'mode': 'torch', 'script': SCRIPT},
     'rails (runs across nodes) needs mode=hccl_test'),
    ({'rails': [0], 'hosts': ['node01', 'node02'], 'host_groups': [['node03', 'node04']]},
     'rails and host_groups are mutually exclusive (one run per rail over hosts, or one per group)'),
    ({'rails': [0, 64, -1], 'hosts': ['node01', 'node02']}, 'rails holds 64, -1: an NPU id is 0-63'),
    ({'rails': [3, 1, 3, 1], 'hosts': ['node01', 'node02']},
     'rails holds 1, 3 more than once: the rails run at once, each NPU in one run'),
])
def test_bad_rails_are_refused_before_any_call(run_module, hccl_test, options, problem):
    res = run_module(hccl_bench, dict({'hccl_test_path': hccl_test}, **options), {}, bin_paths={'mpirun': MPIRUN})
    assert res.failed
    assert problem in res.result['msg'] and res.result['msg'].startswith('hccl_bench: ')
    assert res.result['msg'].endswith('. Nothing ran.')
    assert res.calls == []
