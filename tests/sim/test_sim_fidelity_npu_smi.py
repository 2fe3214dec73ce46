"""Fidelity: the simulator prints the real npu-smi samples byte for byte (stdout, exit code)."""

import pytest

from simhelpers import assert_segments, detab, sample, text

INFO = "npu-smi_info.txt"


def _cells(line):
    return [cell.strip() for cell in line.split("|")[1:-1]]


def _load_table(sim, lines):
    """Set the node state from the values of a real `npu-smi info` table."""
    version = lines[1].split()[2]
    sim.data["versions"]["driver"] = version
    rows = [line for line in lines if line.startswith("| ") and "Name" not in line and "Chip " not in line]
    npu_rows = [line for line in rows if len(_cells(line)) == 3]
    proc_rows = [line for line in rows if len(_cells(line)) in (4, 5) and "Process" not in line]
    for first, second in zip(npu_rows[0::2], npu_rows[1::2]):
        c1, c2 = _cells(first), _cells(second)
        dev, name = c1[0].split()
        npu = sim.npu(int(dev))
        npu["name"] = name
        npu["health"] = c1[1]
        power, temp, hp_used, hp_total = c1[2].replace("/", " ").split()
        npu["power_w"], npu["temp_c"], npu["hugepages"] = float(power), int(temp), [int(hp_used), int(hp_total)]
        aicore, mem_used, mem_total, hbm_used, hbm_total = c2[2].replace("/", " ").split()
        npu["bus_id"] = c2[1]
        npu["aicore_pct"] = int(aicore)
        npu["memory_mb"] = [int(mem_used), int(mem_total)]
        npu["hbm_mb"] = [int(hbm_used), int(hbm_total)]
    for line in proc_rows:
        cells = _cells(line)
        dev = int(cells[0].split()[0])
        proc = {"pid": int(cells[1]), "name": cells[2], "memory_mb": int(cells[3])}
        if len(cells) == 5 and cells[4] != "NA":
            proc["container_pid"] = int(cells[4])
        sim.npu(dev)["processes"].append(proc)
    sim.save()


@pytest.mark.parametrize("source", ["vllm-ascend issue #198", "vllm-ascend issue #5111"])
def test_info_table_exact(sim, source):
    lines = sample(INFO, source)
    _load_table(sim, lines)
    rc, out, err = sim.run("npu-smi", "info")
    assert (rc, err) == (0, "")
    assert out == text(lines)
    assert all(len(line) == 98 for line in out.splitlines())


INFO_26 = "npu-smi_info_26x.txt"


def test_info_table_26x_exact(sim):
    # driver 26.x: the 116-column table and a fifth process cell, "Process id in container" (NA: a process of the host)
    lines = sample(INFO_26, "yuantao313/no_root_manager")
    _load_table(sim, lines)
    assert sim.data["versions"]["driver"] == "26.1.0"
    rc, out, err = sim.run("npu-smi", "info")
    assert (rc, err) == (0, "")
    assert out == text(lines)
    assert all(len(line) == 116 for line in out.splitlines())


def test_info_table_26x_idle_and_a_container_pid(sim):
    # 26.0.rc1 on one idle 910B4 (the simulated node has 8 NPUs: the first NPU's rows and the idle process rows)
    lines = sample(INFO_26, "triton-ascend")
    sim.data["npus"][0]["name"] = "910B4"
    _load_table(sim, lines)
    rc, out, _err = sim.run("npu-smi", "info")
    assert rc == 0 and out.startswith(text(lines[:8]))
    assert text(lines[8:]) in out
    # a process started in a container shows its pid there (the row format of the real rows above)
    sim.npu(5)["processes"] = [{"pid": 1712733, "name": "sglangschedul", "memory_mb": 48954, "container_pid": 4242}]
    sim.save()
    row = [line for line in sim.run("npu-smi", "info")[1].splitlines() if "sglangschedul" in line]
    assert row == ["| 5       0                 | 1712733       | sglangschedul      | 48954                 | 4242                    |"]


def test_the_layout_follows_the_driver_version_of_the_node(sim):
    rc, out, _err = sim.sub("npu-smi", "info")
    assert rc == 0 and "Process id in container" not in out and len(out.splitlines()[0]) == 98
    assert sim.sub("npu-sim", "fault", "set", "version", "--value", "driver=26.0.rc1")[0] == 0
    out = sim.sub("npu-smi", "info")[1]
    assert "Process id in container" in out and {len(line) for line in out.splitlines()} == {116}
    assert sim.sub("npu-sim", "fault", "clear", "version")[0] == 0
    assert "Process id in container" not in sim.sub("npu-smi", "info")[1]


def test_info_table_without_process_section(sim):
    # ms-swift docs: the author omitted the process table, so the sample is a prefix of the output.
    lines = sample(INFO, "modelscope/ms-swift")
    _load_table(sim, lines)
    rc, out, _err = sim.run("npu-smi", "info")
    assert rc == 0 and out.startswith(text(lines))


def test_info_table_elided(sim):
    # arthurchiao.art: NPUs 2-6 elided with '...' and no process table: compare the visible segments.
    lines = sample(INFO, "arthurchiao.art")
    _load_table(sim, [line for line in lines if line != "..."])
    rc, out, _err = sim.run("npu-smi", "info")
    assert rc == 0
    assert_segments(lines, out)


def test_info_list(sim):
    lines = detab(sample("npu-smi_info_-l.txt", "Atlas 800I A2"))
    rc, out, err = sim.run("npu-smi", "info", "-l")
    assert (rc, err) == (0, "")
    assert out == text(lines, tail="\n")  # "\t%-30s : %d\n\n" after Chip Count (source)


def test_info_mapping(sim):
    lines = detab(sample("npu-smi_info_-m.txt", "Atlas 800I A2"))
    for npu in sim.data["npus"]:
        npu["name"] = lines[1].split()[-1]
    sim.save()
    rc, out, _err = sim.run("npu-smi", "info", "-m")
    assert rc == 0 and out == text(lines)


def _kv(lines):
    pairs = []
    for line in lines:
        key, _sep, value = line.strip().partition(" : ")
        pairs.append((key.strip(), value))
    return pairs


def test_board_card_level(sim):
    lines = detab(sample("npu-smi_info_-t_board.txt", "yunionio/telegraf"))
    values = dict(_kv(lines))
    npu = sim.npu(0)
    board = npu["board"]
    for key, field in (("Product Name", "product_name"), ("Model", "model"), ("Manufacturer", "manufacturer"),
                       ("Serial Number", "serial_number"), ("Compatibility", "compatibility"), ("Board ID", "board_id"),
                       ("PCB ID", "pcb_id"), ("BOM ID", "bom_id"), ("Slot ID", "slot_id"), ("Class ID", "class_id"),
                       ("PCI Vendor ID", "pci_vendor_id"), ("PCI Device ID", "pci_device_id"),
                       ("Subsystem Vendor ID", "subsystem_vendor_id"), ("Subsystem Device ID", "subsystem_device_id")):
        board[field] = values[key]
    sim.data["versions"]["driver"] = values["Software Version"]
    sim.data["versions"]["firmware"] = values["Firmware Version"]
    npu["bus_id"] = values["PCIe Bus Info"]
    sim.save()
    rc, out, _err = sim.run("npu-smi", "info", "-t", "board", "-i", "0")
    assert rc == 0 and out == text(lines)


def test_board_chip_level_910a_fixture(sim):
    # Chip-level layout is the same on 910A and 910B; the fixture has real TABs.
    lines = [line for line in sample("npu-smi_info_-t_board.txt", "lines 81-94") if not line.startswith("/usr/")]
    values = dict(_kv(lines))
    npu = sim.npu(0)
    npu["name"] = values["Chip Name"]
    npu["chip"].update({"chip_type": values["Chip Type"], "chip_version": values["Chip Version"], "pcb_id": values["PCB ID"],
                        "vdie_id": values["VDie ID"], "ndie_id": values["NDie ID"], "position_id": values["Chip Position ID"]})
    npu["board"].update({"board_id": values["Board ID"], "bom_id": values["BOM ID"]})
    npu["bus_id"] = values["PCIe Bus Info"]
    sim.data["versions"]["firmware"] = values["Firmware Version"]
    sim.save()
    rc, out, _err = sim.run("npu-smi", "info", "-i", "0", "-c", "0", "-t", "board")
    assert rc == 0 and out == text(lines)


def test_board_chip_level_910b4_truncated(sim):
    lines = sample("npu-smi_info_-t_board.txt", "SoC Model")
    first = lines.index("[root@localhost ~]$ npu-smi info -t board -i 0 -c 0")
    block = detab(lines[first + 1:lines.index("[root@localhost ~]$ npu-smi info -t board -i 0 -c 0", first + 1)])
    sim.npu(0)["name"] = dict(_kv(block))["Chip Name"]
    sim.save()
    rc, out, _err = sim.run("npu-smi", "info", "-t", "board", "-i", "0", "-c", "0")
    assert rc == 0 and out.startswith(text(block))  # the guide truncates after Chip Name


@pytest.mark.parametrize("source", ["npu_info_before.txt lines 155-158", "npu_info_after.txt lines 29-36"])
def test_health(sim, source):
    lines = [line for line in sample("npu-smi_info_-t_health.txt", source) if not line.startswith("/usr/")]
    status = lines[0].split(" : ")[1]
    codes = lines[1].split(":", 1)[1].split()
    texts = [line.split(" : ", 1)[1] for line in lines[2:] if " : " in line]
    npu = sim.npu(0)
    npu["health"] = status
    npu["error_codes"] = [] if codes == ["NA"] else [[int(code, 16), info] for code, info in zip(codes, texts)]
    sim.save()
    rc, out, _err = sim.run("npu-smi", "info", "-i", "0", "-c", "0", "-t", "health")
    assert rc == 0 and out == text(lines)


def test_ecc_910b_body(sim):
    lines = detab(sample("extra_npu-smi_info_-t_ecc.txt", "querying-the-ecc-error-count"))
    rc, out, _err = sim.run("npu-smi", "info", "-t", "ecc", "-i", "0")
    assert rc == 0 and out == text(lines)


def test_temp(sim):
    lines = detab(sample("npu-smi_info_-t_temp.txt", "yunionio/telegraf"))
    values = _kv(lines)
    sim.npu(0)["temp_c"] = int(dict(values)["NPU Temperature (C)"])
    sim.npu(0)["mcu_temps"] = [[key, int(val)] for key, val in values if key.startswith("LM75")]
    sim.save()
    rc, out, _err = sim.run("npu-smi", "info", "-t", "temp", "-i", "0")
    assert rc == 0 and out == text(lines, tail="\n")


def test_power(sim):
    lines = detab(sample("npu-smi_info_-t_power.txt", "yunionio/telegraf"))
    sim.npu(0)["power_w"] = float(dict(_kv(lines))["NPU Real-time Power(W)"])
    sim.save()
    rc, out, _err = sim.run("npu-smi", "info", "-t", "power", "-i", "0")
    assert rc == 0 and out == text(lines, tail="\n")


def test_usages(sim):
    lines = detab(sample("npu-smi_info_-t_usages.txt", "yunionio/telegraf"))
    values = dict(_kv(lines))
    npu = sim.npu(0)
    npu["hbm_mb"] = [int(values["HBM Capacity(MB)"]) * int(values["HBM Usage Rate(%)"]) // 100 + 1, int(values["HBM Capacity(MB)"])]
    npu["aicore_pct"] = int(values["Aicore Usage Rate(%)"])
    npu["usages"].update({"ctrlcpu_pct": int(values["Ctrlcpu Usage Rate(%)"]), "aicpu_pct": int(values["Aicpu Usage Rate(%)"])})
    sim.save()
    rc, out, _err = sim.run("npu-smi", "info", "-t", "usages", "-i", "0")
    assert rc == 0 and out == text(lines, tail="\n")


def test_common(sim):
    lines = detab(sample("npu-smi_info_-t_common.txt", "gpustack"), spaces=4)
    values = dict(_kv(lines))
    npu = sim.npu(0)
    npu["usages"]["memory_usage_pct"] = int(values["Memory Usage Rate(%)"])
    npu["hbm_mb"] = [0, 65536]
    npu["aicore_freq_mhz"] = int(values["Aicore Freq(MHZ)"])
    npu["aicore_cur_freq_mhz"] = int(values["Aicore curFreq(MHZ)"])
    npu["aicore_count"] = int(values["Aicore Count"])
    npu["temp_c"] = int(values["Temperature(C)"])
    npu["power_w"] = float(values["NPU Real-time Power(W)"])
    sim.save()
    rc, out, _err = sim.run("npu-smi", "info", "-t", "common", "-i", "0")
    assert rc == 0 and out == text(lines)


def test_topo(sim):
    lines = [line for line in sample("npu-smi_info_-t_topo.txt", "ms-swift") if not line.startswith("(valle)")]
    for line in lines[1:9]:
        dev = int(line.split()[0][3:])
        sim.npu(dev)["numa_node"] = int(line.split()[-1].split("-")[0]) // 24
    sim.save()
    rc, out, _err = sim.run("npu-smi", "info", "-t", "topo")
    assert rc == 0 and out == text(lines)


def test_proc_mem_a2_fixture(sim):
    lines = detab(sample("extra_npu-smi_info_-t_proc-mem.txt", "test_parse_a2_npu_smi_status_with_process"))
    proc = lines[1].strip()
    pid = int(proc.split("Process id:")[1].split()[0])
    name = proc.split("Process name:")[1].split()[0]
    mem = int(proc.split("Process memory(MB):")[1])
    sim.npu(0)["processes"] = [{"pid": pid, "name": name, "memory_mb": mem}]
    sim.save()
    rc, out, _err = sim.run("npu-smi", "info", "-t", "proc-mem", "-i", "0")
    assert rc == 0 and out == text(lines)


def test_proc_mem_single_line(sim):
    line = sample("npu-smi_info_-t_proc-mem.txt", "device-queries.md")[0]
    sim.npu(0)["processes"] = [{"pid": 207795, "name": "VLLMEngineCor", "memory_mb": 55436}]
    sim.save()
    rc, out, _err = sim.run("npu-smi", "info", "-t", "proc-mem", "-i", "0")
    assert rc == 0 and "\t" + line in out.splitlines()


def test_proc_mem_idle(sim):
    rc, out, _err = sim.run("npu-smi", "info", "-t", "proc-mem", "-i", "3")
    assert out.splitlines()[1] == "\tNo process in device."


def test_memory_body(sim):
    lines = sample("extra_npu-smi_info_-t_memory.txt", "awesome-ascend-skills")
    values = dict(_kv(lines))
    sim.npu(0)["hbm"] = {"clock_mhz": int(values["HBM Clock Speed(MHz)"]), "temp_c": int(values["HBM Temperature(C)"]),
                         "manufacturer_id": int(values["HBM Manufacturer ID"], 16)}
    sim.save()
    rc, out, _err = sim.run("npu-smi", "info", "-t", "memory", "-i", "0")
    body = [line[1:] for line in out.splitlines()]
    assert rc == 0 and text(lines) in text(body)


def test_pcie_err(sim):
    lines = ["\t" + line for line in sample("extra_npu-smi_info_-t_pcie-err.txt", "Ascend_950_npu-smi")]
    values = dict(_kv(lines))
    sim.npu(0)["pcie_err"] = {"tx": int(values["TX Error Count"]), "rx": int(values["RX Error Count"]),
                              "lcrc": int(values["Lcrc Error Count"]), "ecrc": int(values["Ecrc Error Count"]),
                              "retry": int(values["Retry Count"])}
    sim.save()
    rc, out, _err = sim.run("npu-smi", "info", "-t", "pcie-err", "-i", "0")
    assert rc == 0 and out == text(lines)


def test_invalid_card_error_on_stdout(sim):
    lines = [line for line in sample("npu-smi_errors.txt", "card 0 missing") if not line.startswith("/usr/")]
    rc, out, err = sim.sub("npu-smi", "info", "-i", "9", "-t", "board")
    assert (rc, out, err) == (215, text(lines), "")
