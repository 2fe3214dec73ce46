"""Fidelity: numactl -H, lscpu, the Ascend version files and the hccl_test table layout."""

import os
import re

import pytest

from simhelpers import sample, text
from npu_sim import perf, versions


def test_numactl_hardware_atlas800t_a2(sim):
    lines = sample("extra_numactl_-H_atlas800t_a2.txt", "observability profile")
    # The probe stored the output with its final trailing space stripped; numactl ends every
    # distance row with one space (the other seven rows of the same sample show it).
    lines[-1] += " "
    for node in sim.data["numa"]["nodes"]:
        node["size_mb"] = int(lines[2 + 3 * node["id"]].split()[3])
        node["free_mb"] = int(lines[3 + 3 * node["id"]].split()[3])
    sim.save()
    rc, out, err = sim.sub("numactl", "-H")
    assert (rc, out, err) == (0, text(lines), "")


def test_lscpu_openeuler_layout(sim):
    lines = sample("numactl_-H_and_lscpu_kunpeng.txt", "Atlas 800I A2", index=0)
    assert sim.run("lscpu") == (0, text(lines), "")


def _file(source, name, index=0):
    return [line for line in sample("version_files.txt", source, index) if not line.startswith("cat /usr/")]


@pytest.mark.parametrize("source,exact", [("npu_info_after.txt lines 38-51", True), ("lines 1237-1247", False),
                                          ("recreates version.info", True)])
def test_driver_version_info(source, exact):
    lines = _file(source, "driver")
    version = lines[0].split("=", 1)[1]
    rendered = "\n".join(versions.driver_info(version)) + "\n"
    if exact:
        assert rendered == text(lines)
    else:  # the doc omits the trailing package_version line
        assert rendered.startswith(text(lines))


def test_firmware_version_info():
    lines = _file("npu_info_after.txt lines 53-58", "firmware")
    driver = lines[2].split("=", 1)[1]
    assert "\n".join(versions.firmware_info(lines[0].split("=", 1)[1], driver)) + "\n" == text(lines)


@pytest.mark.parametrize("source,index", [("npu_info_after.txt lines 60-68", 0), ("issue #198", 0), ("index id 56066027100", 0),
                                          ("index ids 55919563711", 0), ("index id 55763803814", 0), ("issue #5111", 0),
                                          ("lines 1274-1280", 0)])
def test_toolkit_install_info(source, index):
    lines = _file(source, "toolkit", index)
    version = lines[1].split("=", 1)[1]
    assert "\n".join(versions.toolkit_info(version, "aarch64")) + "\n" == text(lines)


def test_version_cfg_full():
    lines = _file("index id 65941102474", "cfg")
    assert "\n".join(versions.version_cfg("8.0.0")) + "\n" == text(lines)


def test_version_files_written_by_install(sim, tmp_path):
    prefix = str(tmp_path / "files")
    rc, out, err = sim.sub("npu-sim", "install", "--prefix", prefix)
    assert rc == 0, err
    with open(os.path.join(prefix, "Ascend", "driver", "version.info")) as handle:
        assert handle.read().startswith("Version=%s\n" % sim.data["versions"]["driver"])
    info = os.path.join(prefix, "Ascend", "ascend-toolkit", "latest", "aarch64-linux", "ascend_toolkit_install.info")
    with open(info) as handle:
        assert "version=%s\n" % sim.data["versions"]["cann"] in handle.read()


def test_hccl_test_header_and_rows(nodes):
    header = sample("extra_hccl_test.txt", "hcomm")[0]
    node = nodes("node01", 1)
    lines = perf.allreduce_lines([node.data], 1, "8K", "64M")
    assert lines[0] == "the minbytes is 8192, maxbytes is 67108864, iters is 20, warmup_iters is 5"
    assert lines[1] == header
    for row in lines[2:]:
        size, avg, alg, check = row.split(" | ")
        assert re.match(r"^\d+ +$", size) and len(size) == 17
        assert len(avg) == 14 and len(alg) == 20 and check == "success"
        assert float(alg) == pytest.approx(int(size) / float(avg) * 1e-3, rel=1e-3)
