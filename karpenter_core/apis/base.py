"""The machinery every Karpenter API kind shares: lossless dict round trips, defaulting,
object metadata and status conditions.

``karpenter.sh/v1`` (NodePool, NodeClaim), ``karpenter.sh/v1alpha1`` (NodeOverlay) and
``autoscaling.x-k8s.io/v1beta1`` (CapacityBuffer) all describe their JSON with a table of
:class:`F` entries on a :class:`Model` subclass; this module turns the table into
``from_dict``/``to_dict``, so each kind module holds only its types and the behaviour that is
really its own. :mod:`karpenter_core.apis.v1` re-exports these names, the place most callers
import them from.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, ClassVar, Protocol, Self

from attrs import field, frozen

from karpenter_core.apis.crds.schema import Schema, object_schema
from karpenter_core.apis.durations import DurationError, NillableDuration


class APIError(ValueError):
    """An object whose shape does not fit the API type; the message names the field path."""


# --- generic (de)serialisation --------------------------------------------------------------


@frozen
class F:
    """How one JSON field maps to one attribute.

    ``kind`` is one of: ``str``, ``int``, ``bool``, ``strs`` (list of strings), ``strmap``,
    ``quantities`` (ResourceList: name -> string or number), ``raw`` (any JSON, deep-copied),
    ``raws`` (list of any JSON), ``obj``/``objs`` (nested model / list of them), ``objmap``
    (map of string to nested model, as DRA's device attributes), ``ndur``
    (NillableDuration, ``Never`` allowed) and ``dur`` (Go duration, ``Never`` rejected).
    """

    json: str
    attr: str
    kind: str
    sub: Any = None


_COLLECTION_KINDS = frozenset({"strs", "strmap", "quantities", "raws", "objs", "objmap"})


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
    if kind == "objmap":
        if not isinstance(value, Mapping):
            raise _err(path, "a map", value)
        return {str(k): f.sub.from_dict(v, path=f"{path}[{k}]") for k, v in value.items()}
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
    if kind == "objmap":
        return {k: v.to_dict() for k, v in value.items()}
    if kind in ("ndur", "dur"):
        return value.to_raw()
    return value


@frozen
class Model:
    """Base of the API types: lossless ``from_dict``/``to_dict`` from a ``FIELDS`` table.

    Subclasses (``@frozen``) declare their attributes and ``FIELDS``; they inherit two
    keyword-only attributes: ``extra`` (unknown JSON keys, kept verbatim) and
    ``explicit_empty`` (JSON keys whose list/map value was written empty, so it is written
    back instead of omitted; not part of equality).
    """

    FIELDS: ClassVar[tuple[F, ...]] = ()
    extra: dict[str, Any] = field(factory=dict, kw_only=True, repr=False)
    explicit_empty: frozenset[str] = field(default=frozenset(), kw_only=True, eq=False, repr=False)

    @classmethod
    def from_dict(cls, data: Any, *, path: str = "") -> Self:
        where = path or cls.__name__
        if not isinstance(data, Mapping):
            raise _err(where, "an object", data)
        return cls._from_fields(data, path, None, None)

    @classmethod
    def from_dict_reusing(
        cls, data: Any, previous: Self, previous_data: Any, *, path: str = ""
    ) -> Self:
        """``from_dict(data)``, given ``previous = from_dict(previous_data)`` (an earlier
        version of the same object): a field whose JSON equals the earlier one keeps its
        earlier parsed value (equal input parses to an equal value; models are never
        changed in place), a nested object is compared field by field in turn, a list of
        objects item by item. A NodeClaim's status patch then costs a few dict
        comparisons (run in C) and the parse of what changed, where thousands of them a
        minute, each parsed whole, were a twentieth of a large simulated scale-in."""
        if (
            not isinstance(data, Mapping)
            or not isinstance(previous_data, Mapping)
            or not _parses_plainly(cls)
        ):
            return cls.from_dict(data, path=path)
        return cls._from_fields(data, path, previous, previous_data)

    @classmethod
    def _from_fields(
        cls,
        data: Mapping[str, Any],
        path: str,
        previous: Self | None,
        previous_data: Mapping[str, Any] | None,
    ) -> Self:
        kwargs: dict[str, Any] = {}
        known: set[str] = set()
        empty: set[str] = set()
        for f in cls.FIELDS:
            known.add(f.json)
            if f.json not in data:
                continue
            value = data[f.json]
            if value is None:
                # JSON null is "unset" for the API server; remember nothing.
                continue
            sub_path = f"{path}.{f.json}" if path else f.json
            if previous_data is None:
                loaded = _load_value(value, f, sub_path)
            else:
                loaded = _reload_value(
                    value, f, sub_path, previous_data.get(f.json), getattr(previous, f.attr)
                )
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


def _reload_value(value: Any, f: F, path: str, was: Any, kept: Any) -> Any:
    """``_load_value(value, f, path)``, where ``kept`` is the parse of ``was``, the
    field's JSON in an earlier version (see :meth:`Model.from_dict_reusing`)."""
    if was is not None and kept is not None and (value is was or value == was):
        return kept
    if f.kind == "obj" and isinstance(was, Mapping) and kept is not None:
        return f.sub.from_dict_reusing(value, kept, was, path=path)
    if (
        f.kind == "objs"
        and isinstance(value, list | tuple)
        and isinstance(was, list | tuple)
        and len(was) == len(kept)
        and _parses_plainly(f.sub)
    ):
        return tuple(
            kept[i]
            if i < len(was) and (v is was[i] or v == was[i])
            else f.sub.from_dict(v, path=f"{path}[{i}]")
            for i, v in enumerate(value)
        )
    return _load_value(value, f, path)


def _parses_plainly(cls: type[Model]) -> bool:
    """Whether ``cls.from_dict`` is the table-driven one (a kind with its own parser is
    parsed whole by :meth:`Model.from_dict_reusing`)."""
    own = getattr(cls.from_dict, "__func__", None)
    return own is _MODEL_FROM_DICT or own is _OBJECT_FROM_DICT


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


# --- top-level kinds --------------------------------------------------------------------------


class _Status(Protocol):
    @property
    def conditions(self) -> tuple[Condition, ...]: ...


class ObjectModel(Model):
    """Base of a top-level kind (``apiVersion``, ``kind``, ``metadata``, ``spec``, ``status``).

    Adds what every kind reads the same way (its name, its status conditions) and API-server
    defaulting: ``from_dict(d, defaults=True)`` and ``with_defaults()``. Subclasses declare
    the five attributes themselves (their types differ) and use :func:`object_fields`.
    """

    __slots__ = ()
    metadata: ObjectMeta
    status: _Status | None

    @classmethod
    def from_dict(cls, data: Any, *, path: str = "", defaults: bool = False) -> Self:
        if defaults and isinstance(data, Mapping):
            data = apply_defaults(data)
        return super().from_dict(data, path=path)

    def with_defaults(self) -> Self:
        """A copy with the API server's defaults applied (fields already set are kept)."""
        return type(self).from_dict(apply_defaults(self.to_dict()))

    @property
    def name(self) -> str:
        return self.metadata.name or ""

    @property
    def conditions(self) -> tuple[Condition, ...]:
        return self.status.conditions if self.status is not None else ()

    def condition(self, type_: str) -> Condition | None:
        return find_condition(self.conditions, type_)

    def is_true(self, type_: str) -> bool:
        """The condition ``type_`` is present and True (the first of that type, as
        :meth:`condition` finds it). Read for every candidate of every consolidation pass,
        so it walks the conditions itself."""
        for c in self.conditions:
            if c.type == type_:
                return c.status == "True"
        return False


_MODEL_FROM_DICT = Model.__dict__["from_dict"].__func__
_OBJECT_FROM_DICT = ObjectModel.__dict__["from_dict"].__func__


def object_fields(spec: type[Model], status: type[Model]) -> tuple[F, ...]:
    """The ``FIELDS`` of a top-level kind whose spec and status are ``spec``/``status``."""
    return (
        F("apiVersion", "api_version", "str"),
        F("kind", "kind", "str"),
        F("metadata", "metadata", "obj", ObjectMeta),
        F("spec", "spec", "obj", spec),
        F("status", "status", "obj", status),
    )
