# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Stage 7, the serving engine: the KV cache size of MindIE (npuMemSize), the stage's variables and their problems,
the findings of the MindIE configuration, and the launch of a vLLM-Ascend service.

The MindIE rules themselves live in plugins/module_utils/_domain/mindie.py, shared with the mindie_config module.
"""

from __future__ import annotations

# _mindie is imported in the functions that use it: Ansible loads every filter file of the collection in each task
# that uses any of its filters, and the filter file of these functions imports this module, so it keeps its load light.

import json
import math
import re
import shlex
from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

from ansible_collections.npuops.ascend.plugins.module_utils._parsers._common import short_repr
from ansible_collections.npuops.ascend.plugins.plugin_utils import node_files
from ansible_collections.npuops.ascend.plugins.plugin_utils.findings import finding

MB_PER_GB = 1024
DEFAULT_FRACTION = 0.8            # MindIE's own NPU_MEMORY_FRACTION default for npuMemSize -1
ENGINES = ('mindie', 'vllm', 'none')
SERVICE_RE = re.compile(r'^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$')
ENV_NAME_RE = re.compile(r'^[A-Za-z_][A-Za-z0-9_]*$')

# vLLM options and variables that are gone, and why (sources in docs: config-facts of the collection)
GONE_ARGS = {
    'device': '--device is gone from vLLM: deprecated in vLLM PR #18399 ("Ascend NPU backend doesn\'t use this arg") '
              'and removed in v0.10.0 (PR #21349), so vllm serve now stops with an argparse error; the Ascend platform '
              'plugin is found automatically. Remove it',
    'swap-space': '--swap-space is gone from vLLM: it served the V0 engine only and is not an engine argument from '
                  'v0.18.0 (vLLM PR #36216); remove it',
}
# Secrets of the launch. vLLM reads the API key from VLLM_API_KEY when --api-key is not given (vllm
# entrypoints/openai/api_server.py build_app: ``args.api_key or [envs.VLLM_API_KEY]``), so the key never needs the
# command line, which every local user can read (ps, /proc/<pid>/cmdline).
API_KEY_ARG = 'api-key'
API_KEY_ENV = 'VLLM_API_KEY'
SECRET_ENV_RE = re.compile(r'TOKEN|KEY|SECRET|PASSWORD', re.I)
REDACTED = '<redacted>'
GONE_ENV = {
    'VLLM_USE_V1': 'VLLM_USE_V1 is gone from vLLM: V1 is the only engine (removed upstream; vllm-ascend PR #4086 '
                   '"Remove VLLM_USE_V1"), newer vLLM warns about it as unknown; remove it',
}


def _error(name, text):
    raise AnsibleFilterError('%s: %s' % (name, text))


def _number(name, what, value, minimum=0.0):
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        _error(name, '%s %s is not a number' % (what, short_repr(value)))
    try:
        number = float(value)
    except ValueError:
        _error(name, '%s %s is not a number' % (what, short_repr(value)))
    if math.isnan(number) or math.isinf(number):
        _error(name, '%s %s is not a finite number' % (what, short_repr(value)))
    if number < minimum:
        _error(name, '%s %s is negative; it must be %s or more' % (what, short_repr(value), minimum))
    return number


# --- npu_mem_size --------------------------------------------------------------------------------------------------

def _free_mb(npu, entry):
    """Free HBM (MB) of one NPU of an npu_info result: the info table (used/total), else the usages view."""
    info = entry.get('info') or {}
    total, used = info.get('hbm_total_mb'), info.get('hbm_used_mb')
    if isinstance(total, (int, float)) and not isinstance(total, bool) and total > 0 and isinstance(used, (int, float)):
        return float(total) - float(used)
    chips = (entry.get('usages') or {}).get('chips') or []
    chip = chips[0] if chips else {}
    capacity, pct = chip.get('hbm_capacity_mb'), chip.get('hbm_usage_pct')
    if isinstance(capacity, (int, float)) and capacity > 0 and isinstance(pct, (int, float)):
        return float(capacity) * (100.0 - float(pct)) / 100.0
    _error('npu_mem_size', 'NPU %s has no HBM figures in the npu_info result (neither info.hbm_total_mb/hbm_used_mb nor '
                           'usages.chips[0].hbm_capacity_mb/hbm_usage_pct); run npu_info with gather_subset [usages]' % npu)


def _npu_mem(npu_info, weights_gb, reserve_gb, fraction, devices):
    """``(size, wanted NPU ids, NPU with the least free HBM, its free GB)``; raises AnsibleFilterError."""
    name = 'npu_mem_size'
    if not isinstance(npu_info, Mapping) or not isinstance(npu_info.get('devices'), Mapping):
        _error(name, 'the input must be the registered result of npuops.ascend.npu_info (a dict with devices), got %s'
               % short_repr(npu_info))
    weights = _number(name, 'weights_gb', weights_gb)
    reserve = _number(name, 'reserve_gb', reserve_gb)
    share = _number(name, 'fraction', fraction)
    if not 0 < share <= 1:
        _error(name, 'fraction %s must be more than 0 and at most 1' % short_repr(fraction))
    entries = dict((str(key), value) for key, value in npu_info['devices'].items())
    wanted = [str(dev) for dev in (devices if devices is not None else sorted(entries, key=lambda k: int(k) if k.isdigit() else k))]
    if not wanted:
        _error(name, 'no NPU to size: the npu_info result lists no devices and none were given')
    missing = [dev for dev in wanted if dev not in entries]
    if missing:
        _error(name, 'NPU %s not in the npu_info result (it has %s)' % (', '.join(missing), ', '.join(sorted(entries)) or 'none'))
    free = dict((dev, _free_mb(dev, entries[dev] or {})) for dev in wanted)
    smallest = min(free, key=lambda dev: free[dev])
    free_gb = free[smallest] / MB_PER_GB
    size = int(math.floor((free_gb - weights - reserve) * share))
    if size <= 0:
        _error(name, 'NPU %s has %.1f GB of free HBM; %s GB of weights and %s GB of reserve leave nothing for the KV cache '
                     '(npuMemSize would be %d, MindIE needs -1 or more than 0). Use more NPUs per instance (a larger '
                     'worldSize spreads the weights), a smaller reserve, or npuMemSize -1'
               % (smallest, free_gb, short_repr(weights_gb), short_repr(reserve_gb), size))
    return size, wanted, smallest, free_gb


def npu_mem_size(npu_info, weights_gb, reserve_gb=0, fraction=DEFAULT_FRACTION, devices=None):
    """npuMemSize (GB per NPU) = floor((smallest free HBM of the instance's NPUs - weights - reserve) x fraction)."""
    return _npu_mem(npu_info, weights_gb, reserve_gb, fraction, devices)[0]


def _busy(npu_info, wanted):
    """The NPU ids of ``wanted`` that run a process, and a short list of those processes; None without a process table."""
    summary = npu_info.get('summary') if isinstance(npu_info, Mapping) else None
    processes = npu_info.get('processes') if isinstance(npu_info, Mapping) else None
    if not isinstance(summary, Mapping) or not isinstance(summary.get('busy'), list):
        if not isinstance(processes, list):
            return None, None
        ids = [proc.get('npu') for proc in processes if isinstance(proc, Mapping)]
    else:
        ids = list(summary['busy'])
    busy = sorted(set(int(npu) for npu in ids if str(npu).isdigit() and str(npu) in wanted))
    shown = ['pid %s %s on NPU %s, %s MB' % (proc.get('pid'), proc.get('name'), proc.get('npu'), proc.get('memory_mb'))
             for proc in (processes or []) if isinstance(proc, Mapping) and proc.get('npu') in busy]
    more = len(shown) - 3
    text = '; '.join(shown[:3]) + ('; %d more' % more if more > 0 else '')
    what = ('NPU %s runs a process' if len(busy) == 1 and len(shown) <= 1 else 'NPU %s run processes') % ', '.join(
        str(npu) for npu in busy)
    return busy, '%s (%s)' % (what, text or 'see npu-smi info')


def npu_mem_size_auto(npu_info, current, weights_gb, reserve_gb=0, fraction=DEFAULT_FRACTION, devices=None):
    """npuMemSize of ``mindie_config_npu_mem_size: auto`` for one node, decided once, the same way on every run.

    The free HBM of an NPU is what a KV cache can have only while no model is loaded on it: computed
    (:func:`npu_mem_size`) when no process runs on the instance's NPUs; while one does (the service runs, its KV cache
    fills the HBM), the value ``config.json`` already holds is kept, or, when it holds none, a problem.
    ``current`` is the registered result of a check-mode read of the file by the mindie_config module
    (``settings_before``). Returns ``{npuMemSize, source (computed, kept or None), busy, msg, problem}``.
    """
    out = {'npuMemSize': None, 'source': None, 'busy': [], 'msg': None, 'problem': None}
    entries = npu_info.get('devices') if isinstance(npu_info, Mapping) else None
    wanted = [str(dev) for dev in devices] if devices is not None else [str(key) for key in (entries or {})]
    busy, holders = _busy(npu_info, wanted)
    if busy is None:
        out['problem'] = ('npu_mem_size_auto: the npu_info result has no process table (summary.busy); run '
                          'npuops.ascend.npu_info with gather_subset [usages, processes]')
        return out
    out['busy'] = busy
    if not busy:
        try:
            size, wanted, smallest, free_gb = _npu_mem(npu_info, weights_gb, reserve_gb, fraction, devices)
        except AnsibleFilterError as exc:
            out['problem'] = str(exc.message if hasattr(exc, 'message') else exc)
            return out
        out.update(npuMemSize=size, source='computed',
                   msg='npuMemSize %d computed from the free HBM of NPU %s (no process on them): floor((%.1f GB free on '
                       'NPU %s - %s GB of weights - %s GB of reserve) x %s)'
                       % (size, ', '.join(wanted), free_gb, smallest, short_repr(weights_gb), short_repr(reserve_gb),
                          short_repr(fraction)))
        return out
    why = ('%s, so %s free HBM is what the running model leaves (mostly its KV cache), not what a KV cache can have'
           % (holders, 'its' if len(busy) == 1 else 'their'))
    if not isinstance(current, Mapping) or 'settings_before' not in current:
        reason = (current.get('msg') if isinstance(current, Mapping) else None) or 'no result'
        out['problem'] = ('npuMemSize auto cannot be computed now: %s, and config.json could not be read (%s). Fix the '
                          'file, or stop the service (or those processes) and run the stage again' % (why, reason))
        return out
    value = (current.get('settings_before') or {}).get('npuMemSize')
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        out.update(npuMemSize=value, source='kept',
                   msg='npuMemSize %d kept from config.json: %s. Stop the service and run the stage again to compute it '
                       'anew' % (value, why))
        return out
    held = 'no npuMemSize' if value is None else 'npuMemSize %s' % short_repr(value)
    out['problem'] = ('npuMemSize auto cannot be computed now: %s, and config.json holds %s (no value to keep). Stop the '
                      'service (or those processes) and run the stage again, or set mindie_config_npu_mem_size to a '
                      'number of GB, or to -1 to let MindIE size the KV cache itself when it starts' % (why, held))
    return out


# --- vllm_launch ---------------------------------------------------------------------------------------------------

def _arg_name(key):
    return str(key).strip().lstrip('-').replace('_', '-')


def is_secret_env(name):
    """True for an environment variable whose value is a secret (its name holds TOKEN, KEY, SECRET or PASSWORD)."""
    return bool(SECRET_ENV_RE.search(str(name)))


def _shown(name, value):
    return REDACTED if is_secret_env(name) else short_repr(value)


def _vllm_problems(values):
    out = []
    model = values.get('vllm_model')
    if not isinstance(model, str) or not model.strip():
        out.append('mindie_config_vllm_model must name the model to serve (a path or a Hugging Face id), got %s'
                   % short_repr(model))
    args = values.get('vllm_args') or {}
    if not isinstance(args, Mapping):
        out.append('mindie_config_vllm_args must be a dict of vllm serve options (tensor-parallel-size: 8), got %s'
                   % REDACTED)
        args = {}
    env = values.get('vllm_env') or {}
    if not isinstance(env, Mapping):
        out.append('mindie_config_vllm_env must be a dict of environment variables, got %s' % REDACTED)
        env = {}
    for key, value in args.items():
        arg = _arg_name(key)
        if arg in GONE_ARGS:
            out.append('mindie_config_vllm_args %s: %s' % (key, GONE_ARGS[arg]))
        elif not re.match(r'^[a-z0-9][a-z0-9-]*$', arg):
            out.append('mindie_config_vllm_args %s is not a vllm serve option name' % short_repr(key))
        elif arg == API_KEY_ARG:
            if isinstance(value, bool) or not isinstance(value, (str, int)) or not str(value).strip():
                out.append('mindie_config_vllm_args %s must be one key (a string): it is passed to vllm serve as %s, which '
                           'holds one key; got %s' % (key, API_KEY_ENV, REDACTED))
            elif API_KEY_ENV in env:
                out.append('the API key is given twice: mindie_config_vllm_args %s and mindie_config_vllm_env %s; keep one'
                           % (key, API_KEY_ENV))
        elif arg == 'hf-token' and value is not True and value not in (False, None):
            out.append('mindie_config_vllm_args %s would put the token on the command line of vllm serve, which every local '
                       'user can read (ps); set HF_TOKEN in mindie_config_vllm_env instead (kept in a file of its own, out '
                       'of the reports and the diff)' % key)
    for key, value in env.items():
        if key in GONE_ENV:
            out.append('mindie_config_vllm_env %s: %s' % (key, GONE_ENV[key]))
        elif not ENV_NAME_RE.match(str(key)):
            out.append('mindie_config_vllm_env %s is not an environment variable name' % short_repr(key))
        elif isinstance(value, (Mapping, list)) or value is None:
            out.append('mindie_config_vllm_env %s must be a string or a number, got %s' % (key, _shown(key, value)))
    return out


def vllm_launch(values, secrets=False):
    """The env files and the launch script of a vLLM-Ascend service.

    Returns ``{argv, env_text, script_text, secret_env_path, secret_names, env_redacted}`` and, with ``secrets``,
    ``secret_env_text``: the text of the file that holds the API key (``VLLM_API_KEY``) and every variable whose name
    marks a secret. Nothing else returned holds a secret value.
    """
    problems = _vllm_problems(values) if isinstance(values, Mapping) else ['the input must be a dict']
    service = values.get('service') if isinstance(values, Mapping) else None
    if not isinstance(service, str) or not SERVICE_RE.match(service):
        problems.append('mindie_config_service %s must be a name of letters, digits, ".", "_" and "-"' % short_repr(service))
    if problems:
        _error('vllm_launch', '; '.join(problems))
    argv = ['vllm', 'serve', values['vllm_model'].strip()]
    env = dict((str(key), str(value)) for key, value in (values.get('vllm_env') or {}).items())
    for key, value in (values.get('vllm_args') or {}).items():
        flag = '--' + _arg_name(key)
        if _arg_name(key) == API_KEY_ARG:
            env[API_KEY_ENV] = str(value).strip()
        elif value is True:
            argv.append(flag)
        elif value is False or value is None:
            continue
        elif isinstance(value, (Mapping, list)):
            argv += [flag, json.dumps(value, sort_keys=True, separators=(',', ':'))]
        else:
            argv += [flag, str(value)]
    env_path = values.get('env_path') or '/etc/npuops/vllm-%s.env' % service
    secret_path = values.get('secret_env_path') or '%s/vllm-%s.secrets' % (env_path.rsplit('/', 1)[0] or '', service)
    secret_names = sorted(name for name in env if is_secret_env(name))
    env_lines = ['# managed by npuops.ascend: environment of the vLLM-Ascend service %s' % service]
    env_lines += ['%s=%s' % (key, shlex.quote(value)) for key, value in sorted(env.items()) if key not in secret_names]
    script = [
        '#!/bin/sh',
        '# managed by npuops.ascend: launch of the vLLM-Ascend service %s (plain vllm serve; the Ascend platform' % service,
        '# plugin is found automatically)',
        'set -a',
        '. %s' % shlex.quote(env_path),
    ]
    if secret_names:
        script.append('. %s' % shlex.quote(secret_path))
    script += ['set +a', 'exec %s "$@"' % ' '.join(shlex.quote(part) for part in argv)]
    out = {'argv': argv, 'env_text': '\n'.join(env_lines) + '\n', 'script_text': '\n'.join(script) + '\n',
           'secret_env_path': secret_path, 'secret_names': secret_names,
           'env_redacted': dict((key, REDACTED if key in secret_names else value) for key, value in env.items())}
    if secrets:
        lines = ['# managed by npuops.ascend: secrets of the vLLM-Ascend service %s (not shown in reports or diffs)' % service]
        lines += ['%s=%s' % (key, shlex.quote(env[key])) for key in secret_names]
        out['secret_env_text'] = '\n'.join(lines) + '\n'
    return out


# --- mindie_config_problems ----------------------------------------------------------------------------------------

def mindie_config_problems(values):
    """Every problem of the stage 7 variables of one node, from the inventory alone: a list of sentences."""
    from ansible_collections.npuops.ascend.plugins.module_utils._domain import mindie as _mindie  # pylint: disable=import-outside-toplevel
    if not isinstance(values, Mapping):
        return ['the stage 7 variables must be a dict, got %s' % short_repr(values)]
    out = []
    engine = values.get('engine')
    if engine not in ENGINES:
        return ['mindie_config_engine must be one of %s, got %s' % (', '.join(ENGINES), short_repr(engine))]
    service = values.get('service')
    if not isinstance(service, str) or not SERVICE_RE.match(service):
        out.append('mindie_config_service %s must be a name of letters, digits, ".", "_" and "-"' % short_repr(service))
    settings = values.get('settings') or {}
    vllm_given = [name for name in ('vllm_model', 'vllm_args', 'vllm_env') if values.get(name)]
    if engine == 'mindie':
        if vllm_given:
            out.append('service %s is configured for both engines: mindie_config_engine is mindie but %s are set. One '
                       'service runs one engine; clear them or set mindie_config_engine: vllm'
                       % (service, ', '.join('mindie_config_' + name for name in vllm_given)))
        mem = values.get('npu_mem_size')
        if isinstance(settings, Mapping) and mem not in (None, '') and 'npuMemSize' in settings:
            out.append('npuMemSize is given twice: in mindie_config_settings and as mindie_config_npu_mem_size %s; keep one'
                       % short_repr(mem))
        if mem == 'auto':
            weights = values.get('weights_gb')
            if isinstance(weights, bool) or not isinstance(weights, (int, float)) or weights < 0:
                out.append('mindie_config_npu_mem_size auto needs mindie_config_weights_gb, the weights per NPU in GB '
                           '(0 or more), got %s' % short_repr(weights))
        elif mem not in (None, ''):
            problem = _mindie.kind_problem('npuMemSize', mem)
            if problem:
                out.append('mindie_config_npu_mem_size must be auto, null or a valid npuMemSize: %s' % problem)
        mode = values.get('mode')
        try:
            if _mindie.parse_mode(mode) & ~_mindie.MAX_MODE:
                out.append('mindie_config_mode %s is wider than 0640, which MindIE refuses; use 0640 or 0600' % mode)
        except ValueError as exc:
            out.append('mindie_config_mode: %s' % exc)
        out.extend(_mindie.setting_problems(settings))
    elif engine == 'vllm':
        if settings:
            out.append('service %s is configured for both engines: mindie_config_engine is vllm but mindie_config_settings '
                       'is set. One service runs one engine; clear mindie_config_settings or set mindie_config_engine: '
                       'mindie' % service)
        out.extend(_vllm_problems(values))
    return out


def mindie_config_problem_lines(pair):
    """``host: problem`` lines of one node from the pair ``[problems, host]`` (a list, one sentence or None), for the
    asserts that stop the stage on every node."""
    problems, host = pair
    if isinstance(problems, str):
        problems = [problems] if problems else []
    return ['%s: %s' % (host, problem) for problem in problems or []]


# --- mindie_config_findings ----------------------------------------------------------------------------------------

def mindie_config_findings(result, settings, host, file_text=None, model_index=0):
    """Gate findings of stage 7 (MindIE): the module's problems, or every setting the file does not hold."""
    from ansible_collections.npuops.ascend.plugins.module_utils._domain import mindie as _mindie  # pylint: disable=import-outside-toplevel
    check = 'mindie_config'
    if not isinstance(result, Mapping) or result.get('skipped'):
        return []
    # registered with failed_when: false, a failed result has failed: false; it has no values
    if result.get('failed') or result.get('problems') or 'settings_after' not in result:
        problems = result.get('problems') or [result.get('msg') or 'the task failed without a message']
        return [finding(host, None, check, None, 'MindIE rules', problem) for problem in problems]
    if file_text:
        try:
            have = _mindie.file_values(json.loads(file_text), int(model_index))
        except ValueError as exc:
            return [finding(host, None, check, None, 'valid JSON', '%s is not readable after writing: %s'
                            % (result.get('path'), exc))]
    else:
        have = dict(result.get('settings_after') or {})
    out = []
    for key, value in sorted((settings or {}).items()):
        if key not in have or have[key] != value:
            out.append(finding(host, None, check, have.get(key), value, '%s holds %s = %s, not %s'
                               % (result.get('path'), key, short_repr(have.get(key)), short_repr(value))))
    return out


# --- the stage action (npuops.ascend.stage_serving) ----------------------------------------------------------------

def npu_mem_findings(host, decided):
    """The findings of a node's npuMemSize decision (:func:`npu_mem_size_auto`): one failure when it could not be
    decided."""
    if not isinstance(decided, Mapping) or not decided.get('problem'):
        return []
    return [finding(host, None, 'npu_mem_size', None, 'npuMemSize', decided['problem'])]


def checks_of_records(records, missing):
    """The nodes' checks ``{host, problems, npu_mem}`` (what :func:`settings_message` and :func:`npu_mem_message` read)
    from their check records of stage 7 (node -> record) and, for a node without a usable record (node -> why), that
    reason as its problem; in node order, the records first."""
    out = [{'host': node, 'problems': list(record.get('problems') or []),
            'npu_mem': (record.get('data') or {}).get('npu_mem')} for node, record in (records or {}).items()]
    return out + [{'host': node, 'problems': [text], 'npu_mem': None} for node, text in (missing or {}).items()]


def settings_message(checks):
    """The message that stops stage 7 when the variables of any node have problems, else None.

    ``checks`` are the nodes' results of the check step in play order, each ``{host, problems}``."""
    lines = []
    for check in checks:
        if isinstance(check, Mapping):
            lines += mindie_config_problem_lines([check.get('problems'), check.get('host')])
    if not lines:
        return None
    return ('The stage 7 settings are not usable (%d problem(s)), so nothing was written on any node: %s'
            % (len(lines), ' | '.join(lines)))


def npu_mem_message(checks):
    """The message that stops stage 7 when the npuMemSize of any node could not be decided, else None."""
    lines = []
    for check in checks:
        if isinstance(check, Mapping):
            decided = check.get('npu_mem') or {}
            lines += mindie_config_problem_lines([decided.get('problem') or '', check.get('host')])
    if not lines:
        return None
    return 'Stage 7 stopped before anything was written on any node: %s' % ' | '.join(lines)


def effective_settings(settings, npu_mem_size, decided=None):
    """The MindIE settings written to config.json: ``settings`` and npuMemSize - none added when
    ``npu_mem_size`` is null or empty, the decided value with ``auto``, else the number given."""
    out = dict(settings or {})
    if npu_mem_size in (None, ''):
        return out
    if npu_mem_size == 'auto':
        out['npuMemSize'] = (decided or {}).get('npuMemSize')
    else:
        out['npuMemSize'] = _whole(npu_mem_size)
    return out


def _whole(value):
    """A whole number the way Jinja's int filter reads it (a number's text, a float cut down), 0 when it is none."""
    try:
        return int(value)
    except (TypeError, ValueError):
        try:
            return int(float(value))
        except (TypeError, ValueError):
            return 0


def bench_model(model, settings):
    """The served model name the load sweep asks for: ``model``, else modelName of the settings (none there: '')."""
    return model or (settings or {}).get('modelName', '')


# The judgement of the load sweep. The method (stage 7, its verification): sweep concurrency 1 / 8 / 32 / 128 and
# record TTFT, TPOT and tokens/s; healthy is throughput rising monotonically with concurrency, TPOT rising gently and
# P99 less than 2 x P50; a sudden P99 rise usually means requests queue or are preempted.
BENCH_SOURCE = 'the method, stage 7 verification'
BENCH_P99_P50_MAX = 2.0           # the method: P99 less than 2 x P50
BENCH_KNEE_GAIN_PCT = 10.0        # a step that gains less than this is flat: the knee (ours; the method gives no figure)
BENCH_SEVERITIES = ('fail', 'warn')


def _figure(value):
    """A finite number of a sweep's result, else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return None if math.isnan(value) or math.isinf(value) else float(value)


def _pct(value):
    return '%g' % round(value, 1)


def bench_judgement(levels, knee_gain_pct=BENCH_KNEE_GAIN_PCT, p99_p50_max=BENCH_P99_P50_MAX):
    """The judgement of a load sweep (the ``levels`` of npuops.ascend.serving_bench).

    The levels that streamed output (succeeded and tokens/s above 0) in order of concurrency, each with its gain of
    output tokens/s over the level before (percent) and the ratio P99 / P50 of its latency. The knee is the concurrency
    after which throughput stops rising meaningfully: the level before the first step that gains less than
    ``knee_gain_pct``; none when every step gains more (the sweep did not reach saturation) or fewer than two levels
    streamed. ``saturation_tokens_per_s`` is the highest output tokens/s of the sweep when it has a knee. ``drops``:
    levels whose tokens/s are more than ``knee_gain_pct`` below the best of the lower levels (throughput falls as
    concurrency rises); ``tails``: levels whose P99 latency is more than ``p99_p50_max`` x their P50; ``errors``:
    levels with failed requests.
    """
    band = _number('bench_judgement', 'knee_gain_pct', knee_gain_pct)
    limit = _number('bench_judgement', 'p99_p50_max', p99_p50_max)
    rows, errors = [], []
    for level in levels if isinstance(levels, list) else []:
        if not isinstance(level, Mapping) or _figure(level.get('concurrency')) is None:
            continue
        failed = _figure(level.get('failed')) or 0
        if failed > 0:
            errors.append({'concurrency': level['concurrency'], 'failed': int(failed),
                           'requests': level.get('requests'), 'errors': list(level.get('errors') or [])[:3]})
        rate = _figure(level.get('tokens_per_s'))
        if (_figure(level.get('succeeded')) or 0) <= 0 or not rate or rate <= 0:
            continue
        latency = level.get('latency_ms') if isinstance(level.get('latency_ms'), Mapping) else {}
        p50, p99 = _figure(latency.get('p50')), _figure(latency.get('p99'))
        rows.append({'concurrency': level['concurrency'], 'tokens_per_s': rate, 'gain_pct': None,
                     'p50_ms': p50, 'p99_ms': p99,
                     'p99_p50': round(p99 / p50, 2) if p50 and p99 is not None and p50 > 0 else None})
    rows.sort(key=lambda row: row['concurrency'])
    knee, drops = None, []
    for index in range(1, len(rows)):
        before, row = rows[index - 1], rows[index]
        row['gain_pct'] = round((row['tokens_per_s'] - before['tokens_per_s']) * 100.0 / before['tokens_per_s'], 1)
        if knee is None and row['gain_pct'] < band:
            knee = before['concurrency']
        best = max(rows[:index], key=lambda item: item['tokens_per_s'])
        fall = (best['tokens_per_s'] - row['tokens_per_s']) * 100.0 / best['tokens_per_s']
        if fall > band:
            drops.append({'concurrency': row['concurrency'], 'tokens_per_s': row['tokens_per_s'],
                          'from_concurrency': best['concurrency'], 'from_tokens_per_s': best['tokens_per_s'],
                          'fall_pct': round(fall, 1)})
    peak = max(rows, key=lambda item: item['tokens_per_s']) if rows else None
    tails = [dict(row) for row in rows if row['p99_p50'] is not None and row['p99_ms'] > limit * row['p50_ms']]
    out = {'levels': rows, 'knee': knee, 'saturated': knee is not None,
           'saturation_tokens_per_s': peak['tokens_per_s'] if peak and knee is not None else None,
           'peak_tokens_per_s': peak['tokens_per_s'] if peak else None,
           'peak_concurrency': peak['concurrency'] if peak else None,
           'drops': drops, 'tails': tails, 'errors': errors,
           'knee_gain_pct': band, 'p99_p50_max': limit, 'source': BENCH_SOURCE}
    out['summary'] = bench_knee_text(out)
    return out


def bench_knee_text(judged):
    """One sentence on the knee and the saturation throughput of a judged sweep (:func:`bench_judgement`)."""
    if not isinstance(judged, Mapping):
        return 'not judged'
    rows = judged.get('levels') or []
    if len(rows) < 2:
        return 'no knee: fewer than two levels streamed output, so throughput cannot be compared across concurrency'
    if judged.get('knee') is None:
        last = rows[-1]
        return ('no knee within the sweep: throughput still rose %s %% from concurrency %s to %s (%s tokens/s), more '
                'than the %s %% of a meaningful step; add a higher concurrency level to find saturation'
                % (_pct(last['gain_pct']), rows[-2]['concurrency'], last['concurrency'], _pct(last['tokens_per_s']),
                   _pct(judged['knee_gain_pct'])))
    after = [row for row in rows if row['concurrency'] > judged['knee']][0]
    return ('knee at concurrency %s: the next level (%s) gains %s %%, less than %s %%; saturation throughput %s output '
            'tokens/s (at concurrency %s)' % (judged['knee'], after['concurrency'], _pct(after['gain_pct']),
                                              _pct(judged['knee_gain_pct']), _pct(judged['saturation_tokens_per_s']),
                                              judged['peak_concurrency']))


def bench_findings(host, endpoint, result, p99_p50_max=BENCH_P99_P50_MAX, knee_gain_pct=BENCH_KNEE_GAIN_PCT,
                   p99_severity='warn', drop_severity='fail'):
    """The findings of the load sweep of one node: a warning when it reached nothing (its result has no levels);
    else its judgement (:func:`bench_judgement`): throughput that falls as concurrency rises (``drop_severity``),
    P99 latency above ``p99_p50_max`` x P50 at a level (``p99_severity``), failed requests at a level (a warning)."""
    if not isinstance(result, Mapping):
        return []
    if 'levels' not in result:
        return [finding(host, None, 'serving_bench', None, 'answers', 'the load sweep of %s failed: %s'
                        % (endpoint, result.get('msg', '?')), severity='warn')]
    for name, severity in (('p99_severity', p99_severity), ('drop_severity', drop_severity)):
        if severity not in BENCH_SEVERITIES:
            _error('bench_findings', '%s must be fail or warn, got %s' % (name, short_repr(severity)))
    judged = bench_judgement(result.get('levels'), knee_gain_pct, p99_p50_max)
    band, limit = _pct(judged['knee_gain_pct']), _pct(judged['p99_p50_max'])
    out = []
    for drop in judged['drops']:
        out.append(finding(
            host, None, 'serving_throughput', drop['tokens_per_s'], '>= %s tokens/s' % _pct(drop['from_tokens_per_s']),
            'the load sweep of %s: output throughput falls to %s tokens/s at concurrency %s from %s tokens/s at '
            'concurrency %s (-%s %%, more than %s %%); throughput must rise with concurrency until it saturates and '
            'then hold (threshold: %s; the band is mindie_config_bench_knee_gain_pct). Falling throughput under load '
            'means preemption or KV cache swapping: lower maxBatchSize or give the KV cache more HBM (npuMemSize)'
            % (endpoint, _pct(drop['tokens_per_s']), drop['concurrency'], _pct(drop['from_tokens_per_s']),
               drop['from_concurrency'], _pct(drop['fall_pct']), band, BENCH_SOURCE), severity=drop_severity))
    for tail in judged['tails']:
        out.append(finding(
            host, None, 'serving_p99', tail['p99_p50'], '<= %s x P50' % limit,
            'the load sweep of %s: at concurrency %s the P99 latency %s ms is %s x the P50 (%s ms), more than %s x '
            '(threshold: %s, P99 less than 2 x P50; mindie_config_bench_p99_p50_max). A P99 jump means requests '
            'queue or are preempted' % (endpoint, tail['concurrency'], _pct(tail['p99_ms']), '%g' % tail['p99_p50'],
                                        _pct(tail['p50_ms']), limit, BENCH_SOURCE), severity=p99_severity))
    for error in judged['errors']:
        out.append(finding(
            host, None, 'serving_errors', error['failed'], 0,
            'the load sweep of %s: %s of %s requests failed at concurrency %s (%s); the figures of that level count '
            'only the others' % (endpoint, error['failed'], error['requests'], error['concurrency'],
                                 '; '.join(error['errors']) or 'no error text'), severity='warn'))
    return out


def secrets_message(path, names, changed, check_mode):
    """What the run says of the secrets file of a vLLM launch: its path, the names of the secrets and whether it was
    written; never a value."""
    what = 'unchanged' if not changed else 'would be written' if check_mode else 'was written'
    return '%s %s: %s (the values are never shown)' % (path, what, ', '.join('%s=%s' % (name, REDACTED) for name in names))


# the files of stage 7 in the ``files`` of the node's record (what the drift audit compares): their modes as the node
# step writes them (MindIE's config.json: the mindie_config module's default when no mode is given)
MINDIE_MODE = '0640'
VLLM_ENV_MODE = '0640'
VLLM_SECRETS_MODE = '0640'
VLLM_SCRIPT_MODE = '0750'


def vllm_paths(directory, service):
    """``{vllm_env, vllm_script}``: the paths of the environment file and the launch script the node step writes in
    ``directory`` (mindie_config_vllm_dir)."""
    return {'vllm_env': '%s/vllm-%s.env' % (directory, service), 'vllm_script': '%s/vllm-%s.sh' % (directory, service)}


def _mode_text(mode, default):
    """An octal mode option as four digits ('640', '0640' or the int 0o640 give '0640'); ``default`` when not given."""
    if mode is None or mode == '':
        return default
    if isinstance(mode, int) and not isinstance(mode, bool):
        return '%04o' % mode
    text = str(mode).strip()
    return '%04o' % int(text, 8) if re.match(r'^0?[0-7]{3}$', text) else text


def _file(kind, path, text, owner, group, mode):
    return {'kind': kind, 'path': path, 'checksum': None if text is None else node_files.checksum(text),
            'owner': owner, 'group': group, 'mode': mode}


def mindie_files(path, result, text, module_args):
    """The record's ``files`` of a MindIE node: ``[{kind: mindie_config, path, checksum, owner, group, mode}]``, the
    checksum the SHA-1 of ``text``, the file as read back after the write (null when it was not read: check mode),
    owner and group as the mindie_config module was given them (null when not given: the module leaves the file's
    own), the mode as given or the module's default 0640. Empty when the module refused the settings or failed (it
    wrote nothing)."""
    if not isinstance(result, Mapping) or result.get('failed') or result.get('problems') or 'settings_after' not in result:
        return []
    module_args = module_args if isinstance(module_args, Mapping) else {}
    return [_file('mindie_config', path, text, module_args.get('owner'), module_args.get('group'),
                  _mode_text(module_args.get('mode'), MINDIE_MODE))]


def vllm_files(launch, paths, owner, group):
    """The record's ``files`` of a vLLM-Ascend node, in the order they are written: the environment file
    (``vllm_env``), the secrets file (``vllm_secrets``, only when the launch has secrets; its checksum is always null,
    no trace of a secret is kept) and the launch script (``vllm_script``), with the SHA-1 of the texts of
    :func:`vllm_launch` and the owner, group and modes the node step sets. ``paths`` as :func:`vllm_paths` gives."""
    out = [_file('vllm_env', paths['vllm_env'], launch['env_text'], owner, group, VLLM_ENV_MODE)]
    if launch.get('secret_names'):
        out.append(_file('vllm_secrets', launch['secret_env_path'], None, owner, group, VLLM_SECRETS_MODE))
    out.append(_file('vllm_script', paths['vllm_script'], launch['script_text'], owner, group, VLLM_SCRIPT_MODE))
    return out


def report_entry(host, run_id, values, effective=None, result=None, npu_mem=None, launch=None, findings=None,
                 sweep=None, judged=None):
    """The serving configuration of one node: the content of ``<node>.json`` of the stage report and the ``data`` of
    its record (which the report of the PoD reads), with the judgement of the load sweep (``judged``, from
    :func:`bench_judgement`: the knee and the saturation tokens/s). No secret: the vLLM argv has none, the environment's
    secret values read <redacted>."""
    engine = values.get('engine')
    if engine == 'mindie':
        path = values.get('path')
    elif engine == 'vllm':
        path = '%s/vllm-%s.sh' % (values.get('vllm_dir'), values.get('service'))
    else:
        path = None
    result = result if isinstance(result, Mapping) else {}
    return {
        'host': host,
        'run': run_id,
        'engine': engine,
        'service': values.get('service'),
        'file': path,
        'settings': dict(effective or {}),
        'changes': result.get('changes', []),
        'backup_file': result.get('backup_file'),
        'npu_mem_size': npu_mem,
        'vllm_argv': (launch or {}).get('argv'),
        'vllm_env': (launch or {}).get('env_redacted'),
        'findings': list(findings or []),
        'load_sweep': sweep.get('levels') if isinstance(sweep, Mapping) else None,
        'sweep_judgement': judged,
    }
