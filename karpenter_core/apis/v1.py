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

import copy
import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar, Self, TypeVar

import attrs
from attrs import field, frozen

from karpenter_core.apis import labels as wk
from karpenter_core.apis.crds.schema import Schema, object_schema
from karpenter_core.apis.durations import (
    CronError,
    DurationError,
    NillableDuration,
    parse_cron,
    parse_go_duration,
)

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


class APIError(ValueError):
    """An object whose shape does not fit the API type; the message names the field path."""


# --- generic (de)serialisation --------------------------------------------------------------


@frozen
class F:
    """How one JSON field maps to one attribute.

    ``kind`` is one of: ``str``, ``int``, ``bool``, ``strs`` (list of strings), ``strmap``,
    ``quantities`` (ResourceList: name -> string or number), ``raw`` (any JSON, deep-copied),
    ``raws`` (list of any JSON), ``obj``/``objs`` (nested model / list of them), ``ndur``
    (NillableDuration, ``Never`` allowed) and ``dur`` (Go duration, ``Never`` rejected).
    """

    json: str
    attr: str
    kind: str
    sub: Any = None


_COLLECTION_KINDS = frozenset({"strs", "strmap", "quantities", "raws", "objs"})
_EMPTY: dict[str, Any] = {"strs": (), "raws": (), "objs": (), "strmap": {}, "quantities": {}}


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, list | tuple):
        return "array"
    return type(value).__name__


def _err(path: str, expected: str, value: Any) -> APIError:
    return APIError(f"{path}: expected {expected}, got {_describe(value)}")


def _load_value(value: Any, f: F, path: str) -> Any:
    kind = f.kind
    if kind == "str":
        if not isinstance(value, str):
            raise _err(path, "a string", value)
        return value
    if kind == "int":
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise _err(path, "an integer", value)
        if isinstance(value, float):
            if not value.is_integer():
                raise APIError(f"{path}: expected an integer, got {value}")
            return int(value)
        return value
    if kind == "bool":
        if not isinstance(value, bool):
            raise _err(path, "a boolean", value)
        return value
    if kind == "strs":
        if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
            raise _err(path, "a list of strings", value)
        return tuple(value)
    if kind == "strmap":
        if not isinstance(value, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in value.items()
        ):
            raise _err(path, "a map of strings to strings", value)
        return dict(value)
    if kind == "quantities":
        if not isinstance(value, Mapping):
            raise _err(path, "a map of resource names to quantities", value)
        out: dict[str, str | int | float] = {}
        for k, v in value.items():
            if isinstance(v, bool) or not isinstance(v, str | int | float):
                raise _err(f"{path}.{k}", "a quantity (string or number)", v)
            out[str(k)] = v
        return out
    if kind == "raw":
        return copy.deepcopy(value)
    if kind == "raws":
        if not isinstance(value, list | tuple):
            raise _err(path, "a list", value)
        return tuple(copy.deepcopy(v) for v in value)
    if kind == "obj":
        return f.sub.from_dict(value, path=path)
    if kind == "objs":
        if not isinstance(value, list | tuple):
            raise _err(path, "a list", value)
        return tuple(f.sub.from_dict(v, path=f"{path}[{i}]") for i, v in enumerate(value))
    if kind in ("ndur", "dur"):
        if not isinstance(value, str):
            raise _err(path, "a duration string", value)
        if kind == "dur" and value == "Never":
            raise APIError(f'{path}: "Never" is not allowed here; give a duration like "1h"')
        try:
            return NillableDuration.parse(value)
        except DurationError as e:
            raise APIError(f"{path}: {e}") from None
    raise AssertionError(f"unknown field kind {kind}")  # pragma: no cover


def _dump_value(value: Any, f: F) -> Any:
    kind = f.kind
    if kind in ("strs", "raws"):
        return [copy.deepcopy(v) for v in value]
    if kind in ("strmap", "quantities"):
        return dict(value)
    if kind == "raw":
        return copy.deepcopy(value)
    if kind == "obj":
        return value.to_dict()
    if kind == "objs":
        return [v.to_dict() for v in value]
    if kind in ("ndur", "dur"):
        return value.to_raw()
    return value


M = TypeVar("M", bound="Model")


class Model:
    """Mixin giving attrs classes lossless ``from_dict``/``to_dict`` from a ``FIELDS`` table.

    Subclasses declare ``FIELDS`` and two trailing attributes: ``extra`` (unknown JSON keys,
    kept verbatim) and ``explicit_empty`` (JSON keys whose list/map value was written empty,
    so it is written back instead of omitted).
    """

    FIELDS: ClassVar[tuple[F, ...]] = ()
    __slots__ = ()
    extra: dict[str, Any]
    explicit_empty: frozenset[str]

    @classmethod
    def from_dict(cls, data: Any, *, path: str = "") -> Self:
        where = path or cls.__name__
        if not isinstance(data, Mapping):
            raise _err(where, "an object", data)
        kwargs: dict[str, Any] = {}
        known: set[str] = set()
        empty: set[str] = set()
        for f in cls.FIELDS:
            known.add(f.json)
            if f.json not in data:
                continue
            value = data[f.json]
            sub_path = f"{path}.{f.json}" if path else f.json
            if value is None:
                # JSON null is "unset" for the API server; remember nothing.
                continue
            loaded = _load_value(value, f, sub_path)
            if f.kind in _COLLECTION_KINDS and not loaded:
                empty.add(f.json)
            kwargs[f.attr] = loaded
        kwargs["extra"] = {k: copy.deepcopy(v) for k, v in data.items() if k not in known}
        kwargs["explicit_empty"] = frozenset(empty)
        return cls(**kwargs)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        empty = self.explicit_empty
        for f in self.FIELDS:
            value = getattr(self, f.attr)
            if value is None:
                continue
            if f.kind in _COLLECTION_KINDS and not value and f.json not in empty:
                continue
            out[f.json] = _dump_value(value, f)
        for k, v in self.extra.items():
            out[k] = copy.deepcopy(v)
        return out


# --- defaulting -------------------------------------------------------------------------------


def apply_defaults(obj: Mapping[str, Any]) -> dict[str, Any]:
    """Return a copy of ``obj`` with the CRD's defaults filled in, as the API server does.

    A missing property that has a ``default`` gets it, and defaulting then continues inside
    the defaulted value (so an absent ``disruption`` becomes ``{consolidateAfter: 0s,
    consolidationPolicy: WhenEmptyOrUnderutilized, budgets: [{nodes: 10%}]}``). Objects of
    kinds without a core CRD are returned unchanged (copied).
    """
    out = copy.deepcopy(dict(obj))
    schema = object_schema(str(out.get("apiVersion", "")), str(out.get("kind", "")))
    if schema is not None:
        _default_into(out, schema)
    return out


def _default_into(value: Any, schema: Schema) -> None:
    if isinstance(value, dict):
        props: Mapping[str, Schema] = schema.get("properties", {})
        for name, sub in props.items():
            if "default" in sub and (name not in value or value[name] is None):
                value[name] = copy.deepcopy(sub["default"])
        for name, item in value.items():
            if name in props:
                _default_into(item, props[name])
            elif isinstance(schema.get("additionalProperties"), Mapping):
                _default_into(item, schema["additionalProperties"])
    elif isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        for item in value:
            _default_into(item, schema["items"])


class DefaultableModel(Model):
    __slots__ = ()

    @classmethod
    def from_dict(cls, data: Any, *, path: str = "", defaults: bool = False) -> Self:
        if defaults and isinstance(data, Mapping):
            data = apply_defaults(data)
        return super().from_dict(data, path=path)

    def with_defaults(self) -> Self:
        """A copy with the API server's defaults applied (fields already set are kept)."""
        return type(self).from_dict(apply_defaults(self.to_dict()))


# --- shared pieces ----------------------------------------------------------------------------


def parse_time(value: str | None) -> datetime | None:
    """Parse an RFC 3339 timestamp (``2024-01-02T03:04:05Z``) into an aware datetime."""
    if not value:
        return None
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        raise APIError(f"invalid RFC 3339 timestamp {value!r}") from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def format_time(value: datetime) -> str:
    """Format a datetime the way Kubernetes writes ``metav1.Time`` (UTC, seconds)."""
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@frozen
class OwnerReference(Model):
    api_version: str = ""
    kind: str = ""
    name: str = ""
    uid: str = ""
    controller: bool | None = None
    block_owner_deletion: bool | None = None
    extra: dict[str, Any] = field(factory=dict, kw_only=True, repr=False)
    explicit_empty: frozenset[str] = field(default=frozenset(), kw_only=True, eq=False, repr=False)

    FIELDS = (
        F("apiVersion", "api_version", "str"),
        F("kind", "kind", "str"),
        F("name", "name", "str"),
        F("uid", "uid", "str"),
        F("controller", "controller", "bool"),
        F("blockOwnerDeletion", "block_owner_deletion", "bool"),
    )


@frozen
class ObjectMeta(Model):
    """The parts of ``metav1.ObjectMeta`` controllers read; the rest stays in ``extra``."""

    name: str | None = None
    generate_name: str | None = None
    namespace: str | None = None
    uid: str | None = None
    resource_version: str | None = None
    generation: int | None = None
    creation_timestamp: str | None = None
    deletion_timestamp: str | None = None
    labels: dict[str, str] = field(factory=dict)
    annotations: dict[str, str] = field(factory=dict)
    finalizers: tuple[str, ...] = ()
    owner_references: tuple[OwnerReference, ...] = ()
    extra: dict[str, Any] = field(factory=dict, kw_only=True, repr=False)
    explicit_empty: frozenset[str] = field(default=frozenset(), kw_only=True, eq=False, repr=False)

    FIELDS = (
        F("name", "name", "str"),
        F("generateName", "generate_name", "str"),
        F("namespace", "namespace", "str"),
        F("uid", "uid", "str"),
        F("resourceVersion", "resource_version", "str"),
        F("generation", "generation", "int"),
        F("creationTimestamp", "creation_timestamp", "str"),
        F("deletionTimestamp", "deletion_timestamp", "str"),
        F("labels", "labels", "strmap"),
        F("annotations", "annotations", "strmap"),
        F("finalizers", "finalizers", "strs"),
        F("ownerReferences", "owner_references", "objs", OwnerReference),
    )

    @property
    def created_at(self) -> datetime | None:
        return parse_time(self.creation_timestamp)

    @property
    def deleted_at(self) -> datetime | None:
        return parse_time(self.deletion_timestamp)


@frozen
class Condition(Model):
    """An operatorpkg status condition (``type``, ``status`` True/False/Unknown, ...)."""

    type: str = ""
    status: str = "Unknown"
    reason: str | None = None
    message: str | None = None
    last_transition_time: str | None = None
    observed_generation: int | None = None
    extra: dict[str, Any] = field(factory=dict, kw_only=True, repr=False)
    explicit_empty: frozenset[str] = field(default=frozenset(), kw_only=True, eq=False, repr=False)

    FIELDS = (
        F("type", "type", "str"),
        F("status", "status", "str"),
        F("observedGeneration", "observed_generation", "int"),
        F("lastTransitionTime", "last_transition_time", "str"),
        F("reason", "reason", "str"),
        F("message", "message", "str"),
    )

    @property
    def is_true(self) -> bool:
        return self.status == "True"

    @property
    def is_false(self) -> bool:
        return self.status == "False"

    @property
    def is_unknown(self) -> bool:
        return self.status not in ("True", "False")

    @property
    def transitioned_at(self) -> datetime | None:
        return parse_time(self.last_transition_time)


def find_condition(conditions: Sequence[Condition], type_: str) -> Condition | None:
    """The condition of ``type_``, or ``None``."""
    for c in conditions:
        if c.type == type_:
            return c
    return None


def set_condition(
    conditions: Sequence[Condition], new: Condition, now: datetime | None = None
) -> tuple[Condition, ...]:
    """Replace (or add) the condition of ``new.type``.

    ``lastTransitionTime`` moves only when the status changes, so "how long has this been
    Unknown" questions (liveness, consolidateAfter) stay answerable.
    """
    now = now or datetime.now(UTC)
    old = find_condition(conditions, new.type)
    if old is not None and old.status == new.status and old.last_transition_time:
        new = attrs.evolve(new, last_transition_time=old.last_transition_time)
    elif new.last_transition_time is None or (old is not None and old.status != new.status):
        new = attrs.evolve(new, last_transition_time=format_time(now))
    out = [c for c in conditions if c.type != new.type]
    out.append(new)
    return tuple(out)


def root_ready(conditions: Sequence[Condition], dependents: Sequence[str]) -> str:
    """``Ready`` status from dependent conditions: True only when all are True, False when
    any is False, Unknown otherwise (operatorpkg ``NewReadyConditions``)."""
    statuses = []
    for t in dependents:
        c = find_condition(conditions, t)
        statuses.append(c.status if c else "Unknown")
    if all(s == "True" for s in statuses):
        return "True"
    if any(s == "False" for s in statuses):
        return "False"
    return "Unknown"


@frozen
class Taint(Model):
    """A core/v1 Taint in API form (the scheduling algebra has its own ``Taint``)."""

    key: str = ""
    effect: str = ""
    value: str | None = None
    time_added: str | None = None
    extra: dict[str, Any] = field(factory=dict, kw_only=True, repr=False)
    explicit_empty: frozenset[str] = field(default=frozenset(), kw_only=True, eq=False, repr=False)

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
    extra: dict[str, Any] = field(factory=dict, kw_only=True, repr=False)
    explicit_empty: frozenset[str] = field(default=frozenset(), kw_only=True, eq=False, repr=False)

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
    extra: dict[str, Any] = field(factory=dict, kw_only=True, repr=False)
    explicit_empty: frozenset[str] = field(default=frozenset(), kw_only=True, eq=False, repr=False)

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
    extra: dict[str, Any] = field(factory=dict, kw_only=True, repr=False)
    explicit_empty: frozenset[str] = field(default=frozenset(), kw_only=True, eq=False, repr=False)

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
    extra: dict[str, Any] = field(factory=dict, kw_only=True, repr=False)
    explicit_empty: frozenset[str] = field(default=frozenset(), kw_only=True, eq=False, repr=False)

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
    extra: dict[str, Any] = field(factory=dict, kw_only=True, repr=False)
    explicit_empty: frozenset[str] = field(default=frozenset(), kw_only=True, eq=False, repr=False)

    FIELDS = (F("labels", "labels", "strmap"), F("annotations", "annotations", "strmap"))


@frozen
class NodeClaimTemplateSpec(Model):
    requirements: tuple[NodeSelectorRequirementWithMinValues, ...] = ()
    node_class_ref: NodeClassReference | None = None
    taints: tuple[Taint, ...] = ()
    startup_taints: tuple[Taint, ...] = ()
    termination_grace_period: NillableDuration | None = None
    expire_after: NillableDuration | None = None
    extra: dict[str, Any] = field(factory=dict, kw_only=True, repr=False)
    explicit_empty: frozenset[str] = field(default=frozenset(), kw_only=True, eq=False, repr=False)

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
    extra: dict[str, Any] = field(factory=dict, kw_only=True, repr=False)
    explicit_empty: frozenset[str] = field(default=frozenset(), kw_only=True, eq=False, repr=False)

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
    extra: dict[str, Any] = field(factory=dict, kw_only=True, repr=False)
    explicit_empty: frozenset[str] = field(default=frozenset(), kw_only=True, eq=False, repr=False)

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
    extra: dict[str, Any] = field(factory=dict, kw_only=True, repr=False)
    explicit_empty: frozenset[str] = field(default=frozenset(), kw_only=True, eq=False, repr=False)

    FIELDS = (
        F("resources", "resources", "quantities"),
        F("nodes", "nodes", "int"),
        F("nodeClassObservedGeneration", "node_class_observed_generation", "int"),
        F("conditions", "conditions", "objs", Condition),
    )


@frozen
class NodePool(DefaultableModel):
    """A ``karpenter.sh/v1`` NodePool."""

    metadata: ObjectMeta = field(factory=ObjectMeta)
    spec: NodePoolSpec = field(factory=NodePoolSpec)
    status: NodePoolStatus | None = None
    api_version: str = API_VERSION
    kind: str = "NodePool"
    extra: dict[str, Any] = field(factory=dict, kw_only=True, repr=False)
    explicit_empty: frozenset[str] = field(default=frozenset(), kw_only=True, eq=False, repr=False)

    FIELDS = (
        F("apiVersion", "api_version", "str"),
        F("kind", "kind", "str"),
        F("metadata", "metadata", "obj", ObjectMeta),
        F("spec", "spec", "obj", NodePoolSpec),
        F("status", "status", "obj", NodePoolStatus),
    )

    @property
    def name(self) -> str:
        return self.metadata.name or ""

    @property
    def is_static(self) -> bool:
        """Static NodePools (``replicas`` set) keep a fixed node count."""
        return self.spec.replicas is not None

    @property
    def weight(self) -> int:
        return self.spec.weight or 0

    @property
    def conditions(self) -> tuple[Condition, ...]:
        return self.status.conditions if self.status else ()

    def condition(self, type_: str) -> Condition | None:
        return find_condition(self.conditions, type_)

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
    extra: dict[str, Any] = field(factory=dict, kw_only=True, repr=False)
    explicit_empty: frozenset[str] = field(default=frozenset(), kw_only=True, eq=False, repr=False)

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
    extra: dict[str, Any] = field(factory=dict, kw_only=True, repr=False)
    explicit_empty: frozenset[str] = field(default=frozenset(), kw_only=True, eq=False, repr=False)

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
    extra: dict[str, Any] = field(factory=dict, kw_only=True, repr=False)
    explicit_empty: frozenset[str] = field(default=frozenset(), kw_only=True, eq=False, repr=False)

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
class NodeClaim(DefaultableModel):
    """A ``karpenter.sh/v1`` NodeClaim: a request for one node, and its record."""

    metadata: ObjectMeta = field(factory=ObjectMeta)
    spec: NodeClaimSpec = field(factory=NodeClaimSpec)
    status: NodeClaimStatus | None = None
    api_version: str = API_VERSION
    kind: str = "NodeClaim"
    extra: dict[str, Any] = field(factory=dict, kw_only=True, repr=False)
    explicit_empty: frozenset[str] = field(default=frozenset(), kw_only=True, eq=False, repr=False)

    FIELDS = (
        F("apiVersion", "api_version", "str"),
        F("kind", "kind", "str"),
        F("metadata", "metadata", "obj", ObjectMeta),
        F("spec", "spec", "obj", NodeClaimSpec),
        F("status", "status", "obj", NodeClaimStatus),
    )

    @property
    def name(self) -> str:
        return self.metadata.name or ""

    @property
    def nodepool_name(self) -> str | None:
        return self.metadata.labels.get(wk.NODEPOOL_LABEL_KEY)

    @property
    def provider_id(self) -> str:
        return (self.status.provider_id or "") if self.status else ""

    @property
    def conditions(self) -> tuple[Condition, ...]:
        return self.status.conditions if self.status else ()

    def condition(self, type_: str) -> Condition | None:
        return find_condition(self.conditions, type_)

    def is_true(self, type_: str) -> bool:
        c = self.condition(type_)
        return c is not None and c.is_true

    def ready(self) -> bool:
        """Ready = Launched and Registered and Initialized."""
        c = self.condition(CONDITION_READY)
        if c is not None:
            return c.is_true
        return root_ready(self.conditions, NODECLAIM_READY_DEPENDENTS) == "True"


def parse_duration_nanos(value: str) -> int:
    """Convenience re-export: Go duration string -> nanoseconds."""
    return parse_go_duration(value)


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
    "root_ready",
    "set_condition",
]
