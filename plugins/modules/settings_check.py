#!/usr/bin/python
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

# This module is implemented by the action plugin plugins/action/settings_check.py; this file holds its documentation.

from __future__ import annotations

DOCUMENTATION = r"""
---
module: settings_check
short_description: Check the options of several of the collection's roles in one task
version_added: 0.1.0
author:
  - npuops maintainers (@npuops)
description:
  - Runs ansible-core's own argument-spec check of a role (the check Ansible puts in front of a role that has
    C(meta/argument_specs.yml)) for every role and entry point in O(roles), on the values this node's task sees
    (inventory, extra vars, and the defaults of the roles in scope), templated as Ansible templates them, and fails
    with every problem of every role in one message, in Ansible's words.
  - C(playbooks/site.yml) checks the options of every stage with it in its first play, on every node and whatever the
    tags, before anything changes; its stage plays then import their role without a second check. One task per node
    instead of one per stage and node.
  - It runs inside the controller's Ansible process and never connects to the node.
options:
  roles:
    description: The roles of this collection to check, each with the entry point whose options are checked.
    type: list
    elements: dict
    required: true
    suboptions:
      role:
        description: The role's name (C(numa_bind) or C(npuops.ascend.numa_bind)).
        type: str
        required: true
      entry_point:
        description: The entry point of the role's argument specs.
        type: str
        default: main
extends_documentation_fragment:
  - npuops.ascend.attributes
  - npuops.ascend.attributes.controller
"""

EXAMPLES = r"""
- name: Check every node's options of stages 6 and 7 before anything changes
  npuops.ascend.settings_check:
    roles:
      - {role: numa_bind, entry_point: validate}
      - {role: mindie_config, entry_point: validate}
"""

RETURN = r"""
checked:
  description: The roles and entry points checked, such as C(numa_bind (validate)).
  returned: success
  type: list
  elements: str
problems:
  description: One entry per role and entry point with problems, its messages joined.
  returned: failed
  type: list
  elements: str
msg:
  description: What was checked, or every problem.
  returned: always
  type: str
"""
