"""parallel_advice: the smallest TP x PP that holds the model states, and the refusals with their numbers."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.npuops.ascend.plugins.plugin_utils.parallel import parallel_advice


def test_70b_on_4_nodes():
    assert parallel_advice(70, nodes=4) == {
        'tp': 8, 'pp': 4, 'dp': 1, 'memory_per_npu_gb': 39.38,
        'text': 'TP 8 x PP 4 x DP 1 on 32 NPUs: 70 billion parameters x 18 bytes = 1260 GB of weights, gradients and optimizer '
                'states, 39.38 GB on each NPU, within 80 % of 64 GB (51.2 GB); tensor parallel 8 inside each node, pipeline '
                'parallel 4 across nodes, data parallel 1 with the NPUs that are left'}


@pytest.mark.parametrize('args, kwargs, expected', [
    ((1,), {}, (1, 1, 8, 18.0)),                   # 18 GB fit one NPU
    ((7,), {}, (4, 1, 2, 31.5)),                   # 126 GB: 2 NPUs give 63 GB > 51.2, 4 give 31.5
    ((7,), {'nodes': 4}, (4, 1, 8, 31.5)),
    ((13,), {'nodes': 2}, (8, 1, 2, 29.25)),
    ((34,), {'nodes': 4}, (8, 2, 2, 38.25)),       # 612 GB: 8 NPUs give 76.5 GB, 16 give 38.25
    ((34,), {'nodes': 3}, (8, 3, 1, 25.5)),        # PP divides the nodes: 2 stages cannot split 3 nodes
    ((7,), {'hbm_gb': 32}, (8, 1, 1, 15.75)),
    ((7,), {'bytes_per_param': 2}, (1, 1, 8, 14.0)),
    (('8', '8', '2'), {}, (4, 1, 4, 36.0)),         # strings of digits, as an INI inventory gives them
    ((7,), {'npus_per_node': 6, 'nodes': 2}, (2, 2, 3, 31.5)),
])
def test_advice(args, kwargs, expected):
    advice = parallel_advice(*args, **kwargs)
    assert (advice['tp'], advice['pp'], advice['dp'], advice['memory_per_npu_gb']) == expected
    assert advice['text'].startswith('TP %d x PP %d x DP %d on ' % expected[:3])


@pytest.mark.parametrize('args, kwargs, message', [
    ((70,), {}, 'parallel_advice: model_params_billion 70 does not fit the PoD: its weights, gradients and optimizer states '
                'take 70 x 18 = 1260 GB, and the largest split, tensor parallel 8 inside a node x pipeline parallel 1 across '
                'the 1 node = 8 NPUs, leaves 157.5 GB on each NPU, above 80 % of its 64 GB of HBM (51.2 GB)'),
    ((70,), {'nodes': 3}, 'parallel_advice: model_params_billion 70 does not fit the PoD: its weights, gradients and optimizer '
                          'states take 70 x 18 = 1260 GB, and the largest split, tensor parallel 8 inside a node x pipeline '
                          'parallel 3 across the 3 nodes = 24 NPUs, leaves 52.5 GB on each NPU, above 80 % of its 64 GB of HBM '
                          '(51.2 GB)'),
    ((0,), {}, 'parallel_advice: model_params_billion 0 is not a positive number'),
    ((True,), {}, 'parallel_advice: model_params_billion True is not a positive number'),
    ((-7,), {}, 'parallel_advice: model_params_billion -7 is not a positive number'),
    ((float('nan'),), {}, 'parallel_advice: model_params_billion nan is not a positive number'),
    ((7,), {'npus_per_node': 8.5}, 'parallel_advice: npus_per_node 8.5 is not a positive integer'),
    ((7,), {'nodes': 0}, 'parallel_advice: nodes 0 is not a positive integer'),
    ((7,), {'nodes': 2 ** 70}, 'parallel_advice: nodes 1180591620717411303424 is more than 65536, the most this filter plans for'),
    ((7,), {'npus_per_node': 2048}, 'parallel_advice: npus_per_node 2048 is more than 1024, the most this filter plans for'),
    ((7,), {'hbm_gb': '64GB'}, "parallel_advice: hbm_gb '64GB' is not a positive number"),
    ((7,), {'bytes_per_param': None}, 'parallel_advice: bytes_per_param None is not a positive number'),
])
def test_refusals(args, kwargs, message):
    with pytest.raises(AnsibleFilterError) as error:
        parallel_advice(*args, **kwargs)
    assert str(error.value) == message
