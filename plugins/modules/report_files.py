#!/usr/bin/python
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

# This module is implemented by the action plugin plugins/action/report_files.py; this file holds its documentation.

from __future__ import annotations

DOCUMENTATION = r"""
---
module: report_files
short_description: Write report files on the controller without a module run per file
version_added: 0.1.0
author:
  - npuops maintainers (@npuops)
description:
  - Writes one or more text files into one directory on the Ansible controller, creating the directory and its
    parents when missing. Each file is written whole to a temporary file and renamed, so a reader never sees half a
    report.
  - It runs inside the controller's Ansible process and never connects to the node. The stage roles use it for their
    per-node JSON and per-PoD Markdown reports instead of M(ansible.builtin.copy) delegated to localhost, which runs
    a module process per file (about 0.45 s of controller CPU each, the largest part of the controller's work when
    reports are written for 16 or 32 nodes).
  - Reports are not changes to the PoD, so the task always reports C(changed=false); that keeps the idempotence
    check of a second run about the nodes. A dry run (C(--check)) writes its reports too, as the change ticket of a
    change window is one.
  - Nothing is written when any argument is wrong (a file name with C(/), a name given twice, a content that is
    not text, a mode that is not octal).
options:
  dir:
    description:
      - The directory on the controller to write into. Created with O(dir_mode) when missing.
    type: path
    required: true
  files:
    description:
      - The files to write, in this order. An empty list creates the directory only.
    type: list
    elements: dict
    required: true
    suboptions:
      name:
        description:
          - The file name inside O(dir), without C(/).
        type: str
        required: true
      content:
        description:
          - The text of the file, written as UTF-8. Use P(ansible.builtin.to_nice_json#filter) for data and
            P(ansible.builtin.template#lookup) for a template.
        type: raw
        required: true
  mode:
    description:
      - The permissions of every file, as an octal string such as C("0644").
    type: raw
    default: "0644"
  dir_mode:
    description:
      - The permissions of a directory this task creates (an existing one is left as it is).
    type: raw
    default: "0755"
extends_documentation_fragment:
  - npuops.ascend.attributes
attributes:
  check_mode:
    support: full
    details:
      - Writes the reports in check mode as well; they describe the dry run and change nothing on the nodes.
  diff_mode:
    support: none
  idempotent:
    support: full
    details:
      - Always reports no change; rewriting a report with the same content leaves the same file.
  platform:
    support: full
    platforms: posix
    description: Runs on the controller only.
notes:
  - The task needs no connection to the node it runs for, so it can run for every node of the PoD at the cost of a
    M(ansible.builtin.set_fact).
seealso:
  - module: ansible.builtin.copy
"""

EXAMPLES = r"""
- name: Read the health of this node
  npuops.ascend.health_info:
  register: health

- name: Write the report of this node (JSON for tools, a line for people)
  npuops.ascend.report_files:
    dir: "{{ npuops_report_dir | default('/var/log/npuops/reports') }}/health"
    files:
      - name: "{{ inventory_hostname }}.json"
        content: "{{ health.npu.summary | to_nice_json }}\n"
      - name: "{{ inventory_hostname }}.txt"
        content: "{{ inventory_hostname }}: {{ 'healthy' if health.npu.summary.all_healthy else 'NOT healthy' }}\n"

- name: Write one file for the whole PoD
  npuops.ascend.report_files:
    dir: /var/log/npuops/reports
    files:
      - name: nodes.txt
        content: "{{ ansible_play_hosts | join('\n') }}\n"
    mode: "0640"
  run_once: true
"""

RETURN = r"""
dir:
  description: The directory written to.
  returned: success
  type: str
  sample: /var/log/npuops/reports/20261203T101500Z/stage0-health_check
files:
  description: The paths of the files written, in the order given.
  returned: success
  type: list
  elements: str
  sample: [/var/log/npuops/reports/20261203T101500Z/stage0-health_check/node01.json]
"""
