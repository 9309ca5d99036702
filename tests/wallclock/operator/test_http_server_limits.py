"""The probe and metrics server holds up against idle, slow and vanishing clients: fixed
threads whatever the number of connections, idle connections dropped after a timeout, and
no traceback when a client goes away mid-answer."""

from __future__ import annotations

import contextlib
import logging
import socket
import struct
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest

from karpenter_core.operator.health import HttpServer, Response, probe_routes

WORKERS = 2


def server_threads(name: str) -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith(f"{name}-")]


def connect(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=30)


def status(port: int, path: str) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=30) as r:
            return int(r.status)
    except urllib.error.HTTPError as e:
        return e.code


@pytest.fixture
def probes() -> Iterator[HttpServer]:
    server = HttpServer(
        "limits", 0, probe_routes({}), "127.0.0.1", workers=WORKERS, max_idle=32, timeout=60
    ).start()
    yield server
    server.stop()


def test_idle_connections_take_no_threads_and_a_probe_is_still_answered(
    probes: HttpServer,
) -> None:
    before = threading.active_count()
    with contextlib.ExitStack() as stack:
        for _ in range(300):
            stack.enter_context(connect(probes.port))
        assert len(server_threads("limits")) == 1 + WORKERS
        assert threading.active_count() == before
        assert status(probes.port, "/healthz") == 200


def test_connections_beyond_the_idle_limit_are_closed(probes: HttpServer) -> None:
    conns = [connect(probes.port) for _ in range(40)]
    try:
        # the server closes the oldest to stay at 32 waiting connections
        assert conns[0].recv(1) == b""
        assert conns[7].recv(1) == b""
    finally:
        for conn in conns:
            conn.close()


@pytest.mark.parametrize("sent", [b"", b"GET /healthz HTTP/1.0\r\n"], ids=["nothing", "half"])
def test_a_connection_that_stalls_is_closed_after_the_timeout(sent: bytes) -> None:
    server = HttpServer("stall", 0, probe_routes({}), "127.0.0.1", timeout=0.3).start()
    try:
        with connect(server.port) as conn:
            conn.sendall(sent)
            assert conn.recv(1) == b""  # closed by the server, long before our 30 s
    finally:
        server.stop()


class _WentAway(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []
        self.went_away = threading.Event()

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)
        if "went away" in record.getMessage():
            self.went_away.set()


def test_a_client_that_disconnects_mid_response_leaves_no_traceback(
    capfd: pytest.CaptureFixture[str],
) -> None:
    body = b"x" * (32 << 20)  # more than the socket buffers of both ends hold

    def big(query: object) -> Response:
        return 200, "text/plain", body

    logger = logging.getLogger("karpenter.operator.health")
    handler, level = _WentAway(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    server = HttpServer("vanish", 0, {"/big": big}, "127.0.0.1").start()
    try:
        conn = connect(server.port)
        conn.sendall(b"GET /big HTTP/1.0\r\n\r\n")
        assert conn.recv(1024).startswith(b"HTTP/1.0 200")
        # close with a reset, as a probe client that timed out does
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        conn.close()
        assert handler.went_away.wait(30), "the server never noticed the client leave"
        assert status(server.port, "/nope") == 404  # and it still answers
    finally:
        server.stop()
        logger.removeHandler(handler)
        logger.setLevel(level)
    out, err = capfd.readouterr()
    assert "Traceback" not in out + err
    assert [r.levelno for r in handler.records] == [logging.DEBUG]
    assert all(r.exc_info is None for r in handler.records)


def test_a_bind_address_limits_where_it_listens() -> None:
    server = HttpServer("bound", 0, probe_routes({}), "127.0.0.1")
    try:
        assert server.address == "127.0.0.1"
    finally:
        server.stop()
    everywhere = HttpServer("bound", 0, probe_routes({}))
    try:
        assert everywhere.address == "0.0.0.0"
    finally:
        everywhere.stop()


def test_an_ipv6_bind_address_listens_on_ipv6() -> None:
    if not socket.has_ipv6:
        pytest.skip("no IPv6 on this machine")
    try:
        server = HttpServer("six", 0, probe_routes({}), "::1").start()
    except Exception as e:  # an IPv6-less kernel or container
        pytest.skip(f"cannot listen on ::1: {e}")
    try:
        with urllib.request.urlopen(f"http://[::1]:{server.port}/healthz", timeout=30) as r:
            assert r.read() == b"ok"
        assert server.address == "::1"
    finally:
        server.stop()
