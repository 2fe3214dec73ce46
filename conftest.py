"""Make the collection importable as ``ansible_collections.npuops.ascend`` for plain pytest.

The git root is the collection root, so there is no ``ansible_collections`` parent on disk.
A symlink tree outside the checkout provides one: ``$NPUOPS_COLLECTIONS_ROOT`` when set, else
this checkout's own root (``default_collections_root``, the path ``tools/dev/collections_root.sh``
prints and ``make setup`` links). ``tools/`` goes on sys.path for the simulator tests.
"""

import hashlib
import os
import sys

_REPO = os.path.dirname(os.path.abspath(__file__))


def default_collections_root(repo):
    """/tmp/npuops-collections-<uid>-<first 12 hex digits of sha256 of the checkout's physical path>.

    One root per checkout, so two clones on one machine never test each other's code; the same
    computation as tools/dev/collections_root.sh.
    """
    digest = hashlib.sha256(os.fsencode(os.path.realpath(repo))).hexdigest()[:12]
    return "/tmp/npuops-collections-%d-%s" % (os.getuid(), digest)


def _collection_root():
    existing = os.environ.get("NPUOPS_COLLECTIONS_ROOT")
    if existing:
        return existing
    parts = _REPO.split(os.sep)
    if len(parts) >= 3 and parts[-3] == "ansible_collections":
        return os.sep.join(parts[:-3])
    root = default_collections_root(_REPO)
    target = os.path.realpath(_REPO)
    link = os.path.join(root, "ansible_collections", "npuops", "ascend")
    os.makedirs(os.path.dirname(link), exist_ok=True)
    if os.path.islink(link) and os.readlink(link) != target:
        os.unlink(link)
    if not os.path.lexists(link):
        try:
            os.symlink(target, link)
        except FileExistsError:
            pass
    os.environ["NPUOPS_COLLECTIONS_ROOT"] = root
    return root


_ROOT = _collection_root()
for _path in (_ROOT, os.path.join(_REPO, "tools")):
    if _path not in sys.path:
        sys.path.insert(0, _path)
