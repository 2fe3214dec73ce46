"""The filter file numa_bind_map publishes the stage 6 functions of plugin_utils/numa.py that a user can call, each with
its documentation; the decisions of stage 6 stay internal to npuops.ascend.stage_numa."""

from __future__ import annotations

from ansible_collections.npuops.ascend.plugins.filter import numa_bind_map as filter_file
from ansible_collections.npuops.ascend.plugins.plugin_utils import numa
from ansible_collections.npuops.ascend.tests.unit.plugins.filter.filter_docs import assert_not_published, assert_published

INTERNAL = ['numa_bind_problems', 'numa_bind_findings', 'numa_bind_run_user', 'numa_bind_restore']


def test_filters_are_registered():
    assert sorted(filter_file.FilterModule().filters()) == ['aicore_stats', 'numa_bind_map']
    assert_published(filter_file, {
        'numa_bind_map': numa.numa_bind_map,
        'aicore_stats': numa.aicore_stats,
    })


def test_the_decisions_of_stage_6_are_not_filters():
    assert_not_published(INTERNAL)
    assert all(callable(getattr(numa, name)) for name in INTERNAL)
