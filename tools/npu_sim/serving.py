"""A simulated OpenAI-compatible streaming endpoint (vLLM ``vllm serve`` / MindIE Service): a MODEL of a serving
engine under load, not measured hardware, so that stage 7's load sweep and its judgement can be seen end to end.

``POST /v1/completions`` and ``POST /v1/chat/completions`` with ``"stream": true`` answer ``max_tokens`` chunks as
server-sent events in vLLM's wire format (compact JSON, ``Content-Type: text/event-stream; charset=utf-8``, chunked):

- completions: ``data: {"id":"cmpl-...","object":"text_completion","created":...,"model":...,"choices":[{"index":0,
  "text":"...","logprobs":null,"finish_reason":null,"stop_reason":null}],"usage":null}``, the last chunk with
  ``"finish_reason":"length"``;
- chat: a first chunk ``"delta":{"role":"assistant","content":""}``, then ``"delta":{"content":"..."}`` chunks of
  ``"object":"chat.completion.chunk"``, the last with ``"finish_reason":"length"``;
- then ``data: [DONE]``. The captures this follows are in tests/unit/fixtures/serving/ (each names its source).

The model: a request needs ``prefill_ms`` before its first token and ``token_ms`` per token after it, at full speed.
The engine runs ``saturation`` requests at full speed; with more in flight all share it (processor sharing), so
output tokens/s rise with concurrency up to ``saturation`` and then hold - the knee. ``collapse_pct`` makes them fall
beyond it: each further ``saturation`` requests in flight cost that percentage more (preemption, KV cache swapping).
``tail_every`` N makes every N-th request (counted over the server's life, from 1) wait ``tail_ms`` more before its
first token (a queued or preempted request): the heavy tail that lifts P99 above P50.

Standard library only. In a test: ``with ServingSim(saturation=2) as sim: sweep(sim.endpoint, ...)``; on its own:
``PYTHONPATH=<repo>/tools python3 -m npu_sim.serving --host 127.0.0.1 --port 8000 --saturation 2 --tail-every 4``.
"""

import argparse
import json
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PATHS = {'/v1/completions': 'completions', '/v1/chat/completions': 'chat'}
SLICE_S = 0.005            # the scheduler's step: the speed of every request is set anew this often
WORDS = ('The', ' lossless', ' network', ' needs', ' PFC', ' on', ' the', ' RoCE', ' priority', ',', ' ECN', ' marks',
         ' and', ' a', ' jumbo', ' MTU', '.')


class ServingSim:
    """The endpoint: ``start()`` serves it in a thread (``endpoint`` is its URL), ``stop()`` ends it; a context
    manager. ``calls`` lists ``(path, model, max_tokens)`` of every streamed request; ``peak`` is the most requests
    that were in flight at once."""

    def __init__(self, host='127.0.0.1', port=0, model=None, token_ms=20.0, prefill_ms=20.0, saturation=None,
                 collapse_pct=0.0, tail_every=0, tail_ms=0.0):
        if saturation is not None and saturation < 1:
            raise ValueError('saturation %r must be 1 or more (or None: no limit)' % (saturation,))
        self.host, self.port, self.model = host, port, model
        self.token_ms, self.prefill_ms = float(token_ms), float(prefill_ms)
        self.saturation, self.collapse_pct = saturation, float(collapse_pct)
        self.tail_every, self.tail_ms = int(tail_every or 0), float(tail_ms)
        self.calls = []
        self.peak = 0
        self._lock = threading.Lock()
        self._in_flight = 0
        self._count = 0
        self._server = None
        self._endpoint = None

    # --- the model ------------------------------------------------------------------------------------------------

    def slowdown(self, in_flight):
        """How much slower than full speed each request runs with ``in_flight`` requests in the engine."""
        if not self.saturation or in_flight <= self.saturation:
            return 1.0
        over = (in_flight - self.saturation) / float(self.saturation)
        return in_flight / float(self.saturation) * (1.0 + self.collapse_pct / 100.0 * over)

    def _work(self, full_speed_ms):
        """Wait until ``full_speed_ms`` of work is done at the speed the requests in flight leave this one."""
        done = 0.0
        while done < full_speed_ms:
            started = time.monotonic()
            time.sleep(SLICE_S)
            with self._lock:
                factor = self.slowdown(self._in_flight)
            done += (time.monotonic() - started) * 1000.0 / factor

    def _number(self):
        with self._lock:
            self._count += 1
            return self._count

    def _enter(self):
        with self._lock:
            self._in_flight += 1
            self.peak = max(self.peak, self._in_flight)

    def _leave(self):
        with self._lock:
            self._in_flight -= 1

    # --- the wire format ------------------------------------------------------------------------------------------

    @staticmethod
    def chunk(api, request_id, created, model, text, finish_reason=None, first=False):
        """One streamed chunk (the JSON after ``data: ``) as vLLM writes it."""
        if api == 'chat':
            delta = {'role': 'assistant', 'content': ''} if first else {'content': text}
            choice = {'index': 0, 'delta': delta, 'logprobs': None, 'finish_reason': finish_reason}
            body = {'id': request_id, 'object': 'chat.completion.chunk', 'created': created, 'model': model,
                    'choices': [choice]}
        else:
            choice = {'index': 0, 'text': text, 'logprobs': None, 'finish_reason': finish_reason, 'stop_reason': None}
            body = {'id': request_id, 'object': 'text_completion', 'created': created, 'model': model,
                    'choices': [choice], 'usage': None}
        return json.dumps(body, separators=(',', ':'))

    def stream(self, api, model, max_tokens, write):
        """The request's events through ``write(bytes)``, paced by the model."""
        number = self._number()
        if self.tail_every and number % self.tail_every == 0:
            time.sleep(self.tail_ms / 1000.0)     # queued or preempted: it waits before the engine takes it
        self._enter()
        try:
            prefix = 'chatcmpl-' if api == 'chat' else 'cmpl-'
            request_id, created = prefix + uuid.uuid4().hex, int(time.time())
            self._work(self.prefill_ms)
            if api == 'chat':
                write(self.chunk(api, request_id, created, model, '', first=True))
            for index in range(max_tokens):
                if index:
                    self._work(self.token_ms)
                last = index == max_tokens - 1
                write(self.chunk(api, request_id, created, model, WORDS[index % len(WORDS)],
                                 'length' if last else None))
            write('[DONE]')
        finally:
            self._leave()

    # --- the server -----------------------------------------------------------------------------------------------

    def start(self):
        sim = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = 'HTTP/1.1'

            def log_message(self, *args):  # quiet
                pass

            def _error(self, status, kind, message):
                body = json.dumps({'object': 'error', 'message': message, 'type': kind, 'param': None,
                                   'code': status}).encode()
                self.send_response(status)
                self.send_header('Content-Type', 'application/json')
                self.send_header('Content-Length', str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self):  # noqa: N802 (the http.server API)
                api = PATHS.get(self.path)
                if api is None:
                    return self._error(404, 'NotFoundError', 'Not Found')
                try:
                    body = json.loads(self.rfile.read(int(self.headers.get('Content-Length') or 0)) or b'{}')
                    max_tokens = int(body.get('max_tokens') or 16)
                except (ValueError, TypeError, AttributeError):
                    return self._error(400, 'BadRequestError', 'the body is not a JSON object with max_tokens')
                model = body.get('model')
                if sim.model is not None and model != sim.model:
                    return self._error(404, 'NotFoundError', 'The model `%s` does not exist.' % model)
                with sim._lock:
                    sim.calls.append((self.path, model, max_tokens))
                self.send_response(200)
                self.send_header('Content-Type', 'text/event-stream; charset=utf-8')
                self.send_header('Transfer-Encoding', 'chunked')
                self.send_header('Connection', 'close')
                self.end_headers()
                self.close_connection = True

                def write(data):
                    event = ('data: %s\n\n' % data).encode('utf-8')
                    self.wfile.write(b'%x\r\n%s\r\n' % (len(event), event))
                    self.wfile.flush()

                try:
                    sim.stream(api, model, max_tokens, write)
                    self.wfile.write(b'0\r\n\r\n')
                    self.wfile.flush()
                except OSError:               # the client went away
                    self.close_connection = True
                return None

        class Server(ThreadingHTTPServer):
            def handle_error(self, request, client_address):  # a client that went away: nothing to say
                pass

        self._server = Server((self.host, self.port), Handler)
        self._server.daemon_threads = True
        self._endpoint = 'http://%s:%d' % self._server.server_address[:2]
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    @property
    def endpoint(self):
        """The URL of the running server (kept after ``stop()``)."""
        return self._endpoint

    def stop(self):
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


def main(argv=None):
    parser = argparse.ArgumentParser(description='A simulated OpenAI-compatible streaming endpoint (a load model).')
    parser.add_argument('--host', default='127.0.0.1')
    parser.add_argument('--port', type=int, default=8000)
    parser.add_argument('--model', default=None, help='the served model name (any when not given)')
    parser.add_argument('--token-ms', type=float, default=20.0)
    parser.add_argument('--prefill-ms', type=float, default=20.0)
    parser.add_argument('--saturation', type=int, default=None, help='requests at full speed (none: no limit)')
    parser.add_argument('--collapse-pct', type=float, default=0.0)
    parser.add_argument('--tail-every', type=int, default=0)
    parser.add_argument('--tail-ms', type=float, default=0.0)
    args = parser.parse_args(argv)
    sim = ServingSim(args.host, args.port, args.model, args.token_ms, args.prefill_ms, args.saturation,
                     args.collapse_pct, args.tail_every, args.tail_ms).start()
    print('serving %s' % sim.endpoint, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        sim.stop()
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
