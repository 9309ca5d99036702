"""A TCP proxy that injects the faults a network between an operator and its API server has.

The operator's kubeconfig points here instead of at kube-apiserver; the proxy forwards
bytes both ways (TLS passes through untouched, so nothing about the client's own
connection handling changes) until told to misbehave:

* :meth:`FaultProxy.latency` — every chunk waits before it is forwarded;
* :meth:`FaultProxy.reset` — every open connection is reset (RST, not a clean FIN);
* :meth:`FaultProxy.truncate` — every response stream open now is cut off after a few more
  bytes, mid-body (a load balancer dropping a connection, a crashed server);
* :meth:`FaultProxy.blackhole` — the connections open now stop carrying bytes in either
  direction but stay open: half-open connections, as a NAT or load balancer that forgot
  them leaves; new connections work;
* :meth:`FaultProxy.refuse` — new connections are reset at once and open ones too (the
  API server is unreachable);
* :meth:`FaultProxy.heal` — back to forwarding.

It counts what it did (:attr:`FaultProxy.stats`) so a test can check its fault happened.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
import time
from typing import Any

__all__ = ["FaultProxy"]

CHUNK = 16 * 1024


class _Link:
    """One client connection and its upstream connection."""

    def __init__(self, client: socket.socket, upstream: socket.socket) -> None:
        self.client = client
        self.upstream = upstream
        self.blackholed = False
        self.cut_after: int | None = None  # server->client bytes still to forward
        self.closed = False
        self.lock = threading.Lock()

    def reset(self) -> None:
        with self.lock:
            if self.closed:
                return
            self.closed = True
        for sock in (self.client, self.upstream):
            with contextlib.suppress(OSError):
                # linger 0: close sends RST, as a crashed peer or a middlebox would
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            with contextlib.suppress(OSError):
                sock.close()


class FaultProxy:
    """Listens on 127.0.0.1 (a free port) and forwards to ``upstream`` (host, port)."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._links: list[_Link] = []
        self._lock = threading.Lock()
        self._delay = 0.0
        self._refusing = False
        self._stopped = False
        self.stats: dict[str, int] = {
            "connections": 0,
            "refused": 0,
            "reset": 0,
            "truncated": 0,
            "blackholed": 0,
        }
        self._thread = threading.Thread(target=self._accept, name="fault-proxy", daemon=True)
        self._thread.start()

    @property
    def port(self) -> int:
        return int(self._listener.getsockname()[1])

    # ------------------------------------------------------------------ faults

    def latency(self, seconds: float) -> None:
        self._delay = seconds

    def reset(self) -> int:
        links = self._take_links()
        for link in links:
            link.reset()
        self.stats["reset"] += len(links)
        return len(links)

    def truncate(self, after_bytes: int = 200) -> int:
        """Cut every open connection's server->client stream after ``after_bytes`` more."""
        with self._lock:
            links = [link for link in self._links if not link.closed]
        for link in links:
            with link.lock:
                link.cut_after = after_bytes
        return len(links)

    def blackhole(self) -> int:
        with self._lock:
            links = [link for link in self._links if not link.closed]
        for link in links:
            link.blackholed = True
        self.stats["blackholed"] += len(links)
        return len(links)

    def refuse(self) -> None:
        self._refusing = True
        self.reset()

    def heal(self) -> None:
        self._delay = 0.0
        self._refusing = False

    def stop(self) -> None:
        self._stopped = True
        with contextlib.suppress(OSError):
            self._listener.close()
        self.reset()

    # ------------------------------------------------------------------ forwarding

    def _take_links(self) -> list[_Link]:
        with self._lock:
            links, self._links = self._links, []
        return [link for link in links if not link.closed]

    def _accept(self) -> None:
        while not self._stopped:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            if self._refusing:
                self.stats["refused"] += 1
                _Link(client, socket.socket()).reset()
                continue
            try:
                upstream = socket.create_connection(self.upstream, timeout=5)
                upstream.settimeout(None)
            except OSError:  # the API server itself is down: so is this connection
                self.stats["refused"] += 1
                _Link(client, socket.socket()).reset()
                continue
            link = _Link(client, upstream)
            with self._lock:
                self._links.append(link)
            self.stats["connections"] += 1
            for src, dst, downstream in ((client, upstream, False), (upstream, client, True)):
                threading.Thread(
                    target=self._pump, args=(link, src, dst, downstream), daemon=True
                ).start()

    def _pump(self, link: _Link, src: socket.socket, dst: socket.socket, downstream: bool) -> None:
        try:
            while not link.closed:
                data = src.recv(CHUNK)
                if not data:
                    with contextlib.suppress(OSError):
                        dst.shutdown(socket.SHUT_WR)
                    return
                while link.blackholed and not link.closed:
                    time.sleep(0.05)  # hold the bytes: the peer hears nothing, ever
                if self._delay:
                    time.sleep(self._delay)
                if downstream:
                    with link.lock:
                        cut = link.cut_after
                        if cut is not None:
                            data = data[:cut]
                            link.cut_after = cut - len(data)
                    if cut is not None and link.cut_after == 0:
                        with contextlib.suppress(OSError):
                            dst.sendall(data)
                        self.stats["truncated"] += 1
                        link.reset()
                        return
                dst.sendall(data)
        except OSError:
            link.reset()

    def __enter__(self) -> FaultProxy:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()
