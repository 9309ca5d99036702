"""Shared plumbing of the NodePool controllers: conditions, the NodeClass a pool names,
and status patches.

NodePool status is written with merge patches that carry the ``resourceVersion`` read
(optimistic locking, as upstream's ``MergeFromWithOptimisticLock``): a conflicting write
by another controller makes the patch fail, and the reconcile runs again at once instead of
overwriting that controller's conditions.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Hashable, Iterable, Mapping
from enum import Enum
from typing import Any

from karpenter_core.apis.accessors import meta_of, name_of
from karpenter_core.apis.conditions import ConditionSet
from karpenter_core.apis.v1 import CONDITION_READY, NODEPOOL_READY_DEPENDENTS
from karpenter_core.cloudprovider.protocol import NodeClassKind
from karpenter_core.kube.client import (
    Conflict,
    KubeClient,
    NotFound,
    ResourceType,
    UnknownResourceError,
    resource_for,
)
from karpenter_core.runtime.clock import Clock
from karpenter_core.runtime.context import ControllerContext
from karpenter_core.runtime.reconciler import ObjectKey, Watch
from karpenter_core.state.cluster import is_managed_nodepool

__all__ = [
    "PatchOutcome",
    "get_nodeclass",
    "is_managed",
    "managed_nodepool",
    "managed_predicate",
    "nodeclass_kind",
    "nodeclass_resource",
    "nodeclass_watches",
    "nodepool_conditions",
    "nodepool_reference",
    "patch_status",
]

log = logging.getLogger("karpenter.nodepool")


def node_class_ref(np: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = np.get("spec")
    template = spec.get("template") if isinstance(spec, Mapping) else None
    tspec = template.get("spec") if isinstance(template, Mapping) else None
    ref = tspec.get("nodeClassRef") if isinstance(tspec, Mapping) else None
    return ref if isinstance(ref, Mapping) else {}


def nodepool_reference(np: Mapping[str, Any]) -> dict[str, str]:
    meta = meta_of(np)
    ref = {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "name": str(meta.get("name") or "")}
    if meta.get("uid"):
        ref["uid"] = str(meta["uid"])
    return ref


def is_managed(np: Mapping[str, Any], ctx: ControllerContext) -> bool:
    return is_managed_nodepool(np, ctx.cloud_provider)


def managed_nodepool(ctx: ControllerContext, name: str) -> dict[str, Any] | None:
    """The NodePool ``name`` fresh from the server when it exists and names a NodeClass kind
    this provider manages; None otherwise (the controller then has nothing to do)."""
    try:
        np = ctx.kube.get("nodepools", name)
    except NotFound:
        return None
    return np if is_managed(np, ctx) else None


def managed_predicate(ctx: ControllerContext) -> Any:
    def predicate(event_type: str, obj: dict[str, Any]) -> bool:
        return is_managed(obj, ctx)

    return predicate


def nodepool_conditions(np: dict[str, Any], clock: Clock) -> ConditionSet:
    """``Ready`` over ``ValidationSucceeded`` and ``NodeClassReady`` (operatorpkg rules)."""
    return ConditionSet(np, clock, root=CONDITION_READY, dependents=NODEPOOL_READY_DEPENDENTS)


# --------------------------------------------------------------------------- NodeClasses


def nodeclass_kind(np: Mapping[str, Any], ctx: ControllerContext) -> NodeClassKind | None:
    """The provider's NodeClass kind the pool's ``nodeClassRef`` names, or None when the
    provider does not support it (such pools are not this operator's)."""
    ref = node_class_ref(np)
    try:
        kinds = list(ctx.cloud_provider.supported_node_classes())
    except Exception as e:
        log.error("cloud provider cannot list its NodeClass kinds: %s", e)
        return None
    for kind in kinds:
        if kind.group == ref.get("group") and kind.kind == ref.get("kind"):
            return kind
    return None


def nodeclass_resource(kind: NodeClassKind) -> ResourceType | None:
    try:
        if kind.version:
            return resource_for((kind.api_version, kind.kind))
        return resource_for(kind.kind)
    except UnknownResourceError:
        return None


def _implicit_nodeclass(name: str, kind: NodeClassKind) -> dict[str, Any]:
    return {
        "apiVersion": kind.api_version,
        "kind": kind.kind,
        "metadata": {"name": name, "generation": 1},
        "status": {
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "Ready",
                    "message": f"no {kind.kind} exists; using an implicit default",
                }
            ]
        },
    }


class _Unsupported(Enum):
    UNSUPPORTED = "unsupported"


UNSUPPORTED = _Unsupported.UNSUPPORTED


def get_nodeclass(
    np: Mapping[str, Any], ctx: ControllerContext
) -> dict[str, Any] | _Unsupported | None:
    """The NodeClass object the pool names; None when it does not exist; ``UNSUPPORTED``
    when the provider does not manage that kind. A kind the provider declares ``implicit``
    or with a ``default_status`` behaves as :class:`NodeClassKind` says."""
    kind = nodeclass_kind(np, ctx)
    if kind is None:
        return UNSUPPORTED
    name = str(node_class_ref(np).get("name") or "")
    rt = nodeclass_resource(kind)
    if rt is None:
        return None
    try:
        found = dict(ctx.kube.get(rt, name)) if name else None
    except NotFound:
        found = None
    if found is not None:
        if kind.default_status is not None and not isinstance(found.get("status"), Mapping):
            found["status"] = copy.deepcopy(dict(kind.default_status))
        return found
    if kind.implicit and name and len(ctx.kube.list(rt).items) == 0:
        return _implicit_nodeclass(name, kind)
    return None


def nodeclass_watches(ctx: ControllerContext) -> list[Watch]:
    """Watches turning NodeClass events into the keys of the NodePools naming them."""
    watches = []
    try:
        kinds = list(ctx.cloud_provider.supported_node_classes())
    except Exception:
        return []
    for kind in kinds:
        rt = nodeclass_resource(kind)
        if rt is None:
            continue

        def mapper(
            event_type: str, obj: dict[str, Any], _kind: NodeClassKind = kind
        ) -> Iterable[Hashable]:
            return _pools_naming(ctx.kube, _kind, name_of(obj))

        watches.append(Watch(rt, mapper=mapper))
    return watches


def _pools_naming(kube: KubeClient, kind: NodeClassKind, name: str) -> list[ObjectKey]:
    keys = []
    implicit = kind.implicit
    for np in kube.list("nodepools").items:
        ref = node_class_ref(np)
        same_kind = ref.get("group") == kind.group and ref.get("kind") == kind.kind
        # Every pool of an implicit kind: its NodeClass depends on whether *any* exists.
        if same_kind and (ref.get("name") == name or implicit):
            keys.append(ObjectKey("", name_of(np)))
    return keys


# --------------------------------------------------------------------------- status writes


class PatchOutcome(Enum):
    UNCHANGED = "unchanged"
    PATCHED = "patched"
    CONFLICT = "conflict"
    GONE = "gone"


def patch_status(
    kube: KubeClient,
    stored: Mapping[str, Any],
    updated: Mapping[str, Any],
    *,
    optimistic: bool = True,
) -> PatchOutcome:
    """Write the ``status`` fields that differ between ``stored`` and ``updated``."""
    old = stored.get("status") if isinstance(stored.get("status"), Mapping) else {}
    new = updated.get("status") if isinstance(updated.get("status"), Mapping) else {}
    assert isinstance(old, Mapping) and isinstance(new, Mapping)
    changes = {k: copy.deepcopy(v) for k, v in new.items() if old.get(k) != v}
    changes.update({k: None for k in old if k not in new})
    if not changes:
        return PatchOutcome.UNCHANGED
    body: dict[str, Any] = {"status": changes}
    rv = meta_of(stored).get("resourceVersion")
    if optimistic and rv:
        body["metadata"] = {"resourceVersion": rv}
    try:
        kube.patch("nodepools", name_of(stored), body, subresource="status")
    except Conflict:
        return PatchOutcome.CONFLICT
    except NotFound:
        return PatchOutcome.GONE
    return PatchOutcome.PATCHED
