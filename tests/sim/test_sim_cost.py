"""What a simulated call costs (docs/simulator-cost.md): the cheap paths give what the slow ones gave.

JSON through ``_json`` reads and writes what the json package does, the fast copy and subnet checks answer as
copy.deepcopy and ipaddress do, a call imports only its tool's modules and reads the state once, the wrappers run
an isolated interpreter, and the call log records each call's CPU time for ``npu-sim calls --cpu``.
"""

import copy
import ipaddress
import json
import math
import os
import shutil
import subprocess
import sys

import pytest

from npu_sim import __main__ as sim_main
from npu_sim import bench_cost, control, model
from npu_sim import jsoncodec
from npu_sim import node as node_mod
from npu_sim import statefile
from simhelpers import CREATED, TOOLS

BOOTSTRAP_ARGS = ["-I", "-S", "-c", control.BOOTSTRAP, TOOLS]


def _values(sim):
    effective = model.effective(sim.data)
    return [sim.data, effective, node_mod.new_state("n\u00f6de \"x\"\\", 3, npus=2, created=CREATED),
            {}, [], "", 0, -1, 2 ** 70, 1.5e300, -0.0, 1e-07, 0.1, True, False, None, "\u2603\n\t\x00\x7f\ud800",
            {"a": [], "b": {}, "c": [[], [{}], [1, [2, [3.25]]]], "d": (1, "x"), "": None, "\u00e9": "\U0001f600"}]


def test_dumps_is_the_json_packages_text(sim):
    for value in _values(sim):
        for indent in (None, 1, 2, 0, "\t"):
            assert jsoncodec.dumps(value, indent=indent) == json.dumps(value, indent=indent)
    for value in (float("nan"), float("inf"), [float("-inf")], {"k": float("nan")}):
        assert jsoncodec.dumps(value) == json.dumps(value)


def test_dumps_hands_other_values_to_the_json_package():
    assert jsoncodec.dumps({1: "int key", 2.5: [True], None: 0, False: 1}, indent=1) == json.dumps(
        {1: "int key", 2.5: [True], None: 0, False: 1}, indent=1)
    with pytest.raises(TypeError) as ours:
        jsoncodec.dumps({"set": {1}})
    with pytest.raises(TypeError) as theirs:
        json.dumps({"set": {1}})
    assert str(ours.value) == str(theirs.value)
    loop = []
    loop.append(loop)
    with pytest.raises(ValueError, match="Circular reference detected"):
        jsoncodec.dumps(loop)


def test_loads_reads_what_the_json_package_reads(sim):
    with open(sim.path, encoding="utf-8") as handle:
        text = handle.read()
    assert jsoncodec.loads(text) == json.loads(text) == sim.data
    for value in _values(sim):
        for indent in (None, 1):
            dumped = json.dumps(value, indent=indent)
            assert jsoncodec.loads(dumped) == json.loads(dumped)
            assert jsoncodec.loads(" \n\t%s\r\n " % dumped) == json.loads(dumped)
    special = jsoncodec.loads('[NaN, Infinity, -Infinity, 1E400, 12345678901234567890, "\\ud83d\\ude00"]')
    assert math.isnan(special[0]) and special[1:4] == [math.inf, -math.inf, math.inf]
    assert special[4:] == [12345678901234567890, "\U0001f600"]


@pytest.mark.parametrize("text", ["", "{", "[1,]", "{} {}", "\ufeff{}", "{\"a\": 1} x", "[1] ]", "nul", "'x'", "{\"a\" 1}",
                                  "\"\x01\""])
def test_invalid_json_fails_as_in_the_json_package(text):
    with pytest.raises(ValueError) as ours:
        jsoncodec.loads(text)
    with pytest.raises(ValueError) as theirs:
        json.loads(text)
    assert (type(ours.value), str(ours.value)) == (type(theirs.value), str(theirs.value))


def test_a_broken_state_file_is_reported_as_before(sim):
    with open(sim.path, "w", encoding="utf-8") as handle:
        handle.write('{"schema": 1,')
    with pytest.raises(statefile.StateError) as err:
        statefile.load(sim.path)
    with pytest.raises(ValueError) as decode:
        json.loads('{"schema": 1,')
    assert str(err.value) == "simulator state %s is not valid JSON: %s" % (sim.path, decode.value)
    with open(sim.path, "wb") as handle:
        handle.write(b'{"hostname": "\xff"}')
    with pytest.raises(statefile.StateError, match="is not valid JSON"):
        statefile.load(sim.path)


def test_deep_copy_is_a_deepcopy(sim):
    for value in _values(sim):
        copied = statefile.deep_copy(value)
        assert copied == copy.deepcopy(value) and type(copied) is type(value)
    copied = statefile.deep_copy(sim.data)
    copied["npus"][0]["net"]["pfc"][4] = 1
    copied["settings"]["new"] = 1
    assert sim.data["npus"][0]["net"]["pfc"][4] == 0 and "new" not in sim.data["settings"]


ADDRESSES = ("10.20.0.11", "10.20.0.12", "10.20.1.11", "10.21.0.1", "0.0.0.0", "255.255.255.255", "010.20.0.1", "10.20.0.011",
             "10.20.0.256", "10.20.0", "10.20.0.1.2", "10.20.0.1/8", " 10.20.0.1", "10.20.0.\u0661", "1e1.0.0.1", "", None, 5)
MASKS = ("255.255.255.0", "255.255.0.0", "255.255.255.255", "0.0.0.0", "255.255.255.254", "128.0.0.0", "0.0.0.255",
         "0.255.255.255", "255.0.255.0", "255.255.255.000", "24", "0", "32", "33", "255.255.255", "x", None)


def _reference_same_subnet(ip_a, mask_a, ip_b):
    # model.same_subnet as it was before the fast path
    if not (ip_a and mask_a and ip_b):
        return False
    net = ipaddress.IPv4Network("%s/%s" % (ip_a, mask_a), strict=False)
    return ipaddress.IPv4Address(ip_b) in net


def _outcome(func, *args):
    try:
        return ("value", func(*args))
    except Exception as exc:  # noqa: BLE001 - the exact failure is what is compared
        return ("raises", type(exc), str(exc))


def test_same_subnet_answers_as_ipaddress():
    compared = 0
    for ip_a in ADDRESSES:
        for mask in MASKS:
            for ip_b in ("10.20.0.1", "10.20.1.1", "10.21.255.1", "010.20.0.1", "10.20.0.1/8", "300.1.1.1", 5, None):
                assert _outcome(model.same_subnet, ip_a, mask, ip_b) == _outcome(_reference_same_subnet, ip_a, mask, ip_b), (
                    ip_a, mask, ip_b)
                compared += 1
    assert compared == len(ADDRESSES) * len(MASKS) * 8


def test_valid_netmask_answers_as_before():
    def reference(text):
        if not model.valid_ipv4(text):
            return False
        bits = int(ipaddress.IPv4Address(text))
        inverted = (~bits) & 0xFFFFFFFF
        return bits != 0 and (inverted & (inverted + 1)) == 0
    for text in MASKS + ADDRESSES:
        assert _outcome(model.valid_netmask, text) == _outcome(reference, text), text


HEAVY = ("json", "re", "argparse", "contextlib", "copy", "glob", "ipaddress", "random", "shlex", "npu_sim.control",
         "npu_sim.perf", "npu_sim.mpi", "npu_sim.versions")


@pytest.mark.parametrize("argv,needed", [(["hccn_tool", "-i", "0", "-pfc", "-g"], "npu_sim.hccn"),
                                         (["hccn_tool", "-i", "0", "-net_health", "-g"], "npu_sim.hccn"),
                                         (["hccn_tool", "-i", "0", "-mtu", "-s", "size", "9000"], "npu_sim.hccn"),
                                         (["npu-smi", "info"], "npu_sim.npusmi"),
                                         (["numactl", "-H"], "npu_sim.host")])
def test_a_call_imports_only_what_its_tool_needs(sim, argv, needed):
    code = ("import sys; sys.path.insert(0, %r); from npu_sim.__main__ import main; rc = main(%r); "
            "sys.stdout.write('\\n' + ' '.join(sorted(sys.modules)))" % (TOOLS, argv))
    proc = subprocess.run([sys.executable, "-I", "-S", "-c", code], capture_output=True, text=True,
                          env=dict(os.environ, NPU_SIM_STATE=sim.path), timeout=60, check=False)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    modules = set(proc.stdout.rsplit("\n", 1)[1].split())
    assert needed in modules
    assert sorted(modules.intersection(HEAVY)) == []


def _count_reads(monkeypatch):
    reads = []
    original = statefile.read  # pylint: disable=protected-access

    def counting(path):
        reads.append(path)
        return original(path)
    monkeypatch.setattr(statefile, "read", counting)
    return reads


def test_a_get_reads_the_state_once(sim, monkeypatch, capsys):
    monkeypatch.setenv("NPU_SIM_STATE", sim.path)
    reads = _count_reads(monkeypatch)
    assert sim_main.main(["hccn_tool", "-i", "0", "-mtu", "-g"]) == 0
    assert capsys.readouterr().out == "mtu:1500\n" and len(reads) == 1
    # a set reads once more, under the exclusive lock, to write
    assert sim_main.main(["hccn_tool", "-i", "0", "-mtu", "-s", "size", "9000"]) == 0 and len(reads) == 3
    # with a latency the tool reads the state again after the sleep
    with statefile.transaction(sim.path) as data:
        data["settings"]["latency_ms"] = 1
    del reads[:]
    assert sim_main.main(["hccn_tool", "-i", "0", "-mtu", "-g"]) == 0
    assert capsys.readouterr().out.endswith("mtu:9000\n") and len(reads) == 2


def test_a_state_handed_over_is_not_kept_past_the_call(sim, monkeypatch, capsys):
    monkeypatch.setenv("NPU_SIM_STATE", sim.path)
    # hccn_tool stops at its arguments before it reads the state: nothing may stay handed over
    assert sim_main.main(["hccn_tool", "-i"]) == 2
    assert statefile._HANDED_OVER == {}  # pylint: disable=protected-access
    statefile.save(sim.path, dict(sim.data, hostname="changed"))
    assert statefile.load(sim.path)["hostname"] == "changed"
    capsys.readouterr()


def test_transaction_writes_only_when_the_block_succeeds(sim):
    with open(sim.path, "rb") as handle:
        before = handle.read()
    with pytest.raises(KeyError):
        with statefile.transaction(sim.path) as data:
            data["hostname"] = "changed"
            raise KeyError("stop")
    with open(sim.path, "rb") as handle:
        assert handle.read() == before
    # the lock was released: the next exclusive transaction goes through
    with statefile.transaction(sim.path) as data:
        data["hostname"] = "changed"
    assert statefile.load(sim.path)["hostname"] == "changed"


def _log(sim):
    with open(statefile.calls_path(sim.path), encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def test_call_log_records_the_cpu_of_each_call(sim):
    sim.sub("hccn_tool", "-i", "0", "-pfc", "-g")
    sim.sub("npu-smi", "info")
    sim.sub("numactl", "-H")
    entries = _log(sim)
    fields = ["time", "tool", "argv", "rc", "duration_s", "pid", "cpu_s", "start_cpu_s"]
    assert [list(entry) for entry in entries] == [fields] * 3
    for entry in entries:
        assert 0 < entry["start_cpu_s"] < entry["cpu_s"] < 5
    rc, out, err = sim.sub("npu-sim", "calls", "--cpu")
    assert (rc, err) == (0, "")
    totals = json.loads(out)
    assert totals == {"calls": 3, "measured": 3, "cpu_s": round(sum(e["cpu_s"] for e in entries), 6),
                      "start_cpu_s": round(sum(e["start_cpu_s"] for e in entries), 6),
                      "cpu_ms_per_call": round(1000.0 * sum(e["cpu_s"] for e in entries) / 3, 3)}
    only = json.loads(sim.sub("npu-sim", "calls", "--cpu", "--tool", "npu-smi")[1])
    assert (only["calls"], only["cpu_s"]) == (1, entries[1]["cpu_s"])


def test_calls_cpu_counts_entries_written_without_it(sim):
    old = {"time": 1.0, "tool": "hccn_tool", "argv": ["hccn_tool", "-i", "0", "-link", "-g"], "rc": 0, "duration_s": 0.1,
           "pid": 7}
    with open(statefile.calls_path(sim.path), "w", encoding="utf-8") as handle:
        handle.write(json.dumps(old) + "\n")
    assert json.loads(sim.sub("npu-sim", "calls", "--cpu")[1]) == {
        "calls": 1, "measured": 0, "cpu_s": 0.0, "start_cpu_s": 0.0, "cpu_ms_per_call": None}
    sim.sub("npu-sim", "calls", "--clear")
    assert json.loads(sim.sub("npu-sim", "calls", "--cpu")[1])["calls"] == 0


def test_wrappers_start_an_isolated_interpreter(sim, tmp_path):
    prefix = str(tmp_path / "files")
    assert sim.sub("npu-sim", "install", "--prefix", prefix, "--python", sys.executable)[0] == 0
    with open(os.path.join(prefix, "Ascend", "driver", "tools", "hccn_tool"), encoding="utf-8") as handle:
        lines = handle.read().splitlines()
    assert lines[-1].startswith("exec %s -I -S -c " % sys.executable) and lines[-1].endswith(' hccn_tool "$@"')
    assert "PYTHONPATH=%s" % TOOLS in lines and "export PYTHONPATH" in lines


@pytest.mark.parametrize("argv", [("hccn_tool", "-i", "0", "-pfc", "-g"), ("hccn_tool", "-i", "9", "-link", "-g"),
                                  ("hccn_tool", "-i", "0", "-mtu", "-s", "size", "99999"), ("npu-smi", "info", "-t", "board", "-i", "0"),
                                  ("npu-smi", "info", "-t", "nope"), ("numactl", "-H"), ("lspci", "-n")])
def test_the_bootstrap_prints_and_exits_as_python_m(sim, argv):
    """The wrappers' bootstrap (boot(): output flushed, no interpreter finalization) answers as ``python -m``."""
    env = dict(os.environ, NPU_SIM_STATE=sim.path, PYTHONDONTWRITEBYTECODE="1")
    booted = subprocess.run([sys.executable] + BOOTSTRAP_ARGS + list(argv), capture_output=True, env=env, timeout=60,
                            check=False)
    expected = sim.sub(*argv)
    assert (booted.returncode, booted.stdout.decode(), booted.stderr.decode()) == expected
    assert [entry["argv"] for entry in _log(sim)] == [list(argv)] * 2


def test_bootstrap_numactl_still_launches_with_the_environment(sim):
    code = "import os; print(os.environ.get('NPU_SIM_NUMA_NODE'), os.environ.get('PYTHONPATH'))"
    env = dict(os.environ, NPU_SIM_STATE=sim.path, PYTHONPATH=TOOLS)
    proc = subprocess.run([sys.executable] + BOOTSTRAP_ARGS + ["numactl", "-N", "6", "-m", "6", "--", sys.executable, "-c", code],
                          capture_output=True, text=True, env=env, timeout=60, check=False)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "6 %s\n" % TOOLS, "")


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare"), reason="needs root and unshare (a mount namespace)")
def test_bench_cost_measures_through_the_wrappers(tmp_path):
    out = tmp_path / "cost.json"
    proc = subprocess.run([sys.executable, os.path.join(TOOLS, "npu_sim", "bench_cost.py"), "--calls", "1", "--rounds", "1",
                           "--python", sys.executable, "--json", str(out)], capture_output=True, text=True, timeout=300,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    with open(out, encoding="utf-8") as handle:
        rows = json.load(handle)["rows"]
    names = [" ".join(query) for query in bench_cost.QUERIES]
    # each query through the wrapper's own interpreter, then again with the node's resident simulator
    assert [row["name"] for row in rows[3:]] == names + [name + " (served)" for name in names]
    assert all(row["cpu_ms"] > 0 and row["wall_ms"] > 0 for row in rows)
    assert all(row["log_cpu_ms"] > row["log_start_cpu_ms"] > 0 for row in rows[3:])
    assert "| `hccn_tool -i 0 -pfc -g` |" in proc.stdout


def test_a_ping_parses_only_the_state_that_holds_its_address(nodes, monkeypatch):
    """The PoD registry of a ping or an address set: another node's state is parsed only when it holds the address."""
    one, two, three = nodes("node01", 1), nodes("node02", 2), nodes("node03", 3)
    parsed = []
    real = jsoncodec.loads

    def counting(text):
        parsed.append(text)
        return real(text)
    monkeypatch.setattr(jsoncodec, "loads", counting)
    address = three.data["npus"][0]["net"]["ip"]
    pod = statefile.pod_states(one.data, one.path, contains='"%s"' % address)
    assert [state["hostname"] for _path, state in pod] == ["node01", "node03"]
    assert len(parsed) == 1 and '"node03"' in parsed[0]
    # without it every node is read, as before
    assert [state["hostname"] for _path, state in statefile.pod_states(one.data, one.path)] == ["node01", "node02", "node03"]
    assert two.data["hostname"] == "node02"
