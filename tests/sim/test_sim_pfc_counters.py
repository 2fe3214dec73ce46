"""PFC pause counters: they grow with time on a lossless priority, fast under a ``pfc-storm``; reads never write."""

import re
import time

import pytest

from npu_sim import model

T0 = 1767225600.0 + 3600  # an hour after the test nodes are created

# The 32 lines of tool_display_pfc_duration (tests/fixtures/captures/hccn_tool_-pfc_stat_-g.txt), in order.
FORMAT = ([re.compile(r"^tx_pfc%d_duration_time=\d+\.\d{3}ms$" % i) for i in range(8)]
          + [re.compile(r"^rx_pfc%d_duration_time=\d+\.\d{3}ms$" % i) for i in range(8)]
          + [re.compile(r"^tx_pfc%d_duration_warn_cnt: \d+$" % i) for i in range(8)]
          + [re.compile(r"^tx_pfc%d_duration_err_cnt: \d+$" % i) for i in range(8)])


def _clock(sim, when):
    assert sim.sub("npu-sim", "state", "set", "settings.clock", repr(float(when)))[0] == 0


def _pfc_stat(sim, dev):
    """-pfc_stat -g through the tool -> {'tx_ms': [...], 'rx_ms': [...], 'warn': [...], 'err': [...]}."""
    rc, out, err = sim.sub("hccn_tool", "-i", str(dev), "-pfc_stat", "-g")
    assert (rc, err) == (0, "")
    lines = out.splitlines()
    assert len(lines) == 32 and all(rx.match(line) for rx, line in zip(FORMAT, lines)), out
    values = [line.split("=")[1][:-2] if "=" in line else line.split(": ")[1] for line in lines]
    return {"tx_ms": values[0:8], "rx_ms": values[8:16], "warn": [int(v) for v in values[16:24]],
            "err": [int(v) for v in values[24:32]]}


def _stat(sim, dev):
    out = sim.sub("hccn_tool", "-i", str(dev), "-stat", "-g")[1]
    return dict((key, int(value)) for key, value in (line.split(":") for line in out.splitlines()[1:]))


def _enable(sim, dev, bitmap="0,0,0,0,1,0,0,0"):
    assert sim.sub("hccn_tool", "-i", str(dev), "-pfc", "-s", "bitmap", bitmap)[0] == 0


def test_untuned_ports_print_zeros_in_the_source_format(sim):
    _clock(sim, T0)
    stat = _pfc_stat(sim, 0)
    assert stat == {"tx_ms": ["0.000"] * 8, "rx_ms": ["0.000"] * 8, "warn": [0] * 8, "err": [0] * 8}
    assert set(_stat(sim, 0).values()) == {0}


def test_a_lossless_priority_pauses_a_little_and_steadily(sim):
    _clock(sim, T0)
    _enable(sim, 2)
    assert sim.reload()["npus"][2]["net"]["pfc_since"] == [None, None, None, None, T0, None, None, None]
    with open(sim.path, "rb") as handle:
        before = handle.read()
    _clock(sim, T0 + 100)
    with open(sim.path, "rb") as handle:
        pinned = handle.read()
    first = _pfc_stat(sim, 2)
    # 4 pause frames sent and 10 received per second, 0.02 ms of pause each: 0.08 and 0.2 ms per second
    assert first["tx_ms"] == ["0.000"] * 4 + ["8.000"] + ["0.000"] * 3
    assert first["rx_ms"] == ["0.000"] * 4 + ["20.000"] + ["0.000"] * 3
    assert first["warn"] == [0] * 8 and first["err"] == [0] * 8
    stat = _stat(sim, 2)
    assert (stat["mac_tx_pfc_pri4_pkt_num"], stat["mac_tx_pfc_pkt_num"]) == (400, 400)
    assert (stat["mac_rx_pfc_pri4_pkt_num"], stat["mac_rx_pfc_pkt_num"]) == (1000, 1000)
    assert stat["mac_tx_pfc_pri3_pkt_num"] == 0 and stat["mac_tx_mac_pause_num"] == 0
    # reads change nothing in the state: the counters come from the clock
    with open(sim.path, "rb") as handle:
        assert handle.read() == pinned and pinned != before
    _clock(sim, T0 + 103)
    later = _pfc_stat(sim, 2)
    assert (later["tx_ms"][4], later["rx_ms"][4]) == ("8.240", "20.600")
    assert _stat(sim, 2)["mac_rx_pfc_pri4_pkt_num"] == 1030
    # ports and priorities without PFC stay at zero
    assert _pfc_stat(sim, 3)["tx_ms"] == ["0.000"] * 8
    assert _stat(sim, 3)["mac_rx_pfc_pkt_num"] == 0


def test_disabling_pfc_keeps_the_counters_and_stops_them(sim):
    _clock(sim, T0)
    _enable(sim, 1)
    _clock(sim, T0 + 50)
    _enable(sim, 1, "0,0,0,0,0,0,0,0")            # a set may write: the pauses so far are kept
    net = sim.reload()["npus"][1]["net"]
    assert net["pfc_since"][4] is None and net["stats"]["mac_tx_pfc_pri4_pkt_num"] == 200
    _clock(sim, T0 + 500)
    assert _pfc_stat(sim, 1)["tx_ms"][4] == "4.000"
    assert _stat(sim, 1)["mac_tx_pfc_pri4_pkt_num"] == 200
    _enable(sim, 1, "0,0,0,1,1,0,0,0")            # enabled again (and priority 3): they grow from there
    _clock(sim, T0 + 510)
    stat = _stat(sim, 1)
    assert (stat["mac_tx_pfc_pri4_pkt_num"], stat["mac_tx_pfc_pri3_pkt_num"], stat["mac_tx_pfc_pkt_num"]) == (240, 40, 280)
    assert _pfc_stat(sim, 1)["rx_ms"][3:5] == ["2.000", "12.000"]   # 10 + 2 ms: kept, then grown


def test_a_pfc_storm_makes_the_counters_race(sim):
    _clock(sim, T0)
    _enable(sim, 2)
    _enable(sim, 3)
    _clock(sim, T0 + 100)
    assert sim.sub("npu-sim", "fault", "set", "pfc-storm", "--device", "2")[0] == 0   # default 50000 frames/s
    _clock(sim, T0 + 105)
    first = _pfc_stat(sim, 2)
    _clock(sim, T0 + 110)
    second = _pfc_stat(sim, 2)
    stat = _stat(sim, 2)
    # 100 s healthy, then 10 s of storm: the port is paused all the time (1000 ms per second)
    assert (first["tx_ms"][4], second["tx_ms"][4]) == ("5008.000", "10008.000")
    assert (first["rx_ms"][4], second["rx_ms"][4]) == ("5020.000", "10020.000")
    assert (stat["mac_tx_pfc_pri4_pkt_num"], stat["mac_rx_pfc_pri4_pkt_num"]) == (400 + 500000 + 40, 1000 + 500000 + 100)
    assert stat["mac_tx_pfc_pkt_num"] == stat["mac_tx_pfc_pri4_pkt_num"]
    # every stormy second crosses the warning (100 ms) and the error (500 ms) threshold of pause time
    assert (first["warn"][4], first["err"][4], second["warn"][4], second["err"][4]) == (5, 5, 10, 10)
    # only that port: port 3 has PFC on priority 4 too and pauses a little
    assert _pfc_stat(sim, 3)["tx_ms"][4] == "8.800"
    # a milder storm: 10000 frames/s = 200 ms of pause per second, a warning but no error
    assert sim.sub("npu-sim", "fault", "set", "pfc-storm", "--device", "3", "--value", "10000")[0] == 0
    _clock(sim, T0 + 120)
    mild = _pfc_stat(sim, 3)
    assert mild["tx_ms"][4] == "%.3f" % (110 * 0.08 + 10 * 10004 * 0.02)
    assert (mild["warn"][4], mild["err"][4]) == (10, 0)
    # clearing the fault takes its pauses out again, as every fault's effect
    assert sim.sub("npu-sim", "fault", "clear", "pfc-storm")[0] == 0
    assert _pfc_stat(sim, 2)["tx_ms"][4] == "9.600"


def test_a_storm_needs_a_pfc_priority(sim):
    _clock(sim, T0)
    assert sim.sub("npu-sim", "fault", "set", "pfc-storm", "--device", "6")[0] == 0
    _clock(sim, T0 + 10)
    assert _pfc_stat(sim, 6)["tx_ms"] == ["0.000"] * 8   # no lossless priority: no pause frames at all
    _enable(sim, 6)
    _clock(sim, T0 + 12)
    assert _pfc_stat(sim, 6)["tx_ms"][4] == "2000.000"   # counted from when PFC was enabled


def test_two_reads_seconds_apart_differ_with_the_real_clock(sim):
    _enable(sim, 0)
    first = _pfc_stat(sim, 0)
    time.sleep(0.6)
    second = _pfc_stat(sim, 0)
    assert float(second["rx_ms"][4]) > float(first["rx_ms"][4])
    assert sim.sub("npu-sim", "fault", "set", "pfc-storm", "--device", "0", "--value", "1000")[0] == 0
    before = _stat(sim, 0)["mac_rx_pfc_pri4_pkt_num"]
    time.sleep(0.3)
    assert _stat(sim, 0)["mac_rx_pfc_pri4_pkt_num"] - before >= 250


def test_effective_state_shows_the_counters(sim):
    _clock(sim, T0)
    _enable(sim, 4)
    assert sim.sub("npu-sim", "fault", "set", "pfc-storm", "--device", "4", "--value", "100")[0] == 0
    _clock(sim, T0 + 10)
    eff = model.effective(sim.reload())
    assert eff["npus"][4]["net"]["stats"]["mac_tx_pfc_pri4_pkt_num"] == 10 * (4 + 100)
    assert eff["npus"][4]["net"]["pfc_stat"]["tx_ms"][4] == pytest.approx(10 * 104 * 0.02)
    assert sim.data["npus"][4]["net"]["stats"]["mac_tx_pfc_pri4_pkt_num"] == 0


@pytest.mark.parametrize("value", ["-1", "storm"])
def test_pfc_storm_validation(sim, value):
    assert sim.sub("npu-sim", "fault", "set", "pfc-storm", "--value", value)[0] == 2
