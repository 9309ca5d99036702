"""The operator's HTTP endpoints: health probes on :8081 and Prometheus metrics on :8080.

Like controller-runtime's probe server, ``/healthz`` answers as long as the process
serves HTTP (a liveness "ping"), and ``/readyz`` runs named checks — upstream's are "caches
synced" and "the NodePool and NodeClaim CRDs resolve" — answering 200 ``ok`` when all pass
and 500 with one ``[-]name failed: reason`` line per failing check otherwise (``?verbose``
lists the passing ones too), so ``kubectl describe pod`` shows *why* a replica is not
ready. Both servers run on every replica, leader or not: a standby must be ready to take
over and must not be restarted by its liveness probe for not leading.

``/metrics`` serves :data:`karpenter_core.metrics.REGISTRY` in the Prometheus text format.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import selectors
import socket
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlparse

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry

__all__ = [
    "Check",
    "HttpServer",
    "ServeError",
    "metrics_routes",
    "probe_routes",
    "run_checks",
]

log = logging.getLogger("karpenter.operator.health")

Check = Callable[[], "str | None"]
"""A readiness check: None when healthy, else the reason it is not."""

Response = tuple[int, str, "bytes | Iterable[bytes]"]
"""Status, content type and body: bytes, or pieces written as they come (HTTP/1.0: the
body ends when the connection closes), so a large body is never held whole."""
Route = Callable[[Mapping[str, list[str]]], Response]


class ServeError(RuntimeError):
    """An endpoint could not be served (a port in use); the message names the port."""


def run_checks(checks: Mapping[str, Check]) -> tuple[bool, list[str]]:
    """Run every check; returns (all passed, one ``[+]``/``[-]`` line per check)."""
    lines: list[str] = []
    ok = True
    for name, check in checks.items():
        try:
            reason = check()
        except Exception as e:  # a broken check is a failing check, not a 500 traceback
            reason = f"{type(e).__name__}: {e}"
        if reason is None:
            lines.append(f"[+]{name} ok")
        else:
            ok = False
            lines.append(f"[-]{name} failed: {reason}")
    return ok, lines


def _probe(name: str, checks: Mapping[str, Check]) -> Route:
    def route(query: Mapping[str, list[str]]) -> Response:
        ok, lines = run_checks(checks)
        if ok and "verbose" not in query:
            return 200, "text/plain; charset=utf-8", b"ok"
        body = "\n".join([*lines, f"{name} check passed" if ok else f"{name} check failed"])
        return (200 if ok else 500), "text/plain; charset=utf-8", body.encode() + b"\n"

    return route


def probe_routes(
    ready_checks: Mapping[str, Check], live_checks: Mapping[str, Check] | None = None
) -> dict[str, Route]:
    """``/healthz`` (ping plus ``live_checks``) and ``/readyz`` (ping plus ``ready_checks``).

    Liveness checks must only fail for what a restart cures (a dead or wedged thread),
    never for an outage outside the process, or every replica restarts at once."""
    ping: dict[str, Check] = {"ping": lambda: None}
    return {
        "/healthz": _probe("healthz", {**ping, **(live_checks or {})}),
        "/readyz": _probe("readyz", {**ping, **ready_checks}),
    }


def metrics_routes(registry: CollectorRegistry) -> dict[str, Route]:
    """``/metrics`` in the Prometheus text exposition format, written family by family
    (:func:`karpenter_core.metrics.iter_exposition`)."""
    from karpenter_core.metrics import iter_exposition

    def route(query: Mapping[str, list[str]]) -> Response:
        return 200, CONTENT_TYPE_LATEST, iter_exposition(registry)

    return {"/metrics": route}


class _Handler(BaseHTTPRequestHandler):
    routes: dict[str, Route] = {}
    server_version = "karpenter"
    timeout = 10.0  # per read and per write, set by HttpServer

    def do_GET(self) -> None:
        url = urlparse(self.path)
        route = self.routes.get(url.path.rstrip("/") or "/")
        body: bytes | Iterable[bytes]
        if route is None:
            status, ctype, body = 404, "text/plain; charset=utf-8", b"404 page not found\n"
        else:
            try:
                status, ctype, body = route(parse_qs(url.query, keep_blank_values=True))
            except Exception as e:
                log.exception("serving %s failed", url.path)
                status, ctype, body = 500, "text/plain; charset=utf-8", f"{e}\n".encode()
        if not isinstance(body, bytes):
            self._stream(status, ctype, body)
            return
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _stream(self, status: int, ctype: str, pieces: Iterable[bytes]) -> None:
        """Write the body as it is produced; the response ends with the connection. A
        failure before the first piece is still a 500; after it, the connection is closed
        early and the scraper sees a truncated body, as it would from a dying process."""
        it = iter(pieces)
        try:
            first = next(it, b"")
        except Exception as e:
            log.exception("serving %s failed", self.path)
            body = f"{e}\n".encode()
            self.send_response(500)
            self.send_header("Content-Type", "text/plain; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        self.close_connection = True
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(first)
        try:
            for piece in it:
                self.wfile.write(piece)
        except Exception:
            log.exception("serving %s failed part way", self.path)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # probes every few seconds would drown the operator's own logs


_BUSY = b"HTTP/1.0 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"


class HttpServer:
    """A small HTTP server for ``routes`` on ``host:port`` (port 0 = any free; host "" =
    every IPv4 interface, an address with ``:`` is IPv6).

    Its threads are fixed: one loop that accepts connections and waits for their requests
    with a selector, and ``workers`` threads that answer them, so open connections cost a
    socket each, never a thread. A connection whose request does not start within
    ``timeout`` seconds is closed; at most ``max_idle`` connections may wait at once (the
    oldest is closed to make room, so a probe that sends its request at once is answered
    while an idle flood churns); a request already started gets ``timeout`` per read and
    write and ``3 * timeout`` in all. When every worker is busy and ``backlog`` requests
    wait, a new one is answered 503 without being read. A client that goes away mid-answer
    is logged at debug, without a traceback."""

    def __init__(
        self,
        name: str,
        port: int,
        routes: Mapping[str, Route],
        host: str = "",
        *,
        workers: int = 4,
        backlog: int = 16,
        max_idle: int = 128,
        timeout: float = 10.0,
    ) -> None:
        self.name = name
        self.timeout = timeout
        self.max_idle = max_idle
        self._handler = type(
            f"{name.title()}Handler", (_Handler,), {"routes": dict(routes), "timeout": timeout}
        )
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self._listener = socket.socket(family, socket.SOCK_STREAM)
        try:
            self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self._listener.bind((host.strip("[]"), port))
            self._listener.listen(128)
        except OSError as e:
            self._listener.close()
            raise ServeError(f"{name} server: cannot listen on port {port}: {e.strerror}") from None
        self._listener.setblocking(False)
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._listener, selectors.EVENT_READ)
        self._idle: OrderedDict[socket.socket, float] = OrderedDict()  # -> deadline
        self._busy: dict[socket.socket, float] = {}  # in a worker -> deadline
        self._busy_lock = threading.Lock()
        self._work: queue.Queue[tuple[socket.socket, Any]] = queue.Queue(backlog)
        self._workers = workers
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    @property
    def port(self) -> int:
        return int(self._listener.getsockname()[1])

    @property
    def address(self) -> str:
        """The address it listens on (``0.0.0.0``: every IPv4 interface)."""
        return str(self._listener.getsockname()[0])

    def start(self) -> HttpServer:
        self._threads = [
            threading.Thread(target=self._loop, name=f"{self.name}-server", daemon=True)
        ] + [
            threading.Thread(target=self._work_loop, name=f"{self.name}-worker-{i}", daemon=True)
            for i in range(self._workers)
        ]
        for thread in self._threads:
            thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(5.0)
        self._threads = []
        for conn in list(self._idle):
            self._close_idle(conn)
        while not self._work.empty():
            _close(self._work.get_nowait()[0])
        self._selector.close()
        self._listener.close()

    # ------------------------------------------------------------------ the accept loop

    def _loop(self) -> None:
        while not self._stop.is_set():
            for key, _ in self._selector.select(timeout=0.2):
                if key.fileobj is self._listener:
                    self._accept()
                else:
                    self._dispatch(key.fileobj)  # type: ignore[arg-type]
            self._expire(time.monotonic())

    def _accept(self) -> None:
        for _ in range(64):  # drain a burst, then let waiting requests be dispatched
            try:
                conn, addr = self._listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as e:  # out of descriptors, say: keep serving those we have
                log.warning("%s server: accepting a connection failed: %s", self.name, e)
                return
            if len(self._idle) >= self.max_idle:
                self._close_idle(next(iter(self._idle)))
            conn.setblocking(False)
            self._idle[conn] = time.monotonic() + self.timeout
            self._selector.register(conn, selectors.EVENT_READ, addr)

    def _dispatch(self, conn: socket.socket) -> None:
        addr = self._selector.unregister(conn).data
        del self._idle[conn]
        try:
            self._work.put_nowait((conn, addr))
        except queue.Full:
            with contextlib.suppress(OSError):
                conn.send(_BUSY)
            _close(conn)

    def _expire(self, now: float) -> None:
        while self._idle:
            conn, deadline = next(iter(self._idle.items()))
            if deadline > now:
                break
            self._close_idle(conn)
        with self._busy_lock:
            overdue = [conn for conn, deadline in self._busy.items() if deadline <= now]
        for conn in overdue:  # a request trickled in byte by byte: cut it off
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)

    def _close_idle(self, conn: socket.socket) -> None:
        self._selector.unregister(conn)
        del self._idle[conn]
        _close(conn)

    # ------------------------------------------------------------------ the workers

    def _work_loop(self) -> None:
        while not self._stop.is_set():
            try:
                conn, addr = self._work.get(timeout=0.2)
            except queue.Empty:
                continue
            conn.setblocking(True)
            with self._busy_lock:
                self._busy[conn] = time.monotonic() + 3 * self.timeout
            try:
                self._handler(conn, addr, self)
            except (ConnectionError, TimeoutError) as e:
                log.debug("%s server: client %s went away: %s", self.name, addr, e)
            except Exception:
                log.exception("%s server: answering %s failed", self.name, addr)
            finally:
                with self._busy_lock:
                    del self._busy[conn]
                _close(conn)


def _close(conn: socket.socket) -> None:
    with contextlib.suppress(OSError):
        conn.shutdown(socket.SHUT_RDWR)
    conn.close()
