#!/usr/bin/python
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: hccn_config
short_description: Configure the RoCE ports of the Ascend NPUs (address, gateway, MTU, PFC, DSCP map, TLS) with hccn_tool
version_added: 0.1.0
author:
  - npuops maintainers (@npuops)
description:
  - Resource module for the parameter-plane (RoCE) port of each Ascend NPU of a node, driven by C(hccn_tool).
  - Reads the current values of the requested attributes of all requested devices concurrently (only the queries
    those attributes need), compares them with O(config) and builds the exact C(hccn_tool -s) command list.
    When nothing differs no command runs and the task reports no change.
  - Every request is validated before anything is set, and the whole task stops before the first set when any
    device's request is invalid. Address, netmask and gateway are checked with the Python standard library module
    C(ipaddress) on the managed node (C(netaddr) is only needed on the controller, by the IP-plan filters).
  - Before any set it refuses to touch a device that runs NPU processes (from C(npu-smi info)) unless O(allow_busy=true).
  - With O(backup=true) the before-state of the devices that will change is written as JSON before the first set, and
    its path is returned in RV(backup_file); O(restore_from) applies such a file again (used by the rollback playbook).
  - Devices are changed concurrently; on one device the commands run in a fixed order (IP, gateway, netdetect, MTU,
    PFC, DSCP map, TLS). After an MTU or PFC change the module polls C(hccn_tool -i N -link -g) every 0.5 s until the
    link is C(UP), for at most O(link_timeout) seconds.
  - Exit code 0 is not taken as proof, every value is read back and compared. A device whose value did not take
    effect, whose link did not come back, or whose command failed is reported in RV(failed_devices) and fails the task,
    together with RV(changed_devices) and the backup path.
  - A C(hccn_tool is busy, please try again.) answer (exit 11) is retried once after a short delay.
options:
  config:
    description:
      - The desired settings, one entry per device. Attributes that are left out are neither read nor changed.
    type: list
    elements: dict
    suboptions:
      device:
        description:
          - Device id, the C(-i) argument of C(hccn_tool) (on an Atlas 800T A2 the NPU ids 0 to 7).
        type: int
        required: true
      address:
        description:
          - IPv4 address of the port. Must be given together with O(config[].netmask); both are set by one
            C(hccn_tool -i N -ip -s address A netmask M).
          - Must be a host address of its subnet (not the network or broadcast address) and unique within O(config).
        type: str
      netmask:
        description:
          - Netmask of the port, dotted (V(255.255.255.0)) or as a prefix length (V(24)).
        type: str
      gateway:
        description:
          - Default gateway of the port, set with C(hccn_tool -i N -gateway -s gateway G).
          - Must lie in the subnet of the port address (the requested one, or the current one when the request has no
            address). The port must have, or get in the same task, an IP address.
        type: str
      netdetect:
        description:
          - Address probed by the port's network health check, set with C(hccn_tool -i N -netdetect -s address A).
        type: str
      mtu:
        description:
          - MTU of the port, 68 to 9702, set with C(hccn_tool -i N -mtu -s size N).
        type: int
      pfc_priorities:
        description:
          - Priorities (0 to 7) on which PFC is enabled; all others are disabled. At most 4 on the 910B.
          - V([]) disables PFC on every priority. Set with C(hccn_tool -i N -pfc -s bitmap b0,b1,...,b7).
        type: list
        elements: int
      dscp_to_tc:
        description:
          - DSCP to traffic class entries to set. DSCP values not listed are left as they are.
          - One C(hccn_tool -i N -dscp_to_tc -s dscp D tc T) per DSCP whose TC differs.
        type: list
        elements: dict
        suboptions:
          dscp:
            description: DSCP value, 0 to 63.
            type: int
            required: true
          tc:
            description:
              - Traffic class, 0 to 3. The 910B tool rejects 4 and higher (C(-dscp_to_tc -s dscp 33 tc 4) exits 10).
            type: int
            required: true
      tls:
        description:
          - Whether TLS is enabled on the port (C(hccn_tool -i N -tls -s enable 0|1)). All ports of a job must agree.
        type: bool
  state:
    description:
      - V(merged) reads the requested attributes and sets those that differ.
      - V(gathered) reads every attribute of the O(config) devices (only C(device) is used), or of the NPUs listed by
        C(npu-smi info -l) when O(config) is not given, and returns them in RV(gathered) in the O(config) shape.
        A query the port cannot answer (for example PFC while the link is down) gives null and a warning.
      - V(rendered) returns the commands for O(config) as if nothing were configured, in RV(rendered), without touching
        the node.
      - V(parsed) reads O(running_config) and returns it in the O(config) shape in RV(parsed), without touching the node.
      - There is no V(replaced) or V(overridden) because the factory defaults of these settings (notably the DSCP map) are not
        published for the 910B, so the module could not state honestly what "not configured" should become.
    type: str
    choices: [merged, gathered, rendered, parsed]
    default: merged
  running_config:
    description:
      - For O(state=parsed) only. Text captured from C(hccn_tool) GET commands, each output preceded by its command
        line, as printed by C(for i in 0 1 2 3 4 5 6 7; do echo "hccn_tool -i $i -ip -g"; hccn_tool -i $i -ip -g; done)
        for the queries C(ip), C(gateway), C(netdetect), C(mtu), C(pfc), C(dscp_to_tc) and C(tls).
      - The command line may carry a path or a C($ ) prompt. Blocks of other queries are ignored with a warning.
    type: str
  restore_from:
    description:
      - Path of a backup file written earlier by this module with O(backup=true). Its before-state becomes the request
        (O(state=merged) only; mutually exclusive with O(config)).
      - Values that were not set when the backup was taken cannot be cleared with C(hccn_tool); they are left as they
        are and reported as warnings.
    type: path
  allow_busy:
    description:
      - Change devices even while NPU processes run on them. Such processes may lose their connections.
      - When V(false) the task refuses to change a device listed with processes by C(npu-smi info), naming the device,
        the pid and the process name.
    type: bool
    default: false
  backup:
    description:
      - Write the current values of the devices that will change to O(backup_dir) before the first set, as
        C(hccn-<host>-<UTC timestamp>.json) with mode 0600.
    type: bool
    default: false
  backup_dir:
    description:
      - Directory for the backup files; created with mode 0700 when missing.
    type: path
    default: /var/lib/npuops/backup
  link_timeout:
    description:
      - Seconds to wait for the link to be C(UP) again after an MTU or PFC change, polling every 0.5 s.
    type: int
    default: 60
  timeout:
    description:
      - Seconds each C(hccn_tool) or C(npu-smi) call may take (through coreutils C(timeout -k 5)). V(0) disables it.
    type: int
    default: 30
  workers:
    description:
      - Maximum number of devices read or changed at the same time.
    type: int
    default: 8
  hccn_tool_path:
    description:
      - Path of the C(hccn_tool) binary or of its directory. When unset, C(/usr/local/Ascend/driver/tools),
        C(/usr/local/sbin), C(/usr/local/bin) and E(PATH) are searched.
    type: path
  npu_smi_path:
    description:
      - Path of the C(npu-smi) binary or of its directory, used for the busy check and by O(state=gathered) to list the
        devices. Searched like O(hccn_tool_path) when unset.
    type: path
attributes:
  check_mode:
    support: full
    description: Reads, validates and computes RV(commands) and the diff, then stops; nothing is set and no backup is written.
  diff_mode:
    support: full
    description: Returns one before/after diff per changed device (header C(NPU <n> on <host>)).
  platform:
    support: full
    platforms: posix
    description: Linux nodes with the Ascend driver (C(hccn_tool), C(npu-smi)); set commands need root.
notes:
  - The busy check assumes that the NPU id printed by C(npu-smi info) is the C(hccn_tool -i) device id, which holds on
    Atlas 800T/800I A2 (8 NPUs, one chip each).
  - RV(before) and RV(after) hold only the requested attributes; for O(config[].dscp_to_tc) only the requested DSCPs.
  - Needs root (C(become=true)) for the set commands.
seealso:
  - module: npuops.ascend.hccn_info
  - module: npuops.ascend.hccn_ping
"""

EXAMPLES = r"""
- name: Set the parameter-plane addresses and gateway of NPU 0 and 1
  npuops.ascend.hccn_config:
    config:
      - device: 0
        address: 10.20.0.10
        netmask: 255.255.255.0
        gateway: 10.20.0.1
        netdetect: 10.20.0.1
      - device: 1
        address: 10.20.1.10
        netmask: 255.255.255.0
        gateway: 10.20.1.1
        netdetect: 10.20.1.1
    backup: true
  register: npu_net

- name: Enable PFC on priority 4, map DSCP 33 to TC 3, jumbo MTU and TLS off on all 8 NPUs
  npuops.ascend.hccn_config:
    config: "{{ ports }}"
    backup: true
    link_timeout: 90
  vars:
    ports: >-
      {% set out = [] %}{% for i in range(8) %}{% set _ = out.append({'device': i, 'mtu': 9000, 'pfc_priorities': [4],
      'dscp_to_tc': [{'dscp': 33, 'tc': 3}], 'tls': false}) %}{% endfor %}{{ out }}

- name: Roll back to the values saved by the previous task
  npuops.ascend.hccn_config:
    restore_from: "{{ npu_net.backup_file }}"
    allow_busy: true

- name: Read the current settings of every NPU port
  npuops.ascend.hccn_config:
    state: gathered
  register: ports

- name: Show the commands a config would run on a blank node
  npuops.ascend.hccn_config:
    state: rendered
    config:
      - device: 3
        mtu: 9000
        pfc_priorities: [4]

- name: Turn captured hccn_tool output into structured config
  npuops.ascend.hccn_config:
    state: parsed
    running_config: "{{ lookup('ansible.builtin.file', 'node07-hccn.txt') }}"
"""

RETURN = r"""
before:
  description: The requested attributes of the requested devices as read before any change (O(state=merged)).
  returned: state is merged
  type: list
  elements: dict
  sample: [{device: 3, mtu: 1500, pfc_priorities: [], dscp_to_tc: [{dscp: 33, tc: 0}]}]
after:
  description:
    - The same attributes after the task. In check mode the predicted values; otherwise the values read back from the
      ports (null for a device that could not be read back).
  returned: state is merged
  type: list
  elements: dict
  sample: [{device: 3, mtu: 9000, pfc_priorities: [4], dscp_to_tc: [{dscp: 33, tc: 3}]}]
commands:
  description: The set commands that were (or in check mode would be) run, in order per device.
  returned: state is merged
  type: list
  elements: str
  sample: ["hccn_tool -i 3 -mtu -s size 9000", "hccn_tool -i 3 -pfc -s bitmap 0,0,0,0,1,0,0,0"]
changed_devices:
  description: Devices on which at least one set command succeeded (their state was modified).
  returned: state is merged
  type: list
  elements: int
  sample: [0, 1, 2]
failed_devices:
  description: Devices whose command failed, whose link did not come back, or whose value did not take effect.
  returned: state is merged
  type: list
  elements: int
  sample: [3]
errors:
  description: One entry per failed device with the message and the failing command, exit code and output.
  returned: when devices failed
  type: list
  elements: dict
  sample:
    - device: 3
      msg: "NPU 3 on node-07: PFC bitmap still 0,0,0,0,0,0,0,0 after setting priorities 4 (hccn_tool rc=0). ..."
      cmd: /usr/local/Ascend/driver/tools/hccn_tool -i 3 -pfc -g
      rc: 0
      stdout: ""
      stderr: ""
backup_file:
  description: Path of the backup written before the first set; null when none was written.
  returned: state is merged
  type: str
  sample: /var/lib/npuops/backup/hccn-node-07-20260101T120000Z.json
busy:
  description: NPU processes found on devices that would change (check mode, or with O(allow_busy=true)).
  returned: when processes were found
  type: list
  elements: dict
  sample: [{device: 3, pid: 12345, name: python3}]
gathered:
  description: Current settings per device in the O(config) shape (the full DSCP map).
  returned: state is gathered
  type: list
  elements: dict
rendered:
  description: The commands O(config) renders to, as if nothing were configured.
  returned: state is rendered
  type: list
  elements: str
  sample: ["hccn_tool -i 3 -mtu -s size 9000"]
parsed:
  description: O(running_config) in the O(config) shape.
  returned: state is parsed
  type: list
  elements: dict
cmd:
  description:
    - The failing command, when a read or the busy check failed.
    - When devices failed while applying, the command of the first failed device; RV(errors) has one per device.
  returned: failure
  type: str
rc:
  description: Exit code of the failing command.
  returned: failure
  type: int
stdout:
  description: Standard output of the failing command.
  returned: failure
  type: str
stderr:
  description: Standard error of the failing command.
  returned: failure
  type: str
"""

import json  # noqa: E402
import os  # noqa: E402
import time  # noqa: E402
from concurrent.futures import ThreadPoolExecutor  # noqa: E402

from ansible.module_utils.basic import AnsibleModule  # noqa: E402

from ansible_collections.npuops.ascend.plugins.module_utils import _state as st  # noqa: E402
from ansible_collections.npuops.ascend.plugins.module_utils._parsers import hccn_tool as hccn_parsers  # noqa: E402
from ansible_collections.npuops.ascend.plugins.module_utils._parsers import npu_smi as npu_parsers  # noqa: E402
from ansible_collections.npuops.ascend.plugins.module_utils._runner import (  # noqa: E402
    Runner,
    ToolError,
    cmd_to_text,
    find_tool,
    host_name,
    parse_output,
    sentence,
    tool_output,
    unparsed_warning,
)

POLL_INTERVAL = 0.5
BUSY_RETRY_DELAY = 1.0

# tool text -> what to do (first match wins)
HINTS = (
    ('permission denied', 'Run the task as root (become: true).'),
    ('Link status is down', 'The port link is down: check the cable, the optical module and the switch port.'),
    ('invalid device id', 'The device does not exist on this host: compare config with `npu-smi info -l`.'),
    ('device is not exist', 'The device does not exist on this host: compare config with `npu-smi info -l`.'),
    ('unknown option', 'This hccn_tool does not accept that syntax: check `hccn_tool -h` of your driver version.'),
    ('is conflicted', 'Another port already uses this address: choose a unique address.'),
    ("doesn't match", 'The gateway must be in the subnet of the port address.'),
    ('not supported on this product', 'This product or driver does not support the setting: remove it from config.'),
    ('out of the valid range', 'The driver rejected the value as out of range for this product.'),
    ('exceeds the maximum value', 'The driver limits the number of PFC priorities: request fewer.'),
    ('is busy', 'Another hccn_tool call holds the device: run the task again when it is idle.'),
)
DEFAULT_HINT = 'Run the command on the host to see the full error and check the port with `hccn_tool -i N -link -g`.'


class ApplyError(Exception):
    """Some devices failed while applying; ``result`` is what fail_json returns."""

    def __init__(self, msg, result):
        self.msg = msg
        self.result = result
        super().__init__(msg)


def hint_for(text):
    for needle, hint in HINTS:
        if needle.lower() in (text or '').lower():
            return hint
    return DEFAULT_HINT


def in_parallel(func, items, workers):
    """Run func(item) for every item in a bounded pool; results (or exceptions) in input order."""
    items = list(items)
    if not items:
        return []
    workers = max(1, min(int(workers or 1), len(items)))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(func, item) for item in items]
        out = []
        for future in futures:
            try:
                out.append(future.result())
            except Exception as exc:  # collected and reported per device by the caller
                out.append(exc)
        return out


class Ports:
    """hccn_tool access for one task: reads, sets with one busy retry, link polling."""

    def __init__(self, runner, tool, host):
        self.runner = runner
        self.tool = tool
        self.host = host

    def subject(self, device):
        return 'NPU %s on %s' % (device, self.host)

    def call(self, argv):
        """Run argv; retry once after a short delay when hccn_tool answers that it is busy."""
        return self.runner.run_retry_once(argv, st.is_busy, BUSY_RETRY_DELAY)

    def read(self, device, query, tolerate=False):
        """Return (values in module vocabulary, warnings). Raises ToolError unless tolerate."""
        argv = st.get_argv(self.tool, device, query)
        try:
            rc, out, err = self.call(argv)
        except ToolError as exc:
            exc.msg = '%s: %s' % (self.subject(device), exc.msg)
            raise
        if rc != 0:
            if st.is_not_configured(query, rc, out, err):
                return st.have_from_parsed(query, None), []
            words = tool_output(out, err)
            msg = '%s: %s failed (rc=%s): %s %s' % (self.subject(device), cmd_to_text(argv), rc, sentence(words), hint_for(words))
            if tolerate:
                return st.have_from_parsed(query, None), [msg]
            raise ToolError(cmd=argv, rc=rc, stdout=out, stderr=err, msg=msg + ' Nothing was changed.')
        parsed, unparsed = parse_output(hccn_parsers.PARSERS[query], argv, out)
        warnings = [unparsed_warning(argv, unparsed)] if unparsed else []
        return st.have_from_parsed(query, parsed), warnings

    def read_device(self, device, queries, tolerate=False):
        have = {'device': device}
        warnings = []
        for query in queries:
            values, more = self.read(device, query, tolerate)
            have.update(values)
            warnings.extend(more)
        return have, warnings

    def wait_link_up(self, device, timeout):
        """Poll `-link -g` every POLL_INTERVAL s until UP; return (up, last_output)."""
        argv = st.link_argv(self.tool, device)
        deadline = time.monotonic() + max(0, timeout)
        last = ''
        while True:
            rc, out, err = self.call(argv)
            last = tool_output(out, err)
            if rc == 0:
                parsed, dummy = parse_output(hccn_parsers.PARSERS['link'], argv, out)
                if str(parsed.get('link', '')).upper() == 'UP':
                    return True, last
            if time.monotonic() >= deadline:
                return False, last
            time.sleep(POLL_INTERVAL)


def read_all(ports, plan, workers, tolerate=False):
    """plan: list of (device, queries). Returns ({device: have}, warnings); raises the first ToolError."""
    results = in_parallel(lambda item: ports.read_device(item[0], item[1], tolerate), plan, workers)
    haves = {}
    warnings = []
    for (device, _queries), result in zip(plan, results):
        if isinstance(result, Exception):
            raise result
        haves[device] = result[0]
        warnings.extend(result[1])
    return haves, warnings


def busy_processes(module, runner, params, devices):
    """Processes from `npu-smi info` on ``devices``: list of {device, pid, name}."""
    npu_smi = find_tool(module, 'npu-smi', params['npu_smi_path'])
    argv = [npu_smi, 'info']
    rc, out, err = runner.run(argv)
    if rc != 0:
        words = tool_output(out, err)
        raise ToolError(cmd=argv, rc=rc, stdout=out, stderr=err,
                        msg='%s: %s failed (rc=%s): %s The busy check could not run, so nothing was changed; '
                            'fix npu-smi or set allow_busy=true to skip the check.'
                            % (host_name(), cmd_to_text(argv), rc, sentence(words)))
    parsed, unparsed = parse_output(npu_parsers.PARSERS['info'], argv, out)
    if unparsed:
        module.warn(unparsed_warning(argv, unparsed))
    found = []
    for proc in parsed.get('processes') or []:
        if proc.get('npu') in devices:
            found.append({'device': proc.get('npu'), 'pid': proc.get('pid'), 'name': proc.get('name')})
    return found


def write_backup(backup_dir, host, devices):
    """Write the before-state; return the path. Raises OSError."""
    if not os.path.isdir(backup_dir):
        os.makedirs(backup_dir, 0o700)
    stamp = time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())
    document = st.backup_document(host, time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime()), devices)
    data = st.dump_backup(document).encode('utf-8')
    base = st.backup_filename(host, stamp)
    for attempt in range(100):
        name = base if attempt == 0 else base.replace('.json', '-%d.json' % attempt)
        path = os.path.join(backup_dir, name)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            continue
        with os.fdopen(fd, 'wb') as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        return path
    raise OSError('no free backup file name for %s in %s' % (base, backup_dir))


def load_restore(path):
    """Return (config, warnings) from a backup file; raises BackupError."""
    try:
        with open(path) as handle:
            document = json.load(handle)
    except (OSError, ValueError) as exc:
        raise st.BackupError('restore_from %s: cannot read the backup: %s' % (path, exc)) from exc
    try:
        return st.config_from_backup(document)
    except st.BackupError as exc:
        raise st.BackupError('restore_from %s: %s' % (path, exc)) from exc


def rollback_hint(backup_file):
    if backup_file:
        return 'run the rollback playbook with the backup %s' % backup_file
    return 'restore the previous values by hand (no backup was written; use backup=true next time)'


def apply_device(ports, entry, changes, argvs, link_timeout, backup_file):
    """Apply one device; return a dict: device, ran (bool), have (re-read or None), error (dict or None)."""
    device = entry['device']
    subject = ports.subject(device)
    outcome = {'device': device, 'ran': False, 'have': None, 'error': None}
    for argv in argvs:
        try:
            rc, out, err = ports.call(argv)
        except ToolError as exc:
            outcome['error'] = dict(exc.result(), msg='%s: %s Then %s.' % (subject, exc.msg, rollback_hint(backup_file)))
            return outcome
        if rc != 0:
            words = tool_output(out, err)
            if outcome['ran']:
                done = 'Earlier commands on this device were applied, later ones were not run; to undo them, %s.' \
                    % rollback_hint(backup_file)
            else:
                done = 'Nothing was changed on this device.'
            outcome['error'] = {
                'msg': '%s: %s failed (rc=%s): %s %s %s' % (
                    subject, cmd_to_text(argv), rc, sentence(words), hint_for(words), done),
                'cmd': cmd_to_text(argv), 'rc': rc, 'stdout': out, 'stderr': err,
            }
            return outcome
        outcome['ran'] = True
    if any(q in changes for q in st.LINK_AFFECTING_QUERIES):
        up, last = ports.wait_link_up(device, link_timeout)
        if not up:
            what = ' and '.join(name for q, name in (('mtu', 'MTU'), ('pfc', 'PFC')) if q in changes)
            argv = st.link_argv(ports.tool, device)
            outcome['error'] = {
                'msg': '%s: link still not UP %s s after changing %s (%s: %s). Check the switch port (its MTU and PFC '
                       'must match), or %s.' % (subject, link_timeout, what, cmd_to_text(argv), last, rollback_hint(backup_file)),
                'cmd': cmd_to_text(argv), 'rc': None, 'stdout': last, 'stderr': '',
            }
            return outcome
    queries = st.queries_for(entry)
    try:
        have, dummy = ports.read_device(device, queries)
    except ToolError as exc:
        outcome['error'] = dict(exc.result(), msg='%s Could not read the values back, %s.'
                                % (exc.msg.replace(' Nothing was changed.', ''), rollback_hint(backup_file)))
        return outcome
    outcome['have'] = have
    wrong = st.mismatches(entry, have)
    if wrong:
        last_cmd = cmd_to_text(argvs[-1]) if argvs else ''
        outcome['error'] = {
            'msg': '%s: %s (hccn_tool rc=0). Check that the driver supports these set commands, or %s.'
                   % (subject, '; '.join(wrong), rollback_hint(backup_file)),
            'cmd': last_cmd, 'rc': 0, 'stdout': '', 'stderr': '',
        }
    return outcome


def run_merged(module, params, host, warnings):
    config = params['config']
    if params['restore_from']:
        config, more = load_restore(params['restore_from'])
        warnings.extend(more)
    entries = st.validate_config(config)
    result = {'changed': False, 'before': [], 'after': [], 'commands': [], 'changed_devices': [], 'failed_devices': [],
              'backup_file': None}
    if not entries:
        return result
    runner = Runner(module, params['timeout'])
    tool = find_tool(module, 'hccn_tool', params['hccn_tool_path'])
    ports = Ports(runner, tool, host)
    haves, more = read_all(ports, [(e['device'], st.queries_for(e)) for e in entries], params['workers'])
    warnings.extend(more)

    problems = []
    for entry in entries:
        problems.extend(st.check_against_have(entry, haves[entry['device']]))
    if problems:
        raise st.ConfigError(problems)

    plan = []
    for entry in entries:
        have = haves[entry['device']]
        changes = st.diff_device(entry, have)
        argvs = st.render_device(tool, entry['device'], changes)
        before = st.restrict_to_request(entry, have)
        expected = st.restrict_to_request(entry, st.merge(have, changes))
        plan.append((entry, changes, argvs, before, expected))
        result['before'].append(st.export_device(before))
        result['after'].append(st.export_device(expected))
        result['commands'].extend(st.command_string(a) for a in argvs)
    todo = [p for p in plan if p[2]]
    if not todo:
        return result
    result['changed'] = True
    result['diff'] = [st.device_diff(host, p[3], p[4]) for p in todo]
    devices = [p[0]['device'] for p in todo]

    busy = []
    try:
        busy = busy_processes(module, runner, params, devices)
    except ToolError as exc:
        if not (params['allow_busy'] or module.check_mode):
            raise
        warnings.append('%s The busy check was skipped.' % exc.msg)
    if busy:
        result['busy'] = busy
        listing = ', '.join('NPU %s: pid %s (%s)' % (b['device'], b['pid'], b['name']) for b in busy)
        if params['allow_busy']:
            warnings.append('%s: changing NPU ports while processes run on them (allow_busy=true): %s' % (host, listing))
        elif module.check_mode:
            warnings.append('%s: processes run on NPUs that would change: %s. The real run will refuse unless '
                            'allow_busy=true.' % (host, listing))
        else:
            raise ApplyError('%s: refusing to change NPU ports while processes run on them: %s. Stop the job, or set '
                             'allow_busy=true. Nothing was changed.' % (host, listing), dict(result, changed=False))

    if module.check_mode:
        return result

    if params['backup']:
        try:
            result['backup_file'] = write_backup(params['backup_dir'], host, [p[3] for p in todo])
        except OSError as exc:
            raise ApplyError('%s: could not write the backup in %s: %s. Nothing was changed; fix backup_dir or set '
                             'backup=false.' % (host, params['backup_dir'], exc), dict(result, changed=False)) from exc

    outcomes = in_parallel(lambda p: apply_device(ports, p[0], p[1], p[2], params['link_timeout'], result['backup_file']),
                           todo, params['workers'])
    after = dict((p[0]['device'], st.export_device(p[4])) for p in plan if not p[2])
    errors = []
    for item, outcome in zip(todo, outcomes):
        entry = item[0]
        device = entry['device']
        if isinstance(outcome, Exception):
            outcome = {'device': device, 'ran': True, 'have': None,
                       'error': {'msg': '%s: unexpected error: %s; %s.' % (ports.subject(device), outcome, rollback_hint(result['backup_file'])),
                                 'cmd': None, 'rc': None, 'stdout': '', 'stderr': ''}}
        if outcome['ran']:
            result['changed_devices'].append(device)
        have = outcome['have']
        after[device] = st.export_device(st.restrict_to_request(entry, have)) if have else {'device': device}
        if outcome['error']:
            result['failed_devices'].append(device)
            errors.append(dict(outcome['error'], device=device))
    result['after'] = [after[e['device']] for e in entries]
    result['changed'] = bool(result['changed_devices'])
    if errors:
        result['errors'] = errors
        first = errors[0]
        result.update(cmd=first.get('cmd'), rc=first.get('rc'), stdout=first.get('stdout') or '', stderr=first.get('stderr') or '')
        msg = '%d of %d NPU ports failed on %s (changed: %s; failed: %s). %s' % (
            len(errors), len(todo), host, _ids(result['changed_devices']), _ids(result['failed_devices']),
            ' | '.join(e['msg'] for e in errors))
        undo = rollback_hint(result['backup_file'])
        if result['changed_devices'] and undo not in msg:
            msg += ' To undo the changes, %s.' % undo
        raise ApplyError(msg, result)
    return result


def _ids(devices):
    return ', '.join(str(d) for d in devices) or 'none'


def run_gathered(module, params, host, warnings):
    runner = Runner(module, params['timeout'])
    tool = find_tool(module, 'hccn_tool', params['hccn_tool_path'])
    if params['config']:
        devices = []
        for item in params['config']:
            if item['device'] not in devices:
                devices.append(item['device'])
    else:
        npu_smi = find_tool(module, 'npu-smi', params['npu_smi_path'])
        argv = [npu_smi, 'info', '-l']
        rc, out, err = runner.run(argv)
        if rc != 0:
            raise ToolError(cmd=argv, rc=rc, stdout=out, stderr=err,
                            msg='%s: %s failed (rc=%s): %s Give the devices in config.' % (
                                host, cmd_to_text(argv), rc, sentence(tool_output(out, err))))
        parsed, unparsed = parse_output(npu_parsers.PARSERS['list'], argv, out)
        if unparsed:
            warnings.append(unparsed_warning(argv, unparsed))
        devices = sorted(set(d['npu'] for d in parsed.get('devices') or [] if isinstance(d.get('npu'), int)))
    ports = Ports(runner, tool, host)
    haves, more = read_all(ports, [(d, list(st.QUERY_ORDER)) for d in sorted(devices)], params['workers'], tolerate=True)
    warnings.extend(more)
    return {'changed': False, 'gathered': [st.export_device(haves[d]) for d in sorted(devices)]}


def main():
    dscp_spec = dict(dscp=dict(type='int', required=True), tc=dict(type='int', required=True))
    config_spec = dict(
        device=dict(type='int', required=True),
        address=dict(type='str'),
        netmask=dict(type='str'),
        gateway=dict(type='str'),
        netdetect=dict(type='str'),
        mtu=dict(type='int'),
        pfc_priorities=dict(type='list', elements='int'),
        dscp_to_tc=dict(type='list', elements='dict', options=dscp_spec),
        tls=dict(type='bool'),
    )
    module = AnsibleModule(
        argument_spec=dict(
            config=dict(type='list', elements='dict', options=config_spec),
            state=dict(type='str', default='merged', choices=['merged', 'gathered', 'rendered', 'parsed']),
            running_config=dict(type='str'),
            restore_from=dict(type='path'),
            allow_busy=dict(type='bool', default=False),
            backup=dict(type='bool', default=False),
            backup_dir=dict(type='path', default='/var/lib/npuops/backup'),
            link_timeout=dict(type='int', default=60),
            timeout=dict(type='int', default=30),
            workers=dict(type='int', default=8),
            hccn_tool_path=dict(type='path'),
            npu_smi_path=dict(type='path'),
        ),
        mutually_exclusive=[['config', 'restore_from'], ['running_config', 'config'], ['running_config', 'restore_from']],
        required_if=[['state', 'parsed', ['running_config']], ['state', 'rendered', ['config']]],
        supports_check_mode=True,
    )
    params = module.params
    state = params['state']
    if params['restore_from'] and state != 'merged':
        module.fail_json(msg='hccn_config: restore_from works with state=merged only (got state=%s).' % state)
    if params['timeout'] < 0 or params['workers'] < 1 or params['link_timeout'] < 0:
        module.fail_json(msg='hccn_config: timeout and link_timeout must be >= 0 and workers >= 1 '
                             '(got timeout=%s, link_timeout=%s, workers=%s).'
                             % (params['timeout'], params['link_timeout'], params['workers']))
    host = host_name()
    warnings = []
    try:
        if state == 'rendered':
            entries = st.validate_config(params['config'])
            result = {'changed': False, 'rendered': [st.command_string(a) for a in st.render_request('hccn_tool', entries)]}
        elif state == 'parsed':
            parsed, warnings = st.parse_running_config(params['running_config'], hccn_parsers.PARSERS)
            result = {'changed': False, 'parsed': parsed}
        elif state == 'gathered':
            result = run_gathered(module, params, host, warnings)
        else:
            result = run_merged(module, params, host, warnings)
    except st.ConfigError as exc:
        for warning in warnings:
            module.warn(warning)
        module.fail_json(msg='%s: invalid request, nothing was changed: %s' % (host, exc), errors=exc.errors)
    except st.BackupError as exc:
        module.fail_json(msg='%s: %s. Nothing was changed.' % (host, exc))
    except ToolError as exc:
        for warning in warnings:
            module.warn(warning)
        module.fail_json(**exc.result())
    except ApplyError as exc:
        for warning in warnings:
            module.warn(warning)
        module.fail_json(msg=exc.msg, **exc.result)
    for warning in warnings:
        module.warn(warning)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
