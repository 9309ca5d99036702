"""``karpenter.sh/v1``: NodePool and NodeClaim as immutable attrs values.

Every class reads a Kubernetes JSON/YAML dict with ``from_dict`` and writes one with
``to_dict``, and the round trip is lossless: fields we do not model are kept in ``extra``,
lists and maps that were written empty stay empty, and durations keep the exact string the
user wrote. That lets tools read, modify and re-apply objects without GitOps diffs.

``from_dict`` checks types only (a clear :class:`APIError` naming the field when a value has
the wrong shape); the CRD/CEL rules and runtime validation live in
:mod:`karpenter_core.apis.validation`. Defaults are what the API server would add
(:func:`apply_defaults`, driven by the CRD schema itself); apply them with ``with_defaults()``
or ``from_dict(d, defaults=True)`` when reading objects that did not come from an API server.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from attrs import field, frozen

from karpenter_core.apis import labels as wk
from karpenter_core.apis.base import (
    APIError,
    Condition,
    F,
    Model,
    ObjectMeta,
    ObjectModel,
    OwnerReference,
    apply_defaults,
    find_condition,
    format_time,
    object_fields,
    parse_time,
    root_ready,
)
from karpenter_core.apis.durations import CronError, NillableDuration, parse_cron

GROUP = "karpenter.sh"
VERSION = "v1"
API_VERSION = f"{GROUP}/{VERSION}"

# Operators of NodeSelectorRequirementWithMinValues (Gte/Lte are Karpenter additions).
OP_IN = "In"
OP_NOT_IN = "NotIn"
OP_EXISTS = "Exists"
OP_DOES_NOT_EXIST = "DoesNotExist"
OP_GT = "Gt"
OP_LT = "Lt"
OP_GTE = "Gte"
OP_LTE = "Lte"
SUPPORTED_OPERATORS: tuple[str, ...] = (
    OP_IN,
    OP_NOT_IN,
    OP_EXISTS,
    OP_DOES_NOT_EXIST,
    OP_GT,
    OP_LT,
    OP_GTE,
    OP_LTE,
)

CONSOLIDATION_POLICY_WHEN_EMPTY = "WhenEmpty"
CONSOLIDATION_POLICY_WHEN_EMPTY_OR_UNDERUTILIZED = "WhenEmptyOrUnderutilized"
CONSOLIDATION_POLICY_BALANCED = "Balanced"
BALANCED_K = 2
"""Balanced consolidation approves a move when its score is at least 1/BALANCED_K."""

DISRUPTION_REASON_UNDERUTILIZED = "Underutilized"
DISRUPTION_REASON_EMPTY = "Empty"
DISRUPTION_REASON_DRIFTED = "Drifted"

# NodePool conditions
CONDITION_READY = "Ready"
CONDITION_VALIDATION_SUCCEEDED = "ValidationSucceeded"
CONDITION_NODE_CLASS_READY = "NodeClassReady"
CONDITION_NODE_REGISTRATION_HEALTHY = "NodeRegistrationHealthy"
NODEPOOL_READY_DEPENDENTS = (CONDITION_VALIDATION_SUCCEEDED, CONDITION_NODE_CLASS_READY)

# NodeClaim conditions
CONDITION_LAUNCHED = "Launched"
CONDITION_REGISTERED = "Registered"
CONDITION_INITIALIZED = "Initialized"
CONDITION_CONSOLIDATABLE = "Consolidatable"
CONDITION_DRIFTED = "Drifted"
CONDITION_DRAINED = "Drained"
CONDITION_VOLUMES_DETACHED = "VolumesDetached"
CONDITION_INSTANCE_TERMINATING = "InstanceTerminating"
CONDITION_CONSISTENT_STATE_FOUND = "ConsistentStateFound"
CONDITION_DISRUPTION_REASON = "DisruptionReason"
NODECLAIM_READY_DEPENDENTS = (CONDITION_LAUNCHED, CONDITION_REGISTERED, CONDITION_INITIALIZED)

MAX_INT32 = 2**31 - 1


@frozen
class Taint(Model):
    """A core/v1 Taint in API form (the scheduling algebra has its own ``Taint``)."""

    key: str = ""
    effect: str = ""
    value: str | None = None
    time_added: str | None = None

    FIELDS = (
        F("key", "key", "str"),
        F("value", "value", "str"),
        F("effect", "effect", "str"),
        F("timeAdded", "time_added", "str"),
    )


@frozen
class NodeSelectorRequirementWithMinValues(Model):
    """A requirement on a node label, optionally demanding ``min_values`` distinct values."""

    key: str = ""
    operator: str = ""
    values: tuple[str, ...] = ()
    min_values: int | None = None

    FIELDS = (
        F("key", "key", "str"),
        F("operator", "operator", "str"),
        F("values", "values", "strs"),
        F("minValues", "min_values", "int"),
    )


@frozen
class NodeClassReference(Model):
    """Points at the provider NodeClass (``group``, ``kind``, ``name``)."""

    group: str = ""
    kind: str = ""
    name: str = ""

    FIELDS = (F("group", "group", "str"), F("kind", "kind", "str"), F("name", "name", "str"))

    @property
    def group_kind(self) -> tuple[str, str]:
        return (self.group, self.kind)


# --- NodePool -------------------------------------------------------------------------------


@frozen
class Budget(Model):
    """How many nodes may be disrupting at once, optionally only on a cron schedule."""

    nodes: str = "10%"
    reasons: tuple[str, ...] | None = None
    schedule: str | None = None
    duration: NillableDuration | None = None

    FIELDS = (
        F("nodes", "nodes", "str"),
        F("reasons", "reasons", "strs"),
        F("schedule", "schedule", "str"),
        F("duration", "duration", "dur"),
    )

    def is_active(self, now: datetime) -> bool:
        """Whether the budget applies at ``now``; raises :class:`CronError` on a bad schedule.

        A budget without a schedule is always active. Otherwise it is active when the next
        schedule hit after ``now - duration`` is not after ``now`` (all in UTC).
        """
        if self.schedule is None and self.duration is None:
            return True
        cron = parse_cron(self.schedule or "")
        nanos = self.duration.nanos if self.duration and self.duration.nanos else 0
        now_utc = now.astimezone(UTC)
        checkpoint = now_utc - timedelta(microseconds=nanos // 1000)
        return not cron.next(checkpoint) > now_utc

    def allowed_disruptions(self, now: datetime, num_nodes: int) -> int:
        """Nodes this budget allows to disrupt; MaxInt32 when inactive.

        Raises :class:`ValueError` for an unparsable schedule or ``nodes`` value (callers
        fail closed, see :meth:`NodePool.allowed_disruptions`).
        """
        if not self.is_active(now):
            return MAX_INT32
        return scaled_value(self.nodes, num_nodes)


def scaled_value(value: str, total: int) -> int:
    """``"10"`` -> 10; ``"10%"`` of ``total`` rounded **up** (as for PDB maxUnavailable)."""
    text = value.strip()
    if text.endswith("%"):
        pct = text[:-1]
        if not pct.lstrip("-").isdigit():
            raise ValueError(f"invalid percentage {value!r}")
        return math.ceil(int(pct) * total / 100)
    if not text.lstrip("-").isdigit():
        raise ValueError(f"invalid budget value {value!r}: expected an integer or a percentage")
    return int(text)


@frozen
class Disruption(Model):
    consolidate_after: NillableDuration | None = None
    consolidation_policy: str | None = None
    budgets: tuple[Budget, ...] = ()

    FIELDS = (
        F("consolidateAfter", "consolidate_after", "ndur"),
        F("consolidationPolicy", "consolidation_policy", "str"),
        F("budgets", "budgets", "objs", Budget),
    )


@frozen
class TemplateMetadata(Model):
    """``spec.template.metadata``: only labels and annotations."""

    labels: dict[str, str] = field(factory=dict)
    annotations: dict[str, str] = field(factory=dict)

    FIELDS = (F("labels", "labels", "strmap"), F("annotations", "annotations", "strmap"))


@frozen
class NodeClaimTemplateSpec(Model):
    requirements: tuple[NodeSelectorRequirementWithMinValues, ...] = ()
    node_class_ref: NodeClassReference | None = None
    taints: tuple[Taint, ...] = ()
    startup_taints: tuple[Taint, ...] = ()
    termination_grace_period: NillableDuration | None = None
    expire_after: NillableDuration | None = None

    FIELDS = (
        F("taints", "taints", "objs", Taint),
        F("startupTaints", "startup_taints", "objs", Taint),
        F("requirements", "requirements", "objs", NodeSelectorRequirementWithMinValues),
        F("nodeClassRef", "node_class_ref", "obj", NodeClassReference),
        F("terminationGracePeriod", "termination_grace_period", "dur"),
        F("expireAfter", "expire_after", "ndur"),
    )


@frozen
class NodeClaimTemplate(Model):
    metadata: TemplateMetadata | None = None
    spec: NodeClaimTemplateSpec = field(factory=NodeClaimTemplateSpec)

    FIELDS = (
        F("metadata", "metadata", "obj", TemplateMetadata),
        F("spec", "spec", "obj", NodeClaimTemplateSpec),
    )

    @property
    def labels(self) -> dict[str, str]:
        return self.metadata.labels if self.metadata else {}

    @property
    def annotations(self) -> dict[str, str]:
        return self.metadata.annotations if self.metadata else {}

    def to_nodeclaim(self) -> NodeClaim:
        """The NodeClaim this template stamps out (labels, annotations and spec copied)."""
        s = self.spec
        return NodeClaim(
            metadata=ObjectMeta(labels=dict(self.labels), annotations=dict(self.annotations)),
            spec=NodeClaimSpec(
                taints=s.taints,
                startup_taints=s.startup_taints,
                requirements=s.requirements,
                node_class_ref=s.node_class_ref,
                termination_grace_period=s.termination_grace_period,
                expire_after=s.expire_after,
            ),
        )


@frozen
class NodePoolSpec(Model):
    template: NodeClaimTemplate = field(factory=NodeClaimTemplate)
    disruption: Disruption | None = None
    limits: dict[str, str | int | float] = field(factory=dict)
    weight: int | None = None
    replicas: int | None = None

    FIELDS = (
        F("template", "template", "obj", NodeClaimTemplate),
        F("disruption", "disruption", "obj", Disruption),
        F("limits", "limits", "quantities"),
        F("weight", "weight", "int"),
        F("replicas", "replicas", "int"),
    )


@frozen
class NodePoolStatus(Model):
    resources: dict[str, str | int | float] = field(factory=dict)
    nodes: int | None = None
    node_class_observed_generation: int | None = None
    conditions: tuple[Condition, ...] = ()

    FIELDS = (
        F("resources", "resources", "quantities"),
        F("nodes", "nodes", "int"),
        F("nodeClassObservedGeneration", "node_class_observed_generation", "int"),
        F("conditions", "conditions", "objs", Condition),
    )


@frozen
class NodePool(ObjectModel):
    """A ``karpenter.sh/v1`` NodePool."""

    metadata: ObjectMeta = field(factory=ObjectMeta)
    spec: NodePoolSpec = field(factory=NodePoolSpec)
    status: NodePoolStatus | None = None
    api_version: str = API_VERSION
    kind: str = "NodePool"

    FIELDS = object_fields(NodePoolSpec, NodePoolStatus)

    @property
    def is_static(self) -> bool:
        """Static NodePools (``replicas`` set) keep a fixed node count."""
        return self.spec.replicas is not None

    @property
    def weight(self) -> int:
        return self.spec.weight or 0

    def ready(self) -> bool:
        """Ready when both ValidationSucceeded and NodeClassReady are True."""
        c = self.condition(CONDITION_READY)
        if c is not None:
            return c.is_true
        return root_ready(self.conditions, NODEPOOL_READY_DEPENDENTS) == "True"

    def hash(self) -> str:
        """Static-drift hash of ``spec.template`` (version :data:`labels.NODEPOOL_HASH_VERSION`).

        Covers template labels and annotations, taints and startup taints (as sets),
        nodeClassRef, terminationGracePeriod and expireAfter; requirements are excluded
        (they drift separately) and zero values count as unset, like upstream.
        """
        return nodepool_template_hash(self.spec.template)

    def allowed_disruptions(self, now: datetime, num_nodes: int, reason: str) -> int:
        """Fewest nodes any active budget matching ``reason`` allows; 0 when a budget is
        invalid (fail closed); MaxInt32 when no budget applies."""
        allowed = MAX_INT32
        budgets = self.spec.disruption.budgets if self.spec.disruption else ()
        for budget in budgets:
            try:
                value = budget.allowed_disruptions(now, num_nodes)
            except (CronError, ValueError):
                value = 0
            # An explicitly empty ``reasons`` list matches nothing, as upstream (nil != []).
            if budget.reasons is None or reason in budget.reasons:
                allowed = min(allowed, value)
        return allowed


def _taint_set(taints: Sequence[Taint]) -> list[list[str]]:
    return sorted(
        [[t.key, t.value or "", t.effect, t.time_added or ""] for t in taints if t.key or t.effect]
    )


def nodepool_template_hash(template: NodeClaimTemplate) -> str:
    s = template.spec
    doc: dict[str, Any] = {}
    if template.labels:
        doc["labels"] = dict(sorted(template.labels.items()))
    if template.annotations:
        doc["annotations"] = dict(sorted(template.annotations.items()))
    if s.taints:
        doc["taints"] = _taint_set(s.taints)
    if s.startup_taints:
        doc["startupTaints"] = _taint_set(s.startup_taints)
    if s.node_class_ref is not None:
        ref = s.node_class_ref
        doc["nodeClassRef"] = [ref.group, ref.kind, ref.name]
    if s.termination_grace_period is not None and s.termination_grace_period.nanos:
        doc["terminationGracePeriod"] = s.termination_grace_period.nanos
    if s.expire_after is not None and s.expire_after.nanos:
        doc["expireAfter"] = s.expire_after.nanos
    digest = hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).digest()
    return str(int.from_bytes(digest[:8], "big"))


# --- NodeClaim -------------------------------------------------------------------------------


@frozen
class ResourceRequirements(Model):
    requests: dict[str, str | int | float] = field(factory=dict)

    FIELDS = (F("requests", "requests", "quantities"),)


@frozen
class NodeClaimSpec(Model):
    requirements: tuple[NodeSelectorRequirementWithMinValues, ...] = ()
    node_class_ref: NodeClassReference | None = None
    taints: tuple[Taint, ...] = ()
    startup_taints: tuple[Taint, ...] = ()
    resources: ResourceRequirements | None = None
    termination_grace_period: NillableDuration | None = None
    expire_after: NillableDuration | None = None

    FIELDS = (
        F("taints", "taints", "objs", Taint),
        F("startupTaints", "startup_taints", "objs", Taint),
        F("requirements", "requirements", "objs", NodeSelectorRequirementWithMinValues),
        F("resources", "resources", "obj", ResourceRequirements),
        F("nodeClassRef", "node_class_ref", "obj", NodeClassReference),
        F("terminationGracePeriod", "termination_grace_period", "dur"),
        F("expireAfter", "expire_after", "ndur"),
    )


@frozen
class NodeClaimStatus(Model):
    node_name: str | None = None
    provider_id: str | None = None
    image_id: str | None = None
    capacity: dict[str, str | int | float] = field(factory=dict)
    allocatable: dict[str, str | int | float] = field(factory=dict)
    conditions: tuple[Condition, ...] = ()
    last_pod_event_time: str | None = None

    FIELDS = (
        F("nodeName", "node_name", "str"),
        F("providerID", "provider_id", "str"),
        F("imageID", "image_id", "str"),
        F("capacity", "capacity", "quantities"),
        F("allocatable", "allocatable", "quantities"),
        F("conditions", "conditions", "objs", Condition),
        F("lastPodEventTime", "last_pod_event_time", "str"),
    )


@frozen
class NodeClaim(ObjectModel):
    """A ``karpenter.sh/v1`` NodeClaim: a request for one node, and its record."""

    metadata: ObjectMeta = field(factory=ObjectMeta)
    spec: NodeClaimSpec = field(factory=NodeClaimSpec)
    status: NodeClaimStatus | None = None
    api_version: str = API_VERSION
    kind: str = "NodeClaim"

    FIELDS = object_fields(NodeClaimSpec, NodeClaimStatus)

    @property
    def nodepool_name(self) -> str | None:
        return self.metadata.labels.get(wk.NODEPOOL_LABEL_KEY)

    @property
    def provider_id(self) -> str:
        return (self.status.provider_id or "") if self.status else ""

    def ready(self) -> bool:
        """Ready = Launched and Registered and Initialized."""
        c = self.condition(CONDITION_READY)
        if c is not None:
            return c.is_true
        return root_ready(self.conditions, NODECLAIM_READY_DEPENDENTS) == "True"


__all__ = [
    "API_VERSION",
    "APIError",
    "Budget",
    "Condition",
    "Disruption",
    "NodeClaim",
    "NodeClaimSpec",
    "NodeClaimStatus",
    "NodeClaimTemplate",
    "NodeClaimTemplateSpec",
    "NodeClassReference",
    "NodePool",
    "NodePoolSpec",
    "NodePoolStatus",
    "NodeSelectorRequirementWithMinValues",
    "ObjectMeta",
    "OwnerReference",
    "ResourceRequirements",
    "Taint",
    "TemplateMetadata",
    "apply_defaults",
    "find_condition",
    "format_time",
    "parse_time",
    "root_ready",
]
