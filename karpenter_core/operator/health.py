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

import logging
import threading
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

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

Response = tuple[int, str, bytes]
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
    """``/metrics`` in the Prometheus text exposition format."""

    def route(query: Mapping[str, list[str]]) -> Response:
        return 200, CONTENT_TYPE_LATEST, generate_latest(registry)

    return {"/metrics": route}


class _Handler(BaseHTTPRequestHandler):
    routes: dict[str, Route] = {}
    server_version = "karpenter"

    def do_GET(self) -> None:
        url = urlparse(self.path)
        route = self.routes.get(url.path.rstrip("/") or "/")
        if route is None:
            status, ctype, body = 404, "text/plain; charset=utf-8", b"404 page not found\n"
        else:
            try:
                status, ctype, body = route(parse_qs(url.query, keep_blank_values=True))
            except Exception as e:
                log.exception("serving %s failed", url.path)
                status, ctype, body = 500, "text/plain; charset=utf-8", f"{e}\n".encode()
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # probes every few seconds would drown the operator's own logs


class HttpServer:
    """A small threaded HTTP server for ``routes`` on ``host:port`` (port 0 = any free)."""

    def __init__(self, name: str, port: int, routes: Mapping[str, Route], host: str = "") -> None:
        handler = type(f"{name.title()}Handler", (_Handler,), {"routes": dict(routes)})
        try:
            self._server = ThreadingHTTPServer((host, port), handler)
        except OSError as e:
            raise ServeError(f"{name} server: cannot listen on port {port}: {e.strerror}") from None
        self._server.daemon_threads = True
        self.name = name
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def start(self) -> HttpServer:
        self._thread = threading.Thread(
            target=self._server.serve_forever, name=f"{self.name}-server", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join(5.0)
        self._server.server_close()
