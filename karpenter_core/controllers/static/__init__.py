"""Static capacity (feature gate ``StaticCapacity``, default off): NodePools with
``spec.replicas`` keep that many nodes, whatever the pods need.

``register(manager, ctx)`` adds two controllers keyed by NodePool, each with 10 workers as
upstream, and is called by the operator's registry only when the gate is on:

* ``static.provisioning`` (:mod:`.provisioning`) tops a pool up to its replicas. It runs
  when a static NodePool appears, when its replicas change or it turns Ready, and when one
  of its NodeClaims is deleted or starts deleting (a node to replace);
* ``static.deprovisioning`` (:mod:`.deprovisioning`) deletes the surplus. It runs when a
  static NodePool appears or its replicas change, and when a NodeClaim of a pool is created
  (a launch may have overshot).

Both also look again every minute, so a missed event only delays them. The dynamic
provisioner never schedules pods onto static pools, consolidation never removes their
nodes, and drift of their nodes is static drift's (one-for-one replacement within the
pool's budget and node limit).
"""

from __future__ import annotations

import threading
from collections.abc import Hashable, Iterable, Mapping
from typing import Any

from karpenter_core.apis.accessors import labels_of, meta_of, name_of
from karpenter_core.apis.conditions import is_true
from karpenter_core.apis.labels import NODEPOOL_LABEL_KEY
from karpenter_core.apis.v1 import CONDITION_READY
from karpenter_core.controllers.nodepool.common import is_managed
from karpenter_core.controllers.static.deprovisioning import (
    NAME as DEPROVISIONING,
)
from karpenter_core.controllers.static.deprovisioning import (
    StaticDeprovisioner,
    select_victims,
)
from karpenter_core.controllers.static.provisioning import (
    NAME as PROVISIONING,
)
from karpenter_core.controllers.static.provisioning import (
    DeletionsSeen,
    StaticProvisioner,
    launch_count,
    static_pool,
)
from karpenter_core.runtime.context import ControllerContext
from karpenter_core.runtime.manager import Manager
from karpenter_core.runtime.reconciler import ObjectKey, Watch

__all__ = [
    "DEPROVISIONING",
    "PROVISIONING",
    "WORKERS",
    "DeletionsSeen",
    "NodeClaimDeleting",
    "NodePoolChanged",
    "StaticDeprovisioner",
    "StaticProvisioner",
    "launch_count",
    "nodepool_of_nodeclaim",
    "register",
    "select_victims",
    "static_pool",
]

WORKERS = 10

_UNSEEN = object()


def _replicas(obj: dict[str, Any]) -> Any:
    spec = obj.get("spec")
    return spec.get("replicas") if isinstance(spec, dict) else None


def _ready(obj: dict[str, Any]) -> bool:
    return is_true(obj, CONDITION_READY)


class NodePoolChanged:
    """Watch predicate for managed static NodePools: creation, a ``spec.replicas`` change
    and (with ``on_ready``) a NotReady→Ready transition; deletions never. Watch events carry
    only the new object, so the last seen replicas and readiness are remembered per pool.
    One instance per watch."""

    def __init__(self, ctx: ControllerContext, *, on_ready: bool) -> None:
        self.ctx = ctx
        self.on_ready = on_ready
        self._lock = threading.Lock()
        self._seen: dict[str, tuple[Any, bool]] = {}

    def __call__(self, event_type: str, obj: dict[str, Any]) -> bool:
        name = name_of(obj)
        if event_type == "DELETED":
            with self._lock:
                self._seen.pop(name, None)
            return False
        now = (_replicas(obj), _ready(obj))
        with self._lock:
            before = self._seen.get(name, _UNSEEN)
            self._seen[name] = now
        if now[0] is None or not is_managed(obj, self.ctx):
            return False
        if event_type == "ADDED" or before is _UNSEEN:
            return True
        assert isinstance(before, tuple)
        if before[0] != now[0]:
            return True
        return self.on_ready and not before[1] and now[1]


class NodeClaimDeleting:
    """Watch predicate for NodeClaims of a NodePool: deletion, or a deletion timestamp that
    was not there before. Each one it lets through is recorded in ``deletions`` (when
    given), so the reconcile can tell whether cluster state has applied it yet."""

    def __init__(self, deletions: DeletionsSeen | None = None) -> None:
        self.deletions = deletions
        self._lock = threading.Lock()
        self._deleting: dict[str, bool] = {}

    def __call__(self, event_type: str, obj: dict[str, Any]) -> bool:
        meta = meta_of(obj)
        name = str(meta.get("name") or "")
        if event_type == "DELETED":
            with self._lock:
                self._deleting.pop(name, None)
            self._record(meta, name, gone=True)
            return True
        deleting = bool(meta.get("deletionTimestamp"))
        with self._lock:
            before = self._deleting.get(name, False)
            self._deleting[name] = deleting
        if deleting and not before:
            self._record(meta, name, gone=False)
            return True
        return False

    def _record(self, meta: Mapping[str, Any], name: str, *, gone: bool) -> None:
        labels = meta.get("labels")
        pool = labels.get(NODEPOOL_LABEL_KEY) if isinstance(labels, Mapping) else None
        if self.deletions is not None and pool and name:
            self.deletions.record(str(pool), name, gone=gone)


def _nodeclaim_created(event_type: str, obj: dict[str, Any]) -> bool:
    return event_type == "ADDED"


def nodepool_of_nodeclaim(event_type: str, obj: dict[str, Any]) -> Iterable[Hashable]:
    """A NodeClaim event wakes its NodePool (the reconcilers ignore dynamic pools)."""
    pool = labels_of(obj).get(NODEPOOL_LABEL_KEY)
    return (ObjectKey("", str(pool)),) if pool else ()


def register(manager: Manager, ctx: ControllerContext) -> None:
    """Add ``static.provisioning`` and ``static.deprovisioning``."""
    deletions = DeletionsSeen(ctx.clock)
    manager.add_controller(
        PROVISIONING,
        StaticProvisioner(ctx, deletions=deletions),
        watches=[
            Watch("nodepools", predicate=NodePoolChanged(ctx, on_ready=True)),
            Watch(
                "nodeclaims",
                mapper=nodepool_of_nodeclaim,
                predicate=NodeClaimDeleting(deletions),
            ),
        ],
        workers=WORKERS,
    )
    manager.add_controller(
        DEPROVISIONING,
        StaticDeprovisioner(ctx),
        watches=[
            Watch("nodepools", predicate=NodePoolChanged(ctx, on_ready=False)),
            Watch("nodeclaims", mapper=nodepool_of_nodeclaim, predicate=_nodeclaim_created),
        ],
        workers=WORKERS,
    )
