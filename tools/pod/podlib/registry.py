"""Host-wide registry of PoDs and of the mount points podctl created."""

import contextlib
import fcntl
import hashlib
import json
import os

from .common import REGISTRY
from .procs import read_text


@contextlib.contextmanager
def registry_lock():
    os.makedirs(os.path.join(REGISTRY, "pods"), exist_ok=True)
    with open(os.path.join(REGISTRY, "lock"), "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        yield


def _registry_created():
    try:
        with open(os.path.join(REGISTRY, "created.json")) as fh:
            return set(json.load(fh))
    except (OSError, ValueError):
        return set()


def _registry_write_created(paths):
    with open(os.path.join(REGISTRY, "created.json"), "w") as fh:
        json.dump(sorted(paths), fh)


def _pod_ref(base):
    return os.path.join(REGISTRY, "pods", hashlib.sha1(base.encode()).hexdigest()[:16])


def register_pod(base, mount_points):
    """Record the PoD and create the host mount points that do not exist yet."""
    with registry_lock():
        with open(_pod_ref(base), "w") as fh:
            fh.write(base + "\n")
        created = _registry_created()
        for path in mount_points:
            if not os.path.lexists(path):
                os.makedirs(path)
                created.add(path)
        _registry_write_created(created)


def unregister_pod(base):
    """Forget the PoD; the last PoD down removes the empty mount points podctl created."""
    with registry_lock():
        with contextlib.suppress(FileNotFoundError):
            os.unlink(_pod_ref(base))
        refs_dir = os.path.join(REGISTRY, "pods")
        for ref in os.listdir(refs_dir):
            other = (read_text(os.path.join(refs_dir, ref)) or "").strip()
            if other and os.path.exists(os.path.join(other, "pod.json")):
                return []
            os.unlink(os.path.join(refs_dir, ref))
        removed, kept = [], set()
        for path in sorted(_registry_created(), key=len, reverse=True):
            try:
                os.rmdir(path)
                removed.append(path)
            except FileNotFoundError:
                pass
            except OSError:
                kept.add(path)
        _registry_write_created(kept)
        return removed
