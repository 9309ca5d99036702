"""An in-memory Kubernetes API server that implements :class:`KubeClient`.

It keeps the semantics controllers depend on: uid/creationTimestamp/resourceVersion
assignment (one cluster-wide counter), optimistic concurrency (409 on a stale
resourceVersion), ``metadata.generation`` bumped on spec changes only, ``generateName``,
finalizers with ``deletionTimestamp`` (delete marks; removing the last finalizer removes),
graceful pod deletion, the status subresource split, watches from a resourceVersion with a
bounded history (410 Gone beyond it) and bookmarks, label/field selectors, pod binding, and
pod eviction against PodDisruptionBudgets.

The kube-controller-manager loops whose absence would make a simulation meaningless — the
disruption controller (PDB status), the garbage collector (ownerReference cascades), the
namespace controller (deleting a namespace's contents) and the resource-claim controller
(pods' ResourceClaims from templates) — are not the API server's: they are
:mod:`karpenter_core.sim.controllermanager`, which the server calls through a narrow hook
right after each change is stored (synchronously; that module says why). A server runs them
unless built with ``kube_controller_manager=False`` (then
:func:`~karpenter_core.sim.controllermanager.register` adds them). Where the server
simplifies, the docstring of the method says so.

Stored objects are never handed out: everything is deep-copied in and out, so callers can
mutate what they get. One re-entrant lock guards the whole store.
"""

from __future__ import annotations

import builtins
import io
import os
import pickle
import random
import re
import threading
import time
import uuid
from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from datetime import timedelta
from typing import Any, cast

from karpenter_core.apis.accessors import labels_of, meta_of, namespace_of
from karpenter_core.apis.labels import LABEL_HOSTNAME
from karpenter_core.apis.labelselector import DOUBLE_EQUALS, EQUALS, IN
from karpenter_core.kube.client import (
    ADDED,
    BOOKMARK,
    DELETED,
    INITIAL_EVENTS_END_ANNOTATION,
    JSON_PATCH,
    MERGE_PATCH,
    MODIFIED,
    AlreadyExists,
    BadRequest,
    Conflict,
    Forbidden,
    Gone,
    InternalError,
    Invalid,
    NotFound,
    Obj,
    ObjectList,
    ResourceLike,
    ResourceType,
    TooManyRequests,
    UnknownResourceError,
    WatchEvent,
    deep_copy,
    resource_for,
    resource_of,
)
from karpenter_core.kube.informer import (
    NODECLAIM_PROVIDER_ID_INDEX,
    POD_NODE_NAME_INDEX,
    nodeclaim_provider_id,
)
from karpenter_core.kube.selectors import (
    FieldSelector,
    LabelSelector,
    SelectorError,
    field_value,
    label_selector_from_dict,
    parse_field_selector,
    parse_label_selector,
)
from karpenter_core.runtime.clock import Clock, WallClock, format_time
from karpenter_core.sim.controllermanager import KubeControllerManager, pdb_selector, pod_ready

__all__ = ["InMemoryApiServer", "MemoryWatch", "apply_json_patch", "apply_merge_patch", "deep_copy"]

DEFAULT_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")

_POD = ("v1", "Pod")
_NODE = ("v1", "Node")
_NAMESPACE = ("v1", "Namespace")
_PDB = ("policy/v1", "PodDisruptionBudget")
_NODECLAIM = ("karpenter.sh/v1", "NodeClaim")
_RESOURCE_CLAIM = ("resource.k8s.io/v1", "ResourceClaim")
_RESOURCE_SLICE = ("resource.k8s.io/v1", "ResourceSlice")
_DRA_IMMUTABLE_SPEC = (_RESOURCE_CLAIM, ("resource.k8s.io/v1", "ResourceClaimTemplate"))
_SLICE_NODE_SELECTION = ("nodeName", "nodeSelector", "allNodes", "perDeviceNodeSelection")

_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_GENERATE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"

#: set to "1" to check that no reader changes a stored object in place (see _Encoded)
VERIFY_ENV = "KARPENTER_SIM_VERIFY_STORED"


# --------------------------------------------------------------------------- patches


def copy_obj(obj: Obj) -> Obj:
    """:func:`deep_copy` for one API object."""
    return cast(Obj, deep_copy(obj))


def _exact_label(selector: LabelSelector, key: str) -> str | None:
    """The one value ``selector`` requires of label ``key`` (``key=value``), if it does."""
    for r in selector.requirements:
        if r.key == key and r.operator in (EQUALS, DOUBLE_EQUALS, IN) and len(r.values) == 1:
            return r.values[0]
    return None


class _Encoded:
    """Stored objects serialised once, copied by decoding: a real API server's watch cache
    likewise encodes an object once and sends those bytes to every reader and watcher.

    Every read and every watch event hands out a private copy (callers may mutate what they
    get); at cluster scale those copies were most of a simulation's time, with the same
    object copied for each of its watchers and for every list that includes it. Decoding a
    pickle is several times faster than copying the dicts in Python, and encoding happens
    once per stored version. The pickler runs without its memo, so a copy shares no
    containers with the stored object nor within itself, as :func:`deep_copy` gives.

    Only the objects currently stored are encoded (registered by :meth:`put` when one is
    committed, encoded when first copied, dropped by :meth:`forget` when a newer version
    replaces it or it is removed), so the cache is at most as large as the store; a version
    nobody copies (most of them, now that informers and watches share stored objects) is
    never encoded; anything else (a superseded version still in a watcher's buffer,
    a deleted object's last state) is copied with :func:`deep_copy`. Entries are keyed by
    ``id`` and hold the object, so an id is never reused while its entry lives. A stored
    object is never changed in place after it is committed, which is what makes its
    encoding safe to reuse."""

    __slots__ = ("_blobs", "verify")

    def __init__(self) -> None:
        self._blobs: dict[int, tuple[Obj, bytes | None]] = {}
        # Readers share stored objects (get_shared, list_shared, shared watches and the
        # informers fed by them) on the promise never to change them. With VERIFY_ENV set
        # (the test suite sets it) every stored version is checked against its encoding
        # when it is replaced or removed, so a reader that broke the promise fails the
        # test that made it do so instead of corrupting the store unseen.
        self.verify = os.environ.get(VERIFY_ENV) == "1"

    @staticmethod
    def _encode(obj: Obj) -> bytes:
        # Stored objects are built from deep_copy'd input (plain dicts and lists, never
        # tuples), so they are encoded as they are: a copy made first only to normalise them
        # was a sixth of a simulated scale-out's API cost. The test suite checks the premise
        # (``put`` under VERIFY_ENV): a reader comparing a tuple it wrote with the list it
        # reads back would see a change that never settles.
        buf = io.BytesIO()
        pickler = pickle.Pickler(buf, pickle.HIGHEST_PROTOCOL)
        pickler.fast = True  # no memo: nothing shared, exactly like deep_copy
        pickler.dump(obj)
        return buf.getvalue()

    def put(self, obj: Obj) -> None:
        """Register a committed version, encoded when first copied (at once under
        VERIFY_ENV, whose checks compare encodings made at commit)."""
        if not self.verify:
            self._blobs[id(obj)] = (obj, None)
            return
        blob = self._encode(obj)
        if pickle.loads(blob) != deep_copy(obj):
            meta = meta_of(obj)
            raise AssertionError(
                f"stored {obj.get('kind')} {meta.get('namespace') or ''}/{meta.get('name')} "
                "holds a tuple or another non-JSON container: copies would differ from it"
            )
        self._blobs[id(obj)] = (obj, blob)

    def copy(self, obj: Obj) -> Obj:
        entry = self._blobs.get(id(obj))
        if entry is None or entry[0] is not obj:
            return copy_obj(obj)
        blob = entry[1]
        if blob is None:
            blob = self._encode(obj)
            self._blobs[id(obj)] = (obj, blob)
        return cast(Obj, pickle.loads(blob))

    def forget(self, obj: Obj | None) -> None:
        if obj is not None:
            entry = self._blobs.get(id(obj))
            if entry is not None and entry[0] is obj:
                del self._blobs[id(obj)]
                if self.verify and entry[1] is not None and self._encode(obj) != entry[1]:
                    meta = meta_of(obj)
                    raise AssertionError(
                        f"stored {obj.get('kind')} {meta.get('namespace') or ''}/"
                        f"{meta.get('name')} was changed in place by a reader of a shared "
                        "object"
                    )


def apply_merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch: ``null`` deletes, objects merge, anything else replaces."""
    if not isinstance(patch, Mapping):
        return deep_copy(patch)
    result: dict[str, Any] = dict(target) if isinstance(target, Mapping) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = apply_merge_patch(result.get(key), value)
    return result


def _pointer(path: Any) -> list[str]:
    if not isinstance(path, str) or (path and not path.startswith("/")):
        raise BadRequest(f"json patch: path {path!r} is not a JSON pointer")
    if path == "":
        return []
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _walk(doc: Any, parts: list[str], path: str) -> Any:
    cur = doc
    for p in parts:
        if isinstance(cur, dict):
            if p not in cur:
                raise Invalid(f"json patch: path {path!r} does not exist")
            cur = cur[p]
        elif isinstance(cur, list):
            idx = _index(p, len(cur), path, allow_end=False)
            cur = cur[idx]
        else:
            raise Invalid(f"json patch: path {path!r} does not exist")
    return cur


def _index(token: str, length: int, path: str, *, allow_end: bool) -> int:
    if token == "-" and allow_end:
        return length
    if not token.isdigit() or (len(token) > 1 and token.startswith("0")):
        raise Invalid(f"json patch: {token!r} in {path!r} is not an array index")
    idx = int(token)
    if idx > length or (idx == length and not allow_end):
        raise Invalid(f"json patch: index {idx} in {path!r} is out of range")
    return idx


def _add(doc: Any, path: str, value: Any) -> Any:
    parts = _pointer(path)
    if not parts:
        return deep_copy(value)
    parent = _walk(doc, parts[:-1], path)
    last = parts[-1]
    if isinstance(parent, dict):
        parent[last] = deep_copy(value)
    elif isinstance(parent, list):
        parent.insert(_index(last, len(parent), path, allow_end=True), deep_copy(value))
    else:
        raise Invalid(f"json patch: cannot add at {path!r}")
    return doc


def _remove(doc: Any, path: str) -> tuple[Any, Any]:
    parts = _pointer(path)
    if not parts:
        raise Invalid("json patch: cannot remove the whole document")
    parent = _walk(doc, parts[:-1], path)
    last = parts[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise Invalid(f"json patch: path {path!r} does not exist")
        return doc, parent.pop(last)
    if isinstance(parent, list):
        return doc, parent.pop(_index(last, len(parent), path, allow_end=False))
    raise Invalid(f"json patch: path {path!r} does not exist")


def apply_json_patch(target: Any, operations: Any) -> Any:
    """RFC 6902 JSON patch (add, remove, replace, move, copy, test) on a copy of ``target``."""
    if not isinstance(operations, list):
        raise BadRequest("json patch must be a list of operations")
    doc = deep_copy(target)
    for i, op in enumerate(operations):
        if not isinstance(op, Mapping) or "op" not in op or "path" not in op:
            raise BadRequest(f"json patch operation {i} needs 'op' and 'path'")
        kind, path = op["op"], op["path"]
        if kind in ("add", "replace", "test") and "value" not in op:
            raise BadRequest(f"json patch operation {i} ({kind}) needs 'value'")
        if kind == "add":
            doc = _add(doc, path, op["value"])
        elif kind == "remove":
            doc, _ = _remove(doc, path)
        elif kind == "replace":
            doc, _ = _remove(doc, path) if _pointer(path) else (doc, None)
            doc = _add(doc, path, op["value"])
        elif kind in ("move", "copy"):
            if "from" not in op:
                raise BadRequest(f"json patch operation {i} ({kind}) needs 'from'")
            if kind == "move":
                doc, value = _remove(doc, op["from"])
            else:
                value = deep_copy(_walk(doc, _pointer(op["from"]), op["from"]))
            doc = _add(doc, path, value)
        elif kind == "test":
            if _walk(doc, _pointer(path), path) != op["value"]:
                raise Invalid(f"json patch: test operation at {path!r} failed")
        else:
            raise BadRequest(f"json patch operation {i}: unknown op {kind!r}")
    return doc


# --------------------------------------------------------------------------- helpers


def _validate_resource_slice(obj: Obj, old: Obj | None) -> None:
    """What kube-apiserver checks of a ResourceSlice that a controller could get wrong:
    driver and pool name set, exactly one way of selecting nodes, and driver, pool name and
    node name fixed once created (its full validation is not repeated here)."""
    spec = obj.get("spec")
    if not isinstance(spec, Mapping):
        raise Invalid("spec: Required value")
    if not spec.get("driver"):
        raise Invalid("spec.driver: Required value")
    pool = spec.get("pool")
    if not isinstance(pool, Mapping) or not pool.get("name"):
        raise Invalid("spec.pool.name: Required value")
    chosen = [f for f in _SLICE_NODE_SELECTION if spec.get(f) not in (None, False, "")]
    if len(chosen) != 1:
        raise Invalid(
            "spec: Required value: exactly one of `nodeName`, `nodeSelector`, `allNodes`, "
            "`perDeviceNodeSelection` is required"
        )
    if old is not None:
        ospec = old.get("spec") or {}
        for path, new_value, old_value in (
            ("spec.pool.name", pool.get("name"), (ospec.get("pool") or {}).get("name")),
            ("spec.driver", spec.get("driver"), ospec.get("driver")),
            ("spec.nodeName", spec.get("nodeName"), ospec.get("nodeName")),
        ):
            if new_value != old_value:
                raise Invalid(f"{path}: Invalid value: {new_value!r}: field is immutable")


def _validate_claim_status(new: Obj, old: Obj) -> None:
    """A ResourceClaim's allocation, once written, may only be removed (deallocation)."""
    before = (old.get("status") or {}).get("allocation")
    after = (new.get("status") or {}).get("allocation")
    if before is not None and after is not None and before != after:
        raise Invalid("status.allocation: Invalid value: field is immutable")


def _resource_name(rt: ResourceType) -> str:
    return rt.plural if not rt.group else f"{rt.plural}.{rt.group}"


def _spec_part(obj: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k not in ("metadata", "status")}


def _qos_class(pod: Mapping[str, Any]) -> str:
    containers = list((pod.get("spec") or {}).get("containers") or []) + list(
        (pod.get("spec") or {}).get("initContainers") or []
    )
    any_set = False
    guaranteed = True
    for c in containers:
        res = (c or {}).get("resources") or {}
        req = res.get("requests") or {}
        lim = res.get("limits") or {}
        if req or lim:
            any_set = True
        for name in ("cpu", "memory"):
            limit = lim.get(name)
            if limit is None or str(req.get(name, limit)) != str(limit):
                guaranteed = False
    if not any_set:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


class MemoryWatch:
    """One open watch on the in-memory server (a WatchStream): filters plus a buffer of
    undelivered events."""

    def __init__(
        self,
        server: InMemoryApiServer,
        rt: ResourceType,
        namespace: str | None,
        labels: LabelSelector,
        fields: FieldSelector,
        bookmarks: bool,
        timeout: float | None,
    ) -> None:
        self.server = server
        self.rt = rt
        self.namespace = namespace
        self.labels = labels
        self.fields = fields
        self.bookmarks = bookmarks
        self.deadline = None if timeout is None else time.monotonic() + timeout
        self.buffer: deque[WatchEvent] = deque()
        self.cond = threading.Condition()
        self._stopped = False

    def matches(self, obj: Mapping[str, Any]) -> bool:
        # Cluster-scoped objects carry no namespace while their watchers hold "": compare
        # both as "" so those watches see later changes too.
        if self.namespace is not None and (meta_of(obj).get("namespace") or "") != self.namespace:
            return False
        if not self.labels.empty and not self.labels.matches(labels_of(obj)):
            return False
        if not self.fields.empty:
            values = {f: self.server._field(self.rt, obj, f) for f in self.fields.fields()}
            if not self.fields.matches(values):
                return False
        return True

    def translate(self, etype: str, obj: Obj, old: Obj | None) -> WatchEvent | None:
        """What this watcher sees of a change, given its filters (may turn into ADDED/DELETED)."""
        if etype == ADDED:
            return WatchEvent(ADDED, obj) if self.matches(obj) else None
        if etype == DELETED:
            return WatchEvent(DELETED, obj) if self.matches(old or obj) else None
        now_match = self.matches(obj)
        was_match = old is not None and self.matches(old)
        if now_match and was_match:
            return WatchEvent(MODIFIED, obj)
        if now_match:
            return WatchEvent(ADDED, obj)
        if was_match and old is not None:
            # Leaving the selection: the watcher is told the object it knew went away, at
            # the resourceVersion of the change.
            rv = meta_of(obj).get("resourceVersion")
            return WatchEvent(DELETED, {**old, "metadata": {**meta_of(old), "resourceVersion": rv}})
        return None

    def push(self, event: WatchEvent) -> None:
        with self.cond:
            if not self._stopped:
                self.buffer.append(event)
                self.server.watch_activity += 1
                self.cond.notify_all()

    # -- WatchStream
    def __iter__(self) -> Iterator[WatchEvent]:
        while True:
            with self.cond:
                while not self.buffer and not self._stopped:
                    remaining = None if self.deadline is None else self.deadline - time.monotonic()
                    if remaining is not None and remaining <= 0:
                        self._stop_locked()
                        break
                    self.cond.wait(remaining)
                if not self.buffer:
                    return
                event = self.buffer.popleft()
            yield WatchEvent(event.type, self.server._encoded.copy(event.object))

    def poll(self, timeout: float | None = 0) -> list[WatchEvent]:
        if not self.buffer and timeout == 0:
            return []  # the common case in a simulation loop: skip the lock
        with self.cond:
            if not self.buffer and not self._stopped and (timeout is None or timeout > 0):
                self.cond.wait(timeout)
            events = list(self.buffer)
            self.buffer.clear()
        copy = self.server._encoded.copy
        return [WatchEvent(e.type, copy(e.object)) for e in events]

    def poll_shared(self) -> list[WatchEvent]:
        """:meth:`poll` (no waiting) without copies: the events carry the stored objects,
        which the caller must not change. A virtual Manager's watch handlers only map an
        event to keys, as they do on the shared informer objects under ``serve``; copying
        every event for every watcher was a tenth of a large simulation's time."""
        if not self.buffer:
            return []
        with self.cond:
            events = list(self.buffer)
            self.buffer.clear()
        return events

    def stop(self) -> None:
        with self.cond:
            self._stop_locked()
        self.server._forget_watcher(self)

    def _stop_locked(self) -> None:
        self._stopped = True
        self.server.watch_activity += 1
        self.cond.notify_all()

    @property
    def stopped(self) -> bool:
        return self._stopped


class _Store:
    """The server's storage as :class:`~karpenter_core.sim.controllermanager.Store`: what
    the controller-manager loops may read and write (under the server's lock)."""

    def __init__(self, server: InMemoryApiServer) -> None:
        self._server = server

    @property
    def clock(self) -> Clock:
        return self._server._clock

    def stored(self, key: tuple[str, str], namespace: str) -> Mapping[str, Obj]:
        return self._server._objects.get(key, {}).get(namespace, {})

    def kinds(self) -> Iterable[tuple[str, str]]:
        return list(self._server._objects)

    def locate(self, uid: str) -> tuple[ResourceType, str, str] | None:
        return self._server._by_uid.get(uid)

    def resource(self, key: tuple[str, str]) -> ResourceType:
        return self._server._rt(key)

    def commit(self, rt: ResourceType, etype: str, obj: Obj, old: Obj | None) -> None:
        self._server._commit(rt, etype, obj, old)

    def create(self, obj: Obj) -> Obj:
        return self._server.create(obj)

    def delete(self, rt: ResourceType, obj: Obj, policy: str, grace: int | None) -> Obj | None:
        return self._server._delete(rt, obj, policy, grace)

    def remove(self, rt: ResourceType, obj: Obj) -> None:
        self._server._remove(rt, obj, "Background")


class InMemoryApiServer:
    """A :class:`~karpenter_core.kube.client.KubeClient` that keeps everything in memory.

    ``clock`` stamps creation/deletion timestamps (pass the simulation's VirtualClock);
    ``seed`` makes uids and generated names reproducible; ``watch_history`` bounds how far
    back a watch can resume before it gets 410 Gone. The ``default``, ``kube-system``,
    ``kube-public`` and ``kube-node-lease`` namespaces exist from the start; objects in any
    other namespace need the Namespace created first, as on a real server.
    ``kube_controller_manager``: run the simulated kube-controller-manager's loops
    (:mod:`karpenter_core.sim.controllermanager`) on every write, as a cluster does; False
    leaves them off until :func:`~karpenter_core.sim.controllermanager.register` adds them.
    """

    def __init__(
        self,
        clock: Clock | None = None,
        *,
        seed: int = 0,
        watch_history: int = 10_000,
        namespaces: tuple[str, ...] = DEFAULT_NAMESPACES,
        kube_controller_manager: bool = True,
    ) -> None:
        if watch_history < 1:
            raise ValueError("watch_history must be at least 1")
        self._clock: Clock = clock or WallClock()
        self._last_removed: Obj = {}
        self._rng = random.Random(seed)
        self._lock = threading.RLock()
        self._rv = 0
        self.watch_activity = 0
        """Counts events put in any watch's buffer and watches stopped: while it stands, no
        watch of this server has anything new to hand out (a simulation's watch pump,
        run before every reconcile, then skips polling each of its dozens of watches)."""
        # resource key -> namespace ("" when cluster-scoped) -> name -> object
        self._objects: dict[tuple[str, str], dict[str, dict[str, Obj]]] = {}
        self._encoded = _Encoded()
        self._pods_by_node: dict[str, set[tuple[str, str]]] = {}
        self._nodeclaims_by_provider_id: dict[str, set[str]] = {}
        # Node names by their hostname label: KWOK looks for a NodeClaim's instance with a
        # hostname selector at every launch, a scan of every Node without it (the largest
        # part of a 5,000-node scale-out's launches)
        self._nodes_by_hostname: dict[str, set[str]] = {}
        self._by_uid: dict[str, tuple[ResourceType, str, str]] = {}
        self._history: deque[tuple[int, ResourceType, str, Obj, Obj | None]] = deque(
            maxlen=watch_history
        )
        self._watchers: dict[tuple[str, str], list[MemoryWatch]] = {}
        # the budgets' parsed selectors, for evictions: (namespace, name) -> (spec, selector)
        self._pdb_selectors: dict[tuple[str, str], tuple[Any, LabelSelector]] = {}
        self._controller_manager: KubeControllerManager | None = None
        if kube_controller_manager:
            self.attach_controller_manager()
        for ns in namespaces:
            self.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        self._oldest_rv = self._rv

    def attach_controller_manager(self) -> KubeControllerManager:
        """Run the kube-controller-manager loops on this server's writes from now on (see
        :func:`karpenter_core.sim.controllermanager.register`)."""
        with self._lock:
            if self._controller_manager is not None:
                raise ValueError("this server already runs the kube-controller-manager loops")
            manager = KubeControllerManager(_Store(self))
            self._controller_manager = manager
            manager.sync(
                (self._rt(key), obj)
                for key in list(self._objects)
                for objs in list(self._objects[key].values())
                for obj in list(objs.values())
            )
            return manager

    @property
    def controller_manager(self) -> KubeControllerManager | None:
        """The kube-controller-manager loops running on this server's writes, if any."""
        return self._controller_manager

    # ------------------------------------------------------------------ reading

    @property
    def resource_version(self) -> str:
        """The current cluster-wide resourceVersion."""
        with self._lock:
            return str(self._rv)

    def get(self, resource: ResourceLike, name: str, namespace: str | None = None) -> Obj:
        rt = self._rt(resource)
        with self._lock:
            ns = self._need_namespace(rt, namespace)
            obj = self._objects.get(rt.key, {}).get(ns, {}).get(name)
            if obj is None:
                raise NotFound(f'{_resource_name(rt)} "{name}" not found')
            return self._encoded.copy(obj)

    def get_shared(self, resource: ResourceLike, name: str, namespace: str | None = None) -> Obj:
        """:meth:`get` without a copy: the stored object, which the caller must not change
        (the contract of :meth:`CachedClient.get_shared
        <karpenter_core.kube.cache.CachedClient.get_shared>`; stored objects are replaced on
        every write, never edited in place)."""
        rt = self._rt(resource)
        with self._lock:
            ns = self._need_namespace(rt, namespace)
            obj = self._objects.get(rt.key, {}).get(ns, {}).get(name)
            if obj is None:
                raise NotFound(f'{_resource_name(rt)} "{name}" not found')
            return obj

    def list(
        self,
        resource: ResourceLike,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> ObjectList:
        return self._list(resource, namespace, label_selector, field_selector, copy=True)

    def list_shared(
        self,
        resource: ResourceLike,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> ObjectList:
        """:meth:`list` without copies (see :meth:`get_shared`): the controllers that scan a
        kind for a few matches copy only those, as they do on the operator's caches."""
        return self._list(resource, namespace, label_selector, field_selector, copy=False)

    def _list(
        self,
        resource: ResourceLike,
        namespace: str | None,
        label_selector: str | None,
        field_selector: str | None,
        *,
        copy: bool,
    ) -> ObjectList:
        rt = self._rt(resource)
        labels, fields = self._selectors(rt, label_selector, field_selector)
        with self._lock:
            ns = self._read_namespace(rt, namespace)
            items = self._select(rt, ns, labels, fields)
            if copy:
                items = [self._encoded.copy(o) for o in items]
            return ObjectList(items=items, resource_version=str(self._rv))

    def _select(
        self, rt: ResourceType, ns: str | None, labels: LabelSelector, fields: FieldSelector
    ) -> builtins.list[Obj]:
        by_ns = self._objects.get(rt.key, {})
        node = fields.exact("spec.nodeName") if rt.key == _POD else None
        candidates: builtins.list[tuple[str, Obj]] = []
        if node is not None:
            for pns, pname in self._pods_by_node.get(node, ()):
                if ns is None or pns == ns:
                    candidates.append((f"{pns}/{pname}", by_ns[pns][pname]))
        elif rt.key == _NODE and (hostname := _exact_label(labels, LABEL_HOSTNAME)) is not None:
            objs = by_ns.get("", {})
            names = self._nodes_by_hostname.get(hostname, ())
            candidates = [(f"/{n}", objs[n]) for n in names]
        elif ns is not None:
            candidates = [(f"{ns}/{n}", o) for n, o in by_ns.get(ns, {}).items()]
        else:
            candidates = [(f"{k}/{n}", o) for k, objs in by_ns.items() for n, o in objs.items()]
        candidates.sort(key=lambda kv: kv[0])
        out: builtins.list[Obj] = []
        for _, obj in candidates:
            if not labels.empty and not labels.matches(labels_of(obj)):
                continue
            if not fields.empty:
                values = {f: self._field(rt, obj, f) for f in fields.fields()}
                if not fields.matches(values):
                    continue
            out.append(obj)
        return out

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
    ) -> MemoryWatch:
        """Open a watch.

        No resourceVersion (or "0"): synthetic ADDED events for what exists, then changes.
        A resourceVersion: every change after it, or :class:`Gone` if the history no longer
        reaches back that far. ``send_initial_events`` (with bookmarks) ends the initial
        ADDED burst with a BOOKMARK annotated ``k8s.io/initial-events-end``.
        """
        rt = self._rt(resource)
        labels, fields = self._selectors(rt, label_selector, field_selector)
        if send_initial_events and not allow_watch_bookmarks:
            raise Invalid("sendInitialEvents requires allowWatchBookmarks=true")
        with self._lock:
            ns = self._read_namespace(rt, namespace)
            watcher = MemoryWatch(
                self, rt, ns, labels, fields, allow_watch_bookmarks, timeout_seconds
            )
            rv = resource_version or ""
            if rv in ("", "0") or send_initial_events:
                if rv not in ("", "0"):
                    self._check_rv(rv)
                for obj in self._select(rt, ns, labels, fields):
                    watcher.push(WatchEvent(ADDED, obj))
                if send_initial_events:
                    bookmark = self._bookmark(rt)
                    bookmark["metadata"]["annotations"] = {INITIAL_EVENTS_END_ANNOTATION: "true"}
                    watcher.push(WatchEvent(BOOKMARK, bookmark))
            else:
                since = self._check_rv(rv)
                for ev_rv, ev_rt, etype, obj, old in self._history:
                    if ev_rv > since and ev_rt.key == rt.key:
                        translated = watcher.translate(etype, obj, old)
                        if translated is not None:
                            watcher.push(translated)
            self._watchers.setdefault(rt.key, []).append(watcher)
            return watcher

    def _check_rv(self, rv: str) -> int:
        try:
            since = int(rv)
        except ValueError:
            raise BadRequest(f"resourceVersion {rv!r} is not valid") from None
        if since < self._oldest_rv:
            raise Gone(f"too old resource version: {since} ({self._oldest_rv})")
        return since

    def _bookmark(self, rt: ResourceType) -> Obj:
        return {
            "apiVersion": rt.api_version,
            "kind": rt.kind,
            "metadata": {"resourceVersion": str(self._rv)},
        }

    def send_bookmarks(self) -> None:
        """Send a BOOKMARK at the current resourceVersion to every watch that asked for them
        (a real server does this about once a minute)."""
        with self._lock:
            for watchers in self._watchers.values():
                for w in watchers:
                    if w.bookmarks:
                        w.push(WatchEvent(BOOKMARK, self._bookmark(w.rt)))

    def _forget_watcher(self, watcher: MemoryWatch) -> None:
        with self._lock:
            watchers = self._watchers.get(watcher.rt.key, [])
            if watcher in watchers:
                watchers.remove(watcher)

    # ------------------------------------------------------------------ writing

    def create(self, obj: Mapping[str, Any], namespace: str | None = None) -> Obj:
        return self._create(obj, namespace, restore=False)

    def create_shared(self, obj: Mapping[str, Any], namespace: str | None = None) -> Obj:
        """:meth:`create` returning the stored object without a copy (see
        :meth:`get_shared`), for writers that only read what they made: the simulated
        ReplicaSets create 150,000 pods in a large scenario and read back only each name."""
        return self._create(obj, namespace, restore=False, shared=True)

    def restore(self, obj: Mapping[str, Any]) -> Obj:
        """Create ``obj`` as a backup restore does: its ``uid``, ``creationTimestamp`` and
        ``status`` are kept as given (a new object gets fresh ones from :meth:`create`),
        so owner references between restored objects still resolve and ages measured
        from creation stay right. A simulation starting from a snapshot of a cluster
        seeds its objects this way; ``resourceVersion`` and a deletion in progress are
        not restored."""
        return self._create(obj, None, restore=True)

    def _create(
        self, obj: Mapping[str, Any], namespace: str | None, *, restore: bool, shared: bool = False
    ) -> Obj:
        rt = self._rt_of(obj)
        new = deep_copy(obj)
        meta = self._metadata(new)
        if restore:
            kept = {k: meta[k] for k in ("uid", "creationTimestamp") if meta.get(k)}
            status = new.get("status")
            for key in ("resourceVersion", "managedFields", "selfLink", "generation"):
                meta.pop(key, None)
        with self._lock:
            ns = self._write_namespace(rt, meta.get("namespace"), namespace)
            if meta.get("resourceVersion"):
                raise BadRequest("resourceVersion should not be set on objects to be created")
            name = meta.get("name")
            if not name:
                prefix = meta.get("generateName")
                if not prefix:
                    raise Invalid("metadata.name: Required value: name or generateName is required")
                name = self._generate_name(rt, ns, str(prefix))
            self._validate_name(rt, str(name))
            if rt.namespaced:
                namespace_obj = self._objects.get(_NAMESPACE, {}).get("", {}).get(ns)
                if namespace_obj is None:
                    raise NotFound(f'namespaces "{ns}" not found')
                if meta_of(namespace_obj).get("deletionTimestamp"):
                    raise Forbidden(
                        f"unable to create new content in namespace {ns} because it is being terminated"
                    )
            if name in self._objects.get(rt.key, {}).get(ns, {}):
                raise AlreadyExists(f'{_resource_name(rt)} "{name}" already exists')
            meta["name"] = name
            if rt.namespaced:
                meta["namespace"] = ns
            else:
                meta.pop("namespace", None)
            meta["uid"] = str(uuid.UUID(int=self._rng.getrandbits(128), version=4))
            meta["creationTimestamp"] = format_time(self._clock.now())
            for key in ("deletionTimestamp", "deletionGracePeriodSeconds"):
                meta.pop(key, None)
            if rt.tracks_generation:
                meta["generation"] = 1
            else:
                meta.pop("generation", None)
            new["apiVersion"] = rt.api_version
            new["kind"] = rt.kind
            self._prepare_create(rt, new)
            if restore:
                if kept.get("uid") in self._by_uid:
                    del kept["uid"]  # two objects cannot share one: the copy gets its own
                meta.update(kept)
                if isinstance(status, dict):
                    new["status"] = status
            self._validate(rt, new, None)
            self._commit(rt, ADDED, new, None)
            return new if shared else self._encoded.copy(new)

    def update(self, obj: Mapping[str, Any]) -> Obj:
        """Replace an object; ``status`` is ignored for kinds with a status subresource."""
        rt = self._rt_of(obj)
        with self._lock:
            return self._update(rt, deep_copy(obj), status=False)

    def update_status(self, obj: Mapping[str, Any]) -> Obj:
        """Write ``status`` through the status subresource; every other change is ignored."""
        rt = self._rt_of(obj)
        with self._lock:
            # only the metadata (name, preconditions) and status are read: copy just those
            parts = {k: obj[k] for k in ("metadata", "status") if k in obj}
            return self._update(rt, deep_copy(parts), status=True)

    def patch(
        self,
        resource: ResourceLike,
        name: str,
        patch: Any,
        namespace: str | None = None,
        *,
        patch_type: str = MERGE_PATCH,
        subresource: str | None = None,
    ) -> Obj:
        """Merge patch (RFC 7386) or JSON patch (RFC 6902); a resourceVersion in a merge patch
        is a precondition, as on a real server. Subresources: ``status`` (kinds that have
        one) and a CertificateSigningRequest's ``approval``, which, as on a real server,
        writes only ``status.conditions``."""
        return self._patch(resource, name, patch, namespace, patch_type, subresource, False)

    def patch_shared(
        self,
        resource: ResourceLike,
        name: str,
        patch: Any,
        namespace: str | None = None,
        *,
        patch_type: str = MERGE_PATCH,
        subresource: str | None = None,
    ) -> Obj:
        """:meth:`patch` returning the stored result without a copy (see
        :meth:`get_shared`), for writers that do not read what they wrote: the simulated
        kubelet's status patches, one or more per pod, where decoding a copy nobody reads
        was a thirtieth of a scale-out."""
        return self._patch(resource, name, patch, namespace, patch_type, subresource, True)

    def _patch(
        self,
        resource: ResourceLike,
        name: str,
        patch: Any,
        namespace: str | None,
        patch_type: str,
        subresource: str | None,
        shared: bool,
    ) -> Obj:
        rt = self._rt(resource)
        approval = subresource == "approval" and rt.kind == "CertificateSigningRequest"
        if subresource not in (None, "status") and not approval:
            raise NotFound(f"{_resource_name(rt)}: no subresource {subresource!r}")
        with self._lock:
            ns = self._need_namespace(rt, namespace)
            old = self._objects.get(rt.key, {}).get(ns, {}).get(name)
            if old is None:
                raise NotFound(f'{_resource_name(rt)} "{name}" not found')
            if patch_type == MERGE_PATCH:
                if not isinstance(patch, Mapping):
                    raise BadRequest("merge patch must be a JSON object")
                if subresource == "status":
                    # the status subresource takes only the status (and metadata's
                    # preconditions) from the result: patch just those. The merge makes
                    # new containers along the patched paths and shares the rest with
                    # the stored version, never changed in place; copying both first was
                    # a twenty-fifth of a simulated scale-out (the kubelet's patches)
                    parts = {k: old[k] for k in ("metadata", "status") if k in old}
                    wanted = {k: patch[k] for k in ("metadata", "status") if k in patch}
                    candidate = apply_merge_patch(parts, wanted)
                    if isinstance(candidate.get("metadata"), dict):
                        candidate["metadata"] = dict(candidate["metadata"])  # written below
                else:
                    candidate = apply_merge_patch(deep_copy(old), patch)
            elif patch_type == JSON_PATCH:
                candidate = apply_json_patch(old, patch)
            else:
                raise BadRequest(f"unsupported patch type {patch_type!r}: use 'merge' or 'json'")
            if not isinstance(candidate, dict):
                raise Invalid("patch result is not an object")
            cmeta = self._metadata(candidate)
            cmeta["name"] = name
            if rt.namespaced:
                cmeta["namespace"] = ns
            candidate["apiVersion"] = rt.api_version
            candidate["kind"] = rt.kind
            if not cmeta.get("resourceVersion"):
                cmeta["resourceVersion"] = meta_of(old).get("resourceVersion")
            if approval:
                approved = deep_copy(old)
                approved["metadata"]["resourceVersion"] = cmeta["resourceVersion"]
                conditions = (candidate.get("status") or {}).get("conditions")
                approved.setdefault("status", {})["conditions"] = conditions or []
                return self._update(rt, approved, status=True, shared=shared)
            return self._update(rt, candidate, status=subresource == "status", shared=shared)

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
        """Delete an object.

        With finalizers (or a graceful pod delete) the object is only marked with a
        deletionTimestamp and returned; otherwise it is removed and None is returned.
        Dependents (by ownerReference) are then handled by the garbage collector of
        :mod:`~karpenter_core.sim.controllermanager`, synchronously: deleted
        (Background/Foreground) or released (Orphan).
        """
        rt = self._rt(resource)
        if propagation_policy not in (None, "Background", "Foreground", "Orphan"):
            raise BadRequest(
                f"propagationPolicy {propagation_policy!r} is not one of Background, Foreground, Orphan"
            )
        if grace_period_seconds is not None and grace_period_seconds < 0:
            raise Invalid("gracePeriodSeconds: must be non-negative")
        with self._lock:
            ns = self._need_namespace(rt, namespace)
            old = self._objects.get(rt.key, {}).get(ns, {}).get(name)
            if old is None:
                raise NotFound(f'{_resource_name(rt)} "{name}" not found')
            meta = meta_of(old)
            for key, have in (
                ("uid", meta.get("uid")),
                ("resourceVersion", meta.get("resourceVersion")),
            ):
                want = (preconditions or {}).get(key)
                if want is not None and want != have:
                    raise Conflict(
                        f"Precondition failed: {key} in precondition: {want}, {key} in object meta: {have}"
                    )
            return self._delete(rt, old, propagation_policy or "Background", grace_period_seconds)

    def _delete(
        self, rt: ResourceType, old: Obj, policy: str, grace_period_seconds: int | None
    ) -> Obj | None:
        meta = meta_of(old)
        grace = 0
        if rt.key == _POD:
            spec = old.get("spec") or {}
            phase = (old.get("status") or {}).get("phase")
            grace = (
                grace_period_seconds
                if grace_period_seconds is not None
                else int(spec.get("terminationGracePeriodSeconds", 30))
            )
            if not spec.get("nodeName") or phase in ("Succeeded", "Failed"):
                grace = 0
        if rt.key == _NAMESPACE:
            return self._delete_namespace(old)
        manager = self._controller_manager
        finalizers = meta.get("finalizers") or []
        if meta.get("deletionTimestamp"):
            # Already terminating: only a pod's grace period can be shortened to "now".
            if rt.key == _POD and grace == 0 and not finalizers:
                self._remove(rt, old, policy)
                return None
            return self._encoded.copy(old)
        if not finalizers and grace == 0:
            if policy == "Foreground" and manager is not None:
                # Dependents go first; the owner follows once they are gone.
                manager.owner_deleting(str(meta.get("uid", "")), policy)
                old = (
                    self._objects.get(rt.key, {})
                    .get(self._ns_of(rt, old), {})
                    .get(meta["name"], old)
                )
            self._remove(rt, old, policy)
            return None
        new = deep_copy(old)
        nmeta = new["metadata"]
        # A graceful delete stamps the moment the object is due to go, not "now".
        nmeta["deletionTimestamp"] = format_time(self._clock.now() + timedelta(seconds=grace))
        nmeta["deletionGracePeriodSeconds"] = grace
        if rt.tracks_generation and nmeta.get("generation"):
            nmeta["generation"] = int(nmeta["generation"]) + 1
        self._commit(rt, MODIFIED, new, old)
        return self._encoded.copy(new)

    def _delete_namespace(self, ns_obj: Obj) -> Obj | None:
        """Mark the namespace Terminating; the namespace controller then deletes its
        contents and removes it once nothing in it is left (objects with finalizers keep
        it)."""
        name = meta_of(ns_obj)["name"]
        if not meta_of(ns_obj).get("deletionTimestamp"):
            new = deep_copy(ns_obj)
            new["metadata"]["deletionTimestamp"] = format_time(self._clock.now())
            new["metadata"]["deletionGracePeriodSeconds"] = 0
            new.setdefault("status", {})["phase"] = "Terminating"
            self._commit(self._rt(_NAMESPACE), MODIFIED, new, ns_obj)
        if self._controller_manager is not None:
            self._controller_manager.namespace_terminating(name)
        current = self._objects.get(_NAMESPACE, {}).get("", {}).get(name)
        return self._encoded.copy(current) if current is not None else None

    def evict(self, name: str, namespace: str, *, grace_period_seconds: int | None = None) -> None:
        """Evict a pod, honouring the (single) PodDisruptionBudget that selects it.

        As the eviction subresource does: Pending, finished or already terminating pods skip
        budgets; a budget's empty selector selects every pod in its namespace (policy/v1; a
        missing selector selects none); two budgets are a 500. An
        unready pod goes without spending the budget under ``unhealthyPodEvictionPolicy:
        AlwaysAllow``, or when the budget is currently met (and wants at least one healthy
        pod). Everything else needs ``disruptionsAllowed > 0``, else 429 TooManyRequests.
        """
        rt = self._rt(_POD)
        with self._lock:
            pod = self._objects.get(_POD, {}).get(namespace, {}).get(name)
            if pod is None:
                raise NotFound(f'pods "{name}" not found')
            phase = (pod.get("status") or {}).get("phase")
            if phase in ("Pending", "Succeeded", "Failed") or meta_of(pod).get("deletionTimestamp"):
                self._delete(rt, pod, "Background", grace_period_seconds)
                return
            labels = labels_of(pod)
            budgets = self._objects.get(_PDB, {}).get(namespace, {})
            pdbs = [
                budgets[pdb_name]
                for pdb_name in sorted(budgets)
                if self._pdb_selector(namespace, budgets[pdb_name]).matches(labels)
            ]
            if len(pdbs) > 1:
                raise InternalError(
                    "This pod has more than one PodDisruptionBudget, which the eviction subresource "
                    "does not support."
                )
            if pdbs:
                self._check_budget(pod, pdbs[0])
            self._delete(rt, pod, "Background", grace_period_seconds)

    def _pdb_selector(self, namespace: str, pdb: Obj) -> LabelSelector:
        """The budget's selector, parsed once per spec."""
        key = (namespace, meta_of(pdb)["name"])
        raw = (pdb.get("spec") or {}).get("selector")
        cached = self._pdb_selectors.get(key)
        if cached is not None and cached[0] == raw:
            return cached[1]
        selector = pdb_selector(pdb)
        self._pdb_selectors[key] = (deep_copy(raw), selector)
        return selector

    def _check_budget(self, pod: Obj, pdb: Obj) -> None:
        status = pdb.get("status") or {}
        healthy = int(status.get("currentHealthy", 0))
        desired = int(status.get("desiredHealthy", 0))
        if not pod_ready(pod):
            policy = (pdb.get("spec") or {}).get("unhealthyPodEvictionPolicy")
            if policy == "AlwaysAllow" or (healthy >= desired and desired > 0):
                return
        if int(status.get("disruptionsAllowed", 0)) <= 0:
            raise TooManyRequests(
                "Cannot evict pod as it would violate the pod's disruption budget. The disruption "
                f"budget {meta_of(pdb)['name']} needs {desired} healthy pods and has {healthy} currently"
            )

    def bind(self, name: str, namespace: str, node_name: str) -> None:
        """Bind a pod to a node: sets ``spec.nodeName`` and the PodScheduled condition."""
        if not node_name:
            raise Invalid("target.name: Required value")
        rt = self._rt(_POD)
        with self._lock:
            pod = self._objects.get(_POD, {}).get(namespace, {}).get(name)
            if pod is None:
                raise NotFound(f'pods "{name}" not found')
            if meta_of(pod).get("deletionTimestamp"):
                raise Conflict(f"pod {name} is being deleted, cannot be assigned to a host")
            current = (pod.get("spec") or {}).get("nodeName")
            if current:
                raise Conflict(f'pod {name} is already assigned to node "{current}"')
            if (pod.get("spec") or {}).get("schedulingGates"):
                raise Conflict(f"pod {name} has non-empty .spec.schedulingGates")
            # the bound version shares all but the parts it changes with the unbound one
            # (stored versions are never changed in place): copying the whole pod was a
            # twentieth of a simulated scale-out
            new = dict(pod)
            new["metadata"] = dict(pod["metadata"])
            new["spec"] = {**(pod.get("spec") or {}), "nodeName": node_name}
            new["status"] = dict(pod.get("status") or {})
            conditions = [
                c
                for c in new["status"].get("conditions") or []
                if not (isinstance(c, Mapping) and c.get("type") == "PodScheduled")
            ]
            conditions.append(
                {
                    "type": "PodScheduled",
                    "status": "True",
                    "lastProbeTime": None,
                    "lastTransitionTime": format_time(self._clock.now()),
                }
            )
            new["status"]["conditions"] = conditions
            self._commit(rt, MODIFIED, new, pod)

    # ------------------------------------------------------------------ internals

    def _rt(self, resource: ResourceLike) -> ResourceType:
        try:
            return resource_for(resource)
        except UnknownResourceError as e:
            raise NotFound(f"the server could not find the requested resource: {e}") from None

    def _rt_of(self, obj: Any) -> ResourceType:
        if not isinstance(obj, Mapping):
            raise BadRequest(f"an object must be a mapping, got {type(obj).__name__}")
        try:
            return resource_of(obj)
        except UnknownResourceError as e:
            raise NotFound(f"the server could not find the requested resource: {e}") from None

    def _metadata(self, obj: dict[str, Any]) -> dict[str, Any]:
        meta = obj.setdefault("metadata", {})
        if not isinstance(meta, dict):
            raise BadRequest("metadata must be an object")
        return meta

    def _selectors(
        self, rt: ResourceType, label_selector: str | None, field_selector: str | None
    ) -> tuple[LabelSelector, FieldSelector]:
        try:
            labels = parse_label_selector(label_selector)
            fields = parse_field_selector(field_selector)
        except SelectorError as e:
            raise BadRequest(str(e)) from None
        for name in fields.fields():
            if not rt.supports_field(name):
                raise BadRequest(f"field label not supported: {name} (for {_resource_name(rt)})")
        return labels, fields

    def _field(self, rt: ResourceType, obj: Mapping[str, Any], name: str) -> str:
        return field_value(obj, name)

    def _read_namespace(self, rt: ResourceType, namespace: str | None) -> str | None:
        if not rt.namespaced:
            return ""
        return namespace

    def _ns_of(self, rt: ResourceType, obj: Mapping[str, Any]) -> str:
        return namespace_of(obj) if rt.namespaced else ""

    def _need_namespace(self, rt: ResourceType, namespace: str | None) -> str:
        if not rt.namespaced:
            return ""
        if not namespace:
            raise BadRequest(f"{_resource_name(rt)} are namespaced: a namespace is required")
        return namespace

    def _write_namespace(self, rt: ResourceType, in_obj: Any, argument: str | None) -> str:
        if not rt.namespaced:
            return ""
        if in_obj and argument and in_obj != argument:
            raise BadRequest(
                "the namespace of the provided object does not match the namespace sent on the request"
            )
        return str(in_obj or argument or "default")

    def _generate_name(self, rt: ResourceType, ns: str, prefix: str) -> str:
        base = prefix[:58]
        existing = self._objects.get(rt.key, {}).get(ns, {})
        for _ in range(100):
            name = base + "".join(self._rng.choice(_GENERATE_ALPHABET) for _ in range(5))
            if name not in existing:
                return name
        raise AlreadyExists(f"could not generate a unique name from prefix {prefix!r}")

    def _validate_name(self, rt: ResourceType, name: str) -> None:
        if rt.key == _NAMESPACE:
            if len(name) > 63 or not _DNS_LABEL.match(name):
                raise Invalid(
                    f'metadata.name: Invalid value: "{name}": a lowercase RFC 1123 label must consist '
                    "of lower case alphanumeric characters or '-', and must start and end with an "
                    "alphanumeric character"
                )
        elif len(name) > 253 or not _DNS_SUBDOMAIN.match(name):
            raise Invalid(
                f'metadata.name: Invalid value: "{name}": a lowercase RFC 1123 subdomain must consist '
                "of lower case alphanumeric characters, '-' or '.', and must start and end with an "
                "alphanumeric character"
            )

    def _prepare_create(self, rt: ResourceType, obj: Obj) -> None:
        """Server-side defaults a client observes on the object it created."""
        if rt.key == _NODE:
            return  # nodes may set their status on create
        if rt.key == _NAMESPACE:
            obj["status"] = {"phase": "Active"}
            obj.setdefault("spec", {}).setdefault("finalizers", ["kubernetes"])
            obj["metadata"].setdefault("labels", {})["kubernetes.io/metadata.name"] = obj[
                "metadata"
            ]["name"]
            return
        if rt.key == _POD:
            spec = obj.setdefault("spec", {})
            if isinstance(spec, dict):
                spec.setdefault("restartPolicy", "Always")
                spec.setdefault("terminationGracePeriodSeconds", 30)
                spec.setdefault("dnsPolicy", "ClusterFirst")
                spec.setdefault("schedulerName", "default-scheduler")
                spec.setdefault("priority", 0)
            obj["status"] = {"phase": "Pending", "qosClass": _qos_class(obj)}
            return
        if rt.status_subresource:
            obj.pop("status", None)

    def _validate(self, rt: ResourceType, obj: Obj, old: Obj | None) -> None:
        meta = obj["metadata"]
        labels = meta.get("labels")
        if labels is not None and not isinstance(labels, dict):
            raise Invalid("metadata.labels: must be a map of strings")
        finalizers = meta.get("finalizers")
        if finalizers is not None and not (
            isinstance(finalizers, list) and all(isinstance(f, str) for f in finalizers)
        ):
            raise Invalid("metadata.finalizers: must be a list of strings")
        if rt.key == _POD:
            spec = obj.get("spec")
            containers = spec.get("containers") if isinstance(spec, dict) else None
            if not isinstance(containers, list) or not containers:
                raise Invalid("spec.containers: Required value")
            for i, c in enumerate(containers):
                if not isinstance(c, dict) or not c.get("name"):
                    raise Invalid(f"spec.containers[{i}].name: Required value")
                if not c.get("image"):
                    raise Invalid(f"spec.containers[{i}].image: Required value")
            if old is not None:
                self._validate_pod_update(obj, old)
        if rt.key == _PDB:
            spec = obj.get("spec") or {}
            if spec.get("minAvailable") is not None and spec.get("maxUnavailable") is not None:
                raise Invalid(
                    "spec: Invalid value: minAvailable and maxUnavailable cannot be both set"
                )
            selector = spec.get("selector")
            try:
                label_selector_from_dict(selector) if selector is not None else None
            except SelectorError as e:
                raise Invalid(f"spec.selector: {e}") from None
        if rt.key in _DRA_IMMUTABLE_SPEC and old is not None and obj.get("spec") != old.get("spec"):
            raise Invalid("spec: Invalid value: field is immutable")
        if rt.key == _RESOURCE_SLICE:
            _validate_resource_slice(obj, old)
        if rt.api_version == "events.k8s.io/v1" and obj.get("type") not in ("Normal", "Warning"):
            raise Invalid(
                f'type: Unsupported value: {obj.get("type")!r}: supported values: "Normal", "Warning"'
            )

    def _validate_pod_update(self, new: Obj, old: Obj) -> None:
        """Pod specs are immutable but for images, activeDeadlineSeconds, tolerations
        (additions) and schedulingGates (removals)."""

        def mutable_stripped(spec: Mapping[str, Any]) -> dict[str, Any]:
            out = {
                k: v
                for k, v in spec.items()
                if k not in ("activeDeadlineSeconds", "tolerations", "schedulingGates")
            }
            for key in ("containers", "initContainers", "ephemeralContainers"):
                if isinstance(out.get(key), list):
                    out[key] = [
                        {k: v for k, v in c.items() if k != "image"}
                        if isinstance(c, Mapping)
                        else c
                        for c in out[key]
                    ]
            return out

        if mutable_stripped(new.get("spec") or {}) != mutable_stripped(old.get("spec") or {}):
            raise Invalid(
                "spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`, "
                "`spec.initContainers[*].image`, `spec.activeDeadlineSeconds`, `spec.tolerations` "
                "(only additions to existing tolerations), `spec.schedulingGates` (only removals)"
            )

    def _update(self, rt: ResourceType, new: Obj, *, status: bool, shared: bool = False) -> Obj:
        if status and not rt.status_subresource:
            raise NotFound(f"{_resource_name(rt)} has no status subresource")
        meta = self._metadata(new)
        name = meta.get("name")
        if not name:
            raise Invalid("metadata.name: Required value: name is required for an update")
        ns = self._write_namespace(rt, meta.get("namespace"), None)
        old = self._objects.get(rt.key, {}).get(ns, {}).get(name)
        if old is None:
            raise NotFound(f'{_resource_name(rt)} "{name}" not found')
        ometa = meta_of(old)
        rv = meta.get("resourceVersion")
        if rv:
            if str(rv) != ometa.get("resourceVersion"):
                raise Conflict(
                    f'Operation cannot be fulfilled on {_resource_name(rt)} "{name}": the object has been '
                    "modified; please apply your changes to the latest version and try again"
                )
        elif not rt.unconditional_update:
            raise Invalid(
                "metadata.resourceVersion: Invalid value: 0x0: must be specified for an update"
            )
        if meta.get("uid") and meta.get("uid") != ometa.get("uid"):
            raise Conflict(
                f"Precondition failed: UID in precondition: {meta.get('uid')}, UID in object meta: {ometa.get('uid')}"
            )
        if status:
            # the new version shares all but its metadata and status with the old one:
            # stored versions are never changed in place (VERIFY_ENV checks it)
            result = dict(old)
            result["metadata"] = dict(old["metadata"])
            if "status" in new:
                result["status"] = new["status"]
            else:
                result.pop("status", None)
            if rt.key == _RESOURCE_CLAIM:
                _validate_claim_status(result, old)
        else:
            result = new
            result["apiVersion"] = rt.api_version
            result["kind"] = rt.kind
            if rt.status_subresource:
                if "status" in old:
                    result["status"] = deep_copy(old["status"])
                else:
                    result.pop("status", None)
            rmeta = result["metadata"]
            for key in (
                "uid",
                "creationTimestamp",
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
                "generation",
            ):
                if key in ometa:
                    rmeta[key] = ometa[key]
                else:
                    rmeta.pop(key, None)
            if rt.namespaced:
                rmeta["namespace"] = ns
            else:
                rmeta.pop("namespace", None)
            if ometa.get("deletionTimestamp"):
                added = set(rmeta.get("finalizers") or []) - set(ometa.get("finalizers") or [])
                if added:
                    raise Invalid(
                        "metadata.finalizers: Forbidden: no new finalizers can be added if the object "
                        "is being deleted, found new finalizers " + str(sorted(added))
                    )
            self._validate(rt, result, old)
        result["metadata"]["resourceVersion"] = ometa.get("resourceVersion")
        if (
            rt.tracks_generation
            and ometa.get("generation")
            and _spec_part(result) != _spec_part(old)
        ):
            result["metadata"]["generation"] = int(ometa["generation"]) + 1
        out = (lambda obj: obj) if shared else self._encoded.copy
        if result == old:
            return out(old)  # a no-op write does not bump the resourceVersion
        if ometa.get("deletionTimestamp") and not result["metadata"].get("finalizers"):
            if rt.key == _POD and int(ometa.get("deletionGracePeriodSeconds") or 0) > 0:
                self._commit(rt, MODIFIED, result, old)  # the kubelet still has to finish
                return out(result)
            self._remove(rt, result, "Background", old=old)
            return out(self._last_removed)
        self._commit(rt, MODIFIED, result, old)
        return out(result)

    def _remove(self, rt: ResourceType, obj: Obj, policy: str, *, old: Obj | None = None) -> None:
        # the final version shares all but its metadata (which gets the new
        # resourceVersion) with the last one: no version is ever changed in place, and
        # deep-copying each deleted pod was 8 % of a large scale-in's first minutes
        final = dict(obj)
        final["metadata"] = dict(obj["metadata"])
        self._commit(rt, DELETED, final, old if old is not None else obj)
        self._last_removed = final
        if self._controller_manager is not None:
            self._controller_manager.removed(rt, final, policy)

    def _commit(self, rt: ResourceType, etype: str, obj: Obj, old: Obj | None) -> None:
        """Store a change under a new resourceVersion, keep indexes, tell watchers."""
        self._rv += 1
        meta = obj["metadata"]
        meta["resourceVersion"] = str(self._rv)
        ns = meta.get("namespace", "") if rt.namespaced else ""
        name = meta["name"]
        store = self._objects.setdefault(rt.key, {})
        uid = str(meta.get("uid", ""))
        self._encoded.forget(store.get(ns, {}).get(name))
        if etype != DELETED:
            self._encoded.put(obj)
        if etype == DELETED:
            objs = store.get(ns, {})
            objs.pop(name, None)
            if not objs:
                store.pop(ns, None)
            self._by_uid.pop(uid, None)
        else:
            store.setdefault(ns, {})[name] = obj
            self._by_uid[uid] = (rt, ns, name)
        if rt.key == _POD:
            self._index_pod(
                ns, name, old if etype != ADDED else None, obj if etype != DELETED else None
            )
        elif rt.key == _NODE:
            self._index_node(
                name, old if etype != ADDED else None, obj if etype != DELETED else None
            )
        elif rt.key == _NODECLAIM:
            self._index_nodeclaim(
                name, old if etype != ADDED else None, obj if etype != DELETED else None
            )
        if len(self._history) == self._history.maxlen:
            self._oldest_rv = self._history[0][0]
        self._history.append((self._rv, rt, etype, obj, old))
        for watcher in self._watchers.get(rt.key, ()):
            event = watcher.translate(etype, obj, old)
            if event is not None:
                watcher.push(event)
        if rt.key == _PDB and etype == DELETED:
            self._pdb_selectors.pop((ns, name), None)
        if self._controller_manager is not None:
            self._controller_manager.committed(rt, etype, obj, old)

    def _index_pod(self, ns: str, name: str, old: Obj | None, new: Obj | None) -> None:
        before = ((old or {}).get("spec") or {}).get("nodeName") or ""
        after = ((new or {}).get("spec") or {}).get("nodeName") or ""
        if old is not None and (new is None or before != after):
            bucket = self._pods_by_node.get(before)
            if bucket is not None:
                bucket.discard((ns, name))
                if not bucket:
                    del self._pods_by_node[before]
        if new is not None:
            self._pods_by_node.setdefault(after, set()).add((ns, name))

    def _index_node(self, name: str, old: Obj | None, new: Obj | None) -> None:
        before = labels_of(old).get(LABEL_HOSTNAME) if old is not None else None
        after = labels_of(new).get(LABEL_HOSTNAME) if new is not None else None
        if before == after and (old is None) == (new is None):
            return
        if before is not None:
            bucket = self._nodes_by_hostname.get(before)
            if bucket is not None:
                bucket.discard(name)
                if not bucket:
                    del self._nodes_by_hostname[before]
        if after is not None:
            self._nodes_by_hostname.setdefault(after, set()).add(name)

    def _index_nodeclaim(self, name: str, old: Obj | None, new: Obj | None) -> None:
        before = nodeclaim_provider_id(old) if old is not None else []
        after = nodeclaim_provider_id(new) if new is not None else []
        if before == after:
            return
        for value in before:
            bucket = self._nodeclaims_by_provider_id.get(value)
            if bucket is not None:
                bucket.discard(name)
                if not bucket:
                    del self._nodeclaims_by_provider_id[value]
        for value in after:
            self._nodeclaims_by_provider_id.setdefault(value, set()).add(name)

    def indexed_shared(
        self, resource: ResourceLike, index: str, value: str
    ) -> builtins.list[Obj] | None:
        """The stored objects whose ``index`` holds ``value``, uncopied (see
        :meth:`get_shared`), as the operator's informer indexes answer
        (:meth:`karpenter_core.kube.cache.CachedClient.indexed_shared`); None for an index
        this server does not keep."""
        rt = self._rt(resource)
        with self._lock:
            by_ns = self._objects.get(rt.key, {})
            if rt.key == _POD and index == POD_NODE_NAME_INDEX:
                keys = sorted(self._pods_by_node.get(value, ()))
                return [by_ns[ns][name] for ns, name in keys]
            if rt.key == _NODECLAIM and index == NODECLAIM_PROVIDER_ID_INDEX:
                names = sorted(self._nodeclaims_by_provider_id.get(value, ()))
                return [by_ns[""][name] for name in names]
        return None

    # ------------------------------------------------------------------ conveniences

    def count(self, resource: ResourceLike, namespace: str | None = None) -> int:
        """How many objects of a kind exist (cheap; no copies)."""
        rt = self._rt(resource)
        with self._lock:
            by_ns = self._objects.get(rt.key, {})
            if not rt.namespaced or namespace is None:
                return sum(len(objs) for objs in by_ns.values())
            return len(by_ns.get(namespace, {}))

    def pods_on_node(self, node_name: str) -> builtins.list[Obj]:
        """Pods bound to ``node_name`` (from the index; same as a spec.nodeName field selector)."""
        return self.list(_POD, field_selector=f"spec.nodeName={node_name}").items
