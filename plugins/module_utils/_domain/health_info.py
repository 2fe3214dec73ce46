# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What health_info reads: the npu_info, hccn_info, numa_info and host_info parts of one node in one module run.

A part that cannot be read is kept as data (``failed: true`` with the message, command, exit code
and output of the call that failed), so the health check can name it as a finding of the node
while the other parts are still read.
Python 3.9 compatible: this file runs on the managed nodes.
"""

from __future__ import annotations

import os
import re

from ansible_collections.npuops.ascend.plugins.module_utils._domain.container_check import check_container
from ansible_collections.npuops.ascend.plugins.module_utils._domain.hccn_info import gather as gather_ports
from ansible_collections.npuops.ascend.plugins.module_utils._domain.host_info import HostReader
from ansible_collections.npuops.ascend.plugins.module_utils._domain.npu_info import gather as gather_npu
from ansible_collections.npuops.ascend.plugins.module_utils._domain.npu_info import resolve_subsets
from ansible_collections.npuops.ascend.plugins.module_utils._domain.numa_info import gather as gather_numa
from ansible_collections.npuops.ascend.plugins.module_utils._tools.npu_smi import NpuSmi
from ansible_collections.npuops.ascend.plugins.module_utils._tools.runner import ModuleFailure, Runner, host_name

PARTS = ('npu', 'ports', 'numa', 'host_info', 'npu_again', 'env_files', 'container')

# NAME=value (or export NAME=value) at the start of a line, the value up to a blank or quote, quotes dropped
ASSIGNMENT_RE = re.compile(r'''^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=["']?([^"'\s]*)''', re.MULTILINE)
ENV_FILE_MAX_BYTES = 1 << 20


def failed_part(exc):
    """A part that could not be read, in the shape of a failed module result."""
    out = exc.result()
    out['failed'] = True
    return out


def read_npu(module, params, subsets, health_view, warnings, shared):
    """The npu part; its parsed table and node views go to ``shared`` for the parts after it (read once a run)."""
    npu_smi = NpuSmi.find(module, Runner(module, params['timeout']), params['npu_smi_path'], host_name())
    try:
        return gather_npu(npu_smi, subsets, params['devices'], params['workers'], health_view, shared.get('table'))
    finally:
        warnings.extend(npu_smi.warnings)
        if npu_smi.gathered_table is not None:
            shared.setdefault('table', npu_smi.gathered_table)
        if 'topo' in npu_smi.node_views:
            shared.setdefault('topo', npu_smi.node_views['topo'])


def port_params(params, found):
    """The hccn_info parameters: the NPUs the npu part found, so the port read does not list them again.

    An NPU with more than one chip (the dies of an A3 NPU) has one port per chip, whose ids are not the
    NPU ids: then the port read finds its devices itself (``npu-smi info -m``).
    """
    devices = params['devices']
    entries = (found.get('npu') or {}).get('devices') or {}
    if devices is None and entries and not any('dies' in entry for entry in entries.values()):
        devices = sorted(int(dev) for dev in entries)
    return dict(params, queries=params['port_queries'], devices=devices or params['devices'])


def without_ports(found):
    """The ports part when the npu part shows a product without RoCE ports: skipped, saying why; else None."""
    product = ((found.get('npu') or {}).get('summary') or {}).get('product') or {}
    if product.get('roce_ports') is not False:
        return None
    return {'skipped': True, 'changed': False, 'devices': {}, 'errors': [],
            'msg': 'skipped: the %s chips of this node (%s family) have no RoCE port for hccn_tool'
                   % ('/'.join(product.get('chip_names') or []) or 'NPU', product.get('family'))}


def read_env_files(paths):
    """The variables each shell file sets (its NAME=value lines, the last one of a name wins), without running it."""
    out = {}
    for path in paths:
        entry = {'exists': os.path.isfile(path), 'variables': {}}
        if entry['exists']:
            try:
                with open(path, 'rb') as handle:
                    text = handle.read(ENV_FILE_MAX_BYTES).decode('utf-8', errors='replace')
            except OSError as exc:
                entry['error'] = 'cannot read %s: %s' % (path, exc.strerror or exc)
            else:
                entry['variables'] = dict(ASSIGNMENT_RE.findall(text))
        out[path] = entry
    return out


def plan(module, params, warnings, found, shared=None):
    """The parts to read, in order: (result key, function); ``found`` holds the parts read so far, ``shared`` the
    npu-smi readings of the npu part that later parts reuse (the summary table, the topology)."""
    shared = {} if shared is None else shared
    parts = []
    if params['npu']:
        parts.append(('npu', lambda: read_npu(module, params, resolve_subsets(params['npu_subset']), params['health_view'],
                                              warnings, shared)))
    if params['ports']:
        parts.append(('ports', lambda: without_ports(found) or gather_ports(module, port_params(params, found), warnings)))
    if params['host']:
        parts.append(('numa', lambda: gather_numa(module, params, warnings, shared.get('topo'))))
        parts.append(('host_info', lambda: HostReader(module, warnings, params).gather()))
    if params.get('env_files'):
        parts.append(('env_files', lambda: read_env_files(params['env_files'])))
    if params.get('container', 'never') != 'never':
        parts.append(('container', lambda: check_container(params.get('container_root') or '/', params['container'],
                                                           container_npus(params, found))))
    if params['npu'] and params['ecc_again']:
        # last: the other parts took time since the first ECC read; the NPUs are those of the first table
        parts.append(('npu_again', lambda: read_ecc_again(module, params, warnings, shared, found)))
    return parts


def container_npus(params, found):
    """How many /dev/davinciN a container must have: ``container_npus``, else the NPUs the npu part listed, else 8."""
    if params.get('container_npus'):
        return params['container_npus']
    entries = (found.get('npu') or {}).get('devices') or {}
    return len(entries) or 8


def again_views(params):
    """The views the second read asks: the ECC counters, and the PCIe error counters when the first read had them."""
    views = set(['ecc'])
    if 'pcie_err' in resolve_subsets(params.get('npu_subset')):
        views.add('pcie_err')
    return views


def pcie_errors(view):
    """The sum of the error counters (``*_error_count``) of one NPU's ``pcie_err`` view."""
    return sum(value for chip in (view or {}).get('chips') or [] for key, value in chip.items()
               if key.endswith('error_count') and isinstance(value, int) and not isinstance(value, bool))


def single_bit_errors(ecc):
    """The current single-bit ECC error count of one NPU's ``ecc`` view, summed over its chips and memories."""
    return sum(value for chip in (ecc or {}).get('chips') or [] for key, value in chip.items()
               if key.endswith('_single_bit_error_count') and isinstance(value, int) and not isinstance(value, bool))


def ecc_again_devices(found):
    """The NPUs whose first read shows single-bit ECC errors or PCIe errors (sorted ids): the ones read again under
    scope ``errors``."""
    entries = (found.get('npu') or {}).get('devices') or {}
    return sorted(int(dev) for dev, entry in entries.items()
                  if isinstance(entry, dict) and (single_bit_errors(entry.get('ecc')) > 0 or pcie_errors(entry.get('pcie_err')) > 0))


def read_ecc_again(module, params, warnings, shared, found):
    """The npu_again part: the ECC counters (and the PCIe error counters, when read) once more, of every NPU (scope ``all``) or only of those whose first read
    showed single-bit errors (scope ``errors``: a healthy NPU costs no second call; errors that begin in the seconds
    between the two reads are left to the next run)."""
    if params.get('ecc_again_scope') != 'errors' or 'devices' not in (found.get('npu') or {}):
        # every NPU, also when the first read failed (nothing to choose from: the second read says what fails now)
        return read_npu(module, params, again_views(params), 'all', warnings, shared)
    devices = ecc_again_devices(found)
    if params['devices'] is not None:
        devices = [dev for dev in devices if dev in params['devices']]
    if not devices:
        return {'changed': False, 'count': 0, 'devices': {}, 'errors': [],
                'msg': 'no NPU showed single-bit ECC errors or PCIe errors in the first read, so none was read again'}
    return read_npu(module, dict(params, devices=devices), again_views(params), 'all', warnings, shared)


def read_health(module, params, warnings):
    """Read every part; never raises for a part that cannot be read."""
    result = dict((key, None) for key in PARTS)
    failed = []
    found = {}
    for key, read in plan(module, params, warnings, found):
        try:
            result[key] = found[key] = read()
        except ModuleFailure as exc:
            result[key] = failed_part(exc.at(host_name()))
            failed.append(key)
    result.update(changed=False, failed_parts=failed)
    return result
