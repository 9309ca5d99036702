"""Volume topology: where a pod's volumes let it run, and whether its PVCs are usable at all.

Behaviour of upstream ``volumetopology.go`` (spec scheduling.md §6.2):

* Each PVC volume contributes alternatives: a bound PV offers one per
  ``nodeAffinity.required`` term (for Local/HostPath PVs the hostname expressions are dropped,
  since a replacement node never has the old hostname; a term left empty becomes an
  unconstrained alternative); an unbound PVC offers one per StorageClass
  ``allowedTopologies`` term, as ``In`` requirements.
* Several volumes combine as a cross product, keeping only pairwise-intersecting
  combinations; if none survive, the whole cross product is kept (upstream's choice, so an
  impossible pod fails in the scheduler with a requirements error rather than vanishing).
* The alternatives are handed to the scheduler separately from the pod's own requirements:
  they narrow the node, never the pod, so topology-spread counting is unaffected.

:meth:`VolumeTopology.validate_persistent_volume_claims` mirrors upstream's pre-scheduling
validation, which rejects pods the kube-scheduler would also refuse.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from karpenter_core.apis.labels import LABEL_HOSTNAME
from karpenter_core.apis.objects import BIND_COMPLETED_ANNOTATION, Pod
from karpenter_core.scheduling.requirements import IN, Requirement, Requirements
from karpenter_core.state.snapshot import ClusterSnapshot

__all__ = [
    "UNSUPPORTED_PROVISIONERS",
    "UNSUPPORTED_TOPOLOGY_KEYS",
    "VolumeTopology",
    "VolumeTopologyError",
    "merge_alternatives",
    "volume_requirements_by_pod",
]

UNSUPPORTED_PROVISIONERS: set[str] = set()
"""CSI drivers / provisioners Karpenter must not schedule for (providers may add)."""

UNSUPPORTED_TOPOLOGY_KEYS: set[str] = set()
"""StorageClass topology keys Karpenter-launched nodes can never carry (providers may add)."""


class VolumeTopologyError(Exception):
    """A pod's volumes cannot be resolved (missing PVC, PV or StorageClass)."""


def _merge(existing: Requirements | None, vol: Requirements) -> Requirements:
    merged = Requirements()
    if existing is not None:
        merged.add(*existing.values())
    merged.add(*vol.values())
    return merged


def _compatible(existing: Requirements | None, vol: Requirements) -> bool:
    return existing is None or existing.intersects(vol) is None


def merge_alternatives(
    alternatives: Sequence[Requirements | None], vol_alternatives: Sequence[Requirements]
) -> list[Requirements]:
    """Cross product of alternatives, keeping only intersecting pairs unless none do."""
    compatible = [_merge(a, v) for a in alternatives for v in vol_alternatives if _compatible(a, v)]
    if compatible:
        return compatible
    return [_merge(a, v) for a in alternatives for v in vol_alternatives]


def _from_expressions(exprs: Sequence[Mapping[str, Any]], where: str) -> Requirements:
    try:
        return Requirements.from_node_selector_requirements(exprs)
    except ValueError as e:
        raise VolumeTopologyError(f"{where}: {e}") from None


class VolumeTopology:
    """Volume lookups against one :class:`ClusterSnapshot`."""

    __slots__ = ("snapshot",)

    def __init__(self, snapshot: ClusterSnapshot) -> None:
        self.snapshot = snapshot

    def get_requirements(self, pod: Pod) -> list[Requirements]:
        """The pod's volume-topology alternatives; ``[]`` when its volumes do not constrain
        placement. Raises :class:`VolumeTopologyError` when a lookup fails (upstream then
        drops the pod from the batch)."""
        alternatives: list[Requirements | None] = [None]
        for claim in pod.pvc_names:
            vol_alts = self._volume_requirements(pod, claim)
            if vol_alts:
                alternatives = list(merge_alternatives(alternatives, vol_alts))
        if len(alternatives) == 1 and alternatives[0] is None:
            return []
        return [a for a in alternatives if a is not None]

    def _volume_requirements(self, pod: Pod, claim: str) -> list[Requirements]:
        pvc = self.snapshot.pvc(pod.namespace, claim)
        if pvc is None:
            raise VolumeTopologyError(
                f"discovering persistent volume claim, PersistentVolumeClaim {pod.namespace}/{claim} not found"
            )
        if pvc.volume_name:
            pv = self.snapshot.pv(pvc.volume_name)
            if pv is None:
                raise VolumeTopologyError(
                    f"getting persistent volume, PersistentVolume {pvc.volume_name} not found"
                )
            if pv.node_affinity_terms is None:
                return []
            out: list[Requirements] = []
            for i, term in enumerate(pv.node_affinity_terms):
                exprs: Sequence[Mapping[str, Any]] = term
                if pv.local_or_host_path:
                    exprs = [e for e in term if e.get("key") != LABEL_HOSTNAME]
                    if term and not exprs:
                        out.append(Requirements())
                        continue
                if exprs:
                    out.append(
                        _from_expressions(
                            exprs,
                            f"PersistentVolume {pv.name} nodeAffinity.required.nodeSelectorTerms[{i}]",
                        )
                    )
            return out
        if pvc.storage_class:
            sc = self.snapshot.storage_class(pvc.storage_class)
            if sc is None:
                raise VolumeTopologyError(
                    f"getting storage class, StorageClass {pvc.storage_class} not found"
                )
            out = []
            for term in sc.allowed_topologies:
                reqs = [
                    Requirement.new(str(e.get("key", "")), IN, tuple(e.get("values") or ()))
                    for e in term
                ]
                if reqs:
                    out.append(Requirements(*reqs))
            return out
        return []

    def validate_persistent_volume_claims(self, pod: Pod) -> str | None:
        """Why the pod's PVCs make it unschedulable for Karpenter, or None if they are fine."""
        snap = self.snapshot
        for claim in pod.pvc_names:
            pvc = snap.pvc(pod.namespace, claim)
            ref = f"PersistentVolumeClaim {pod.namespace}/{claim}"
            if pvc is None:
                return f"getting persistent volume claim, {ref} not found"
            if pvc.deletion_timestamp is not None:
                return f"persistentvolumeclaim is being deleted ({ref})"
            if pvc.phase == "Lost":
                return f"persistentvolumeclaim bound to non-existent persistentvolume ({ref}, PersistentVolume {pvc.volume_name})"
            if pvc.volume_name:
                pv = snap.pv(pvc.volume_name)
                if pv is None:
                    return f"failed to validate pvc, PersistentVolume {pvc.volume_name} not found ({ref})"
                if pv.deletion_timestamp is not None:
                    return f"failed to validate pvc, persistentvolume is being deleted ({ref}, PersistentVolume {pv.name})"
                if BIND_COMPLETED_ANNOTATION not in pvc.annotations:
                    return (
                        "pvc is considered unbound because it does not contain annotation "
                        f"{BIND_COMPLETED_ANNOTATION} ({ref}, PersistentVolume {pvc.volume_name})"
                    )
            else:
                if not pvc.storage_class:
                    return f"unbound pvc must define a storage class ({ref})"
                sc = snap.storage_class(pvc.storage_class)
                if sc is None:
                    return f"failed to validate pvc, failed to get storage class, StorageClass {pvc.storage_class} not found ({ref})"
                if sc.volume_binding_mode == "Immediate":
                    return f"failed to validate pvc, pvc with immediate volume binding mode must be bound ({ref}, StorageClass {sc.name})"
                for term in sc.allowed_topologies:
                    for e in term:
                        if e.get("key") in UNSUPPORTED_TOPOLOGY_KEYS:
                            return f"failed to validate pvc, storage class uses unsupported topology key {e.get('key')} ({ref}, StorageClass {sc.name})"
            driver = snap.resolve_driver(pvc)
            if driver in UNSUPPORTED_PROVISIONERS:
                return f"failed to validate pvc, provisioner is not supported ({ref}, Provisioner {driver})"
        return None


def volume_requirements_by_pod(
    snapshot: ClusterSnapshot, pods: Iterable[Pod]
) -> dict[str, list[Requirements]]:
    """Volume-topology alternatives keyed by pod UID, for pods that have any.

    Pods whose volumes cannot be resolved get no entry; upstream drops such pods from the
    batch before solving, which callers do with :meth:`VolumeTopology.get_requirements`."""
    vt = VolumeTopology(snapshot)
    out: dict[str, list[Requirements]] = {}
    for pod in pods:
        if not pod.pvc_names:
            continue
        try:
            reqs = vt.get_requirements(pod)
        except VolumeTopologyError:
            continue
        if reqs:
            out[pod.uid] = reqs
    return out
