# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Callback plugin npuops.ascend.preload_filters: load the collection's filters once per run.

Ansible forks a worker process for every task on every host. The first time a worker templates a
filter of a collection, it imports every filter file of that collection (the loader cannot tell
from a filter's name which file holds it) and the helpers they import, which the collection loader
compiles from source: about 15-20 ms of controller CPU, paid again in the next worker. Imported
once in Ansible's main process before the first play, they are inherited by every worker the run
forks.
"""

from __future__ import annotations

DOCUMENTATION = r"""
name: preload_filters
type: aggregate
short_description: Load the filter plugins of npuops.ascend once per run instead of once per task and host
description:
  - At the start of a playbook run, imports every filter plugin file of the npuops.ascend collection (and
    the helpers they import) in Ansible's main process.
  - Ansible runs each task on each host in a worker process forked from the main process. Without this
    plugin every worker that templates one of the collection's filters imports the collection's filter
    files again, and the helpers they share, which the collection loader compiles from source; with it,
    the workers inherit them. The stage roles template the collection's filters in most of their tasks.
  - It prints nothing and changes nothing on the nodes. A filter file that cannot be imported is left
    alone here; the task that uses the filter reports the error as it would without this plugin.
  - Enable it in C(ansible.cfg) (C(callbacks_enabled = npuops.ascend.preload_filters)), as
    C(inventories/example/ansible.cfg) of the collection does. See C(docs/scaling.md) for what it saves.
version_added: 0.1.0
author:
  - npuops maintainers (@npuops)
requirements:
  - enabled in callbacks_enabled
"""

import importlib  # noqa: E402
import pkgutil  # noqa: E402

from ansible.plugins.callback import CallbackBase  # noqa: E402
from ansible.utils.display import Display  # noqa: E402

display = Display()

FILTER_PACKAGE = 'ansible_collections.npuops.ascend.plugins.filter'


def preload(package=FILTER_PACKAGE):
    """Import every module of the filter package. Returns (loaded names, {name: error text})."""
    loaded, failed = [], {}
    try:
        pkg = importlib.import_module(package)
    except Exception as exc:  # pylint: disable=broad-exception-caught
        return loaded, {package: '%s: %s' % (type(exc).__name__, exc)}
    for found in sorted(pkgutil.iter_modules(pkg.__path__, prefix=package + '.'), key=lambda info: info.name):
        if found.ispkg:
            continue
        name = found.name
        try:
            importlib.import_module(name)
        except Exception as exc:  # pylint: disable=broad-exception-caught
            # the worker that uses a filter of this file reports the error in the task, as without preloading
            failed[name] = '%s: %s' % (type(exc).__name__, exc)
        else:
            loaded.append(name)
    return loaded, failed


class CallbackModule(CallbackBase):
    """Imports the collection's filter files in the main process when the playbook starts."""

    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = 'aggregate'
    CALLBACK_NAME = 'npuops.ascend.preload_filters'
    CALLBACK_NEEDS_ENABLED = True

    def v2_playbook_on_start(self, playbook):
        loaded, failed = preload()
        display.vvv('npuops.ascend.preload_filters: imported %d filter files' % len(loaded))
        for name, why in failed.items():
            display.vvv('npuops.ascend.preload_filters: %s not imported (%s)' % (name, why))
