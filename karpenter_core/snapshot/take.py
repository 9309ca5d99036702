"""Taking a snapshot: list every kind the engine reads from a cluster, page by page.

Each object is trimmed (``metadata.managedFields`` and kubectl's last-applied annotation are
bookkeeping, often half an object's size), anonymised when asked, and encoded as soon as
its page arrives, so a 150,000-pod cluster is held once, as compact JSON, never as a full
listing of dicts (see :mod:`karpenter_core.snapshot.fileformat`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from karpenter_core.kube.client import (
    ApiError,
    Forbidden,
    KubeClient,
    NotFound,
    Obj,
    ResourceType,
    UnknownResourceError,
    resource_for,
    resource_types,
)
from karpenter_core.snapshot.anonymise import Anonymiser
from karpenter_core.snapshot.fileformat import (
    Snapshot,
    SnapshotBuilder,
    SnapshotError,
    SnapshotSource,
    encode_item,
)

__all__ = ["LAST_APPLIED", "snapshot_kinds", "strip", "take_snapshot"]

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"

_BEFORE_NODE_CLASSES = (
    ("v1", "Namespace"),
    ("storage.k8s.io/v1", "StorageClass"),
    ("storage.k8s.io/v1", "CSINode"),
    ("v1", "PersistentVolume"),
    ("v1", "PersistentVolumeClaim"),
    ("resource.k8s.io/v1", "DeviceClass"),
)
_AFTER_NODE_CLASSES = (
    ("karpenter.sh/v1", "NodePool"),
    ("karpenter.sh/v1alpha1", "NodeOverlay"),
    ("karpenter.sh/v1", "NodeClaim"),
    ("v1", "Node"),
    ("resource.k8s.io/v1", "ResourceSlice"),
    ("v1", "PodTemplate"),
    ("v1", "Service"),
    ("apps/v1", "Deployment"),
    ("apps/v1", "ReplicaSet"),
    ("apps/v1", "StatefulSet"),
    ("batch/v1", "Job"),
    ("apps/v1", "DaemonSet"),
    ("policy/v1", "PodDisruptionBudget"),
    ("autoscaling.x-k8s.io/v1beta1", "CapacityBuffer"),
    ("resource.k8s.io/v1", "ResourceClaim"),
    ("v1", "Pod"),
)


def snapshot_kinds() -> list[ResourceType]:
    """The kinds a snapshot holds, in the order they are written: what others refer to
    first (namespaces, classes, NodePools, nodes) so a reader can create them in file
    order, and owners before what they own (a Deployment before its ReplicaSets, every
    workload before its pods; PodTemplates and Deployments before the CapacityBuffers
    that name them; Services before the StatefulSets that name theirs). NodeClasses are every registered ``*NodeClass`` kind, so the providers' plugins
    must be loaded first (they register their kinds on import)."""
    node_classes = sorted(
        (rt for rt in resource_types() if rt.kind.endswith("NodeClass")),
        key=lambda rt: (rt.group, rt.kind),
    )
    before = [resource_for(key) for key in _BEFORE_NODE_CLASSES]
    after = [resource_for(key) for key in _AFTER_NODE_CLASSES]
    return [*before, *node_classes, *after]


def strip(obj: Mapping[str, Any]) -> Obj:
    """``obj`` without ``metadata.managedFields`` and the last-applied annotation, copying
    only what changes (the listed object may be shared with a cache)."""
    meta = obj.get("metadata")
    if not isinstance(meta, Mapping):
        return dict(obj)
    annotations = meta.get("annotations")
    if "managedFields" not in meta and not (
        isinstance(annotations, Mapping) and LAST_APPLIED in annotations
    ):
        return dict(obj)
    new_meta = {k: v for k, v in meta.items() if k != "managedFields"}
    if isinstance(annotations, Mapping) and LAST_APPLIED in annotations:
        kept = {k: v for k, v in annotations.items() if k != LAST_APPLIED}
        if kept:
            new_meta["annotations"] = kept
        else:
            del new_meta["annotations"]
    return {**obj, "metadata": new_meta}


def _rbac_hint(rt: ResourceType) -> str:
    group = rt.group or '"" (core)'
    return f"RBAC verb list on {rt.plural} in API group {group}"


def _listing(kube: KubeClient, rt: ResourceType, each: Callable[[Obj], None]) -> None:
    """Call ``each`` on every object of ``rt``, page by page where the client pages."""
    list_each = getattr(kube, "list_each", None)
    if list_each is not None:  # the HTTP client: each page is dropped once handled
        shared: Obj = {}

        def take(obj: Obj) -> Obj:
            each(obj)
            return shared  # the listing keeps one shared placeholder, not the object

        list_each(rt, each=take)
        return
    list_shared = getattr(kube, "list_shared", None)  # the in-memory server: no copies
    listing: Iterable[Obj] = list_shared(rt) if list_shared is not None else kube.list(rt)
    for obj in listing:
        each(obj)


def now_rfc3339() -> str:
    """The current time as RFC 3339 in UTC, to the second."""
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def take_snapshot(
    kube: KubeClient,
    *,
    anonymise: bool = False,
    anonymise_key: bytes | None = None,
    source: SnapshotSource | None = None,
    kinds: Sequence[ResourceType] | None = None,
    on_skip: Callable[[ResourceType, str], None] | None = None,
    taken_at: str | None = None,
) -> Snapshot:
    """List ``kinds`` (default :func:`snapshot_kinds`) from ``kube`` into a snapshot.

    A kind the server does not serve (404: its CRD is not installed, or an API group the
    cluster's version lacks) is left out and reported to ``on_skip``; any other failure is
    a :class:`SnapshotError` naming the kind: for a 403, the RBAC permission needed.
    """
    started = now_rfc3339() if taken_at is None else taken_at
    anonymiser = Anonymiser(anonymise_key) if anonymise else None
    builder = SnapshotBuilder()
    for rt in snapshot_kinds() if kinds is None else kinds:

        def add(obj: Obj, rt: ResourceType = rt) -> None:
            item = strip(obj)
            if anonymiser is not None:
                item = anonymiser.object(item)
            builder.add_encoded(rt.kind, encode_item(item))

        try:
            _listing(kube, rt, add)
        except NotFound:
            if on_skip is not None:
                on_skip(rt, "not served by this API server")
        except UnknownResourceError as e:
            if on_skip is not None:
                on_skip(rt, str(e))
        except Forbidden:
            raise SnapshotError(
                f"cannot list {rt} ({rt.kind}): forbidden; the snapshot needs {_rbac_hint(rt)}"
            ) from None
        except ApiError as e:
            raise SnapshotError(f"cannot list {rt} ({rt.kind}): {e}") from None
    where = source or SnapshotSource()
    if anonymiser is not None:
        where = SnapshotSource(anonymiser.hash(where.server), anonymiser.hash(where.context))
    return builder.build(
        taken_at=started,
        source=where,
        anonymised=anonymise,
    )
