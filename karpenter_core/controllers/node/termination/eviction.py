"""The eviction queue: takes pods off draining nodes one API call at a time (upstream
``terminator/eviction.go``, controller ``eviction-queue``).

Each queued pod is remembered by namespace, name *and* UID together with its node's
deadline (the NodeClaim's termination timestamp, or None). Every reconcile decides afresh:

* past the point where the pod's own grace period would outlast the deadline, the pod is
  deleted with a grace period cut to what is left (at least 1 s), bypassing PDBs and
  ``do-not-disrupt`` — the ``Disrupted`` event says so;
* a pod that finished or is already terminating leaves the queue;
* a pod that may not be evicted now (``do-not-disrupt``) stays, retried with back-off;
* otherwise the Eviction API is called, which honours PodDisruptionBudgets: 404/409 mean
  the pod is gone or replaced (done), 429 — or the "more than one PDB" 500 — is reported
  as ``FailedDraining`` on the node and retried with back-off (100 ms doubling to 10 s).

The UID in the key matters: a pod re-created under the same name is a different pod and
must not be evicted on the strength of the old one's entry.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime, timedelta
from typing import Any

from attrs import frozen

from karpenter_core import metrics
from karpenter_core.apis import v1
from karpenter_core.apis.conditions import TRUE, condition_of
from karpenter_core.controllers.node.termination import pods as podutil
from karpenter_core.kube.client import (
    ApiError,
    Conflict,
    KubeClient,
    NotFound,
    TooManyRequests,
    deep_copy,
    shared_get,
)
from karpenter_core.kube.informer import NODECLAIM_PROVIDER_ID_INDEX
from karpenter_core.runtime.clock import Clock, format_time
from karpenter_core.runtime.events import NORMAL, WARNING, Event, EventRecorder
from karpenter_core.runtime.reconciler import ObjectKey, Result

__all__ = [
    "EVICTION_QUEUE_BASE_DELAY",
    "EVICTION_QUEUE_MAX_DELAY",
    "FORCEFUL_TERMINATION_REASON",
    "MULTIPLE_PDBS_MESSAGE",
    "EvictionQueue",
    "QueueKey",
    "earlier",
]

log = logging.getLogger("karpenter.termination")

EVICTION_QUEUE_BASE_DELAY = 0.1
EVICTION_QUEUE_MAX_DELAY = 10.0
MULTIPLE_PDBS_MESSAGE = (
    "This pod has more than one PodDisruptionBudget, which the eviction subresource does not "
    "support."
)
FORCEFUL_TERMINATION_REASON = "Forceful Termination"


@frozen(cache_hash=True)
class QueueKey:
    """One pod incarnation: a pod re-created under the same name has another UID."""

    namespace: str
    name: str
    uid: str

    @classmethod
    def of(cls, pod: Mapping[str, Any]) -> QueueKey:
        meta = pod.get("metadata") or {}
        return cls(
            str(meta.get("namespace") or "default"),
            str(meta.get("name") or ""),
            str(meta.get("uid") or ""),
        )


def earlier(a: datetime | None, b: datetime | None) -> datetime | None:
    """The earlier deadline, None meaning "no deadline" (later than any time)."""
    if a is None:
        return b
    if b is None:
        return a
    return a if a <= b else b


def _node_event(node: Mapping[str, Any], message: str) -> Event:
    name = str((node.get("metadata") or {}).get("name") or "")
    return Event(node, WARNING, "FailedDraining", f"Failed to drain node, {message}", (name,))


class EvictionQueue:
    """The ``eviction-queue`` reconciler; the terminator feeds it with :meth:`add`.

    Keys reaching :meth:`reconcile` are :class:`ObjectKey` (namespace/name); the UID is
    checked against the remembered entries.
    """

    name = "eviction-queue"

    def __init__(
        self,
        kube: KubeClient,
        clock: Clock,
        recorder: EventRecorder,
    ) -> None:
        self.kube = kube
        self.clock = clock
        self.recorder = recorder
        self._items: dict[QueueKey, datetime | None] = {}
        # the queued incarnations by pod name: a pod found gone forgets them all, and
        # scanning every queued pod for each (a 5,000-node scale-in queues thousands) was
        # a third of that scale-in's time
        self._by_name: dict[ObjectKey, set[QueueKey]] = {}
        self._lock = threading.Lock()
        self._enqueue: Callable[[ObjectKey], None] | None = None

    def bind(self, enqueue: Callable[[ObjectKey], None]) -> None:
        """Connect to the controller's work queue (entries added before are enqueued now)."""
        with self._lock:
            self._enqueue = enqueue
            pending = {ObjectKey(k.namespace, k.name) for k in self._items}
        for key in sorted(pending):
            enqueue(key)

    # ------------------------------------------------------------------ the terminator's side

    def add(self, deadline: datetime | None, pods: Iterable[Mapping[str, Any]]) -> None:
        """Queue pods for removal. Re-adding keeps the earlier deadline, so a later call can
        tighten a force-delete deadline but never loosen or clear it."""
        fresh: list[ObjectKey] = []
        with self._lock:
            for pod in pods:
                key = QueueKey.of(pod)
                queued = key in self._items
                self._items[key] = earlier(self._items.get(key), deadline) if queued else deadline
                if not queued:
                    name = ObjectKey(key.namespace, key.name)
                    self._by_name.setdefault(name, set()).add(key)
                    fresh.append(name)
            enqueue = self._enqueue
        if enqueue is not None:
            for k in fresh:
                enqueue(k)

    def has(self, pod: Mapping[str, Any]) -> bool:
        """Whether this pod incarnation (same UID) is queued."""
        with self._lock:
            return QueueKey.of(pod) in self._items

    def deadline_of(self, pod: Mapping[str, Any]) -> datetime | None:
        with self._lock:
            return self._items.get(QueueKey.of(pod))

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    def _complete(self, pod: Mapping[str, Any]) -> None:
        with self._lock:
            self._drop(QueueKey.of(pod))

    def _drop(self, key: QueueKey) -> None:
        self._items.pop(key, None)
        name = ObjectKey(key.namespace, key.name)
        keys = self._by_name.get(name)
        if keys is not None:
            keys.discard(key)
            if not keys:
                del self._by_name[name]

    def _forget_name(self, key: ObjectKey) -> None:
        with self._lock:
            for k in self._by_name.pop(ObjectKey(key.namespace, key.name), ()):
                self._items.pop(k, None)

    # ------------------------------------------------------------------ reconcile

    def reconcile(self, key: ObjectKey) -> Result:
        try:
            # read only (never changed here, nor by what it is handed to): uncopied where the
            # client allows, as a drain asks this of every pod of the nodes it empties
            pod = shared_get(self.kube)("pods", key.name, key.namespace or "default")
        except NotFound:
            # Gone (evicted by someone else, or deleted): nothing left to remove.
            self._forget_name(key)
            return Result()
        with self._lock:
            qk = QueueKey.of(pod)
            if qk not in self._items:
                # Another pod under the same name: it was never asked to leave.
                return Result()
            deadline = self._items[qk]
        now = self.clock.now()
        if podutil.needs_force_delete(pod, deadline, now):
            return self._force_delete(pod, deadline, now)
        if not podutil.is_active(pod):
            self._complete(pod)
            return Result()
        if not podutil.is_evictable(pod, now, self.recorder):
            return Result(requeue=True)
        return self._evict(pod)

    def _evict(self, pod: dict[str, Any]) -> Result:
        meta = pod["metadata"]
        name, namespace = str(meta["name"]), str(meta.get("namespace") or "default")
        try:
            self.kube.evict(name, namespace)
        except ApiError as e:
            metrics.PODS_EVICTION_REQUESTS_TOTAL.labels(code=str(e.code)).inc()
            if isinstance(e, NotFound | Conflict):
                # 404: the pod is gone; 409: a different pod now holds the name.
                self._complete(pod)
                return Result()
            multiple = e.message == MULTIPLE_PDBS_MESSAGE
            if isinstance(e, TooManyRequests) or multiple:
                what = (
                    "eviction does not support multiple PDBs"
                    if multiple
                    else "evicting pod violates a PDB"
                )
                node = self._node_for(pod)
                if node is not None:
                    self.recorder.publish(_node_event(node, f"{what} (Pod={podutil.pod_ref(pod)})"))
                return Result(requeue=True)
            raise
        metrics.PODS_EVICTION_REQUESTS_TOTAL.labels(code="200").inc()
        reason = self._eviction_reason(pod)
        self.recorder.publish(Event(pod, NORMAL, "Evicted", f"Evicted pod: {reason}", (name,)))
        metrics.PODS_DRAINED_TOTAL.labels(reason=reason).inc()
        self._complete(pod)
        return Result()

    def _force_delete(
        self, pod: dict[str, Any], deadline: datetime | None, now: datetime
    ) -> Result:
        meta = pod["metadata"]
        name, namespace = str(meta["name"]), str(meta.get("namespace") or "default")
        assert deadline is not None  # needs_force_delete is False without one
        remaining = (deadline - now) / timedelta(seconds=1)
        grace = max(int(remaining), 1)  # never 0: that would skip the kubelet entirely
        pod_grace = podutil.grace_period_seconds(pod)
        self.recorder.publish(
            Event(
                pod,
                NORMAL,
                "Disrupted",
                f"Deleting the pod to accommodate the terminationTime {format_time(deadline)} of "
                f"the node. The pod was granted {grace} seconds of grace-period of its "
                f"{pod_grace if pod_grace is not None else 0} terminationGracePeriodSeconds. "
                "This bypasses the PDB of the pod and the do-not-disrupt annotation.",
                (name,),
            )
        )
        try:
            self.kube.delete(
                "pods",
                name,
                namespace,
                grace_period_seconds=grace,
                preconditions={"uid": str(meta.get("uid") or "")},
            )
        except (NotFound, Conflict):
            # Gone, or replaced by a pod with another UID: nothing of ours is left.
            self._complete(pod)
            return Result()
        log.debug(
            "deleting pod %s with grace %ss before the node's deadline %s",
            podutil.pod_ref(pod),
            grace,
            format_time(deadline),
        )
        metrics.PODS_DRAINED_TOTAL.labels(reason=self._eviction_reason(pod)).inc()
        self._complete(pod)
        return Result()

    # ------------------------------------------------------------------ lookups

    def _node_for(self, pod: Mapping[str, Any], *, shared: bool = False) -> dict[str, Any] | None:
        """The pod's node; ``shared``: read-only, uncopied where the client allows."""
        node_name = (pod.get("spec") or {}).get("nodeName")
        if not node_name:
            return None
        get = shared_get(self.kube) if shared else self.kube.get
        try:
            node: dict[str, Any] = get("nodes", str(node_name))
        except NotFound:
            return None
        return node

    def _eviction_reason(self, pod: Mapping[str, Any]) -> str:
        """The disruption reason of the pod's NodeClaim (``DisruptionReason`` condition),
        ``Forceful Termination`` when it has none, ``""`` when there is no NodeClaim."""
        node = self._node_for(pod, shared=True)
        if node is None:
            return ""
        nodeclaim = nodeclaim_for_node(self.kube, node)
        if nodeclaim is None:
            return ""
        c = condition_of(nodeclaim, v1.CONDITION_DISRUPTION_REASON)
        if c is not None and c.get("status") == TRUE:
            return str(c.get("reason") or "")
        return FORCEFUL_TERMINATION_REASON


def nodeclaims_for_node(kube: KubeClient, node: Mapping[str, Any]) -> list[dict[str, Any]]:
    """NodeClaims whose ``status.providerID`` is the node's (none for a node without one)."""
    provider_id = (node.get("spec") or {}).get("providerID")
    if not provider_id:
        return []
    # the cache's providerID index where the client keeps one (upstream's field index);
    # else scan the cached objects and copy the matches only: a copy of every NodeClaim
    # at each termination and health reconcile was most of their cost with thousands
    # of nodes
    indexed = getattr(kube, "indexed_shared", None)
    found = (
        indexed("nodeclaims", NODECLAIM_PROVIDER_ID_INDEX, str(provider_id))
        if indexed is not None
        else None
    )
    if found is not None:
        return [deep_copy(nc) for nc in found]
    shared = getattr(kube, "list_shared", None)
    listed = (shared or kube.list)("nodeclaims").items
    matches = [nc for nc in listed if (nc.get("status") or {}).get("providerID") == provider_id]
    return [deep_copy(nc) for nc in matches] if shared is not None else matches


def nodeclaim_for_node(kube: KubeClient, node: Mapping[str, Any]) -> dict[str, Any] | None:
    """The node's NodeClaim, or None when there is none or more than one (then there is no
    single source of truth, and termination proceeds as if there were none)."""
    found = nodeclaims_for_node(kube, node)
    return found[0] if len(found) == 1 else None
