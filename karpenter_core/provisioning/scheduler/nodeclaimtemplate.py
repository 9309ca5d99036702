"""NodeClaim templates: what a NodePool would launch, before any pod narrows it (§8.2).

The template's requirements are the pool's requirements (with minValues) intersected with its
template labels, its own name and NodeClass labels, and the two simulation-only labels
(``registered``/``initialized`` = true) so DaemonSets that select on them count.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

from attrs import frozen

from karpenter_core.apis.labels import (
    NODE_INITIALIZED_LABEL_KEY,
    NODE_REGISTERED_LABEL_KEY,
    NODEPOOL_HASH_ANNOTATION_KEY,
    NODEPOOL_HASH_VERSION,
    NODEPOOL_HASH_VERSION_ANNOTATION_KEY,
    NODEPOOL_LABEL_KEY,
)
from karpenter_core.apis.resources import parse_resource_list
from karpenter_core.apis.taints import Taint
from karpenter_core.apis.taints import tolerates as taints_tolerate
from karpenter_core.apis.v1 import NodePool
from karpenter_core.provisioning.scheduler import resourcelist as rl
from karpenter_core.provisioning.scheduler.instancetypes import (
    ITInfo,
    OptionSet,
    signature,
    sort_by_cpu,
)
from karpenter_core.scheduling.requirements import IN, Requirement, Requirements

SIMULATION_KEYS = frozenset({NODE_REGISTERED_LABEL_KEY, NODE_INITIALIZED_LABEL_KEY})
MAX_INSTANCE_TYPES = 600


class TemplateError(ValueError):
    """A NodePool the scheduler cannot read; the message names the pool and the field."""


def nodeclass_label_key(ref: Mapping[str, Any]) -> str:
    """Upstream ``NodeClassLabelKey``: ``<group>/<lower-case kind>``."""
    return f"{ref.get('group', '')}/{str(ref.get('kind', '')).lower()}"


@frozen
class TemplateBase:
    """What a NodePool stamps on every NodeClaim, read once per NodePool version: the
    scheduler builds a :class:`NodeClaimTemplate` per solve from it without re-reading the
    NodePool (its requirements are copied, the rest is never mutated)."""

    nodepool_name: str
    nodepool_uid: str
    weight: int
    is_static: bool
    limits: Mapping[str, int]
    """``spec.limits`` parsed (milli-units); empty when the pool has none."""
    spec: Mapping[str, Any]
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    taints: tuple[Taint, ...]
    startup_taints: tuple[Taint, ...]
    requirements: Requirements


_BASES: OrderedDict[tuple[str, str], tuple[NodePool, TemplateBase]] = OrderedDict()
_BASES_LOCK = threading.Lock()
_MAX_BASES = 4096


def template_base(nodepool: NodePool) -> TemplateBase:
    """The NodePool's :class:`TemplateBase`, read once per stored version: found by uid and
    resourceVersion, confirmed by the NodePool itself (the same model, as
    :func:`~karpenter_core.provisioning.nodepools.parse_nodepool` hands out, or an equal
    one: uids are unique only within one API server). A NodePool without either, from a
    manifest, is read each time. Raises :class:`TemplateError` naming the pool and the
    field."""
    meta = nodepool.metadata
    key = (meta.uid or "", meta.resource_version or "")
    if all(key):
        with _BASES_LOCK:
            found = _BASES.get(key)
            if found is not None:
                _BASES.move_to_end(key)
        if found is not None and (found[0] is nodepool or found[0] == nodepool):
            return found[1]
    base = _read(nodepool)
    if all(key):
        with _BASES_LOCK:
            _BASES[key] = (nodepool, base)
            while len(_BASES) > _MAX_BASES:
                _BASES.popitem(last=False)
    return base


def _read(nodepool: NodePool) -> TemplateBase:
    name = nodepool.name
    if not name:
        raise TemplateError("NodePool without metadata.name")
    where = f"NodePool {name!r}"
    template = nodepool.spec.template
    tspec = template.spec
    labels = {str(k): str(v) for k, v in template.labels.items()}
    annotations = {str(k): str(v) for k, v in template.annotations.items()}
    annotations[NODEPOOL_HASH_ANNOTATION_KEY] = nodepool.hash()
    annotations[NODEPOOL_HASH_VERSION_ANNOTATION_KEY] = NODEPOOL_HASH_VERSION
    labels[NODEPOOL_LABEL_KEY] = name
    spec = tspec.to_dict()
    ref = spec.get("nodeClassRef") or {}
    if ref.get("name"):
        labels[nodeclass_label_key(ref)] = str(ref["name"])
    try:
        taints = tuple(Taint.from_dict(t) for t in (spec.get("taints") or []))
        startup = tuple(Taint.from_dict(t) for t in (spec.get("startupTaints") or []))
    except (ValueError, TypeError, KeyError) as e:
        raise TemplateError(f"{where}: spec.template.spec.taints: {e}") from None
    try:
        reqs = Requirements.from_node_selector_requirements(tspec.requirements)
    except (ValueError, TypeError, KeyError) as e:
        raise TemplateError(f"{where}: spec.template.spec.requirements: {e}") from None
    reqs.add(*Requirements.from_labels(labels).values())
    reqs.add(Requirement.new(NODE_REGISTERED_LABEL_KEY, IN, ["true"]))
    reqs.add(Requirement.new(NODE_INITIALIZED_LABEL_KEY, IN, ["true"]))
    try:
        limits = parse_resource_list(nodepool.spec.limits or None)
    except ValueError as e:
        raise TemplateError(f"{where}: spec.limits: {e}") from None
    return TemplateBase(
        nodepool_name=name,
        nodepool_uid=nodepool.metadata.uid or "",
        weight=nodepool.weight,
        is_static=nodepool.is_static,
        limits=MappingProxyType(dict(limits)),
        spec=MappingProxyType(spec),
        labels=MappingProxyType(labels),
        annotations=MappingProxyType(annotations),
        taints=taints,
        startup_taints=startup,
        requirements=reqs,
    )


class NodeClaimTemplate:
    """Everything a new NodeClaim from this pool starts with, for one solve (the
    instance-type options are the solve's)."""

    def __init__(self, nodepool: NodePool) -> None:
        base = template_base(nodepool)
        self.base = base
        self.nodepool = nodepool
        self.nodepool_name: str = base.nodepool_name
        self.nodepool_uid: str = base.nodepool_uid
        self.weight: int = base.weight
        self.is_static = base.is_static
        self.limits: Mapping[str, int] = base.limits
        self.spec: Mapping[str, Any] = base.spec
        self.labels: dict[str, str] = dict(base.labels)
        self.annotations: dict[str, str] = dict(base.annotations)
        self.taints: tuple[Taint, ...] = base.taints
        self.startup_taints: tuple[Taint, ...] = base.startup_taints
        self.requirements: Requirements = base.requirements.copy()
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
        """Taint check for a pod's tolerations, cached: templates never change their taints.
        The solver asks it of every NodeClaim it scans for every pod, so a template without
        taints answers before building a key."""
        if not self.taints:
            return None
        key = tuple(tolerations)
        if key in self._tolerates_cache:
            return self._tolerates_cache[key]
        err = taints_tolerate(self.taints, key)
        self._tolerates_cache[key] = err
        return err
