"""NodeClaim templates: what a NodePool would launch, before any pod narrows it (§8.2).

The template's requirements are the pool's requirements (with minValues) intersected with its
template labels, its own name and NodeClass labels, and the two simulation-only labels
(``registered``/``initialized`` = true) so DaemonSets that select on them count.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from karpenter_core.apis.labels import (
    NODE_INITIALIZED_LABEL_KEY,
    NODE_REGISTERED_LABEL_KEY,
    NODEPOOL_HASH_ANNOTATION_KEY,
    NODEPOOL_HASH_VERSION,
    NODEPOOL_HASH_VERSION_ANNOTATION_KEY,
    NODEPOOL_LABEL_KEY,
)
from karpenter_core.provisioning.scheduler import resourcelist as rl
from karpenter_core.provisioning.scheduler.instancetypes import (
    ITInfo,
    OptionSet,
    signature,
    sort_by_cpu,
)
from karpenter_core.scheduling.requirements import IN, Requirement, Requirements
from karpenter_core.scheduling.taints import Taint

SIMULATION_KEYS = frozenset({NODE_REGISTERED_LABEL_KEY, NODE_INITIALIZED_LABEL_KEY})
MAX_INSTANCE_TYPES = 600


class TemplateError(ValueError):
    """A NodePool the scheduler cannot read; the message names the pool and the field."""


def nodepool_dict(nodepool: Any) -> dict[str, Any]:
    """The NodePool in its Kubernetes JSON shape (accepts the API model or a plain dict)."""
    if isinstance(nodepool, Mapping):
        return dict(nodepool)
    to_dict = getattr(nodepool, "to_dict", None)
    if callable(to_dict):
        d = to_dict()
        if isinstance(d, Mapping):
            return dict(d)
    raise TemplateError(f"cannot read NodePool {nodepool!r}: expected a NodePool or a mapping")


def nodeclass_label_key(ref: Mapping[str, Any]) -> str:
    """Upstream ``NodeClassLabelKey``: ``<group>/<lower-case kind>``."""
    return f"{ref.get('group', '')}/{str(ref.get('kind', '')).lower()}"


def template_hash(nodepool: Any, d: Mapping[str, Any]) -> str | None:
    """The NodePool's template hash, computed (as upstream's template does) rather than
    read from the annotation the hash controller may not have written yet, so every new
    NodeClaim — provisioned, planned by ``karpenter schedule`` or a disruption replacement —
    carries what static drift compares. A pool the API model cannot read falls back to its
    annotation (or none)."""
    from karpenter_core.apis.v1 import APIError, NodePool

    try:
        model = nodepool if isinstance(nodepool, NodePool) else NodePool.from_dict(d)
        return model.hash()
    except (APIError, ValueError, TypeError, KeyError):
        annotations = (d.get("metadata") or {}).get("annotations") or {}
        value = annotations.get(NODEPOOL_HASH_ANNOTATION_KEY)
        return str(value) if value else None


class NodeClaimTemplate:
    """Everything a new NodeClaim from this pool starts with."""

    def __init__(self, nodepool: Any) -> None:
        d = nodepool_dict(nodepool)
        meta = d.get("metadata") or {}
        self.nodepool_name: str = str(meta.get("name") or "")
        if not self.nodepool_name:
            raise TemplateError("NodePool without metadata.name")
        where = f"NodePool {self.nodepool_name!r}"
        self.nodepool_uid: str = str(meta.get("uid") or "")
        spec = d.get("spec") or {}
        self.weight: int = int(spec.get("weight") or 0)
        self.is_static = spec.get("replicas") is not None
        self.raw_limits: Mapping[str, Any] = spec.get("limits") or {}
        template = spec.get("template") or {}
        tmeta = template.get("metadata") or {}
        tspec = template.get("spec") or {}
        self.spec: dict[str, Any] = dict(tspec)
        self.labels: dict[str, str] = {
            str(k): str(v) for k, v in (tmeta.get("labels") or {}).items()
        }
        self.annotations: dict[str, str] = {
            str(k): str(v) for k, v in (tmeta.get("annotations") or {}).items()
        }
        hash_value = template_hash(nodepool, d)
        if hash_value:
            self.annotations[NODEPOOL_HASH_ANNOTATION_KEY] = str(hash_value)
            self.annotations[NODEPOOL_HASH_VERSION_ANNOTATION_KEY] = NODEPOOL_HASH_VERSION
        self.labels[NODEPOOL_LABEL_KEY] = self.nodepool_name
        ref = tspec.get("nodeClassRef") or {}
        if ref.get("name"):
            self.labels[nodeclass_label_key(ref)] = str(ref["name"])
        try:
            self.taints: tuple[Taint, ...] = tuple(
                Taint.from_dict(t) for t in (tspec.get("taints") or [])
            )
            self.startup_taints: tuple[Taint, ...] = tuple(
                Taint.from_dict(t) for t in (tspec.get("startupTaints") or [])
            )
        except (ValueError, TypeError, KeyError) as e:
            raise TemplateError(f"{where}: spec.template.spec.taints: {e}") from None
        try:
            reqs = Requirements.from_node_selector_requirements(tspec.get("requirements") or [])
        except (ValueError, TypeError, KeyError) as e:
            raise TemplateError(f"{where}: spec.template.spec.requirements: {e}") from None
        reqs.add(*Requirements.from_labels(self.labels).values())
        reqs.add(Requirement.new(NODE_REGISTERED_LABEL_KEY, IN, ["true"]))
        reqs.add(Requirement.new(NODE_INITIALIZED_LABEL_KEY, IN, ["true"]))
        self.requirements: Requirements = reqs
        self.instance_type_options: list[ITInfo] = []
        self.optset: OptionSet | None = None
        self.max_capacity: dict[str, int] = {}
        self._tolerates_cache: dict[Any, object | None] = {}

    def set_instance_type_options(self, options: list[ITInfo]) -> None:
        """Options sorted by CPU once, so every NodeClaim's filter can bisect them."""
        self.instance_type_options = sort_by_cpu(options)
        self.optset = OptionSet(self.instance_type_options, sig=signature(self.requirements))
        self.max_capacity = rl.max_of(*(i.capacity for i in options))
        self._suffix_max_capacity: dict[str, list[int]] = {}

    def max_capacity_of(self, options: list[ITInfo], keys: Iterable[str]) -> dict[str, int]:
        """Largest capacity per key among ``options`` (upstream ``subtractMax``'s bound).

        NodeClaims usually keep a suffix of the CPU-sorted template options (smaller types
        drop out as pods arrive); for a suffix this is a lookup in precomputed suffix maxima.
        """
        full = self.instance_type_options
        n, total = len(options), len(full)
        start = total - n
        if n and n <= total and options[0] is full[start] and options[-1] is full[-1]:
            out = {}
            for k in keys:
                arr = self._suffix_max_capacity.get(k)
                if arr is None:
                    arr = [0] * total
                    running = 0
                    for j in range(total - 1, -1, -1):
                        running = max(running, full[j].capacity.get(k, 0))
                        arr[j] = running
                    self._suffix_max_capacity[k] = arr
                out[k] = arr[start]
            return out
        return {k: max((i.capacity.get(k, 0) for i in options), default=0) for k in keys}

    def has_prefer_no_schedule_taint(self) -> bool:
        return any(t.effect == "PreferNoSchedule" for t in self.taints)

    def tolerates(self, tolerations: Sequence[Any]) -> object | None:
        """Taint check for a pod's tolerations, cached: templates never change their taints."""
        from karpenter_core.scheduling.taints import tolerates

        key = tuple(tolerations)
        if key in self._tolerates_cache:
            return self._tolerates_cache[key]
        err = tolerates(self.taints, key)
        self._tolerates_cache[key] = err
        return err
