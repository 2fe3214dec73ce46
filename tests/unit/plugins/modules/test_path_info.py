"""npuops.ascend.path_info: what is at several paths in one module run - a link is never followed unless asked (nor
its target checksummed), each kind of file is named, and a path that cannot be examined is an entry, not a failure."""

from __future__ import annotations

import hashlib
import os

import pytest

from ansible_collections.npuops.ascend.plugins.module_utils._domain import path_info as domain
from ansible_collections.npuops.ascend.plugins.modules import path_info


def sha1(data):
    return hashlib.sha1(data).hexdigest()


def test_a_regular_file_a_directory_and_nothing(run_module, tmp_path):
    target = tmp_path / 'env.sh'
    target.write_bytes(b'export HCCL_BUFFSIZE=200\n')
    os.chmod(target, 0o640)
    res = run_module(path_info, {'paths': [{'path': str(target), 'checksum': True}, {'path': str(tmp_path)},
                                           {'path': str(tmp_path / 'missing' / 'x')}]}, {})
    assert not res.failed and res.result['changed'] is False and res.calls == []
    first, second, third = res.result['paths']
    assert first['path'] == str(target) and first['follow'] is False
    stat = first['stat']
    assert (stat['exists'], stat['isreg'], stat['isdir'], stat['islnk'], stat['mode']) == (True, True, False, False, '0640')
    assert stat['checksum'] == sha1(b'export HCCL_BUFFSIZE=200\n') and stat['size'] == 25
    assert stat['uid'] == os.getuid() and stat['pw_name'] and stat['gr_name']
    assert second['stat']['isdir'] is True and 'checksum' not in second['stat']
    assert third['stat'] == {'exists': False}


def test_a_link_is_not_followed_nor_its_target_checksummed(run_module, tmp_path):
    secret = tmp_path / 'secret'
    secret.write_bytes(b'token\n')
    link = tmp_path / 'env.sh'
    link.symlink_to(secret)
    res = run_module(path_info, {'paths': [{'path': str(link), 'checksum': True},
                                           {'path': str(link), 'follow': True, 'checksum': True}]}, {})
    kept, followed = res.result['paths']
    assert kept['stat']['islnk'] is True and kept['stat']['isreg'] is False
    assert kept['stat']['lnk_target'] == str(secret) and 'checksum' not in kept['stat']
    assert followed['follow'] is True and followed['stat']['isreg'] is True
    assert followed['stat']['checksum'] == sha1(b'token\n')


def test_a_fifo_is_named_and_never_opened(run_module, tmp_path):
    fifo = tmp_path / 'fifo'
    os.mkfifo(fifo)
    res = run_module(path_info, {'paths': [{'path': str(fifo), 'checksum': True}]}, {})
    stat = res.result['paths'][0]['stat']
    assert stat['isfifo'] is True and stat['isreg'] is False and 'checksum' not in stat


def test_a_path_that_cannot_be_examined_is_an_entry_not_a_failure(run_module, tmp_path):
    loop = tmp_path / 'loop'
    loop.symlink_to(loop)
    res = run_module(path_info, {'paths': [{'path': str(loop / 'x')}, {'path': str(tmp_path)}]}, {})
    assert not res.failed
    broken, fine = res.result['paths']
    assert broken['failed'] is True and broken['msg'].startswith('could not examine %s: ' % (loop / 'x'))
    assert fine['stat']['isdir'] is True


def test_a_relative_path_is_refused_before_anything_is_read(run_module):
    res = run_module(path_info, {'paths': [{'path': 'etc/profile.d'}, {'path': '/etc'}]}, {})
    assert res.failed
    assert res.result['msg'] == 'path_info: paths must be absolute, got etc/profile.d; give the full path from /.'


def test_a_file_swapped_for_a_link_after_the_stat_is_not_read_through_it(tmp_path):
    target = tmp_path / 'secret'
    target.write_bytes(b'x')
    link = tmp_path / 'env.sh'
    link.symlink_to(target)
    with pytest.raises(OSError):
        domain._sha1(str(link))  # O_NOFOLLOW: the race between lstat and open cannot read the link's target


def test_a_path_with_a_nul_byte_is_an_entry_not_a_traceback(run_module, tmp_path):
    res = run_module(path_info, {'paths': [{'path': str(tmp_path) + '/a\x00b'}, {'path': str(tmp_path)}]}, {})
    assert not res.failed
    broken, fine = res.result['paths']
    assert broken['failed'] is True and 'null' in broken['msg'] and fine['stat']['isdir'] is True


def test_no_path_is_an_empty_answer_and_a_path_below_a_file_is_nothing(run_module, tmp_path):
    (tmp_path / 'f').write_text('x')
    assert run_module(path_info, {'paths': []}, {}).result['paths'] == []
    res = run_module(path_info, {'paths': [{'path': str(tmp_path / 'f' / 'g')}]}, {})
    assert res.result['paths'][0]['stat'] == {'exists': False}
