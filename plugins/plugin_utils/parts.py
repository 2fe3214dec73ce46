# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The part of a run a task is in (``npuops_run_part``) and the nodes its PoD-wide steps work over.

One run (``all``, the default) plays every stage on every node: a PoD step works over the nodes of the play. A run in
parts (docs/awx.md) plays the node part of each stage on slices of the PoD (``nodes``: the play holds one slice) and
the PoD part once (``pod``): its plays run on one node of the PoD group, as the PoD steps only run on the controller
and read the node parts' records, so the nodes they judge are the PoD group of the inventory, not the play. Stage 4
also has a PoD part before its node parts (``before``: the lock of the NPU ports and the cross-node benchmark before
the change), played the same way as ``pod``.
"""

from __future__ import annotations

from ansible_collections.npuops.ascend.plugins.plugin_utils.store import StoreError

PARTS = ('all', 'nodes', 'pod', 'before')
# the parts whose plays run on one node and whose PoD steps judge the PoD group
POD_PARTS = ('pod', 'before')
DEFAULT_GROUP = 'ascend_pod'


class PartError(StoreError):
    """npuops_run_part (or the PoD group it needs) is not usable; the stage actions report it as a store error."""


def run_part(task_vars):
    """The run part of the task's variables (``npuops_run_part``, default ``all``), else PartError."""
    part = (task_vars or {}).get('npuops_run_part')
    part = 'all' if part is None or part == '' else part
    if part not in PARTS:
        raise PartError('npuops_run_part is %r: use all (one run over the PoD, the default), nodes (the node part of each '
                        'stage, on a slice of the PoD), pod (the PoD part, once over the whole PoD) or before (the PoD part of stage 4 '
                        'before its node parts)' % (part,))
    return part


def play_nodes(task_vars):
    """``(nodes, active)`` a PoD step works over: the nodes of the play and those still in it; in the PoD part, the
    nodes of the PoD group (``npuops_pod_group``) for both, also in the part ``before`` (the PoD part never connects to them; the store's lost-node
    records say which ones the node parts lost)."""
    task_vars = task_vars or {}
    if run_part(task_vars) in POD_PARTS:
        group = task_vars.get('npuops_pod_group') or DEFAULT_GROUP
        nodes = (task_vars.get('groups') or {}).get(group)
        if not nodes:
            raise PartError('the PoD part (npuops_run_part=pod) judges the nodes of the group %r (npuops_pod_group), '
                            'which the inventory does not have or which has no node' % (group,))
        return [str(node) for node in nodes], [str(node) for node in nodes]
    return ([str(node) for node in task_vars.get('ansible_play_hosts_all') or []],
            [str(node) for node in task_vars.get('ansible_play_hosts') or []])
