"""plugins/filter/roce_change_ticket.py publishes the stage 4 functions of plugins/plugin_utils under their filter
names; the checks that only npuops.ascend.stage_roce runs are not filters."""

from __future__ import annotations

from ansible_collections.npuops.ascend.plugins.filter import roce_change_ticket as filter_file
from ansible_collections.npuops.ascend.plugins.plugin_utils.roce import pairwise, plan, ticket
from ansible_collections.npuops.ascend.tests.unit.plugins.filter.filter_docs import assert_not_published, assert_published


def test_each_filter_is_its_plugin_utils_function_and_documented():
    assert_published(filter_file, {
        'roce_desired_config': plan.roce_desired_config,
        'roce_change_ticket': ticket.roce_change_ticket,
        'pairwise_culprit': pairwise.pairwise_culprit,
        'crossnode_findings': pairwise.crossnode_findings,
        'ring_pairs': pairwise.ring_pairs,
    })


def test_the_checks_of_the_stage_4_action_are_not_filters():
    assert_not_published(['hccl_env_problem_lines', 'roce_port_findings', 'roce_precheck_findings', 'port_config_subset', 'changed_ports',
                          'pfc_steady_findings', 'ring_neighbours', 'switch_port_findings', 'switch_pfc_findings',
                          'switch_ecn_findings'])
