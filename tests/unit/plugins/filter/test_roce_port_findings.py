"""plugins/filter/roce_port_findings.py publishes the stage 4 and 5 functions of plugins/plugin_utils under their filter names."""

from __future__ import annotations

from ansible_collections.npuops.ascend.plugins.filter import roce_port_findings as filter_file
from ansible_collections.npuops.ascend.plugins.plugin_utils import hccl_env
from ansible_collections.npuops.ascend.plugins.plugin_utils.roce import pairwise, plan, ticket, verify
from ansible_collections.npuops.ascend.tests.unit.plugins.filter.filter_docs import assert_published


def test_each_filter_is_its_plugin_utils_function_and_documented():
    assert_published(filter_file, {
        'roce_port_findings': verify.roce_port_findings,
        'roce_desired_config': plan.roce_desired_config,
        'roce_precheck_findings': verify.roce_precheck_findings,
        'port_config_subset': plan.port_config_subset,
        'changed_ports': ticket.changed_ports,
        'hccl_alignment_findings': verify.hccl_alignment_findings,
        'pfc_steady_findings': verify.pfc_steady_findings,
        'roce_change_ticket': ticket.roce_change_ticket,
        'pairwise_culprit': pairwise.pairwise_culprit,
        'crossnode_findings': pairwise.crossnode_findings,
        'hccl_env_problem_lines': hccl_env.hccl_env_problem_lines,
        'hccl_env_findings': hccl_env.hccl_env_findings,
        'ring_pairs': pairwise.ring_pairs,
        'ring_neighbours': pairwise.ring_neighbours,
    })
