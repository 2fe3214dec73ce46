"""The filter file numa_bind_map publishes the stage 6 functions of plugin_utils/numa.py, each with its documentation."""

from __future__ import annotations

from ansible_collections.npuops.ascend.plugins.filter import numa_bind_map as filter_file
from ansible_collections.npuops.ascend.plugins.plugin_utils import numa
from ansible_collections.npuops.ascend.tests.unit.plugins.filter.filter_docs import assert_published


def test_filters_are_registered():
    assert sorted(filter_file.FilterModule().filters()) == ['aicore_stats', 'numa_bind_findings', 'numa_bind_map',
                                                            'numa_bind_problems', 'numa_bind_restore', 'numa_bind_run_user']
    assert_published(filter_file, {
        'numa_bind_problems': numa.numa_bind_problems,
        'numa_bind_map': numa.numa_bind_map,
        'numa_bind_findings': numa.numa_bind_findings,
        'numa_bind_run_user': numa.numa_bind_run_user,
        'numa_bind_restore': numa.numa_bind_restore,
        'aicore_stats': numa.aicore_stats,
    })
