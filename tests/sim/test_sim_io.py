"""The vmstat and iostat shims: real layouts (the captures), values from the node state and the iowait fault, and
the io_info parsers of the collection read them without an unparsed line. The shm-full fault outside a node."""

import importlib.util
import os
import re
import sys
import types

from simhelpers import REPO, sample


def _parsers():
    """The collection's io parsers, loaded from their files into private modules (the simulator never imports
    plugins/, and this test must not register the collection's package path for the other tests)."""
    base = os.path.join(REPO, "plugins", "module_utils", "_parsers")
    common_spec = importlib.util.spec_from_file_location("_npuops_parsers_common", os.path.join(base, "_common.py"))
    common = importlib.util.module_from_spec(common_spec)
    common_spec.loader.exec_module(common)
    with open(os.path.join(base, "io.py"), encoding="utf-8") as handle:
        source = handle.read()
    source = source.replace("from ansible_collections.npuops.ascend.plugins.module_utils._parsers._common import",
                            "from _npuops_parsers_common import")
    module = types.ModuleType("_npuops_io_parsers")
    sys.modules["_npuops_parsers_common"] = common
    try:
        exec(compile(source, os.path.join(base, "io.py"), "exec"), module.__dict__)  # noqa: S102 - the project's own file
    finally:
        del sys.modules["_npuops_parsers_common"]
    return module


IO = _parsers()
VALUES_RE = re.compile(r"^ {7}(?: {2,4}[0-9]{1,3}\.[0-9]{2}){6}$")


def _pin(sim):
    sim.data["settings"]["clock"] = 1767225600.0   # pinned: no sleeping between samples, same output each run
    sim.save()


def test_vmstat_layout_equals_the_real_capture(sim):
    _pin(sim)
    rc, out, err = sim.run("vmstat", "1", "4")
    assert rc == 0 and err == ""
    real = sample("vmstat.txt", "procps-ng 4.0.2")
    lines = out.rstrip("\n").split("\n")
    assert lines[:2] == real[:2]
    assert len(lines) == len(real) == 6
    for mine, theirs in zip(lines[2:], real[2:]):
        assert len(mine.split()) == len(theirs.split()) == 17
        # the columns before the memory values are the same %2u fields
        assert mine[:5] == "%2s %2s" % tuple(mine.split()[:2]) and theirs[:5] == "%2s %2s" % tuple(theirs.split()[:2])
    parsed = IO.parse_vmstat(out)
    assert parsed["unparsed"] == [] and len(parsed["samples"]) == 4
    assert parsed["columns"] == IO.parse_vmstat("\n".join(real))["columns"]


def test_iostat_layout_equals_the_real_capture(sim):
    _pin(sim)
    rc, out, err = sim.run("iostat", "-c", "1", "3")
    assert rc == 0 and err == ""
    real = sample("iostat_-c.txt", "iostat -c 1 3")
    lines = out.rstrip("\n").split("\n")
    assert len(lines) == len(real)
    assert re.match(r"^Linux \S+ \(node01\) \t[0-9]{2}/[0-9]{2}/[0-9]{2} \t_aarch64_\t\(192 CPU\)$", lines[0])
    for mine, theirs in zip(lines[1:], real[1:]):
        if theirs.startswith("avg-cpu:"):
            assert mine == theirs
        elif theirs.strip():
            assert VALUES_RE.match(mine) and VALUES_RE.match(theirs)
        else:
            assert mine == ""
    parsed = IO.parse_iostat(out)
    assert parsed["unparsed"] == [] and len(parsed["reports"]) == 3 and parsed["cpus"] == 192 and parsed["host"] == "node01"


def test_values_follow_the_state_and_the_iowait_fault(sim):
    _pin(sim)
    calm_io = IO.parse_iostat(sim.run("iostat", "-c", "1", "4")[1])["reports"][1:]
    calm_vm = IO.parse_vmstat(sim.run("vmstat", "1", "4")[1])["samples"][1:]
    assert all(0.2 <= r["iowait_pct"] <= 0.4 for r in calm_io)
    assert all(s["wa"] == 0 for s in calm_vm)
    sim.data["host"]["iowait_pct"] = 3.0
    sim.save()
    assert all(2.6 <= r["iowait_pct"] <= 3.4 for r in IO.parse_iostat(sim.run("iostat", "-c", "1", "3")[1])["reports"][1:])
    rc, _out, _err = sim.sub("npu-sim", "fault", "set", "iowait", "--value", "30")
    assert rc == 0
    hot_io = IO.parse_iostat(sim.run("iostat", "-c", "1", "3")[1])["reports"][1:]
    hot_vm = IO.parse_vmstat(sim.run("vmstat", "1", "3")[1])["samples"][1:]
    assert all(27.0 <= r["iowait_pct"] <= 33.0 for r in hot_io)
    assert all(27 <= s["wa"] <= 33 and s["b"] > 0 for s in hot_vm)
    sim.sub("npu-sim", "fault", "clear", "iowait")
    assert all(r["iowait_pct"] < 4 for r in IO.parse_iostat(sim.run("iostat", "-c", "1", "2")[1])["reports"])


def test_bad_arguments_and_fault_values(sim):
    assert sim.run("vmstat", "-w")[0] == 1
    assert sim.run("iostat", "-x", "1", "2")[0] == 1
    assert sim.run("iostat", "1", "2")[0] == 1
    assert sim.run("vmstat", "0", "2")[0] == 1
    rc, _out, err = sim.sub("npu-sim", "fault", "set", "iowait", "--value", "101")
    assert rc == 2 and "percentage 0-100" in err
    rc, _out, err = sim.sub("npu-sim", "fault", "set", "shm-full", "--device", "1")
    assert rc == 2 and "takes no --device" in err
    rc, _out, err = sim.sub("npu-sim", "state", "set", "host.shm_size_mb", "0")
    assert rc == 2 and "shm_size_mb" in err


def _host_shm():
    """The host's /dev/shm without the POSIX semaphores (sem.*) that other processes on the machine, such as the
    Ansible runs of a test lane beside this one, create and remove at any time."""
    return sorted(name for name in os.listdir("/dev/shm") if not name.startswith("sem."))


def test_shm_full_outside_a_node_only_records_the_fault(sim):
    # no node runs for this state: the host's /dev/shm is never touched
    before = _host_shm()
    rc, out, _err = sim.sub("npu-sim", "fault", "set", "shm-full")
    assert rc == 0 and "fault set: shm-full" in out
    rc, out, _err = sim.sub("npu-sim", "shm", "sync")
    assert rc == 0 and "not reachable" in out
    assert _host_shm() == before


def test_install_puts_the_mindie_default_config_and_never_overwrites(sim, tmp_path):
    prefix = tmp_path / "files"
    rc, _out, _err = sim.sub("npu-sim", "install", "--prefix", str(prefix))
    assert rc == 0
    target = prefix / "Ascend" / "mindie" / "latest" / "mindie-service" / "conf" / "config.json"
    with open(os.path.join(REPO, "tools", "npu_sim", "data", "mindie_config_default.json"), "rb") as handle:
        assert target.read_bytes() == handle.read()
    assert oct(target.stat().st_mode & 0o777) == "0o640"
    target.write_text("{}")
    assert sim.sub("npu-sim", "install", "--prefix", str(prefix))[0] == 0
    assert target.read_text() == "{}"
    assert (prefix / "sbin" / "vmstat").exists() and (prefix / "sbin" / "iostat").exists()
