"""Node state: one JSON file per simulated node, guarded by an fcntl lock file beside it.

Up to eight ``hccn_tool`` processes may set different devices of one node at the same time,
so every change is a read-modify-write under an exclusive lock (``transaction``); reads take
a shared lock. The file is replaced atomically (write to a temporary file, then rename).

A user other than root may read: a workload launched as a non-root user (the NUMA launcher of
stage 6 runs ``npu-sim train`` that way) reads the state without the lock when it may not open
the lock file for writing (the rename makes every read see a whole file), and its vendor-tool
calls are not recorded when it may not write the call log (``calls_path`` names ``/dev/null``).

Every simulated call reads this file, so reading it is kept cheap (docs/simulator-cost.md): the module imports
nothing heavier than ``fcntl``; JSON is read and written by jsoncodec (byte-identical to the json package, without
importing it), and ``glob``/``copy`` are imported only by the calls that need them. What the document holds is
node.py's (a fresh node) and ports.py's (its NPU ports); which faults apply is faults.py's.
"""

import fcntl
import os

from . import jsoncodec

DEFAULT_STATE_PATH = "/var/lib/npu-sim/state.json"


class StateError(Exception):
    """The state file is missing or unreadable."""


def state_path(explicit=None):
    return explicit or os.environ.get("NPU_SIM_STATE") or DEFAULT_STATE_PATH


def calls_path(path, for_writing=True):
    """The call log beside the state; ``/dev/null`` for a process that may not append to it (a non-root user)."""
    log = os.path.join(os.path.dirname(os.path.abspath(path)), "calls.jsonl")
    if for_writing and not _may_write(log):
        return os.devnull
    return log


def _may_write(path):
    if os.path.exists(path):
        return os.access(path, os.W_OK)
    directory = os.path.dirname(path)
    return not os.path.isdir(directory) or os.access(directory, os.W_OK | os.X_OK)


def counters_path(path):
    """Use counts of counted faults (``busy --value K``), kept beside the state file so that a
    GET never rewrites ``state.json`` (check-mode runs rely on it staying byte-identical)."""
    return os.path.join(os.path.dirname(os.path.abspath(path)), "fault_counters.json")


# ----------------------------------------------------------------------------- locked reads and writes

class locked:  # pylint: disable=invalid-name
    """``with locked(path, exclusive):`` holds the flock of ``<state>.lock``, shared or exclusive (a class,
    not a contextlib generator: contextlib would cost every call a few milliseconds of imports)."""

    def __init__(self, path, exclusive):
        self.path = path
        self.exclusive = exclusive
        self.fd = None

    def __enter__(self):
        path = self.path
        directory = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(directory):
            raise StateError("no simulator state at %s (run: npu-sim init --state %s ...)" % (path, path))
        try:
            fd = os.open(os.path.abspath(path) + ".lock", os.O_RDWR | os.O_CREAT, 0o644)
        except PermissionError:
            if self.exclusive:
                raise
            # a non-root reader: the lock file is root's; an atomic rename never shows a partial file
            return self
        try:
            fcntl.flock(fd, fcntl.LOCK_EX if self.exclusive else fcntl.LOCK_SH)
        except BaseException:
            os.close(fd)
            raise
        self.fd = fd
        return self

    def __exit__(self, *exc_info):
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
        return False


def read(path):
    """The state at ``path``, parsed (the caller holds the lock)."""
    try:
        with open(path, encoding="utf-8") as handle:
            return jsoncodec.loads(handle.read())
    except FileNotFoundError:
        raise StateError("no simulator state at %s (run: npu-sim init --state %s ...)" % (path, path)) from None
    except ValueError as exc:
        raise StateError("simulator state %s is not valid JSON: %s" % (path, exc)) from None


def _write(path, data):
    text = jsoncodec.dumps(data, indent=1) + "\n"
    tmp = "%s.tmp.%d" % (os.path.abspath(path), os.getpid())
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(tmp, path)


# load(path) hands out a state read moments before in this process once (see handover)
_HANDED_OVER = {}


def handover(path, data):
    """Give ``data``, the state just read from ``path`` with load(), to the next load(path) of this process, once;
    ``data`` None takes it back. The entry point reads the state for its latency setting; without latency the
    tool then gets that same state instead of reading and parsing the file a second time."""
    if data is None:
        _HANDED_OVER.pop(path, None)
    else:
        _HANDED_OVER[path] = data


def load(path):
    data = _HANDED_OVER.pop(path, None)
    if data is not None:
        return data
    with locked(path, False):
        return read(path)


def save(path, data):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with locked(path, True):
        _write(path, data)


class transaction:  # pylint: disable=invalid-name
    """``with transaction(path) as data:`` exclusive read-modify-write of the state file: ``data`` is written
    back when the block ends without an exception."""

    def __init__(self, path):
        self.lock = locked(path, True)
        self.path = path
        self.data = None

    def __enter__(self):
        self.lock.__enter__()
        try:
            self.data = read(self.path)
        except BaseException:
            self.lock.__exit__(None, None, None)
            raise
        return self.data

    def __exit__(self, exc_type, exc, traceback):
        try:
            if exc_type is None:
                _write(self.path, self.data)
        finally:
            self.lock.__exit__(None, None, None)
        return False


def _load_if_contains(path, needle):
    """The state at ``path``, or None when its text does not hold ``needle`` (not parsed: a ping or an address
    check looks for one address among every node of the PoD, and parsing each node's state costs the most)."""
    with locked(path, False):
        try:
            with open(path, encoding="utf-8") as handle:
                text = handle.read()
        except FileNotFoundError:
            raise StateError("no simulator state at %s" % path) from None
        if needle not in text:
            return None
        try:
            return jsoncodec.loads(text)
        except ValueError as exc:
            raise StateError("simulator state %s is not valid JSON: %s" % (path, exc)) from None


def pod_states(st, local_path, contains=None):
    """The PoD registry: every node state under ``<pod_dir>/*/state/state.json`` plus the local one.

    With ``contains`` (a JSON-encoded string such as ``'"10.20.0.11"'``) another node's state is only parsed,
    and returned, when its text holds it; the local state is always returned."""
    paths = []
    pod_dir = st.get("pod_dir")
    if pod_dir:
        import glob
        paths.extend(sorted(glob.glob(os.path.join(pod_dir, "*", "state", "state.json"))))
    paths.append(local_path)
    seen = set()
    result = []
    for path in paths:
        real = os.path.realpath(path)
        if real in seen:
            continue
        seen.add(real)
        if real == os.path.realpath(local_path):
            result.append((path, st))
            continue
        try:
            state = load(path) if contains is None else _load_if_contains(path, contains)
        except (StateError, OSError):
            continue
        if state is not None:
            result.append((path, state))
    return result


# ----------------------------------------------------------------------------- parts of the document

def get_path(data, key):
    node = data
    for part in key.split("."):
        if isinstance(node, list):
            node = node[int(part)]
        else:
            node = node[part]
    return node


def set_path(data, key, value):
    parts = key.split(".")
    node = data
    for part in parts[:-1]:
        node = node[int(part)] if isinstance(node, list) else node.setdefault(part, {})
    last = parts[-1]
    if isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value


def deep_copy(data):
    """copy.deepcopy of state data: dicts, lists and scalars are copied here (several times faster than
    copy.deepcopy, and without importing it), anything else by copy.deepcopy. Unlike copy.deepcopy, an object
    that appears twice is copied twice; JSON read from a file never has such sharing."""
    kind = type(data)
    if kind is dict:
        return {key: deep_copy(value) for key, value in data.items()}
    if kind is list:
        return [deep_copy(value) for value in data]
    if kind is str or kind is int or kind is float or kind is bool or data is None:
        return data
    import copy
    return copy.deepcopy(data)
