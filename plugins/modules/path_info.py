#!/usr/bin/python
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: path_info
short_description: Read what is at several paths of a node in one task (type, owner, group, mode, SHA-1)
version_added: 0.1.0
author:
  - npuops maintainers (@npuops)
description:
  - Examines every path of O(paths) in one module run and returns, per path, the keys of M(ansible.builtin.stat)
    that decide whether a file or directory is as wanted - C(exists), C(isreg), C(isdir), C(islnk), C(isfifo),
    C(issock), C(ischr), C(isblk), C(mode), C(uid), C(gid), C(pw_name), C(gr_name), C(size), C(lnk_target) for a
    link, and C(checksum) (SHA-1) for a regular file when asked.
  - A link is not followed unless the entry says O(paths[].follow); the checksum is read with C(O_NOFOLLOW), so it is
    never the checksum of a link's target.
  - The stage actions of the collection ask it once before they hand files to M(ansible.builtin.copy),
    M(ansible.builtin.template) or M(ansible.builtin.file), so that what is already in place costs no further module
    run.
  - A path that cannot be examined (permission denied, a loop of links) is an entry with C(failed) and C(msg); it
    never fails the task. Read-only; never reports a change.
options:
  paths:
    description:
      - The paths to examine, in the order the results are returned.
    type: list
    elements: dict
    required: true
    suboptions:
      path:
        description:
          - An absolute path.
        type: path
        required: true
      follow:
        description:
          - Examine what a link points to instead of the link itself.
        type: bool
        default: false
      checksum:
        description:
          - Return the SHA-1 of a regular file in C(checksum) (the same as M(ansible.builtin.stat)'s default).
        type: bool
        default: false
extends_documentation_fragment:
  - npuops.ascend.attributes
  - npuops.ascend.attributes.info_module
attributes:
  platform:
    support: full
    platforms: posix
    description: Any POSIX system (C(lstat), C(stat) and the account databases).
seealso:
  - module: ansible.builtin.stat
"""

EXAMPLES = r"""
- name: Read the launcher and its directory in one task
  npuops.ascend.path_info:
    paths:
      - path: /usr/local/bin/npu-bind
        checksum: true
      - path: /usr/local/bin
        follow: true
  register: paths

- name: Stop when the launcher is a link
  ansible.builtin.assert:
    that: not paths.paths[0].stat.islnk | default(false)
    fail_msg: "{{ inventory_hostname }}: /usr/local/bin/npu-bind is a link to {{ paths.paths[0].stat.lnk_target | default('?') }}"
"""

RETURN = r"""
paths:
  description:
    - One entry per path of O(paths), in order - C(path), C(follow) and C(stat) (C(exists) false when nothing is
      there), or C(failed) and C(msg) when the path could not be examined.
  returned: success
  type: list
  elements: dict
  sample:
    - path: /etc/profile.d/npuops-hccl.sh
      follow: false
      stat: {exists: true, isreg: true, isdir: false, islnk: false, isfifo: false, issock: false, ischr: false,
             isblk: false, mode: "0644", uid: 0, gid: 0, pw_name: root, gr_name: root, size: 412,
             checksum: 9c1185a5c5e9fc54612808977ee8f548b2258d31}
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402

from ansible_collections.npuops.ascend.plugins.module_utils._domain.path_info import read_paths  # noqa: E402


def main():
    module = AnsibleModule(
        argument_spec=dict(
            paths=dict(type='list', elements='dict', required=True, options=dict(
                path=dict(type='path', required=True),
                follow=dict(type='bool', default=False),
                checksum=dict(type='bool', default=False),
            )),
        ),
        supports_check_mode=True,
    )
    relative = [entry['path'] for entry in module.params['paths'] if not entry['path'].startswith('/')]
    if relative:
        module.fail_json(msg='path_info: paths must be absolute, got %s; give the full path from /.'
                         % ', '.join(relative))
    module.exit_json(changed=False, paths=read_paths(module.params['paths']))


if __name__ == '__main__':
    main()
