"""plugin_utils/node_files.py: what counts as in place is exactly what copy, template and file would leave alone - a
regular file (never a link) with the same SHA-1, owner, group and mode, or a directory with the same owner, group and
mode; anything else, or a reading that failed, goes to the action."""

from __future__ import annotations

import hashlib

import pytest

from ansible_collections.npuops.ascend.plugins.plugin_utils import node_files

SHA = hashlib.sha1(b'export A=1\n').hexdigest()
FILE = {'exists': True, 'isreg': True, 'isdir': False, 'islnk': False, 'mode': '0644', 'uid': 0, 'gid': 0,
        'pw_name': 'root', 'gr_name': 'root', 'checksum': SHA}
DIRECTORY = dict(FILE, isreg=False, isdir=True, mode='0755', checksum=None)


def test_the_checksum_is_the_one_of_the_utf8_text():
    assert node_files.checksum('export A=1\n') == SHA
    assert node_files.checksum('é') == hashlib.sha1('é'.encode()).hexdigest()


def test_a_file_with_the_same_content_owner_group_and_mode_is_in_place():
    assert node_files.in_place(FILE, 'file', 'root', 'root', '0644', SHA) is True
    assert node_files.in_place(FILE, 'file', '0', '0', 0o644, SHA) is True  # ids and an int mode
    assert node_files.in_place(FILE, 'file', None, None, None, SHA) is True  # what the action would not touch


@pytest.mark.parametrize('changes, wanted', [
    ({'checksum': 'f' * 40}, {}), ({'mode': '0664'}, {}), ({'pw_name': 'npuops', 'uid': 1001}, {}),
    ({'gr_name': 'wheel', 'gid': 10}, {}), ({'islnk': True, 'isreg': False}, {}), ({'exists': False}, {}),
    ({'isreg': False, 'isfifo': True}, {}), ({}, {'mode': 'u=rw,g=r,o=r'}), ({}, {'sha1': None}),
    ({'checksum': None}, {}),
])
def test_anything_else_is_not_in_place(changes, wanted):
    args = dict({'owner': 'root', 'group': 'root', 'mode': '0644', 'sha1': SHA}, **wanted)
    assert node_files.in_place(dict(FILE, **changes), 'file', **args) is False


def test_a_directory_is_compared_without_content():
    assert node_files.in_place(DIRECTORY, 'directory', 'root', 'root', '0755') is True
    assert node_files.in_place(DIRECTORY, 'directory', 'root', 'root', '0750') is False
    assert node_files.in_place(FILE, 'directory', 'root', 'root', '0644') is False
    assert node_files.in_place(None, 'directory') is False
    with pytest.raises(ValueError):
        node_files.in_place(FILE, 'socket')


def test_stats_keep_the_paths_that_were_read():
    result = {'paths': [{'path': '/a', 'stat': FILE}, {'path': '/b', 'failed': True, 'msg': 'denied'},
                        {'path': '/c', 'stat': {'exists': False}}]}
    assert node_files.stats(result) == {'/a': FILE, '/c': {'exists': False}}
    assert node_files.stats({'failed': True, 'msg': 'x'}) == {} and node_files.stats(None) == {}


def test_the_kept_result_looks_like_an_unchanged_copy_or_file():
    assert node_files.kept('/etc/x', 'file', SHA) == {
        'changed': False, 'failed': False, 'dest': '/etc/x', 'in_place': True, 'checksum': SHA,
        'msg': '/etc/x is in place (same content, owner, group and mode)'}
    assert node_files.kept('/etc', 'directory')['path'] == '/etc'
    assert node_files.entry('/etc/x', with_checksum=True) == {'path': '/etc/x', 'follow': False, 'checksum': True}
