#!/usr/bin/python
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: health_info
short_description: Read everything the stage 0 health check needs from one node in one task
version_added: 0.1.0
author:
  - npuops maintainers (@npuops)
description:
  - Reads, in one module run, what M(npuops.ascend.npu_info), M(npuops.ascend.hccn_info),
    M(npuops.ascend.numa_info) and M(npuops.ascend.host_info) read for the health check, then the ECC counters
    of every NPU once more, and returns each part under its own key in the shape that module returns.
  - One task instead of five saves four module starts on the node and four task rounds on the controller per
    node, which is what the health check of a large PoD spends most of its time on.
  - By default the per-device C(npu-smi info -t health) view is read only for NPUs whose row in the C(npu-smi
    info) table is not C(OK), and temperature and power come from that table; O(npu_subset) and O(health_view)
    bring the per-device views back.
  - A part that cannot be read does not fail the task. Its key holds C(failed=true) with the message, command,
    exit code and output of the call that failed, and the other parts are still read. The health check turns
    that into a finding for the node. Wrong arguments fail the task before anything is read.
  - Read-only; never reports a change.
options:
  npu:
    description:
      - Read the NPUs with C(npu-smi) (RV(npu)).
    type: bool
    default: true
  npu_subset:
    description:
      - The O(npuops.ascend.npu_info#module:gather_subset) of the NPU read.
    type: list
    elements: str
    choices: [all, board, health, ecc, temp, power, usages, common, topo, processes, pcie_err, memory, mapping]
    default: [board, health, ecc, topo, processes]
  health_view:
    description:
      - The O(npuops.ascend.npu_info#module:health_view) of the NPU read.
    type: str
    choices: [all, unhealthy]
    default: unhealthy
  ecc_again:
    description:
      - Read the ECC counters once more after every other part (RV(npu_again)), so that single-bit errors that grow
        in between can be told; O(ecc_again_scope) says of which NPUs. The NPUs and the summary table are those of
        the first read (the table is not read again); the NUMA part likewise reuses the topology the npu part read.
      - When O(npu_subset) has V(pcie_err), the PCIe error counters are read again as well, so that counters that
        grow can be told.
      - Needs O(npu).
    type: bool
    default: true
  ecc_again_scope:
    description:
      - The NPUs whose ECC counters O(ecc_again) reads again.
      - V(errors) reads only those whose first read shows single-bit ECC errors or PCIe errors (an NPU without any is
        not read twice; errors that begin in the seconds between the two reads are left to the next run). V(all) reads
        every NPU.
    type: str
    choices: [errors, all]
    default: errors
  ports:
    description:
      - Read the NPU ports with C(hccn_tool) (RV(ports)).
    type: bool
    default: true
  port_queries:
    description:
      - The O(npuops.ascend.hccn_info#module:queries) of the port read.
    type: list
    elements: str
    choices: [link, net_health, ip, gateway, netdetect, mtu, pfc, dscp_to_tc, tls, pfc_stat, optical, stat, lldp, link_stat, vnic]
    default: [link, ip, net_health, tls, pfc]
  host:
    description:
      - Read the NUMA layout (RV(numa)) and the host settings (RV(host_info)).
    type: bool
    default: true
  devices:
    description:
      - NPU ids to read. By default every NPU C(npu-smi) lists.
    type: list
    elements: int
  fallback_devices:
    description:
      - The O(npuops.ascend.hccn_info#module:fallback_devices) of the port read.
    type: list
    elements: int
  numactl_path:
    description:
      - Path of the C(numactl) binary, or of the directory holding it (see M(npuops.ascend.numa_info)).
    type: path
  lscpu_path:
    description:
      - Path of the C(lscpu) binary, or of the directory holding it (see M(npuops.ascend.numa_info)).
    type: path
  lspci_path:
    description:
      - Path of the C(lspci) binary or of its directory (see M(npuops.ascend.host_info)).
    type: path
  pci_vendor:
    description:
      - PCI vendor id of the NPUs, four hex digits.
    type: str
    default: 19e5
  env_files:
    description:
      - Absolute paths of shell files that set environment variables, such as the HCCL environment file that stage 5
        writes (C(/etc/profile.d/npuops-hccl.sh)). Each is read, not run. RV(env_files) gives the variables its
        C(NAME=value) and C(export NAME=value) lines set.
      - Saves a separate read of the file (a module run per node) where a role checks the file beside the ports.
    type: list
    elements: path
    default: []
  container:
    description:
      - Whether to check the NPU device nodes and the driver paths a container needs (RV(container)).
      - V(auto) checks them when the node is a container (C(/.dockerenv), C(/run/.containerenv), or a cgroup of
        PID 1 that names docker, kubepods, containerd, libpod, crio or lxc); V(always) checks them on any node;
        V(never) reads nothing.
      - Checked are C(/dev/davinci0) to C(/dev/davinciN-1) (N from O(container_npus)), C(/dev/davinci_manager),
        C(/dev/devmm_svm), C(/dev/hisi_hdc) (each must be a character device), C(/usr/local/Ascend/driver),
        C(/usr/local/dcmi), C(/usr/local/bin/npu-smi) and C(/etc/ascend_install.info). Symbolic links are not followed.
    type: str
    choices: [auto, always, never]
    default: auto
  container_root:
    description:
      - The directory the container check reads below (its C(/)); another tree only for tests.
    type: path
    default: /
  container_npus:
    description:
      - How many C(/dev/davinciN) a container must have. By default the number of NPUs the npu part lists, or 8
        when it lists none.
    type: int
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
    description: Linux nodes with the Ascend driver (npu-smi, hccn_tool) installed.
notes:
  - The parts are read one after the other; inside a part the per-device calls run concurrently, one call at a
    time per device for C(hccn_tool).
  - Needs the privileges the vendor tools need on the node, usually root (C(become=true)).
seealso:
  - module: npuops.ascend.npu_info
  - module: npuops.ascend.hccn_info
  - module: npuops.ascend.numa_info
  - module: npuops.ascend.host_info
"""

EXAMPLES = r"""
- name: Read everything the health check needs
  npuops.ascend.health_info:
  register: health

- name: Show the NPUs whose health is not OK and the ports that are down
  ansible.builtin.debug:
    msg:
      - "unhealthy: {{ health.npu.summary.unhealthy }}"
      - "down: {{ health.ports.devices | dict2items | rejectattr('value.link', 'equalto', 'UP') | map(attribute='key') | list }}"
  when: health.npu.summary is defined and health.ports.devices is defined

- name: Only the ports, with their MTU and PFC, and the host
  npuops.ascend.health_info:
    npu: false
    port_queries: [link, ip, net_health, mtu, pfc]
"""

RETURN = r"""
npu:
  description:
    - What M(npuops.ascend.npu_info) returns for O(npu_subset), or C(failed=true) with C(msg), C(cmd), C(rc),
      C(stdout) and C(stderr) when the NPUs could not be read. Null when O(npu) is false.
  returned: always
  type: dict
  sample: {count: 8, devices: {"0": {info: {health: OK, temp_c: 39}, ecc: {}}}, summary: {all_healthy: true}}
npu_again:
  description:
    - The second read of the ECC counters (M(npuops.ascend.npu_info) with C(gather_subset=[ecc])), or its failure.
      Null when O(ecc_again) or O(npu) is false. With O(ecc_again_scope=errors) it holds only the NPUs read again;
      when none was, C(count) is 0 and C(msg) says why.
  returned: always
  type: dict
ports:
  description:
    - What M(npuops.ascend.hccn_info) returns for O(port_queries), or its failure. Null when O(ports) is false.
  returned: always
  type: dict
  sample: {count: 8, devices: {"0": {link: UP, net_health: Success, address: 10.20.0.11}}, errors: []}
numa:
  description: What M(npuops.ascend.numa_info) returns, or its failure. Null when O(host) is false.
  returned: always
  type: dict
host_info:
  description: What M(npuops.ascend.host_info) returns, or its failure. Null when O(host) is false.
  returned: always
  type: dict
env_files:
  description:
    - Per path of O(env_files), C(exists) (a regular file), C(variables) (name to value; quotes removed, the last
      assignment of a name wins) and C(error) when the file exists but cannot be read. Null when O(env_files) is empty.
  returned: always
  type: dict
  sample: {/etc/profile.d/npuops-hccl.sh: {exists: true, variables: {HCCL_RDMA_SL: "4", HCCL_RDMA_TC: "132"}}}
container:
  description:
    - The container check (see O(container)). C(container) (the node is one), C(evidence) (what shows it),
      C(checked) (the mounts were looked at), C(devices) and C(driver_paths) (path to C(char), C(dir), C(file),
      C(link) or null when absent), C(missing_devices) (paths that are not a character device) and
      C(missing_driver_paths) (C(path) and the C(mount) option that brings it in). Null when O(container=never).
  returned: always
  type: dict
  sample: {container: true, evidence: /.dockerenv, checked: true, missing_devices: [/dev/davinci7],
           missing_driver_paths: [{path: /usr/local/dcmi, mount: "-v /usr/local/dcmi:/usr/local/dcmi:ro"}]}
failed_parts:
  description: The keys of the parts that could not be read.
  returned: always
  type: list
  elements: str
  sample: [ports]
"""

from ansible_collections.npuops.ascend.plugins.module_utils._argspec import build_module, execute, tool_options  # noqa: E402
from ansible_collections.npuops.ascend.plugins.module_utils._domain.hccn_info import ALL_QUERIES  # noqa: E402
from ansible_collections.npuops.ascend.plugins.module_utils._domain.health_info import read_health  # noqa: E402
from ansible_collections.npuops.ascend.plugins.module_utils._domain.host_info import pci_vendor_problem  # noqa: E402
from ansible_collections.npuops.ascend.plugins.module_utils._domain.npu_info import ALL_SUBSETS  # noqa: E402


def main():
    argument_spec = dict(
        npu=dict(type='bool', default=True),
        npu_subset=dict(type='list', elements='str', choices=['all'] + ALL_SUBSETS,
                        default=['board', 'health', 'ecc', 'topo', 'processes']),
        health_view=dict(type='str', choices=['all', 'unhealthy'], default='unhealthy'),
        ecc_again=dict(type='bool', default=True),
        ecc_again_scope=dict(type='str', choices=['errors', 'all'], default='errors'),
        ports=dict(type='bool', default=True),
        port_queries=dict(type='list', elements='str', choices=ALL_QUERIES, default=['link', 'ip', 'net_health', 'tls', 'pfc']),
        host=dict(type='bool', default=True),
        devices=dict(type='list', elements='int'),
        fallback_devices=dict(type='list', elements='int'),
        numactl_path=dict(type='path'),
        lscpu_path=dict(type='path'),
        lspci_path=dict(type='path'),
        pci_vendor=dict(type='str', default='19e5'),
        env_files=dict(type='list', elements='path', default=[]),
        container=dict(type='str', choices=['auto', 'always', 'never'], default='auto'),
        container_root=dict(type='path', default='/'),
        container_npus=dict(type='int'),
    )
    argument_spec.update(tool_options())
    module = build_module('health_info', argument_spec, supports_check_mode=True)
    problem = pci_vendor_problem(module.params['pci_vendor'])
    relative = [path for path in module.params['env_files'] if not path.startswith('/')]
    if relative and not problem:
        problem = ('env_files must be absolute paths (got %s); a relative one would be resolved against the remote login '
                   'directory' % ', '.join(relative))
    if problem:
        module.fail_json(msg='health_info: %s' % problem)
    execute(module, lambda warnings: read_health(module, module.params, warnings))


if __name__ == '__main__':
    main()
