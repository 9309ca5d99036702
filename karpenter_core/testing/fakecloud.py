"""Plumbing for a fake cloud API served over real HTTP(S), for testing a provider's SDK.

A provider plugin's tests gain most when the cloud's official SDK runs for real (its
serializers, pagers, retries, pollers, credentials) and only the server is fake. This
module is the server part every such fake needs, so a fake is only its resource model:

- :class:`FakeCloudServer`: a ``ThreadingHTTPServer`` on an ephemeral ``127.0.0.1`` port
  (HTTPS with a self-signed certificate when ``tls=True``), a route table
  (:meth:`~FakeCloudServer.builtin_routes` and routes added with
  :meth:`~FakeCloudServer.route`), every request recorded
  (:attr:`~FakeCloudServer.requests`, :meth:`~FakeCloudServer.requests_to`), and faults
  injected before any route runs (:meth:`~FakeCloudServer.fail_next`,
  :meth:`~FakeCloudServer.throttle_next`);
- :class:`FakeRequest`, :data:`Response` and :data:`Handler`: what a route handler gets
  and answers;
- :func:`self_signed_cert`: a certificate for ``127.0.0.1``/``localhost`` that clients
  trust through :attr:`FakeCloudServer.ca_file` (needs ``cryptography``, imported only
  when a TLS server starts).

A subclass lists its built-in routes, says how its cloud shapes an error
(:meth:`~FakeCloudServer.error`) and, where the cloud needs it, overrides the other hooks
(:meth:`~FakeCloudServer.authorize`, :meth:`~FakeCloudServer.no_route`,
:meth:`~FakeCloudServer.handler_error`, :meth:`~FakeCloudServer.response_headers`)::

    class FakeWidgets(FakeCloudServer):
        server_name = "fake-widgets"

        def __init__(self) -> None:
            super().__init__()
            self.widgets: dict[str, dict[str, Any]] = {}

        def builtin_routes(self) -> list[tuple[str, str, Handler]]:
            return [("GET", r"/widgets/(?P<name>[^/]+)", self._get)]

        def _get(self, req: FakeRequest) -> Response:
            with self.lock:
                widget = self.widgets.get(req.match["name"])
            return (200, {}, widget) if widget else self.error(404, "NotFound", "no widget")

    with FakeWidgets() as fake:
        requests.get(fake.url + "/widgets/a")

Handlers run on the server's threads, outside :attr:`~FakeCloudServer.lock`, so they may
call the fake (or the code under test) again; state they share with the test is guarded
by that lock.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import json
import re
import shutil
import ssl
import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar, Self
from urllib.parse import parse_qsl, unquote, urlsplit

from attrs import define, field, frozen

__all__ = [
    "FakeCloudServer",
    "FakeRequest",
    "Handler",
    "Response",
    "self_signed_cert",
]

Response = tuple[int, Mapping[str, str], Any]
"""A handler's answer: status, headers, body (dict/list → JSON, str/bytes → raw, None)."""

Handler = Callable[["FakeRequest"], Response]
"""A route handler: the request (with the route's named groups) to its answer."""


@frozen
class FakeRequest:
    """One request as a handler sees it (``path`` without the query string; ``match``
    holds the named groups of the route that matched, empty in the recorded copy)."""

    method: str
    path: str
    query: Mapping[str, str]
    headers: Mapping[str, str]
    body: bytes
    match: Mapping[str, str] = field(factory=dict)

    @property
    def json(self) -> Any:
        """The body parsed as JSON (None when empty)."""
        return json.loads(self.body) if self.body else None


@frozen(eq=False)
class _Route:
    method: str
    pattern: re.Pattern[str]
    handler: Handler


@define
class _Fault:
    method: str
    pattern: re.Pattern[str]
    response: Response
    times: int


def self_signed_cert(directory: Path, common_name: str = "fake-cloud") -> tuple[Path, Path]:
    """Write a self-signed certificate for ``127.0.0.1``/``localhost`` (valid from five
    minutes ago for two days) and its key into ``directory`` as ``cert.pem`` and
    ``key.pem``; returns their paths. The certificate is its own CA, so clients trust it
    by pointing their CA bundle at ``cert.pem``."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=2))
        .add_extension(
            x509.SubjectAlternativeName(
                [
                    x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                    x509.DNSName("localhost"),
                ]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


class FakeCloudServer:
    """A fake cloud API's server: routes, recorded requests, injected faults (see the
    module docstring). Subclasses set :attr:`server_name` and override
    :meth:`builtin_routes` and :meth:`error`; the other hooks are optional."""

    server_name: ClassVar[str] = "fake-cloud"
    """The serving thread's name, the certificate's common name, the temp dir's prefix."""

    display_name: ClassVar[str] = "fake cloud"
    """How errors name the fake ("fake cloud has no route GET /x")."""

    unquote_match: ClassVar[bool] = False
    """Percent-decode the route's named groups before the handler sees them."""

    def __init__(self, *, tls: bool = False) -> None:
        self.lock = threading.RLock()
        self.tls = tls
        self.requests: list[FakeRequest] = []
        self._routes: list[_Route] = []
        self._builtin = [
            _Route(method.upper(), re.compile(regex), handler)
            for method, regex, handler in self.builtin_routes()
        ]
        self._faults: list[_Fault] = []
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._dir: Path | None = None

    # ------------------------------------------------------------------ hooks

    def builtin_routes(self) -> Sequence[tuple[str, str, Handler]]:
        """The fake's own routes as (method, path regex, handler), tried in order after
        those added with :meth:`route`; read once, when the fake is made."""
        return ()

    def error(self, status: int, code: str, message: str) -> Response:
        """An error answer in the cloud's shape (faults, unknown routes, handler bugs use
        it); by default ``{"error": {"code", "message"}}``."""
        return status, {}, {"error": {"code": code, "message": message}}

    def authorize(self, request: FakeRequest, handler: Handler) -> Response | None:
        """The answer refusing ``request`` before ``handler`` runs (e.g. a 401 for a
        missing token), or None to let it run (the default)."""
        return None

    def no_route(self, request: FakeRequest) -> Response:
        """The answer when no route matches: a 404 ``NoRouteFound``."""
        return self.error(
            404, "NoRouteFound", f"{self.display_name} has no route {request.method} {request.path}"
        )

    def handler_error(self, exc: Exception) -> Response:
        """The answer when a handler raises: a 500 naming the exception, so a bug in a
        handler reaches the test instead of hanging the client."""
        return self.error(500, "FakeHandlerError", repr(exc))

    def response_headers(self, request: FakeRequest) -> Mapping[str, str]:
        """Headers added to every answer (after the handler's own)."""
        return {}

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> Self:
        """Start serving on an ephemeral 127.0.0.1 port; returns self."""
        self._dir = Path(tempfile.mkdtemp(prefix=f"{self.server_name}-"))
        fake: FakeCloudServer = self

        class _Bound(_RequestHandler):
            server_fake = fake

        server = ThreadingHTTPServer(("127.0.0.1", 0), _Bound)
        server.daemon_threads = True
        if self.tls:
            cert, key = self_signed_cert(self._dir, self.server_name)
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(cert, key)
            server.socket = ctx.wrap_socket(server.socket, server_side=True)
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, name=self.server_name, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and remove :attr:`directory`."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        """``http(s)://127.0.0.1:<port>`` (no trailing slash)."""
        if self._server is None:
            raise RuntimeError(f"{type(self).__name__} is not started")
        scheme = "https" if self.tls else "http"
        return f"{scheme}://127.0.0.1:{self._server.server_address[1]}"

    @property
    def directory(self) -> Path:
        """A private directory for the server's files (its certificate), removed by
        :meth:`stop`."""
        if self._dir is None:
            raise RuntimeError(f"{type(self).__name__} is not started")
        return self._dir

    @property
    def ca_file(self) -> str:
        """The PEM file clients must trust (the self-signed server certificate)."""
        if not self.tls:
            raise RuntimeError(f"{type(self).__name__} serves plain HTTP")
        return str(self.directory / "cert.pem")

    # ------------------------------------------------------------------ extension API

    def route(self, method: str, path_regex: str, handler: Handler) -> Callable[[], None]:
        """Serve ``method`` on paths fully matching ``path_regex`` with ``handler``;
        returns a function removing the route again.

        Added routes are tried before the built-in ones, the latest first (so they may
        override them); named groups of the regex are in ``request.match``.
        """
        entry = _Route(method.upper(), re.compile(path_regex), handler)
        with self.lock:
            self._routes.insert(0, entry)

        def remove() -> None:
            with self.lock:
                self._routes[:] = [r for r in self._routes if r is not entry]

        return remove

    def reset(self) -> None:
        """Forget recorded requests and pending faults (added routes stay); subclasses
        extend it to forget their inventory."""
        with self.lock:
            self.requests.clear()
            self._faults.clear()

    def answer_next(
        self, method: str, path_regex: str, response: Response, *, times: int = 1
    ) -> None:
        """Answer the next ``times`` requests matching ``method`` and ``path_regex`` (full
        match) with ``response``, before any route runs (so nothing is created)."""
        with self.lock:
            self._faults.append(_Fault(method.upper(), re.compile(path_regex), response, times))

    def fail_next(
        self,
        method: str,
        path_regex: str,
        *,
        status: int = 500,
        code: str = "InternalServerError",
        message: str = "injected failure",
        headers: Mapping[str, str] | None = None,
        times: int = 1,
    ) -> None:
        """Answer the next ``times`` matching requests with :meth:`error` (plus
        ``headers``), before any route runs (so nothing is created)."""
        status, base, body = self.error(status, code, message)
        self.answer_next(
            method, path_regex, (status, {**base, **(headers or {})}, body), times=times
        )

    def throttle_next(
        self,
        method: str,
        path_regex: str,
        *,
        retry_after: str | None = "0",
        code: str = "TooManyRequests",
        message: str = "throttled",
        times: int = 1,
    ) -> None:
        """Answer the next matching request ``429`` with ``Retry-After: retry_after``
        (no such header when None)."""
        status, headers, body = self.error(429, code, message)
        if retry_after is not None:
            headers = {**headers, "Retry-After": retry_after}
        self.answer_next(method, path_regex, (status, headers, body), times=times)

    def requests_to(self, method: str, path_regex: str) -> list[FakeRequest]:
        """Recorded requests matching ``method`` and ``path_regex`` (full match)."""
        pattern = re.compile(path_regex)
        with self.lock:
            return [
                r
                for r in self.requests
                if r.method == method.upper() and pattern.fullmatch(r.path) is not None
            ]

    # ------------------------------------------------------------------ dispatch

    def handle(self, request: FakeRequest) -> Response:
        """Record ``request``, answer a pending fault or run the first matching route."""
        with self.lock:
            self.requests.append(request)
            for fault in self._faults:
                if fault.method == request.method and fault.pattern.fullmatch(request.path):
                    fault.times -= 1
                    if fault.times <= 0:
                        self._faults.remove(fault)
                    return fault.response
            routes = [*self._routes, *self._builtin]
        for route in routes:
            if route.method != request.method:
                continue
            m = route.pattern.fullmatch(request.path)
            if m is None:
                continue
            refused = self.authorize(request, route.handler)
            if refused is not None:
                return refused
            groups = {k: v for k, v in m.groupdict().items() if v is not None}
            if self.unquote_match:
                groups = {k: unquote(v) for k, v in groups.items()}
            req = FakeRequest(
                request.method, request.path, request.query, request.headers, request.body, groups
            )
            return route.handler(req)
        return self.no_route(request)


class _RequestHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_fake: FakeCloudServer

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: tests read :attr:`FakeCloudServer.requests` instead."""

    def _serve(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        parts = urlsplit(self.path)
        request = FakeRequest(
            self.command,
            parts.path,
            dict(parse_qsl(parts.query, keep_blank_values=True)),
            dict(self.headers.items()),
            body,
        )
        fake = self.server_fake
        try:
            status, headers, payload = fake.handle(request)
        except Exception as e:  # a bug in a handler must reach the test, not hang it
            status, headers, payload = fake.handler_error(e)
        if payload is None:
            data = b""
        elif isinstance(payload, bytes):
            data = payload
        elif isinstance(payload, str):
            data = payload.encode()
        else:
            data = json.dumps(payload).encode()
        self.send_response(status)
        sent = {k.lower() for k in headers}
        for k, v in headers.items():
            self.send_header(k, v)
        if data and "content-type" not in sent:
            self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        for k, v in fake.response_headers(request).items():
            self.send_header(k, v)
        self.end_headers()
        if data and self.command != "HEAD":
            self.wfile.write(data)

    do_GET = do_PUT = do_POST = do_DELETE = do_PATCH = do_HEAD = _serve
