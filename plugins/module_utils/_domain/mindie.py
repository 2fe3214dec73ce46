# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""MindIE Service config.json: where each setting lives, MindIE's own rules, and the validated merge.

Contract:

* :data:`KEYS` maps every setting the module accepts (MindIE's own key name) to its section of the
  file, its kind and its allowed values. The table was written from the default config.json that
  MindIE-LLM ships (``src/server/conf/config.json``, open-source MindIE-LLM, mirror
  ``verylucky01/MindIE-LLM`` at commit 0695772) and the ranges of its parameter guide
  (``docs/zh/user_guide/user_manual/service_parameter_configuration.md``) and config checks
  (``src/config_manager/*.cpp``). A new key is one entry.
* :func:`setting_problems` checks settings alone (the inventory-only check of the role);
  :func:`config_problems` checks a whole merged file (settings plus what the file already holds).
  Both return plain sentences and never raise.
* :class:`MindieConfig` reads, merges, validates, renders and writes; it raises
  :class:`ModuleFailure` (``main()`` turns that into ``fail_json``) and writes nothing when any
  check fails.

Pure Python, no AnsibleModule import above :class:`MindieConfig`; Python 3.9 compatible (runs on the
managed nodes and, for the filters, on the controller).
"""

from __future__ import annotations

import copy
import difflib
import errno
import grp
import ipaddress
import json
import os
import pwd
import re
import stat
import tempfile
import time

from ansible_collections.npuops.ascend.plugins.module_utils._tools.runner import ModuleFailure

DEFAULT_PATH = '/usr/local/Ascend/mindie/latest/mindie-service/conf/config.json'
MAX_FILE_BYTES = 10 * 1024 * 1024      # MindIE reads config.json of (0, 10 MiB] only
MAX_MODE = 0o640                       # MindIE refuses a config.json with any permission bit beyond 0640
UINT32_MAX = 4294967295
INT32_MAX = 2147483647

# Sections of the file. MODEL is BackendConfig.ModelDeployConfig.ModelConfig[model_index].
TOP = ()
SERVER = ('ServerConfig',)
HEALTH = ('ServerConfig', 'HealthCheckConfig')
BACKEND = ('BackendConfig',)
DEPLOY = ('BackendConfig', 'ModelDeployConfig')
MODEL = ('BackendConfig', 'ModelDeployConfig', 'ModelConfig', None)
SCHEDULE = ('BackendConfig', 'ScheduleConfig')
LOG = ('LogConfig',)

PORT = ('int', (1024, 65535))
U32 = ('int', (0, UINT32_MAX))
BOOL = ('bool', None)
STR = ('str', None)
STRS = ('str_list', None)

# setting -> (section, kind, argument). Kinds: int (low, high), bool, str, name (non-empty str), choice (values),
# str_list, ip, abs_path, npu_mem (-1 or 1..INT32_MAX), truncation (-1, 0, 1, true, false), device_ids.
KEYS = {
    # ServerConfig
    'ipAddress': (SERVER, 'ip', None),
    'managementIpAddress': (SERVER, 'ip', None),
    'port': (SERVER,) + PORT,
    'managementPort': (SERVER,) + PORT,
    'metricsPort': (SERVER,) + PORT,
    'allowAllZeroIpListening': (SERVER,) + BOOL,
    'maxLinkNum': (SERVER, 'int', (1, 4096)),
    'httpsEnabled': (SERVER,) + BOOL,
    'fullTextEnabled': (SERVER,) + BOOL,
    'tlsCaPath': (SERVER,) + STR,
    'tlsCaFile': (SERVER,) + STRS,
    'tlsCert': (SERVER,) + STR,
    'tlsPk': (SERVER,) + STR,
    'tlsCrlPath': (SERVER,) + STR,
    'tlsCrlFiles': (SERVER,) + STRS,
    'managementTlsCaFile': (SERVER,) + STRS,
    'managementTlsCert': (SERVER,) + STR,
    'managementTlsPk': (SERVER,) + STR,
    'managementTlsCrlPath': (SERVER,) + STR,
    'managementTlsCrlFiles': (SERVER,) + STRS,
    'metricsTlsCaFile': (SERVER,) + STRS,
    'metricsTlsCert': (SERVER,) + STR,
    'metricsTlsPk': (SERVER,) + STR,
    'metricsTlsCrlPath': (SERVER,) + STR,
    'metricsTlsCrlFiles': (SERVER,) + STRS,
    'inferMode': (SERVER, 'choice', ('standard', 'dmi')),
    'interCommTLSEnabled': (SERVER,) + BOOL,
    'interCommPort': (SERVER,) + PORT,
    'interCommTlsCaPath': (SERVER,) + STR,
    'interCommTlsCaFiles': (SERVER,) + STRS,
    'interCommTlsCert': (SERVER,) + STR,
    'interCommPk': (SERVER,) + STR,
    'interCommTlsCrlPath': (SERVER,) + STR,
    'interCommTlsCrlFiles': (SERVER,) + STRS,
    'openAiSupport': (SERVER,) + STR,
    'tokenTimeout': (SERVER,) + U32,
    'e2eTimeout': (SERVER,) + U32,
    'distDPServerEnabled': (SERVER,) + BOOL,
    'npuUsageThreshold': (HEALTH,) + U32,
    # BackendConfig
    'backendName': (BACKEND, 'name', None),
    'modelInstanceNumber': (BACKEND, 'int', (1, 10)),
    'npuDeviceIds': (BACKEND, 'device_ids', None),
    'tokenizerProcessNumber': (BACKEND, 'int', (1, 32)),
    'multiNodesInferEnabled': (BACKEND,) + BOOL,
    'multiNodesInferPort': (BACKEND,) + PORT,
    'interNodeTLSEnabled': (BACKEND,) + BOOL,
    'interNodeTlsCaPath': (BACKEND,) + STR,
    'interNodeTlsCaFiles': (BACKEND,) + STRS,
    'interNodeTlsCert': (BACKEND,) + STR,
    'interNodeTlsPk': (BACKEND,) + STR,
    'interNodeTlsCrlPath': (BACKEND,) + STR,
    'interNodeTlsCrlFiles': (BACKEND,) + STRS,
    # BackendConfig.ModelDeployConfig
    'maxSeqLen': (DEPLOY, 'int', (1, UINT32_MAX)),
    'maxInputTokenLen': (DEPLOY, 'int', (1, 4194304)),
    'truncation': (DEPLOY, 'truncation', None),
    # BackendConfig.ModelDeployConfig.ModelConfig[model_index]
    'modelInstanceType': (MODEL, 'name', None),
    'modelName': (MODEL, 'name', None),
    'modelWeightPath': (MODEL, 'abs_path', None),
    'worldSize': (MODEL, 'int', (1, UINT32_MAX)),
    'cpuMemSize': (MODEL,) + U32,
    'npuMemSize': (MODEL, 'npu_mem', None),
    'backendType': (MODEL, 'choice', ('atb', 'ms', 'torch')),
    'trustRemoteCode': (MODEL,) + BOOL,
    'async_scheduler_wait_time': (MODEL,) + U32,
    'kv_trans_timeout': (MODEL,) + U32,
    'kv_link_timeout': (MODEL,) + U32,
    # BackendConfig.ScheduleConfig
    'templateType': (SCHEDULE, 'choice', ('Standard', 'Mix')),
    'templateName': (SCHEDULE, 'choice', ('Standard_LLM',)),
    'cacheBlockSize': (SCHEDULE, 'int', (1, 128)),
    'maxPrefillBatchSize': (SCHEDULE, 'int', (0, 819200)),
    'maxPrefillTokens': (SCHEDULE, 'int', (1, 4194304)),
    'prefillTimeMsPerReq': (SCHEDULE, 'int', (0, 1000)),
    'prefillPolicyType': (SCHEDULE, 'choice', (0,)),
    'decodeTimeMsPerReq': (SCHEDULE, 'int', (0, 1000)),
    'decodePolicyType': (SCHEDULE, 'choice', (0,)),
    'maxBatchSize': (SCHEDULE, 'int', (1, 819200)),
    'maxIterTimes': (SCHEDULE, 'int', (1, UINT32_MAX)),
    'maxPreemptCount': (SCHEDULE,) + U32,
    'supportSelectBatch': (SCHEDULE,) + BOOL,
    'maxQueueDelayMicroseconds': (SCHEDULE, 'int', (500, 1000000)),
    'maxFirstTokenWaitTime': (SCHEDULE, 'int', (0, 3600000)),
    # LogConfig and the top level
    'dynamicLogLevel': (LOG,) + STR,
    'dynamicLogLevelValidHours': (LOG, 'int', (1, 168)),
    'dynamicLogLevelValidTime': (LOG,) + STR,
    'EnableDynamicAdjustTimeoutConfig': (TOP,) + BOOL,
}


def json_path(key, model_index=0):
    """The dotted path of setting ``key`` in the file: ``BackendConfig.ModelDeployConfig.ModelConfig[0].worldSize``."""
    parts = []
    for part in KEYS[key][0]:
        if part is None:
            parts[-1] += '[%d]' % model_index
        else:
            parts.append(part)
    return '.'.join(parts + [key])


def closest(name):
    """The known setting closest to ``name``, or None (difflib, case-insensitive)."""
    lowered = dict((known.lower(), known) for known in KEYS)
    found = difflib.get_close_matches(str(name).lower(), list(lowered), n=1, cutoff=0.6)
    return lowered[found[0]] if found else None


def _show(value):
    text = json.dumps(value, sort_keys=True) if not isinstance(value, str) else repr(value)
    return text if len(text) <= 60 else text[:57] + '...'


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def kind_problem(key, value):
    """What is wrong with ``value`` for setting ``key`` by its own kind and range, or None."""
    _section, kind, arg = KEYS[key]
    if kind == 'int':
        if not _is_int(value):
            return '%s must be an integer (a JSON number), got %s' % (key, _show(value))
        low, high = arg
        if not low <= value <= high:
            return '%s must be %d to %d, got %d' % (key, low, high, value)
    elif kind == 'bool':
        if not isinstance(value, bool):
            return '%s must be true or false (a JSON boolean), got %s' % (key, _show(value))
    elif kind in ('str', 'name', 'abs_path'):
        if not isinstance(value, str):
            return '%s must be a string, got %s' % (key, _show(value))
        if kind == 'name' and not value.strip():
            return '%s must not be empty' % key
        if kind == 'abs_path' and not value.startswith('/'):
            return '%s must be an absolute path (MindIE checks the directory itself), got %s' % (key, _show(value))
    elif kind == 'str_list':
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            return '%s must be a list of strings, got %s' % (key, _show(value))
    elif kind == 'choice':
        if isinstance(value, bool) or value not in arg:
            return '%s must be one of %s, got %s' % (key, ', '.join(_show(item) for item in arg), _show(value))
    elif kind == 'ip':
        try:
            ipaddress.ip_address(value if isinstance(value, str) else '')
        except ValueError:
            return '%s must be an IPv4 or IPv6 address, got %s' % (key, _show(value))
    elif kind == 'npu_mem':
        if not _is_int(value):
            return 'npuMemSize must be an integer number of GB (a JSON number), got %s' % _show(value)
        if value != -1 and not 0 < value <= INT32_MAX:
            return ('npuMemSize must be -1 (size the KV cache from the free memory) or 1 to %d GB per NPU, got %d '
                    '(0 and values below -1 are refused by MindIE)' % (INT32_MAX, value))
    elif kind == 'truncation':
        if not (isinstance(value, bool) or (_is_int(value) and value in (-1, 0, 1))):
            return 'truncation must be -1, 0, 1, true or false, got %s' % _show(value)
    elif kind == 'device_ids':
        ok = isinstance(value, list) and value and all(
            isinstance(group, list) and group and all(_is_int(dev) and dev >= 0 for dev in group) for group in value)
        if not ok:
            return ('npuDeviceIds must be a list with one list of NPU ids per model instance, such as [[0,1,2,3]], got %s'
                    % _show(value))
        for index, group in enumerate(value):
            if len(set(group)) != len(group):
                return 'npuDeviceIds[%d] lists an NPU twice: %s' % (index, _show(group))
    return None


def setting_problems(settings):
    """Problems of the settings alone (names, kinds, ranges, and the rules among the settings given): sentences."""
    if not isinstance(settings, dict):
        return ['settings must be a dict of MindIE key names to values, got %s' % _show(settings)]
    out = []
    for key in sorted(settings, key=str):
        if key not in KEYS:
            near = closest(key)
            out.append('%s is not a MindIE setting this module knows%s' % (
                _show(key), ' (did you mean %s?)' % near if near else '; the known ones are listed in the module documentation'))
            continue
        problem = kind_problem(key, settings[key])
        if problem:
            out.append(problem)
    if not out:
        out.extend(_cross_problems(dict(settings), settings))
    return out


def _cross_problems(values, given):
    """MindIE's rules between settings, for the values at hand (a key absent from ``values`` is not checked)."""
    out = []

    def has(*keys):
        return all(key in values and values[key] is not None for key in keys)

    def origin(*keys):
        mine = [key for key in keys if key in given]
        return '' if len(mine) == len(keys) else ' (%s from the file)' % ', '.join(key for key in keys if key not in given)

    if has('maxPrefillTokens', 'maxInputTokenLen') and values.get('templateType') != 'Mix' \
            and values['maxPrefillTokens'] < values['maxInputTokenLen']:
        out.append('maxPrefillTokens %d is less than maxInputTokenLen %d%s: MindIE needs maxPrefillTokens >= '
                   'maxInputTokenLen (unless templateType is Mix); raise maxPrefillTokens or lower maxInputTokenLen'
                   % (values['maxPrefillTokens'], values['maxInputTokenLen'], origin('maxPrefillTokens', 'maxInputTokenLen')))
    if has('maxPreemptCount', 'maxBatchSize') and values['maxPreemptCount'] > values['maxBatchSize']:
        out.append('maxPreemptCount %d is more than maxBatchSize %d%s: MindIE needs maxPreemptCount <= maxBatchSize'
                   % (values['maxPreemptCount'], values['maxBatchSize'], origin('maxPreemptCount', 'maxBatchSize')))
    if has('maxPrefillBatchSize', 'maxBatchSize') and values['maxPrefillBatchSize'] > values['maxBatchSize']:
        out.append('maxPrefillBatchSize %d is more than maxBatchSize %d%s: MindIE needs maxPrefillBatchSize <= maxBatchSize'
                   % (values['maxPrefillBatchSize'], values['maxBatchSize'], origin('maxPrefillBatchSize', 'maxBatchSize')))
    if has('maxPreemptCount', 'cpuMemSize') and values['maxPreemptCount'] > 0 and values['cpuMemSize'] == 0:
        out.append('cpuMemSize is 0 while maxPreemptCount is %d%s: MindIE allows cpuMemSize 0 only when maxPreemptCount '
                   'is 0 (preempted requests swap their KV cache to CPU memory); set cpuMemSize (GB, MindIE suggests 5) '
                   'or maxPreemptCount 0' % (values['maxPreemptCount'], origin('maxPreemptCount', 'cpuMemSize')))
    if has('port', 'multiNodesInferPort') and values['port'] == values['multiNodesInferPort']:
        out.append('port and multiNodesInferPort are both %d%s: MindIE needs them different'
                   % (values['port'], origin('port', 'multiNodesInferPort')))
    if has('ipAddress') and values.get('allowAllZeroIpListening') is not True \
            and values['ipAddress'] in ('0.0.0.0', '::'):
        out.append('ipAddress %s listens on every address, which MindIE refuses unless allowAllZeroIpListening is true; '
                   'use the address of the service NIC' % values['ipAddress'])
    if has('npuDeviceIds') and not values.get('multiNodesInferEnabled'):
        groups = values['npuDeviceIds']
        if has('modelInstanceNumber') and len(groups) != values['modelInstanceNumber']:
            out.append('npuDeviceIds has %d list(s) but modelInstanceNumber is %d%s: MindIE needs one list of NPU ids per '
                       'model instance' % (len(groups), values['modelInstanceNumber'],
                                           origin('npuDeviceIds', 'modelInstanceNumber')))
        if has('worldSize'):
            for index, group in enumerate(groups):
                if len(group) != values['worldSize']:
                    out.append('npuDeviceIds[%d] %s has %d NPU(s) but worldSize is %d%s: each instance needs exactly '
                               'worldSize NPUs' % (index, _show(group), len(group), values['worldSize'],
                                                   origin('npuDeviceIds', 'worldSize')))
    return out


def _container(doc, section, model_index, create=False):
    """The dict of ``section`` in ``doc`` (None when absent and not ``create``); raises ValueError on a wrong shape."""
    node = doc
    walked = []
    for part in section:
        if part is None:
            if not isinstance(node, list) or not 0 <= model_index < len(node):
                count = len(node) if isinstance(node, list) else 0
                raise ValueError('model_index %d is out of range: %s holds %d model(s) (index 0 to %d)'
                                 % (model_index, '.'.join(walked), count, count - 1))
            node = node[model_index]
            walked[-1] += '[%d]' % model_index
        else:
            if not isinstance(node, dict):
                raise ValueError('%s is not a JSON object' % ('.'.join(walked) or 'the file'))
            if part not in node:
                if not create:
                    return None
                if part == 'ModelConfig':
                    raise ValueError('%s has no ModelConfig list' % '.'.join(walked))
                node[part] = {}
            node = node[part]
            walked.append(part)
    if not isinstance(node, dict):
        raise ValueError('%s is not a JSON object' % ('.'.join(walked) or 'the file'))
    return node


def file_values(doc, model_index=0):
    """The values of the known settings found in ``doc`` (absent ones left out); raises ValueError on a wrong shape."""
    out = {}
    for key, (section, _kind, _arg) in KEYS.items():
        node = _container(doc, section, model_index)
        if node is not None and key in node:
            out[key] = node[key]
    return out


def merge(doc, settings, model_index=0):
    """A deep copy of ``doc`` with every setting at its path; every other key and value is kept."""
    out = copy.deepcopy(doc)
    for key, value in settings.items():
        _container(out, KEYS[key][0], model_index, create=True)[key] = copy.deepcopy(value)
    return out


def config_problems(doc, settings, model_index=0):
    """Problems of a whole merged file: the kinds of the known keys it holds, and MindIE's rules among them."""
    try:
        values = file_values(doc, model_index)
    except ValueError as exc:
        return [str(exc)]
    out = []
    for key in sorted(values):
        problem = kind_problem(key, values[key])
        if problem:
            out.append(problem + ('' if key in settings else ' (in the file, at %s)' % json_path(key, model_index)))
    if out:
        return out
    try:
        models = _container(doc, DEPLOY, model_index).get('ModelConfig')
    except (ValueError, AttributeError):
        models = None
    if values.get('templateType', 'Standard') == 'Standard' and isinstance(models, list) and len(models) > 1:
        out.append('ModelConfig holds %d models but templateType Standard allows one' % len(models))
    return out + _cross_problems(values, settings)


def detect_indent(text):
    """The indent of a JSON text: a number of spaces, a tab, or 4 when it cannot be told (one-line files too)."""
    for line in text.splitlines()[1:]:
        match = re.match(r'^([ \t]+)\S', line)
        if match:
            lead = match.group(1)
            return '\t' if lead.startswith('\t') else len(lead)
    return 4


def render(doc, indent=4):
    """The file text of ``doc``: key order kept, non-ASCII kept, one trailing newline."""
    return json.dumps(doc, indent=indent, ensure_ascii=False, separators=(',', ': ')) + '\n'


def parse_mode(mode):
    """The int of a mode option (``'0640'``, ``'640'`` or an int); raises ValueError for anything else."""
    if _is_int(mode):
        return mode
    if isinstance(mode, str) and re.match(r'^0?[0-7]{3}$', mode.strip()):
        return int(mode.strip(), 8)
    raise ValueError('mode %s is not an octal mode such as 0640' % _show(mode))


FILE_KINDS = ((stat.S_ISDIR, 'a directory'), (stat.S_ISFIFO, 'a FIFO'), (stat.S_ISSOCK, 'a socket'),
              (stat.S_ISCHR, 'a character device'), (stat.S_ISBLK, 'a block device'))
# read the file itself, never what a link at its path points to; never block on a FIFO swapped in
READ_FLAGS = os.O_RDONLY | getattr(os, 'O_NOFOLLOW', 0) | getattr(os, 'O_NONBLOCK', 0) | getattr(os, 'O_CLOEXEC', 0)
BACKUP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, 'O_NOFOLLOW', 0) | getattr(os, 'O_CLOEXEC', 0)
BACKUP_TRIES = 10


def file_kind(mode):
    """What a non-regular file is, in words (``a FIFO``)."""
    for test, name in FILE_KINDS:
        if test(mode):
            return name
    return 'not a regular file'


def link_problem(path):
    """The refusal of a symbolic link at ``path``: what it points to and what to do."""
    try:
        target = os.readlink(path)
    except OSError:
        target = '?'
    resolved = os.path.realpath(path)
    missing = not os.path.exists(resolved)
    shown = target if resolved == target and not missing else '%s (%s%s)' % (
        target, resolved, ', which does not exist' if missing else '')
    where = 'the real config.json of MindIE' if missing else 'the real file, %s' % resolved
    return ('is a symbolic link to %s; the module does not read or write through a link (it would copy the target\'s '
            'content into a file the service user owns, and replace the link). Point path (role: mindie_config_path) at '
            '%s. Nothing was written.' % (shown, where))


def _write_all(fd, data):
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _read_all(fd, limit):
    chunks = []
    left = limit
    while left > 0:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b''.join(chunks)


def _account(value, lookup, field, what, fix):
    """The numeric id of an owner or group option (a name or a number), None when not given; raises ValueError."""
    if value is None or value == '':
        return None
    text = str(value).strip()
    if text.isdigit():
        return int(text)
    try:
        return getattr(lookup(text), field)
    except KeyError:
        kind = 'user' if what == 'owner' else 'group'
        raise ValueError('%s %s is not a %s on this host; %s' % (what, _show(text), kind, fix)) from None


class MindieConfig:
    """Read, merge, validate, write and verify one MindIE config.json (``module`` is the AnsibleModule).

    The file is opened without following a symbolic link at its path (``O_NOFOLLOW``) and checked on the opened
    descriptor, so a link put there between the check and the open is refused too. The new text is written to a
    temporary file beside it, given its owner, group and mode on the descriptor, and renamed over the file; a backup
    is created with ``O_EXCL`` (never through a link) from the bytes that were read. Owner, group and mode of an
    unchanged file are set on an opened descriptor as well, never by path.
    """

    def __init__(self, module, host):
        self.module = module
        self.host = host
        params = module.params
        self.path = params['path']
        self.settings = params['settings'] or {}
        self.model_index = params['model_index']
        self.mode = params['mode']
        self.stat = None

    def fail(self, text, **extra):
        raise ModuleFailure('%s on %s: %s' % (self.path, self.host, text), **extra)

    def open(self):
        """``(fd, stat)`` of the file opened read-only, after the existence and type checks (no link followed)."""
        path = self.path
        try:
            first = os.lstat(path)
        except FileNotFoundError:
            raise ModuleFailure('MindIE is not installed at %s on %s (no such file). Install MindIE Service, or point path '
                                '(role: mindie_config_path) at its conf/config.json (a whl install keeps it in '
                                '<install dir>/mindie_llm/conf/config.json). Nothing was written.' % (path, self.host)) from None
        except OSError as exc:
            self.fail('cannot be read (%s). Nothing was written.' % (exc.strerror or exc))
        if stat.S_ISLNK(first.st_mode):
            self.fail(link_problem(path))
        if not stat.S_ISREG(first.st_mode):
            self.fail('is not a regular file (%s); MindIE reads its settings from a regular config.json. Nothing was '
                      'written.' % file_kind(first.st_mode))
        try:
            fd = os.open(path, READ_FLAGS)
        except OSError as exc:
            if exc.errno == errno.ELOOP:       # a link put in place after the check
                self.fail(link_problem(path))
            self.fail('cannot be opened (%s). Nothing was written.' % (exc.strerror or exc))
        opened = os.fstat(fd)
        if not stat.S_ISREG(opened.st_mode):
            os.close(fd)
            self.fail('is not a regular file (%s); MindIE reads its settings from a regular config.json. Nothing was '
                      'written.' % file_kind(opened.st_mode))
        return fd, opened

    def read(self):
        """The file's bytes, after the existence, type and size checks; its stat in ``self.stat``."""
        fd, opened = self.open()
        try:
            size = opened.st_size
            if size == 0 or size > MAX_FILE_BYTES:
                self.fail('the file has %d bytes; MindIE reads a config.json of 1 byte to 10 MiB (%d bytes) only. Restore '
                          'the file from the MindIE package or a backup. Nothing was written.' % (size, MAX_FILE_BYTES))
            data = _read_all(fd, MAX_FILE_BYTES + 1)
        finally:
            os.close(fd)
        self.stat = opened
        return data

    def check_request(self):
        """The checks of the options that need no file: mode, owner, group and the settings alone; ``(mode, uid, gid)``."""
        try:
            mode = parse_mode(self.mode)
        except ValueError as exc:
            self.fail('%s. Nothing was written.' % exc)
        if mode & ~MAX_MODE:
            self.fail('mode %04o is wider than 0640: MindIE refuses to start with a config.json that has any permission '
                      'beyond owner read/write and group read. Use 0640 (or 0600). Nothing was written.' % mode)
        try:
            uid = _account(self.module.params['owner'], pwd.getpwnam, 'pw_uid', 'owner',
                           'create the user MindIE runs as first, or fix owner (role: mindie_config_owner)')
            gid = _account(self.module.params['group'], grp.getgrnam, 'gr_gid', 'group',
                           'create the group first, or fix group (role: mindie_config_group)')
        except ValueError as exc:
            self.fail('%s. Nothing was written.' % exc)
        problems = setting_problems(self.settings)
        if problems:
            self.fail('the settings are not valid for MindIE, so nothing was written: %s. Fix them in settings (role: '
                      'mindie_config_settings).' % '; '.join(problems), problems=problems)
        return mode, uid, gid

    def run(self):
        mode, uid, gid = self.check_request()
        raw = self.read()
        try:
            text = raw.decode('utf-8')
            doc = json.loads(text)
        except (UnicodeDecodeError, ValueError) as exc:
            self.fail('the file is not valid JSON (%s), so MindIE cannot read it either. Restore it from the MindIE package '
                      'or from a backup (config.json.<timestamp>~ beside it). Nothing was written.' % exc)
        if not isinstance(doc, dict):
            self.fail('the file holds a JSON %s, not the object of a MindIE config. Nothing was written.' % type(doc).__name__)
        try:
            before_values = file_values(doc, self.model_index)
            after_doc = merge(doc, self.settings, self.model_index)
        except ValueError as exc:
            self.fail('%s. Nothing was written.' % exc)
        problems = config_problems(after_doc, self.settings, self.model_index)
        if problems:
            self.fail('with these settings the file would break MindIE\'s own rules, so nothing was written: %s. Fix the '
                      'settings (role: mindie_config_settings) or the file.' % '; '.join(problems), problems=problems)

        changes = [{'key': key, 'path': json_path(key, self.model_index), 'before': before_values.get(key), 'after': value}
                   for key, value in sorted(self.settings.items()) if before_values.get(key, object()) != value
                   or type(before_values.get(key)) is not type(value)]
        content_changed = after_doc != doc or bool(changes)
        new_text = render(after_doc, detect_indent(text)) if content_changed else text
        attr_before, attr_after = self.attribute_changes(mode, uid, gid)
        result = {
            'changed': content_changed or bool(attr_before),
            'path': self.path,
            'changes': changes,
            'settings_before': before_values,
            'settings_after': dict((key, value) for key, value in file_values(after_doc, self.model_index).items()
                                   if key in self.settings),
            'backup_file': None,
            'problems': [],
        }
        self.warn_open_directory()
        if not self.module.check_mode:
            if content_changed:
                if self.module.params['backup']:
                    result['backup_file'] = self.backup(raw)
                self.write(new_text, mode, self.stat.st_uid if uid is None else uid,
                           self.stat.st_gid if gid is None else gid)
                self.verify()
            elif attr_before:
                self.set_attributes(mode, uid, gid)
        diffs = []
        if content_changed:
            diffs.append({'before': text, 'after': new_text, 'before_header': self.path, 'after_header': self.path})
        if attr_before:
            header = self.path + ' (owner, group, mode)'
            diffs.append({'before': attr_before, 'after': attr_after, 'before_header': header, 'after_header': header})
        if diffs:
            result['diff'] = diffs if len(diffs) > 1 else diffs[0]
        return result

    def attribute_changes(self, mode, uid, gid):
        """``(before, after)`` of the owner, group and mode that differ from the wanted ones (empty dicts when none)."""
        before, after = {}, {}
        have = self.stat
        if uid is not None and have.st_uid != uid:
            before['owner'], after['owner'] = have.st_uid, uid
        if gid is not None and have.st_gid != gid:
            before['group'], after['group'] = have.st_gid, gid
        if stat.S_IMODE(have.st_mode) != mode:
            before['mode'], after['mode'] = '%04o' % stat.S_IMODE(have.st_mode), '%04o' % mode
        return before, after

    def warn_open_directory(self):
        """A warning when every user may write the file's directory (anyone could then replace the file)."""
        directory = os.path.dirname(self.path) or '.'
        try:
            mode = os.stat(directory).st_mode
        except OSError:
            return
        if mode & stat.S_IWOTH:
            self.module.warn('%s on %s: the directory %s is writable by every user (mode %04o), so any local user can '
                             'replace the file MindIE reads. Make it writable by its owner only (chmod o-w %s).'
                             % (self.path, self.host, directory, stat.S_IMODE(mode), directory))

    def same_file(self, now):
        return not stat.S_ISLNK(now.st_mode) and (now.st_dev, now.st_ino) == (self.stat.st_dev, self.stat.st_ino)

    def backup(self, raw):
        """Write ``raw`` (the bytes read) to a new file beside the target, never through a link; its path."""
        have = self.stat
        stamp = time.strftime('%Y-%m-%d@%H:%M:%S', time.localtime(time.time()))
        base = '%s.%d.%s' % (self.path, os.getpid(), stamp)
        for attempt in range(BACKUP_TRIES):
            name = base + ('.%d~' % attempt if attempt else '~')
            try:
                fd = os.open(name, BACKUP_FLAGS, 0o600)
            except FileExistsError:           # also a link planted at the name: O_EXCL never follows it
                continue
            except OSError as exc:
                self.fail('the backup %s could not be created (%s); config.json was left as it is. Check the directory, '
                          'or set backup: false (role: mindie_config_backup).' % (name, exc.strerror or exc))
            try:
                _write_all(fd, raw)
                if (have.st_uid, have.st_gid) != (os.geteuid(), os.getegid()):
                    os.fchown(fd, have.st_uid, have.st_gid)
                os.fchmod(fd, stat.S_IMODE(have.st_mode) & MAX_MODE)   # never wider than what MindIE accepts
                if os.utime in os.supports_fd:
                    os.utime(fd, ns=(have.st_atime_ns, have.st_mtime_ns))
                os.fsync(fd)
            except OSError as exc:
                os.close(fd)
                os.unlink(name)
                self.fail('the backup %s could not be written (%s); config.json was left as it is.'
                          % (name, exc.strerror or exc))
            os.close(fd)
            return name
        self.fail('%d files named %s*~ exist already, so no backup could be created; config.json was left as it is. '
                  'Remove old backups.' % (BACKUP_TRIES, base))
        return None

    def write(self, text, mode, uid, gid):
        """Write ``text`` to a temporary file beside the target, with its owner, group and mode, and rename it over."""
        directory = os.path.dirname(self.path) or '.'
        try:
            fd, temp = tempfile.mkstemp(prefix='.config.json.', dir=directory)
        except OSError as exc:
            self.fail('no temporary file could be created in %s (%s); config.json was left as it is. Run the task as a '
                      'user that may write there (become: true).' % (directory, exc.strerror or exc))
        try:
            try:
                _write_all(fd, text.encode('utf-8'))
                os.fchmod(fd, mode)
                made = os.fstat(fd)
                if (made.st_uid, made.st_gid) != (uid, gid):
                    os.fchown(fd, uid, gid)
                os.fsync(fd)
            finally:
                os.close(fd)
            if self.module.selinux_enabled():
                self.module.set_context_if_different(temp, self.module.selinux_context(self.path), False)
            if not self.same_file(os.lstat(self.path)):
                self.fail('was replaced by another file or a link while the module ran; config.json was left as it is. '
                          'Find what else writes it, then run again.')
            os.rename(temp, self.path)
        except OSError as exc:
            self.fail('could not be written (%s); config.json was left as it is. Run the task as root (become: true).'
                      % (exc.strerror or exc))
        finally:
            if os.path.lexists(temp):
                os.unlink(temp)

    def set_attributes(self, mode, uid, gid):
        """Owner, group and mode of the unchanged file, set on an opened descriptor (never through a link)."""
        fd, now = self.open()
        try:
            if (now.st_dev, now.st_ino) != (self.stat.st_dev, self.stat.st_ino):
                self.fail('was replaced by another file while the module ran; nothing was changed. Find what else writes '
                          'it, then run again.')
            if (uid is not None and now.st_uid != uid) or (gid is not None and now.st_gid != gid):
                os.fchown(fd, -1 if uid is None else uid, -1 if gid is None else gid)
            if stat.S_IMODE(now.st_mode) != mode:
                os.fchmod(fd, mode)
        except OSError as exc:
            self.fail('owner, group or mode could not be set (%s). Run the task as root (become: true).'
                      % (exc.strerror or exc))
        finally:
            os.close(fd)

    def verify(self):
        """Read the file back: every setting must be there with its value."""
        fd, _opened = self.open()
        try:
            doc = json.loads(_read_all(fd, MAX_FILE_BYTES + 1).decode('utf-8'))
        finally:
            os.close(fd)
        have = file_values(doc, self.model_index)
        wrong = [key for key, value in self.settings.items() if have.get(key) != value]
        if wrong:
            self.fail('after writing, the file does not hold %s (read back: %s); another process may rewrite it. '
                      'Check what manages the file.' % (', '.join(sorted(wrong)), _show(dict((k, have.get(k)) for k in wrong))))
