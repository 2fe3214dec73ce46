"""One ansible_collections root per checkout: tools/dev/collections_root.sh, conftest.py, the Makefile.

Two clones on one machine must not share ``<root>/ansible_collections/npuops/ascend``, or each
would run the other's code. The roots made here for fake checkouts are removed again.
"""

import importlib.util
import os
import re
import shutil
import subprocess

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(REPO, "tools", "dev", "collections_root.sh")
ROOT_RE = re.compile(r"^/tmp/npuops-collections-%d-[0-9a-f]{12}$" % os.getuid())


def _env(root=None):
    env = {k: v for k, v in os.environ.items() if k not in ("NPUOPS_COLLECTIONS_ROOT", "COLLECTIONS_ROOT", "MAKEFLAGS")}
    if root:
        env["NPUOPS_COLLECTIONS_ROOT"] = root
    return env


def script(*args, root=None):
    proc = subprocess.run(["bash", SCRIPT] + [str(a) for a in args], env=_env(root), capture_output=True, text=True, timeout=30, check=False)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def _root_conftest():
    spec = importlib.util.spec_from_file_location("npuops_root_conftest", os.path.join(REPO, "conftest.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _link(root):
    return os.path.join(root, "ansible_collections", "npuops", "ascend")


@pytest.fixture
def checkouts(tmp_path):
    """Two fake checkouts; their collections roots are removed afterwards."""
    made = []
    paths = []
    for name in ("clone-a", "clone-b"):
        path = tmp_path / name
        path.mkdir()
        paths.append(str(path))
        made.append(script(path))
    yield paths
    for root in made:
        if ROOT_RE.match(root):
            shutil.rmtree(root, ignore_errors=True)


def test_two_checkouts_get_different_roots_outside_them(checkouts):
    roots = [script(path) for path in checkouts]
    assert all(ROOT_RE.match(root) for root in roots), roots
    assert roots[0] != roots[1]
    assert [script(path) for path in checkouts] == roots, "the root of a checkout must not change between calls"
    for path, root in zip(checkouts, roots):
        assert not root.startswith(path + os.sep)


def test_default_checkout_is_the_one_holding_the_script():
    assert script() == script(REPO)
    assert ROOT_RE.match(script())


def test_script_and_conftest_compute_the_same_root(checkouts, tmp_path):
    conftest = _root_conftest()
    alias = tmp_path / "alias-of-a"
    alias.symlink_to(checkouts[0])
    for path in [REPO] + checkouts:
        assert conftest.default_collections_root(path) == script(path), path
    # a checkout reached through a symlink is the same checkout
    assert script(alias) == script(checkouts[0]) == conftest.default_collections_root(str(alias))


def test_link_points_each_root_at_the_checkout_that_ran_it(checkouts):
    first, second = checkouts
    root_a = script("--link", first)
    root_b = script("--link", second)
    assert root_a == script(first) and root_b == script(second)
    assert os.readlink(_link(root_a)) == os.path.realpath(first)
    assert os.readlink(_link(root_b)) == os.path.realpath(second)
    assert script("--link", first) == root_a
    assert os.readlink(_link(root_a)) == os.path.realpath(first)
    assert os.readlink(_link(root_b)) == os.path.realpath(second), "linking one checkout changed another's root"


def test_explicit_root_wins(checkouts, tmp_path, monkeypatch):
    explicit = str(tmp_path / "explicit")
    assert script(checkouts[0], root=explicit) == explicit
    assert script("--link", checkouts[1], root=explicit) == explicit
    assert os.readlink(_link(explicit)) == os.path.realpath(checkouts[1])
    conftest = _root_conftest()
    monkeypatch.setenv("NPUOPS_COLLECTIONS_ROOT", explicit)
    assert conftest._collection_root() == explicit  # pylint: disable=protected-access


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
@pytest.mark.parametrize("explicit", [None, "/tmp/npuops-collections-explicit"])
def test_makefile_exports_the_same_root(explicit):
    show = "show-collections-root: ; @echo $$NPUOPS_COLLECTIONS_ROOT $$ANSIBLE_COLLECTIONS_PATH"
    proc = subprocess.run(["make", "-s", "--no-print-directory", "-C", REPO, "--eval=" + show, "show-collections-root"],
                          env=_env(explicit), capture_output=True, text=True, timeout=30, check=False)
    assert proc.returncode == 0, proc.stderr
    want = explicit or script(REPO)
    assert proc.stdout.split() == [want, want]
