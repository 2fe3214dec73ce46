# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""npu-smi, the device tool of the Ascend driver: everything the collection knows about it.

One home for: the argv of the views the collection reads; device discovery (``npu-smi info -l``);
the NPU processes of the summary table (the busy check before a port change); its error texts
and hints; and :class:`NpuSmi`, which runs it for a task.

npu-smi prints its errors on stdout; its exit code is the negative npu-smi code modulo 256.
Sources of the texts: tests/fixtures/captures/npu-smi_errors.txt.
Python 3.9 compatible: this file runs on the managed nodes.
"""

from __future__ import annotations

import re

from ansible_collections.npuops.ascend.plugins.module_utils._parsers import npu_smi as parsers
from ansible_collections.npuops.ascend.plugins.module_utils._parsers._common import lines_of
from ansible_collections.npuops.ascend.plugins.module_utils._tools.runner import (
    ModuleFailure,
    ToolError,
    cmd_to_text,
    failed_call,
    find_tool,
    parse_output,
    unparsed_warning,
    where,
)

NAME = 'npu-smi'
MISSING_HINT = 'the Ascend driver (npu-smi) may be missing or not installed'

# Per-device views: subset name -> (`npu-smi info -t <view> -i <N>` view, parser key).
DEVICE_VIEWS = {
    'board': ('board', 'board'),
    'health': ('health', 'health'),
    'ecc': ('ecc', 'ecc'),
    'temp': ('temp', 'temp'),
    'power': ('power', 'power'),
    'usages': ('usages', 'usages'),
    'common': ('common', 'common'),
    'pcie_err': ('pcie-err', 'pcie_err'),
    'memory': ('memory', 'memory'),
}
# Node-wide views: subset name -> (argv after the binary, parser key); one call for all devices.
NODE_VIEWS = {
    'topo': (['info', '-t', 'topo'], 'topo'),
    'mapping': (['info', '-m'], 'mapping'),
}

DEFAULT_HINT = 'Run the command on the host to see the full error, and check the driver with `npu-smi info`.'
_CARD_HINT = 'The NPU id does not exist on this host: compare the requested devices with `npu-smi info -l`.'

# (pattern, kind, hint); first match wins, line by line.
ERRORS = (
    (r'Invalid card id', 'invalid_card', _CARD_HINT),
    (r'Invalid chip id', 'invalid_chip', 'The chip id does not exist on this NPU: check `npu-smi info -m`.'),
    (r'because the device is used', 'device_busy',
     'Another process or container holds the NPU: stop it, or run this where the device is visible.'),
    (r'dcmi mod\w+ initiali[sz]e', 'dcmi_init_failed',
     'The driver is not loaded or not usable: check the driver installation, dmesg and `npu-smi info`.'),
    (r'This device does not support querying', 'not_supported',
     'This driver or product does not offer that view: remove it from the request.'),
    (r'Command or option is not found', 'invalid_command', 'This npu-smi does not know that option: check `npu-smi -h`.'),
    (r'There is no NPU card on this server', 'no_card',
     'No NPU is visible: check the driver installation and, in a container, the device mounts.'),
    (r'npu get board type failed', 'board_type_failed', DEFAULT_HINT),
    (r'Failed to query', 'query_failed', DEFAULT_HINT),
    (r'Failed to execute npu-smi', 'failed', DEFAULT_HINT),
)
_COMPILED = tuple((re.compile(pattern, re.I), kind, hint) for pattern, kind, hint in ERRORS)


def classify_error(text):
    """What an error text of npu-smi means.

    Sample (``npu-smi info -t board -i 9`` on an 8-NPU host, printed on stdout)::

        Invalid card id.
        Error parameter of -i
        Usage: npu-smi info <watch|proc|-h|-m|-l|-t type> [Options...]

    Returns ``{'error': 'invalid_card', 'message': 'Invalid card id.', 'code': None, 'hint': ...}``
    (``code`` is the ``ret is -8020`` number when printed), or None when no known error is found.
    """
    for line in lines_of(text):
        for pattern, kind, hint in _COMPILED:
            if pattern.search(line):
                code = re.search(r'ret is (-?\d+)', line)
                return {'error': kind, 'message': line.strip(), 'code': int(code.group(1)) if code else None, 'hint': hint}
    return None


def hint_for(stdout, stderr=''):
    error = classify_error('%s\n%s' % (stdout or '', stderr or ''))
    return error['hint'] if error else DEFAULT_HINT


def device_ids(parsed):
    """NPU ids from a parsed ``info`` table or ``info -l`` listing, in order, without duplicates."""
    ids = []
    for item in parsed.get('devices') or []:
        npu = item.get('npu') if isinstance(item, dict) else item
        if isinstance(npu, int) and not isinstance(npu, bool) and npu not in ids:
            ids.append(npu)
    return ids


def logic_ids(mapping):
    """Chip logic ids of a parsed ``npu-smi info -m``, in order, without MCU rows or duplicates."""
    ids = []
    for row in mapping.get('devices') or []:
        logic = row.get('logic_id') if isinstance(row, dict) else None
        if isinstance(logic, int) and not isinstance(logic, bool) and logic not in ids and str(row.get('name')).strip().lower() != 'mcu':
            ids.append(logic)
    return ids


class NpuSmi:
    """npu-smi for one task. Collects parser warnings in ``warnings``; raises ToolError."""

    def __init__(self, runner, path, host=None):
        self.runner = runner
        self.path = path
        self.host = host
        self.version = None
        self.warnings = []
        # what the last npu_info gather parsed (the summary table and the node-wide views)
        self.gathered_table = None
        self.node_views = {}

    @classmethod
    def find(cls, module, runner, override=None, host=None, then=''):
        """Locate the binary (``override`` is the module's ``npu_smi_path``)."""
        return cls(runner, find_tool(module, NAME, override, missing_hint=MISSING_HINT, then=then), host)

    # argv -------------------------------------------------------------------------------------
    def info_argv(self):
        return [self.path, 'info']

    def list_argv(self):
        return [self.path, 'info', '-l']

    def view_argv(self, subset, device):
        return [self.path, 'info', '-t', DEVICE_VIEWS[subset][0], '-i', str(device)]

    def node_view_argv(self, subset):
        return [self.path] + NODE_VIEWS[subset][0]

    # calls ------------------------------------------------------------------------------------
    def check(self, argv, result, device=None, then=''):
        """stdout of a finished call; a ToolError naming host, device, command and hint when it failed."""
        if isinstance(result, ModuleFailure):
            raise result.at(self.host, device)
        if isinstance(result, BaseException):
            raise result
        rc, out, err = result
        if rc != 0:
            raise failed_call(argv, rc, out, err, hint=hint_for(out, err), subject=where(self.host, device), then=then)
        return out

    def run(self, argv, device=None, then=''):
        try:
            result = self.runner.run(argv, read=True)  # npu-smi is only ever asked to show
        except ModuleFailure as exc:
            exc.at(self.host, device)
            raise
        return self.check(argv, result, device, then)

    def parse(self, key, argv, text):
        """Parse with the npu-smi parser ``key``; unknown lines become warnings."""
        data, unparsed = parse_output(parsers.PARSERS[key], argv, text)
        for warning in data.pop('warnings', None) or []:
            self.warnings.append('%s: %s' % (cmd_to_text(argv), warning))
        if unparsed:
            self.warnings.append(unparsed_warning(argv, unparsed, self.version))
        return data

    def table(self, then=''):
        """The parsed ``npu-smi info`` summary table (devices, processes, version)."""
        argv = self.info_argv()
        data = self.parse('info', argv, self.run(argv, then=then))
        self.version = data.get('version') or self.version
        return data

    def listing(self, then=''):
        """The parsed ``npu-smi info -l`` and its NPU ids; a ToolError when it fails or lists none."""
        argv = self.list_argv()
        out = self.run(argv, then=then)
        parsed = self.parse('list', argv, out)
        ids = device_ids(parsed)
        if not ids:
            text = '%s lists no NPU. Check the driver installation.' % cmd_to_text(argv)
            raise ToolError(cmd=argv, rc=0, stdout=out, subject=where(self.host), msg=text + (' ' + then if then else ''))
        return parsed, ids

    def list_devices(self, then=''):
        """NPU ids from ``npu-smi info -l``; a ToolError when it fails or lists none."""
        return self.listing(then)[1]

    def port_devices(self, then=''):
        """Device ids of the NPU ports (what ``hccn_tool -i`` takes), in order.

        With one chip per NPU they are the NPU ids of ``npu-smi info -l``. An NPU with more chips
        (the two dies of an A3 NPU, a 310P Duo card) has one device per chip: their logic ids come
        from ``npu-smi info -m`` (MCU rows have no logic id and are left out).
        """
        parsed, ids = self.listing(then)
        counts = [item.get('chip_count') for item in parsed.get('devices') or [] if isinstance(item, dict)]
        if not any(isinstance(count, int) and count > 1 for count in counts):
            return ids
        argv = self.node_view_argv('mapping')
        mapping = self.parse('mapping', argv, self.run(argv, then=then))
        return logic_ids(mapping) or ids

    def processes(self, devices, then=''):
        """NPU processes of ``npu-smi info`` on ``devices``: [{device, pid, name}]."""
        found = []
        for proc in self.table(then=then).get('processes') or []:
            if proc.get('npu') in devices:
                found.append({'device': proc.get('npu'), 'pid': proc.get('pid'), 'name': proc.get('name')})
        return found


def discover_devices(module, runner, requested=None, npu_smi_path=None, host=None, fallback=None, then=''):
    """The port device ids a task works on: ``requested`` when given, else those npu-smi lists (``port_devices``).

    ``fallback`` ids are used when discovery fails and the caller allows it.
    Returns (ids, warnings).
    """
    if requested:
        ids = []
        for device in requested:
            if device not in ids:
                ids.append(device)
        return ids, []
    try:
        tool = NpuSmi.find(module, runner, npu_smi_path, host, then=then)
        return tool.port_devices(then=then), tool.warnings
    except ModuleFailure:
        if fallback:
            return list(fallback), []
        raise
