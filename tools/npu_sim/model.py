"""Derived views of a node state: faults applied, link status computed from time (no daemon)."""

import ipaddress

from . import state as st_mod

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


def ecc_singlebit_errors(fault, when):
    """Single-bit errors an ``ecc-singlebit`` fault has produced by ``when``: value per minute since it was set.

    Computed from the clock on every read (like the link flap), so no read writes the state."""
    try:
        rate = float(fault.get("value") or ECC_SINGLEBIT_PER_MIN)
    except (TypeError, ValueError):
        rate = ECC_SINGLEBIT_PER_MIN
    since = float(fault.get("since") or when)
    return max(0, int(rate * max(0.0, when - since) / 60.0))


def link_up(st, device, when=None):
    """True when the port of ``device`` is UP at time ``when``."""
    when = st_mod.now(st) if when is None else when
    link = st["npus"][device]["net"]["link"]
    if link.get("stuck"):
        return False
    down_until = link.get("down_until")
    if down_until is not None and when < float(down_until):
        return False
    for fault in st_mod.faults_for(st, "link-flap", device):
        period = float(fault.get("value") or 4.0)
        if period > 0 and (when % period) >= period / 2.0:
            return False
    return True


def _flap_events(st, device, when, limit=32):
    """Transitions of a ``link-flap`` fault since it was set: DOWN at k*P + P/2, UP at (k+1)*P."""
    events = []
    for fault in st_mod.faults_for(st, "link-flap", device):
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
    when = st_mod.now(st) if when is None else when
    events = [ev for ev in st["npus"][device]["net"]["link"].get("events", []) if float(ev[0]) <= when]
    events += _flap_events(st, device, when)
    return sorted(events, key=lambda ev: float(ev[0]), reverse=True)[:64]


def _worse(a, b):
    return a if HEALTH_ORDER.index(a) >= HEALTH_ORDER.index(b) else b


def effective(st):
    """A copy of the state with the active faults applied (health, ECC, processes, versions)."""
    eff = st_mod.deep_copy(st)
    when = st_mod.now(st)
    for npu in eff["npus"]:
        dev = npu["id"]
        for fault in st_mod.faults_for(st, "health", dev):
            level = fault.get("value") or "Alarm"
            if level not in HEALTH_CODES:
                level = "Alarm"
            npu["health"] = _worse(npu["health"], level)
            npu["error_codes"] = npu["error_codes"] + HEALTH_CODES[level]
        for fault in st_mod.faults_for(st, "ecc-multibit", dev):
            count = int(fault.get("value") or 1)
            ecc = npu["ecc"]
            ecc["hbm_double"] += count
            ecc["hbm_double_agg"] += count
            ecc["hbm_double_iso"] += count
            npu["health"] = _worse(npu["health"], "Alarm")
            npu["error_codes"] = npu["error_codes"] + [ECC_MULTIBIT_CODE]
        for fault in st_mod.faults_for(st, "ecc-singlebit", dev):
            grown = ecc_singlebit_errors(fault, when)
            npu["ecc"]["hbm_single"] += grown
            npu["ecc"]["hbm_single_agg"] += grown
        for fault in st_mod.faults_for(st, "process", dev):
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
    for fault in st_mod.faults_for(st, "version"):
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


def valid_netmask(text):
    if not valid_ipv4(text):
        return False
    bits = int(ipaddress.IPv4Address(text))
    inverted = (~bits) & 0xFFFFFFFF
    return bits != 0 and (inverted & (inverted + 1)) == 0


def same_subnet(ip_a, mask_a, ip_b):
    if not (ip_a and mask_a and ip_b):
        return False
    net = ipaddress.IPv4Network("%s/%s" % (ip_a, mask_a), strict=False)
    return ipaddress.IPv4Address(ip_b) in net
