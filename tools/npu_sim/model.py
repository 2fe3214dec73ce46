"""Derived views of a node state: faults applied, link status computed from time (no daemon)."""

from . import faults as faults_mod
from . import node as node_mod
from . import ports as ports_mod
from . import statefile

# Illustrative health codes per level (the simulator's choice; real codes depend on the event).
HEALTH_CODES = {
    "Warning": [[0x80E18402, "node type=HBM, sensor type=Memory, event state=Single-bit ECC errors exceed the threshold"]],
    "Alarm": [[0xA4025021, "ascend_monitor adda heart beat lost error"],
              [0x8C03A000, "node type=process-manager, sensor type=General Software, event state=The process start failed or exit abnormally"]],
    "Critical": [[0x80E01801, "node type=AICORE, sensor type=Hardware, event state=AI Core hardware fault"]],
}
ECC_MULTIBIT_CODE = [0x80E18401, "node type=HBM, sensor type=Memory, event state=Multi-bit ECC error"]
HEALTH_ORDER = ("OK", "Warning", "Alarm", "Critical", "UNKNOWN")
ECC_SINGLEBIT_PER_MIN = 60.0
# ``power-high`` (value: W, default POWER_HIGH_W, the figure of the busy -t common doc sample, 298.6 W): the NPU
# draws that much. ``pcie-err`` (value: K, default PCIE_ERR_DEFAULT): K more on RX Error Count and on Retry Count.
# ``throttle`` (value: MHz, default half the rated AI Core frequency): Aicore curFreq drops to it and the NPU is at
# least THROTTLE_TEMP_C hot (below the stage 0 default of 80 C, so the throttling is what shows).
# ``pcie-err-growing`` (value: errors per minute, default ECC_SINGLEBIT_PER_MIN): RX Error Count and Retry Count grow
# from the clock on every read, as ``ecc-singlebit`` does for the ECC counters.
# ``crc-growing`` (value: errors per minute, default CRC_GROWING_PER_MIN): the port receives frames with FCS errors,
# counted from the fault's ``since`` on every read: mac_rx_fcs_err_pkt_num (printed by a build with the extended
# counters, settings.hccn_ext_stat) and mac_rx_bad_pkt_num grow by that many, mac_rx_bad_oct_num by CRC_FRAME_BYTES
# each. ``optical-low`` (value: mW, default OPTICAL_LOW_MW, within 1 dB above the simulated module's RxPower Low
# Thres of 0.1445 mW): every Rx lane of the port's module shows that power.
CRC_GROWING_PER_MIN = 600.0
CRC_FRAME_BYTES = 1024
OPTICAL_LOW_MW = 0.16
POWER_HIGH_W = 300.0
PCIE_ERR_DEFAULT = 10
THROTTLE_TEMP_C = 75

# ``slow-port`` / ``slow-node``: the factor by which a cross-node run that includes the fault is slowed
# (model figure). A slow port also shows how it got there: SLOW_PORT_RETRAINS link DOWN/UP records,
# SLOW_PORT_RETRAIN_GAP_S apart, each DOWN for SLOW_PORT_DOWN_S, the last UP at the fault's ``since``;
# and error counters of ``-stat -g`` that grow by these amounts per second since the fault was set.
SLOW_FACTOR = 0.25
SLOW_KINDS = ("slow-port", "slow-node")
SLOW_PORT_RETRAINS = 3
SLOW_PORT_RETRAIN_GAP_S = 30.0
SLOW_PORT_DOWN_S = 2.0
SLOW_PORT_ERRORS_PER_S = (("mac_rx_bad_pkt_num", 20), ("mac_rx_bad_oct_num", 20 * 1024),
                          ("roce_out_of_order_num", 50), ("roce_new_pkt_rty_num", 200))

# PFC pause counters (model figures). A priority with PFC enabled pauses a little: the port sends
# PFC_TX_PER_S and receives PFC_RX_PER_S pause frames per second on it, each worth PFC_MS_PER_FRAME of
# pause time. A ``pfc-storm`` fault (value: frames per second, default PFC_STORM_PER_S) adds that many
# sent and received frames per second on every PFC-enabled priority of the port; the pause time per second
# is capped at 1000 ms. Each second in which the sent pause time reaches PFC_WARN_MS_PER_S
# (PFC_ERR_MS_PER_S) adds one to tx_pfcN_duration_warn_cnt (err_cnt).
PFC_TX_PER_S = 4.0
PFC_RX_PER_S = 10.0
PFC_MS_PER_FRAME = 0.02
PFC_MAX_MS_PER_S = 1000.0
PFC_STORM_PER_S = 50000.0
PFC_WARN_MS_PER_S = 100.0
PFC_ERR_MS_PER_S = 500.0

# Switch side of the RoCE fabric (a MODEL). NPU d of the node with index n is cabled to leaf switch
# leaf-0(d // 2 + 1), port 400GE1/(d // 2 + 1)/(n % 48 + 1):(d % 2 + 1) (net.lldp of the state). The switch
# ports are healthy unless a fault of the node says otherwise for the port cabled to one of its NPUs:
# - ``switch-frame`` (value: maximum frame size in bytes, default SWITCH_FRAME_DEFAULT): the switch port
#   advertises that size in LLDP and drops longer frames (a frame is the IP packet + ETH_OVERHEAD bytes);
# - ``switch-pfc-priority`` (value: priority 0-7, default SWITCH_PFC_PRIORITY_DEFAULT): the switch runs PFC on
#   that priority instead of the NPU's: the pause frames the NPU receives arrive on it (see pfc_growth);
# - ``switch-no-ecn``: the switch does not mark ECN, so no CNP is generated for the port (see cnp_per_port).
SWITCH_KINDS = ("switch-frame", "switch-pfc-priority", "switch-no-ecn")
SWITCH_FRAME_DEFAULT = 1518
SWITCH_FRAME_RANGE = (64, 16000)
SWITCH_PFC_PRIORITY_DEFAULT = 3
ETH_OVERHEAD = 18  # Ethernet header (14) + FCS (4): frame size = IP packet (MTU) + 18
IP_ICMP_HEADERS = 28  # IPv4 (20) + ICMP (8): an ICMP echo of S bytes is an IP packet of S + 28
# CNPs (congestion notification packets) of a lossless cross-node all_reduce_test, per port and direction:
# CNP_PER_GB per GB (1e9 bytes) of bus traffic of the port (see cnp_per_port).
CNP_PER_GB = 100.0


def ecc_singlebit_errors(fault, when):
    """Single-bit errors an ``ecc-singlebit`` fault has produced by ``when``: value per minute since it was set.

    Computed from the clock on every read (like the link flap), so no read writes the state."""
    try:
        rate = float(fault.get("value") or ECC_SINGLEBIT_PER_MIN)
    except (TypeError, ValueError):
        rate = ECC_SINGLEBIT_PER_MIN
    since = float(fault.get("since") or when)
    return max(0, int(rate * max(0.0, when - since) / 60.0))


def _number(value, default):
    try:
        return float(value) if value not in (None, "") else default
    except (TypeError, ValueError):
        return default


def slow_factor_of(fault):
    """The factor of a ``slow-port``/``slow-node`` fault: its value, default 0.25, kept in (0, 1]."""
    factor = _number(fault.get("value"), SLOW_FACTOR)
    return factor if 0.0 < factor <= 1.0 else SLOW_FACTOR


def job_ports(npus=None, devices=None):
    """The NPU ports a run uses, as a set: ``devices`` (the job's physical NPUs) when given, else NPUs 0..npus-1;
    None (every port) without either."""
    if devices is not None:
        return set(int(device) for device in devices)
    if npus is not None:
        return set(range(int(npus)))
    return None


def slow_faults(st, npus=None, devices=None):
    """``slow-node`` and ``slow-port`` faults of a node as [(kind, device, factor)]; with ``devices`` (the job's
    physical NPUs, ASCEND_RT_VISIBLE_DEVICES) or ``npus`` (NPUs 0..npus-1), only the ports the run uses (a port-less
    slow-port fault covers every port)."""
    ports = job_ports(npus, devices)
    found = []
    for fault in st.get("faults", []):
        kind = fault.get("kind")
        if kind not in SLOW_KINDS:
            continue
        device = fault.get("device")
        if kind == "slow-port" and device is not None and ports is not None and int(device) not in ports:
            continue
        found.append((kind, None if device is None else int(device), slow_factor_of(fault)))
    return found


def _slow_port_events(st, device, when):
    """The link retrains that left a ``slow-port`` port degraded: DOWN/UP pairs, the last UP at ``since``."""
    events = []
    for fault in faults_mod.faults_for(st, "slow-port", device):
        since = float(fault.get("since") or when)
        for number in range(SLOW_PORT_RETRAINS):
            up = since - number * SLOW_PORT_RETRAIN_GAP_S
            events += [[up - SLOW_PORT_DOWN_S, "DOWN"], [up, "UP"]]
    return [ev for ev in events if ev[0] <= when]


def pfc_storm(st, device):
    """(frames per second, since) of the strongest ``pfc-storm`` fault on ``device``; (0.0, None) without one."""
    rate, since = 0.0, None
    for fault in faults_mod.faults_for(st, "pfc-storm", device):
        value = max(0.0, _number(fault.get("value"), PFC_STORM_PER_S))
        if value > rate:
            rate, since = value, float(fault.get("since") or 0.0)
    return rate, since


def pfc_enabled_since(st, device, prio):
    """When PFC was enabled on ``prio`` of ``device`` (``net.pfc_since``, written by the PFC set; the node's
    creation when the state has no timestamp), or None while it is disabled."""
    net = st["npus"][device]["net"]
    if not net["pfc"][prio]:
        return None
    stamps = net.get("pfc_since") or []
    stamp = stamps[prio] if prio < len(stamps) else None
    if stamp is None:
        stamp = st.get("created")
    return None if stamp is None else float(stamp)


def switch_frame(st, device):
    """Maximum frame size of the switch port cabled to ``device`` under a ``switch-frame`` fault (the smallest
    when several apply), or None: a healthy switch port is not modelled as dropping any frame the NPU sends."""
    sizes = [int(_number(fault.get("value"), SWITCH_FRAME_DEFAULT)) for fault in faults_mod.faults_for(st, "switch-frame", device)]
    return min(sizes) if sizes else None


def lldp_max_frame(st, device):
    """The Maximum Frame Size the switch port advertises in LLDP: the fault's size, else ``net.lldp.max_frame``."""
    frame = switch_frame(st, device)
    return int(st["npus"][device]["net"]["lldp"]["max_frame"]) if frame is None else frame


def frame_fits(st, device, ip_bytes):
    """True when an IP packet of ``ip_bytes`` passes the switch port of ``device`` (frame = packet + 18)."""
    frame = switch_frame(st, device)
    return frame is None or ip_bytes + ETH_OVERHEAD <= frame


def _switch_prio_of(fault):
    value = _number(fault.get("value"), SWITCH_PFC_PRIORITY_DEFAULT)
    return int(value) if 0 <= value <= 7 else SWITCH_PFC_PRIORITY_DEFAULT


def switch_pfc_priorities(st, device):
    """The priorities of the ``switch-pfc-priority`` faults on ``device`` (sorted, no repeats)."""
    return sorted(set(_switch_prio_of(fault) for fault in faults_mod.faults_for(st, "switch-pfc-priority", device)))


def switch_pfc_priority(st, device):
    """(K, since) of the ``switch-pfc-priority`` fault that holds on ``device`` (the newest one when a port fault
    and a node fault overlap); (None, None) without one."""
    found = (None, None)
    newest = None
    for fault in faults_mod.faults_for(st, "switch-pfc-priority", device):
        since = float(fault.get("since") or 0.0)
        if newest is None or since > newest or (since == newest and fault.get("device") is not None):
            newest, found = since, (_switch_prio_of(fault), since)
    return found


def switch_no_ecn(st, device):
    """True when the switch port cabled to ``device`` does not mark ECN (``switch-no-ecn``)."""
    return bool(faults_mod.faults_for(st, "switch-no-ecn", device))


def cnp_per_port(sizes, iters, warmup, nodes):
    """CNPs sent (and as many received) by one NPU port in a lossless AllReduce over ``nodes`` nodes: CNP_PER_GB
    per GB of bus traffic, the bus traffic of a port being sum(sizes) x (iters + warmup) x 2(N - 1)/N bytes."""
    if nodes < 2:
        return 0
    bus_bytes = float(sum(sizes)) * (int(iters) + int(warmup)) * 2.0 * (nodes - 1) / nodes
    return int(round(CNP_PER_GB * bus_bytes / 1e9))


def add_cnp(data, npus, count, devices=None):
    """Add ``count`` CNPs to ``roce_tx_cnp_pkt_num`` and ``roce_rx_cnp_pkt_num`` of the job's NPUs of the state
    ``data`` (in place): ``devices`` (its physical NPUs) when given, else NPUs 0..npus-1; not on the ports whose switch
    does not mark ECN. -> the devices counted."""
    counted = []
    present = len(data["npus"])
    wanted = sorted(job_ports(npus, devices)) if devices is not None else range(min(int(npus), present))
    for device in wanted:
        if not 0 <= device < present:
            continue
        if switch_no_ecn(data, device):
            continue
        net = data["npus"][device]["net"]
        stats = net.setdefault("stats", dict((key, 0) for key in ports_mod.STAT_KEYS))
        for key in ("roce_tx_cnp_pkt_num", "roce_rx_cnp_pkt_num"):
            stats[key] = int(stats.get(key, 0)) + int(count)
        counted.append(device)
    return counted


def pfc_growth(st, device, when):
    """Growth of the PFC counters of ``device`` by ``when`` (not yet in the state): 8-entry lists
    ``tx_frames``, ``rx_frames`` (ints), ``tx_ms``, ``rx_ms`` (floats), ``warn_cnt``, ``err_cnt`` (ints).

    Computed from the clock on every read, so no read writes the state."""
    grown = dict((key, [0] * 8) for key in ("tx_frames", "rx_frames", "warn_cnt", "err_cnt"))
    grown.update((key, [0.0] * 8) for key in ("tx_ms", "rx_ms"))
    storm, storm_since = pfc_storm(st, device)
    # what grew before pfc_folded_at is in the stored counters already (see fold_pfc_growth)
    folded = st["npus"][device]["net"].get("pfc_folded_at")
    folded = None if folded is None else float(folded)
    # switch-pfc-priority K: the switch pauses the NPU on K only; the NPU's other priorities receive no pauses
    sw_prio, sw_since = switch_pfc_priority(st, device)
    for prio in range(8):
        start = pfc_enabled_since(st, device, prio)
        if start is None:
            if prio == sw_prio:
                rx_s = max(0.0, when - max(sw_since, folded if folded is not None else sw_since))
                grown["rx_frames"][prio] = int(PFC_RX_PER_S * rx_s)
                grown["rx_ms"][prio] = min(PFC_MAX_MS_PER_S, PFC_RX_PER_S * PFC_MS_PER_FRAME) * rx_s
            continue
        if folded is not None:
            start = max(start, folded)
        rx_end = when if sw_prio is None or prio == sw_prio else max(start, min(when, sw_since))
        tx_storm_s = 0.0
        for direction, base, end in (("tx", PFC_TX_PER_S, when), ("rx", PFC_RX_PER_S, rx_end)):
            enabled_s = max(0.0, end - start)
            storm_s = max(0.0, end - max(start, storm_since)) if storm > 0 else 0.0
            calm_s = enabled_s - storm_s
            if direction == "tx":
                tx_storm_s = storm_s
            grown[direction + "_frames"][prio] = int(base * enabled_s + storm * storm_s)
            storm_ms = min(PFC_MAX_MS_PER_S, (base + storm) * PFC_MS_PER_FRAME)
            grown[direction + "_ms"][prio] = min(PFC_MAX_MS_PER_S, base * PFC_MS_PER_FRAME) * calm_s + storm_ms * storm_s
        tx_storm_ms = min(PFC_MAX_MS_PER_S, (PFC_TX_PER_S + storm) * PFC_MS_PER_FRAME)
        if tx_storm_s and tx_storm_ms >= PFC_WARN_MS_PER_S:
            grown["warn_cnt"][prio] = int(tx_storm_s)
        if tx_storm_s and tx_storm_ms >= PFC_ERR_MS_PER_S:
            grown["err_cnt"][prio] = int(tx_storm_s)
    return grown


def net_counters(st, device, when=None):
    """-> (stats, pfc_stat) of ``device`` as ``-stat -g`` and ``-pfc_stat -g`` show them at ``when``: the
    stored counters plus the PFC pauses and the errors of a slow port since then (copies; nothing written)."""
    when = node_mod.now(st) if when is None else when
    net = st["npus"][device]["net"]
    stats = dict((key, int(net.get("stats", {}).get(key, 0))) for key in ports_mod.stat_keys(True))
    stored = net.get("pfc_stat") or {}
    pfc_stat = {"tx_ms": [float(v) for v in stored.get("tx_ms", [0.0] * 8)],
                "rx_ms": [float(v) for v in stored.get("rx_ms", [0.0] * 8)],
                "warn_cnt": [int(v) for v in stored.get("warn_cnt", [0] * 8)],
                "err_cnt": [int(v) for v in stored.get("err_cnt", [0] * 8)]}
    grown = pfc_growth(st, device, when)
    for prio in range(8):
        stats["mac_tx_pfc_pri%d_pkt_num" % prio] += grown["tx_frames"][prio]
        stats["mac_rx_pfc_pri%d_pkt_num" % prio] += grown["rx_frames"][prio]
        for key in ("tx_ms", "rx_ms", "warn_cnt", "err_cnt"):
            pfc_stat[key][prio] += grown[key][prio]
    stats["mac_tx_pfc_pkt_num"] += sum(grown["tx_frames"])
    stats["mac_rx_pfc_pkt_num"] += sum(grown["rx_frames"])
    for fault in faults_mod.faults_for(st, "slow-port", device):
        seconds = max(0.0, when - float(fault.get("since") or when))
        for key, per_s in SLOW_PORT_ERRORS_PER_S:
            stats[key] += int(per_s * seconds)
    for fault in faults_mod.faults_for(st, "crc-growing", device):
        errors = crc_errors(fault, when)
        stats["mac_rx_fcs_err_pkt_num"] += errors
        stats["mac_rx_bad_pkt_num"] += errors
        stats["mac_rx_bad_oct_num"] += errors * CRC_FRAME_BYTES
    return stats, pfc_stat


def crc_errors(fault, when):
    """Frames with FCS errors a ``crc-growing`` fault has produced by ``when``: value per minute since it was set."""
    rate = _number(fault.get("value"), CRC_GROWING_PER_MIN)
    since = float(fault.get("since") or when)
    return max(0, int(max(rate, 0.0) * max(0.0, when - since) / 60.0))


def optical_view(st, device):
    """The optical module of ``device`` as ``-optical -g`` shows it: the stored one, every Rx lane at the power of an
    ``optical-low`` fault of the port (a copy; nothing written)."""
    opt = dict(st["npus"][device]["net"]["optical"])
    for fault in faults_mod.faults_for(st, "optical-low", device):
        power = _number(fault.get("value"), OPTICAL_LOW_MW)
        opt["rx_power_mw"] = [power for _lane in opt["rx_power_mw"]]
    return opt


def fold_pfc_counters(data, device, bits, when):
    """Before a PFC set changes the bitmap to ``bits``: keep the pauses counted so far on the priorities it
    disables (added to the stored counters), and stamp ``net.pfc_since`` of the ones it enables."""
    net = data["npus"][device]["net"]
    if switch_pfc_priority(data, device)[0] is not None:
        # the switch-side growth does not follow the bitmap: keep everything counted so far
        fold_pfc_growth(data, device, when)
    grown = pfc_growth(data, device, when)
    stats = net.setdefault("stats", dict((key, 0) for key in ports_mod.STAT_KEYS))
    pfc_stat = net.setdefault("pfc_stat", {"tx_ms": [0.0] * 8, "rx_ms": [0.0] * 8, "warn_cnt": [0] * 8,
                                           "err_cnt": [0] * 8})
    stamps = list(net.get("pfc_since") or [])
    stamps += [None] * (8 - len(stamps))
    for prio in range(8):
        if net["pfc"][prio] and not bits[prio]:
            for direction in ("tx", "rx"):
                frames = grown[direction + "_frames"][prio]
                key = "mac_%s_pfc_pri%d_pkt_num" % (direction, prio)
                stats[key] = int(stats.get(key, 0)) + frames
                total = "mac_%s_pfc_pkt_num" % direction
                stats[total] = int(stats.get(total, 0)) + frames
                pfc_stat[direction + "_ms"][prio] = round(float(pfc_stat[direction + "_ms"][prio])
                                                          + grown[direction + "_ms"][prio], 6)
            for key in ("warn_cnt", "err_cnt"):
                pfc_stat[key][prio] = int(pfc_stat[key][prio]) + grown[key][prio]
            stamps[prio] = None
        elif bits[prio] and not net["pfc"][prio]:
            stamps[prio] = when
    net["pfc_since"] = stamps


def fold_pfc_growth(data, device, when):
    """Add all the PFC pause growth of ``device`` up to ``when`` to its stored counters and record ``when`` in
    ``net.pfc_folded_at`` (counting restarts there). Done before the rules of the growth change (a
    ``switch-pfc-priority`` fault set or cleared, a PFC set under it), so the counters never go backwards."""
    net = data["npus"][device]["net"]
    grown = pfc_growth(data, device, when)
    stats = net.setdefault("stats", dict((key, 0) for key in ports_mod.STAT_KEYS))
    pfc_stat = net.setdefault("pfc_stat", {"tx_ms": [0.0] * 8, "rx_ms": [0.0] * 8, "warn_cnt": [0] * 8,
                                           "err_cnt": [0] * 8})
    for prio in range(8):
        for direction in ("tx", "rx"):
            frames = grown[direction + "_frames"][prio]
            key = "mac_%s_pfc_pri%d_pkt_num" % (direction, prio)
            stats[key] = int(stats.get(key, 0)) + frames
            total = "mac_%s_pfc_pkt_num" % direction
            stats[total] = int(stats.get(total, 0)) + frames
            pfc_stat[direction + "_ms"][prio] = round(float(pfc_stat[direction + "_ms"][prio]) + grown[direction + "_ms"][prio], 6)
        for key in ("warn_cnt", "err_cnt"):
            pfc_stat[key][prio] = int(pfc_stat[key][prio]) + grown[key][prio]
    net["pfc_folded_at"] = when


def link_up(st, device, when=None):
    """True when the port of ``device`` is UP at time ``when``."""
    when = node_mod.now(st) if when is None else when
    link = st["npus"][device]["net"]["link"]
    if link.get("stuck"):
        return False
    down_until = link.get("down_until")
    if down_until is not None and when < float(down_until):
        return False
    for fault in faults_mod.faults_for(st, "link-flap", device):
        period = float(fault.get("value") or 4.0)
        if period > 0 and (when % period) >= period / 2.0:
            return False
    return True


def _flap_events(st, device, when, limit=32):
    """Transitions of a ``link-flap`` fault since it was set: DOWN at k*P + P/2, UP at (k+1)*P."""
    events = []
    for fault in faults_mod.faults_for(st, "link-flap", device):
        period = float(fault.get("value") or 4.0)
        since = float(fault.get("since") or when)
        if period <= 0:
            continue
        cycle = int(when // period)
        while len(events) < limit:
            down, up = cycle * period + period / 2.0, cycle * period
            if down <= when and down > since:
                events.append([down, "DOWN"])
            if up <= since:
                break
            if up <= when:
                events.append([up, "UP"])
            cycle -= 1
    return events


def link_events(st, device, when=None):
    """Link change records up to ``when``, newest first (a flapping port's transitions included)."""
    when = node_mod.now(st) if when is None else when
    events = [ev for ev in st["npus"][device]["net"]["link"].get("events", []) if float(ev[0]) <= when]
    events += _flap_events(st, device, when)
    events += _slow_port_events(st, device, when)
    return sorted(events, key=lambda ev: float(ev[0]), reverse=True)[:64]


def _worse(a, b):
    return a if HEALTH_ORDER.index(a) >= HEALTH_ORDER.index(b) else b


def effective(st):
    """A copy of the state with the active faults applied (health, ECC, processes, versions, the counters
    that grow with time)."""
    eff = statefile.deep_copy(st)
    when = node_mod.now(st)
    for npu in eff["npus"]:
        dev = npu["id"]
        for fault in faults_mod.faults_for(st, "health", dev):
            level = fault.get("value") or "Alarm"
            if level not in HEALTH_CODES:
                level = "Alarm"
            npu["health"] = _worse(npu["health"], level)
            npu["error_codes"] = npu["error_codes"] + HEALTH_CODES[level]
        for fault in faults_mod.faults_for(st, "ecc-multibit", dev):
            count = int(fault.get("value") or 1)
            ecc = npu["ecc"]
            ecc["hbm_double"] += count
            ecc["hbm_double_agg"] += count
            ecc["hbm_double_iso"] += count
            npu["health"] = _worse(npu["health"], "Alarm")
            npu["error_codes"] = npu["error_codes"] + [ECC_MULTIBIT_CODE]
        for fault in faults_mod.faults_for(st, "ecc-singlebit", dev):
            grown = ecc_singlebit_errors(fault, when)
            npu["ecc"]["hbm_single"] += grown
            npu["ecc"]["hbm_single_agg"] += grown
        for fault in faults_mod.faults_for(st, "power-high", dev):
            npu["power_w"] = round(_number(fault.get("value"), POWER_HIGH_W), 1)
        for fault in faults_mod.faults_for(st, "pcie-err", dev):
            count = int(_number(fault.get("value"), PCIE_ERR_DEFAULT))
            npu["pcie_err"] = dict(npu["pcie_err"], rx=npu["pcie_err"]["rx"] + count, retry=npu["pcie_err"]["retry"] + count)
        for fault in faults_mod.faults_for(st, "pcie-err-growing", dev):
            grown = ecc_singlebit_errors(fault, when)
            npu["pcie_err"] = dict(npu["pcie_err"], rx=npu["pcie_err"]["rx"] + grown, retry=npu["pcie_err"]["retry"] + grown)
        for fault in faults_mod.faults_for(st, "throttle", dev):
            rated = npu.get("aicore_freq_mhz") or 0
            npu["aicore_cur_freq_mhz"] = int(_number(fault.get("value"), rated // 2))
            npu["temp_c"] = max(npu["temp_c"], THROTTLE_TEMP_C)
        for fault in faults_mod.faults_for(st, "process", dev):
            name, mem = "python", 30780
            value = fault.get("value")
            if value:
                parts = str(value).split(":")
                name = parts[0] or name
                if len(parts) > 1 and parts[1].isdigit():
                    mem = int(parts[1])
            npu["processes"] = npu["processes"] + [{"pid": 139000 + 11 * dev, "name": name, "memory_mb": mem}]
            # The injected process also occupies HBM and AI cores.
            npu["hbm_mb"] = [min(npu["hbm_mb"][0] + mem, npu["hbm_mb"][1]), npu["hbm_mb"][1]]
            npu["aicore_pct"] = max(npu["aicore_pct"], 35)
        if npu.get("net") is None:
            continue  # a chip without a RoCE port (Atlas 300I Duo) has no port counters
        # the switch port's advertised frame size (switch-frame)
        npu["net"]["lldp"]["max_frame"] = lldp_max_frame(st, dev)
        # PFC pauses and a slow port's errors grow with time (see net_counters)
        npu["net"]["stats"], npu["net"]["pfc_stat"] = net_counters(st, dev, when)
        npu["net"]["optical"] = optical_view(st, dev)  # optical-low
    for fault in faults_mod.faults_for(st, "version"):
        eff["versions"].update(parse_kv(fault.get("value") or ""))
    return eff


def busy_npus(st):
    """Ids of the NPUs that hold a process (``npus[].processes`` or a ``process`` fault): a device in use."""
    return [npu["id"] for npu in effective(st)["npus"] if npu["processes"]]


def parse_kv(text):
    result = {}
    for item in str(text).split(","):
        if "=" in item:
            key, val = item.split("=", 1)
            key = key.strip()
            if key:
                result[key] = val.strip()
    return result


def valid_ipv4(text):
    parts = str(text).split(".")
    if len(parts) != 4:
        return False
    for part in parts:
        if not part.isdigit() or len(part) > 3 or int(part) > 255:
            return False
    return True


def _ipv4_int(text):
    """The value of an IPv4 address in the canonical dotted-quad form (decimal octets 0-255 without leading
    zeros, which ipaddress.IPv4Address reads the same way), else None: any other text is left to ipaddress,
    whose import costs a call ~3 ms of CPU."""
    if not isinstance(text, str):
        return None
    parts = text.split(".")
    if len(parts) != 4:
        return None
    value = 0
    for part in parts:
        if not part or len(part) > 3 or not part.isascii() or not part.isdigit() or (part[0] == "0" and len(part) > 1):
            return None
        octet = int(part)
        if octet > 255:
            return None
        value = (value << 8) | octet
    return value


def _contiguous(bits):
    inverted = (~bits) & 0xFFFFFFFF
    return (inverted & (inverted + 1)) == 0


def valid_netmask(text):
    if not valid_ipv4(text):
        return False
    bits = _ipv4_int(text)
    if bits is None:
        import ipaddress
        bits = int(ipaddress.IPv4Address(text))
    return bits != 0 and _contiguous(bits)


def same_subnet(ip_a, mask_a, ip_b):
    if not (ip_a and mask_a and ip_b):
        return False
    addr_a, mask, addr_b = _ipv4_int(ip_a), _ipv4_int(mask_a), _ipv4_int(ip_b)
    if addr_a is not None and addr_b is not None and mask is not None and _contiguous(mask):
        # what ipaddress answers for a dotted netmask (a hostmask or a prefix length goes the long way)
        return addr_a & mask == addr_b & mask
    import ipaddress
    net = ipaddress.IPv4Network("%s/%s" % (ip_a, mask_a), strict=False)
    return ipaddress.IPv4Address(ip_b) in net
