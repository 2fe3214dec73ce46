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
    assert sim.run("iostat", "-c", "-x", "1", "2")[0] == 1
    assert sim.run("iostat", "-d", "1", "2")[0] == 1
    assert sim.run("iostat", "1", "2")[0] == 1
    assert sim.run("vmstat", "0", "2")[0] == 1
    rc, _out, err = sim.sub("npu-sim", "fault", "set", "iowait", "--value", "101")
    assert rc == 2 and "percentage 0-100" in err
    rc, _out, err = sim.sub("npu-sim", "fault", "set", "disk-busy", "--value", "120")
    assert rc == 2 and "%util of the data disk" in err
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


def _real_iostat_x():
    """The real sysstat 12 capture of iostat -x (tests/unit/fixtures/io)."""
    with open(os.path.join(REPO, "tests", "unit", "fixtures", "io", "iostat_x_sysstat12.txt"), encoding="utf-8") as handle:
        return handle.read()


def test_iostat_x_layout_equals_the_real_capture(sim):
    _pin(sim)
    rc, out, err = sim.run("iostat", "-x", "1", "3")
    assert rc == 0, err
    real = _real_iostat_x()
    real_header = [line for line in real.splitlines() if line.startswith("Device")][0]
    assert [line for line in out.splitlines() if line.startswith("Device")] == [real_header] * 3
    devices = IO.parse_iostat_devices(out)
    assert devices["unparsed"] == [] and devices["columns"] == IO.parse_iostat_devices(real)["columns"]
    assert [[row["device"] for row in report] for report in devices["reports"]] == [["nvme0n1", "sda"]] * 3
    cpu = IO.parse_iostat(out)
    assert cpu["unparsed"] == [] and len(cpu["reports"]) == 3 and cpu["cpus"] == 192
    assert all(row["util_pct"] < 5 and row["r_await_ms"] < 1 for report in devices["reports"] for row in report)


def test_disk_busy_fault_saturates_the_data_disk(sim):
    _pin(sim)
    assert sim.sub("npu-sim", "fault", "set", "disk-busy", "--value", "99")[0] == 0
    reports = IO.parse_iostat_devices(sim.run("iostat", "-x", "1", "3")[1])["reports"]
    first, later = reports[0], reports[1:]
    assert all(row["util_pct"] < 5 for row in first)          # the report since boot stays calm
    for report in later:
        data, system = report
        assert data["device"] == "nvme0n1" and 98.5 <= data["util_pct"] <= 99.5 and data["r_await_ms"] >= 45
        assert system["device"] == "sda" and system["util_pct"] < 5
    assert sim.sub("npu-sim", "fault", "clear", "disk-busy")[0] == 0
    assert all(row["util_pct"] < 5 for report in IO.parse_iostat_devices(sim.run("iostat", "-x", "1", "2")[1])["reports"]
               for row in report)


def _host_module():
    from npu_sim import host  # tools/ is on sys.path for the simulator tests (conftest.py)
    return host


def _run_host(sim, name, *args):
    res = getattr(_host_module(), name)(list(args), sim.path)
    return res.exit_code, res.stdout, res.stderr


def _real_fio_keys():
    """The keys of the real fio 3.42 JSON (tests/unit/fixtures/io)."""
    import json
    with open(os.path.join(REPO, "tests", "unit", "fixtures", "io", "fio_json_normal_3.42_libaio_randwrite.txt"),
              encoding="utf-8") as handle:
        text = handle.read()
    document, _end = json.JSONDecoder().raw_decode(text[text.index("{"):])
    return document


def test_fio_json_has_the_real_keys_and_io_info_reads_it(sim):
    _pin(sim)
    argv = ["--name=npuops-read", "--filename=/data/x", "--rw=read", "--bs=1M", "--size=8192M", "--numjobs=4",
            "--iodepth=16", "--ioengine=libaio", "--direct=1", "--runtime=30", "--group_reporting", "--unlink=1",
            "--output-format=json"]
    rc, out, err = _run_host(sim, "fio", *argv)
    assert rc == 0, err
    real = _real_fio_keys()
    import json
    document = json.loads(out)
    assert set(real) - {"global options"} <= set(document)
    real_job, job = real["jobs"][0], document["jobs"][0]
    for key in ("read", "write", "trim"):
        assert set(real_job[key]) - {"sync"} <= set(job[key]), key
    got = IO.parse_fio_json(out)
    assert got["unparsed"] == [] and got["write"] is None and got["read"]["bw_mb_s"] == 2000.0
    assert got["read"]["runtime_ms"] == int(4 * 8192 * 1048576 / 2e9 * 1000)
    assert got["read"]["lat_mean_ms"] == round(64 / (2000.0 * 1000 ** 2 / 1048576) * 1000, 4)
    assert sim.sub("npu-sim", "fault", "set", "disk-busy")[0] == 0
    slow = IO.parse_fio_json(_run_host(sim, "fio", *argv)[1])
    assert slow["read"]["bw_mb_s"] == 150.0 and slow["read"]["runtime_ms"] == 30000
    assert slow["disk_util"] == [{"name": "nvme0n1", "util_pct": 99.9}]
    assert _run_host(sim, "fio", "--rw=read", "--output-format=normal")[0] == 1


def test_ip_json_puts_the_node_address_on_its_service_nic(sim, monkeypatch):
    import json
    monkeypatch.setenv("SSH_CONNECTION", "127.0.0.1 50000 127.0.44.3 22")
    rc, out, err = _run_host(sim, "ip", "-j", "addr", "show")
    assert rc == 0, err
    links = json.loads(out)
    assert [link["ifname"] for link in links] == ["lo", "enp189s0f0", "enp189s0f1"]
    assert links[1]["addr_info"][0]["local"] == "127.0.44.3" and links[2]["addr_info"] == []
    # the keys of every interface and address entry are those of the real iproute2 capture
    with open(os.path.join(REPO, "tests", "unit", "fixtures", "hccl_env", "ip_-d_-j_addr_netplan.txt"),
              encoding="utf-8") as handle:
        real = json.load(handle)
    real_keys = set(real[1]) | set(real[0])
    assert all(set(link) <= real_keys for link in links)
    assert all(set(entry) <= set(real[1]["addr_info"][0]) | {"label"} for link in links for entry in link["addr_info"])
    assert sim.sub("npu-sim", "fault", "set", "if-ip-elsewhere")[0] == 0
    moved = json.loads(_run_host(sim, "ip", "-j", "addr", "show")[1])
    assert moved[1]["addr_info"] == [] and moved[2]["addr_info"][0]["local"] == "127.0.44.3"
    assert _run_host(sim, "ip", "addr")[0] == 1
    rc, _out, err = sim.sub("npu-sim", "fault", "set", "if-ip-elsewhere", "--value", "x")
    assert rc == 2 and "takes no --value" in err


def test_log_level_fault_writes_and_removes_a_profile_script(tmp_path):
    from simhelpers import Sim
    pod = tmp_path / "pod"
    node = Sim(str(pod), hostname="node05", index=5, pod_dir=str(pod))
    profile = pod / "node05" / "profile.d"
    profile.mkdir(parents=True)
    assert node.sub("npu-sim", "fault", "set", "log-level", "--value", "1")[0] == 0
    script = profile / "npu-sim-ascend-log.sh"
    assert script.read_text().splitlines()[-1] == "export ASCEND_GLOBAL_LOG_LEVEL=1"
    assert node.sub("npu-sim", "fault", "clear", "log-level")[0] == 0
    assert not script.exists()
    rc, _out, err = node.sub("npu-sim", "fault", "set", "log-level", "--value", "7")
    assert rc == 2 and "0-4" in err
