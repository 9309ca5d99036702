"""Informers: a local cache of one resource kept current by list-then-watch.

Like client-go's reflector + indexer, an :class:`Informer` lists once, then watches from the
list's resourceVersion, moving its resourceVersion forward with every event and bookmark so
a dropped watch resumes where it stopped. A 410 Gone (the version was compacted away) makes
it list again; the new listing is diffed against the cache so handlers still see an
``ADDED``/``MODIFIED``/``DELETED`` for everything that changed while it was away (a
deletion missed this way is reported with the last state the cache had).

Handlers take ``(event_type, obj)`` — the shape of the Manager's ``Watch`` mapper and
predicate — so a controller can be fed from an informer's cache instead of its own watch.
Indexes map an object to index values (``pods by spec.nodeName`` is built in) for cheap
lookups such as "the pods on this node".

A *transform* (controller-runtime's cache ``TransformFunc``) turns every object before it
is cached: listed, watched or remembered, so handlers and readers see only transformed
objects. ``serve`` uses :func:`compact_object`: with 150,000 pods cached, the
``managedFields`` nobody reads and a separate copy of every repeated string (each decoded
JSON document has its own ``"Running"``, its own label keys and image names) are most of
the operator's memory.

Informers work on any :class:`KubeClient`: the real adapter or the in-memory server.
``run()`` blocks (use ``start()`` for a daemon thread); ``sync()`` and ``pump()`` do the
same work step by step for single-threaded callers.

An informer must neither die nor lie, because a controller fed by a stale cache stalls
without a sound:

* ``run()`` survives every error of list and watch (any exception type: a body cut off
  mid-read surfaces from urllib3, not as an ``ApiError``), retrying with capped exponential
  back-off and logging a failure streak once, not once per attempt;
* every listing after the first is a *resync*: handlers hear of every object in it, as
  client-go's ``Replace`` delivers a ``Sync`` for each, not only of the ones that changed.
  This process's own writes go into the cache ahead of their watch events
  (:meth:`remember`); when a watch breaks before delivering them, only a resync tells the
  controllers, so without it an object this process created could wait forever;
* :meth:`health` says whether the cache is current (synced and connected) and whether
  the loop is alive, for ``/readyz`` and ``/healthz``.
"""

from __future__ import annotations

import logging
import random
import sys
import threading
import time
from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import Any, Protocol

from attrs import frozen

from karpenter_core.kube.client import (
    ADDED,
    BOOKMARK,
    DELETED,
    MODIFIED,
    ApiError,
    Gone,
    KubeClient,
    Obj,
    ResourceLike,
    WatchStream,
    resource_for,
)
from karpenter_core.kube.sharing import SharedStructures

__all__ = [
    "NODECLAIM_PROVIDER_ID_INDEX",
    "POD_NODE_NAME_INDEX",
    "READ_CONTAINER_STATUS_FIELDS",
    "UNREAD_CONTAINER_FIELDS",
    "Handler",
    "Indexer",
    "Informer",
    "InformerHealth",
    "SharedInformers",
    "SharingCompactor",
    "Transform",
    "WatchSpec",
    "compact_object",
    "nodeclaim_provider_id",
    "object_key",
    "pod_node_name",
]

log = logging.getLogger("karpenter.kube.informer")

Handler = Callable[[str, Obj], None]
Indexer = Callable[[Obj], Iterable[str]]
Transform = Callable[[Obj], Obj]


class WatchSpec(Protocol):
    """What :meth:`Informer.feed` needs of the Manager's ``Watch`` (mapper and predicate)."""

    @property
    def mapper(self) -> Callable[[str, Obj], Iterable[Hashable]]: ...

    @property
    def predicate(self) -> Callable[[str, Obj], bool] | None: ...


POD_NODE_NAME_INDEX = "spec.nodeName"
NODECLAIM_PROVIDER_ID_INDEX = "status.providerID"
"""NodeClaims by the instance they launched, as upstream's manager indexes them: node
termination and eviction look a node's NodeClaim up once per reconcile and per evicted
pod, and a scan of every NodeClaim each time grew with the cluster."""
_NODECLAIM = ("karpenter.sh/v1", "NodeClaim")

INITIAL_BACKOFF = 0.5
FAILURE_LOG_INTERVAL = 60.0
"""While list/watch keeps failing, one warning per this many seconds (plus the first)."""


@frozen
class InformerHealth:
    """One informer's state, as the probes read it (ages in seconds, ``None`` = never)."""

    resource: str
    synced: bool
    running: bool
    """The loop's thread is alive (or the informer is driven by hand and never started)."""
    failing_for: float | None
    """How long list/watch has been failing without a success in between."""
    last_error: str
    since_heartbeat: float
    """Since the loop last did something: listed, opened a watch, read an event, backed off."""

    @property
    def current(self) -> bool:
        """Synced and not failing: the cache is as fresh as the watch."""
        return self.synced and self.failing_for is None


def object_key(obj: Mapping[str, Any]) -> str:
    """``namespace/name`` for namespaced objects, ``name`` for cluster-scoped ones."""
    meta = obj.get("metadata") or {}
    ns = meta.get("namespace")
    name = str(meta.get("name") or "")
    return f"{ns}/{name}" if ns else name


def _compact(value: Any) -> Any:
    if isinstance(value, str):
        return sys.intern(value)
    if isinstance(value, dict):
        return {sys.intern(k): _compact(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_compact(v) for v in value]
    return value


UNREAD_CONTAINER_FIELDS = frozenset(
    {
        "args",
        "command",
        "env",
        "envFrom",
        "imagePullPolicy",
        "lifecycle",
        "livenessProbe",
        "readinessProbe",
        "startupProbe",
        "stdin",
        "stdinOnce",
        "terminationMessagePath",
        "terminationMessagePolicy",
        "tty",
        "volumeDevices",
        "volumeMounts",
        "workingDir",
    }
)
"""What a pod's containers say that no controller reads: how the kubelet runs them. What
scheduling reads stays: name, image, resources, ports, restartPolicy (sidecars),
securityContext and anything not listed here."""

READ_CONTAINER_STATUS_FIELDS = frozenset({"name", "resources", "allocatedResources"})
"""What is read of a container's status: what the kubelet has allocated (in-place resize),
which can exceed the spec's requests. Its state, image, ids and restart count are not."""

_CONTAINERS = ("containers", "initContainers", "ephemeralContainers")
_CONTAINER_STATUSES = ("containerStatuses", "initContainerStatuses", "ephemeralContainerStatuses")


def _slim_pod(obj: Obj) -> Obj:
    """``obj`` (a v1 Pod) without the container fields of :data:`UNREAD_CONTAINER_FIELDS`
    and the container status fields outside :data:`READ_CONTAINER_STATUS_FIELDS` (new
    mappings where anything is dropped; ``obj`` is not changed)."""

    def keep(items: Any, wanted: Callable[[str], bool]) -> Any:
        if not isinstance(items, list):
            return items
        return [
            {k: v for k, v in c.items() if wanted(k)} if isinstance(c, dict) else c for c in items
        ]

    out = dict(obj)
    spec = obj.get("spec")
    if isinstance(spec, dict):
        out["spec"] = {
            k: keep(v, lambda f: f not in UNREAD_CONTAINER_FIELDS) if k in _CONTAINERS else v
            for k, v in spec.items()
        }
    status = obj.get("status")
    if isinstance(status, dict):
        out["status"] = {
            k: keep(v, READ_CONTAINER_STATUS_FIELDS.__contains__) if k in _CONTAINER_STATUSES else v
            for k, v in status.items()
        }
    return out


def compact_object(obj: Obj, shared: SharedStructures | None = None) -> Obj:
    """The object as the operator caches it: without ``metadata.managedFields`` (server-side
    apply's bookkeeping, which no controller reads: controller-runtime's
    ``TransformStripManagedFields``, as upstream's operator configures its cache) and with
    every string interned, so the many copies of the same label key, image name, condition
    type or timestamp across thousands of objects are one string each. Pods also lose what
    no controller reads of their containers (:data:`UNREAD_CONTAINER_FIELDS`,
    :data:`READ_CONTAINER_STATUS_FIELDS`): env, probes, mounts and container states are
    a third of a typical pod. Nothing writes a cached pod back whole (pods are patched,
    evicted and deleted), so nothing dropped here can be lost on the server.

    A new structure: ``obj`` is not changed (a watch may hand the same event to others).
    An update built from a cached object omits ``managedFields``, which the API server
    takes as "leave them as they are".

    With ``shared``, nested values alike across objects (a Deployment's replicas' containers,
    tolerations, labels...) are one object each (:mod:`karpenter_core.kube.sharing`)."""
    meta = obj.get("metadata")
    if isinstance(meta, dict) and "managedFields" in meta:
        obj = {**obj, "metadata": {k: v for k, v in meta.items() if k != "managedFields"}}
    if obj.get("kind") == "Pod" and obj.get("apiVersion") == "v1":
        obj = _slim_pod(obj)
    compacted: Obj = _compact(obj) if shared is None else shared.share(obj)
    return compacted


class SharingCompactor:
    """:func:`compact_object` with one :class:`SharedStructures` table for every informer
    it is given to (``serve``'s cache transform)."""

    def __init__(self) -> None:
        self.shared = SharedStructures()

    def __call__(self, obj: Obj) -> Obj:
        return compact_object(obj, self.shared)


def pod_node_name(obj: Mapping[str, Any]) -> list[str]:
    """Index value of a pod: the node it is bound to (unbound pods are not indexed)."""
    node = (obj.get("spec") or {}).get("nodeName")
    return [str(node)] if node else []


def nodeclaim_provider_id(obj: Mapping[str, Any]) -> list[str]:
    """Index value of a NodeClaim: its instance's provider ID (none before launch)."""
    provider_id = (obj.get("status") or {}).get("providerID")
    return [str(provider_id)] if provider_id else []


def _revision_of(rv: Any) -> int | None:
    try:
        return int(str(rv))
    except (TypeError, ValueError):
        return None


def _revision(obj: Obj) -> int | None:
    return _revision_of((obj.get("metadata") or {}).get("resourceVersion"))


def _newer(a: Obj, b: Obj) -> bool:
    """``a`` is a strictly later version of the object than ``b`` (False when unknown)."""
    ra, rb = _revision(a), _revision(b)
    return ra is not None and rb is not None and ra > rb


class Informer:
    """A list-then-watch cache of one resource (see the module docstring). Thread-safe."""

    def __init__(
        self,
        client: KubeClient,
        resource: ResourceLike,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        indexers: Mapping[str, Indexer] | None = None,
        watch_timeout: float = 300.0,
        max_backoff: float = 10.0,
        transform: Transform | None = None,
        shared_reads: bool = False,
    ) -> None:
        self.client = client
        self.transform = transform
        # Cache the client's own objects, uncopied (its ``list_shared`` and its watches'
        # ``poll_shared``), where it has them: only for a client whose shared objects are
        # never changed after they are handed out, as the in-memory server's stored
        # versions. A simulated kube-scheduler then holds no second copy of every pod.
        self.shared_reads = shared_reads and transform is None
        self.resource = resource_for(resource)
        self.namespace = namespace
        self.label_selector = label_selector
        self.field_selector = field_selector
        self.watch_timeout = watch_timeout
        self.max_backoff = max_backoff
        self._indexers: dict[str, Indexer] = dict(indexers or {})
        if self.resource.key == ("v1", "Pod"):
            self._indexers.setdefault(POD_NODE_NAME_INDEX, pod_node_name)
        if self.resource.key == _NODECLAIM:
            self._indexers.setdefault(NODECLAIM_PROVIDER_ID_INDEX, nodeclaim_provider_id)
        self._items: dict[str, Obj] = {}
        self._indexes: dict[str, dict[str, set[str]]] = {n: {} for n in self._indexers}
        self._handlers: list[Handler] = []
        self._lock = threading.RLock()
        self._synced = threading.Event()
        self._stop = threading.Event()
        self._stream: WatchStream | None = None
        self._thread: threading.Thread | None = None
        self._started = False
        self.resource_version: str | None = None
        self.relists = 0
        self.resyncs = 0
        self._monotonic: Callable[[], float] = time.monotonic
        self._heartbeat = self._monotonic()
        self._failing_since: float | None = None
        self._failures = 0
        self._last_error = ""
        self._last_failure_log = float("-inf")

    # ------------------------------------------------------------------ reading

    def has_synced(self) -> bool:
        """True once the first listing is in the cache."""
        return self._synced.is_set()

    def wait_for_sync(self, timeout: float | None = None) -> bool:
        return self._synced.wait(timeout)

    def health(self) -> InformerHealth:
        """Whether the cache is current and the loop alive (see :class:`InformerHealth`)."""
        now = self._monotonic()
        thread = self._thread
        with self._lock:
            failing = self._failing_since
            error = self._last_error
            beat = self._heartbeat
        return InformerHealth(
            resource=str(self.resource),
            synced=self._synced.is_set(),
            running=thread.is_alive() if self._started and thread is not None else True,
            failing_for=None if failing is None else max(0.0, now - failing),
            last_error=error,
            since_heartbeat=max(0.0, now - beat),
        )

    def _beat(self) -> None:
        with self._lock:
            self._heartbeat = self._monotonic()

    def _succeeded(self) -> None:
        """The server answered: a list, an opened watch, an event."""
        with self._lock:
            self._heartbeat = self._monotonic()
            if self._failing_since is None:
                return
            failed_for = self._heartbeat - self._failing_since
            failures = self._failures
            self._failing_since = None
            self._failures = 0
            self._last_failure_log = float("-inf")
        log.info(
            "list/watch of %s recovered after %d failed attempts over %.0fs",
            self.resource,
            failures,
            failed_for,
        )

    def _failed(self, e: BaseException, retry_in: float) -> None:
        now = self._monotonic()
        text = str(e) or type(e).__name__
        if not isinstance(e, ApiError | OSError):
            text = f"{type(e).__name__}: {text}"
        with self._lock:
            self._heartbeat = now
            if self._failing_since is None:
                self._failing_since = now
            self._failures += 1
            self._last_error = text[:500]
            loud = now - self._last_failure_log >= FAILURE_LOG_INTERVAL
            if loud:
                self._last_failure_log = now
            failures = self._failures
        if loud:
            log.warning(
                "list/watch of %s failed (%d attempts so far): %s; retrying in %.1fs",
                self.resource,
                failures,
                self._last_error,
                retry_in,
            )
        else:
            log.debug("list/watch of %s failed again: %s", self.resource, text)

    def get(self, key: str) -> Obj | None:
        """The cached object (a reference: do not mutate) by ``namespace/name`` or ``name``."""
        with self._lock:
            return self._items.get(key)

    def objects(self) -> list[Obj]:
        with self._lock:
            return list(self._items.values())

    def keys(self) -> list[str]:
        with self._lock:
            return list(self._items)

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    def has_index(self, index: str) -> bool:
        return index in self._indexers

    def by_index(self, index: str, value: str) -> list[Obj]:
        """Objects whose ``index`` values include ``value`` (e.g. pods on a node)."""
        with self._lock:
            if index not in self._indexes:
                raise KeyError(f"informer for {self.resource} has no index {index!r}")
            return [self._items[k] for k in sorted(self._indexes[index].get(value, ()))]

    # ------------------------------------------------------------------ handlers

    def add_handler(self, handler: Handler, *, replay: bool = True) -> None:
        """Call ``handler(event_type, obj)`` for every change; with ``replay``, first an
        ``ADDED`` for each object already cached (so late subscribers miss nothing)."""
        with self._lock:
            self._handlers.append(handler)
            existing = list(self._items.values()) if replay else []
        for obj in existing:
            self._call(handler, ADDED, obj)

    def remove_handler(self, handler: Handler) -> None:
        """Stop calling ``handler`` (a stopped Manager detaches its controllers)."""
        with self._lock:
            if handler in self._handlers:
                self._handlers.remove(handler)

    def feed(self, watch: WatchSpec, enqueue: Callable[[Hashable], None]) -> Handler:
        """Enqueue keys from this cache's changes as the Manager does from a watch: the
        ``Watch``'s predicate filters, its mapper turns each change into keys."""

        def handler(event_type: str, obj: Obj) -> None:
            if watch.predicate is not None and not watch.predicate(event_type, obj):
                return
            for key in watch.mapper(event_type, obj):
                enqueue(key)

        self.add_handler(handler)
        return handler

    def _call(self, handler: Handler, event_type: str, obj: Obj) -> None:
        try:
            handler(event_type, obj)
        except Exception:  # a broken handler must not stop the cache
            log.exception("informer handler for %s failed on %s", self.resource, event_type)

    def _notify(self, event_type: str, obj: Obj) -> None:
        for handler in list(self._handlers):
            self._call(handler, event_type, obj)

    # ------------------------------------------------------------------ the cache

    def _index(self, key: str, obj: Obj | None, old: Obj | None) -> None:
        for name, fn in self._indexers.items():
            index = self._indexes[name]
            if old is not None:
                for v in fn(old):
                    keys = index.get(v)
                    if keys is not None:
                        keys.discard(key)
                        if not keys:
                            del index[v]
            if obj is not None:
                for v in fn(obj):
                    index.setdefault(v, set()).add(key)

    def _apply(self, event_type: str, obj: Obj) -> None:
        rv = (obj.get("metadata") or {}).get("resourceVersion")
        if event_type == BOOKMARK:
            if rv:
                self.resource_version = str(rv)
            return
        if self.transform is not None:
            obj = self.transform(obj)
        key = object_key(obj)
        with self._lock:
            old = self._items.get(key)
            if event_type == DELETED:
                self._items.pop(key, None)
                self._index(key, None, old)
            elif old is not None and _newer(old, obj):
                # a write's result remembered ahead of this older event: keep the newer copy
                pass
            else:
                self._items[key] = obj
                self._index(key, obj, old)
                if event_type == ADDED and old is not None:
                    event_type = MODIFIED
            if rv:
                self.resource_version = str(rv)
        self._notify(event_type, obj)

    def remember(self, obj: Obj) -> bool:
        """Store the result of this process's own write before its watch event arrives, so a
        read right after a write sees it (client-go's mutation cache, simplified).

        Only a version newer than everything the watch has delivered is taken: an older one
        would resurrect state the watch already moved past (even a deletion). Handlers are not
        called; they hear of the change from the watch. Returns whether the cache changed.
        Resource versions are compared as etcd revisions (integers); a server that does not
        use them gets no read-your-writes, only the usual watch latency.
        """
        rv = _revision(obj)
        if rv is None or not self._synced.is_set():
            return False
        if self.transform is not None:
            obj = self.transform(obj)
        key = object_key(obj)
        with self._lock:
            seen = _revision_of(self.resource_version)
            if seen is None or rv <= seen:
                return False
            old = self._items.get(key)
            if old is not None and not _newer(obj, old):
                return False
            self._items[key] = obj
            self._index(key, obj, old)
        return True

    # ------------------------------------------------------------------ list and watch

    def sync(self) -> None:
        """List and replace the cache. The first listing tells handlers of every object as
        ``ADDED``; a later one (a relist) is a resync: deletions as ``DELETED``, new objects
        as ``ADDED`` and every other object as ``MODIFIED``, changed or not (see the module
        docstring for why unchanged ones too)."""
        list_each = getattr(self.client, "list_each", None)
        if self.transform is not None and list_each is not None:
            # transformed page by page: the listing as received is never held whole
            listing = list_each(
                self.resource,
                self.namespace,
                label_selector=self.label_selector,
                field_selector=self.field_selector,
                each=self.transform,
            )
        else:
            list_shared = getattr(self.client, "list_shared", None) if self.shared_reads else None
            listing = (list_shared or self.client.list)(
                self.resource,
                self.namespace,
                label_selector=self.label_selector,
                field_selector=self.field_selector,
            )
            if self.transform is not None:
                listing.items[:] = [self.transform(o) for o in listing.items]
        fresh = {object_key(o): o for o in listing.items}
        changes: list[tuple[str, Obj]] = []
        with self._lock:
            resync = self._synced.is_set()
            for key, old in self._items.items():
                if key not in fresh:
                    changes.append((DELETED, old))
            for key, obj in fresh.items():
                changes.append((ADDED if key not in self._items else MODIFIED, obj))
            for name in self._indexes:
                self._indexes[name] = {}
            self._items = fresh
            for key, obj in fresh.items():
                self._index(key, obj, None)
            self.resource_version = listing.resource_version
            self.relists += 1
            if resync:
                self.resyncs += 1
        self._synced.set()
        self._succeeded()
        for event_type, obj in changes:
            self._notify(event_type, obj)

    def _open(self) -> WatchStream:
        return self.client.watch(
            self.resource,
            self.namespace,
            resource_version=self.resource_version,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
            allow_watch_bookmarks=True,
            # jitter, as client-go does, so many informers do not reconnect in lockstep
            timeout_seconds=self.watch_timeout * (1 + random.random()),
        )

    def pump(self, timeout: float | None = 0) -> int:
        """Single-threaded step: sync if needed, open a watch if needed, and apply what has
        arrived (waiting up to ``timeout`` for the first event). Returns events applied."""
        if not self._synced.is_set() or self.resource_version is None:
            self.sync()
        try:
            if self._stream is None or self._stream.stopped:
                self._stream = self._open()
            poll_shared = getattr(self._stream, "poll_shared", None) if self.shared_reads else None
            events = (
                poll_shared()
                if poll_shared is not None and timeout == 0
                else self._stream.poll(timeout)
            )
        except Gone:
            self._stream = None
            self.sync()
            return 0
        for event in events:
            self._apply(event.type, event.object)
        return len(events)

    def run(self) -> None:
        """Keep the cache current until :meth:`stop`: list, watch, resume, relist on 410,
        and retry any failure with back-off (see the module docstring)."""
        backoff = INITIAL_BACKOFF
        while not self._stop.is_set():
            self._beat()
            try:
                if not self._synced.is_set() or self.resource_version is None:
                    self.sync()
                stream = self._open()
                self._succeeded()
                with self._lock:
                    self._stream = stream
                if self._stop.is_set():
                    stream.stop()
                    break
                for event in stream:
                    self._apply(event.type, event.object)
                    self._succeeded()
                    backoff = INITIAL_BACKOFF
                    if self._stop.is_set():
                        break
                # the server closed the watch at its timeout, or the client ended a silent
                # one: reopen from the last resourceVersion
            except Gone:
                log.info("watch of %s expired (410); listing again", self.resource)
                self.resource_version = None
            except Exception as e:  # anything: a dead loop is a cache stale forever
                if self._stop.is_set():
                    break
                self._failed(e, backoff)
                self._stop.wait(backoff * (0.5 + random.random()))
                backoff = min(backoff * 2, self.max_backoff)

    def start(self) -> Informer:
        """Run in a daemon thread."""
        self._started = True
        if self._thread is None:
            self._thread = threading.Thread(
                target=self.run, name=f"informer {self.resource}", daemon=True
            )
            self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        with self._lock:
            stream = self._stream
        if stream is not None:
            stream.stop()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)


class SharedInformers:
    """One informer per (resource, namespace, selectors), shared by every consumer."""

    def __init__(self, client: KubeClient, *, transform: Transform | None = None) -> None:
        self.client = client
        self.transform = transform
        self._informers: dict[tuple[Any, ...], Informer] = {}
        self._lock = threading.Lock()
        self._started = False

    def informer(
        self,
        resource: ResourceLike,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> Informer:
        rt = resource_for(resource)
        key = (rt.key, namespace, label_selector, field_selector)
        with self._lock:
            inf = self._informers.get(key)
            if inf is None:
                inf = Informer(
                    self.client,
                    rt,
                    namespace,
                    label_selector=label_selector,
                    field_selector=field_selector,
                    transform=self.transform,
                )
                self._informers[key] = inf
                if self._started:
                    inf.start()
            return inf

    def start(self) -> None:
        with self._lock:
            self._started = True
            informers = list(self._informers.values())
        for inf in informers:
            inf.start()

    def wait_for_sync(self, timeout: float | None = None) -> bool:
        with self._lock:
            informers = list(self._informers.values())
        return all(inf.wait_for_sync(timeout) for inf in informers)

    def has_synced(self) -> bool:
        with self._lock:
            return all(inf.has_synced() for inf in self._informers.values())

    def all(self) -> list[Informer]:
        with self._lock:
            return list(self._informers.values())

    def stop(self) -> None:
        with self._lock:
            informers = list(self._informers.values())
        for inf in informers:
            inf.stop()
