"""The figures the playbook benchmark derives per run (bench/bench_playbooks.py, bench/bench_modules.py and the
stats callback bench/callback_plugins/npuops_bench_stats.py): host-tasks per node, the main process's CPU per
host-task, the callbacks an ansible.cfg enables, and what --quick selects."""

import importlib.util
import os

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _load(name, *path):
    spec = importlib.util.spec_from_file_location(name, os.path.join(REPO, *path))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def playbooks():
    return _load("npuops_bench_playbooks", "bench", "bench_playbooks.py")


@pytest.fixture(scope="module")
def modules(playbooks):
    import sys
    sys.modules.setdefault("bench_playbooks", playbooks)
    return _load("npuops_bench_modules", "bench", "bench_modules.py")


@pytest.fixture(scope="module")
def stats_callback():
    return _load("npuops_bench_stats", "bench", "callback_plugins", "npuops_bench_stats.py")


def test_host_tasks_counts_ok_skipped_failed_unreachable_not_changed_twice(stats_callback):
    summary = dict(ok=10, changed=4, skipped=3, failures=1, unreachable=1, rescued=0, ignored=0)
    assert stats_callback.host_tasks(summary) == 15


def test_task_figures_first_node_apart_and_median_of_the_others(playbooks):
    stats = {"hosts": {"localhost": 10, "node01": 100, "node02": 30, "node03": 34, "node04": 31},
             "main_cpu_s": 2.05}
    figures = playbooks.task_figures(stats, ["node01", "node02", "node03", "node04"])
    assert figures["tasks_first_node"] == 100
    assert figures["tasks_per_node"] == 31
    assert figures["host_tasks"] == 205
    assert figures["main_cpu_ms_per_host_task"] == 10.0


def test_task_figures_without_stats_is_empty(playbooks):
    assert playbooks.task_figures(None, ["node01"]) == {}
    assert playbooks.task_figures({"hosts": {}}, ["node01"]) == {}


def test_callbacks_enabled_keeps_the_config_s_own(playbooks, tmp_path):
    cfg = tmp_path / "ansible.cfg"
    cfg.write_text("[defaults]\ncallbacks_enabled = npuops.ascend.preload_filters, ansible.posix.profile_tasks\n")
    assert playbooks._callbacks_enabled(str(cfg)) == ["npuops.ascend.preload_filters", "ansible.posix.profile_tasks"]
    empty = tmp_path / "stock.cfg"
    empty.write_text("[defaults]\n")
    assert playbooks._callbacks_enabled(str(empty)) == []


def test_the_example_config_is_read_with_its_preload_callback(playbooks):
    assert "npuops.ascend.preload_filters" in playbooks._callbacks_enabled(playbooks.EXAMPLE_CFG)


def test_quick_selects_site_window_health_at_4_and_16_nodes_once(modules):
    args = modules.parse_args(["--quick"])
    assert args.only == ["site", "window", "health"]
    assert args.playbook_nodes == [4, 16]
    assert args.repeat == 1
    args = modules.parse_args(["--quick", "--repeat", "2", "--only", "site"])
    assert args.repeat == 2 and args.only == ["site"]
    assert modules.parse_args([]).playbook_nodes == [4, 16, 32]
