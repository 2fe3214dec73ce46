"""Faults injected with ``npu-sim fault``: which apply to a device, and the counted ones used up call by call.

The faults are a list in the node state (``faults``); the use counts of a counted fault (``busy --value K``)
live in ``fault_counters.json`` beside the state so that a GET never rewrites ``state.json``.
"""

import os

from . import jsoncodec
from . import statefile


def faults_for(st, kind, device=None):
    """Active faults of one kind that apply to ``device`` (a fault without a device applies to all)."""
    found = []
    for fault in st.get("faults", []):
        if fault.get("kind") != kind:
            continue
        if device is not None and fault.get("device") is not None and int(fault["device"]) != int(device):
            continue
        found.append(fault)
    return found


def fault_key(fault):
    return "%s|%s|%s|%r" % (fault.get("kind"), fault.get("device"), fault.get("tool"), fault.get("since"))


def consume_fault(path, fault):
    """Use up one of the ``value`` calls of a counted fault. True while calls are left.

    Read-modify-write of the counters file under the exclusive state lock, so concurrent
    callers never answer more than ``value`` times; the state file itself is not written."""
    key = fault_key(fault)
    limit = int(fault.get("value") or 0)
    counters_file = statefile.counters_path(path)
    with statefile.locked(path, True):
        live = set(fault_key(item) for item in statefile.read(path).get("faults", []))
        if key not in live:
            return False
        try:
            with open(counters_file, encoding="utf-8") as handle:
                counters = jsoncodec.loads(handle.read())
        except (OSError, ValueError):
            counters = {}
        counters = dict((name, int(used)) for name, used in counters.items() if name in live)
        used = counters.get(key, 0)
        if used >= limit:
            return False
        counters[key] = used + 1
        tmp = "%s.tmp.%d" % (counters_file, os.getpid())
        with open(tmp, "w", encoding="utf-8") as handle:
            handle.write(jsoncodec.dumps(dict(sorted(counters.items()))))  # json.dump(counters, sort_keys=True)
            handle.write("\n")
        os.replace(tmp, counters_file)
        return True


def fault_fires(path, faults):
    """True when one of ``faults`` (busy-like) answers this call: one without a value always
    does; one with ``value`` K only for the next K calls (counted outside the state file)."""
    for fault in faults:
        if fault.get("value") in (None, ""):
            return True
    return any(consume_fault(path, fault) for fault in faults)
