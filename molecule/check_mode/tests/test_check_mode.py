"""After site.yml --check --diff: every node holds what it held before the dry run (the simulator state and every file
a stage writes hash the same, a file that did not exist still does not), and no node's call log has a set command."""

import json
import os
import shlex

HERE = os.path.dirname(os.path.abspath(__file__))
HASHES = os.path.join(os.path.dirname(HERE), "files", "hashes.py")
RECORDS = os.path.join(os.environ.get("NPUOPS_POD_BASE") or "/tmp/npuops-molecule-check_mode", "check_mode-record")


def _record(host):
    name = host.check_output("hostname")
    with open(os.path.join(RECORDS, "%s.json" % name)) as handle:
        return json.load(handle)


def _hashes_now(host, paths):
    with open(HASHES) as handle:
        code = handle.read()
    out = host.check_output("/usr/bin/python3 -c %s %s" % (shlex.quote(code), " ".join(shlex.quote(p) for p in paths)))
    return json.loads(out)


def _calls(host):
    lines = host.check_output("/usr/local/sbin/npu-sim calls").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def _is_write(call):
    """A vendor-tool call that changes the node: a set of hccn_tool or npu-smi, a cpupower setting."""
    tool, argv = call["tool"], call["argv"]
    if tool == "hccn_tool":
        return "-s" in argv
    if tool == "cpupower":
        return any(word in argv for word in ("frequency-set", "set", "idle-set"))
    if tool == "npu-smi":
        return any(word in argv for word in ("set", "clear", "upgrade", "-s"))
    return False


def test_every_recorded_hash_is_unchanged(host):
    record = _record(host)
    now = _hashes_now(host, record["paths"])
    changed = {path: (before, now.get(path)) for path, before in record["hashes"].items() if now.get(path) != before}
    assert not changed, changed
    # and no file appeared where the stages write (under /var/lib/npuops)
    assert set(now) == set(record["hashes"]), sorted(set(now) ^ set(record["hashes"]))


def test_the_files_that_did_not_exist_still_do_not(host):
    absent = [path for path, digest in _record(host)["hashes"].items() if digest is None]
    assert "/etc/profile.d/npuops-hccl.sh" in absent
    for path in absent:
        assert not host.file(path).exists, path


def test_the_dry_run_read_the_nodes(host):
    tools = {call["tool"] for call in _calls(host)}
    assert {"npu-smi", "hccn_tool"} <= tools, tools


def test_no_node_ran_a_set_command_or_a_write_tool(host):
    writes = [call["tool"] + " " + " ".join(call["argv"]) for call in _calls(host) if _is_write(call)]
    assert writes == []
