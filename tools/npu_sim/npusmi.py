"""``npu-smi`` as the simulator renders it, for each product profile of the node state.

Atlas 800T A2 (8 x 910B3, the default): the ``info`` table is the 98-column layout of drivers
23.0.x-25.2.x (tests/fixtures/captures/npu-smi_info.txt), or, on a node whose driver version is 26 or
newer, the 116-column layout of 26.x whose process table has a fifth cell, "Process id in container"
(tests/fixtures/captures/npu-smi_info_26x.txt); ``-t``/``-l``/``-m`` views print TAB-led
``key : value`` lines, key padded to 30 (40 for ``-t ecc``). The A3 (910C, two dies per NPU) and
Atlas 300I Duo (310P3, two chips per card) layouts are in the second half of this file, each with
its sources. ``-i`` takes the NPU (card) id npu-smi lists, ``-c`` the chip of that NPU.
npu-smi prints its errors on STDOUT; exit status = negative code & 0xFF.
"""

import time

from . import faults as faults_mod
from . import model
from . import node as node_mod
from . import statefile
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

# Driver 26.x (npu-smi_info_26x.txt: 26.0.rc1, 26.1.0): 116 columns, cells of 27, 15 and 70; the process table has a
# fifth cell, the process id inside its container ("NA" for a process of the host).
LINE_TOP_26 = "+" + "-" * 114 + "+"
LINE_DASH_26 = "+" + "-" * 27 + "+" + "-" * 15 + "+" + "-" * 70 + "+"
LINE_EQ_26 = "+" + "=" * 27 + "+" + "=" * 15 + "+" + "=" * 70 + "+"
HEAD_1_26 = "| NPU   Name                | Health        | Power(W)             Temp(C)                 Hugepages-Usage(page)   |"
HEAD_2_26 = "| Chip                      | Bus-Id        | AICore(%)            Memory-Usage(MB)        HBM-Usage(MB)           |"
PROC_HEAD_26 = "| NPU     Chip              | Process id    | Process name       | Process memory(MB)    | Process id in container |"
LAYOUT_26_MAJOR = 26

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


def driver_major(version):
    """The major number of a driver version ('26.0.rc1' -> 26), or 0 when it has none."""
    head = str(version or "").split(".", maxsplit=1)[0]
    return int(head) if head.isdigit() else 0


def render_table_26(st):
    """The `npu-smi info` summary table of driver 26.x."""
    ver = st["versions"]["driver"]
    lines = [LINE_TOP_26, "| npu-smi %-35s Version: %-60s|" % (ver, ver), LINE_DASH_26, HEAD_1_26, HEAD_2_26, LINE_EQ_26]
    for npu in st["npus"]:
        lines.append("| %-5d %-20s| %-13s | %-20.1f %-23d %-5d/ %-17d|" % (
            npu["id"], npu["name"], npu["health"], npu["power_w"], npu["temp_c"], npu["hugepages"][0], npu["hugepages"][1]))
        lines.append("| %-26d| %-13s | %-20d %-5d/ %-16d %-5d/ %-17d|" % (
            0, npu["bus_id"], npu["aicore_pct"], npu["memory_mb"][0], npu["memory_mb"][1], npu["hbm_mb"][0], npu["hbm_mb"][1]))
        lines.append(LINE_EQ_26)
    lines += [LINE_DASH_26, PROC_HEAD_26, LINE_EQ_26]
    for npu in st["npus"]:
        for proc in npu["processes"]:
            inside = proc.get("container_pid")
            lines.append("| %-7d %-18d| %-13d | %-18s | %-21d | %-23s |" % (
                npu["id"], 0, proc["pid"], proc["name"], proc["memory_mb"], "NA" if inside is None else inside))
        if not npu["processes"]:
            lines.append("| No running processes found in NPU %-79d|" % npu["id"])
        lines.append(LINE_EQ_26)
    return lines


def render_table(st):
    """The `npu-smi info` summary table (the 26.x layout on a node whose driver is 26 or newer)."""
    ver = st["versions"]["driver"]
    if driver_major(ver) >= LAYOUT_26_MAJOR:
        return render_table_26(st)
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
        lines.append("%-11s%s%s" % (names[row["id"]], cells, node_mod.cpu_range(row["numa_node"], per_node)))
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
    for fault in faults_mod.faults_for(st, "hang", dev):
        if fault.get("tool") in (None, "", "npu-smi"):
            time.sleep(float(fault.get("value") or 3600))
            return


def run(argv, path):
    res = Result()
    try:
        if not argv or argv[0] != "info":
            raise SmiError(ERR_NOT_FOUND, ["Command or option is not found.", USAGE])
        opts = _parse(argv[1:])
        st = model.effective(statefile.load(path))
        product = st.get("profile")
        if product not in (None, node_mod.DEFAULT_PRODUCT):
            lines = _run_product(path, st, product, opts)
        else:
            lines = _run_a2(path, st, opts)
        for line in lines:
            res.o(line)
    except SmiError as err:
        res.out = []
        for line in err.lines:
            res.o(line)
        res.fail(err.code)
    return res


def _check_busy(path, st):
    if faults_mod.fault_fires(path, [f for f in faults_mod.faults_for(st, "busy") if f.get("tool") == "npu-smi"]):
        # Real text when another container holds the devices (npu-smi_errors.txt).
        raise SmiError(ERR_DEVICE_USED, ["dcmi model initialized failed, because the device is used. ret is %d" % ERR_DEVICE_USED])


def _run_a2(path, st, opts):
    card = opts["i"]
    _maybe_hang(st, int(card) if card is not None and card.isdigit() else None)
    _check_busy(path, st)
    if opts["t"] is None and not opts["flags"]:
        if opts["i"] is not None:
            raise SmiError(ERR_INVALID, ["Error parameter of -t", USAGE])
        return render_table(st)
    if "-l" in opts["flags"]:
        return render_list(st)
    if "-m" in opts["flags"]:
        return render_mapping(st)
    if opts["t"] == "topo":
        return render_topo(st)
    if opts["t"] in PER_DEVICE:
        card = opts["i"]
        if card is None or not card.isdigit() or int(card) >= len(st["npus"]):
            raise SmiError(ERR_INVALID, ["Invalid card id.", "Error parameter of -i", USAGE])
        chip = opts["c"]
        if chip is not None and chip != "0":
            raise SmiError(ERR_INVALID, ["Invalid chip id.", "Error parameter of -c", USAGE])
        return PER_DEVICE[opts["t"]](st, st["npus"][int(card)], None if chip is None else 0)
    raise SmiError(ERR_INVALID, ["Error parameter of -t", USAGE])


# ============================================================================= A3 and Atlas 300I Duo
# Each entry of st["npus"] is one chip; node_mod.card_chips groups them by the NPU (card) id npu-smi prints.

def _run_product(path, st, product, opts):
    card = opts["i"]
    chips = node_mod.card_chips(st, int(card)) if card is not None and card.isdigit() else []
    for npu in chips or [None]:
        _maybe_hang(st, None if npu is None else npu["id"])
    _check_busy(path, st)
    if opts["t"] is None and not opts["flags"]:
        if opts["i"] is not None:
            raise SmiError(ERR_INVALID, ["Error parameter of -t", USAGE])
        return PRODUCT_TABLES[product](st)
    if "-l" in opts["flags"]:
        return _list_cards(st, product)
    if "-m" in opts["flags"]:
        return PRODUCT_MAPPINGS[product](st)
    if opts["t"] == "topo":
        return PRODUCT_TOPOS[product](st)
    if opts["t"] in PER_DEVICE:
        if not chips:
            raise SmiError(ERR_INVALID, ["Invalid card id.", "Error parameter of -i", USAGE])
        chip = opts["c"]
        if chip is not None and not (chip.isdigit() and int(chip) < len(chips)):
            raise SmiError(ERR_INVALID, ["Invalid chip id.", "Error parameter of -c", USAGE])
        return PRODUCT_VIEWS[opts["t"]](st, product, int(card), chips, None if chip is None else int(chip))
    raise SmiError(ERR_INVALID, ["Error parameter of -t", USAGE])


def _chip_of(npu):
    return npu.get("chip_id", 0)


def _power_text(npu, missing):
    return missing if npu.get("power_w") is None else "%.1f" % npu["power_w"]


# ----------------------------------------------------------------------------- A3 summary table
# The A2 layout with the A3 changes, after the real 16-die A3 tables of vllm-ascend issues #2666 and #2667 (24.1.rc3.7,
# idle; tests/fixtures/captures/npu-smi_info_a3.txt) and #3002 (25.2.0, processes on every die); the first rows of
# #2534, #2035, #7225 and #5588 show the same layout:
# 'Chip  Phy-ID' header, two rows per die, die 1's power '-', a full-width +---+ line between the two dies of an NPU
# and the ==== line after each NPU; process rows 'NPU  Chip' with the die's chip index, one block per NPU.
A3_HEAD_2 = "| Chip  Phy-ID              | Bus-Id        | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)        |"


def render_table_a3(st):
    ver = st["versions"]["driver"]
    lines = [LINE_TOP, "| npu-smi %-24s Version: %-53s|" % (ver, ver), LINE_DASH, HEAD_1, A3_HEAD_2, LINE_EQ]
    cards = node_mod.card_ids(st)
    for card in cards:
        for number, npu in enumerate(node_mod.card_chips(st, card)):
            if number:
                lines.append(LINE_TOP)
            lines.append("| %-5d %-20s| %-13s | %-11s %-17d %-5d/ %-14d|" % (
                card, npu["name"], npu["health"], _power_text(npu, "-"), npu["temp_c"], npu["hugepages"][0], npu["hugepages"][1]))
            lines.append("| %-5d %-20d| %-13s | %-11d %-5d/ %-10d %-5d/ %-14d|" % (
                _chip_of(npu), npu.get("phy_id", npu["id"]), npu["bus_id"], npu["aicore_pct"], npu["memory_mb"][0],
                npu["memory_mb"][1], npu["hbm_mb"][0], npu["hbm_mb"][1]))
        lines.append(LINE_EQ)
    lines += [LINE_DASH, PROC_HEAD, LINE_EQ]
    for card in cards:
        rows = []
        for npu in node_mod.card_chips(st, card):
            for proc in npu["processes"]:
                rows.append("| %-7d %-18d| %-13d | %-24s | %-24d|" % (card, _chip_of(npu), proc["pid"], proc["name"], proc["memory_mb"]))
        lines += rows or ["| No running processes found in NPU %-61d|" % card]
        lines.append(LINE_EQ)
    return lines


# ----------------------------------------------------------------------------- Atlas 300I Duo summary table
# The 106-column layout of the 310P cards, after the real tables of vllm-ascend issues #6842 (4 x 300I Duo, 25.3.rc1,
# card ids 0/32/32768/32800) and #4148 (2 x 300I Duo, 25.2.0, cards 64/32832; tests/fixtures/captures/
# npu-smi_info_310.txt), Syllo/nvtop issue #421 (25.2.0) and ollama/ollama issue #5315 (24.1.rc2): 'Chip    Device'
# header, power NA, one Memory-Usage pair (DDR, no HBM), both chips of a card on the card's bus id, a +---+---+---+
# line between the chips of a card; the process section has its own 'NPU     Chip' header and one block per card.
# Those tables are all idle: the row of a running process is the driver source's (print_proc_total_info).
DUO_TOP = "+" + "-" * 104 + "+"
DUO_DASH = "+" + "-" * 31 + "+" + "-" * 17 + "+" + "-" * 54 + "+"
DUO_EQ = "+" + "=" * 31 + "+" + "=" * 17 + "+" + "=" * 54 + "+"
DUO_HEAD_1 = "| NPU     Name                  | Health          | Power(W)     Temp(C)           Hugepages-Usage(page) |"
DUO_HEAD_2 = "| Chip    Device                | Bus-Id          | AICore(%)    Memory-Usage(MB)                        |"
DUO_PROC_HEAD = "| NPU     Chip                  | Process id      | Process name             | Process memory(MB)        |"


def _ddr_used(npu):
    """DDR in use on a 310P chip: the chip's own use plus its processes' memory (the state keeps them apart)."""
    used, total = npu["memory_mb"]
    return min(total, used + sum(int(proc["memory_mb"]) for proc in npu["processes"]))


def render_table_duo(st):
    ver = st["versions"]["driver"]
    lines = [DUO_TOP, "| npu-smi %-40s Version: %-44s |" % (ver, ver), DUO_DASH, DUO_HEAD_1, DUO_HEAD_2, DUO_EQ]
    cards = node_mod.card_ids(st)
    for card in cards:
        for number, npu in enumerate(node_mod.card_chips(st, card)):
            if number:
                lines.append(DUO_DASH)
            lines.append("| %-7d %-22s| %-15s | %-12s %-17d %-6d/ %-13d |" % (
                card, npu["name"], npu["health"], _power_text(npu, "NA"), npu["temp_c"], npu["hugepages"][0], npu["hugepages"][1]))
            lines.append("| %-7d %-22d| %-15s | %-12d %-5d/ %-32d |" % (
                _chip_of(npu), npu["id"], npu["bus_id"], npu["aicore_pct"], _ddr_used(npu), npu["memory_mb"][1]))
        lines.append(DUO_EQ)
    lines += [DUO_DASH, DUO_PROC_HEAD, DUO_EQ]
    for card in cards:
        rows = []
        for npu in node_mod.card_chips(st, card):
            for proc in npu["processes"]:
                rows.append("| %-7d %-22d| %-15d | %-24s | %-25d |" % (card, _chip_of(npu), proc["pid"], proc["name"], proc["memory_mb"]))
        lines += rows or ["| No running processes found in NPU %-7d%s|" % (card, " " * 62)]
        lines.append(DUO_EQ)
    return lines


# ----------------------------------------------------------------------------- -l and -m
def _list_cards(st, product):
    """-l: the A2 shape with each NPU's chip count. Boards that are not 910-class servers (the 300I Duo card) also
    print Product Name and Serial Number (driver source, print_all_info; no real multi-chip sample was found)."""
    cards = node_mod.card_ids(st)
    lines = [kv("Total Count", len(cards)), ""]
    for card in cards:
        chips = node_mod.card_chips(st, card)
        lines.append(kv("NPU ID", card))
        if product == "atlas-300i-duo":
            lines += [kv("Product Name", chips[0]["board"]["product_name"]), kv("Serial Number", chips[0]["board"]["serial_number"])]
        lines += [kv("Chip Count", len(chips)), ""]
    return lines


def render_mapping_a3(st):
    """-m of an A3: a Chip Phy-ID column, chip name 'Ascend910', the MCU after the two dies. Driver source
    (print_mapping_info_910_93); no real A3 -m capture was found."""
    lines = ["\t%-30s %-30s %-30s %-30s %-30s" % ("NPU ID", "Chip ID", "Chip Logic ID", "Chip Phy-ID", "Chip Name")]
    for card in node_mod.card_ids(st):
        chips = node_mod.card_chips(st, card)
        for npu in chips:
            lines.append("\t%-30d %-30d %-30d %-30d %s" % (card, _chip_of(npu), npu["id"], npu.get("phy_id", npu["id"]), npu["name"]))
        lines.append("\t%-30d %-30d %-30s %-30s %-30s" % (card, len(chips), "-", "-", "Mcu"))
    return lines


def render_mapping_duo(st):
    """-m of a 310P card: the A2 layout ('Ascend 310P3' per chip, the MCU after the chips). Driver source
    (print_mapping_info); no real 300I Duo -m capture was found."""
    lines = ["\t%-30s %-30s %-30s %-30s" % ("NPU ID", "Chip ID", "Chip Logic ID", "Chip Name")]
    for card in node_mod.card_ids(st):
        chips = node_mod.card_chips(st, card)
        for npu in chips:
            lines.append("\t%-30s %-30s %-30s %s" % (card, _chip_of(npu), npu["id"], "Ascend " + npu["name"]))
        lines.append("\t%-30s %-30s %-30s %-30s" % (card, len(chips), "-", "Mcu"))
    return lines


# ----------------------------------------------------------------------------- -t topo
# A3: rows and columns are the dies' physical ids ('Phy-ID%-5d'), SIO between the two dies of one NPU, HCCS between
# NPUs, no CPU Affinity column on an Arm host. Layout and legend of the real A3 capture (sgl-project/sglang issue
# #30453, one NPU of an A3 visible as Phy-ID12/13; tests/fixtures/captures/npu-smi_info_-t_topo_a3.txt): the A2 legend
# with this driver's 'multipul' and the SIO and HCCS_SW lines. No full-node (16-die) capture was found: the HCCS
# cells between NPUs follow the A3 product layout (HCCS between NPUs; an A3 SuperPoD behind HCCS switches would
# print HCCS_SW there).
A3_TOPO_LEGEND = TOPO_LEGEND[:6] + ("  PXB  = Path traversing multipul PCIe switches", TOPO_LEGEND[7],
                                    "  SIO  = Path traversing the SIO bus",
                                    "  HCCS_SW = Connection traversing HCCS through a switch") + TOPO_LEGEND[-1:]
# 310P: PCIe only. The shape of the documented PCIe-only topology (npu-smi reference, single-card scenario: SYS
# between NUMA nodes, PHB inside one) with the legend lines the driver prints for a 310P (no PIX/PXB lines).
DUO_TOPO_LEGEND = TOPO_LEGEND[:5] + TOPO_LEGEND[7:]


def render_topo_a3(st):
    dies = st["npus"]
    lines = ["\t   " + "".join("Phy-ID%-5d" % npu.get("phy_id", npu["id"]) for npu in dies)]
    for row in dies:
        cells = []
        for col in dies:
            if col is row:
                cells.append("X")
            elif col.get("card") == row.get("card"):
                cells.append("SIO")
            else:
                cells.append("HCCS")
        lines.append("Phy-ID%-5d%s" % (row.get("phy_id", row["id"]), "".join("%-11s" % cell for cell in cells)))
    return lines + [""] + list(A3_TOPO_LEGEND)


def render_topo_duo(st):
    chips = st["npus"]
    per_node = st["numa"]["cpus_per_node"]
    lines = ["\t   " + "".join("NPU%-8d" % npu["id"] for npu in chips) + "CPU Affinity"]
    for row in chips:
        cells = "".join("%-11s" % ("X" if col is row else "PHB" if col["numa_node"] == row["numa_node"] else "SYS")
                        for col in chips)
        lines.append("NPU%-8d%s%s" % (row["id"], cells, node_mod.cpu_range(row["numa_node"], per_node)))
    return lines + [""] + list(DUO_TOPO_LEGEND)


# ----------------------------------------------------------------------------- -t views of one NPU
# An NPU with two chips: without -c each chip's block ends with its 'Chip ID' line and a blank line after an
# 'NPU ID' / 'Chip Count' preamble (the shape of the real 910B -t temp/power/usages captures, and of the driver's
# loop over the chips); with -c the one chip's block follows 'NPU ID'.

def _blocks(card, chips, chip, body, width=30):
    if chip is not None:
        return [kv("NPU ID", card, width)] + body(chips[chip]) + [kv("Chip ID", chip, width), ""]
    lines = [kv("NPU ID", card, width), kv("Chip Count", len(chips), width), ""]
    for npu in chips:
        lines += body(npu) + [kv("Chip ID", _chip_of(npu), width), ""]
    return lines


def _view_board(st, product, card, chips, chip):
    """Card (no -c) and chip views; driver source (print_ascend_board_info, print_npu_card_info,
    print_ascend_chip_info): no real A3 or 300I Duo -t board was found. The A3 card view is the real A2 one with
    'Main Board ID'; the 310P card view adds 'Chip Fault'; the A3 chip view names the NPU and has no Chip Type,
    the 310P one has one 'Die ID' and no PCB/BOM lines."""
    first = chips[0]
    board = first["board"]
    ver = st["versions"]
    if chip is not None:
        npu = chips[chip]
        info = npu["chip"]
        lines = [kv("NPU ID", card)]
        if product == "atlas-a3":
            lines += [kv("NPU Name", npu["name"]), kv("Chip ID", chip)]
        else:
            lines += [kv("Chip ID", chip), kv("Chip Type", info["chip_type"])]
        lines += [kv("Chip Name", npu["name"]), kv("Chip Version", info["chip_version"]), kv("Board ID", board["board_id"])]
        if product == "atlas-a3":
            lines += [kv("PCB ID", info["pcb_id"]), kv("BOM ID", board["bom_id"]), kv("VDie ID", info["vdie_id"]),
                      kv("NDie ID", info["ndie_id"])]
        else:
            lines.append(kv("Die ID", info["die_id"]))
        return lines + [kv("Chip Position ID", info["position_id"]), kv("PCIe Bus Info", npu["bus_id"]),
                        kv("Firmware Version", ver["firmware"])]
    lines = [kv("NPU ID", card), kv("Product Name", board["product_name"]), kv("Model", board["model"]),
             kv("Manufacturer", board["manufacturer"]), kv("Serial Number", board["serial_number"]),
             kv("Software Version", ver["driver"]), kv("Firmware Version", ver["firmware"]),
             kv("Compatibility", board["compatibility"]), kv("Board ID", board["board_id"])]
    if "main_board_id" in board:
        lines.append(kv("Main Board ID", board["main_board_id"]))
    lines += [kv("PCB ID", board["pcb_id"]), kv("BOM ID", board["bom_id"]), kv("PCIe Bus Info", first["bus_id"]),
              kv("Slot ID", board["slot_id"]), kv("Class ID", board["class_id"]),
              kv("PCI Vendor ID", board["pci_vendor_id"]), kv("PCI Device ID", board["pci_device_id"]),
              kv("Subsystem Vendor ID", board["subsystem_vendor_id"]),
              kv("Subsystem Device ID", board["subsystem_device_id"]), kv("Chip Count", len(chips))]
    if "chip_fault" in board:
        lines.append(kv("Chip Fault", board["chip_fault"]))
    return lines


def _view_health(st, product, card, chips, chip):
    if chip is not None:
        return _health(st, chips[chip], chip)
    return _blocks(card, chips, None, lambda npu: _health(st, npu, None))


def _view_ecc(st, product, card, chips, chip):
    if product == "atlas-300i-duo":
        # DDR ECC of a 310P (driver source, printf_ddr_ecc_info); the counters are the state's ECC counters
        def body(npu):
            ecc = npu["ecc"]
            return [kv("DDR Single Bit Error Count", ecc["hbm_single"], 40),
                    kv("DDR Double Bit Error Count", ecc["hbm_double"], 40),
                    kv("DDR Single Bit Aggregate Total Err Cnt", ecc["hbm_single_agg"], 40),
                    kv("DDR Double Bit Aggregate Total Err Cnt", ecc["hbm_double_agg"], 40),
                    kv("DDR Single Bit Isolated Pages Count", ecc["hbm_single_iso"], 40),
                    kv("DDR Double Bit Isolated Pages Count", ecc["hbm_double_iso"], 40),
                    kv("DDR Single Bit Next-Isolated Pages Count", 0, 40),
                    kv("DDR Double Bit Next-Isolated Pages Count", ecc["hbm_double_next"], 40)]
    else:
        def body(npu):
            return _ecc(st, npu, None)[1:]
    return _blocks(card, chips, chip, body, 40)


def _view_temp(st, product, card, chips, chip):
    lines = _blocks(card, chips, chip, lambda npu: [kv("NPU Temperature (C)", npu["temp_c"])])
    if chip is None and chips[0].get("mcu_temps"):
        lines += [kv(name, value) for name, value in chips[0]["mcu_temps"]] + [kv("Chip Name", "MCU"), ""]
    return lines


def _view_power(st, product, card, chips, chip):
    # a chip whose power npu-smi does not report (A3 die 1, 310P chips) prints NA here: no real sample
    return _blocks(card, chips, chip, lambda npu: [kv("NPU Real-time Power(W)", _power_text(npu, "NA"))])


def _view_usages(st, product, card, chips, chip):
    if product != "atlas-300i-duo":
        return _blocks(card, chips, chip, lambda npu: _usages(st, npu, None)[3:-2])

    def body(npu):
        # 310P keys (driver source, print_chip_usages_info): DDR only, Vectorcore and DVPP rates, no HBM
        use = npu["usages"]
        used, total = _ddr_used(npu), npu["memory_mb"][1]
        return [kv("DDR Capacity(MB)", total), kv("DDR Usage Rate(%)", int(round(100.0 * used / total)) if total else 0),
                kv("DDR Hugepages Total(page)", use["ddr_hugepages_total"]),
                kv("DDR Hugepages Usage Rate(%)", use["ddr_hugepages_usage_pct"]),
                kv("Aicore Usage Rate(%)", max(use["aicore_pct"], npu["aicore_pct"])), kv("Aicpu Usage Rate(%)", use["aicpu_pct"]),
                kv("Ctrlcpu Usage Rate(%)", use["ctrlcpu_pct"]), kv("Vectorcore Usage Rate(%)", use.get("vectorcore_pct", 0)),
                kv("DDR Bandwidth Usage Rate(%)", use["ddr_bw_pct"]), kv("DVPP VDEC Usage Rate(%)", 0),
                kv("DVPP VPC Usage Rate(%)", 0), kv("DVPP VENC Usage Rate(%)", 0), kv("DVPP JPEGE Usage Rate(%)", 0),
                kv("DVPP JPEGD Usage Rate(%)", 0)]
    return _blocks(card, chips, chip, body)


def _view_common(st, product, card, chips, chip):
    """-t common: 'Chip ID' opens each chip's block (driver source, print_npu_common_info); the 310P has no HBM,
    Aicore Count or power lines and prints its card's power on the MCU block."""
    lines = [kv("NPU ID", card)]
    if chip is None:
        lines.append(kv("Chip Count", len(chips)))
    for npu in chips if chip is None else [chips[chip]]:
        lines += ["", kv("Chip ID", _chip_of(npu))] if chip is None else [kv("Chip ID", chip)]
        if product == "atlas-300i-duo":
            lines += [kv("Memory Usage Rate(%)", npu["usages"]["memory_usage_pct"]), kv("Aicore Usage Rate(%)", npu["aicore_pct"]),
                      kv("Aicore Freq(MHZ)", npu["aicore_freq_mhz"]), kv("Aicore curFreq(MHZ)", npu["aicore_cur_freq_mhz"]),
                      kv("Temperature(C)", npu["temp_c"])]
        else:
            lines += [kv("Memory Usage Rate(%)", npu["usages"]["memory_usage_pct"]), kv("HBM Usage Rate(%)", _hbm_pct(npu)),
                      kv("Aicore Usage Rate(%)", npu["aicore_pct"]), kv("Aicore Freq(MHZ)", npu["aicore_freq_mhz"]),
                      kv("Aicore curFreq(MHZ)", npu["aicore_cur_freq_mhz"]), kv("Aicore Count", npu["aicore_count"]),
                      kv("Temperature(C)", npu["temp_c"]), kv("NPU Real-time Power(W)", _power_text(npu, "NA"))]
    mcu = chips[0].get("mcu")
    if chip is None and mcu:
        lines += ["", kv("Chip Name", "mcu"), kv("Temperature(C)", mcu["temp_c"]), kv("NPU Real-time Power(W)", "%.1f" % mcu["power_w"])]
    return lines


def _view_proc_mem(st, product, card, chips, chip):
    return _blocks(card, chips, chip, lambda npu: _proc_mem(st, npu, None)[1:-1])


def _view_pcie_err(st, product, card, chips, chip):
    return _blocks(card, chips, chip, lambda npu: _pcie_err(st, npu, None)[1:])


def _view_memory(st, product, card, chips, chip):
    if product != "atlas-300i-duo":
        return _blocks(card, chips, chip, lambda npu: _memory(st, npu, None)[1:-1])

    def body(npu):
        # 310P (driver source, print_ddr_info): the card's total DDR, then the chip's; no HBM lines
        ddr = npu.get("ddr") or {}
        return [kv("Total DDR Capacity(MB)", ddr.get("total_mb", npu["memory_mb"][1])),
                kv("DDR Capacity(MB)", npu["memory_mb"][1]), kv("DDR Clock Speed(MHz)", ddr.get("clock_mhz", 0))]
    return _blocks(card, chips, chip, body)


PRODUCT_TABLES = {"atlas-a3": render_table_a3, "atlas-300i-duo": render_table_duo}
PRODUCT_MAPPINGS = {"atlas-a3": render_mapping_a3, "atlas-300i-duo": render_mapping_duo}
PRODUCT_TOPOS = {"atlas-a3": render_topo_a3, "atlas-300i-duo": render_topo_duo}
PRODUCT_VIEWS = {"board": _view_board, "health": _view_health, "ecc": _view_ecc, "temp": _view_temp,
                 "power": _view_power, "usages": _view_usages, "common": _view_common, "proc-mem": _view_proc_mem,
                 "pcie-err": _view_pcie_err, "memory": _view_memory}
