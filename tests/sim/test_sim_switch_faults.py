"""The switch side of the RoCE fabric: switch-frame, switch-pfc-priority and switch-no-ecn, and the CNP model."""

import json
import re
import sys

import pytest

from npu_sim import model
from npu_sim import perf
from npu_sim import ports as ports_mod

T0 = 1767225600.0 + 3600  # an hour after the test nodes are created
TUNED_ENV = {"HCCL_RDMA_SL": "4", "HCCL_RDMA_TC": "132"}
GENV = ["-genv", "HCCL_RDMA_SL", "4", "-genv", "HCCL_RDMA_TC", "132"]
ROW = re.compile(r"^(\d+) +\| (\d+\.\d\d) +\| (\d+\.\d{5}) +\| (success|NULL)$")
LOSS = "3 packets transmitted, 0 received, 100.00% packet loss"


def _fault(node, *args):
    rc, out, err = node.sub("npu-sim", "fault", *args)
    assert (rc, err) == (0, ""), err
    return out


def _clock(node, when):
    assert node.sub("npu-sim", "state", "set", "settings.clock", repr(float(when)))[0] == 0


def _tune(node, mtu=9000):
    for npu in node.data["npus"]:
        npu["net"]["pfc"] = [0, 0, 0, 0, 1, 0, 0, 0]
        npu["net"]["dscp_to_tc"][33] = 3
        npu["net"]["mtu"] = mtu
    node.save()


def _stat(node, dev):
    rc, out, err = node.sub("hccn_tool", "-i", str(dev), "-stat", "-g")
    assert (rc, err) == (0, "")
    lines = out.splitlines()
    assert lines[0] == "packet statistics:"
    # the layout is unchanged: the same keys in the same order
    assert [line.split(":")[0] for line in lines[1:]] == list(ports_mod.STAT_KEYS)
    return dict((key, int(value)) for key, value in (line.split(":") for line in lines[1:]))


def _pfc_stat(node, dev):
    out = node.sub("hccn_tool", "-i", str(dev), "-pfc_stat", "-g")[1].splitlines()
    assert len(out) == 32
    return {"tx_ms": [line.split("=")[1] for line in out[0:8]], "rx_ms": [line.split("=")[1] for line in out[8:16]]}


def _counters(node, dev):
    """All the counters of -stat -g and -pfc_stat -g of a port as numbers (for monotonicity checks)."""
    values = dict(_stat(node, dev))
    for key, items in _pfc_stat(node, dev).items():
        for prio, text in enumerate(items):
            values["%s%d" % (key, prio)] = float(text[:-2])
    return values


def _lldp(node, dev):
    rc, out, err = node.sub("hccn_tool", "-i", str(dev), "-lldp", "-g")
    assert (rc, err) == (0, "")
    return out


# a lossless cross-node AllReduce of two 8-NPU nodes: 8 ports x 22.5 GB/s capped by the intra-node HCCS figure
LOSSLESS = min(8 * 22.5, 137.2)


def _busbw(node, hosts, genv=None, extra=()):
    """busbw of a 1 GiB all_reduce_test launched with mpirun on ``node`` over ``hosts`` (None: no host list)."""
    ranks = 8 * (len(hosts.split(",")) if hosts else 1)
    args = (["-hosts", hosts] if hosts else []) + list(GENV if genv is None else genv)
    argv = args + [sys.executable, "-m", "npu_sim", "all_reduce_test", "-b", "1G", "-e", "1G"] + list(extra)
    rc, out, err = node.sub("mpirun", *argv)
    assert (rc, err) == (0, ""), err
    alg = float(ROW.match(out.splitlines()[-1]).group(3))
    return alg * 2 * (ranks - 1) / ranks


# --- LLDP and ping (switch-frame) -------------------------------------------------------------------


def test_lldp_shows_the_switch_frame_size_of_the_faulted_port_only(sim):
    before = [_lldp(sim, dev) for dev in range(8)]
    assert all("Maximum Frame Size TLV\n\t9216\nEnd of LLDPDU TLV\n" in text for text in before)
    _fault(sim, "set", "switch-frame", "--device", "2", "--value", "1518")
    assert _lldp(sim, 2) == before[2].replace("\t9216\n", "\t1518\n")
    assert [_lldp(sim, dev) for dev in range(8) if dev != 2] == [before[dev] for dev in range(8) if dev != 2]
    # without a value: 1518, on every port without --device; the smaller size wins where two overlap
    _fault(sim, "set", "switch-frame", "--value", "4000")
    assert [_lldp(sim, dev).count("\t4000\n") for dev in range(8)] == [1, 1, 0, 1, 1, 1, 1, 1]
    assert "\t1518\n" in _lldp(sim, 2)
    _fault(sim, "clear", "switch-frame")
    _fault(sim, "set", "switch-frame", "--device", "5")
    assert "Maximum Frame Size TLV\n\t1518\n" in _lldp(sim, 5)
    # the state effective shows it too; the stored lldp is untouched
    effective = json.loads(sim.sub("npu-sim", "state", "effective")[1])
    assert effective["npus"][5]["net"]["lldp"]["max_frame"] == 1518
    assert sim.reload()["npus"][5]["net"]["lldp"]["max_frame"] == 9216
    _fault(sim, "clear")
    assert [_lldp(sim, dev) for dev in range(8)] == before


def _ping(node, dev, address, size):
    rc, out, err = node.sub("hccn_tool", "-i", str(dev), "-ping", "-g", "address", address, "size", str(size))
    assert (rc, err) == (0, "")
    assert out.startswith("device %d PING %s\n" % (dev, address))
    return LOSS not in out


def test_ping_needs_the_frame_to_fit_both_switch_ports(nodes):
    one, two = nodes("node01", 1), nodes("node02", 2)
    _tune(one)
    _tune(two)
    peer = "10.20.0.12"
    assert _ping(one, 0, peer, 8972) and _ping(one, 0, peer, 1400)
    _fault(one, "set", "switch-frame", "--device", "0", "--value", "1518")
    assert not _ping(one, 0, peer, 8972)
    assert _ping(one, 0, peer, 1400)
    # 1472 + 28 (IP + ICMP) + 18 (Ethernet header + FCS) = 1518 fits exactly; one byte more does not
    assert _ping(one, 0, peer, 1472) and not _ping(one, 0, peer, 1473)
    assert _ping(one, 1, "10.20.1.12", 8972)  # the other ports are not affected
    _fault(one, "clear", "switch-frame")
    # the peer's switch port counts too
    _fault(two, "set", "switch-frame", "--value", "1518")
    assert not _ping(one, 0, peer, 8972) and _ping(one, 0, peer, 1400)
    _fault(two, "clear")
    assert _ping(one, 0, peer, 8972)


# --- the busbw model -------------------------------------------------------------------------------


def test_switch_frame_below_the_mtu_makes_roce_lossy(nodes):
    one, two = nodes("node01", 1), nodes("node02", 2)
    _tune(one)
    _tune(two)
    assert _busbw(one, "node01,node02") == pytest.approx(LOSSLESS, rel=0.02)
    _fault(two, "set", "switch-frame", "--device", "3", "--value", "1518")
    assert _busbw(one, "node01,node02") == pytest.approx(3.0, rel=0.02)
    assert perf.roce_check([one.reload(), two.reload()], TUNED_ENV) == [
        "node02 NPU 3: switch port frame size 1518 is below MTU 9000 + 18"]
    # a frame size that carries MTU + 18 is fine: 9018 with MTU 9000
    _fault(two, "set", "switch-frame", "--device", "3", "--value", "9018")
    assert perf.roce_check([one.reload(), two.reload()], TUNED_ENV) == []
    assert _busbw(one, "node01,node02") == pytest.approx(LOSSLESS, rel=0.02)
    # a single-node run does not use the switch
    _fault(one, "set", "switch-frame", "--value", "1518")
    assert _busbw(one, None) == pytest.approx(137.2, rel=0.01)


def test_switch_pfc_priority_other_than_the_sl_makes_roce_lossy(nodes):
    one, two = nodes("node01", 1), nodes("node02", 2)
    _tune(one)
    _tune(two)
    _fault(one, "set", "switch-pfc-priority", "--device", "6", "--value", "3")
    assert _busbw(one, "node01,node02") == pytest.approx(3.0, rel=0.02)
    assert perf.roce_check([one.reload(), two.reload()], TUNED_ENV) == [
        "node01 NPU 6: switch runs PFC on priority 3, not on HCCL_RDMA_SL 4"]
    busbw = json.loads(one.sub("npu-sim", "busbw", env=TUNED_ENV)[1])
    assert busbw["lossless"] is False and busbw["reasons"] == [
        "node01 NPU 6: switch runs PFC on priority 3, not on HCCL_RDMA_SL 4"]
    # the switch agreeing with HCCL_RDMA_SL is no mismatch
    _fault(one, "set", "switch-pfc-priority", "--device", "6", "--value", "4")
    assert perf.roce_check([one.reload(), two.reload()], TUNED_ENV) == []
    assert _busbw(one, "node01,node02") == pytest.approx(LOSSLESS, rel=0.02)
    # without a value the switch runs PFC on priority 3 (model.SWITCH_PFC_PRIORITY_DEFAULT), on every port
    _fault(two, "set", "switch-pfc-priority")
    reasons = perf.roce_check([one.reload(), two.reload()], TUNED_ENV)
    assert reasons == ["node02 NPU %d: switch runs PFC on priority 3, not on HCCL_RDMA_SL 4" % dev for dev in range(8)]


def test_switch_no_ecn_leaves_busbw_unchanged(nodes):
    one, two = nodes("node01", 1), nodes("node02", 2)
    _tune(one)
    _tune(two)
    _fault(two, "set", "switch-no-ecn")
    assert perf.roce_check([one.reload(), two.reload()], TUNED_ENV) == []
    assert _busbw(one, "node01,node02") == pytest.approx(LOSSLESS, rel=0.02)


# --- PFC counters under switch-pfc-priority --------------------------------------------------------


def test_switch_pfc_priority_moves_the_received_pauses(sim):
    _clock(sim, T0)
    for dev in (2, 3):
        assert sim.sub("hccn_tool", "-i", str(dev), "-pfc", "-s", "bitmap", "0,0,0,0,1,0,0,0")[0] == 0
    _clock(sim, T0 + 100)
    _fault(sim, "set", "switch-pfc-priority", "--device", "2", "--value", "3")
    _clock(sim, T0 + 200)
    stat = _stat(sim, 2)
    # received: nothing more on the NPU's priority 4 since the fault, 10 per second on the switch's 3
    assert (stat["mac_rx_pfc_pri4_pkt_num"], stat["mac_rx_pfc_pri3_pkt_num"], stat["mac_rx_pfc_pkt_num"]) == (1000, 1000, 2000)
    # sent: unchanged (4 per second on priority 4)
    assert (stat["mac_tx_pfc_pri4_pkt_num"], stat["mac_tx_pfc_pri3_pkt_num"], stat["mac_tx_pfc_pkt_num"]) == (800, 0, 800)
    pfc = _pfc_stat(sim, 2)
    assert pfc["rx_ms"][3:5] == ["20.000ms", "20.000ms"] and pfc["tx_ms"][3:5] == ["0.000ms", "16.000ms"]
    # the port without the fault counts as before
    other = _stat(sim, 3)
    assert (other["mac_rx_pfc_pri4_pkt_num"], other["mac_rx_pfc_pri3_pkt_num"]) == (2000, 0)
    # reads do not write the state
    with open(sim.path, "rb") as handle:
        pinned = handle.read()
    _stat(sim, 2)
    with open(sim.path, "rb") as handle:
        assert handle.read() == pinned


def test_pfc_counters_are_monotonic_across_the_fault(sim):
    _clock(sim, T0)
    assert sim.sub("hccn_tool", "-i", "2", "-pfc", "-s", "bitmap", "0,0,0,0,1,0,0,0")[0] == 0
    seen = []

    def read(when):
        _clock(sim, when)
        seen.append(_counters(sim, 2))

    read(T0 + 50)
    _fault(sim, "set", "switch-pfc-priority", "--value", "3")  # every port
    read(T0 + 50)
    read(T0 + 100.5)
    # a PFC set under the fault (priority 3 enabled too) and a port fault over the node fault
    assert sim.sub("hccn_tool", "-i", "2", "-pfc", "-s", "bitmap", "0,0,0,1,1,0,0,0")[0] == 0
    read(T0 + 100.5)
    read(T0 + 130)
    assert sim.sub("hccn_tool", "-i", "2", "-pfc", "-s", "bitmap", "0,0,0,0,1,0,0,0")[0] == 0
    _fault(sim, "set", "switch-pfc-priority", "--device", "2", "--value", "6")
    read(T0 + 160.25)
    before_clear = seen[-1]
    _fault(sim, "clear", "switch-pfc-priority")
    read(T0 + 160.25)
    read(T0 + 200)
    for earlier, later in zip(seen, seen[1:]):
        assert all(later[key] >= earlier[key] for key in earlier), [k for k in earlier if later[k] < earlier[k]]
    # clearing keeps what grew: the switch's priorities keep their counts and stop, priority 4 grows again
    after_clear, last = seen[-2], seen[-1]
    assert after_clear["mac_rx_pfc_pri6_pkt_num"] == before_clear["mac_rx_pfc_pri6_pkt_num"] > 0
    assert last["mac_rx_pfc_pri6_pkt_num"] == after_clear["mac_rx_pfc_pri6_pkt_num"]
    assert last["mac_rx_pfc_pri3_pkt_num"] == after_clear["mac_rx_pfc_pri3_pkt_num"] > 0
    assert last["mac_rx_pfc_pri4_pkt_num"] - after_clear["mac_rx_pfc_pri4_pkt_num"] in (397, 398)
    assert last["mac_tx_pfc_pri4_pkt_num"] == 800  # tx never changed: 4 per second for 200 s


# --- CNP counters ----------------------------------------------------------------------------------


def _cnp(node):
    return [(stat["roce_tx_cnp_pkt_num"], stat["roce_rx_cnp_pkt_num"]) for stat in (_stat(node, dev) for dev in range(8))]


def test_a_lossless_cross_node_run_adds_cnps_on_every_node(nodes):
    one, two, three = nodes("node01", 1), nodes("node02", 2), nodes("node03", 3)
    _tune(one)
    _tune(two)
    per_run = model.cnp_per_port([1024 ** 3], 20, 5, 2)
    assert per_run == round(100 * 1024 ** 3 * 25 / 1e9) == 2684
    # the usual sweep (8K..1G, factor 2): a few thousand per run
    assert model.cnp_per_port([8192 * 2 ** i for i in range(18)], 20, 5, 2) == 5369
    assert _cnp(one) == _cnp(two) == [(0, 0)] * 8
    _busbw(one, "node01,node02")
    assert _cnp(one) == _cnp(two) == [(per_run, per_run)] * 8
    assert _cnp(three) == [(0, 0)] * 8  # not in the run
    # -p 4: only NPUs 0-3 carry the run
    _busbw(one, "node01,node02", extra=["-p", "4"])
    assert _cnp(one) == [(2 * per_run, 2 * per_run)] * 4 + [(per_run, per_run)] * 4
    # a single-node run sends nothing over the switch
    _busbw(one, None)
    _busbw(one, "node01")
    assert _cnp(one)[5] == (per_run, per_run)
    # a lossy run (node03 untuned; or no RDMA settings): no CNPs either
    _busbw(one, "node01,node02,node03")
    _busbw(one, "node01,node02", genv=[])
    assert _cnp(two) == [(2 * per_run, 2 * per_run)] * 4 + [(per_run, per_run)] * 4
    assert _cnp(three) == [(0, 0)] * 8


def test_switch_no_ecn_keeps_the_cnp_counters_flat(nodes):
    one, two = nodes("node01", 1), nodes("node02", 2)
    _tune(one)
    _tune(two)
    per_run = model.cnp_per_port([1024 ** 3], 20, 5, 2)
    _fault(two, "set", "switch-no-ecn", "--device", "5")
    _busbw(two, "node01,node02")  # launched from the faulted node this time
    assert _cnp(one) == [(per_run, per_run)] * 8
    assert _cnp(two) == [(per_run, per_run)] * 5 + [(0, 0)] + [(per_run, per_run)] * 2
    _fault(one, "set", "switch-no-ecn")
    _busbw(one, "node01,node02")
    assert _cnp(one) == [(per_run, per_run)] * 8
    assert _cnp(two) == [(2 * per_run, 2 * per_run)] * 5 + [(0, 0)] + [(2 * per_run, 2 * per_run)] * 2


# --- fault validation ------------------------------------------------------------------------------


@pytest.mark.parametrize("args,text", [
    (["switch-frame", "--value", "63"], "switch-frame --value is the switch port's maximum frame size in bytes, an integer 64-16000"),
    (["switch-frame", "--value", "16001"], "an integer 64-16000"),
    (["switch-frame", "--value", "1518.5"], "an integer 64-16000"),
    (["switch-frame", "--value", "big"], "an integer 64-16000"),
    (["switch-pfc-priority", "--value", "8"], "switch-pfc-priority --value is the priority the switch runs PFC on, an integer 0-7"),
    (["switch-pfc-priority", "--value", "-1"], "an integer 0-7"),
    (["switch-pfc-priority", "--value", "x"], "an integer 0-7"),
    (["switch-no-ecn", "--value", "1"], "switch-no-ecn takes no --value"),
    (["switch-frame", "--device", "8", "--value", "1518"], "--device 8: this node has NPUs 0-7"),
])
def test_bad_switch_fault_values_are_refused(sim, args, text):
    rc, out, err = sim.sub("npu-sim", "fault", "set", *args)
    assert (rc, out) == (2, "")
    assert err.startswith("npu-sim: ") and text in err
    assert sim.reload()["faults"] == []


def test_fault_list_and_help_show_the_switch_faults(sim):
    _fault(sim, "set", "switch-frame", "--device", "1", "--value", "64")
    _fault(sim, "set", "switch-pfc-priority", "--value", "0")
    _fault(sim, "set", "switch-no-ecn", "--device", "7")
    listed = json.loads(_fault(sim, "list"))
    assert [(f["kind"], f["device"], f["value"]) for f in listed] == [
        ("switch-frame", 1, "64"), ("switch-pfc-priority", None, "0"), ("switch-no-ecn", 7, None)]
    helptext = sim.sub("npu-sim", "fault", "--help")[1]
    for kind in model.SWITCH_KINDS:
        assert kind in helptext
