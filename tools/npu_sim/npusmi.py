"""``npu-smi`` of an Atlas 800T A2 (8 x 910B3) as the simulator renders it.

The ``info`` table is the 98-column layout of drivers 23.0.x-25.2.x (tests/fixtures/captures/
npu-smi_info.txt); ``-t``/``-l``/``-m`` views print TAB-led ``key : value`` lines, key padded to
30 (40 for ``-t ecc``). npu-smi prints its errors on STDOUT; exit status = negative code & 0xFF.
"""

import time

from . import model
from . import state as st_mod
from .output import Result

USAGE = "Usage: npu-smi info <watch|proc|-h|-m|-l|-t type> [Options...]"
ERR_INVALID = -9001
ERR_NOT_FOUND = -9005
ERR_DEVICE_USED = -8020

LINE_TOP = "+" + "-" * 96 + "+"
LINE_DASH = "+" + "-" * 27 + "+" + "-" * 15 + "+" + "-" * 52 + "+"
LINE_EQ = "+" + "=" * 27 + "+" + "=" * 15 + "+" + "=" * 52 + "+"
HEAD_1 = "| NPU   Name                | Health        | Power(W)    Temp(C)           Hugepages-Usage(page)|"
HEAD_2 = "| Chip                      | Bus-Id        | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)        |"
PROC_HEAD = "| NPU     Chip              | Process id    | Process name             | Process memory(MB)      |"

TOPO_LEGEND = (
    "Legend:",
    "",
    "  X    = Self",
    "  SYS  = Path traversing PCIe and NUMA nodes. Nodes are connected through SMP, such as QPI, UPI.",
    "  PHB  = Path traversing PCIe and the PCIe host bridge of a CPU.",
    "  PIX  = Path traversing a single PCIe switch",
    "  PXB  = Path traversing multiple PCIe switches",
    "  HCCS = Connection traversing HCCS.",
    "  NA   = Unknown relationship.",
)

VIEWS = ("board", "health", "ecc", "temp", "power", "usages", "common", "topo", "proc-mem", "pcie-err", "memory")


class SmiError(Exception):
    def __init__(self, code, lines):
        Exception.__init__(self, lines[0] if lines else "")
        self.code = code
        self.lines = lines


def kv(key, value, width=30):
    return "\t%-*s : %s" % (width, key, value)


def render_table(st):
    """The `npu-smi info` summary table."""
    ver = st["versions"]["driver"]
    lines = [LINE_TOP, "| npu-smi %-24s Version: %-53s|" % (ver, ver), LINE_DASH, HEAD_1, HEAD_2, LINE_EQ]
    for npu in st["npus"]:
        lines.append("| %-5d %-20s| %-13s | %-11.1f %-17d %-5d/ %-14d|" % (
            npu["id"], npu["name"], npu["health"], npu["power_w"], npu["temp_c"], npu["hugepages"][0], npu["hugepages"][1]))
        lines.append("| %-26d| %-13s | %-11d %-5d/ %-10d %-5d/ %-14d|" % (
            0, npu["bus_id"], npu["aicore_pct"], npu["memory_mb"][0], npu["memory_mb"][1], npu["hbm_mb"][0], npu["hbm_mb"][1]))
        lines.append(LINE_EQ)
    lines += [LINE_DASH, PROC_HEAD, LINE_EQ]
    for npu in st["npus"]:
        if npu["processes"]:
            for proc in npu["processes"]:
                lines.append("| %-7d %-18d| %-13d | %-24s | %-24d|" % (npu["id"], 0, proc["pid"], proc["name"], proc["memory_mb"]))
        else:
            lines.append("| No running processes found in NPU %-61d|" % npu["id"])
        lines.append(LINE_EQ)
    return lines


def render_list(st):
    lines = [kv("Total Count", len(st["npus"])), ""]
    for npu in st["npus"]:
        lines += [kv("NPU ID", npu["id"]), kv("Chip Count", 1), ""]
    return lines


def render_mapping(st):
    lines = ["\t%-30s %-30s %-30s %-30s" % ("NPU ID", "Chip ID", "Chip Logic ID", "Chip Name")]
    for npu in st["npus"]:
        lines.append("\t%-30s %-30s %-30s %s" % (npu["id"], 0, npu["id"], "Ascend " + npu["name"]))
        lines.append("\t%-30s %-30s %-30s %-30s" % (npu["id"], 1, "-", "Mcu"))
    return lines


def _board(st, npu, chip):
    board = npu["board"]
    if chip is not None:
        info = npu["chip"]
        return [kv("NPU ID", npu["id"]), kv("Chip ID", chip), kv("Chip Type", info["chip_type"]),
                kv("Chip Name", npu["name"]), kv("Chip Version", info["chip_version"]),
                kv("Board ID", board["board_id"]), kv("PCB ID", info["pcb_id"]), kv("BOM ID", board["bom_id"]),
                kv("VDie ID", info["vdie_id"]), kv("NDie ID", info["ndie_id"]),
                kv("Chip Position ID", info["position_id"]), kv("PCIe Bus Info", npu["bus_id"]),
                kv("Firmware Version", st["versions"]["firmware"])]
    return [kv("NPU ID", npu["id"]), kv("Product Name", board["product_name"]), kv("Model", board["model"]),
            kv("Manufacturer", board["manufacturer"]), kv("Serial Number", board["serial_number"]),
            kv("Software Version", st["versions"]["driver"]), kv("Firmware Version", st["versions"]["firmware"]),
            kv("Compatibility", board["compatibility"]), kv("Board ID", board["board_id"]),
            kv("PCB ID", board["pcb_id"]), kv("BOM ID", board["bom_id"]), kv("PCIe Bus Info", npu["bus_id"]),
            kv("Slot ID", board["slot_id"]), kv("Class ID", board["class_id"]),
            kv("PCI Vendor ID", board["pci_vendor_id"]), kv("PCI Device ID", board["pci_device_id"]),
            kv("Subsystem Vendor ID", board["subsystem_vendor_id"]),
            kv("Subsystem Device ID", board["subsystem_device_id"]), kv("Chip Count", board["chip_count"])]


def _health(st, npu, chip):
    # Shape of the real -c 0 capture (no NPU ID preamble); 910B wrapper lines are not captured.
    lines = [kv("Health Status", npu["health"])]
    codes = npu.get("error_codes") or []
    if not codes:
        return lines + [kv("Error Code", "NA"), kv("Error Information", "NA")]
    lines.append("\t%-30s :%s" % ("Error Code", "".join(" %04X" % int(code) for code, _text in codes)))
    info = "\t%-30s : %s" % ("Error Information", codes[0][1])
    for _code, text in codes[1:]:
        info += "\n\n" + kv("", text)
    lines.append(info)
    return lines


def _ecc(st, npu, chip):
    # 910B: HBM-only body + Next-Isolated lines (driver source; layout of the Atlas 350 doc sample).
    ecc = npu["ecc"]
    return [kv("NPU ID", npu["id"], 40),
            kv("HBM Single Bit Error Count", ecc["hbm_single"], 40),
            kv("HBM Double Bit Error Count", ecc["hbm_double"], 40),
            kv("HBM Single Bit Aggregate Total Err Cnt", ecc["hbm_single_agg"], 40),
            kv("HBM Double Bit Aggregate Total Err Cnt", ecc["hbm_double_agg"], 40),
            kv("HBM Single Bit Isolated Pages Count", ecc["hbm_single_iso"], 40),
            kv("HBM Double Bit Isolated Pages Count", ecc["hbm_double_iso"], 40),
            kv("HBM Single Bit Next-Isolated Pages Count", ecc["hbm_single_next"], 40),
            kv("HBM Double Bit Next-Isolated Pages Count", ecc["hbm_double_next"], 40)]


def _chip_block(npu, chip, body):
    lines = [kv("NPU ID", npu["id"])]
    if chip is None:
        lines += [kv("Chip Count", 1), ""]
    return lines + body + [kv("Chip ID", 0), ""]


def _temp(st, npu, chip):
    lines = _chip_block(npu, chip, [kv("NPU Temperature (C)", npu["temp_c"])])
    if chip is None:
        lines += [kv(name, value) for name, value in npu["mcu_temps"]] + [kv("Chip Name", "MCU"), ""]
    return lines


def _power(st, npu, chip):
    return _chip_block(npu, chip, [kv("NPU Real-time Power(W)", "%.1f" % npu["power_w"])])


def _hbm_pct(npu):
    used, total = npu["hbm_mb"]
    return int(round(100.0 * used / total)) if total else 0


def _usages(st, npu, chip):
    use = npu["usages"]
    body = [kv("DDR Capacity(MB)", use["ddr_capacity_mb"]), kv("DDR Usage Rate(%)", use["ddr_usage_pct"]),
            kv("DDR Hugepages Total(page)", use["ddr_hugepages_total"]),
            kv("DDR Hugepages Usage Rate(%)", use["ddr_hugepages_usage_pct"]),
            kv("HBM Capacity(MB)", npu["hbm_mb"][1]), kv("HBM Usage Rate(%)", _hbm_pct(npu)),
            kv("Aicore Usage Rate(%)", max(use["aicore_pct"], npu["aicore_pct"])),
            kv("Aivector Usage Rate(%)", use["aivector_pct"]), kv("Aicpu Usage Rate(%)", use["aicpu_pct"]),
            kv("Ctrlcpu Usage Rate(%)", use["ctrlcpu_pct"]), kv("DDR Bandwidth Usage Rate(%)", use["ddr_bw_pct"]),
            kv("HBM Bandwidth Usage Rate(%)", use["hbm_bw_pct"]), kv("NPU Utilization(%)", use["npu_util_pct"]),
            kv("Aicube Usage Rate(%)", use["aicube_pct"])]
    return _chip_block(npu, chip, body)


def _common(st, npu, chip):
    lines = [kv("NPU ID", npu["id"])]
    if chip is None:
        lines += [kv("Chip Count", 1), ""]
    return lines + [kv("Chip ID", 0), kv("Memory Usage Rate(%)", npu["usages"]["memory_usage_pct"]),
                    kv("HBM Usage Rate(%)", _hbm_pct(npu)), kv("Aicore Usage Rate(%)", npu["aicore_pct"]),
                    kv("Aicore Freq(MHZ)", npu["aicore_freq_mhz"]), kv("Aicore curFreq(MHZ)", npu["aicore_cur_freq_mhz"]),
                    kv("Aicore Count", npu["aicore_count"]), kv("Temperature(C)", npu["temp_c"]),
                    kv("NPU Real-time Power(W)", "%.1f" % npu["power_w"])]


def _proc_mem(st, npu, chip):
    lines = [kv("NPU ID", npu["id"])]
    if not npu["processes"]:
        lines.append("\tNo process in device.")
    for proc in npu["processes"]:
        lines.append("\tProcess id:%-7d Process name:%-17s Process memory(MB):%d" % (proc["pid"], proc["name"], proc["memory_mb"]))
    return lines + [kv("Chip ID", 0)]


def _pcie_err(st, npu, chip):
    # Source-derived (print_pcie_err_count) with the NPU ID preamble of the Atlas 350 doc sample.
    err = npu["pcie_err"]
    return [kv("NPU ID", npu["id"]), kv("TX Error Count", err["tx"]), kv("RX Error Count", err["rx"]),
            kv("Lcrc Error Count", err["lcrc"]), kv("Ecrc Error Count", err["ecrc"]), kv("Retry Count", err["retry"])]


def _memory(st, npu, chip):
    # Source-derived (print_ddr_info/print_hbm_info) in the NPU ID ... Chip ID wrapper of the 910A note.
    hbm = npu["hbm"]
    return [kv("NPU ID", npu["id"]), kv("DDR Capacity(MB)", 0), kv("DDR Clock Speed(MHz)", 0),
            kv("HBM Capacity(MB)", npu["hbm_mb"][1]), kv("HBM Clock Speed(MHz)", hbm["clock_mhz"]),
            kv("HBM Temperature(C)", hbm["temp_c"]), kv("HBM Manufacturer ID", "0x%X" % hbm["manufacturer_id"]),
            kv("Chip ID", 0)]


def render_topo(st):
    count = len(st["npus"])
    names = ["NPU%d" % npu["id"] for npu in st["npus"]]
    lines = ["\t   " + "".join("%-11s" % name for name in names) + "CPU Affinity"]
    per_node = st["numa"]["cpus_per_node"]
    for row in st["npus"]:
        cells = "".join("%-11s" % ("X" if col == row["id"] else "HCCS") for col in range(count))
        lines.append("%-11s%s%s" % (names[row["id"]], cells, st_mod.cpu_range(row["numa_node"], per_node)))
    return lines + [""] + list(TOPO_LEGEND)


PER_DEVICE = {"board": _board, "health": _health, "ecc": _ecc, "temp": _temp, "power": _power, "usages": _usages,
              "common": _common, "proc-mem": _proc_mem, "pcie-err": _pcie_err, "memory": _memory}


def _parse(argv):
    opts = {"i": None, "c": None, "t": None, "flags": []}
    words = list(argv)
    pos = 0
    while pos < len(words):
        word = words[pos]
        if word in ("-i", "-c", "-t"):
            if pos + 1 >= len(words):
                raise SmiError(ERR_INVALID, ["Error parameter of %s" % word, USAGE])
            opts[word[1]] = words[pos + 1]
            pos += 2
            continue
        if word in ("-l", "-m"):
            opts["flags"].append(word)
        else:
            raise SmiError(ERR_NOT_FOUND, ["Command or option is not found.", USAGE])
        pos += 1
    return opts


def _maybe_hang(st, dev=None):
    """A hang fault of one device stalls the views of that card (``-i N``) and every whole-node view."""
    for fault in st_mod.faults_for(st, "hang", dev):
        if fault.get("tool") in (None, "", "npu-smi"):
            time.sleep(float(fault.get("value") or 3600))
            return


def run(argv, path):
    res = Result()
    try:
        if not argv or argv[0] != "info":
            raise SmiError(ERR_NOT_FOUND, ["Command or option is not found.", USAGE])
        opts = _parse(argv[1:])
        st = model.effective(st_mod.load(path))
        card = opts["i"]
        _maybe_hang(st, int(card) if card is not None and card.isdigit() else None)
        if st_mod.fault_fires(path, [f for f in st_mod.faults_for(st, "busy") if f.get("tool") == "npu-smi"]):
            # Real text when another container holds the devices (npu-smi_errors.txt).
            raise SmiError(ERR_DEVICE_USED, ["dcmi model initialized failed, because the device is used. ret is %d" % ERR_DEVICE_USED])
        if opts["t"] is None and not opts["flags"]:
            if opts["i"] is not None:
                raise SmiError(ERR_INVALID, ["Error parameter of -t", USAGE])
            lines = render_table(st)
        elif "-l" in opts["flags"]:
            lines = render_list(st)
        elif "-m" in opts["flags"]:
            lines = render_mapping(st)
        elif opts["t"] == "topo":
            lines = render_topo(st)
        elif opts["t"] in PER_DEVICE:
            card = opts["i"]
            if card is None or not card.isdigit() or int(card) >= len(st["npus"]):
                raise SmiError(ERR_INVALID, ["Invalid card id.", "Error parameter of -i", USAGE])
            chip = opts["c"]
            if chip is not None and chip != "0":
                raise SmiError(ERR_INVALID, ["Invalid chip id.", "Error parameter of -c", USAGE])
            lines = PER_DEVICE[opts["t"]](st, st["npus"][int(card)], None if chip is None else 0)
        else:
            raise SmiError(ERR_INVALID, ["Error parameter of -t", USAGE])
        for line in lines:
            res.o(line)
    except SmiError as err:
        res.out = []
        for line in err.lines:
            res.o(line)
        res.fail(err.code)
    return res
