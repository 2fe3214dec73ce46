# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parser for the iteration lines of Megatron-style training logs: MindSpeed-LLM, MindSpeed-MM, ModelLink
(AscendSpeed), Megatron-LM and Megatron-DeepSpeed.

Every framework prints one line per logging interval, ``|``-separated ``key: value`` fields after an
``iteration N/ M`` head (``training_log`` of Megatron-LM; ``mindspeed_llm/training/training.py``;
``mindspeed_llm/fsdp2/utils/train_monitor.py``; ``ascendspeed/training.py``). The values of one line are
averages over the interval: ``elapsed time per iteration (ms)`` is the time of one iteration. The field names
the frameworks use for the same quantity differ (``throughput per GPU (TFLOP/s/GPU)`` and ``TFLOPs``,
``global batch size`` and the ModelLink ``gloabl batch size``); the table below maps them to one key.
"""

from __future__ import annotations

import math
import re

from ansible_collections.npuops.ascend.plugins.module_utils._parsers._common import MAX_DIGITS, lines_of, to_int

STEP_KEYS = ('iteration', 'iterations', 'elapsed_ms', 'consumed_samples', 'consumed_tokens', 'global_batch_size',
             'lm_loss', 'grad_norm', 'tflops_per_npu', 'tokens_per_s', 'tokens_per_npu_per_s', 'samples_per_s',
             'mfu_pct', 'skipped', 'nan')

# field label (lower case, blanks collapsed) -> (step key, int or float)
FIELDS = {
    'elapsed time per iteration (ms)': ('elapsed_ms', float),
    'consumed samples': ('consumed_samples', int),
    'consumed tokens': ('consumed_tokens', int),
    'global batch size': ('global_batch_size', int),
    'gloabl batch size': ('global_batch_size', int),  # ModelLink / AscendSpeed README logs
    'lm loss': ('lm_loss', float),
    'grad norm': ('grad_norm', float),
    'throughput per gpu (tflop/s/gpu)': ('tflops_per_npu', float),
    'compute per gpu (tflop/s/gpu)': ('tflops_per_npu', float),
    'tflops': ('tflops_per_npu', float),  # AscendSpeed / Megatron-DeepSpeed: per device
    'tokens/s': ('tokens_per_s', float),  # MindSpeed-LLM FSDP2: all devices together
    'tokens per gpu per second (tgs)': ('tokens_per_npu_per_s', float),
    'tokens per gpu (tokens/s/gpu)': ('tokens_per_npu_per_s', float),
    'tokens/s/gpu inst/harmonic mean': ('tokens_per_npu_per_s', float),
    'samples per second': ('samples_per_s', float),
    'throughput(samples/s)': ('samples_per_s', float),
    'mfu': ('mfu_pct', float),  # MindSpeed-LLM FSDP2 prints MFU in percent
    'number of skipped iterations': ('skipped', int),
    'number of nan iterations': ('nan', int),
}
# 'loss' (MindSpeed-MM FSDP2) is the language-model loss when no 'lm loss' field is printed
_FALLBACK = {'loss': ('lm_loss', float)}

_HEAD_RE = re.compile(r'(?:^|[\s>\]:])iteration:?[ \t]*([0-9]+)(?:[ \t]*/[ \t]*([0-9]+))?[ \t]*$')
_NUMBER_RE = re.compile(r'[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?')
_NON_FINITE = ('nan', '-nan', 'inf', '-inf', '+inf')


def _label(key):
    return ' '.join(key.split()).lower()


def _value(text, kind):
    """(ok, number) of a field value: the first number of '1.2', '16601.3/17219.3' or '496.3 (avg 496.1)'.

    'nan' and 'inf' (a loss or grad norm that overflowed) read as None; anything else that is not a number
    is not ok.
    """
    text = text.strip()
    if text.lower() in _NON_FINITE:
        return True, None
    match = _NUMBER_RE.match(text)
    if not match or len(match.group(0)) > MAX_DIGITS + 8:
        return False, None
    rest = text[match.end():]
    if rest and not (rest[0] in '/ ' and (rest[0] == '/' or rest.lstrip().startswith('('))):
        return False, None
    word = match.group(0)
    if kind is int:
        number = to_int(word)
        return number is not None, number
    number = float(word)
    return math.isfinite(number), number if math.isfinite(number) else None


def _apply(step, parts):
    """Read ``key: value`` parts into ``step``; False when a known field has a value that is not a number."""
    fallback = {}
    for part in parts:
        key, sep, value = part.partition(':')
        if not sep:
            continue
        label = _label(key)
        target = FIELDS.get(label) or _FALLBACK.get(label)
        if target is None:
            continue
        ok, number = _value(value, target[1])
        if not ok:
            return False
        if label in _FALLBACK:
            fallback[target[0]] = number
        else:
            step[target[0]] = number
    for key, number in fallback.items():
        if step[key] is None:
            step[key] = number
    return True


def _step(line):
    """(step, pending fragment) of an iteration line, or (None, None) when it cannot be read."""
    parts = line.split('|')
    head = _HEAD_RE.search(parts[0])
    if head is None:
        return None, None
    step = dict.fromkeys(STEP_KEYS)
    step['iteration'] = to_int(head.group(1))
    step['iterations'] = to_int(head.group(2)) if head.group(2) is not None else None
    if step['iteration'] is None or (head.group(2) is not None and step['iterations'] is None):
        return None, None
    tail = parts[-1].strip() if len(parts) > 1 else None
    pending = tail if tail is not None and ':' not in tail else None
    if not _apply(step, parts[1:-1] if pending else parts[1:]) or step['elapsed_ms'] is None:
        return None, None
    return step, pending


def _continues(pending, line):
    """The '|' parts of ``line`` as the rest of a cut iteration line, or None when it is not its continuation."""
    parts = (pending + ' ' + line.strip()).strip().split('|')
    key, sep, _value = parts[0].partition(':')
    return parts if sep and (_label(key) in FIELDS or _label(key) in _FALLBACK) else None


def parse_train_log(text):
    """Parse the iteration lines of a MindSpeed / Megatron / ModelLink training log.

    Sample (``training_log`` of Megatron-LM / MindSpeed-LLM, fields cut for width)::

         [2026-06-22 19:28:40] iteration        5/      20 | consumed samples:          320 | elapsed time per iteration (ms): 1234.5 |
        throughput per GPU (TFLOP/s/GPU): 120.3 | global batch size:    64 | lm loss: 8.123456E+00 | grad norm: 1.234 |
        saving checkpoint at iteration       5 to ckpt

    (the first two lines are one line in a log; the parser joins a line cut after a ``|`` as it joins a line cut
    inside a field name). Returns ``{'steps': [{'iteration': 5, 'iterations': 20, 'elapsed_ms': 1234.5,
    'consumed_samples': 320, 'consumed_tokens': None, 'global_batch_size': 64, 'lm_loss': 8.123456,
    'grad_norm': 1.234, 'tflops_per_npu': 120.3, 'tokens_per_s': None, 'tokens_per_npu_per_s': None,
    'samples_per_s': None, 'mfu_pct': None, 'skipped': None, 'nan': None}], 'other_lines': 1, 'unparsed': []}``;
    ``skipped`` and ``nan`` come from ``number of skipped iterations`` and ``number of nan iterations``.

    A training log is mostly other output (arguments, warnings, checkpoints, framework chatter): those lines
    are only counted in ``other_lines`` (blank lines are not counted). A line that has both ``iteration`` and
    ``elapsed time per iteration`` but cannot be read (no ``iteration N`` head, an elapsed time or a known
    field that is not a number) goes to ``unparsed``. Any prefix before the head is accepted (timestamps,
    ``INFO [...] >>``, launcher prefixes such as ``[host:3]:``); the FSDP2 head ``iteration: N`` has no total
    (``iterations`` is None). A line cut inside a field name (``... | number of skipped`` then
    ``iterations: 0 | ...`` on the next line, as in the ModelLink READMEs) is joined with its continuation.
    A value of ``nan`` or ``inf`` reads as None; ``a/b`` and ``a (avg b)`` values read as ``a``.
    """
    out = {'steps': [], 'other_lines': 0, 'unparsed': []}
    pending = None
    for line in lines_of(text):
        if not line.strip():
            pending = None
            continue
        if 'elapsed time per iteration' in line.lower():
            step, pending = _step(line)
            if step is None:
                out['unparsed'].append(line)
            else:
                out['steps'].append(step)
            continue
        parts = _continues(pending, line) if pending is not None else None
        pending = None
        if parts is not None:
            step = dict(out['steps'][-1])
            tail = parts[-1].strip()
            cut = tail and ':' not in tail
            if _apply(step, parts[:-1] if cut else parts):
                out['steps'][-1] = step
                pending = tail if len(parts) > 1 and ':' not in tail else None
            else:
                out['unparsed'].append(line)
            continue
        out['other_lines'] += 1
    return out


PARSERS = {
    'train_log': parse_train_log,
}
