"""Product profiles of the simulator: Atlas 800T A2 (default), Atlas 800T A3 (910C, 8 NPUs x 2 dies) and an
inference host with Atlas 300I Duo cards (310P3, 2 chips per card, no RoCE port).

Each profile prints the layout of the real tool: the tables are compared with real captures
(tests/fixtures/captures/npu-smi_info_a3.txt, npu-smi_info_310.txt, npu-smi_info_-t_topo_a3.txt,
npu-smi_info_-m_products.txt) and with real lines quoted below with their source. The simulated output is
also read with the collection's parsers (plugins/module_utils/_parsers/npu_smi.py).
"""

import json
import os
import shutil
import socket
import subprocess
import sys

import pytest

from npu_sim import control, hccn, npusmi
from npu_sim import node as node_mod
from npu_sim import ports as ports_mod
from npu_sim import statefile
from simhelpers import CREATED, REPO, Sim, sample, text

A2, A3, DUO = "atlas-800t-a2", "atlas-a3", "atlas-300i-duo"

# Real header lines of an A3 `npu-smi info` (vllm-ascend issue #2534,
# https://github.com/vllm-project/vllm-ascend/issues/2534, driver 24.1.rc3.7; the same in #2035 and #2667).
A3_HEADER = [
    "+------------------------------------------------------------------------------------------------+",
    "| npu-smi 24.1.rc3.7               Version: 24.1.rc3.7                                           |",
    "+---------------------------+---------------+----------------------------------------------------+",
    "| NPU   Name                | Health        | Power(W)    Temp(C)           Hugepages-Usage(page)|",
    "| Chip  Phy-ID              | Bus-Id        | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)        |",
    "+===========================+===============+====================================================+",
]

# A real A3 table with processes on both dies of every NPU (vllm-ascend issue #3002,
# https://github.com/vllm-project/vllm-ascend/issues/3002, driver 25.2.0): the process rows carry the die's chip
# index and an empty process name.
A3_BUSY = """\
+------------------------------------------------------------------------------------------------+
| npu-smi 25.2.0                   Version: 25.2.0                                               |
+---------------------------+---------------+----------------------------------------------------+
| NPU   Name                | Health        | Power(W)    Temp(C)           Hugepages-Usage(page)|
| Chip  Phy-ID              | Bus-Id        | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)        |
+===========================+===============+====================================================+
| 0     Ascend910           | OK            | 211.3       43                0    / 0             |
| 0     0                   | 0000:9D:00.0  | 7           0    / 0          61609/ 65536         |
+------------------------------------------------------------------------------------------------+
| 0     Ascend910           | OK            | -           44                0    / 0             |
| 1     1                   | 0000:9F:00.0  | 7           0    / 0          61625/ 65536         |
+===========================+===============+====================================================+
| 1     Ascend910           | OK            | 210.6       45                0    / 0             |
| 0     2                   | 0000:99:00.0  | 7           0    / 0          61616/ 65536         |
+------------------------------------------------------------------------------------------------+
| 1     Ascend910           | OK            | -           45                0    / 0             |
| 1     3                   | 0000:9B:00.0  | 7           0    / 0          61619/ 65536         |
+===========================+===============+====================================================+
| 2     Ascend910           | OK            | 205.7       44                0    / 0             |
| 0     4                   | 0000:95:00.0  | 7           0    / 0          61633/ 65536         |
+------------------------------------------------------------------------------------------------+
| 2     Ascend910           | OK            | -           44                0    / 0             |
| 1     5                   | 0000:97:00.0  | 7           0    / 0          61623/ 65536         |
+===========================+===============+====================================================+
| 3     Ascend910           | OK            | 209.9       43                0    / 0             |
| 0     6                   | 0000:91:00.0  | 7           0    / 0          61625/ 65536         |
+------------------------------------------------------------------------------------------------+
| 3     Ascend910           | OK            | -           44                0    / 0             |
| 1     7                   | 0000:93:00.0  | 7           0    / 0          61628/ 65536         |
+===========================+===============+====================================================+
| 4     Ascend910           | OK            | 219.9       43                0    / 0             |
| 0     8                   | 0000:8D:00.0  | 8           0    / 0          61602/ 65536         |
+------------------------------------------------------------------------------------------------+
| 4     Ascend910           | OK            | -           45                0    / 0             |
| 1     9                   | 0000:8F:00.0  | 7           0    / 0          61618/ 65536         |
+===========================+===============+====================================================+
| 5     Ascend910           | OK            | 214.0       47                0    / 0             |
| 0     10                  | 0000:89:00.0  | 7           0    / 0          61578/ 65536         |
+------------------------------------------------------------------------------------------------+
| 5     Ascend910           | OK            | -           45                0    / 0             |
| 1     11                  | 0000:8B:00.0  | 7           0    / 0          61603/ 65536         |
+===========================+===============+====================================================+
| 6     Ascend910           | OK            | 201.9       43                0    / 0             |
| 0     12                  | 0000:85:00.0  | 6           0    / 0          61614/ 65536         |
+------------------------------------------------------------------------------------------------+
| 6     Ascend910           | OK            | -           43                0    / 0             |
| 1     13                  | 0000:87:00.0  | 7           0    / 0          61623/ 65536         |
+===========================+===============+====================================================+
| 7     Ascend910           | OK            | 205.5       44                0    / 0             |
| 0     14                  | 0000:81:00.0  | 7           0    / 0          61627/ 65536         |
+------------------------------------------------------------------------------------------------+
| 7     Ascend910           | OK            | -           43                0    / 0             |
| 1     15                  | 0000:83:00.0  | 7           0    / 0          61631/ 65536         |
+===========================+===============+====================================================+
+---------------------------+---------------+----------------------------------------------------+
| NPU     Chip              | Process id    | Process name             | Process memory(MB)      |
+===========================+===============+====================================================+
| 0       0                 | 935440        |                          | 141                     |
| 0       0                 | 936673        |                          | 141                     |
| 0       0                 | 930242        |                          | 141                     |
| 0       0                 | 934451        |                          | 141                     |
| 0       0                 | 931572        |                          | 141                     |
| 0       0                 | 941045        |                          | 141                     |
| 0       0                 | 942487        |                          | 141                     |
| 0       0                 | 929673        |                          | 141                     |
| 0       1                 | 929405        |                          | 58780                   |
+===========================+===============+====================================================+
| 1       0                 | 929673        |                          | 58540                   |
| 1       1                 | 930242        |                          | 58780                   |
+===========================+===============+====================================================+
| 2       0                 | 930907        |                          | 58560                   |
| 2       1                 | 931572        |                          | 58779                   |
+===========================+===============+====================================================+
| 3       0                 | 932555        |                          | 58558                   |
| 3       1                 | 933405        |                          | 58782                   |
+===========================+===============+====================================================+
| 4       0                 | 934451        |                          | 58520                   |
| 4       1                 | 935440        |                          | 58780                   |
+===========================+===============+====================================================+
| 5       0                 | 936673        |                          | 58500                   |
| 5       1                 | 937869        |                          | 58764                   |
+===========================+===============+====================================================+
| 6       0                 | 939246        |                          | 58540                   |
| 6       1                 | 941045        |                          | 58782                   |
+===========================+===============+====================================================+
| 7       0                 | 942487        |                          | 58560                   |
| 7       1                 | 944268        |                          | 58782                   |
+===========================+===============+====================================================+
""".splitlines()

# Real header lines of a 300I Duo `npu-smi info` (Syllo/nvtop issue #421, https://github.com/Syllo/nvtop/issues/421,
# driver 25.2.0; the same layout in vllm-ascend issue #6842 with 25.3.rc1): 106 columns, 'Chip    Device', no HBM.
DUO_HEADER = [
    "+--------------------------------------------------------------------------------------------------------+",
    "| npu-smi 25.2.0                                   Version: 25.2.0                                       |",
    "+-------------------------------+-----------------+------------------------------------------------------+",
    "| NPU     Name                  | Health          | Power(W)     Temp(C)           Hugepages-Usage(page) |",
    "| Chip    Device                | Bus-Id          | AICore(%)    Memory-Usage(MB)                        |",
    "+===============================+=================+======================================================+",
]
# The two chips of card 2 in that issue: power NA, both on the card's bus id, a +---+ rule between them.
DUO_CARD = [
    "| 2       310P3                 | OK              | NA           45                0     / 0             |",
    "| 0       0                     | 0000:01:00.0    | 0            1529 / 44280                            |",
    "+-------------------------------+-----------------+------------------------------------------------------+",
    "| 2       310P3                 | OK              | NA           43                0     / 0             |",
    "| 1       1                     | 0000:01:00.0    | 0            1412 / 43693                            |",
    "+===============================+=================+======================================================+",
]


def _cells(line):
    return [cell.strip() for cell in line.split("|")[1:-1]]


def _table(lines):
    """Only the table of a capture sample (drops a label such as vLLM's 'NPU:' before it)."""
    return [line for line in lines if line[:1] in ("+", "|")]


def _node(tmp_path, product, name="node01", index=1, npus=None):
    sim = Sim(str(tmp_path))
    sim.data = node_mod.new_state(name, index, npus=npus, product=product, created=CREATED)
    return sim.save()


def _load_chips(sim, lines):
    """Set the chips of the node state from a real multi-chip table (A3 or 310P layout), process rows included."""
    sim.data["versions"]["driver"] = lines[1].split()[2]
    rows = [line for line in lines if line.startswith("| ") and len(_cells(line)) == 3]
    rows = [line for line in rows if "Name" not in line and not line.startswith("| Chip ")]
    chips = sim.data["npus"]
    assert len(rows) == 2 * len(chips), "the sample has %d chips, the state %d" % (len(rows) // 2, len(chips))
    for npu, first, second in zip(chips, rows[0::2], rows[1::2]):
        c1, c2 = _cells(first), _cells(second)
        card, name = c1[0].split()
        npu["card"], npu["name"], npu["health"] = int(card), name, c1[1]
        power, temp, hp_used, hp_total = c1[2].replace("/", " ").split()
        npu["power_w"] = None if power in ("-", "NA") else float(power)
        npu["temp_c"], npu["hugepages"] = int(temp), [int(hp_used), int(hp_total)]
        chip, second_id = c2[0].split()
        assert (int(chip), int(second_id)) == (npu["chip_id"], npu.get("phy_id", npu["id"]))
        npu["bus_id"] = c2[1]
        numbers = [int(word) for word in c2[2].replace("/", " ").split()]
        npu["aicore_pct"] = numbers[0]
        if len(numbers) == 5:
            npu["memory_mb"], npu["hbm_mb"] = numbers[1:3], numbers[3:5]
        else:
            npu["memory_mb"] = numbers[1:3]
    for line in lines:
        cells = _cells(line) if line.startswith("| ") else []
        if len(cells) == 4 and cells[1].isdigit():
            card, chip = (int(word) for word in cells[0].split())
            npu = [item for item in chips if item["card"] == card and item["chip_id"] == chip][0]
            npu["processes"].append({"pid": int(cells[1]), "name": cells[2], "memory_mb": int(cells[3])})
    return sim.save()


def _parsers():
    from ansible_collections.npuops.ascend.plugins.module_utils._parsers import npu_smi as parsers
    return parsers


# ----------------------------------------------------------------------------- profiles of the state

def test_default_product_is_the_a2_and_old_states_print_the_same(tmp_path):
    sim = Sim(str(tmp_path))
    assert (sim.data["profile"], sim.data["product"], len(sim.data["npus"])) == (A2, "Atlas 800T A2", 8)
    assert node_mod.PRODUCTS[node_mod.DEFAULT_PRODUCT]["name"] == "Atlas 800T A2"
    views = (["info"], ["info", "-l"], ["info", "-m"], ["info", "-t", "topo"], ["info", "-t", "board", "-i", "3"],
             ["info", "-t", "usages", "-i", "5", "-c", "0"])
    new = [sim.run("npu-smi", *argv) for argv in views]
    # a state written before the product profiles existed: no profile, no card/chip/phy ids
    del sim.data["profile"]
    for npu in sim.data["npus"]:
        for key in ("card", "chip_id", "phy_id"):
            del npu[key]
    sim.save()
    assert [sim.run("npu-smi", *argv) for argv in views] == new
    assert all(rc == 0 for rc, _out, _err in new)


@pytest.mark.parametrize("product, name, cards, chips, card_ids", [
    (A2, "Atlas 800T A2", 8, 8, list(range(8))),
    (A3, "Atlas 800T A3", 8, 16, list(range(8))),
    (DUO, "Atlas 300I Duo", 4, 8, [0, 32, 32768, 32800]),
])
def test_profiles_have_the_products_npus_and_chips(product, name, cards, chips, card_ids):
    st = node_mod.new_state("node02", 2, product=product, created=CREATED)
    assert (st["product"], st["profile"]) == (name, product)
    assert node_mod.card_ids(st) == card_ids and len(st["npus"]) == chips
    assert [npu["id"] for npu in st["npus"]] == list(range(chips)), "id is the device (logic) id and the list index"
    for card in card_ids:
        dies = node_mod.card_chips(st, card)
        assert [npu["chip_id"] for npu in dies] == list(range(chips // cards))
    if product == DUO:
        assert all(npu["net"] is None and npu["power_w"] is None and npu["name"] == "310P3" for npu in st["npus"])
        assert all(npu["hbm_mb"] == [0, 0] and npu["memory_mb"][1] in node_mod.DUO_DDR_MB for npu in st["npus"])
        # the two chips of one card share the card's bus id
        assert [npu["bus_id"] for npu in st["npus"]][:2] == ["0000:01:00.0", "0000:01:00.0"]
    else:
        assert [npu["net"]["ip"] for npu in st["npus"]] == [ports_mod.plan_ip(2, dev) for dev in range(chips)]
    if product == A3:
        assert [npu["name"] for npu in st["npus"]] == ["Ascend910"] * 16
        assert [npu["power_w"] is None for npu in st["npus"]] == [False, True] * 8, "die 1 reports no power"
        assert st["npus"][15]["net"]["vnic"] == {"address": "10.30.15.12", "netmask": "255.255.255.0", "link": "UP"}
        assert (st["numa"]["cpus_per_node"], st["cpu"]["bios_model"]) == (40, "Kunpeng 920 7285Z")


def test_unknown_product_is_refused():
    with pytest.raises(ValueError, match="unknown product 'atlas-900'"):
        node_mod.new_state("node01", 1, product="atlas-900")


# ----------------------------------------------------------------------------- A3

def test_a3_table_prints_the_real_idle_table(tmp_path):
    lines = _table(sample("npu-smi_info_a3.txt", "vllm-ascend issue #2666"))
    sim = _load_chips(_node(tmp_path, A3), lines)
    rc, out, err = sim.run("npu-smi", "info")
    assert (rc, err) == (0, "")
    assert out == text(lines)


def test_a3_table_prints_the_real_busy_table(tmp_path):
    sim = _load_chips(_node(tmp_path, A3), A3_BUSY)
    rc, out, _err = sim.run("npu-smi", "info")
    assert rc == 0 and out == text(A3_BUSY)


def test_a3_table_layout(tmp_path):
    sim = _node(tmp_path, A3)
    sim.data["versions"]["driver"] = "24.1.rc3.7"
    sim.save()
    out = sim.run("npu-smi", "info")[1].splitlines()
    assert out[:6] == A3_HEADER
    assert all(len(line) == 98 for line in out), "the 98 columns of the A2 table"
    rows = [line for line in out if line.startswith("| ") and len(_cells(line)) == 3][2:]
    assert len(rows) == 32, "two rows per die, 16 dies"
    assert [_cells(row)[2].split()[0] for row in rows[0::2]][:4] != ["-"] * 4
    assert [_cells(row)[2].split()[0] for row in rows[2::4]] == ["-"] * 8, "die 1 power '-'"
    # the full-width rule between the two dies of an NPU, the ==== rule after each NPU
    assert out[8] == "+" + "-" * 96 + "+" and out[11] == A3_HEADER[5]
    assert out.count("+" + "-" * 96 + "+") == 1 + 8


def test_a3_list_mapping_and_views_address_card_and_chip(tmp_path):
    sim = _node(tmp_path, A3)
    rc, out, _err = sim.run("npu-smi", "info", "-l")
    assert rc == 0 and out.count("Chip Count                     : 2") == 8
    rc, out, _err = sim.run("npu-smi", "info", "-m")
    # the A3 columns of a public test fixture (captures/npu-smi_info_-m_products.txt; a mock, its layout only)
    fixture = [line.split() for line in sample("npu-smi_info_-m_products.txt", "xLLM start script")]
    assert [line.split() for line in out.splitlines()[:len(fixture)]] == fixture
    assert len(out.splitlines()) == 1 + 8 * 3
    rc, out, _err = sim.run("npu-smi", "info", "-t", "board", "-i", "7")
    assert rc == 0 and "\tPCI Device ID                  : 0xD803\n" in out and out.endswith("\tChip Count                     : 2\n")
    rc, out, _err = sim.run("npu-smi", "info", "-t", "usages", "-i", "3")
    assert out.count("HBM Capacity(MB)") == 2 and "\tChip ID                        : 1\n" in out
    rc, out, _err = sim.run("npu-smi", "info", "-t", "power", "-i", "3", "-c", "1")
    assert rc == 0 and "\tNPU Real-time Power(W)         : NA\n" in out
    assert sim.run("npu-smi", "info", "-t", "health", "-i", "3", "-c", "2")[1].startswith("Invalid chip id.")
    assert sim.run("npu-smi", "info", "-t", "health", "-i", "8")[1].startswith("Invalid card id.")


def test_a3_topo_has_sio_between_the_dies_of_one_npu(tmp_path):
    sim = _node(tmp_path, A3)
    rc, out, _err = sim.run("npu-smi", "info", "-t", "topo")
    lines = out.splitlines()
    assert rc == 0 and lines[0].split() == ["Phy-ID%d" % phy for phy in range(16)], "no CPU Affinity column"
    for row in range(16):
        cells = lines[1 + row].split()
        assert cells[0] == "Phy-ID%d" % row and len(cells) == 17
        for col, cell in enumerate(cells[1:]):
            assert cell == ("X" if col == row else "SIO" if col // 2 == row // 2 else "HCCS"), (row, col)
    # a real A3 topology (sgl-project/sglang issue #30453: the dies of one NPU, Phy-ID12/13): same rows and legend
    real = sample("npu-smi_info_-t_topo_a3.txt", "sglang issue #30453")
    real = real[real.index("Ascend Topology:") + 1:]
    visible = dict(sim.data, npus=node_mod.card_chips(sim.data, 6))  # a container that sees NPU 6 only
    # the capture shows the header's TAB as spaces and no trailing blanks
    assert [line.expandtabs(8).rstrip() for line in npusmi.render_topo_a3(visible)] == real


def test_a3_hccn_tool_has_a_port_per_die(tmp_path):
    sim = _node(tmp_path, A3)
    for dev in (0, 1, 15):
        rc, out, err = sim.run("hccn_tool", "-i", str(dev), "-ip", "-g")
        assert (rc, out, err) == (0, "ipaddr:%s\nnetmask:255.255.255.0\n" % ports_mod.plan_ip(1, dev), "")
    assert sim.run("hccn_tool", "-i", "16", "-ip", "-g")[:3] == (4, "", "Get invalid device id.\n")
    if "vnic" in hccn.GETTERS:
        rc, out, _err = sim.run("hccn_tool", "-i", "15", "-vnic", "-g")
        assert rc == 0 and "10.30.15.11" in out


# ----------------------------------------------------------------------------- Atlas 300I Duo

def test_duo_table_prints_the_real_table(tmp_path):
    lines = sample("npu-smi_info_310.txt", "vllm-ascend issue #4148")
    sim = _node(tmp_path, DUO, npus=2)
    _load_chips(sim, lines)
    rc, out, err = sim.run("npu-smi", "info")
    assert (rc, err) == (0, "")
    assert out == text(lines)


def test_duo_table_layout(tmp_path):
    sim = _node(tmp_path, DUO, npus=1)
    for npu, temp, used in zip(sim.data["npus"], (45, 43), (1529, 1412)):
        npu["card"], npu["temp_c"], npu["memory_mb"] = 2, temp, [used, (44280, 43693)[npu["chip_id"]]]
    sim.save()
    out = sim.run("npu-smi", "info")[1].splitlines()
    assert out[:6] == DUO_HEADER and out[6:12] == DUO_CARD
    assert all(len(line) == 106 for line in out)
    assert out[-2:] == ["| No running processes found in NPU 2      " + " " * 62 + "|", DUO_HEADER[5]]


def test_duo_process_rows_are_in_the_card_layout(tmp_path):
    sim = _node(tmp_path, DUO)
    sim.npu(5)["processes"].append({"pid": 2718281, "name": "mindie_llm_back", "memory_mb": 20480})
    sim.save()
    out = sim.run("npu-smi", "info")[1].splitlines()
    head = out.index("| NPU     Chip                  | Process id      | Process name             | Process memory(MB)        |")
    idle = "| No running processes found in NPU %-7d" + " " * 62 + "|"
    assert out[head + 1:] == [DUO_HEADER[5], idle % 0, DUO_HEADER[5], idle % 32, DUO_HEADER[5],
                              "| 32768   1                     | 2718281         | mindie_llm_back          | 20480                     |",
                              DUO_HEADER[5], idle % 32800, DUO_HEADER[5]]
    # the chip's DDR in use holds its process
    assert "| 1       5                     | 0000:81:00.0    | 0            %-5d/ 43693                            |" % (
        sim.npu(5)["memory_mb"][0] + 20480) in out


def test_duo_list_mapping_and_topology(tmp_path):
    sim = _node(tmp_path, DUO)
    out = sim.run("npu-smi", "info", "-l")[1]
    assert "\tTotal Count                    : 4\n" in out and out.count("Chip Count                     : 2") == 4
    assert "\tNPU ID                         : 32800\n\tProduct Name                   : Atlas 300I Duo\n" in out
    out = sim.run("npu-smi", "info", "-m")[1].splitlines()
    # the 310P columns of a public test fixture (captures/npu-smi_info_-m_products.txt; a mock, its layout only)
    fixture = [line.split() for line in sample("npu-smi_info_-m_products.txt", "MAPPING_310P3")]
    assert out[0].split() == fixture[0]
    assert [line.split() for line in out[1:4]] == [["0", "0", "0", "Ascend", "310P3"], ["0", "1", "1", "Ascend", "310P3"],
                                                   ["0", "2", "-", "Mcu"]]
    rc, out, _err = sim.run("npu-smi", "info", "-t", "topo")
    lines = out.splitlines()
    assert rc == 0 and lines[0] == "\t   " + "".join("NPU%-8d" % chip for chip in range(8)) + "CPU Affinity"
    cells = [line.split()[1:9] for line in lines[1:9]]
    assert set(cell for row in cells for cell in row) == {"X", "PHB", "SYS"}, "PCIe only: no HCCS, no SIO"
    assert "HCCS" not in "".join(lines[1:9]) and "  PIX" not in out
    assert lines[1].endswith("0-23") and lines[8].endswith("96-119")


def test_duo_views_of_a_card_id_that_is_not_its_index(tmp_path):
    sim = _node(tmp_path, DUO)
    rc, out, _err = sim.run("npu-smi", "info", "-t", "board", "-i", "32768")
    assert rc == 0 and "\tProduct Name                   : Atlas 300I Duo\n" in out and "\tPCI Device ID                  : 0xD500\n" in out
    rc, out, _err = sim.run("npu-smi", "info", "-t", "usages", "-i", "32", "-c", "1")
    assert rc == 0 and "\tDDR Capacity(MB)               : 43693\n" in out and "HBM" not in out
    rc, out, _err = sim.run("npu-smi", "info", "-t", "common", "-i", "0")
    assert rc == 0 and "\tChip Name                      : mcu\n" in out
    assert sim.run("npu-smi", "info", "-t", "board", "-i", "1")[1].startswith("Invalid card id.")


def test_duo_hccn_tool_answers_that_the_product_has_no_port(tmp_path):
    sim = _node(tmp_path, DUO)
    # 0x300D 'The command is not supported on this product.' on stdout, exit 13 (captures/hccn_tool_set_and_errors.txt)
    for argv in (["-i", "0", "-ip", "-g"], ["-i", "7", "-link", "-g"], ["-i", "3", "-mtu", "-s", "size", "9000"]):
        assert sim.run("hccn_tool", *argv) == (13, "The command is not supported on this product.\n", "")
    assert sim.run("hccn_tool", "-i", "8", "-ip", "-g")[:3] == (4, "", "Get invalid device id.\n")


def test_duo_node_installs_takes_faults_and_refuses_port_faults(tmp_path):
    sim = _node(tmp_path, DUO)
    prefix = str(tmp_path / "prefix")
    res = control.run(["install", "--state", sim.path, "--prefix", prefix])
    assert res.exit_code == 0, res.stderr
    res = control.run(["fault", "set", "process", "--device", "3", "--value", "mindie:1024", "--state", sim.path])
    assert res.exit_code == 0, res.stderr
    out = sim.run("npu-smi", "info")[1]
    assert "| 32      1                     | 139033          | mindie                   | 1024                      |\n" in out
    res = control.run(["fault", "set", "link-flap", "--device", "1", "--state", sim.path])
    assert res.exit_code == 2 and "has no RoCE port" in res.stderr
    assert control.run(["busbw", "--state", sim.path]).exit_code == 2
    assert json.loads(control.run(["state", "effective", "--state", sim.path]).stdout)["npus"][3]["net"] is None


def test_init_takes_a_product(tmp_path):
    path = str(tmp_path / "state.json")
    res = control.run(["init", "--state", path, "--hostname", "node05", "--index", "5", "--product", A3])
    assert res.exit_code == 0 and "Atlas 800T A3: 8 NPUs, 16 chips" in res.stdout
    assert statefile.load(path)["profile"] == A3
    res = control.run(["init", "--state", path, "--hostname", "node05", "--index", "5", "--product", DUO, "--npus", "5", "--force"])
    assert res.exit_code == 2 and "--npus must be 1-4" in res.stderr
    res = control.run(["init", "--state", path, "--hostname", "node05", "--index", "5", "--force"])
    assert res.stdout == "initialised %s (hostname node05, index 5, 8 NPUs)\n" % path
    assert control.run(["init", "--state", path, "--hostname", "n", "--index", "1", "--product", "x", "--force"]).exit_code == 2


# ----------------------------------------------------------------------------- the collection's parsers

def test_parsers_read_the_a3_table_list_and_mapping(tmp_path):
    parsers = _parsers()
    sim = _load_chips(_node(tmp_path, A3), A3_BUSY)
    parsed = parsers.parse_info(sim.run("npu-smi", "info")[1])
    assert parsed["unparsed"] == [] and len(parsed["devices"]) == 16
    assert [(dev["npu"], dev["chip"], dev["phy_id"]) for dev in parsed["devices"][:3]] == [(0, 0, 0), (0, 1, 1), (1, 0, 2)]
    assert [dev["power_w"] for dev in parsed["devices"][:2]] == [211.3, None]
    assert len(parsed["processes"]) == 23
    assert parsed["processes"][8] == {"npu": 0, "chip": 1, "pid": 929405, "name": "", "memory_mb": 58780, "container_pid": None}
    listing = parsers.parse_list(sim.run("npu-smi", "info", "-l")[1])
    assert listing["unparsed"] == [] and [dev["chip_count"] for dev in listing["devices"]] == [2] * 8
    mapping = parsers.parse_mapping(sim.run("npu-smi", "info", "-m")[1])
    assert mapping["unparsed"] == []
    chips = [row for row in mapping["devices"] if row["name"] != "Mcu"]
    assert [row["logic_id"] for row in chips] == list(range(16)) and [row["phy_id"] for row in chips] == list(range(16))


def test_parsers_read_the_a3_topology(tmp_path):
    parsers = _parsers()
    probe = parsers.parse_topo("\n".join(sample("npu-smi_info_-t_topo_a3.txt", "sglang issue #30453")))
    if not probe["devices"]:
        pytest.skip("parse_topo does not read the A3 'Phy-ID<n>' row and column labels yet")
    parsed = parsers.parse_topo(_node(tmp_path, A3).run("npu-smi", "info", "-t", "topo")[1])
    assert parsed["unparsed"] == [] and len(parsed["devices"]) == 16
    links = dict((key.replace("Phy-ID", "").replace("NPU", ""), value) for key, value in parsed["devices"][2]["links"].items())
    assert links["3"] == "SIO" and links["0"] == links["15"] == "HCCS" and "2" not in links
    assert parsed["legend"]["SIO"] == "Path traversing the SIO bus"


def test_parsers_read_the_duo_table_list_and_topology(tmp_path):
    parsers = _parsers()
    probe = parsers.parse_info("\n".join(sample("npu-smi_info_310.txt", "vllm-ascend issue #4148")))
    if probe["unparsed"] or not all("bus_id" in dev for dev in probe["devices"]):
        pytest.skip("parse_info does not read the 310P chip row ('Chip    Device' header, one Memory-Usage pair, no HBM) yet")
    sim = _node(tmp_path, DUO)
    parsed = parsers.parse_info(sim.run("npu-smi", "info")[1])
    assert parsed["unparsed"] == [] and len(parsed["devices"]) == 8
    assert [dev["npu"] for dev in parsed["devices"]] == [0, 0, 32, 32, 32768, 32768, 32800, 32800]
    first = parsed["devices"][1]
    assert (first["name"], first["power_w"], first["bus_id"], first["memory_total_mb"]) == ("310P3", None, "0000:01:00.0", 43693)
    assert first.get("hbm_total_mb") is None
    listing = parsers.parse_list(sim.run("npu-smi", "info", "-l")[1])
    assert [dev["chip_count"] for dev in listing["devices"]] == [2] * 4 and listing["devices"][1]["npu"] == 32
    topo = parsers.parse_topo(sim.run("npu-smi", "info", "-t", "topo")[1])
    assert topo["unparsed"] == [] and len(topo["devices"]) == 8 and topo["devices"][7]["cpu_affinity"] == "96-119"


# ----------------------------------------------------------------------------- podctl

PODCTL = os.path.join(REPO, "tools", "pod", "podctl")
POD_PREFIX = "127.0.14"
if os.path.join(REPO, "tools", "pod") not in sys.path:
    sys.path.insert(0, os.path.join(REPO, "tools", "pod"))

from podlib import inventory as pod_inventory  # noqa: E402
from podlib import pod as pod_model  # noqa: E402


def _yaml_hosts(text_):
    yaml = pytest.importorskip("yaml")
    return yaml.safe_load(text_)["all"]["children"]["ascend_pod"]["hosts"]


@pytest.mark.parametrize("product, ports", [(A2, 8), (A3, 16), (DUO, 0)])
def test_inventory_lists_a_port_per_chip_with_a_roce_port(tmp_path, product, ports):
    pod = pod_model.Pod(str(tmp_path / "pod"), prefix=POD_PREFIX)
    names = pod_model.node_names(2)
    for index, name in enumerate(names, 1):
        statefile.save(pod.state_file(name), node_mod.new_state(name, index, product=product, created=CREATED))
    hosts = _yaml_hosts(pod_inventory.inventory_text(pod, names, product))
    for index, name in enumerate(names, 1):
        if not ports:
            assert "npuops_npu_ports" not in hosts[name]
            continue
        assert hosts[name]["npuops_npu_ports"] == [
            {"device": dev, "address": ports_mod.plan_ip(index, dev), "netmask": "255.255.255.0"} for dev in range(ports)]


def _pod_skip_reason():
    if os.geteuid() != 0:
        return "podctl needs root (namespaces, bind mounts, sshd for root logins)"
    if not os.access("/usr/sbin/sshd", os.X_OK) or not shutil.which("unshare"):
        return "podctl needs /usr/sbin/sshd and unshare"
    for number in (1, 2):
        try:
            with socket.create_connection(("%s.%d" % (POD_PREFIX, number), 22), timeout=0.3):
                return "%s.%d:22 already accepts connections (another PoD is up)" % (POD_PREFIX, number)
        except OSError:
            pass
    return None


def _podctl(*args):
    return subprocess.run([PODCTL] + list(args), capture_output=True, text=True, timeout=180, check=False)


def test_podctl_up_a3_lists_16_ports_per_node(tmp_path):
    reason = _pod_skip_reason()
    if reason:
        pytest.skip(reason)
    base, inventory = str(tmp_path / "pod"), str(tmp_path / "inventory" / "hosts.yml")
    try:
        proc = _podctl("up", "--nodes", "2", "--product", A3, "--base", base, "--address-prefix", POD_PREFIX,
                       "--inventory", inventory)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        with open(inventory) as handle:
            hosts = _yaml_hosts(handle.read())
        assert sorted(hosts) == ["node01", "node02"]
        for index, name in enumerate(sorted(hosts), 1):
            ports = hosts[name]["npuops_npu_ports"]
            assert [port["device"] for port in ports] == list(range(16))
            assert [port["address"] for port in ports] == [ports_mod.plan_ip(index, dev) for dev in range(16)]
        with open(os.path.join(base, "pod.json")) as handle:
            assert json.load(handle)["product"] == A3
        command = "npu-smi info -l; /usr/local/Ascend/driver/tools/hccn_tool -i 15 -ip -g"
        ssh = subprocess.run(["ssh", "-F", os.path.join(base, "ssh_config"), "node02", command],
                             capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL, check=False)
        assert ssh.returncode == 0, ssh.stderr
        assert ssh.stdout.count("Chip Count                     : 2") == 8 and "ipaddr:10.20.15.12\n" in ssh.stdout
        # the PoD keeps its product: another one needs 'podctl down' first
        proc = _podctl("up", "--nodes", "2", "--product", DUO, "--base", base, "--inventory", inventory)
        assert proc.returncode == 1 and "runs atlas-a3 nodes" in proc.stderr
    finally:
        _podctl("down", "--base", base)
