"""A :class:`~karpenter_core.kube.client.KubeClient` on a real API server.

Built on the official ``kubernetes`` client for everything that is easy to get wrong —
kubeconfig and in-cluster loading, TLS, bearer tokens and their refresh, client
certificates, exec plugins, the connection pool — but not for payloads: every request goes
through the client's configured urllib3 pool with raw JSON bodies, and responses are
``json.loads``-ed into plain dicts. The generated models would cost a deserialisation per
object on every list and watch event (the hot paths of an operator with thousands of pods),
and the engine works on dicts anyway. Requests are built directly on ``rest_client`` rather
than ``ApiClient.call_api`` because ``call_api``'s signature changed between client
releases (29 to 37), while the pool and the configuration's auth settings did not.

Behaviour that matches client-go:

* a token-bucket rate limiter (``qps``/``burst``, upstream's ``--kube-client-qps`` /
  ``--kube-client-burst``) in front of every request, including opening a watch;
* a 429 with ``Retry-After`` (API priority and fairness) is retried a few times, except for
  evictions, where a 429 means a PodDisruptionBudget said no and is the caller's business;
* error responses become the :class:`ApiError` subclasses of ``client.py`` by code and
  reason; a connection failure is an ``ApiError`` with code 503 naming the server;
* watches stream newline-delimited JSON on a reader thread; an ``ERROR`` event with a 410
  (or an HTTP 410) raises :class:`Gone` from the stream, so callers relist;
* sockets use client-go's TCP keepalive (30 s idle), and a watch that stays silent for
  ``watch_idle_timeout`` (default 90 s) is ended so its owner reopens it: the API server
  sends a bookmark about every minute to watchers that allow them, so a silent watch is a
  half-open connection (a NAT or load balancer that forgot it, a server that vanished
  without a FIN), which would otherwise leave a cache stale forever;
* every failure of the transport, including a body cut off mid-read, is an
  :class:`ApiError` with code 503, never a urllib3 exception; a read (GET) whose pooled
  connection turns out to be dead is sent once more on a fresh one, as Go's transport does.

A ``write_guard`` (the leader elector's check, in ``serve``) runs right before every write
is put on the wire, after the rate limiter's wait, so a replica that can no longer prove
it leads never sends one.
"""

from __future__ import annotations

import contextlib
import json
import logging
import queue
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar

from karpenter_core.kube.client import (
    ERROR,
    ApiError,
    Conflict,
    Gone,
    NotFound,
    Obj,
    ObjectList,
    ResourceLike,
    ResourceType,
    WatchEvent,
    error_from_status,
    resource_for,
    resource_of,
)
from karpenter_core.kube.config import load_config, load_in_cluster

__all__ = [
    "DEFAULT_BURST",
    "DEFAULT_QPS",
    "KubernetesClient",
    "RateLimiter",
    "RestWatch",
    "retry_on_conflict",
]

log = logging.getLogger("karpenter.kube")

# Upstream Karpenter's --kube-client-qps / --kube-client-burst defaults.
DEFAULT_QPS = 200.0
DEFAULT_BURST = 300

LIST_PAGE_SIZE = 500
MAX_THROTTLE_RETRIES = 5

WATCH_IDLE_TIMEOUT = 90.0
"""Seconds a watch may stay silent before it is presumed dead (bookmarks come ~every 60 s)."""

# client-go's keepalive: probe an idle connection after 30 s, every 15 s, 9 times.
KEEPALIVE_IDLE = 30
KEEPALIVE_INTERVAL = 15
KEEPALIVE_COUNT = 9

_READS = frozenset({"GET", "HEAD"})

_CONTENT_TYPES = {
    "merge": "application/merge-patch+json",
    "json": "application/json-patch+json",
    "strategic": "application/strategic-merge-patch+json",
}

T = TypeVar("T")


# --------------------------------------------------------------------------- rate limiting


class RateLimiter:
    """A token bucket: ``burst`` requests at once, refilled at ``qps`` per second.

    ``acquire`` blocks until a token is free, like client-go's flowcontrol limiter, so a
    burst of reconciles queues up in the client instead of being throttled by the server.
    ``qps <= 0`` disables limiting.
    """

    def __init__(
        self,
        qps: float,
        burst: int,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.qps = float(qps)
        self.burst = max(1, int(burst))
        self._clock = clock
        self._sleep = sleep
        self._tokens = float(self.burst)
        self._last = clock()
        self._lock = threading.Lock()

    def _reserve(self) -> float:
        """Take a token (possibly going into debt) and return how long to wait for it."""
        with self._lock:
            now = self._clock()
            self._tokens = min(self.burst, self._tokens + (now - self._last) * self.qps)
            self._last = now
            self._tokens -= 1.0
            if self._tokens >= 0:
                return 0.0
            return -self._tokens / self.qps

    def acquire(self) -> float:
        """Wait for a token; returns the seconds waited."""
        if self.qps <= 0:
            return 0.0
        wait = self._reserve()
        if wait > 0:
            self._sleep(wait)
        return wait


# --------------------------------------------------------------------------- helpers


def retry_on_conflict(fn: Callable[[], T], *, attempts: int = 5) -> T:
    """Run ``fn`` (read, modify, write) again when the write loses a race (409 Conflict).

    Like client-go's ``retry.RetryOnConflict``: ``fn`` must re-read the object each time.
    """
    for attempt in range(attempts):
        try:
            return fn()
        except Conflict:
            if attempt == attempts - 1:
                raise
            time.sleep(min(0.01 * 2**attempt, 0.5))
    raise AssertionError("unreachable")  # pragma: no cover


def keepalive_socket_options() -> list[tuple[int, int, int]]:
    """urllib3 socket options: its defaults (no Nagle) plus client-go's TCP keepalive.

    Options the platform lacks are left out (macOS names the idle time differently)."""
    import socket

    import urllib3

    options: list[tuple[int, int, int]] = list(
        urllib3.connection.HTTPConnection.default_socket_options
    )
    options.append((socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1))
    for name, value in (
        ("TCP_KEEPIDLE", KEEPALIVE_IDLE),
        ("TCP_KEEPINTVL", KEEPALIVE_INTERVAL),
        ("TCP_KEEPCNT", KEEPALIVE_COUNT),
    ):
        opt = getattr(socket, name, None)
        if opt is not None:
            options.append((socket.IPPROTO_TCP, opt, value))
    return options


def _unreachable(host: str, e: BaseException) -> ApiError:
    return ApiError(
        f"cannot reach the API server at {host}: {e}", code=503, reason="ServiceUnavailable"
    )


def _error_from_response(status_code: int, body: bytes, what: str) -> ApiError:
    try:
        status = json.loads(body) if body else {}
    except ValueError:
        status = {}
    if not isinstance(status, dict) or status.get("kind") != "Status":
        text = body.decode(errors="replace").strip()[:300] if body else ""
        status = {"code": status_code, "message": f"{what}: HTTP {status_code} {text}".strip()}
    status.setdefault("code", status_code)
    return error_from_status(status)


def _collection_path(rt: ResourceType, namespace: str | None) -> str:
    base = f"/apis/{rt.group}/{rt.version}" if rt.group else f"/api/{rt.version}"
    if rt.namespaced and namespace:
        return f"{base}/namespaces/{urllib.parse.quote(namespace, safe='')}/{rt.plural}"
    return f"{base}/{rt.plural}"


def _object_path(rt: ResourceType, name: str, namespace: str | None) -> str:
    if not name:
        raise NotFound(f"{rt}: an object name is required")
    return f"{_collection_path(rt, namespace)}/{urllib.parse.quote(name, safe='')}"


# --------------------------------------------------------------------------- watch stream


_STOP = object()


class RestWatch:
    """A watch on a streaming HTTP response, read by a daemon thread into a queue.

    ``poll`` and iteration hand out :class:`WatchEvent` values in order; a 410 from the
    server is raised as :class:`Gone` when reached, other stream errors as :class:`ApiError`.
    A read that times out (the connection's read timeout is the client's
    ``watch_idle_timeout``) ends the stream quietly with :attr:`idle` set: nothing is lost,
    the owner reopens from its last resourceVersion.
    """

    def __init__(self, response: Any, what: str) -> None:
        self._response = response
        self._what = what
        self.idle = False
        self._queue: queue.Queue[Any] = queue.Queue()
        self._stopped = threading.Event()
        self._ended = False
        self._thread = threading.Thread(target=self._read, name=f"watch {what}", daemon=True)
        self._thread.start()

    # the reader ------------------------------------------------------------------

    def _read(self) -> None:
        buffer = b""
        try:
            for chunk in self._response.stream(64 * 1024, decode_content=True):
                if self._stopped.is_set():
                    break
                buffer += chunk
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    if line.strip():
                        self._queue.put(self._parse(line))
            if buffer.strip() and not self._stopped.is_set():
                self._queue.put(self._parse(buffer))
        except Exception as e:  # connection reset, shutdown from stop(), bad JSON
            if self._stopped.is_set():
                pass
            elif _is_read_timeout(e):
                self.idle = True
                log.debug("watch %s was silent too long; ending it to reopen", self._what)
            else:
                self._queue.put(
                    ApiError(
                        f"watch {self._what} broke: {e}", code=503, reason="ServiceUnavailable"
                    )
                )
        finally:
            self._queue.put(_STOP)
            with contextlib.suppress(Exception):
                self._response.release_conn()

    def _parse(self, line: bytes) -> WatchEvent | ApiError:
        try:
            raw = json.loads(line)
        except ValueError:
            return ApiError(f"watch {self._what}: undecodable event {line[:200]!r}")
        kind = raw.get("type")
        obj = raw.get("object") or {}
        if kind == ERROR:
            err = error_from_status(obj)
            if err.code == 410:
                return Gone(err.message, code=410, reason=err.reason)
            return err
        return WatchEvent(str(kind), obj)

    # the consumer ----------------------------------------------------------------

    def _take(self, item: Any, out: list[WatchEvent]) -> bool:
        """Handle one queued item; False when the stream ended."""
        if item is _STOP:
            self._ended = True
            return False
        if isinstance(item, ApiError):
            self._ended = True
            self.stop()
            raise item
        out.append(item)
        return True

    def poll(self, timeout: float | None = 0) -> list[WatchEvent]:
        out: list[WatchEvent] = []
        if self._ended:
            return out
        try:
            first = self._queue.get(timeout=timeout) if timeout != 0 else self._queue.get_nowait()
        except queue.Empty:
            return out
        if not self._take(first, out):
            return out
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return out
            if not self._take(item, out):
                return out

    def __iter__(self) -> Iterator[WatchEvent]:
        while not self._ended:
            out: list[WatchEvent] = []
            if not self._take(self._queue.get(), out):
                return
            yield from out

    def stop(self) -> None:
        if self._stopped.is_set():
            return
        self._stopped.set()
        resp = self._response
        with contextlib.suppress(Exception):
            if hasattr(resp, "shutdown"):
                resp.shutdown()  # urllib3 >= 2.3: unblocks a read in another thread
        with contextlib.suppress(Exception):
            sock = getattr(getattr(resp, "connection", None), "sock", None)
            if sock is not None:
                import socket

                sock.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(Exception):
            resp.close()
        self._queue.put(_STOP)

    @property
    def stopped(self) -> bool:
        return self._stopped.is_set() or self._ended


def _is_read_timeout(e: BaseException) -> bool:
    import socket

    import urllib3

    return isinstance(e, urllib3.exceptions.ReadTimeoutError | socket.timeout | TimeoutError)


# --------------------------------------------------------------------------- the client


class KubernetesClient:
    """KubeClient over HTTP (see the module docstring). Thread-safe."""

    def __init__(
        self,
        configuration: Any,
        *,
        qps: float = DEFAULT_QPS,
        burst: int = DEFAULT_BURST,
        user_agent: str = "karpenter-core",
        request_timeout: float = 60.0,
        watch_idle_timeout: float = WATCH_IDLE_TIMEOUT,
        write_guard: Callable[[], None] | None = None,
    ) -> None:
        from kubernetes import client as k8s_client

        self.configuration = configuration
        if getattr(configuration, "socket_options", None) is None:
            configuration.socket_options = keepalive_socket_options()
        # every open watch holds a connection: size the pool for many informers, not for
        # the client's default of a handful (extra connections would be dropped on release)
        configuration.connection_pool_maxsize = max(
            int(getattr(configuration, "connection_pool_maxsize", 0) or 0), 64
        )
        self._api: Any = k8s_client.ApiClient(configuration)
        self._pool = self._api.rest_client.pool_manager
        self.host = str(configuration.host).rstrip("/")
        self.limiter = RateLimiter(qps, burst)
        self.user_agent = user_agent
        self.request_timeout = request_timeout
        self.watch_idle_timeout = watch_idle_timeout
        self.write_guard = write_guard
        """Called right before each write is sent; raises to stop it (leader election)."""

    @classmethod
    def from_kubeconfig(
        cls, path: str | None = None, *, context: str | None = None, **kwargs: Any
    ) -> KubernetesClient:
        """Client from a kubeconfig (``path``, ``$KUBECONFIG``, in-cluster, ``~/.kube/config``)."""
        return cls(load_config(path, context).configuration, **kwargs)

    @classmethod
    def in_cluster(cls, **kwargs: Any) -> KubernetesClient:
        """Client from the pod's service account (token re-read as it rotates)."""
        return cls(load_in_cluster().configuration, **kwargs)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._api.close()

    # ------------------------------------------------------------------ transport

    def _headers(self, content_type: str | None) -> dict[str, str]:
        headers = {"Accept": "application/json", "User-Agent": self.user_agent}
        if content_type:
            headers["Content-Type"] = content_type
        for auth in self.configuration.auth_settings().values():
            if auth.get("in") == "header" and auth.get("value"):
                headers[str(auth["key"])] = str(auth["value"])
        return headers

    def _send(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, Any] | None = None,
        body: Any = None,
        content_type: str | None = None,
        stream: bool = False,
        timeout: float | None = None,
        retry_throttled: bool = True,
    ) -> Any:
        import urllib3

        url = self.host + path
        if query:
            url += "?" + urllib.parse.urlencode({k: v for k, v in query.items() if v is not None})
        data = None
        if body is not None:
            data = json.dumps(body, separators=(",", ":")).encode()
            content_type = content_type or "application/json"
        read_timeout = self.watch_idle_timeout if stream else (timeout or self.request_timeout)
        attempt = 0
        reconnected = False
        while True:
            self.limiter.acquire()
            if self.write_guard is not None and method not in _READS:
                self.write_guard()
            try:
                response = self._pool.request(
                    method,
                    url,
                    body=data,
                    headers=self._headers(content_type),
                    preload_content=False,
                    timeout=urllib3.Timeout(connect=10.0, read=read_timeout),
                    retries=False,
                )
                if response.status < 300 and stream:
                    return response
                try:
                    payload = response.data
                finally:
                    response.release_conn()
            except (urllib3.exceptions.HTTPError, OSError) as e:
                # A pooled connection the server closed while idle (a restart, an idle
                # timeout) fails at once: a read is safe to send again on a fresh one.
                if method in _READS and not reconnected and not _is_read_timeout(e):
                    reconnected = True
                    continue
                raise _unreachable(self.host, e) from None
            if response.status < 300:
                return response.status, payload
            if response.status == 429 and retry_throttled and attempt < MAX_THROTTLE_RETRIES:
                attempt += 1
                try:
                    delay = float(response.headers.get("Retry-After") or 1)
                except ValueError:
                    delay = 1.0
                time.sleep(min(max(delay, 0.1), 10.0))
                continue
            raise _error_from_response(response.status, payload, f"{method} {path}")

    def _json(self, method: str, path: str, **kwargs: Any) -> Obj:
        _, payload = self._send(method, path, **kwargs)
        try:
            obj = json.loads(payload) if payload else {}
        except ValueError as e:  # a body cut short or garbled on the way
            raise ApiError(
                f"{method} {path}: undecodable response ({e})",
                code=503,
                reason="ServiceUnavailable",
            ) from None
        if not isinstance(obj, dict):
            raise ApiError(f"{method} {path}: the API server answered with a non-object")
        return obj

    @staticmethod
    def _namespace_for(
        rt: ResourceType, obj: Mapping[str, Any], namespace: str | None
    ) -> str | None:
        if not rt.namespaced:
            return None
        meta = obj.get("metadata") or {}
        return str(meta.get("namespace") or namespace or "default")

    @staticmethod
    def _with_type(rt: ResourceType, obj: Obj) -> Obj:
        obj.setdefault("apiVersion", rt.api_version)
        obj.setdefault("kind", rt.kind)
        return obj

    # ------------------------------------------------------------------ reads

    def get(self, resource: ResourceLike, name: str, namespace: str | None = None) -> Obj:
        rt = resource_for(resource)
        ns = (namespace or "default") if rt.namespaced else None
        return self._with_type(rt, self._json("GET", _object_path(rt, name, ns)))

    def list(
        self,
        resource: ResourceLike,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> ObjectList:
        return self.list_each(
            resource, namespace, label_selector=label_selector, field_selector=field_selector
        )

    def list_each(
        self,
        resource: ResourceLike,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        each: Callable[[Obj], Obj] | None = None,
    ) -> ObjectList:
        """:meth:`list`, with ``each`` applied to every item as its page arrives: an
        informer that keeps a slimmer copy (a cache transform) never holds the whole
        listing as received, only one page of it (a listing of 150,000 pods as decoded JSON
        is several GB, and the allocator keeps most of that peak after it is freed)."""
        rt = resource_for(resource)
        path = _collection_path(rt, namespace if rt.namespaced else None)
        items: list[Obj] = []
        resource_version = ""
        token: str | None = None
        while True:
            page = self._json(
                "GET",
                path,
                query={
                    "labelSelector": label_selector or None,
                    "fieldSelector": field_selector or None,
                    "limit": LIST_PAGE_SIZE,
                    "continue": token,
                },
            )
            meta = page.get("metadata") or {}
            if not resource_version:
                resource_version = str(meta.get("resourceVersion") or "")
            for item in page.get("items") or []:
                item = self._with_type(rt, item)
                items.append(item if each is None else each(item))
            token = meta.get("continue") or None
            if not token:
                break
        return ObjectList(items, resource_version)

    def watch(
        self,
        resource: ResourceLike,
        namespace: str | None = None,
        *,
        resource_version: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        allow_watch_bookmarks: bool = False,
        send_initial_events: bool = False,
        timeout_seconds: float | None = None,
    ) -> RestWatch:
        rt = resource_for(resource)
        path = _collection_path(rt, namespace if rt.namespaced else None)
        query: dict[str, Any] = {
            "watch": "true",
            "resourceVersion": resource_version or None,
            "labelSelector": label_selector or None,
            "fieldSelector": field_selector or None,
            "allowWatchBookmarks": "true"
            if (allow_watch_bookmarks or send_initial_events)
            else None,
            "timeoutSeconds": int(timeout_seconds) if timeout_seconds else None,
        }
        if send_initial_events:
            query["sendInitialEvents"] = "true"
            query["resourceVersionMatch"] = "NotOlderThan"
            query["resourceVersion"] = resource_version or ""
        try:
            response = self._send("GET", path, query=query, stream=True)
        except ApiError as e:
            if e.code == 410:
                raise Gone(e.message, code=410, reason=e.reason) from None
            raise
        return RestWatch(response, str(rt))

    # ------------------------------------------------------------------ writes

    def create(self, obj: Mapping[str, Any], namespace: str | None = None) -> Obj:
        rt = resource_of(obj)
        ns = self._namespace_for(rt, obj, namespace)
        body = dict(obj)
        if ns is not None:
            body["metadata"] = dict(body.get("metadata") or {}, namespace=ns)
        return self._with_type(rt, self._json("POST", _collection_path(rt, ns), body=body))

    def _put(self, obj: Mapping[str, Any], suffix: str) -> Obj:
        rt = resource_of(obj)
        ns = self._namespace_for(rt, obj, None)
        name = str((obj.get("metadata") or {}).get("name") or "")
        path = _object_path(rt, name, ns) + suffix
        return self._with_type(rt, self._json("PUT", path, body=obj))

    def update(self, obj: Mapping[str, Any]) -> Obj:
        return self._put(obj, "")

    def update_status(self, obj: Mapping[str, Any]) -> Obj:
        return self._put(obj, "/status")

    def patch(
        self,
        resource: ResourceLike,
        name: str,
        patch: Any,
        namespace: str | None = None,
        *,
        patch_type: str = "merge",
        subresource: str | None = None,
    ) -> Obj:
        rt = resource_for(resource)
        if patch_type not in _CONTENT_TYPES:
            raise ValueError(
                f"unknown patch type {patch_type!r}: use one of {', '.join(_CONTENT_TYPES)}"
            )
        ns = (namespace or "default") if rt.namespaced else None
        path = _object_path(rt, name, ns) + (f"/{subresource}" if subresource else "")
        return self._with_type(
            rt, self._json("PATCH", path, body=patch, content_type=_CONTENT_TYPES[patch_type])
        )

    def delete(
        self,
        resource: ResourceLike,
        name: str,
        namespace: str | None = None,
        *,
        propagation_policy: str | None = None,
        grace_period_seconds: int | None = None,
        preconditions: Mapping[str, str] | None = None,
    ) -> Obj | None:
        rt = resource_for(resource)
        ns = (namespace or "default") if rt.namespaced else None
        options: dict[str, Any] = {"apiVersion": "v1", "kind": "DeleteOptions"}
        if propagation_policy is not None:
            options["propagationPolicy"] = propagation_policy
        if grace_period_seconds is not None:
            options["gracePeriodSeconds"] = grace_period_seconds
        if preconditions:
            options["preconditions"] = dict(preconditions)
        _, payload = self._send("DELETE", _object_path(rt, name, ns), body=options)
        obj = json.loads(payload) if payload else {}
        if not isinstance(obj, dict) or obj.get("kind") == "Status":
            return None
        # The server answers 200 with the object both when it is gone and when finalizers or
        # a grace period keep it; only the latter carry a deletionTimestamp, and even then a
        # final (grace 0) delete returns the last state. Ask once to know which it is.
        if not (obj.get("metadata") or {}).get("deletionTimestamp"):
            return None
        uid = (obj.get("metadata") or {}).get("uid")
        try:
            current = self.get(rt, name, ns)
        except NotFound:
            return None
        if uid and (current.get("metadata") or {}).get("uid") != uid:
            return None
        return current

    def evict(self, name: str, namespace: str, *, grace_period_seconds: int | None = None) -> None:
        body: dict[str, Any] = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": name, "namespace": namespace},
        }
        if grace_period_seconds is not None:
            body["deleteOptions"] = {"gracePeriodSeconds": grace_period_seconds}
        path = _object_path(resource_for(("v1", "Pod")), name, namespace) + "/eviction"
        self._send("POST", path, body=body, retry_throttled=False)

    def bind(self, name: str, namespace: str, node_name: str) -> None:
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": name, "namespace": namespace},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node_name},
        }
        path = _object_path(resource_for(("v1", "Pod")), name, namespace) + "/binding"
        self._send("POST", path, body=body)

    # ------------------------------------------------------------------ discovery

    def server_version(self) -> Obj:
        """``/version`` of the API server (a cheap reachability check)."""
        return self._json("GET", "/version")

    def has_resource(self, rt: ResourceType) -> bool:
        """Whether the server serves ``rt`` (e.g. a CRD is installed and established)."""
        base = f"/apis/{rt.group}/{rt.version}" if rt.group else f"/api/{rt.version}"
        try:
            doc = self._json("GET", base)
        except NotFound:
            return False
        return any(r.get("name") == rt.plural for r in doc.get("resources") or [])
