"""The resident simulator of a simulated node, for the tool wrappers' thin client (client.c).

A tool call started through ``npu-sim-client`` does not start an interpreter. The client connects to the
node's socket; this server hands the connection to an idle worker, a process forked from it with the tools'
modules already imported. The worker reads the client's request (its standard descriptors, argv, environment,
working directory, umask), runs ``npu_sim.__main__.main`` on them exactly as a wrapper's own interpreter
would (same code, same state file and locks, same call log line), answers with the exit status, closes the
caller's descriptors and waits for the next call. A call of a user other than the worker's (a non-root
caller) runs in a child forked for it, which takes that user's IDs first.

The server watches every client while its call runs: a client that goes away (killed by its caller's
timeout, say) gets its worker killed, as the caller's kill ended the tool's own process before. Workers are
started when no idle one is left and at most ``MAX_IDLE`` stay idle. The server and its workers are
single-threaded, so a fork never copies another thread's half-held lock.

The tools that launch programs (``numactl``, ``mpirun``) and the control command ``npu-sim`` are not served:
their wrappers run their own interpreter, so the programs they start stay in the caller's process tree.
What a call costs either way is in docs/simulator-cost.md.

``python -I -S -c 'import sys; sys.path.insert(0, TOOLS); from npu_sim import server; server.main()' SOCKET``
"""

import io
import os
import pwd
import select
import signal
import socket
import struct
import sys
import time
import traceback

from . import SERVED
from . import __main__ as sim_main

MAGIC = b"npusim1"
REQUEST_TIMEOUT_S = 5.0
MAX_REQUEST = 1 << 20
MAX_IDLE = 8
# the server's log (its standard error when it started), kept open in each worker
LOG_FD = [2]
# A worker ends after this many calls and a new one takes its place (nothing a call leaves behind piles up);
# NPU_SIM_WORKER_CALLS in the server's environment sets it.
CALLS_PER_WORKER = 2000


class RequestError(Exception):
    pass


def parse_request(data):
    """(client CPU seconds, argv, environment, cwd, umask) from the NUL-separated fields of a request."""
    fields = data.split(b"\0")
    if not data.endswith(b"\0") or fields[0] != MAGIC:
        raise RequestError("not a request of npu-sim-client")
    fields.pop()
    try:
        cpu = float(fields[1])
        argc = int(fields[2])
        argv = [f.decode("utf-8", "surrogateescape") for f in fields[3:3 + argc]]
        envc = int(fields[3 + argc])
        env_fields = fields[4 + argc:4 + argc + envc]
        cwd, mask = fields[4 + argc + envc:]
        umask = int(mask, 8)
    except (IndexError, ValueError) as exc:
        raise RequestError("malformed request: %s" % exc) from None
    if len(argv) != argc or len(env_fields) != envc or not argv:
        raise RequestError("malformed request: counts do not match")
    env = {}
    for item in env_fields:
        key, sep, value = item.partition(b"=")
        if sep:
            env[key.decode("utf-8", "surrogateescape")] = value.decode("utf-8", "surrogateescape")
    return cpu, argv, env, cwd.decode("utf-8", "surrogateescape"), umask


def read_request(conn):
    """The request and the client's three descriptors; the descriptors are closed on any error."""
    conn.settimeout(REQUEST_TIMEOUT_S)
    data, fds, _flags, _addr = socket.recv_fds(conn, 65536, 3)
    try:
        if len(data) < 4:
            raise RequestError("short request")
        (length,) = struct.unpack("=I", data[:4])
        if length > MAX_REQUEST:
            raise RequestError("request too long")
        body = bytearray(data[4:])
        while len(body) < length:
            more = conn.recv(length - len(body))
            if not more:
                raise RequestError("connection closed in the request")
            body.extend(more)
        if len(fds) != 3:
            raise RequestError("expected 3 descriptors, got %d" % len(fds))
        return parse_request(bytes(body)), fds
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise


def _as_user(uid, gid):
    try:
        groups = os.getgrouplist(pwd.getpwuid(uid).pw_name, gid)
    except KeyError:
        groups = [gid]
    os.setgroups(groups)
    os.setgid(gid)
    os.setuid(uid)


def _std_streams():
    """Fresh sys.stdin/stdout/stderr on descriptors 0-2: nothing a call buffered reaches the next caller."""
    sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False), encoding="utf-8", errors="surrogateescape")
    sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8", errors="surrogateescape")
    sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), encoding="utf-8", errors="backslashreplace",
                                  line_buffering=True)


def _flush():
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass


def run_call(request, offset_cpu, started_cpu):
    """Run one tool call in this process on descriptors 0-2 (already the caller's); returns its exit status."""
    client_cpu, argv, env, cwd, umask = request
    os.umask(umask)
    try:
        os.chdir(cwd)
    except OSError:
        os.chdir("/")
    os.environ.clear()
    os.environ.update(env)
    time.tzset()  # TZ of the caller, as its own interpreter would have read it
    _std_streams()
    sim_main.CPU_OFFSET = client_cpu + offset_cpu
    sim_main.CALL_CPU0 = started_cpu
    sim_main.START_CPU = time.process_time()
    try:
        code = sim_main.main(argv)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:  # pylint: disable=broad-except
        try:
            traceback.print_exc()
        except (OSError, ValueError):
            pass
        code = 1
    _flush()
    return code


def _call_as_user(request, offset_cpu, uid, gid):
    """A caller with other IDs: its call runs in a child that takes them (the worker keeps its own)."""
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            _as_user(uid, gid)
            code = run_call(request, offset_cpu, time.process_time())
        finally:
            os._exit(code & 0xFF if code >= 0 else 1)
    _pid, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def handle(conn, offset_cpu, null_fd):
    """One call on the connection ``conn``: the worker's side. Returns the exit status to answer, or None when
    the request could not be read (the client then sees the connection closed)."""
    started = time.process_time()
    try:
        request, fds = read_request(conn)
        uid, gid = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))[1:]
    except (OSError, RequestError) as exc:
        # nothing to answer: the client reports the closed connection
        os.write(LOG_FD[0], ("npu-sim server: worker %d: %s\n" % (os.getpid(), exc)).encode("utf-8", "replace"))
        return None
    try:
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        if request[1][0] not in SERVED:
            os.write(2, b"npu-sim server: not a served tool\n")
            code = 1
        elif uid != os.geteuid() or gid != os.getegid():
            code = _call_as_user(request, offset_cpu, uid, gid)
        else:
            code = run_call(request, offset_cpu, started)
    finally:
        # the caller's descriptors are closed here, so its pipes see the end of the output
        for target in range(3):
            os.dup2(null_fd, target)
        for fd in fds:
            os.close(fd)
    return code


def worker(channel):
    """A worker's loop: each message on ``channel`` carries a client connection and the server's CPU share."""
    os.setpgid(0, 0)  # the server kills the worker's group: a child running a non-root call goes with it
    LOG_FD[0] = os.dup(2)
    null_fd = os.open(os.devnull, os.O_RDWR)
    for count in range(1, CALLS_PER_WORKER + 1):
        try:
            data, fds, _flags, _addr = socket.recv_fds(channel, 64, 1)
        except OSError:
            break
        if not data or not fds:
            break
        conn = socket.socket(fileno=fds[0])
        try:
            code = handle(conn, float(data.decode("ascii")), null_fd)
            # the server hears "done" before the client can have its answer and close (client_gone); "q" on the
            # last call: this worker ends, so the server hands it no more calls
            channel.sendall(b"q" if count == CALLS_PER_WORKER else b"d")
            if code is not None:
                conn.sendall(struct.pack("=i", code))
        except OSError:
            pass
        finally:
            conn.close()
    os._exit(0)


ORDER = {"worker": 0, "client": 1, "accept": 2}


class Server:
    def __init__(self, path):
        self.path = path
        # epoll: a client's connection is watched for its peer's close only (EPOLLRDHUP), not for the request
        # it sends, which the worker reads
        self.poller = select.epoll()
        self.handlers = {}
        self.idle = []  # workers waiting for a call
        self.workers = {}  # pid -> worker record
        self.share = 0.0003  # the server's CPU per call (accept, dispatch), smoothed

    def listen(self):
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(self.path + ".new")
        os.chmod(self.path + ".new", 0o666)  # a user without root calls the tools too
        listener.listen(256)
        os.replace(self.path + ".new", self.path)
        self.watch(listener, select.EPOLLIN, "accept", None)
        return listener

    def watch(self, sock, events, kind, record):
        self.poller.register(sock.fileno(), events)
        self.handlers[sock.fileno()] = (kind, record, sock)

    def unwatch(self, sock):
        self.poller.unregister(sock.fileno())
        del self.handlers[sock.fileno()]

    def spawn(self, listener, conn):
        """A new worker; ``conn``, the connection just accepted, is not left open in it."""
        ours, theirs = socket.socketpair()
        pid = os.fork()
        if pid == 0:
            try:
                listener.close()
                conn.close()
                ours.close()
                for record in self.workers.values():
                    record["channel"].close()
                    if record["conn"] is not None:
                        record["conn"].close()
                self.poller.close()
                worker(theirs)
            except BaseException:  # pylint: disable=broad-except
                os.write(LOG_FD[0], ("npu-sim server: worker %d failed:\n%s" % (
                    os.getpid(), traceback.format_exc())).encode("utf-8", "replace"))
            finally:
                os._exit(1)
        theirs.close()
        try:
            os.setpgid(pid, pid)  # also done by the worker: whichever runs first
        except OSError:
            pass
        record = {"pid": pid, "channel": ours, "conn": None}
        self.workers[pid] = record
        self.watch(ours, select.EPOLLIN, "worker", record)
        return record

    def dispatch(self, listener):
        started = time.process_time()
        try:
            conn, _addr = listener.accept()
        except OSError:
            return
        try:
            record = self.idle.pop() if self.idle else self.spawn(listener, conn)
        except OSError as exc:  # no worker could be started: the client reports the closed connection
            sys.stderr.write("npu-sim server: no worker for a call: %s\n" % exc)
            sys.stderr.flush()
            conn.close()
            return
        try:
            socket.send_fds(record["channel"], [("%.6f" % self.share).encode("ascii")], [conn.fileno()])
        except OSError:
            conn.close()
            self.retire(record, kill=True)
            return
        record["conn"] = conn
        self.watch(conn, select.EPOLLRDHUP, "client", record)
        self.share = 0.9 * self.share + 0.1 * (time.process_time() - started)

    def worker_event(self, record):
        try:
            message = record["channel"].recv(64)
        except OSError:
            message = b""
        if not message:
            self.retire(record, kill=False)
            return
        self.finished(record, message)

    def finished(self, record, message):
        if record["conn"] is not None:
            self.unwatch(record["conn"])
            record["conn"].close()
            record["conn"] = None
        if len(self.idle) < MAX_IDLE and not message.endswith(b"q"):
            self.idle.append(record)
        else:
            self.retire(record, kill=False)

    def client_gone(self, record):
        """The client closed its end while its call runs: it went away. Unless the worker has just said it is
        done, the worker (still in the call) is killed."""
        record["channel"].setblocking(False)
        try:
            message = record["channel"].recv(64)
        except BlockingIOError:
            message = None
        except OSError:
            message = b""
        record["channel"].setblocking(True)
        if message:
            self.finished(record, message)
        else:
            sys.stderr.write("npu-sim server: the client of worker %d went away; the worker is killed\n" % record["pid"])
            sys.stderr.flush()
            self.retire(record, kill=True)

    def retire(self, record, kill):
        if record in self.idle:
            self.idle.remove(record)
        if record["conn"] is not None:
            self.unwatch(record["conn"])
            record["conn"].close()
            record["conn"] = None
        self.unwatch(record["channel"])
        record["channel"].close()
        if kill:
            try:
                os.killpg(record["pid"], signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.workers.pop(record["pid"], None)
        os.waitpid(record["pid"], 0)

    def serve(self):
        listener = self.listen()
        while True:
            try:
                events = self.poller.poll()
            except InterruptedError:
                continue
            # a worker's "done" before its client's close (a call that ended is not taken for a client gone), and
            # new connections last (no descriptor of this round is reused before its event is handled)
            events.sort(key=lambda event: ORDER.get(self.handlers.get(event[0], ("",))[0], 1))
            for fd, _mask in events:
                if fd not in self.handlers:
                    continue  # unwatched earlier in this round
                kind, record, sock = self.handlers[fd]
                if kind == "accept":
                    self.dispatch(listener)
                elif kind == "worker":
                    self.worker_event(record)
                elif record["conn"] is sock:
                    self.client_gone(record)


def preload():
    """Import what the served tools import, so a worker does not."""
    for tool in SERVED:
        sim_main._tool_function(tool)  # pylint: disable=protected-access


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if len(argv) != 1:
        sys.stderr.write("usage: npu_sim.server SOCKET\n")
        return 2
    global CALLS_PER_WORKER  # pylint: disable=global-statement
    CALLS_PER_WORKER = int(os.environ.get("NPU_SIM_WORKER_CALLS") or CALLS_PER_WORKER)
    preload()
    Server(argv[0]).serve()
    return 0
