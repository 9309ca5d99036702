"""The real adapter over real sockets, against a scripted HTTP server that misbehaves.

Each fault is one a production API server or the network between produces: a body cut
off mid-read, a watch that goes silent (a half-open connection), a pooled connection the
server closed while idle. The adapter must turn each into an ``ApiError`` or a quiet end of
the watch, never a urllib3 exception, and never hang.
"""

from __future__ import annotations

import json
import socket
import socketserver
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from karpenter_core.kube.adapter import KubernetesClient, keepalive_socket_options
from karpenter_core.kube.client import ApiError

Script = Callable[[socket.socket, bytes], bool]
"""Answers one request (the raw request bytes); returns whether to keep the connection."""

LIST_BODY = json.dumps(
    {"kind": "ConfigMapList", "apiVersion": "v1", "metadata": {"resourceVersion": "7"}, "items": []}
).encode()


class ScriptedServer:
    """A threaded TCP server answering every request with the script for its number."""

    def __init__(self, scripts: list[Script]) -> None:
        self.scripts = scripts
        self.requests: list[bytes] = []
        self.connections = 0
        outer = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                outer.connections += 1
                conn: socket.socket = self.request
                while True:
                    data = b""
                    while b"\r\n\r\n" not in data:
                        chunk = conn.recv(65536)
                        if not chunk:
                            return
                        data += chunk
                    head, _, rest = data.partition(b"\r\n\r\n")
                    length = 0
                    for line in head.split(b"\r\n"):
                        if line.lower().startswith(b"content-length:"):
                            length = int(line.split(b":")[1])
                    while len(rest) < length:
                        rest += conn.recv(65536)
                    outer.requests.append(head)
                    n = len(outer.requests) - 1
                    script = outer.scripts[min(n, len(outer.scripts) - 1)]
                    if not script(conn, head):
                        return

        self.server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def ok(body: bytes = LIST_BODY) -> Script:
    def answer(conn: socket.socket, _: bytes) -> bool:
        conn.sendall(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            + f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        return True

    return answer


def truncated(conn: socket.socket, _: bytes) -> bool:
    conn.sendall(
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n"
        + LIST_BODY[:20]
    )
    conn.shutdown(socket.SHUT_RDWR)
    return False


def hang_up(conn: socket.socket, _: bytes) -> bool:
    return False  # read the request, then close without an answer (a restarting server)


def silent_watch(conn: socket.socket, _: bytes) -> bool:
    conn.sendall(
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    threading.Event().wait(30)  # never another byte: a half-open connection
    return False


@pytest.fixture
def scripted() -> Iterator[Callable[..., tuple[ScriptedServer, KubernetesClient]]]:
    made: list[tuple[ScriptedServer, KubernetesClient]] = []

    def make(*scripts: Script, **kwargs: Any) -> tuple[ScriptedServer, KubernetesClient]:
        from kubernetes.client import Configuration

        server = ScriptedServer(list(scripts))
        cfg = Configuration()
        cfg.host = server.url
        client = KubernetesClient(cfg, qps=0, **kwargs)
        made.append((server, client))
        return server, client

    yield make
    for server, client in made:
        client.close()
        server.close()


def test_a_body_cut_off_mid_read_is_an_api_error_not_a_urllib3_one(
    scripted: Callable[..., tuple[ScriptedServer, KubernetesClient]],
) -> None:
    _, client = scripted(truncated)
    with pytest.raises(ApiError) as err:
        client.list("configmaps", "ns")
    assert err.value.code == 503
    assert "cannot reach the API server" in str(err.value)


def test_a_read_the_server_hung_up_on_is_sent_again_on_a_fresh_connection(
    scripted: Callable[..., tuple[ScriptedServer, KubernetesClient]],
) -> None:
    server, client = scripted(ok(), hang_up, ok())
    assert client.list("configmaps", "ns").resource_version == "7"
    assert client.list("configmaps", "ns").resource_version == "7"  # hung up, then resent
    assert len(server.requests) == 3
    assert server.connections == 2


def test_a_read_is_sent_again_only_once(
    scripted: Callable[..., tuple[ScriptedServer, KubernetesClient]],
) -> None:
    server, client = scripted(hang_up)
    with pytest.raises(ApiError):
        client.list("configmaps", "ns")
    assert len(server.requests) == 2


def test_a_write_is_never_sent_twice_on_a_connection_error(
    scripted: Callable[..., tuple[ScriptedServer, KubernetesClient]],
) -> None:
    server, client = scripted(truncated)
    with pytest.raises(ApiError):
        client.create(_cm("a"))
    assert len(server.requests) == 1


def test_a_silent_watch_ends_quietly_after_the_idle_timeout(
    scripted: Callable[..., tuple[ScriptedServer, KubernetesClient]],
) -> None:
    _, client = scripted(silent_watch, watch_idle_timeout=0.3)
    stream = client.watch("configmaps", "ns", resource_version="7")
    assert list(stream) == []  # ends, without raising
    assert stream.idle and stream.stopped


def test_the_write_guard_stops_a_write_before_it_reaches_the_server(
    scripted: Callable[..., tuple[ScriptedServer, KubernetesClient]],
) -> None:
    def refuse() -> None:
        raise ApiError("not the leader", code=503, reason="LeadershipLost")

    server, client = scripted(ok(), write_guard=refuse)
    assert client.list("configmaps", "ns").resource_version == "7"  # reads pass
    with pytest.raises(ApiError, match="not the leader"):
        client.create(_cm("a"))
    with pytest.raises(ApiError, match="not the leader"):
        client.delete("configmaps", "a", "ns")
    assert [r.split(b" ")[0] for r in server.requests] == [b"GET"]


def test_sockets_use_tcp_keepalive() -> None:
    options = keepalive_socket_options()
    assert (socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1) in options
    assert (socket.IPPROTO_TCP, socket.TCP_NODELAY, 1) in options  # urllib3's default kept
    if hasattr(socket, "TCP_KEEPIDLE"):
        assert (socket.IPPROTO_TCP, socket.TCP_KEEPIDLE, 30) in options


def _cm(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "ns"}}
