"""npuops.ascend.preload_filters: the collection's filter files imported once, in the process that forks the workers.

What a worker of a run does is reproduced in a fresh interpreter: Ansible's plugin loader set up on the
collection root, then a fork that looks up one of the collection's filters the way a template does. The
child reports which filter files it had to import itself: every one without the callback, none with it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from ansible_collections.npuops.ascend.plugins.callback import preload_filters

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
FILTER_DIR = os.path.join(REPO, "plugins", "filter")
PREFIX = "ansible_collections.npuops.ascend.plugins.filter."

WORKER = textwrap.dedent("""
    import json, os, sys
    from ansible.plugins.loader import filter_loader, init_plugin_loader
    init_plugin_loader([sys.argv[1]])
    filter_loader.get('to_json')  # the builtin filters, as Ansible's main process has them
    if sys.argv[2] == 'callback':
        from ansible_collections.npuops.ascend.plugins.callback.preload_filters import CallbackModule
        CallbackModule().v2_playbook_on_start(None)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the worker of one task on one host
        before = set(sys.modules)
        found = filter_loader.get('npuops.ascend.' + sys.argv[3]) is not None
        imported = sorted(m for m in set(sys.modules) - before if m.startswith(%r))
        os.write(write, json.dumps({'found': found, 'imported': imported}).encode())
        os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    print(os.read(read, 1 << 20).decode())
""" % PREFIX)


def filter_files():
    return sorted(PREFIX + name[:-3] for name in os.listdir(FILTER_DIR) if name.endswith(".py") and name != "__init__.py")


def worker(mode, name):
    env = dict(os.environ, PYTHONPATH=os.environ["NPUOPS_COLLECTIONS_ROOT"])
    proc = subprocess.run([sys.executable, "-c", WORKER, os.environ["NPUOPS_COLLECTIONS_ROOT"], mode, name],
                          capture_output=True, text=True, timeout=120, check=False, env=env)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("name", ["switch_config", "summary_lines"])
def test_without_the_callback_every_worker_imports_the_filter_files(name):
    result = worker("none", name)
    assert result["found"]
    # the loader cannot tell the file from the filter's name: it imports files until it finds it
    assert len(result["imported"]) >= 2, result


@pytest.mark.parametrize("name", ["switch_config", "summary_lines", "findings_text"])
def test_with_the_callback_a_worker_imports_no_filter_file(name):
    result = worker("callback", name)
    assert result["found"]
    assert result["imported"] == []


def test_preload_imports_every_filter_file_of_the_collection():
    loaded, failed = preload_filters.preload()
    assert failed == {}
    assert sorted(loaded) == filter_files()
    assert len(loaded) >= 10


def test_a_file_that_cannot_be_imported_is_left_to_the_task(tmp_path, monkeypatch):
    package = tmp_path / "npuops_preload_probe"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "good.py").write_text("VALUE = 1\n")
    (package / "broken.py").write_text("raise RuntimeError('no such helper')\n")
    (package / "sub").mkdir()
    (package / "sub" / "__init__.py").write_text("raise RuntimeError('a package is not a filter file')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        loaded, failed = preload_filters.preload("npuops_preload_probe")
        assert loaded == ["npuops_preload_probe.good"]
        assert list(failed) == ["npuops_preload_probe.broken"]
        assert "RuntimeError: no such helper" in failed["npuops_preload_probe.broken"]
    finally:
        for mod in [m for m in sys.modules if m.startswith("npuops_preload_probe")]:
            del sys.modules[mod]


def test_a_package_that_cannot_be_imported_is_reported_not_raised():
    loaded, failed = preload_filters.preload("npuops_no_such_package_here")
    assert loaded == []
    assert "ModuleNotFoundError" in failed["npuops_no_such_package_here"]


def test_the_example_ansible_cfg_enables_it():
    with open(os.path.join(REPO, "inventories", "example", "ansible.cfg"), encoding="utf-8") as handle:
        lines = [line.split("#")[0].strip() for line in handle]
    enabled = [line for line in lines if line.replace(" ", "").startswith("callbacks_enabled=")]
    assert enabled and "npuops.ascend.preload_filters" in enabled[0].split("=", 1)[1].replace(" ", "").split(",")
