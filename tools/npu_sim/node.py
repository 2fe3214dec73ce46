"""A fresh simulated node: the hardware of each product, its host, its defaults, and the node's clock.

``new_state`` builds the document that statefile.py stores: an Atlas 800T A2 (8 x Ascend 910B3) by default, or
another product profile of ``PRODUCTS``. The ports of its NPUs come from ports.py.
"""

import os
import time

from . import ports

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


def now(st):
    """Simulated wall clock: ``settings.clock`` (epoch seconds) pins it, for tests; else real time."""
    pinned = st.get("settings", {}).get("clock")
    return float(pinned) if pinned is not None else time.time()


def cpu_range(node, cpus_per_node=24):
    first = node * cpus_per_node
    return "%d-%d" % (first, first + cpus_per_node - 1)


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
        "net": ports.new_port(index, device, created),
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
    die["net"]["vnic"] = {"address": "%s.%d.%d" % (VNIC_PREFIX, device, ports.IP_PLAN_HOST_OFFSET + index),
                          "netmask": ports.IP_PLAN_NETMASK, "link": "UP"}
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


def host_settings(st):
    """The ``host`` section with defaults filled in (states written before it existed have none)."""
    merged = dict(DEFAULT_HOST)
    merged.update(st.get("host") or {})
    return merged
