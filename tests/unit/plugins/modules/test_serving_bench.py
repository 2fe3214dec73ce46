"""serving_bench against a stub OpenAI-compatible streaming server on 127.0.0.1 (server-sent events, one token per
chunk, a fixed delay before the first token and between tokens), so that TTFT, TPOT and tokens/s can be checked."""

from __future__ import annotations

import json
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from ansible_collections.npuops.ascend.plugins.module_utils._domain import serving as _serving
from ansible_collections.npuops.ascend.plugins.modules import serving_bench

FIRST_S = 0.05     # time to the first token
GAP_S = 0.01       # time between tokens


class Stub(BaseHTTPRequestHandler):
    """POST /v1/completions or /v1/chat/completions: max_tokens chunks of one token, then [DONE]."""

    seen = []
    lock = threading.Lock()

    def log_message(self, *args):  # quiet
        pass

    def do_POST(self):  # noqa: N802 (the http.server API)
        body = json.loads(self.rfile.read(int(self.headers['Content-Length'])))
        with self.lock:
            self.seen.append((self.path, body))
        if body.get('model') != 'm1':
            self.send_response(404, 'Not Found')
            self.end_headers()
            self.wfile.write(b'{"error": "model not found"}')
            return
        self.send_response(200)
        self.send_header('Content-Type', 'text/event-stream')
        self.end_headers()
        chat = self.path.endswith('/chat/completions')
        threading.Event().wait(FIRST_S)
        for index in range(body['max_tokens']):
            if index:
                threading.Event().wait(GAP_S)
            choice = {'delta': {'content': 't%d' % index}} if chat else {'text': 't%d' % index}
            self.wfile.write(b'data: ' + json.dumps({'choices': [choice]}).encode() + b'\n\n')
            self.wfile.flush()
        self.wfile.write(b'data: [DONE]\n\n')


@pytest.fixture(scope='module')
def endpoint():
    server = ThreadingHTTPServer(('127.0.0.1', 0), Stub)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield 'http://127.0.0.1:%d' % server.server_address[1]
    server.shutdown()


def test_percentile_nearest_rank():
    assert _serving.percentile([], 50) is None
    assert _serving.percentile([5, 1, 3], 50) == 3
    assert _serving.percentile(list(range(1, 101)), 99) == 99
    assert _serving.percentile([7], 99) == 7


def test_sweep_measures_ttft_tpot_and_tokens(run_module, endpoint):
    res = run_module(serving_bench, {'endpoint': endpoint, 'model': 'm1', 'max_tokens': 6, 'concurrency': [1, 4],
                                     'requests': 4})
    assert not res.failed, res.result
    assert res.result['changed'] is False and res.result['skipped'] is None
    first, second = res.result['levels']
    assert (first['concurrency'], second['concurrency']) == (1, 4)
    for level in (first, second):
        assert (level['requests'], level['succeeded'], level['failed'], level['output_tokens']) == (4, 4, 0, 24)
        assert FIRST_S * 1000 * 0.8 <= level['ttft_ms']['p50'] < FIRST_S * 1000 * 6
        assert GAP_S * 1000 * 0.8 <= level['tpot_ms']['p50'] < GAP_S * 1000 * 6
        assert level['latency_ms']['p99'] >= level['ttft_ms']['p99']
    # four at a time finish the same four requests in less wall time than one at a time
    assert second['wall_s'] < first['wall_s']
    assert second['tokens_per_s'] > first['tokens_per_s']


def test_chat_api_reads_the_delta(run_module, endpoint):
    res = run_module(serving_bench, {'endpoint': endpoint, 'model': 'm1', 'api': 'chat', 'max_tokens': 3,
                                     'concurrency': [2], 'requests': 2})
    assert not res.failed, res.result
    assert res.result['levels'][0]['output_tokens'] == 6
    path, body = Stub.seen[-1]
    assert path == '/v1/chat/completions' and body['messages'][0]['role'] == 'user' and body['stream'] is True


def test_default_requests_are_twice_the_level_at_least_8():
    levels = _serving.sweep('http://127.0.0.1:9', levels=(1, 8), requests=0, timeout=1, model='m1')
    assert [level['requests'] for level in levels] == [8, 16]
    assert all(level['succeeded'] == 0 for level in levels)


def test_no_request_succeeds_fails_with_the_server_error(run_module, endpoint):
    res = run_module(serving_bench, {'endpoint': endpoint, 'model': 'other', 'concurrency': [1], 'requests': 1})
    assert res.failed
    assert 'no request to %s succeeded' % endpoint in res.result['msg']
    assert 'HTTP 404 Not Found' in res.result['msg'] and "serves the model 'other'" in res.result['msg']


def test_nothing_listening_is_a_clear_failure(run_module):
    res = run_module(serving_bench, {'endpoint': 'http://127.0.0.1:9', 'model': 'm1', 'concurrency': [1], 'requests': 1,
                                     'timeout': 2})
    assert res.failed and 'ConnectionRefusedError' in res.result['msg']


def test_check_mode_sends_nothing(run_module, endpoint):
    before = len(Stub.seen)
    res = run_module(serving_bench, {'endpoint': endpoint, 'model': 'm1'}, check_mode=True)
    assert not res.failed and res.result['levels'] == [] and 'check mode' in res.result['skipped']
    assert len(Stub.seen) == before


@pytest.mark.parametrize('args, text', [
    ({'endpoint': 'ftp://x'}, "is not an http:// or https:// URL"),
    ({'endpoint': 'http://127.0.0.1:99999'}, 'has a bad port'),
    ({'max_tokens': 0}, 'max_tokens 0 is outside 1-32768'),
    ({'concurrency': []}, 'concurrency is empty'),
    ({'concurrency': [1, 2000]}, 'concurrency [2000]: each level must be 1-1024'),
    ({'requests': -1}, 'requests -1 is below 0'),
    ({'timeout': 0}, 'timeout 0 is outside 1-3600 seconds'),
    ({'model': ' '}, 'model is empty'),
])
def test_bad_options_send_nothing(run_module, endpoint, args, text):
    before = len(Stub.seen)
    options = {'endpoint': endpoint, 'model': 'm1'}
    options.update(args)
    res = run_module(serving_bench, options)
    assert res.failed and text in res.result['msg'] and 'nothing was sent' in res.result['msg']
    assert len(Stub.seen) == before


# --- real streams -------------------------------------------------------------------------------------------------

FIXTURES = os.path.join(os.path.dirname(__file__), '..', '..', 'fixtures', 'serving')


def _capture(name):
    """The SSE body of a captured stream (tests/unit/fixtures/serving/<name>, its comment lines dropped)."""
    with open(os.path.join(FIXTURES, name), encoding='utf-8') as handle:
        return ''.join(line for line in handle if not line.startswith('#')).encode('utf-8')


class Replay(BaseHTTPRequestHandler):
    """Answers every POST with the captured stream of its API, byte for byte."""

    def log_message(self, *args):  # quiet
        pass

    def do_POST(self):  # noqa: N802 (the http.server API)
        self.rfile.read(int(self.headers['Content-Length']))
        name = 'vllm_chat_stream.txt' if self.path.endswith('/chat/completions') else 'vllm_completions_stream.txt'
        self.send_response(200)
        self.send_header('Content-Type', 'text/event-stream; charset=utf-8')
        self.end_headers()
        self.wfile.write(_capture(name))


@pytest.mark.parametrize('api, tokens', [('chat', 2), ('completions', 5)])
def test_a_real_vllm_stream_counts_the_chunks_that_carry_text(api, tokens):
    # chat: the first chunk (role, content "") is no token; completions: the usage chunk (choices []) is none
    server = ThreadingHTTPServer(('127.0.0.1', 0), Replay)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        target = _serving.parse_endpoint('http://127.0.0.1:%d' % server.server_address[1])
        result = _serving.one_request(target, api, 'm', 'p', 8, 10)
    finally:
        server.shutdown()
    assert result['ok'] and result['tokens'] == tokens, result
