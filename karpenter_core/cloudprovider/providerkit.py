"""What every cloud provider plugin does the same way, written once.

A provider resolves its NodeClass (an ``EC2NodeClass``, an ``AKSNodeClass``, a
``GCENodeClass``) in three places with the same contract, turns a cloud instance and its
:class:`InstanceType` into the NodeClaim view the core compares with its own NodeClaims,
and names, in an insufficient-capacity error, the offerings a NodeClaim asked for. Each
bundled provider used to carry its own copy of this; a copy drifting (an event no longer
recorded, a different error type for the same condition) changes how the core's
lifecycle controller treats a launch, so the contract lives here, generic over the
provider's NodeClass type (:class:`ProviderNodeClass`).

Plugins reach these through :mod:`karpenter_core.plugin_api`.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from karpenter_core.apis import labels as wk
from karpenter_core.apis import resources as res
from karpenter_core.apis.base import ObjectMeta, format_time
from karpenter_core.apis.conditions import condition_of
from karpenter_core.apis.v1 import NodeClaim, NodeClaimStatus, NodePool
from karpenter_core.cloudprovider.errors import (
    CreateError,
    InsufficientCapacityError,
    NodeClassNotReadyError,
)
from karpenter_core.kube.client import Conflict, NotFound

if TYPE_CHECKING:
    import logging
    from datetime import datetime

    from karpenter_core.cloudprovider.types import InstanceType
    from karpenter_core.kube.client import KubeClient
    from karpenter_core.runtime.events import EventRecorder
    from karpenter_core.scheduling.requirements import Requirements

__all__ = [
    "FAILED_RESOLVE_NODECLASS",
    "ProviderNodeClass",
    "as_nodeclaim",
    "describe_requested",
    "drift_nodeclass",
    "ensure_hash_annotations",
    "instance_nodeclaim",
    "launch_nodeclass",
    "nodepool_nodeclass",
]

FAILED_RESOLVE_NODECLASS = "FailedResolveNodeClass"
"""The reason of the Warning event a NodeClaim or NodePool gets when its NodeClass is
missing or terminating (upstream's)."""


class ProviderNodeClass(Protocol):
    """What the shared resolution needs of a provider's NodeClass: its name, whether it is
    being deleted, and its ``Ready`` condition (True, False, or None while unknown) with
    the condition's message."""

    @property
    def name(self) -> str: ...

    @property
    def deletion_timestamp(self) -> str | None: ...

    def ready(self) -> bool | None: ...

    def ready_message(self) -> str: ...


N = TypeVar("N", bound=ProviderNodeClass)

_ExcTypes = type[BaseException] | tuple[type[BaseException], ...]


def launch_nodeclass(
    kube: KubeClient,
    nodeclaim: NodeClaim,
    get: Callable[[KubeClient, str], N | None],
    *,
    kind: str,
    malformed: _ExcTypes,
    recorder: EventRecorder | None,
    on_unknown: Callable[[N], None] | None = None,
    missing_noun: str = "nodeclass",
    unknown_noun: str = "nodeclass",
) -> N:
    """The NodeClass ``nodeclaim`` launches with, or the error the core's lifecycle
    controller expects (upstream's ``resolveNodeClassFromNodeClaim`` and readiness check).
    ``get(kube, name)`` reads the provider's class: None when it does not exist, one of
    ``malformed`` (the provider's own error type) when it cannot be parsed.

    - malformed (``get`` raised one of ``malformed``) ⇒ ``NodeClassNotReadyError``, naming
      the field, so the NodeClaim waits for the user to fix it;
    - missing or terminating ⇒ a ``FailedResolveNodeClass`` Warning event on the NodeClaim
      and ``InsufficientCapacityError``, so the NodeClaim is deleted and the pods go
      elsewhere;
    - ``Ready=False`` ⇒ ``NodeClassNotReadyError(ready_message)``;
    - ``Ready`` unknown ⇒ ``on_unknown(nodeclass)`` first (a provider may raise something
      more precise), then ``CreateError(..., "NodeClassReadinessUnknown", ...)``.

    ``kind`` names the class in messages; ``missing_noun`` and ``unknown_noun`` keep each
    provider's wording of its errors (``"resolving <missing_noun>, <kind> 'x' not found"``,
    ``"resolving <unknown_noun> readiness, <unknown_noun> is in Ready=Unknown, ..."``).
    """
    ref = nodeclaim.spec.node_class_ref
    name = ref.name if ref is not None else ""
    try:
        nodeclass = get(kube, name) if name else None
    except malformed as e:
        raise NodeClassNotReadyError(e) from e
    if nodeclass is None or nodeclass.deletion_timestamp:
        why = "is terminating" if nodeclass is not None else "not found"
        if recorder is not None:
            recorder.warning(
                nodeclaim.to_dict(),
                FAILED_RESOLVE_NODECLASS,
                f"Failed resolving NodeClass: {kind} {name!r} {why}",
            )
        raise InsufficientCapacityError(f"resolving {missing_noun}, {kind} {name!r} {why}")
    ready = nodeclass.ready()
    if ready is False:
        raise NodeClassNotReadyError(nodeclass.ready_message())
    if ready is None:
        if on_unknown is not None:
            on_unknown(nodeclass)
        raise CreateError(
            f"resolving {unknown_noun} readiness, {unknown_noun} is in Ready=Unknown, "
            f"{nodeclass.ready_message()}",
            "NodeClassReadinessUnknown",
            "NodeClass is in Ready=Unknown",
        )
    return nodeclass


def nodepool_nodeclass(
    kube: KubeClient,
    nodepool: NodePool,
    get: Callable[[KubeClient, str], N | None],
    *,
    kind: str,
    malformed: _ExcTypes,
    recorder: EventRecorder | None,
    log: logging.Logger,
) -> N | None:
    """The NodeClass ``nodepool`` refers to, for listing its instance types; None (the
    provider answers ``[]``) when it has no reference, when the class is malformed (a
    warning on ``log``: the NodePool simply offers nothing until it is fixed), or when it
    is missing or terminating (a ``FailedResolveNodeClass`` Warning event on the NodePool,
    so the user sees why it launches nothing)."""
    ref = nodepool.spec.template.spec.node_class_ref
    if ref is None or not ref.name:
        return None
    try:
        nodeclass = get(kube, ref.name)
    except malformed as e:
        log.warning("nodepool %s: %s", nodepool.name, e)
        return None
    if nodeclass is None or nodeclass.deletion_timestamp:
        if recorder is not None:
            recorder.warning(
                nodepool.to_dict(),
                FAILED_RESOLVE_NODECLASS,
                f"Failed resolving NodeClass: {kind} {ref.name!r} not found",
            )
        return None
    return nodeclass


def drift_nodeclass(
    kube: KubeClient | None,
    nodeclaim: NodeClaim,
    get: Callable[[KubeClient, str], N | None],
    *,
    malformed: _ExcTypes,
    log: logging.Logger,
) -> tuple[NodePool, N] | None:
    """The NodePool of ``nodeclaim`` (its ``karpenter.sh/nodepool`` label) and that pool's
    NodeClass, which drift is judged against; None (not drifted) when there is no cluster,
    no such pool, no reference, or the class is malformed (a warning on ``log``), missing
    or terminating: drift is only ever claimed against a class that exists, so a missing
    class never replaces nodes."""
    pool_name = nodeclaim.metadata.labels.get(wk.NODEPOOL_LABEL_KEY)
    if not pool_name or kube is None:
        return None
    try:
        nodepool = NodePool.from_dict(kube.get("nodepools", pool_name))
    except NotFound:
        return None
    ref = nodepool.spec.template.spec.node_class_ref
    if ref is None or not ref.name:
        return None
    try:
        nodeclass = get(kube, ref.name)
    except malformed as e:
        log.warning("drift of %s: %s", nodeclaim.name, e)
        return None
    if nodeclass is None or nodeclass.deletion_timestamp:
        return None
    return nodepool, nodeclass


def instance_nodeclaim(
    instance_type: InstanceType | None,
    *,
    name: str | None,
    labels: Mapping[str, str],
    provider_id: str,
    image_id: str | None,
    created: datetime | None,
    deleting_since: datetime | None,
    defaults: Mapping[str, str] | None = None,
    skip_labels: Collection[str] = (),
) -> NodeClaim:
    """The NodeClaim view of a cloud instance, as upstream's ``instanceToNodeClaim``: the
    core matches it with its NodeClaims (by provider id) and reads its labels and
    resources, so every provider must build it alike.

    Labels are ``defaults`` (which the type's may override), then the instance type's
    single-valued requirements (``In [v]``; but ``skip_labels``), then the instance's own
    ``labels``, which win. Capacity and allocatable come from the type with zero
    quantities dropped; without a type both are empty. ``created`` becomes the creation
    timestamp, ``deleting_since`` (set for an instance shutting down) the deletion
    timestamp.
    """
    out: dict[str, str] = dict(defaults or {})
    capacity: dict[str, str | int | float] = {}
    allocatable: dict[str, str | int | float] = {}
    if instance_type is not None:
        for req in instance_type.requirements.values():
            if req.key in skip_labels or req.operator() != "In" or len(req.values) != 1:
                continue
            out[req.key] = next(iter(req.values))
        capacity = dict(
            res.format_resource_list({k: v for k, v in instance_type.capacity.items() if v})
        )
        allocatable = dict(
            res.format_resource_list({k: v for k, v in instance_type.allocatable().items() if v})
        )
    out.update(labels)
    return NodeClaim(
        metadata=ObjectMeta(
            name=name,
            labels=out,
            creation_timestamp=format_time(created) if created else None,
            deletion_timestamp=format_time(deleting_since) if deleting_since else None,
        ),
        status=NodeClaimStatus(
            provider_id=provider_id,
            image_id=image_id,
            capacity=capacity,
            allocatable=allocatable,
        ),
    )


def describe_requested(reqs: Requirements, shown: int = 10) -> str:
    """The instance types, zones and capacity types a NodeClaim allows, in a few words, for
    an insufficient-capacity error: a user reading "unavailable" needs to know which
    offerings ran out. At most ``shown`` values per key, then "and N more"; "any
    offering" when none of the three is constrained to a list."""
    parts = []
    for key, what in (
        (wk.LABEL_INSTANCE_TYPE, "instance types"),
        (wk.LABEL_TOPOLOGY_ZONE, "zones"),
        (wk.CAPACITY_TYPE_LABEL_KEY, "capacity types"),
    ):
        req = reqs.get(key)
        if req.complement or not req.values:
            continue
        values = sorted(req.values)
        more = f" and {len(values) - shown} more" if len(values) > shown else ""
        parts.append(f"{what} {', '.join(values[:shown])}{more}")
    return "; ".join(parts) or "any offering"


def as_nodeclaim(nodeclaim: NodeClaim | Mapping[str, Any]) -> NodeClaim:
    """``nodeclaim`` as a :class:`NodeClaim`: the core hands providers the model, tools and
    tests sometimes the JSON; anything else is a ``TypeError``."""
    if isinstance(nodeclaim, NodeClaim):
        return nodeclaim
    if isinstance(nodeclaim, Mapping):
        return NodeClaim.from_dict(nodeclaim)
    raise TypeError(f"expected a NodeClaim, got {type(nodeclaim).__name__}")


_NODECLAIMS = ("karpenter.sh/v1", "NodeClaim")


def ensure_hash_annotations(
    kube: KubeClient,
    resource: Any,
    obj: dict[str, Any],
    wanted: Mapping[str, str],
    *,
    hash_key: str,
    version_key: str,
    kind: str,
) -> dict[str, Any] | None:
    """``obj`` (a NodeClass of ``resource``) carrying the drift-hash annotations ``wanted``,
    patched when they differ; None when a write conflicted (the caller retries).

    When the hash *version* changes, the class's NodeClaims are restamped first, as
    upstream's hash controllers do: a NodeClaim not yet drifted gets the new hash and
    version (the algorithm changed, not its class), a drifted one only the version (it
    stays drifted). A NodeClaim of another NodeClass kind is left alone."""
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    if all(annotations.get(k) == v for k, v in wanted.items()):
        return obj
    name = str((obj.get("metadata") or {}).get("name") or "")
    if annotations.get(version_key) != wanted[version_key] and not _restamp_nodeclaims(
        kube, name, wanted, hash_key=hash_key, version_key=version_key, kind=kind
    ):
        return None
    try:
        patched: dict[str, Any] = kube.patch(
            resource, name, {"metadata": {"annotations": dict(wanted)}}
        )
    except (NotFound, Conflict):
        return None
    return patched


def _restamp_nodeclaims(
    kube: KubeClient,
    name: str,
    wanted: Mapping[str, str],
    *,
    hash_key: str,
    version_key: str,
    kind: str,
) -> bool:
    done = True
    for nc in kube.list(_NODECLAIMS).items:
        ref = (nc.get("spec") or {}).get("nodeClassRef") or {}
        if ref.get("name") != name or ref.get("kind", kind) != kind:
            continue
        annotations = (nc.get("metadata") or {}).get("annotations") or {}
        if annotations.get(version_key) == wanted[version_key]:
            continue
        patch = {version_key: wanted[version_key]}
        if condition_of(nc, "Drifted") is None:
            patch[hash_key] = wanted[hash_key]
        try:
            kube.patch(_NODECLAIMS, nc["metadata"]["name"], {"metadata": {"annotations": patch}})
        except NotFound:
            continue
        except Conflict:
            done = False
    return done
