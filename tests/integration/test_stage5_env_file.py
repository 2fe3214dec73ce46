"""The file of stage 5 (hccl_env) is sourced by root: its path, owner, group and mode, and what a node has at that path,
are checked before the file is written on any node.

Each refused case runs site.yml (stage 5) against the fresh 2-node simulated PoD of conftest.py and compares every
node before and after: the simulator state, the restore points, every entry of the node's /etc/profile.d (kind, owner,
mode and content hash, so a rewritten file or a new backup ``npuops-hccl.sh.<pid>.<date>~`` shows) and every entry of
its /root (where a relative path would land).
"""

import hashlib
import os

import pytest

from conftest import NODES

SITE = "site.yml"
STAGE5 = ["--tags", "stage5"]
ENV_FILE = "/etc/profile.d/npuops-hccl.sh"
SAID = "was not written on any node"

CASES = {
    "mode-world-writable": ({"hccl_env_mode": "0666"},
                            ["hccl_env_mode '0666' lets the group and other users write the file",
                             "so a write bit for them lets them run commands as root"]),
    "mode-group-writable": ({"hccl_env_mode": "0664"}, ["hccl_env_mode '0664' lets the group write the file"]),
    "mode-number": ({"hccl_env_mode": 438},
                    ["hccl_env_mode 438 is a number, which Ansible applies as the mode 0666"]),
    "mode-symbolic": ({"hccl_env_mode": "u=rw,go=r"}, ["hccl_env_mode 'u=rw,go=r' is not an octal file mode"]),
    "owner-not-root": ({"hccl_env_owner": "nosuchuser"},
                       ["hccl_env_owner 'nosuchuser' is not root", "its owner could run commands as root"]),
    "group-missing-on-the-nodes": ({"hccl_env_group": "nosuchgroup"},
                                   ["node01: hccl_env_group 'nosuchgroup' is not a group on this node",
                                    "node02: hccl_env_group 'nosuchgroup' is not a group on this node"]),
    "path-relative": ({"hccl_env_path": "npuops-hccl.sh"},
                      ["hccl_env_path 'npuops-hccl.sh' is not an absolute path",
                       "(/root/npuops-hccl.sh for root)"]),
    "path-dot-dot": ({"hccl_env_path": "/etc/profile.d/../npuops-hccl.sh"},
                     ["hccl_env_path '/etc/profile.d/../npuops-hccl.sh' is not a plain file path"]),
    "path-directory-missing": ({"hccl_env_path": "/etc/profile.d/nosuch/npuops-hccl.sh"},
                               ["node01: hccl_env_path '/etc/profile.d/nosuch/npuops-hccl.sh': its directory "
                                "/etc/profile.d/nosuch does not exist on this node"]),
}


def _tree(top):
    """{name: (kind, uid, gid, mode, sha256 or link target)} of every entry directly under ``top`` (but Ansible's own
    working directory .ansible, which the first connection creates in /root)."""
    out = {}
    for name in sorted(os.listdir(top)) if os.path.isdir(top) else []:
        if name == ".ansible":
            continue
        path = os.path.join(top, name)
        info = os.lstat(path)
        if os.path.islink(path):
            what = ("link", os.readlink(path))
        elif os.path.isfile(path):
            with open(path, "rb") as handle:
                what = ("file", hashlib.sha256(handle.read()).hexdigest())
        else:
            what = ("other", None)
        out[name] = (what[0], info.st_uid, info.st_gid, oct(info.st_mode & 0o7777), what[1])
    return out


def _nodes(pod):
    """The PoD snapshot of conftest.py plus every entry of each node's /etc/profile.d and /root."""
    out = pod.snapshot()
    for node in NODES:
        out[node]["profile.d"] = _tree(os.path.join(pod.node_dir(node), "profile.d"))
        out[node]["root"] = _tree(os.path.join(pod.node_dir(node), "root"))
    return out


@pytest.fixture(scope="module")
def before(pod):
    return _nodes(pod)


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_file_setting_stops_before_any_node_is_written(pod, before, case):
    extra_vars, expected = CASES[case]
    rc, out = pod.playbook(SITE, extra_vars, STAGE5)
    assert rc != 0, out[-3000:]
    missing = [text for text in expected if text not in out]
    assert not missing, "missing %s in:\n%s" % (missing, out[-3000:])
    assert SAID in out, out[-3000:]
    assert "PLAY [Stage 5" not in out or "TASK [npuops.ascend.hccl_env : Write the managed HCCL environment file]" not in out
    assert _nodes(pod) == before


def test_a_link_at_the_path_is_refused_and_left_alone(pod, before):
    """A symbolic link on one node stops every node: the link, its target and the other node stay as they were."""
    pod.node("node02", "sh", "-c", "printf 'export KEEP=1\\n' > /root/hccl-target.sh && ln -s /root/hccl-target.sh %s"
             % ENV_FILE)
    try:
        linked = _nodes(pod)
        assert linked["node02"]["profile.d"]["npuops-hccl.sh"][0] == "link"
        for dry in ([], ["--check"]):
            rc, out = pod.playbook(SITE, None, STAGE5 + dry)
            assert rc != 0, out[-3000:]
            assert ("node02: hccl_env_path '/etc/profile.d/npuops-hccl.sh' is a symbolic link to '/root/hccl-target.sh': "
                    "the file root sources is written only as a regular file") in out, out[-3000:]
            assert "node01: hccl_env_path" not in out
            assert SAID in out
            assert _nodes(pod) == linked
        assert pod.node("node02", "cat", "/root/hccl-target.sh") == "export KEEP=1\n"
    finally:
        pod.node("node02", "rm", "-f", ENV_FILE, "/root/hccl-target.sh")
    assert _nodes(pod) == before


def test_a_group_that_exists_and_a_private_mode_are_written_as_asked(pod, before):
    """The same checks pass for good settings: the file is root's, in the group asked, with the mode asked, and holds
    the sourced defaults (TASK_QUEUE_ENABLE=2, HCCL_CONNECT_TIMEOUT=1200, no HCCL_ALGO on an A2 PoD)."""
    try:
        rc, out = pod.playbook(SITE, {"hccl_env_group": "daemon", "hccl_env_mode": "0640", "hccl_env_check_ports": False},
                               STAGE5)
        assert rc == 0, out[-3000:]
        for node in NODES:
            assert pod.node(node, "stat", "-c", "%U %G %a %F", ENV_FILE) == "root daemon 640 regular file\n"
            text = pod.node(node, "cat", ENV_FILE)
            assert "export TASK_QUEUE_ENABLE=2\n" in text and "export HCCL_CONNECT_TIMEOUT=1200\n" in text
            assert "HCCL_ALGO" not in text
        report = _report(pod)
        assert "(owner root, group daemon, mode 0640)" in report
        assert ("`hccl_env_algo: auto`: HCCL_ALGO is not written: on Atlas A2 HCCL chooses the algorithm itself from the "
                "product, the number of servers and the data size") in report
    finally:
        for node in NODES:
            pod.node(node, "sh", "-c", "rm -f %s %s.*~" % (ENV_FILE, ENV_FILE))
    assert _nodes(pod) == before


def _report(pod):
    """The newest hccl_env.md under the PoD's report directory."""
    found = []
    for top, _dirs, files in os.walk(pod.reports):
        if "hccl_env.md" in files:
            found.append(os.path.join(top, "hccl_env.md"))
    assert found, "no hccl_env.md under %s" % pod.reports
    with open(max(found, key=os.path.getmtime), encoding="utf-8") as handle:
        return handle.read()
