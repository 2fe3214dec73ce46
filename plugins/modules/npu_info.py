#!/usr/bin/python
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: npu_info
short_description: Gather facts about the Ascend NPUs of a node with npu-smi
version_added: 0.1.0
author:
  - npuops maintainers (@npuops)
description:
  - Reads the state of every Ascend NPU of the node with C(npu-smi) and returns it as structured data.
  - One C(npu-smi info) call gives the driver version, the device list, the per-device summary row
    (health, power, temperature, AI Core use, HBM use, bus id) and the NPU processes.
  - Each selected O(gather_subset) adds one C(npu-smi info -t <view> -i <N>) call per device; these per-device
    calls run concurrently. C(topo) and C(mapping) are one call for the whole node.
  - Read-only; never reports a change.
  - A line of C(npu-smi) output that the parsers do not recognise is reported as a warning that names the
    command; please report it together with your driver version.
options:
  gather_subset:
    description:
      - What to read in addition to the C(npu-smi info) summary table.
      - V(all) selects every subset.
      - V(board) is C(-t board) (driver and firmware versions, serial number, PCIe bus).
      - V(health) is C(-t health) (health status, error codes and their text).
      - V(ecc) is C(-t ecc), V(temp) is C(-t temp), V(power) is C(-t power), V(usages) is C(-t usages),
        V(common) is C(-t common) (AI Core rated and current frequency, temperature, power), V(pcie_err) is
        C(-t pcie-err), V(memory) is C(-t memory); all per device.
      - V(topo) is C(-t topo) once for the node (HCCS links and CPU affinity per NPU).
      - V(mapping) is C(info -m) once for the node (chip and logic ids per NPU).
      - V(processes) returns the process table of C(npu-smi info) (no extra call).
    type: list
    elements: str
    choices: [all, board, health, ecc, temp, power, usages, common, topo, processes, pcie_err, memory, mapping]
    default: [board, health, usages, topo, processes]
  devices:
    description:
      - NPU ids (the C(NPU) column of C(npu-smi info)) to report.
      - By default every NPU listed by C(npu-smi info) (or by C(npu-smi info -l) when the table shows none).
      - An id that C(npu-smi) does not list fails the task before any per-device call.
    type: list
    elements: int
  health_view:
    description:
      - Which NPUs the V(health) subset reads C(-t health) (the error codes) for.
      - V(all) reads it for every NPU.
      - V(unhealthy) reads it only for the NPUs whose row in the C(npu-smi info) table is not C(OK); a healthy
        NPU's row already says C(OK), so this saves one call per healthy NPU. An NPU read this way has no
        C(health) key in RV(devices) when it is healthy.
    type: str
    choices: [all, unhealthy]
    default: all
extends_documentation_fragment:
  - npuops.ascend.tool_options
  - npuops.ascend.tool_options.group
  - npuops.ascend.attributes
  - npuops.ascend.attributes.info_module
  - npuops.ascend.attributes.actiongroup_npu
attributes:
  platform:
    support: full
    platforms: posix
    description: Linux nodes with the Ascend driver (npu-smi) installed.
notes:
  - Device keys in RV(devices) are strings (V('0') ... V('7')), as in every JSON result.
  - C(npu-smi) prints its errors on standard output; a failed call is reported with the tool's own text
    and its exit code (the negative npu-smi code modulo 256, for example 215 for C(-9001)).
  - Needs the privileges C(npu-smi) needs on the node, usually root (C(become=true)).
seealso:
  - module: npuops.ascend.hccn_info
  - module: npuops.ascend.numa_info
"""

EXAMPLES = r"""
- name: Read the NPU summary, board, health, usages, topology and processes
  npuops.ascend.npu_info:
  register: npu

- name: Stop when an NPU is not healthy
  ansible.builtin.assert:
    that: npu.summary.all_healthy
    fail_msg: "Unhealthy NPUs on {{ inventory_hostname }}: {{ npu.summary.unhealthy }}"

- name: Read only health and ECC counters of NPU 0 and 1, with a short timeout
  npuops.ascend.npu_info:
    gather_subset: [health, ecc]
    devices: [0, 1]
    timeout: 10

- name: Read everything npu-smi offers
  npuops.ascend.npu_info:
    gather_subset: all
  register: npu_all

- name: Show the driver and firmware versions
  ansible.builtin.debug:
    msg: "{{ npu_all.summary.driver_version }} / {{ npu_all.summary.firmware_version }}"
"""

RETURN = r"""
errors:
  description: Views that could not be read without failing the task (none today; every npu-smi failure fails it).
  returned: success
  type: list
  elements: dict
version:
  description: The npu-smi (driver) version from the title of the C(npu-smi info) table.
  returned: success
  type: str
  sample: 25.2.0
count:
  description: Number of NPUs reported in RV(devices).
  returned: success
  type: int
  sample: 8
devices:
  description:
    - One entry per reported NPU, keyed by the NPU id as a string.
    - Each entry has C(info) and one key per gathered per-device subset; values are the parser's fields with
      unit suffixes (C(_mb), C(_pct), C(_c), C(_w), C(_mhz)) and numbers as numbers.
  returned: success
  type: dict
  contains:
    info:
      description:
        - The row of the C(npu-smi info) table for this NPU (first chip).
        - Keys C(npu), C(chip), C(name), C(health), C(power_w), C(temp_c), C(aicore_pct), C(memory_used_mb),
          C(memory_total_mb), C(hbm_used_mb), C(hbm_total_mb), C(bus_id).
      type: dict
      returned: always
      sample: {npu: 0, chip: 0, name: 910B3, health: OK, power_w: 102.8, temp_c: 55, aicore_pct: 0,
               memory_used_mb: 0, memory_total_mb: 0, hbm_used_mb: 3338, hbm_total_mb: 65536, bus_id: "0000:C1:00.0"}
    board:
      description: C(npu-smi info -t board -i N) with snake_case keys (C(software_version) is the driver, C(firmware_version) the firmware).
      type: dict
      returned: when board is gathered
    health:
      description: C(npu-smi info -t health -i N) (health status, error codes, error information).
      type: dict
      returned: when health is gathered
    ecc:
      description: C(npu-smi info -t ecc -i N) (single and double bit error and isolated page counts).
      type: dict
      returned: when ecc is gathered
    temp:
      description: C(npu-smi info -t temp -i N).
      type: dict
      returned: when temp is gathered
    power:
      description: C(npu-smi info -t power -i N).
      type: dict
      returned: when power is gathered
    usages:
      description: C(npu-smi info -t usages -i N) (HBM capacity and usage, AI Core, AI CPU and control CPU use per chip).
      type: dict
      returned: when usages is gathered
    pcie_err:
      description: C(npu-smi info -t pcie-err -i N) (TX, RX, LCRC, ECRC error and retry counts).
      type: dict
      returned: when pcie_err is gathered
    memory:
      description: C(npu-smi info -t memory -i N) (HBM capacity, clock, temperature, manufacturer).
      type: dict
      returned: when memory is gathered
    topo:
      description: This NPU's row of C(npu-smi info -t topo) (C(links) to the other NPUs and C(cpu_affinity)).
      type: dict
      returned: when topo is gathered
      sample: {npu: 0, links: {NPU1: HCCS, NPU2: HCCS}, cpu_affinity: 144-167}
    mapping:
      description: This NPU's rows of C(npu-smi info -m) (C(chip), C(logic_id), C(name); MCU rows have C(logic_id) null).
      type: list
      elements: dict
      returned: when mapping is gathered
    dies:
      description:
        - Every row of this NPU in the summary table, when it has more than one (the two dies of an A3 NPU, the two
          chips of an Atlas 300I Duo card). RV(devices.info) is the first of them.
      type: list
      elements: dict
      returned: when the NPU has more than one chip
      sample: [{npu: 0, chip: 0, phy_id: 0, name: Ascend910, health: OK}, {npu: 0, chip: 1, phy_id: 1, name: Ascend910, health: OK}]
processes:
  description:
    - The process table of C(npu-smi info) for the reported NPUs.
    - C(container_pid) is the process id inside its container (the C(Process id in container) column of driver 26.x),
      null for a process of the host or when the table has no such column.
  returned: when processes is gathered
  type: list
  elements: dict
  sample: [{npu: 0, chip: 0, pid: 16143, name: VLLMWorker_DP, memory_mb: 43095, container_pid: null}]
summary:
  description: Conclusions over the reported NPUs.
  returned: success
  type: dict
  contains:
    all_healthy:
      description: True when every reported NPU shows C(OK) in the table and, when health is gathered, in C(-t health).
      type: bool
      returned: always
    unhealthy:
      description: NPU ids whose health is not C(OK).
      type: list
      elements: int
      returned: always
    busy:
      description: NPU ids that run at least one process (from the process table).
      type: list
      elements: int
      returned: always
    driver_version:
      description: The driver version (C(Software Version) of C(-t board) when gathered, else RV(version)).
      type: str
      returned: always
    firmware_version:
      description: The NPU firmware version of the first reported NPU (C(Firmware Version) of C(-t board)); null without board.
      type: str
      returned: always
    product:
      description:
        - The product family the chip names and the table layout show (C(A2), C(A3), C(910A), C(310P), C(310), C(310B), or
          C(unknown) for an unknown or mixed node), the number of NPUs and of chips (dies), the memory type, whether the
          chips have RoCE ports, the link inside the node (C(HCCS), C(HCCS+SIO) or C(PCIe)) and the RoCE C(limits)
          hccn_tool enforces (null without RoCE ports; C(assumed) when they are the 910B's, not known for the family).
      type: dict
      returned: always
      sample: {family: A3, known: true, chip_names: [Ascend910], npus: 8, chips: 16, dies_per_npu: 2, memory: HBM,
               roce_ports: true, intra_node_link: HCCS+SIO,
               limits: {tc_max: 3, pfc_priorities: 8, dscp_max: 63, mtu_min: 68, mtu_max: 9702, assumed: true}}
  sample: {all_healthy: true, unhealthy: [], busy: [0, 1], driver_version: 25.2.0, firmware_version: 7.8.0.6.201}
cmd:
  description: The failing command, on failure.
  returned: failure
  type: str
  sample: /usr/local/sbin/npu-smi info -t health -i 9
rc:
  description: The exit code of the failing command, on failure.
  returned: failure
  type: int
  sample: 215
stdout:
  description: Standard output of the failing command (npu-smi prints its errors there).
  returned: failure
  type: str
stderr:
  description: Standard error of the failing command.
  returned: failure
  type: str
"""

from ansible_collections.npuops.ascend.plugins.module_utils._argspec import build_module, execute, tool_options  # noqa: E402
from ansible_collections.npuops.ascend.plugins.module_utils._domain.npu_info import ALL_SUBSETS, DEFAULT_SUBSET, gather, resolve_subsets  # noqa: E402
from ansible_collections.npuops.ascend.plugins.module_utils._tools.npu_smi import NpuSmi  # noqa: E402
from ansible_collections.npuops.ascend.plugins.module_utils._tools.runner import Runner, host_name  # noqa: E402


def main():
    argument_spec = dict(
        gather_subset=dict(type='list', elements='str', choices=['all'] + ALL_SUBSETS, default=list(DEFAULT_SUBSET)),
        devices=dict(type='list', elements='int'),
        health_view=dict(type='str', choices=['all', 'unhealthy'], default='all'),
    )
    argument_spec.update(tool_options())
    module = build_module('npu_info', argument_spec, supports_check_mode=True)
    params = module.params

    def work(warnings):
        npu_smi = NpuSmi.find(module, Runner(module, params['timeout']), params['npu_smi_path'], host_name())
        try:
            return gather(npu_smi, resolve_subsets(params['gather_subset']), params['devices'], params['workers'], params['health_view'])
        finally:
            warnings.extend(npu_smi.warnings)

    execute(module, work)


if __name__ == '__main__':
    main()
