# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The stage 4 change window: roce_window_stop (a stopped batch, told node by node, and the summary of every node),
roce_batch_problems (the batch size of a serial play) and roce_rollback_message (one node's rollback).

The documentation of each filter is in the .yml file of the same name next to this file; the logic is in
plugins/plugin_utils/_roce_window.py.
"""

from __future__ import annotations

from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

from ansible_collections.npuops.ascend.plugins.plugin_utils import _roce_window


def roce_window_stop(batch, hostvars, all_hosts=None, restore_enabled=True):
    """``{message, nodes, results}`` of a stopped batch of the change window."""
    if not isinstance(batch, (list, tuple)):
        raise AnsibleFilterError('roce_window_stop: the input must be the list of the nodes of the batch, got %r' % (batch,))
    if not hasattr(hostvars, '__getitem__'):
        raise AnsibleFilterError('roce_window_stop: hostvars must be the hostvars mapping, got %s' % type(hostvars).__name__)
    stop = _roce_window.window_stop(batch, hostvars, all_hosts, restore_enabled)
    stop['results'] = _roce_window.stop_results(stop)
    return stop


def roce_batch_problems(value, name='roce_lossless_batch'):
    """[] for a usable batch size, else the sentences that say why not."""
    return _roce_window.batch_problems(value, name)


def roce_rollback_message(result, host, choice, found=None, automatic=False, check_mode=False):
    """``{failed, msg}`` of the rollback of one node."""
    if result is not None and not isinstance(result, Mapping):
        raise AnsibleFilterError('roce_rollback_message: the input must be the registered result of hccn_config, got %r'
                                 % (result,))
    files = found.get('files') if isinstance(found, Mapping) else found
    return _roce_window.rollback_message(result, host, choice, files or [], bool(automatic), bool(check_mode))


class FilterModule:
    """npuops.ascend stage 4 change window filters."""

    def filters(self):
        return {
            'roce_window_stop': roce_window_stop,
            'roce_batch_problems': roce_batch_problems,
            'roce_rollback_message': roce_rollback_message,
        }
