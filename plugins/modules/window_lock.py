#!/usr/bin/python
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

# This module is implemented by the action plugin plugins/action/window_lock.py; this file holds its documentation.

from __future__ import annotations

DOCUMENTATION = r"""
---
module: window_lock
short_description: Take or release the lock of a PoD's change window on the controller
version_added: 0.1.0
author:
  - npuops maintainers (@npuops)
description:
  - The stage 4 change window (playbooks/roce_lossless.yml) and the rollback (playbooks/rollback.yml) take this lock
    before they read or change any node, and release it at the end, also when they stop on a failure. A second window
    (or rollback) of the same PoD started while the lock is held stops before anything is read, with a message that
    names the run that holds it.
  - The lock is the file C(<dir>/.npuops-window-<pod>.lock) on the controller, created with C(O_EXCL). It holds the run
    id, the playbook, the pid of the ansible-playbook process that took it and that process's start time, the
    controller's host name, the user and the UTC start time, as JSON. Every look at it happens under an C(flock) of its
    directory, so two windows started in the same instant see each other.
  - A lock whose process is gone on this controller (no such pid, or a pid with another start time) is stale, for
    example after the controller process was killed. It is taken over, with a warning that names the run that left it.
  - A lock taken on another controller (its host name differs) cannot be checked from here and is never taken over; a
    lock file that cannot be read is never taken over either. The message says to remove the file if that run is gone.
  - The lock is on the controller, so it keeps apart the windows started from one controller (or from several
    controllers that share the report directory, C(npuops_report_dir)); windows started from two controllers with
    separate report directories do not see each other.
  - A run in parts of site.yml (C(npuops_run_part), docs/awx.md) plays stage 4 in several jobs. With O(parts=true) the
    lock is held by the run id, not by a process - its part V(before) takes it, its node parts check it with
    O(state=held), its PoD part releases it. Such a lock is never taken over; another run stops naming it until that
    PoD part ran, or until the operator removes the file.
  - It runs inside the controller's Ansible process and never connects to the node.
options:
  dir:
    description:
      - The directory of the lock file, created when missing; the playbooks use the report root (C(npuops_report_dir),
        the parent of every run directory).
    type: path
    required: true
  pod:
    description:
      - The PoD the lock is for, the inventory group of its nodes (C(npuops_pod_group)); the file name is made of it.
    type: str
    required: true
  run:
    description:
      - The run id written into the lock (the playbooks use the run id that names the report directory).
    type: str
    required: true
  playbook:
    description:
      - The playbook named in the lock and in the messages of a second window.
    type: str
    default: "?"
  state:
    description:
      - V(present) takes the lock (or keeps it when this run holds it already); V(absent) removes it when this run still
        holds it, and otherwise leaves it with a warning.
      - V(held) changes nothing and fails unless the run holds the lock (with O(parts=true), a lock of this run in parts).
    type: str
    choices: [present, absent, held]
    default: present
  parts:
    description:
      - The lock of a run in parts - held by the run id O(run) across the jobs of the run, whichever process or
        controller runs them; never stale by a process.
    type: bool
    default: false
extends_documentation_fragment:
  - npuops.ascend.attributes
attributes:
  check_mode:
    support: full
    details:
      - Takes and releases the lock in check mode as well - a dry run reads the ports, and a window that changes them
        at the same time would make its change ticket wrong.
  diff_mode:
    support: none
  idempotent:
    support: full
    details:
      - Always reports no change; taking a lock this run holds already keeps it.
  platform:
    support: full
    platforms: posix
    description: Runs on the controller only (Linux, for the process start time in C(/proc)).
notes:
  - The pid in the lock is the ansible-playbook process that runs the task, found among the ancestors of the worker.
seealso:
  - module: npuops.ascend.hccn_config
"""

EXAMPLES = r"""
# The collection's playbooks name the run with validate_inventory_run_id (the validate_inventory role sets it).
- name: Take the lock of the PoD before anything reads or changes a node
  npuops.ascend.window_lock:
    dir: "{{ npuops_report_dir | default(lookup('ansible.builtin.env', 'PWD') ~ '/npuops-reports') }}"
    pod: "{{ npuops_pod_group | default('ascend_pod') }}"
    run: "{{ window_run_id }}"
    playbook: roce_lossless.yml
  run_once: true
  vars:
    window_run_id: 20261205T101500Z

- name: Release it at the end
  npuops.ascend.window_lock:
    dir: "{{ npuops_report_dir | default(lookup('ansible.builtin.env', 'PWD') ~ '/npuops-reports') }}"
    pod: "{{ npuops_pod_group | default('ascend_pod') }}"
    run: "{{ window_run_id }}"
    state: absent
  run_once: true
  vars:
    window_run_id: 20261205T101500Z
"""

RETURN = r"""
path:
  description: The lock file.
  returned: always
  type: str
  sample: /srv/npuops-reports/.npuops-window-ascend_pod.lock
holder:
  description: What this run writes into the lock (C(run), C(playbook), C(pid), C(pid_start), C(host), C(user),
    C(started), C(pod), and C(parts) true for a run in parts).
  returned: always
  type: dict
taken_over:
  description: With O(state=present), the record of a stale lock this run took over, else null.
  returned: state is present
  type: dict
released:
  description: With O(state=absent), whether the file was removed.
  returned: state is absent
  type: bool
msg:
  description: What was done.
  returned: always
  type: str
  sample: took the lock /srv/npuops-reports/.npuops-window-ascend_pod.lock for PoD ascend_pod (run 20261203T101500Z, pid 4242)
"""
