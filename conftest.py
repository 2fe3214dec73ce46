"""Make the collection importable as ``ansible_collections.npuops.ascend`` for plain pytest.

The git root is the collection root, so there is no ``ansible_collections`` parent on disk.
A symlink tree in a temporary directory provides one; ``tools/`` goes on sys.path for the
simulator tests.
"""

import os
import sys
import tempfile

_REPO = os.path.dirname(os.path.abspath(__file__))


def _collection_root():
    existing = os.environ.get("NPUOPS_COLLECTIONS_ROOT")
    if existing:
        return existing
    parts = _REPO.split(os.sep)
    if len(parts) >= 3 and parts[-3] == "ansible_collections":
        return os.sep.join(parts[:-3])
    root = os.path.join(tempfile.gettempdir(), "npuops-collections-%d" % os.getuid())
    link = os.path.join(root, "ansible_collections", "npuops", "ascend")
    os.makedirs(os.path.dirname(link), exist_ok=True)
    if os.path.islink(link) and os.readlink(link) != _REPO:
        os.unlink(link)
    if not os.path.lexists(link):
        try:
            os.symlink(_REPO, link)
        except FileExistsError:
            pass
    os.environ["NPUOPS_COLLECTIONS_ROOT"] = root
    return root


_ROOT = _collection_root()
for _path in (_ROOT, os.path.join(_REPO, "tools")):
    if _path not in sys.path:
        sys.path.insert(0, _path)
