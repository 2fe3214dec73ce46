# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A load sweep against an OpenAI-compatible streaming endpoint (MindIE Service, vLLM): for each
concurrency level, N streamed requests from a pool of that many threads; per request the time to
the first token (TTFT), the time per output token after it (TPOT) and the latency; per level the
percentiles and the output tokens per second. Standard library only."""

from __future__ import annotations

import json
import math
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import http.client as http_client
from urllib.parse import urlsplit

PATHS = {'completions': '/v1/completions', 'chat': '/v1/chat/completions'}


class SweepError(Exception):
    """The endpoint or the options cannot be used at all."""


def percentile(values, pct):
    """Nearest-rank percentile of ``values`` (None for an empty list)."""
    ordered = sorted(values)
    if not ordered:
        return None
    rank = max(1, int(math.ceil(pct / 100.0 * len(ordered))))
    return ordered[min(rank, len(ordered)) - 1]


def _round(value, digits=2):
    return None if value is None else round(value, digits)


def parse_endpoint(endpoint):
    """(scheme, host, port, base path) of an http(s) URL; SweepError when it is not one."""
    parts = urlsplit(str(endpoint or ''))
    if parts.scheme not in ('http', 'https') or not parts.hostname:
        raise SweepError('endpoint %r is not an http:// or https:// URL with a host (e.g. http://127.0.0.1:1025)' % endpoint)
    try:
        port = parts.port or (443 if parts.scheme == 'https' else 80)
    except ValueError as exc:
        raise SweepError('endpoint %r has a bad port: %s' % (endpoint, exc)) from exc
    return parts.scheme, parts.hostname, port, parts.path.rstrip('/')


def _body(api, model, prompt, max_tokens):
    body = {'model': model, 'max_tokens': max_tokens, 'stream': True}
    if api == 'chat':
        body['messages'] = [{'role': 'user', 'content': prompt}]
    else:
        body['prompt'] = prompt
    return json.dumps(body).encode('utf-8')


def _chunk_text(api, data):
    try:
        choice = (data.get('choices') or [{}])[0]
    except (AttributeError, IndexError, TypeError):
        return ''
    if not isinstance(choice, dict):
        return ''
    if api == 'chat':
        delta = choice.get('delta') or {}
        return delta.get('content') or '' if isinstance(delta, dict) else ''
    return choice.get('text') or ''


def one_request(target, api, model, prompt, max_tokens, timeout):
    """One streamed request: {ok, ttft_ms, tpot_ms, latency_ms, tokens, error}."""
    scheme, host, port, base = target
    connection_class = http_client.HTTPSConnection if scheme == 'https' else http_client.HTTPConnection
    started = time.monotonic()
    first = last = None
    tokens = 0
    connection = connection_class(host, port, timeout=timeout)
    try:
        connection.request('POST', base + PATHS[api], body=_body(api, model, prompt, max_tokens),
                           headers={'Content-Type': 'application/json', 'Accept': 'text/event-stream'})
        response = connection.getresponse()
        if response.status != 200:
            text = response.read(500).decode('utf-8', 'replace').strip()
            return {'ok': False, 'error': 'HTTP %d %s: %s' % (response.status, response.reason, text)}
        while True:
            line = response.readline()
            if not line:
                break
            line = line.strip()
            if not line.startswith(b'data:'):
                continue
            payload = line[5:].strip()
            if payload == b'[DONE]':
                break
            try:
                data = json.loads(payload.decode('utf-8'))
            except ValueError:
                continue
            if _chunk_text(api, data):
                now = time.monotonic()
                first = now if first is None else first
                last = now
                tokens += 1
    except (OSError, http_client.HTTPException) as exc:
        return {'ok': False, 'error': '%s: %s' % (type(exc).__name__, exc)}
    finally:
        connection.close()
    ended = time.monotonic()
    if first is None:
        return {'ok': False, 'error': 'the stream ended without a token'}
    return {'ok': True, 'tokens': tokens, 'ttft_ms': (first - started) * 1000.0, 'latency_ms': (ended - started) * 1000.0,
            'tpot_ms': (last - first) * 1000.0 / (tokens - 1) if tokens > 1 else None, 'error': None}


def run_level(target, api, model, prompt, max_tokens, concurrency, requests, timeout):
    """``requests`` streamed requests, ``concurrency`` at a time: the level's figures."""
    lock = threading.Lock()
    results = []

    def task(_index):
        result = one_request(target, api, model, prompt, max_tokens, timeout)
        with lock:
            results.append(result)

    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        list(pool.map(task, range(requests)))
    wall = time.monotonic() - started
    good = [r for r in results if r['ok']]
    errors = [r['error'] for r in results if not r['ok']]
    ttft = [r['ttft_ms'] for r in good]
    tpot = [r['tpot_ms'] for r in good if r['tpot_ms'] is not None]
    latency = [r['latency_ms'] for r in good]
    tokens = sum(r['tokens'] for r in good)
    return {
        'concurrency': concurrency, 'requests': requests, 'succeeded': len(good), 'failed': len(errors),
        'errors': sorted(set(errors))[:5], 'wall_s': _round(wall, 3), 'output_tokens': tokens,
        'tokens_per_s': _round(tokens / wall if wall > 0 else None),
        'ttft_ms': {'mean': _round(sum(ttft) / len(ttft) if ttft else None), 'p50': _round(percentile(ttft, 50)),
                    'p99': _round(percentile(ttft, 99))},
        'tpot_ms': {'mean': _round(sum(tpot) / len(tpot) if tpot else None), 'p50': _round(percentile(tpot, 50)),
                    'p99': _round(percentile(tpot, 99))},
        'latency_ms': {'p50': _round(percentile(latency, 50)), 'p99': _round(percentile(latency, 99))},
    }


def sweep(endpoint, api='completions', model=None, prompt='', max_tokens=128, levels=(1, 8, 32, 128), requests=0,
          timeout=60):
    """Every level in order; ``requests`` per level (0: twice the level, at least 8)."""
    if api not in PATHS:
        raise SweepError('api %r is not one of %s' % (api, ', '.join(sorted(PATHS))))
    target = parse_endpoint(endpoint)
    out = []
    for level in levels:
        count = requests if requests > 0 else max(8, 2 * level)
        out.append(run_level(target, api, model, prompt, max_tokens, level, count, timeout))
    return out
