# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Whether the node is a container, and whether the NPU device nodes and the driver paths are mounted into it.

A container sees the NPUs only through the device nodes it was started with (``--device /dev/davinciN`` and the three
management devices) and runs npu-smi only with the driver paths bind-mounted from the host. This reads what is there;
the health check turns what is missing into findings (plugins/plugin_utils/health.py).

Everything is read below ``root`` (``/`` on a node; a directory tree in the unit tests). No path is followed through a
symbolic link it does not expect: existence is taken with ``lstat``, and nothing is opened but the cgroup file.
Python 3.9 compatible: this file runs on the managed nodes.
"""

from __future__ import annotations

import os
import re
import stat

# What tells a container from the host (the first that matches is the evidence):
# Docker creates /.dockerenv, Podman /run/.containerenv; a cgroup v1 path of PID 1 names the engine.
MARKERS = ('.dockerenv', 'run/.containerenv')
CGROUP_FILE = 'proc/1/cgroup'
CGROUP_RE = re.compile(r'(docker|kubepods|containerd|libpod|crio|lxc)', re.I)
CGROUP_MAX_BYTES = 1 << 16

# The management device nodes every NPU container needs beside /dev/davinciN.
MANAGEMENT_DEVICES = ('/dev/davinci_manager', '/dev/devmm_svm', '/dev/hisi_hdc')
# The driver paths npu-smi and the runtime need inside a container, and how each is mounted from the host.
DRIVER_PATHS = (
    ('/usr/local/Ascend/driver', '-v /usr/local/Ascend/driver:/usr/local/Ascend/driver:ro'),
    ('/usr/local/dcmi', '-v /usr/local/dcmi:/usr/local/dcmi:ro'),
    ('/usr/local/bin/npu-smi', '-v /usr/local/bin/npu-smi:/usr/local/bin/npu-smi:ro'),
    ('/etc/ascend_install.info', '-v /etc/ascend_install.info:/etc/ascend_install.info:ro'),
)


def _under(root, path):
    return os.path.join(root, path.lstrip('/'))


def _kind(root, path):
    """'char' (a character device), 'dir', 'file', 'link' (a symbolic link, not followed) or None (absent)."""
    try:
        mode = os.lstat(_under(root, path)).st_mode
    except OSError:
        return None
    if stat.S_ISCHR(mode):
        return 'char'
    if stat.S_ISDIR(mode):
        return 'dir'
    if stat.S_ISLNK(mode):
        return 'link'
    return 'file'


def container_evidence(root='/'):
    """What shows that ``root`` is a container's file system ('/.dockerenv', '/proc/1/cgroup: ...docker...'), or None."""
    for marker in MARKERS:
        if _kind(root, marker) is not None:
            return '/' + marker
    path = _under(root, CGROUP_FILE)
    try:
        if stat.S_ISREG(os.lstat(path).st_mode):
            with open(path, 'rb') as handle:
                text = handle.read(CGROUP_MAX_BYTES).decode('utf-8', errors='replace')
            for line in text.splitlines():
                if CGROUP_RE.search(line):
                    return '/%s: %s' % (CGROUP_FILE, line.strip())
    except OSError:
        pass
    return None


def check_container(root='/', mode='auto', npus=8):
    """The container part of health_info.

    ``mode``: ``auto`` checks the mounts only when the node is a container; ``always`` checks them anyway; ``never``
    reads nothing. ``npus``: how many ``/dev/davinciN`` (0 to npus-1) the container must have.
    Returns ``{container, evidence, checked, devices: {path: kind or None}, driver_paths: {path: kind or None},
    missing_devices: [path], missing_driver_paths: [{path, mount}]}``.
    """
    evidence = container_evidence(root) if mode != 'never' else None
    out = {'container': evidence is not None, 'evidence': evidence, 'checked': False, 'root': root,
           'devices': {}, 'driver_paths': {}, 'missing_devices': [], 'missing_driver_paths': []}
    if mode == 'never' or (mode == 'auto' and evidence is None):
        return out
    out['checked'] = True
    for path in ['/dev/davinci%d' % dev for dev in range(max(int(npus or 0), 0))] + list(MANAGEMENT_DEVICES):
        kind = _kind(root, path)
        out['devices'][path] = kind
        if kind != 'char':
            out['missing_devices'].append(path)
    for path, mount in DRIVER_PATHS:
        kind = _kind(root, path)
        out['driver_paths'][path] = kind
        if kind is None:
            out['missing_driver_paths'].append({'path': path, 'mount': mount})
    return out
