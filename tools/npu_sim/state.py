"""Node state: one JSON file per simulated node, guarded by an fcntl lock file beside it.

Up to eight ``hccn_tool`` processes may set different devices of one node at the same time,
so every change is a read-modify-write under an exclusive lock (``transaction``); reads take
a shared lock. The file is replaced atomically (write to a temporary file, then rename).

A user other than root may read: a workload launched as a non-root user (the NUMA launcher of
stage 6 runs ``npu-sim train`` that way) reads the state without the lock when it may not open
the lock file for writing (the rename makes every read see a whole file), and its vendor-tool
calls are not recorded when it may not write the call log (``calls_path`` names ``/dev/null``).

Every simulated call reads this file, so reading it is kept cheap (docs/simulator-cost.md): the module imports
nothing heavier than ``fcntl``; JSON is read and written with the C scanner and string encoder of the json
package's accelerator ``_json`` (``loads``/``dumps``, byte-identical to ``json.loads``/``json.dumps``; anything
else falls back to the json package), and ``glob``/``copy`` are imported only by the calls that need them.
"""

import fcntl
import math
import os
import time

DEFAULT_STATE_PATH = "/var/lib/npu-sim/state.json"
SCHEMA = 1

# Atlas 800T A2 PCIe layout of the 8 NPUs as printed by real `npu-smi info` tables
# (vllm-ascend issues #198 and #5111, ms-swift docs: identical on three hosts).
BUS_IDS = ("0000:C1:00.0", "0000:C2:00.0", "0000:81:00.0", "0000:82:00.0",
           "0000:01:00.0", "0000:02:00.0", "0000:41:00.0", "0000:42:00.0")
# NUMA node of each NPU, from the CPU Affinity column of a real `npu-smi info -t topo`
# (ms-swift docs, 910B3): NPU0,1 -> 144-167, NPU2,3 -> 96-119, NPU4,5 -> 0-23, NPU6,7 -> 48-71.
NPU_NUMA_NODE = (6, 6, 4, 4, 0, 0, 2, 2)

# numactl -H of an Atlas 800T A2 (extra_numactl_-H_atlas800t_a2.txt).
NUMA_SIZES_MB = (193050, 193533, 193533, 193533, 193496, 193533, 193533, 188402)
NUMA_FREE_MB = (38779, 167153, 11972, 167984, 81199, 164867, 153147, 135442)
NUMA_DISTANCES = (
    (10, 11, 24, 25, 24, 25, 24, 25),
    (11, 10, 25, 32, 25, 32, 25, 32),
    (24, 25, 10, 11, 24, 25, 24, 25),
    (25, 32, 11, 10, 25, 32, 25, 32),
    (24, 25, 24, 25, 10, 11, 24, 25),
    (25, 32, 25, 32, 11, 10, 25, 32),
    (24, 25, 24, 25, 24, 25, 10, 11),
    (25, 32, 25, 32, 25, 32, 11, 10),
)

DEFAULT_VERSIONS = {
    "driver": "25.2.0",
    "firmware": "7.7.0.6.236",
    "cann": "8.3.RC2",
    "torch": "2.8.0",
    "torch_npu": "2.8.0",
}

# Host settings the health check reads (/proc/meminfo, vm.swappiness, transparent hugepages), as on a
# tuned training node: 15360 x 2 MB hugepages reserved, swappiness 10, THP off. See host.py for the files.
DEFAULT_HOST = {
    "hugepages_total": 15360,
    "hugepages_free": 15360,
    "hugepage_size_kb": 2048,
    "swappiness": 10,
    "transparent_hugepage": "never",
    "swap_total_kb": 4194300,
}
THP_MODES = ("always", "madvise", "never")

GOVERNORS = ("conservative", "ondemand", "userspace", "powersave", "performance", "schedutil")
DEFAULT_GOVERNOR = "ondemand"

# Parameter-plane address plan (see docs/simulator.md "IP plan"): NPU d of the node with
# index n gets 10.20.d.(10 + n)/24. Each NPU rank d is one rail with its own /24.
IP_PLAN_PREFIX = "10.20"
IP_PLAN_HOST_OFFSET = 10
IP_PLAN_NETMASK = "255.255.255.0"

STAT_KEYS = (
    "mac_tx_mac_pause_num", "mac_rx_mac_pause_num", "mac_tx_pfc_pkt_num",
    "mac_tx_pfc_pri0_pkt_num", "mac_tx_pfc_pri1_pkt_num", "mac_tx_pfc_pri2_pkt_num", "mac_tx_pfc_pri3_pkt_num",
    "mac_tx_pfc_pri4_pkt_num", "mac_tx_pfc_pri5_pkt_num", "mac_tx_pfc_pri6_pkt_num", "mac_tx_pfc_pri7_pkt_num",
    "mac_rx_pfc_pkt_num",
    "mac_rx_pfc_pri0_pkt_num", "mac_rx_pfc_pri1_pkt_num", "mac_rx_pfc_pri2_pkt_num", "mac_rx_pfc_pri3_pkt_num",
    "mac_rx_pfc_pri4_pkt_num", "mac_rx_pfc_pri5_pkt_num", "mac_rx_pfc_pri6_pkt_num", "mac_rx_pfc_pri7_pkt_num",
    "mac_tx_total_pkt_num", "mac_tx_total_oct_num", "mac_tx_bad_pkt_num", "mac_tx_bad_oct_num",
    "mac_rx_total_pkt_num", "mac_rx_total_oct_num", "mac_rx_bad_pkt_num", "mac_rx_bad_oct_num",
    "roce_rx_rc_pkt_num", "roce_rx_all_pkt_num", "roce_rx_err_pkt_num",
    "roce_tx_rc_pkt_num", "roce_tx_all_pkt_num", "roce_tx_err_pkt_num",
    "roce_cqe_num", "roce_rx_cnp_pkt_num", "roce_tx_cnp_pkt_num", "roce_unexpected_ack_num",
    "roce_out_of_order_num", "roce_verification_err_num", "roce_qp_status_err_num", "roce_new_pkt_rty_num",
    "nic_tx_all_pkg_num", "nic_tx_all_oct_num", "nic_rx_all_pkg_num", "nic_rx_all_oct_num",
)


class StateError(Exception):
    """The state file is missing or unreadable."""


def state_path(explicit=None):
    return explicit or os.environ.get("NPU_SIM_STATE") or DEFAULT_STATE_PATH


def calls_path(path, for_writing=True):
    """The call log beside the state; ``/dev/null`` for a process that may not append to it (a non-root user)."""
    log = os.path.join(os.path.dirname(os.path.abspath(path)), "calls.jsonl")
    if for_writing and not _may_write(log):
        return os.devnull
    return log


def _may_write(path):
    if os.path.exists(path):
        return os.access(path, os.W_OK)
    directory = os.path.dirname(path)
    return not os.path.isdir(directory) or os.access(directory, os.W_OK | os.X_OK)


def counters_path(path):
    """Use counts of counted faults (``busy --value K``), kept beside the state file so that a
    GET never rewrites ``state.json`` (check-mode runs rely on it staying byte-identical)."""
    return os.path.join(os.path.dirname(os.path.abspath(path)), "fault_counters.json")


# ----------------------------------------------------------------------------- JSON without the json package
# ``import json`` costs about as much CPU as the interpreter's own start (it imports re); every call reads the
# state, so the C scanner and string encoder of ``_json`` are driven here the way json.decoder and json.encoder
# drive them. Whatever this path does not handle (invalid JSON, a value of another type, a dict key that is not a
# str, no ``_json``) is handed to the json package itself, so results and errors are the json package's.

_WHITESPACE = " \t\n\r"  # json.decoder.WHITESPACE
_INFINITY = float("inf")


class _ScanContext:
    """The attributes of json.JSONDecoder() that ``_json.make_scanner`` reads (the defaults of json.loads)."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = {"-Infinity": -_INFINITY, "Infinity": _INFINITY, "NaN": float("nan")}.__getitem__


_ACCEL = {}


def _accelerator(name):
    """``_json.make_scanner`` (made into a scanner) or ``_json.encode_basestring_ascii``; None without _json."""
    if name not in _ACCEL:
        try:
            import _json
        except ImportError:
            _ACCEL["scan"] = _ACCEL["encode"] = None
        else:
            _ACCEL["scan"] = _json.make_scanner(_ScanContext())
            _ACCEL["encode"] = _json.encode_basestring_ascii
    return _ACCEL[name]


def loads(text):
    """``json.loads(text)`` of a str."""
    scan = _accelerator("scan")
    if scan is not None:
        start = len(text) - len(text.lstrip(_WHITESPACE))
        try:
            value, end = scan(text, start)
        except Exception:  # pylint: disable=broad-except
            pass  # invalid: json.loads below raises its own error
        else:
            if not text[end:].strip(_WHITESPACE):
                return value
    import json
    return json.loads(text)


class _Unsupported(Exception):
    pass


def _float_text(value):
    # json.encoder's floatstr (allow_nan)
    if math.isnan(value):
        return "NaN"
    if value == _INFINITY:
        return "Infinity"
    if value == -_INFINITY:
        return "-Infinity"
    return float.__repr__(value)


def _encode(value, out, encode, newline, step):
    """Append the JSON text of ``value`` to ``out`` as json.encoder does: ``newline`` is None for one line
    (separators ', ' and ': '), else a newline and the current indentation (separators ',' and ': ')."""
    if isinstance(value, str):
        out.append(encode(value))
    elif value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, int):
        out.append(int.__repr__(value))
    elif isinstance(value, float):
        out.append(_float_text(value))
    elif isinstance(value, (list, tuple)):
        if not value:
            out.append("[]")
            return
        inner = None if newline is None else newline + step
        out.append("[" if inner is None else "[" + inner)
        separator = ", " if inner is None else "," + inner
        first = True
        for item in value:
            if first:
                first = False
            else:
                out.append(separator)
            _encode(item, out, encode, inner, step)
        out.append("]" if newline is None else newline + "]")
    elif isinstance(value, dict):
        if not value:
            out.append("{}")
            return
        inner = None if newline is None else newline + step
        out.append("{" if inner is None else "{" + inner)
        separator = ", " if inner is None else "," + inner
        first = True
        for key, item in value.items():
            if not isinstance(key, str):
                raise _Unsupported(key)
            if first:
                first = False
            else:
                out.append(separator)
            out.append(encode(key))
            out.append(": ")
            _encode(item, out, encode, inner, step)
        out.append("}" if newline is None else newline + "}")
    else:
        raise _Unsupported(value)


def dumps(value, indent=None):
    """``json.dumps(value, indent=indent)`` (default separators, ASCII only, keys in their order)."""
    encode = _accelerator("encode")
    if encode is not None:
        out = []
        step = indent if isinstance(indent, str) else " " * (indent or 0)
        try:
            _encode(value, out, encode, None if indent is None else "\n", step)
        except (_Unsupported, RecursionError):
            pass  # the json package converts other keys, calls no default, reports a circular reference
        else:
            return "".join(out)
    import json
    return json.dumps(value, indent=indent)


# ----------------------------------------------------------------------------- locked reads and writes

class _locked:  # pylint: disable=invalid-name
    """``with _locked(path, exclusive):`` holds the flock of ``<state>.lock``, shared or exclusive (a class,
    not a contextlib generator: contextlib would cost every call a few milliseconds of imports)."""

    def __init__(self, path, exclusive):
        self.path = path
        self.exclusive = exclusive
        self.fd = None

    def __enter__(self):
        path = self.path
        directory = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(directory):
            raise StateError("no simulator state at %s (run: npu-sim init --state %s ...)" % (path, path))
        try:
            fd = os.open(os.path.abspath(path) + ".lock", os.O_RDWR | os.O_CREAT, 0o644)
        except PermissionError:
            if self.exclusive:
                raise
            # a non-root reader: the lock file is root's; an atomic rename never shows a partial file
            return self
        try:
            fcntl.flock(fd, fcntl.LOCK_EX if self.exclusive else fcntl.LOCK_SH)
        except BaseException:
            os.close(fd)
            raise
        self.fd = fd
        return self

    def __exit__(self, *exc_info):
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
        return False


def _read(path):
    try:
        with open(path, encoding="utf-8") as handle:
            return loads(handle.read())
    except FileNotFoundError:
        raise StateError("no simulator state at %s (run: npu-sim init --state %s ...)" % (path, path)) from None
    except ValueError as exc:
        raise StateError("simulator state %s is not valid JSON: %s" % (path, exc)) from None


def _write(path, data):
    text = dumps(data, indent=1) + "\n"
    tmp = "%s.tmp.%d" % (os.path.abspath(path), os.getpid())
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(tmp, path)


# load(path) hands out a state read moments before in this process once (see handover)
_HANDED_OVER = {}


def handover(path, data):
    """Give ``data``, the state just read from ``path`` with load(), to the next load(path) of this process, once;
    ``data`` None takes it back. The entry point reads the state for its latency setting; without latency the
    tool then gets that same state instead of reading and parsing the file a second time."""
    if data is None:
        _HANDED_OVER.pop(path, None)
    else:
        _HANDED_OVER[path] = data


def load(path):
    data = _HANDED_OVER.pop(path, None)
    if data is not None:
        return data
    with _locked(path, False):
        return _read(path)


def save(path, data):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with _locked(path, True):
        _write(path, data)


class transaction:  # pylint: disable=invalid-name
    """``with transaction(path) as data:`` exclusive read-modify-write of the state file: ``data`` is written
    back when the block ends without an exception."""

    def __init__(self, path):
        self.lock = _locked(path, True)
        self.path = path
        self.data = None

    def __enter__(self):
        self.lock.__enter__()
        try:
            self.data = _read(self.path)
        except BaseException:
            self.lock.__exit__(None, None, None)
            raise
        return self.data

    def __exit__(self, exc_type, exc, traceback):
        try:
            if exc_type is None:
                _write(self.path, self.data)
        finally:
            self.lock.__exit__(None, None, None)
        return False


def fault_key(fault):
    return "%s|%s|%s|%r" % (fault.get("kind"), fault.get("device"), fault.get("tool"), fault.get("since"))


def consume_fault(path, fault):
    """Use up one of the ``value`` calls of a counted fault. True while calls are left.

    Read-modify-write of the counters file under the exclusive state lock, so concurrent
    callers never answer more than ``value`` times; the state file itself is not written."""
    key = fault_key(fault)
    limit = int(fault.get("value") or 0)
    counters_file = counters_path(path)
    with _locked(path, True):
        live = set(fault_key(item) for item in _read(path).get("faults", []))
        if key not in live:
            return False
        try:
            with open(counters_file, encoding="utf-8") as handle:
                counters = loads(handle.read())
        except (OSError, ValueError):
            counters = {}
        counters = dict((name, int(used)) for name, used in counters.items() if name in live)
        used = counters.get(key, 0)
        if used >= limit:
            return False
        counters[key] = used + 1
        tmp = "%s.tmp.%d" % (counters_file, os.getpid())
        with open(tmp, "w", encoding="utf-8") as handle:
            handle.write(dumps(dict(sorted(counters.items()))))  # json.dump(counters, sort_keys=True)
            handle.write("\n")
        os.replace(tmp, counters_file)
        return True


def fault_fires(path, faults):
    """True when one of ``faults`` (busy-like) answers this call: one without a value always
    does; one with ``value`` K only for the next K calls (counted outside the state file)."""
    for fault in faults:
        if fault.get("value") in (None, ""):
            return True
    return any(consume_fault(path, fault) for fault in faults)


def now(st):
    """Simulated wall clock: ``settings.clock`` (epoch seconds) pins it, for tests; else real time."""
    pinned = st.get("settings", {}).get("clock")
    return float(pinned) if pinned is not None else time.time()


def _load_if_contains(path, needle):
    """The state at ``path``, or None when its text does not hold ``needle`` (not parsed: a ping or an address
    check looks for one address among every node of the PoD, and parsing each node's state costs the most)."""
    with _locked(path, False):
        try:
            with open(path, encoding="utf-8") as handle:
                text = handle.read()
        except FileNotFoundError:
            raise StateError("no simulator state at %s" % path) from None
        if needle not in text:
            return None
        try:
            return loads(text)
        except ValueError as exc:
            raise StateError("simulator state %s is not valid JSON: %s" % (path, exc)) from None


def pod_states(st, local_path, contains=None):
    """The PoD registry: every node state under ``<pod_dir>/*/state/state.json`` plus the local one.

    With ``contains`` (a JSON-encoded string such as ``'"10.20.0.11"'``) another node's state is only parsed,
    and returned, when its text holds it; the local state is always returned."""
    paths = []
    pod_dir = st.get("pod_dir")
    if pod_dir:
        import glob
        paths.extend(sorted(glob.glob(os.path.join(pod_dir, "*", "state", "state.json"))))
    paths.append(local_path)
    seen = set()
    result = []
    for path in paths:
        real = os.path.realpath(path)
        if real in seen:
            continue
        seen.add(real)
        if real == os.path.realpath(local_path):
            result.append((path, st))
            continue
        try:
            state = load(path) if contains is None else _load_if_contains(path, contains)
        except (StateError, OSError):
            continue
        if state is not None:
            result.append((path, state))
    return result


def cpu_range(node, cpus_per_node=24):
    first = node * cpus_per_node
    return "%d-%d" % (first, first + cpus_per_node - 1)


def default_dscp_map():
    """Untuned DSCP -> TC map of the simulator: TC = DSCP >> 4 (0-15 -> 0 ... 48-63 -> 3). An assumption."""
    return [dscp >> 4 for dscp in range(64)]


def plan_ip(index, device):
    return "%s.%d.%d" % (IP_PLAN_PREFIX, device, IP_PLAN_HOST_OFFSET + index)


def plan_gateway(device):
    """The gateway (and netdetect address) of rail ``device``, as a deployed node has them configured."""
    return "%s.%d.1" % (IP_PLAN_PREFIX, device)


def _default_certs(device):
    # Preconfigured device certificates; issuers/dates follow the CANN HCCL doc sample.
    return [
        {"type": "pub cert", "subject": "/C=CN/ST=GD/O=HUAWEI/OU=2012/CN=npu%d" % device,
         "issuer": "/C=CN/ST=GD/O=HUAWEI/OU=2012/CN=2_1thCA", "start": 1582082361, "end": 1897442361},
        {"type": "ca1 cert", "subject": "/C=CN/ST=GD/O=HUAWEI/OU=2012/CN=2_1thCA",
         "issuer": "/C=CN/ST=GD/L=SZ/O=HUAWEI/CN=1thCA", "start": 1582082347, "end": 1897442347},
        {"type": "ca2 cert", "subject": "/C=CN/ST=GD/L=SZ/O=HUAWEI/CN=1thCA",
         "issuer": "/C=CN/ST=GD/L=SZ/O=HUAWEI/CN=1thCA", "start": 1582082350, "end": 1897442350},
    ]


def _optical(index, device):
    seed = (index * 8 + device) % 17
    return {
        "present": "present",
        "temperature_c": 44 + seed % 6,
        "high_power_enable_reg": "enabled",
        "vendor_name": "Hisense",
        "vendor_part_number": "LTH7D02-PC+",
        "vendor_serial_number": "V8BD6H2%04d" % (index * 10 + device),
        "vendor_org_unique_id": "0xac 0x4a 0x0",
        "xsfp_identifier": "QSFP+ or later",
        "xsfp_wave_length_nm": 850,
        "manufact_date_code": "2024.3.18",
        "vcc_mv": 3262.9,
        "tx_power_mw": [1.4035 + 0.001 * seed, 1.3968, 1.4140, 1.4988],
        "rx_power_mw": [1.0189, 0.9954, 0.9907, 1.0213],
        "vcc_high_thres_mv": 3465.0,
        "vcc_low_thres_mv": 3135.0,
        "temp_high_thres_c": 70,
        "temp_low_thres_c": 0,
        "txpower_high_thres_mw": 3.5481,
        "txpower_low_thres_mw": 0.2818,
        "rxpower_high_thres_mw": 3.5481,
        "rxpower_low_thres_mw": 0.1445,
        "tx_bias_ma": [7.936, 7.928, 7.936, 7.924],
        "tx_los_flag": 0,
        "rx_los_flag": 0,
        "tx_lol_flag": 0,
        "rx_lol_flag": 0,
        "host_snr_db": [None, None, None, None],
        "media_snr_db": [23.1211, 22.6289, 22.1875, 23.2969],
    }


def _npu(index, device, created):
    seed = (index * 37 + device * 11) % 97
    return {
        "id": device,
        "card": device,
        "chip_id": 0,
        "phy_id": device,
        "name": "910B3",
        "bus_id": BUS_IDS[device % len(BUS_IDS)],
        "numa_node": NPU_NUMA_NODE[device % len(NPU_NUMA_NODE)],
        "health": "OK",
        "error_codes": [],
        "power_w": round(92.0 + seed % 17 + (seed % 10) / 10.0, 1),
        "temp_c": 38 + seed % 9,
        "hugepages": [0, 0],
        "aicore_pct": 0,
        "memory_mb": [0, 0],
        "hbm_mb": [3334 + seed % 5, 65536],
        "aicore_count": 20,
        "aicore_freq_mhz": 1800,
        "aicore_cur_freq_mhz": 1800,
        "usages": {"ddr_capacity_mb": 0, "ddr_usage_pct": 0, "ddr_hugepages_total": 0, "ddr_hugepages_usage_pct": 0,
                   "aicore_pct": 0, "aivector_pct": 0, "aicpu_pct": 0, "ctrlcpu_pct": 6, "ddr_bw_pct": 0,
                   "hbm_bw_pct": 0, "npu_util_pct": 0, "aicube_pct": 0, "memory_usage_pct": 0},
        "mcu_temps": [["LM75A_TE (C)", 36], ["LM75B_TE (C)", 36]],
        "hbm": {"clock_mhz": 1600, "temp_c": 40 + seed % 8, "manufacturer_id": 0x56},
        "ecc": {"hbm_single": 0, "hbm_double": 0, "hbm_single_agg": 0, "hbm_double_agg": 0,
                "hbm_single_iso": 0, "hbm_double_iso": 0, "hbm_single_next": 0, "hbm_double_next": 0},
        "pcie_err": {"tx": 0, "rx": 0, "lcrc": 0, "ecrc": 0, "retry": 0},
        "board": {
            "product_name": "IT21HMDA_B3", "model": "NA", "manufacturer": "Huawei",
            "serial_number": "1025C9%06d" % (index * 100 + device), "compatibility": "OK",
            "board_id": "0x60", "pcb_id": "A", "bom_id": "1", "slot_id": str(device), "class_id": "NA",
            "pci_vendor_id": "0x19E5", "pci_device_id": "0xD802",
            "subsystem_vendor_id": "0x19E5", "subsystem_device_id": "0x3003", "chip_count": 1,
        },
        # PCI function as lspci shows it: class 1200 (processing accelerator), revision 0x20.
        "pci": {"class": "1200", "revision": "20"},
        "chip": {"chip_type": "Ascend", "chip_version": "V1", "pcb_id": "NA", "position_id": str(device),
                 "vdie_id": "%08X 20B03704 4A10C8D4 14CC040A D2102003" % (0x42C711D4 + index * 8 + device),
                 "ndie_id": "%08X 20401010 4E10C8D4 14CC040A A4102003" % (0x27216594 + index * 8 + device)},
        "processes": [],
        "net": {
            "ip": plan_ip(index, device),
            "netmask": IP_PLAN_NETMASK,
            "gateway": plan_gateway(device),
            "netdetect": plan_gateway(device),
            "net_health": None,
            "tls": {"enable": 1, "preconfigured": 1, "alarm_days": 60, "certs": _default_certs(device)},
            "pfc": [0] * 8,
            # when PFC was enabled on each priority (epoch seconds; null while disabled): the PFC set writes
            # it, the pause counters of -pfc_stat -g and -stat -g grow from it
            "pfc_since": [None] * 8,
            "dscp_to_tc": default_dscp_map(),
            "mtu": 1500,
            "fec": "rs",
            "speed_mbps": 200000,
            "link": {"down_until": None, "stuck": False, "events": [[created, "UP"]]},
            "optical": _optical(index, device),
            "stats": dict((key, 0) for key in STAT_KEYS),
            "pfc_stat": {"tx_ms": [0.0] * 8, "rx_ms": [0.0] * 8, "warn_cnt": [0] * 8, "err_cnt": [0] * 8},
            "lldp": {
                "chassis_mac": "a4:be:2b:%02x:%02x:01" % (index % 256, device),
                "port_ifname": "400GE1/%d/%d:%d" % (device // 2 + 1, index % 48 + 1, device % 2 + 1),
                "system_name": "leaf-%02d" % (device // 2 + 1),
                "management_ip": "192.168.200.%d" % (device // 2 + 1),
                "max_frame": 9216,
            },
        },
    }


# ----------------------------------------------------------------------------- product profiles
# Every entry of ``npus`` is one chip (a die of an A3 NPU, a chip of a 300I Duo card): ``id`` is its device (logic)
# id, what ``hccn_tool -i``, ``npu-sim fault --device`` and the other modules address, and its index in the list;
# ``card`` is the NPU id npu-smi prints and takes with ``-i``, ``chip_id`` the chip's index on the card (``-c``),
# ``phy_id`` its physical id. On an Atlas 800T A2 all three ids are equal. ``net`` is None for a chip without a
# RoCE port; ``power_w`` None where npu-smi prints ``-`` or ``NA``. States written before the profiles existed
# have no ``profile``, ``card``, ``chip_id`` or ``phy_id``: they are A2 states and the readers use the defaults.

DEFAULT_PRODUCT = "atlas-800t-a2"

# Atlas 800T A3 (Ascend 910C): 8 NPUs x 2 dies; the bus ids of the 16 dies in npu-smi order, the same in the full
# A3 tables of vllm-ascend issues #2666, #2667 (24.1.rc3.7) and #3002 (25.2.0), and in the first rows of #2534,
# #2035 and #7225.
A3_BUS_IDS = ("0000:9D:00.0", "0000:9F:00.0", "0000:99:00.0", "0000:9B:00.0", "0000:95:00.0", "0000:97:00.0",
              "0000:91:00.0", "0000:93:00.0", "0000:8D:00.0", "0000:8F:00.0", "0000:89:00.0", "0000:8B:00.0",
              "0000:85:00.0", "0000:87:00.0", "0000:81:00.0", "0000:83:00.0")
# The address plan of the dies' vnic (the simulator's own: no public sample of an A3 vnic address was found):
# die d of the node with index n gets 10.30.d.(10 + n)/24.
VNIC_PREFIX = "10.30"

# Atlas 300I Duo (Ascend 310P3, two chips per card): card ids, bus ids (both chips of a card show the card's bus
# id) and the DDR size of chip 0 and chip 1, from a real 4-card host (vllm-ascend issue #6842, driver 25.3.rc1;
# 25.2.0 prints 44280/43693: Syllo/nvtop issue #421, vllm-ascend issue #4148). The card ids need not start at 0.
DUO_CARDS = ((0, "0000:01:00.0"), (32, "0000:02:00.0"), (32768, "0000:81:00.0"), (32800, "0000:82:00.0"))
DUO_DDR_MB = (44278, 43693)


def _a3_die(index, device, created):
    card, chip = device // 2, device % 2
    die = _npu(index, device, created)
    seed = (index * 37 + device * 11) % 97
    die.update({
        "card": card,
        "chip_id": chip,
        "phy_id": device,
        "name": "Ascend910",
        "bus_id": A3_BUS_IDS[device % len(A3_BUS_IDS)],
        # the A3 topology prints no CPU affinity: on an Arm host the NPUs reach the CPUs through the L1 switch
        # board, no NUMA node is theirs (driver source, print_npu_topo_info)
        "numa_node": None,
        # npu-smi reports the power of an A3 NPU on die 0 and prints '-' for die 1 (the real tables above)
        "power_w": round(176.0 + seed % 13 + (seed % 10) / 10.0, 1) if chip == 0 else None,
        "temp_c": 35 + seed % 3,
        "hbm_mb": [(3397 if chip == 0 else 3186) + seed % 20, 65536],
        # aicore count, frequencies, HBM clock and the other -t values stay the A2 ones: no A3 sample of them
    })
    # No real A3 `-t board` was found: the board is the A2 one with the A3's PCI device id (lspci shows 19e5:d803
    # for a 910C) and the card's two chips; product name and main board id are the simulator's.
    die["board"].update({"product_name": "Atlas 800T A3", "serial_number": "1025C9%06d" % (index * 100 + card),
                         "slot_id": str(card), "pci_device_id": "0xD803", "chip_count": 2, "main_board_id": "0x01"})
    die["chip"]["position_id"] = str(chip)
    die["net"]["vnic"] = {"address": "%s.%d.%d" % (VNIC_PREFIX, device, IP_PLAN_HOST_OFFSET + index),
                          "netmask": IP_PLAN_NETMASK, "link": "UP"}
    return die


def _a3_dies(index, cards, created):
    return [_a3_die(index, device, created) for device in range(2 * cards)]


def _duo_chip(index, card_index, chip, created):
    card, bus_id = DUO_CARDS[card_index]
    device = 2 * card_index + chip
    seed = (index * 37 + device * 11) % 97
    return {
        "id": device,
        "card": card,
        "chip_id": chip,
        "phy_id": device,
        "name": "310P3",
        "bus_id": bus_id,
        # the A2 host's NUMA layout: the bus of the slot decides the node (BUS_IDS / NPU_NUMA_NODE above)
        "numa_node": NPU_NUMA_NODE[BUS_IDS.index(bus_id)] if bus_id in BUS_IDS else 0,
        "health": "OK",
        "error_codes": [],
        "power_w": None,  # the 310P table prints NA (the real tables above)
        "temp_c": 45 + seed % 8,
        "hugepages": [0, 0],
        "aicore_pct": 0,
        # DDR, no HBM: Memory-Usage(MB) is the only memory pair of the 310P table
        "memory_mb": [1300 + seed % 400, DUO_DDR_MB[chip]],
        "hbm_mb": [0, 0],
        # AI cores, frequencies, DDR clock, the MCU's temperature and power: the simulator's values (not sampled)
        "aicore_count": 8,
        "aicore_freq_mhz": 1080,
        "aicore_cur_freq_mhz": 1080,
        "usages": {"ddr_capacity_mb": DUO_DDR_MB[chip], "ddr_usage_pct": 3, "ddr_hugepages_total": 0,
                   "ddr_hugepages_usage_pct": 0, "aicore_pct": 0, "aivector_pct": 0, "aicpu_pct": 0, "ctrlcpu_pct": 4,
                   "ddr_bw_pct": 0, "hbm_bw_pct": 0, "npu_util_pct": 0, "aicube_pct": 0, "memory_usage_pct": 3,
                   "vectorcore_pct": 0},
        "mcu_temps": [],
        # the card's MCU: npu-smi's -t common prints the 310P card's power there (the chips' power is NA)
        "mcu": {"temp_c": 40 + (index * 37 + card_index * 11) % 5,
                "power_w": round(36.0 + (index * 37 + card_index * 11) % 9 + card_index / 10.0, 1)},
        "ddr": {"clock_mhz": 3200, "total_mb": DUO_DDR_MB[0] + DUO_DDR_MB[1]},
        "ecc": {"hbm_single": 0, "hbm_double": 0, "hbm_single_agg": 0, "hbm_double_agg": 0,
                "hbm_single_iso": 0, "hbm_double_iso": 0, "hbm_single_next": 0, "hbm_double_next": 0},
        "pcie_err": {"tx": 0, "rx": 0, "lcrc": 0, "ecrc": 0, "retry": 0},
        # No real 300I Duo `-t board` was found: the shape is the driver source's card board; the values here
        # (besides the chip, the product name and lspci's 19e5:d500 of a 310P) are the simulator's.
        "board": {
            "product_name": "Atlas 300I Duo", "model": "NA", "manufacturer": "Huawei",
            "serial_number": "1025D3%06d" % (index * 100 + card_index), "compatibility": "OK",
            "board_id": "0x64", "pcb_id": "A", "bom_id": "1", "slot_id": str(card_index), "class_id": "NA",
            "pci_vendor_id": "0x19E5", "pci_device_id": "0xD500",
            "subsystem_vendor_id": "0x19E5", "subsystem_device_id": "0x0100", "chip_count": 2, "chip_fault": 0,
        },
        "pci": {"class": "1200", "revision": "20"},
        "chip": {"chip_type": "Ascend", "chip_version": "V1", "pcb_id": "NA", "position_id": str(chip),
                 "die_id": "%08X 20B03704 4A10C8D4 14CC040A D2102003" % (0x5A3C11D4 + index * 8 + device)},
        "processes": [],
        "net": None,  # no RoCE parameter plane on an inference card
    }


def _duo_chips(index, cards, created):
    return [_duo_chip(index, card_index, chip, created) for card_index in range(cards) for chip in (0, 1)]


# The host of an A3 node where it differs from the A2 one: 4 x Kunpeng 920 7285Z, 80 cores each, 8 NUMA nodes of
# 40 CPUs, 400-3000 MHz (lscpu of a real A3 host, vllm-ascend issue #2667). Its numactl -H was not published: the
# node sizes and distances stay the A2 ones.
A3_HOST = {"numa": {"sockets": 4, "cores_per_socket": 80, "cpus_per_node": 40},
           "cpu": {"max_mhz": 3000, "min_mhz": 400, "bios_model": "Kunpeng 920 7285Z"}}

# key -> what npu-sim init and podctl up --product take: readable name, NPUs (cards) of a full node, the most
# NPUs a node of the product can have here, the builder of the ``npus`` list, the host's differences from the A2
# host. A 300I Duo host keeps the A2 host: the one real 300I Duo host found
# (vllm-ascend issue #6842, 2 x Kunpeng 920 3210) shows its lscpu but not its numactl -H.
PRODUCTS = {
    "atlas-800t-a2": {"name": "Atlas 800T A2", "npus": 8, "max_npus": 8, "build": None, "host": None},
    "atlas-a3": {"name": "Atlas 800T A3", "npus": 8, "max_npus": 8, "build": _a3_dies, "host": A3_HOST},
    "atlas-300i-duo": {"name": "Atlas 300I Duo", "npus": 4, "max_npus": len(DUO_CARDS), "build": _duo_chips, "host": None},
}


def card_chips(st, card):
    """The chips (``npus`` entries) of NPU ``card`` as npu-smi numbers it, in chip order."""
    return [npu for npu in st["npus"] if npu.get("card", npu["id"]) == card]


def card_ids(st):
    """The NPU ids npu-smi lists, in order."""
    ids = []
    for npu in st["npus"]:
        card = npu.get("card", npu["id"])
        if card not in ids:
            ids.append(card)
    return ids


def new_state(hostname, index, npus=None, pod_dir=None, created=None, product=DEFAULT_PRODUCT):
    """A fresh, UNTUNED node: MTU 1500, no PFC priority, default DSCP map, governor ondemand, TLS on.

    ``product`` is a key of PRODUCTS; ``npus`` the number of NPUs (cards), the product's full set when None."""
    spec = PRODUCTS.get(product)
    if spec is None:
        raise ValueError("unknown product %r (known: %s)" % (product, ", ".join(PRODUCTS)))
    created = float(created if created is not None else time.time())
    count = spec["npus"] if npus is None else int(npus)
    if product == DEFAULT_PRODUCT:
        devices = [_npu(int(index), device, created) for device in range(count)]
    else:
        devices = spec["build"](int(index), count, created)
    data = {
        "schema": SCHEMA,
        "hostname": hostname,
        "index": int(index),
        "product": spec["name"],
        "profile": product,
        "arch": "aarch64",
        "created": created,
        "pod_dir": os.path.abspath(pod_dir) if pod_dir else None,
        "install_prefix": None,
        "python": None,
        "versions": dict(DEFAULT_VERSIONS),
        "npus": devices,
        "numa": {
            "sockets": 4,
            "cores_per_socket": 48,
            "cpus_per_node": 24,
            "nodes": [{"id": node, "size_mb": NUMA_SIZES_MB[node], "free_mb": NUMA_FREE_MB[node]} for node in range(8)],
            "distances": [list(row) for row in NUMA_DISTANCES],
        },
        "cpu": {"max_mhz": 2600, "min_mhz": 200, "model": "Kunpeng-920", "bios_model": "HUAWEI Kunpeng 920 5250"},
        "governor": DEFAULT_GOVERNOR,
        "faults": [],
        "host": dict(DEFAULT_HOST),
        "settings": {"flap_seconds": 5.0, "latency_ms": 0, "clock": None, "lossless_tc": 3, "jumbo_mtu": 8000},
    }
    for section, values in (spec["host"] or {}).items():
        data[section].update(values)
    return data


def get_path(data, key):
    node = data
    for part in key.split("."):
        if isinstance(node, list):
            node = node[int(part)]
        else:
            node = node[part]
    return node


def set_path(data, key, value):
    parts = key.split(".")
    node = data
    for part in parts[:-1]:
        node = node[int(part)] if isinstance(node, list) else node.setdefault(part, {})
    last = parts[-1]
    if isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value


def faults_for(st, kind, device=None):
    """Active faults of one kind that apply to ``device`` (a fault without a device applies to all)."""
    found = []
    for fault in st.get("faults", []):
        if fault.get("kind") != kind:
            continue
        if device is not None and fault.get("device") is not None and int(fault["device"]) != int(device):
            continue
        found.append(fault)
    return found


def host_settings(st):
    """The ``host`` section with defaults filled in (states written before it existed have none)."""
    merged = dict(DEFAULT_HOST)
    merged.update(st.get("host") or {})
    return merged


def deep_copy(data):
    """copy.deepcopy of state data: dicts, lists and scalars are copied here (several times faster than
    copy.deepcopy, and without importing it), anything else by copy.deepcopy. Unlike copy.deepcopy, an object
    that appears twice is copied twice; JSON read from a file never has such sharing."""
    kind = type(data)
    if kind is dict:
        return {key: deep_copy(value) for key, value in data.items()}
    if kind is list:
        return [deep_copy(value) for value in data]
    if kind is str or kind is int or kind is float or kind is bool or data is None:
        return data
    import copy
    return copy.deepcopy(data)
