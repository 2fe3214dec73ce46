#!/usr/bin/python
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: version_info
short_description: Gather the Ascend software stack of a node (driver, firmware, CANN, engines, frameworks, kernel, Python)
version_added: 0.1.0
author:
  - npuops maintainers (@npuops)
description:
  - Reads, in one task, the version files of the Ascend driver and firmware (C(version.info)), of the CANN toolkit
    (C(ascend_toolkit_install.info) and C(version.cfg)), of the CANN kernels package (C(opp_kernel/version.info) of
    the toolkit), of MindIE (C(version.info) of O(mindie_path)), the kernel release (C(/proc/sys/kernel/osrelease),
    what C(uname -r) prints), the Python version and the versions of Python packages such as C(torch), C(torch_npu),
    C(mindspeed), C(vllm) and C(vllm_ascend) as one interpreter sees them (one run of that interpreter), and the
    C(HCCL_), C(ASCEND_), C(TASK_QUEUE_) and C(PYTORCH_NPU_) environment variables.
  - Returns each part, and a flat RV(fingerprint) that is equal on two nodes exactly when their stacks are equal, for
    comparing the nodes of a PoD.
  - Also returns what the packages declare about each other (C(compatible_version) lists), which the version_check
    role uses to tell known-bad pairings.
  - A missing file or package gives null values (and, for the driver, firmware and toolkit files, and the kernels package
    of an installed toolkit, an entry in RV(errors)); it never fails the task. MindIE is optional (absent gives null).
  - Read-only; never reports a change.
options:
  driver_path:
    description: Install directory of the driver (holds C(version.info)).
    type: path
    default: /usr/local/Ascend/driver
  firmware_path:
    description: Install directory of the firmware (holds C(version.info)).
    type: path
    default: /usr/local/Ascend/firmware
  toolkit_path:
    description:
      - The CANN toolkit directory that is in use (holds C(version.cfg) and C(<arch>-linux/ascend_toolkit_install.info)).
    type: path
    default: /usr/local/Ascend/ascend-toolkit/latest
  mindie_path:
    description: Install directory of MindIE that is in use (holds C(version.info)).
    type: path
    default: /usr/local/Ascend/mindie/latest
  python:
    description:
      - The Python interpreter of the training or serving environment, whose version and packages are read. When
        unset, the interpreter that runs this module.
    type: path
  packages:
    description: Python distributions whose versions are read (absent ones give null).
    type: list
    elements: str
    default: [torch, torch_npu, mindspeed, vllm, vllm_ascend]
  env_files:
    description:
      - Shell files that set the job environment (C(export KEY=VALUE) or C(KEY=VALUE) lines), for example the file a
        launch script sources. Their values win over the module's own environment.
    type: list
    elements: path
    default: []
  env_prefixes:
    description: Prefixes of the environment variables to report.
    type: list
    elements: str
    default: [HCCL_, ASCEND_, TASK_QUEUE_, PYTORCH_NPU_]
extends_documentation_fragment:
  - npuops.ascend.tool_options
  - npuops.ascend.attributes
  - npuops.ascend.attributes.info_module
attributes:
  platform:
    support: full
    platforms: posix
    description: Linux nodes with the Ascend driver and CANN installed.
seealso:
  - module: npuops.ascend.npu_info
"""

EXAMPLES = r"""
- name: Read the software stack of every node
  npuops.ascend.version_info:
    python: /opt/venvs/train/bin/python3
  register: stack

- name: Stop when two nodes run different stacks
  ansible.builtin.assert:
    that: ansible_play_hosts | map('extract', hostvars, ['stack', 'fingerprint']) | unique | length == 1
  run_once: true
"""

RETURN = r"""
driver:
  description: The driver's C(version.info) (C(version), C(innerversion), C(family), C(compatible_version_fw)); null when absent.
  returned: success
  type: dict
  sample: {version: 23.0.7, innerversion: V100R001C15SPC012B220, family: V100R001C15, compatible_version_fw: [["7.0.0", "7.1.99"]]}
firmware:
  description: The firmware's C(version.info) (C(version)); null when absent.
  returned: success
  type: dict
cann:
  description:
    - The CANN toolkit (C(version), C(innerversion), C(family), C(compatible_version) with the driver families it declares
      to work with, C(components) with the running version of each component in C(version.cfg)); null when absent.
  returned: success
  type: dict
  sample: {version: 8.0.0, innerversion: V100R001C20SPC001B251, family: V100R001C20,
           compatible_version: [V100R001C15, V100R001C17, V100R001C18, V100R001C19, V100R001C20]}
cann_kernels:
  description:
    - The CANN kernels package (C(<toolkit_path>/opp_kernel/version.info)) - C(release) (its C(version_dir), the CANN
      release it belongs to), C(version) (the build number), C(timestamp), C(required_toolkit); null when absent.
  returned: success
  type: dict
  sample: {release: 8.2.RC1, version: 8.2.0.0.201, timestamp: "20250724_194044950", required_toolkit: ">=7.6, <=8.2"}
mindie:
  description: MindIE's C(version.info) (C(version), C(release) without the build suffix, C(components)); null when absent.
  returned: success
  type: dict
  sample: {version: 2.1.RC1.B152, release: 2.1.RC1, components: {mindie-llm: 2.1.RC1.B152}}
kernel:
  description: The kernel release (C(release)) and its leading numbers (C(numbers)); null when unreadable.
  returned: success
  type: dict
  sample: {release: 5.10.0-60.18.0.50.oe2203.aarch64, numbers: [5, 10, 0]}
python:
  description: The version of the interpreter of O(python) (null when it could not be run).
  returned: success
  type: str
  sample: 3.11.6
packages:
  description: Distribution name to installed version (null when not installed or no interpreter).
  returned: success
  type: dict
  sample: {torch: 2.5.1, torch_npu: 2.5.1, mindspeed: null, vllm: 0.9.1, vllm_ascend: 0.9.1}
environment:
  description: The environment variables with one of O(env_prefixes), from the module's process and O(env_files).
  returned: success
  type: dict
  sample: {HCCL_BUFFSIZE: "200", TASK_QUEUE_ENABLE: "1"}
fingerprint:
  description:
    - Flat, comparable view of the stack - C(driver), C(firmware), C(cann), C(cann_kernels), C(mindie), C(kernel),
      C(python), C(package:<name>) and C(env:<name>).
  returned: success
  type: dict
count:
  description: Always 0 (this module reads the node, not devices).
  returned: success
  type: int
devices:
  description: Always empty (the per-NPU versions come from M(npuops.ascend.npu_info) with the board subset).
  returned: success
  type: dict
errors:
  description: Files that could not be read or parsed (C(what), C(path), C(msg)).
  returned: success
  type: list
  elements: dict
"""

import glob  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import platform  # noqa: E402
import re  # noqa: E402
import sys  # noqa: E402

from ansible_collections.npuops.ascend.plugins.module_utils._argspec import build_module, execute, info_result, tool_options  # noqa: E402
from ansible_collections.npuops.ascend.plugins.module_utils._parsers import versions as version_parsers  # noqa: E402
from ansible_collections.npuops.ascend.plugins.module_utils._tools.runner import (  # noqa: E402
    ModuleFailure,
    Runner,
    cmd_to_text,
    host_name,
    parse_output,
    unparsed_warning,
)

# Prints {"python": version, "packages": {distribution: version or null}} for the names given as arguments (3.8+).
PACKAGES_SCRIPT = (
    'import json, platform, sys\n'
    'from importlib import metadata\n'
    'found = {}\n'
    'for name in sys.argv[1:]:\n'
    '    version = None\n'
    '    for candidate in (name, name.replace("_", "-"), name.replace("-", "_")):\n'
    '        try:\n'
    '            version = metadata.version(candidate)\n'
    '            break\n'
    '        except Exception:\n'
    '            pass\n'
    '    found[name] = version\n'
    'print(json.dumps({"python": platform.python_version(), "packages": found}))\n'
)
OSRELEASE = '/proc/sys/kernel/osrelease'
_FAMILY = re.compile(r'(V\d+R\d+C\d+)')
_ENV_LINE = re.compile(r'^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=(.*)$')
_QUOTED = re.compile(r'^([\'"])(.*?)\1\s*(?:#.*)?$')


def family(innerversion):
    """'V100R001C15SPC012B220' -> 'V100R001C15': the release train that compatible_version lists name."""
    match = _FAMILY.match(str(innerversion or ''))
    return match.group(1) if match else None


def flat_groups(groups):
    """[['V100R001C15'], ['V100R001C13', 'V100R001C19']] -> ['V100R001C15', 'V100R001C13', 'V100R001C19']."""
    out = []
    for group in groups or []:
        for item in group if isinstance(group, list) else [group]:
            name = family(item) or item
            if name not in out:
                out.append(name)
    return out


def shell_value(text):
    """The value of a KEY=VALUE shell line without its quotes and its trailing comment."""
    text = text.strip()
    quoted = _QUOTED.match(text)
    if quoted:
        return quoted.group(2)
    return text.split(' #')[0].strip()


class StackReader:
    def __init__(self, module, warnings):
        self.module = module
        self.params = module.params
        self.warnings = warnings
        self.errors = []

    def read(self, what, path, parser_key, required=True):
        try:
            with open(path) as handle:
                text = handle.read()
        except OSError as exc:
            if required:
                self.errors.append({'what': what, 'path': path, 'msg': '%s: %s could not be read: %s' % (host_name(), path, exc)})
            return None
        data, unparsed = parse_output(version_parsers.PARSERS[parser_key], ['cat', path], text)
        if unparsed:
            self.warnings.append(unparsed_warning(['cat', path], unparsed))
        return data

    def driver(self, key):
        data = self.read(key, os.path.join(self.params[key + '_path'], 'version.info'), 'version_info')
        if data is None:
            return None
        out = {'version': data.get('version') or data.get('package_version'), 'innerversion': data.get('innerversion')}
        out['family'] = family(out['innerversion'])
        if key == 'driver':
            out['compatible_version_fw'] = data.get('compatible_version_fw')
            out['compatible_version'] = flat_groups(data.get('compatible_version'))
        return out

    def cann(self):
        home = self.params['toolkit_path']
        infos = sorted(glob.glob(os.path.join(home, '*-linux', 'ascend_toolkit_install.info')))
        install = self.read('cann', infos[0], 'install_info') if infos else None
        if not infos:
            self.errors.append({'what': 'cann', 'path': os.path.join(home, '<arch>-linux', 'ascend_toolkit_install.info'),
                                'msg': '%s: no ascend_toolkit_install.info under %s' % (host_name(), home)})
        cfg = self.read('cann', os.path.join(home, 'version.cfg'), 'version_cfg', required=False)
        if install is None and cfg is None:
            return None
        install = install or {}
        components = {}
        for name, states in ((cfg or {}).get('components') or {}).items():
            running = states.get('running') or []
            components[name] = running[0].get('cann') if running else None
        out = {'version': install.get('version') or (cfg or {}).get('cann_version'),
               'innerversion': install.get('innerversion'), 'compatible_version': flat_groups(install.get('compatible_version')),
               'components': components}
        out['family'] = family(out['innerversion'])
        return out

    def kernels(self, cann):
        """The CANN kernels package of the toolkit in use; an error when the toolkit is there and the kernels are not."""
        path = os.path.join(self.params['toolkit_path'], 'opp_kernel', 'version.info')
        data = self.read('cann_kernels', path, 'opp_kernel_info', required=cann is not None)
        if data is None:
            return None
        return {'release': data.get('version_dir') or data.get('version'), 'version': data.get('version'),
                'timestamp': data.get('timestamp'), 'required_toolkit': data.get('required_package_toolkit_version')}

    def mindie(self):
        data = self.read('mindie', os.path.join(self.params['mindie_path'], 'version.info'), 'mindie_info', required=False)
        if data is None or not data.get('version'):
            return None
        return {'version': data['version'], 'release': data.get('release'), 'components': data.get('components') or {}}

    def kernel(self):
        data = self.read('kernel', OSRELEASE, 'kernel_release', required=False)
        if data is None or not data.get('release'):
            release = platform.release()
            data = version_parsers.parse_kernel_release(release) if release else None
        if data is None:
            return None
        return {'release': data.get('release'), 'numbers': data.get('numbers') or []}

    def packages(self):
        """``(python version, {name: version})`` of the interpreter of the environment, in one run of it."""
        names = self.params['packages']
        if not names and not self.params['python']:
            return platform.python_version(), {}
        python = self.params['python'] or sys.executable
        argv = [python, '-c', PACKAGES_SCRIPT] + list(names)
        runner = Runner(self.module, self.params['timeout'])
        try:
            rc, out, err = runner.run(argv, read=True)
        except ModuleFailure as exc:    # no such interpreter, or it ran out of time
            rc, out, err = None, '', str(exc.__cause__ or 'timed out after %s s' % self.params['timeout'])
        if rc == 0:
            try:
                document = json.loads(out.strip().splitlines()[-1])
                found = document['packages']
                return document.get('python'), dict((name, found.get(name)) for name in names)
            except (ValueError, IndexError, AttributeError, KeyError, TypeError):    # not the script's JSON object
                pass
        self.warnings.append('%s: the Python version and package versions could not be read with %s (rc=%s): %s'
                             % (host_name(), cmd_to_text([python, '-c', '...']), rc, (err or out).strip()[:300]))
        return None, dict.fromkeys(names)

    def environment(self):
        prefixes = tuple(self.params['env_prefixes'])
        env = dict((k, v) for k, v in os.environ.items() if k.startswith(prefixes))
        for path in self.params['env_files']:
            try:
                with open(path) as handle:
                    lines = handle.read().splitlines()
            except OSError as exc:
                self.errors.append({'what': 'env_files', 'path': path, 'msg': '%s: %s could not be read: %s' % (host_name(), path, exc)})
                continue
            for line in lines:
                match = _ENV_LINE.match(line)
                if match and match.group(1).startswith(prefixes):
                    env[match.group(1)] = shell_value(match.group(2))
        return env

    def gather(self):
        driver, firmware, cann = self.driver('driver'), self.driver('firmware'), self.cann()
        kernels, mindie, kernel = self.kernels(cann), self.mindie(), self.kernel()
        python, packages = self.packages()
        environment = self.environment()
        fingerprint = {
            'driver': (driver or {}).get('version'),
            'firmware': (firmware or {}).get('version'),
            'cann': (cann or {}).get('version'),
            'cann_kernels': (kernels or {}).get('release'),
            'mindie': (mindie or {}).get('version'),
            'kernel': (kernel or {}).get('release'),
            'python': python,
        }
        fingerprint.update(('package:' + name, version) for name, version in packages.items())
        fingerprint.update(('env:' + name, value) for name, value in environment.items())
        return info_result({}, self.errors, driver=driver, firmware=firmware, cann=cann, cann_kernels=kernels, mindie=mindie,
                           kernel=kernel, python=python, packages=packages, environment=environment, fingerprint=fingerprint)


def main():
    argument_spec = dict(
        driver_path=dict(type='path', default='/usr/local/Ascend/driver'),
        firmware_path=dict(type='path', default='/usr/local/Ascend/firmware'),
        toolkit_path=dict(type='path', default='/usr/local/Ascend/ascend-toolkit/latest'),
        mindie_path=dict(type='path', default='/usr/local/Ascend/mindie/latest'),
        python=dict(type='path'),
        packages=dict(type='list', elements='str', default=['torch', 'torch_npu', 'mindspeed', 'vllm', 'vllm_ascend']),
        env_files=dict(type='list', elements='path', default=[]),
        env_prefixes=dict(type='list', elements='str', default=['HCCL_', 'ASCEND_', 'TASK_QUEUE_', 'PYTORCH_NPU_']),
    )
    argument_spec.update(tool_options('timeout'))
    module = build_module('version_info', argument_spec, supports_check_mode=True)
    execute(module, lambda warnings: StackReader(module, warnings).gather())


if __name__ == '__main__':
    main()
