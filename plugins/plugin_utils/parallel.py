# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parallel-strategy advice of the method (parallel_advice): the tensor, pipeline and data parallel sizes that hold a
model's states in the HBM of the PoD's NPUs."""

from __future__ import annotations

import math
import re

from ansible.errors import AnsibleFilterError

from ansible_collections.npuops.ascend.plugins.module_utils._parsers._common import short_repr
from ansible_collections.npuops.ascend.plugins.plugin_utils.figures import figure

HBM_SHARE = 0.8     # the model states may take this share of the HBM; the rest is for activations, buffers and HCCL
MAX_NPUS_PER_NODE = 1024
MAX_NODES = 65536
_NUMBER_RE = re.compile(r'^[0-9]{1,18}(?:\.[0-9]{1,18})?$')


def _number(name, value, whole=False):
    """A positive number (int or float; a string of decimal digits counts), else an error naming ``name``."""
    number = None
    if isinstance(value, bool):
        number = None
    elif isinstance(value, (int, float)):
        number = value
    elif isinstance(value, str) and _NUMBER_RE.match(value.strip()):
        number = float(value.strip()) if '.' in value else int(value.strip())
    if number is None or not math.isfinite(number) or number <= 0 or (whole and number != int(number)):
        raise AnsibleFilterError('parallel_advice: %s %s is not a positive %s' % (name, short_repr(value), 'integer' if whole
                                                                                  else 'number'))
    return int(number) if whole else number


def parallel_advice(model_params_billion, npus_per_node=8, nodes=1, hbm_gb=64, bytes_per_param=18):
    """Tensor, pipeline and data parallel sizes for a model on the PoD: {tp, pp, dp, memory_per_npu_gb, text}."""
    params = _number('model_params_billion', model_params_billion)
    per_node = _number('npus_per_node', npus_per_node, whole=True)
    node_count = _number('nodes', nodes, whole=True)
    for name, value, most in (('npus_per_node', per_node, MAX_NPUS_PER_NODE), ('nodes', node_count, MAX_NODES)):
        if value > most:
            raise AnsibleFilterError('parallel_advice: %s %d is more than %d, the most this filter plans for' % (name, value, most))
    hbm = _number('hbm_gb', hbm_gb)
    per_param = _number('bytes_per_param', bytes_per_param)
    states_gb = params * per_param
    usable_gb = HBM_SHARE * hbm
    total = per_node * node_count
    # tensor parallel: a power of two that divides the NPUs of a node; pipeline parallel: stages across nodes (a number
    # of stages that divides the nodes), only once tensor parallel is as large as a node allows; data parallel: the rest
    tps = [2 ** k for k in range(per_node.bit_length()) if per_node % 2 ** k == 0]
    candidates = [(tp, 1) for tp in tps] + [(tps[-1], pp) for pp in range(2, node_count + 1) if node_count % pp == 0]
    for tp, pp in candidates:
        if states_gb / (tp * pp) <= usable_gb:
            break
    else:
        tp, pp = tps[-1], node_count
        raise AnsibleFilterError(
            'parallel_advice: model_params_billion %s does not fit the PoD: its weights, gradients and optimizer states take %s x %s '
            '= %s GB, and the largest split, tensor parallel %d inside a node x pipeline parallel %d across the %d node%s = %d '
            'NPUs, leaves %s GB on each NPU, above %d %% of its %s GB of HBM (%s GB)'
            % (figure(params), figure(params), figure(per_param), figure(states_gb), tp, pp, node_count, '' if node_count == 1 else 's',
               tp * pp, figure(states_gb / (tp * pp)), round(HBM_SHARE * 100), figure(hbm), figure(usable_gb)))
    dp = total // (tp * pp)
    per_npu = states_gb / (tp * pp)
    text = ('TP %d x PP %d x DP %d on %d NPUs: %s billion parameters x %s bytes = %s GB of weights, gradients and optimizer '
            'states, %s GB on each NPU, within %d %% of %s GB (%s GB); tensor parallel %d inside each node, %s, data parallel %d '
            'with the NPUs that are left' % (
                tp, pp, dp, total, figure(params), figure(per_param), figure(states_gb), figure(per_npu), round(HBM_SHARE * 100),
                figure(hbm), figure(usable_gb), tp, 'pipeline parallel %d across nodes' % pp if pp > 1 else 'no pipeline parallel',
                dp))
    return {'tp': tp, 'pp': pp, 'dp': dp, 'memory_per_npu_gb': round(per_npu, 2), 'text': text}
