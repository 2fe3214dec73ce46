"""Fidelity of ``hccn_tool -i N -vnic -g``: the simulator prints the documentation samples of
tests/fixtures/captures/hccn_tool_-vnic_-g.txt byte for byte when the NPU has a vNIC, and the
source-derived failure when it has none."""

import re

import pytest

from simhelpers import sample, text

CAPTURE = "hccn_tool_-vnic_-g.txt"
LINE = re.compile(r"^vnic (link status: (UP|DOWN)|ipaddr: \d+\.\d+\.\d+\.\d+|netmask: \d+\.\d+\.\d+\.\d+)$")


def _output_lines(source):
    """The output lines of a sample: the echoed command or prompt line dropped."""
    return [line for line in sample(CAPTURE, source) if line.startswith("vnic ")]


def _give_vnic(sim, dev, lines):
    link, address, netmask = (line.split(": ", 1)[1] for line in lines)
    sim.npu(dev)["net"]["vnic"] = {"ip": address, "netmask": netmask, "up": link == "UP"}


def test_every_capture_line_has_the_shape_the_simulator_prints():
    for source in ("docs/en/Ascend_950_HCCN_Tool", "建链超时"):
        lines = _output_lines(source)
        assert lines and len(lines) % 3 == 0
        assert all(LINE.match(line) for line in lines), lines
        assert [line.split(":")[0] for line in lines[:3]] == ["vnic link status", "vnic ipaddr", "vnic netmask"]


def test_atlas350_doc_sample(sim):
    lines = _output_lines("docs/en/Ascend_950_HCCN_Tool")
    _give_vnic(sim, 0, lines)
    sim.save()
    assert sim.run("hccn_tool", "-i", "0", "-vnic", "-g") == (0, text(lines), "")


def test_hccl_doc_loop_of_eight_devices(sim):
    lines = _output_lines("建链超时")
    assert len(lines) == 24
    for dev in range(8):
        _give_vnic(sim, dev, lines[3 * dev:3 * dev + 3])
    sim.save()
    out = "".join(sim.run("hccn_tool", "-i", str(dev), "-vnic", "-g")[1] for dev in range(8))
    assert out == text(lines)


@pytest.mark.parametrize("vnic,first", [({"address": "192.24.3.184", "netmask": "255.255.255.0", "link": "DOWN"}, "DOWN"),
                                        ({"ip": "192.24.2.199", "netmask": "255.255.255.0"}, "UP")])
def test_link_word_follows_the_state(sim, vnic, first):
    sim.npu(1)["net"]["vnic"] = vnic
    sim.save()
    rc, out, err = sim.run("hccn_tool", "-i", "1", "-vnic", "-g")
    assert (rc, err) == (0, "")
    assert out.splitlines()[0] == "vnic link status: " + first
    assert all(LINE.match(line) for line in out.splitlines())


def test_an_npu_without_vnic_fails_as_the_source_does(sim):
    # the default (A2) state has no vNIC entry; tool_vnic_cmd_execute: failed DSMI query -> 0x4001, stderr
    assert "vnic" not in sim.npu(0)["net"]
    assert sim.run("hccn_tool", "-i", "0", "-vnic", "-g") == (1, "", "Command execute failed!\n")
