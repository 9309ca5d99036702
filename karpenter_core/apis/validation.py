"""Validation of NodePool, NodeClaim, NodeOverlay and CapacityBuffer objects.

Two layers, as upstream:

1. **Admission** - what an API server with our CRDs installed rejects: the structural
   OpenAPI schema (types, required fields, enums, patterns, bounds, unknown fields) and the
   CEL rules (``x-kubernetes-validations``). The schema is walked straight from
   :mod:`karpenter_core.apis.crds.schema`, so the CRDs we ship and this module cannot disagree;
   each CEL rule string there has a Python implementation in :data:`CEL_RULES` (a unit test
   checks none is missing). Rules that compare with ``oldSelf`` (immutability, static vs
   dynamic NodePools) only run in :func:`validate_update`.
2. **Runtime** - what the NodePool/NodeOverlay controllers check before marking an object
   ``ValidationSucceeded`` (``RuntimeValidate``/``ValidateRequirement``): label and taint
   syntax, duplicate taints, restricted label domains (providers extend them through the
   plugin contract), known values of ``karpenter.sh/capacity-type`` and ``minValues``.

Errors are :class:`FieldError` values carrying the field path, e.g.
``spec.template.spec.requirements[2].operator: Unsupported value: "Foo": supported values:
"In", "NotIn", ...``. When a part of an object already fails admission, the runtime checks of
that part are skipped so each mistake is reported once.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from attrs import frozen

from karpenter_core.apis import labels as wk
from karpenter_core.apis.crds import schema as S
from karpenter_core.apis.crds.openapi import DATE_TIME_RE, type_ok
from karpenter_core.apis.crds.schema import Schema, object_schema
from karpenter_core.apis.durations import CronError, parse_cron
from karpenter_core.apis.limits import (
    MAX_SHOWN_CHARS,
    MAX_SHOWN_KEY_CHARS,
    TOTAL_ANNOTATION_SIZE_LIMIT,
    elide,
    shown,
)
from karpenter_core.apis.names import (
    is_dns1123_subdomain,
    is_qualified_name,
    is_valid_label_value,
)
from karpenter_core.apis.v1 import apply_defaults


@frozen
class FieldError:
    """One problem with one field: ``str()`` gives ``"<path>: <message>"``."""

    path: str
    message: str

    def __str__(self) -> str:
        # A path holds the user's map keys: a hostile one must not make the line huge.
        return (
            f"{elide(self.path, 2 * MAX_SHOWN_CHARS)}: {self.message}"
            if self.path
            else self.message
        )


# --- structural schema -------------------------------------------------------------------------


def _show(value: Any) -> str:
    if isinstance(value, Mapping):
        return '"object"'
    if isinstance(value, list | tuple):
        return '"array"'
    return shown(value)


_PATTERNS: dict[str, re.Pattern[str]] = {}


def _pattern(p: str) -> re.Pattern[str]:
    compiled = _PATTERNS.get(p)
    if compiled is None:
        compiled = _PATTERNS[p] = re.compile(p, re.ASCII)
    return compiled


class _Walker:
    """Validates a value against a structural schema, collecting :class:`FieldError`s."""

    def __init__(self, transitions: bool = False) -> None:
        self.errors: list[FieldError] = []
        self.transitions = transitions

    def add(self, path: str, message: str) -> None:
        self.errors.append(FieldError(path, message))

    def walk(
        self,
        value: Any,
        schema: Mapping[str, Any],
        path: str,
        old: Any = None,
        has_old: bool = False,
    ) -> None:
        before = len(self.errors)
        if not self._check_type(value, schema, path):
            return
        if isinstance(value, Mapping):
            self._walk_object(value, schema, path, old, has_old)
        elif isinstance(value, list | tuple):
            self._walk_array(value, schema, path)
        else:
            self._check_scalar(value, schema, path)
        rules = schema.get("x-kubernetes-validations")
        if rules:
            # Rules run even when part of the value failed the schema (the implementations are
            # type-defensive), but an element that already has an error is not blamed twice.
            bad = {e.path for e in self.errors[before:]}
            self._check_rules(value, rules, path, old, has_old, bad)

    def _check_type(self, value: Any, schema: Mapping[str, Any], path: str) -> bool:
        if schema.get("x-kubernetes-int-or-string"):
            if isinstance(value, str) or type_ok(value, "integer"):
                return True
            self.add(path, f"Invalid value: {_show(value)}: must be an integer or a string")
            return False
        type_ = schema.get("type")
        if type_ and not type_ok(value, type_):
            if value is None:
                self.add(path, f"Invalid value: null: must be of type {type_}")
            else:
                self.add(path, f"Invalid value: {_show(value)}: must be of type {type_}")
            return False
        return True

    def _walk_object(
        self,
        value: Mapping[str, Any],
        schema: Mapping[str, Any],
        path: str,
        old: Any,
        has_old: bool,
    ) -> None:
        props: Mapping[str, Schema] = schema.get("properties", {})
        additional = schema.get("additionalProperties")
        preserve = schema.get("x-kubernetes-preserve-unknown-fields") or (
            not props and additional is None
        )
        old_map = old if isinstance(old, Mapping) else {}
        for key, item in value.items():
            key_s = str(key)
            if key_s in props:
                if item is None:
                    # JSON null means "unset" to the API server (required fields are
                    # reported below).
                    continue
                sub = f"{path}.{key_s}" if path else key_s
                self.walk(item, props[key_s], sub, old_map.get(key_s), has_old and key_s in old_map)
            elif isinstance(additional, Mapping):
                self.walk(item, additional, f"{path}[{key_s}]")
            elif not preserve:
                sub = f"{path}.{key_s}" if path else key_s
                self.add(sub, "Unknown field")
        for req in schema.get("required", ()):
            if value.get(req) is None:
                self.add(f"{path}.{req}" if path else req, "Required value")
        max_props = schema.get("maxProperties")
        if max_props is not None and len(value) > max_props:
            self.add(path, f"Too many: {len(value)}: must have at most {max_props} items")

    def _walk_array(self, value: Sequence[Any], schema: Mapping[str, Any], path: str) -> None:
        max_items = schema.get("maxItems")
        if max_items is not None and len(value) > max_items:
            self.add(path, f"Too many: {len(value)}: must have at most {max_items} items")
        items = schema.get("items")
        if isinstance(items, Mapping):
            for i, item in enumerate(value):
                self.walk(item, items, f"{path}[{i}]")
        list_type = schema.get("x-kubernetes-list-type")
        if list_type == "set":
            seen: list[Any] = []
            for i, item in enumerate(value):
                if item in seen:
                    self.add(f"{path}[{i}]", f"Duplicate value: {_show(item)}")
                seen.append(item)
        elif list_type == "map":
            keys = schema.get("x-kubernetes-list-map-keys", [])
            seen_keys: set[tuple[Any, ...]] = set()
            for i, item in enumerate(value):
                if not isinstance(item, Mapping):
                    continue
                k = tuple(json.dumps(item.get(n), sort_keys=True) for n in keys)
                if k in seen_keys:
                    shown = ", ".join(f"{n}={json.loads(v)}" for n, v in zip(keys, k, strict=True))
                    self.add(f"{path}[{i}]", f"Duplicate value: {{{shown}}}")
                seen_keys.add(k)

    def _check_scalar(self, value: Any, schema: Mapping[str, Any], path: str) -> None:
        enum = schema.get("enum")
        if enum is not None and value not in enum:
            supported = ", ".join(json.dumps(e) for e in enum)
            self.add(path, f"Unsupported value: {_show(value)}: supported values: {supported}")
            return
        if isinstance(value, str):
            min_len = schema.get("minLength")
            if min_len is not None and len(value) < min_len:
                self.add(
                    path, f"Invalid value: {_show(value)}: should be at least {min_len} chars long"
                )
            max_len = schema.get("maxLength")
            if max_len is not None and len(value) > max_len:
                self.add(path, f"Too long: may not be more than {max_len} bytes")
            pattern = schema.get("pattern")
            if pattern is not None and not _pattern(pattern).search(value):
                self.add(path, f"Invalid value: {_show(value)}: should match '{pattern}'")
            if schema.get("format") == "date-time" and not DATE_TIME_RE.match(value):
                self.add(path, f"Invalid value: {_show(value)}: must be an RFC 3339 date-time")
        elif not isinstance(value, bool) and isinstance(value, int | float):
            minimum = schema.get("minimum")
            if minimum is not None and value < minimum:
                self.add(
                    path,
                    f"Invalid value: {_show(value)}: should be greater than or equal to {minimum}",
                )
            maximum = schema.get("maximum")
            if maximum is not None and value > maximum:
                self.add(
                    path,
                    f"Invalid value: {_show(value)}: should be less than or equal to {maximum}",
                )

    def _check_rules(
        self,
        value: Any,
        rules: Iterable[Mapping[str, str]],
        path: str,
        old: Any,
        has_old: bool,
        bad: set[str],
    ) -> None:
        for rule in rules:
            impl = CEL_RULES[rule["rule"]]
            if impl.transition and not (self.transitions and has_old):
                continue
            for suffix in impl.check(value, old):
                target = f"{path}{suffix}"
                if impl.per_element and any(_within(p, target) for p in bad):
                    continue
                self.add(target, rule["message"])


def _within(path: str, prefix: str) -> bool:
    """Whether ``path`` is ``prefix`` or a field/element below it."""
    return path == prefix or path.startswith((prefix + ".", prefix + "["))


# --- CEL rules -----------------------------------------------------------------------------


@frozen
class CelRule:
    """Python implementation of one CEL rule.

    ``check(self, old_self)`` returns the path suffixes where the rule fails (``""`` for the
    node itself, ``"[2]"`` for an element of a list rule), so a rule written as
    ``self.all(x, ...)`` reports the offending element rather than the whole list.
    """

    check: Callable[[Any, Any], list[str]]
    transition: bool = False
    per_element: bool = False


def _has(obj: Any, key: str) -> bool:
    return isinstance(obj, Mapping) and obj.get(key) is not None


def _each(pred: Callable[[Any], bool]) -> Callable[[Any, Any], list[str]]:
    def check(value: Any, _old: Any) -> list[str]:
        if not isinstance(value, list | tuple):
            return []
        return [f"[{i}]" for i, x in enumerate(value) if not pred(x)]

    return check


def _each_key(pred: Callable[[str], bool]) -> Callable[[Any, Any], list[str]]:
    def check(value: Any, _old: Any) -> list[str]:
        if not isinstance(value, Mapping):
            return []
        return [f"[{k}]" for k in value if not pred(str(k))]

    return check


def _scalar(pred: Callable[[Any], bool]) -> Callable[[Any, Any], list[str]]:
    return lambda value, _old: [] if pred(value) else [""]


_CEL_INT_RE = re.compile(r"^[+-]?[0-9]+$", re.ASCII)
_INT64_MAX = 2**63 - 1


def _values(x: Any) -> list[Any]:
    v = x.get("values") if isinstance(x, Mapping) else None
    return list(v) if isinstance(v, list | tuple) else []


def _op(x: Any) -> Any:
    return x.get("operator") if isinstance(x, Mapping) else None


def _numeric_ok(x: Any) -> bool:
    if _op(x) not in ("Gt", "Lt", "Gte", "Lte"):
        return True
    values = _values(x)
    if len(values) != 1 or not isinstance(values[0], str):
        return False
    if not _CEL_INT_RE.match(values[0]):
        return False  # CEL int() fails to parse: the rule errors and the object is rejected
    return _cel_int_in_range(values[0])


def _cel_int_in_range(text: str) -> bool:
    """``int(text) >= 0`` as CEL evaluates it: beyond int64 ``int()`` errors (rejected)."""
    if len(text.lstrip("+-0")) > len(str(_INT64_MAX)):
        return False  # out of range, and Python would refuse to convert a 4,300-digit one
    return 0 <= int(text) <= _INT64_MAX


def _min_values_ok(x: Any) -> bool:
    if _op(x) != "In" or not _has(x, "minValues"):
        return True
    mv = x["minValues"]
    return not isinstance(mv, int) or len(_values(x)) >= mv


_RESTRICTED_EXCEPTIONS = ("karpenter.sh/capacity-type", "karpenter.sh/nodepool")


def _domain_ok(key: str) -> bool:
    if key in _RESTRICTED_EXCEPTIONS:
        return True
    m = re.match(r"^([^/]+)", key)
    prefix = m.group(1) if m else ""
    return not prefix.endswith("karpenter.sh")


def _static_limits_ok(spec: Any) -> bool:
    if not _has(spec, "replicas"):
        return True
    limits = spec.get("limits")
    if not limits:
        return True
    return isinstance(limits, Mapping) and len(limits) == 1 and "nodes" in limits


_WELL_KNOWN_RESOURCES = ("cpu", "memory", "ephemeral-storage", "pods")

CEL_RULES: dict[str, CelRule] = {
    S.RULE_DOMAIN_KEY: CelRule(_scalar(lambda v: not isinstance(v, str) or _domain_ok(v))),
    S.RULE_DOMAIN_LABELS: CelRule(_each_key(_domain_ok), per_element=True),
    S.RULE_NOT_NODEPOOL_KEY: CelRule(_scalar(lambda v: v != wk.NODEPOOL_LABEL_KEY)),
    S.RULE_NOT_NODEPOOL_LABELS: CelRule(
        _each_key(lambda k: k != wk.NODEPOOL_LABEL_KEY), per_element=True
    ),
    S.RULE_NOT_HOSTNAME_KEY: CelRule(_scalar(lambda v: v != wk.LABEL_HOSTNAME)),
    S.RULE_NOT_HOSTNAME_LABELS: CelRule(
        _each_key(lambda k: k != wk.LABEL_HOSTNAME), per_element=True
    ),
    S.RULE_NOT_EMPTY: CelRule(_scalar(lambda v: v != "")),
    S.RULE_IN_HAS_VALUES: CelRule(
        _each(lambda x: _op(x) != "In" or len(_values(x)) != 0), per_element=True
    ),
    S.RULE_NOTIN_HAS_VALUES: CelRule(
        _each(lambda x: _op(x) != "NotIn" or len(_values(x)) != 0), per_element=True
    ),
    S.RULE_NUMERIC_SINGLE_VALUE: CelRule(_each(_numeric_ok), per_element=True),
    S.RULE_MIN_VALUES: CelRule(_each(_min_values_ok), per_element=True),
    S.RULE_GROUP_IMMUTABLE: CelRule(
        lambda v, old: [] if _get(v, "group") == _get(old, "group") else [".group"],
        transition=True,
    ),
    S.RULE_KIND_IMMUTABLE: CelRule(
        lambda v, old: [] if _get(v, "kind") == _get(old, "kind") else [".kind"],
        transition=True,
    ),
    S.RULE_BUDGET_SCHEDULE_DURATION: CelRule(
        _each(lambda x: _has(x, "schedule") == _has(x, "duration")), per_element=True
    ),
    S.RULE_STATIC_DYNAMIC: CelRule(
        lambda v, old: [] if _has(v, "replicas") == _has(old, "replicas") else [""],
        transition=True,
    ),
    S.RULE_STATIC_LIMITS: CelRule(_scalar(_static_limits_ok)),
    S.RULE_STATIC_WEIGHT: CelRule(
        _scalar(lambda s: not _has(s, "replicas") or not _has(s, "weight"))
    ),
    S.RULE_SPEC_IMMUTABLE: CelRule(lambda v, old: [] if v == old else [""], transition=True),
    S.RULE_OVERLAY_CAPACITY: CelRule(
        _each_key(lambda k: k not in _WELL_KNOWN_RESOURCES), per_element=True
    ),
    S.RULE_OVERLAY_PRICE_EXCLUSIVE: CelRule(
        _scalar(lambda s: not _has(s, "price") or not _has(s, "priceAdjustment"))
    ),
    S.RULE_BUFFER_TEMPLATE_NEEDS_SIZE: CelRule(
        _scalar(lambda s: not _has(s, "podTemplateRef") or _has(s, "replicas") or _has(s, "limits"))
    ),
    S.RULE_BUFFER_EXCLUSIVE_REFS: CelRule(
        _scalar(lambda s: not (_has(s, "podTemplateRef") and _has(s, "scalableRef")))
    ),
}


def _get(obj: Any, key: str) -> Any:
    return obj.get(key) if isinstance(obj, Mapping) else None


def schema_rules(schema: Schema) -> list[str]:
    """Every CEL rule string in ``schema`` (used to check :data:`CEL_RULES` is complete)."""
    found: list[str] = []

    def visit(node: Any) -> None:
        if isinstance(node, Mapping):
            for rule in node.get("x-kubernetes-validations", ()):
                found.append(rule["rule"])
            for v in node.values():
                visit(v)
        elif isinstance(node, list):
            for v in node:
                visit(v)

    visit(schema)
    return found


# --- admission -------------------------------------------------------------------------------

KIND_NODEPOOL = ("karpenter.sh/v1", "NodePool")
KIND_NODECLAIM = ("karpenter.sh/v1", "NodeClaim")
KIND_NODEOVERLAY = ("karpenter.sh/v1alpha1", "NodeOverlay")
KIND_CAPACITYBUFFER = ("autoscaling.x-k8s.io/v1beta1", "CapacityBuffer")
SUPPORTED_KINDS = (KIND_NODEPOOL, KIND_NODECLAIM, KIND_NODEOVERLAY, KIND_CAPACITYBUFFER)


def _as_mapping(obj: Any) -> Mapping[str, Any]:
    to_dict = getattr(obj, "to_dict", None)
    if callable(to_dict):
        result = to_dict()
        if isinstance(result, Mapping):
            return result
    if isinstance(obj, Mapping):
        return obj
    raise TypeError(f"expected a Kubernetes object (mapping), got {type(obj).__name__}")


def _validate_metadata(obj: Mapping[str, Any]) -> list[FieldError]:
    errs: list[FieldError] = []
    meta = obj.get("metadata")
    if meta is None:
        return [FieldError("metadata.name", "Required value: name or generateName is required")]
    if not isinstance(meta, Mapping):
        return [FieldError("metadata", f"Invalid value: {_show(meta)}: must be of type object")]
    name = meta.get("name")
    if name is None and not meta.get("generateName"):
        errs.append(FieldError("metadata.name", "Required value: name or generateName is required"))
    elif name is not None:
        if not isinstance(name, str):
            errs.append(
                FieldError("metadata.name", f"Invalid value: {_show(name)}: must be a string")
            )
        else:
            for e in is_dns1123_subdomain(name):
                errs.append(FieldError("metadata.name", f"Invalid value: {_show(name)}: {e}"))
    errs.extend(validate_labels_and_annotations(meta, "metadata"))
    return errs


def validate_labels_and_annotations(meta: Mapping[str, Any], path: str) -> list[FieldError]:
    """What the API server checks of any object's (or pod template's) labels and
    annotations (apimachinery ``ValidateObjectMeta``): label keys are qualified names and
    values valid label values; annotation keys are qualified names (in any case), values
    strings, and all keys and values together at most
    :data:`~karpenter_core.apis.limits.TOTAL_ANNOTATION_SIZE_LIMIT` bytes."""
    errs: list[FieldError] = []
    for field_name in ("labels", "annotations"):
        m = meta.get(field_name)
        if m is None:
            continue
        where = f"{path}.{field_name}"
        if not isinstance(m, Mapping):
            errs.append(FieldError(where, f"Invalid value: {_show(m)}: must be of type object"))
            continue
        size = 0
        for k, v in m.items():
            key = str(k)
            field_path = f"{where}[{key}]"
            checked_key = key.lower() if field_name == "annotations" else key
            for e in is_qualified_name(checked_key):
                errs.append(FieldError(field_path, f"Invalid value: {_show(key)}: {e}"))
            if not isinstance(v, str):
                errs.append(
                    FieldError(field_path, f"Invalid value: {_show(v)}: must be of type string")
                )
            elif field_name == "labels":
                for e in is_valid_label_value(v):
                    errs.append(FieldError(field_path, f"Invalid value: {_show(v)}: {e}"))
            else:
                size += len(key.encode("utf-8", "surrogatepass"))
                size += len(v.encode("utf-8", "surrogatepass"))
        if size > TOTAL_ANNOTATION_SIZE_LIMIT:
            errs.append(
                FieldError(
                    where,
                    f"Too long: may not be more than {TOTAL_ANNOTATION_SIZE_LIMIT} bytes "
                    f"(these are {size:,})",
                )
            )
    return errs


def validate_admission(obj: Any, old: Any = None) -> list[FieldError]:
    """Schema and CEL checks an API server would apply (``old`` enables transition rules)."""
    data = _as_mapping(obj)
    key = (str(data.get("apiVersion", "")), str(data.get("kind", "")))
    schema = object_schema(*key)
    if schema is None:
        return [FieldError("", f"unsupported object {elide(f'{key[0]}/{key[1]}')}")]
    # The API server applies defaults before it validates (a budget without ``nodes`` gets
    # ``10%`` and is then valid).
    data = apply_defaults(data)
    errs = _validate_metadata(data)
    old_data = apply_defaults(_as_mapping(old)) if old is not None else None
    walker = _Walker(transitions=old_data is not None)
    walker.walk(data, schema, "", old_data, old_data is not None)
    errs.extend(e for e in walker.errors if not e.path.startswith("status"))
    return errs


# --- runtime validation ------------------------------------------------------------------------


def _restricted_message(key: str) -> str:
    return (
        f"using label {key} is not allowed as it might interfere with the internal provisioning "
        f"logic; specify a well known label: {_go_list(sorted(wk.WELL_KNOWN_LABELS))}, or a "
        f"custom label that does not use a restricted domain: "
        f"{_go_list(sorted(wk.RESTRICTED_LABEL_DOMAINS))}"
    )


def _go_list(items: Iterable[str]) -> str:
    return "[" + " ".join(items) + "]"


def validate_requirement(req: Any, path: str = "") -> list[FieldError]:
    """Runtime ``ValidateRequirement`` for one requirement (dict or attrs requirement).

    Checks, in upstream order: supported operator, restricted label, known values of
    well-known keys (an ``In`` on ``karpenter.sh/capacity-type`` needs at least one known value,
    and at least ``minValues`` of them), qualified key and label-value syntax, ``In`` needs
    values, ``minValues`` <= number of values, and Gt/Lt/Gte/Lte take one non-negative integer.
    """
    if not isinstance(req, Mapping):
        req = _as_mapping(req)
    key = wk.normalize_key(str(req.get("key", "")))
    op = str(req.get("operator", ""))
    raw_values = req.get("values")
    # A values field that is not a list is a schema error reported on its own.
    values = [str(v) for v in raw_values] if isinstance(raw_values, list | tuple) else []
    min_values = req.get("minValues")
    out: list[str] = []
    shown_key, shown_op = elide(key, MAX_SHOWN_KEY_CHARS), elide(op)
    if op not in S.OPERATORS:
        out.append(
            f"key {shown_key} has an unsupported operator {shown_op} not in {_go_list(S.OPERATORS)}"
        )
    if wk.is_restricted_label(key):
        out.append(_restricted_message(shown_key))
    known = wk.WELL_KNOWN_VALUES_FOR_REQUIREMENTS.get(key)
    if known is not None and op == "In" and key in wk.WELL_KNOWN_LABELS:
        valid = [v for v in values if v in known]
        invalid = [v for v in values if v not in known]
        if not valid:
            out.append(
                f"no valid values found in {elide(_go_list(values))} for {shown_key}, expected "
                f"one of: {_go_list(sorted(known))}, got: {elide(_go_list(invalid))}"
            )
        elif isinstance(min_values, int) and len(valid) < min_values:
            out.append(
                f"not enough valid values found in {elide(_go_list(values))} for {shown_key}, expected at "
                f"least {min_values} valid values from: {_go_list(sorted(known))}, got: "
                f"{len(valid)}"
            )
    for e in is_qualified_name(key):
        out.append(f"key {shown_key} is not a qualified name, {e}")
    for v in values:
        for e in is_valid_label_value(v):
            out.append(f"invalid value {elide(v)} for key {shown_key}, {e}")
    if op == "In" and not values:
        out.append(f"key {shown_key} with operator {op} must have a value defined")
    if op == "In" and isinstance(min_values, int) and len(values) < min_values:
        out.append(
            f"key {shown_key} with operator {op} must have at least minimum number of values defined "
            "in 'values' field"
        )
    if op in ("Gt", "Lt", "Gte", "Lte"):
        ok = (
            len(values) == 1 and bool(_CEL_INT_RE.match(values[0])) and _cel_int_in_range(values[0])
        )
        if not ok:
            out.append(
                f"key {shown_key} with operator {op} must have a single positive integer value"
            )
    return [FieldError(path, m) for m in out]


def _validate_template_labels(labels: Any, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    if not isinstance(labels, Mapping):
        return errs
    for key, value in labels.items():
        k = str(key)
        p = f"{path}[{k}]"
        shown_k = elide(k, MAX_SHOWN_KEY_CHARS)
        if k == wk.NODEPOOL_LABEL_KEY:
            errs.append(FieldError(p, f'invalid key name "{k}" in labels, restricted'))
        for e in is_qualified_name(k):
            errs.append(FieldError(p, f'invalid key name "{shown_k}" in labels, "{e}"'))
        for e in is_valid_label_value(str(value)):
            errs.append(
                FieldError(p, f"invalid value: {elide(str(value))} for label[{shown_k}], {e}")
            )
        if wk.is_restricted_label(k):
            errs.append(
                FieldError(
                    p, f'invalid key name "{shown_k}" in labels, {_restricted_message(shown_k)}'
                )
            )
    return errs


def _validate_taints(spec: Mapping[str, Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    seen: set[tuple[str, str]] = set()
    for field_name in ("taints", "startupTaints"):
        taints = spec.get(field_name) or []
        if not isinstance(taints, list | tuple):
            continue
        for i, taint in enumerate(taints):
            if not isinstance(taint, Mapping):
                continue
            p = f"{path}.{field_name}[{i}]"
            key = str(taint.get("key") or "")
            value = str(taint.get("value") or "")
            effect = str(taint.get("effect") or "")
            if not key:
                errs.append(
                    FieldError(p, f"invalid value: taint key must not be empty in {field_name}")
                )
            else:
                for e in is_qualified_name(key):
                    errs.append(FieldError(p, f"invalid value: {e} in {field_name}"))
            if value:
                for e in is_qualified_name(value):
                    errs.append(FieldError(p, f"invalid value: {e} in {field_name}"))
            if effect not in ("NoSchedule", "PreferNoSchedule", "NoExecute", ""):
                errs.append(FieldError(p, f'invalid value: "{elide(effect)}" in {field_name}'))
            if (key, effect) in seen:
                errs.append(
                    FieldError(p, f"duplicate taint Key/Effect pair {elide(key)}={elide(effect)}")
                )
            seen.add((key, effect))
    return errs


def runtime_validate_nodepool(obj: Any) -> list[FieldError]:
    """Upstream ``NodePool.RuntimeValidate``: labels, taints, requirements, no nodepool key."""
    data = _as_mapping(obj)
    template = _get(_get(data, "spec"), "template")
    base = "spec.template"
    errs = _validate_template_labels(
        _get(_get(template, "metadata"), "labels"), f"{base}.metadata.labels"
    )
    annotations = _get(_get(template, "metadata"), "annotations")
    if isinstance(annotations, Mapping):
        # Every NodeClaim (and Node) made from the template carries these: the API server
        # would refuse each of them, so say so once, here.
        errs += validate_labels_and_annotations({"annotations": annotations}, f"{base}.metadata")
    spec = _get(template, "spec")
    if not isinstance(spec, Mapping):
        return errs
    errs += _validate_taints(spec, f"{base}.spec")
    reqs = spec.get("requirements") or []
    if isinstance(reqs, list | tuple):
        for i, req in enumerate(reqs):
            if not isinstance(req, Mapping):
                continue
            p = f"{base}.spec.requirements[{i}]"
            errs += validate_requirement(req, p)
            if req.get("key") == wk.NODEPOOL_LABEL_KEY:
                errs.append(
                    FieldError(
                        p, f'invalid key: "{wk.NODEPOOL_LABEL_KEY}" in requirements, restricted'
                    )
                )
    return errs


def runtime_validate_nodeoverlay(obj: Any) -> list[FieldError]:
    """Upstream ``NodeOverlay.RuntimeValidate``: requirements (NotIn needs values too) and
    no well-known resources in ``capacity``."""
    data = _as_mapping(obj)
    spec = _get(data, "spec")
    errs: list[FieldError] = []
    if not isinstance(spec, Mapping):
        return errs
    reqs = spec.get("requirements") or []
    if isinstance(reqs, list | tuple):
        for i, req in enumerate(reqs):
            if not isinstance(req, Mapping):
                continue
            p = f"spec.requirements[{i}]"
            plain = {k: v for k, v in req.items() if k != "minValues"}
            errs += validate_requirement(plain, p)
            if req.get("operator") == "NotIn" and not req.get("values"):
                errs.append(
                    FieldError(
                        p, f"key {req.get('key')} with operator NotIn must have a value defined"
                    )
                )
    capacity = spec.get("capacity")
    if isinstance(capacity, Mapping):
        for name in capacity:
            if name in wk.WELL_KNOWN_RESOURCES:
                errs.append(
                    FieldError(
                        f"spec.capacity[{name}]",
                        f"invalid capacity: {elide(str(name))} in resource, restricted",
                    )
                )
    return errs


def _budget_schedule_errors(data: Mapping[str, Any]) -> list[FieldError]:
    """Schedules that pass the CRD pattern but that the cron parser rejects.

    Upstream admits them and the budget then allows no disruption at all (fail closed); that is
    almost never what the author meant, so ``validate`` reports it.
    """
    budgets = _get(_get(_get(data, "spec"), "disruption"), "budgets")
    errs: list[FieldError] = []
    if not isinstance(budgets, list | tuple):
        return errs
    for i, b in enumerate(budgets):
        schedule = _get(b, "schedule")
        if isinstance(schedule, str):
            try:
                parse_cron(schedule)
            except CronError as e:
                errs.append(
                    FieldError(
                        f"spec.disruption.budgets[{i}].schedule",
                        f"invalid cron schedule {elide(repr(schedule))}: {e} (the budget would "
                        "block all "
                        "disruption)",
                    )
                )
    return errs


def _merge(admission: list[FieldError], runtime: list[FieldError]) -> list[FieldError]:
    """Admission errors, then runtime errors for parts that passed admission."""
    bad = [e.path for e in admission]

    def covered(path: str) -> bool:
        return any(_within(b, path) or _within(path, b) for b in bad)

    return admission + [e for e in runtime if not covered(e.path)]


def validate_nodepool(obj: Any) -> list[FieldError]:
    data = _as_mapping(obj)
    admission = validate_admission(data)
    runtime = runtime_validate_nodepool(data) + _budget_schedule_errors(data)
    return _merge(admission, runtime)


def validate_nodeclaim(obj: Any) -> list[FieldError]:
    """Admission checks only: upstream has no runtime validation for NodeClaims."""
    return validate_admission(_as_mapping(obj))


def validate_nodeoverlay(obj: Any) -> list[FieldError]:
    data = _as_mapping(obj)
    return _merge(validate_admission(data), runtime_validate_nodeoverlay(data))


def validate_capacitybuffer(obj: Any) -> list[FieldError]:
    data = _as_mapping(obj)
    errs = validate_admission(data)
    kind = _get(_get(_get(data, "spec"), "scalableRef"), "kind")
    if isinstance(kind, str) and kind and kind not in ("Deployment", "StatefulSet", "ReplicaSet"):
        # The CRD allows any kind; the controller resolves only these three (ScalableRefNotFound).
        errs.append(
            FieldError(
                "spec.scalableRef.kind",
                f'Unsupported value: "{kind}": supported values: "Deployment", "StatefulSet", '
                '"ReplicaSet"',
            )
        )
    return errs


_VALIDATORS: dict[tuple[str, str], Callable[[Any], list[FieldError]]] = {
    KIND_NODEPOOL: validate_nodepool,
    KIND_NODECLAIM: validate_nodeclaim,
    KIND_NODEOVERLAY: validate_nodeoverlay,
    KIND_CAPACITYBUFFER: validate_capacitybuffer,
}


def is_supported(obj: Mapping[str, Any]) -> bool:
    """Whether ``obj`` is one of the four kinds this module validates."""
    return (str(obj.get("apiVersion", "")), str(obj.get("kind", ""))) in _VALIDATORS


def validate(obj: Any) -> list[FieldError]:
    """Validate any supported object, dispatching on ``apiVersion``/``kind``.

    An object of another kind (or version) gives one error saying so; callers that want to
    skip foreign kinds use :func:`is_supported` first.
    """
    data = _as_mapping(obj)
    api_version = data.get("apiVersion")
    kind = data.get("kind")
    if not isinstance(api_version, str) or not api_version:
        return [FieldError("apiVersion", "Required value")]
    if not isinstance(kind, str) or not kind:
        return [FieldError("kind", "Required value")]
    validator = _VALIDATORS.get((api_version, kind))
    if validator is None:
        known = {k for _, k in _VALIDATORS}
        if kind in known:
            versions = ", ".join(f"{v}" for v, k in _VALIDATORS if k == kind)
            return [
                FieldError(
                    "apiVersion",
                    f'unsupported version "{elide(api_version)}" for {kind}; use {versions}',
                )
            ]
        return [FieldError("kind", f"unsupported kind {elide(f'{api_version}/{kind}')}")]
    return validator(data)


def validate_update(old: Any, new: Any) -> list[FieldError]:
    """Validate ``new`` as an update of ``old``: everything :func:`validate` checks plus the
    transition rules (nodeClassRef group/kind immutable, no static<->dynamic switch, NodeClaim
    spec immutable)."""
    new_data = _as_mapping(new)
    old_data = _as_mapping(old)
    errs = validate(new_data)
    if not is_supported(new_data):
        return errs
    transition = [
        e for e in validate_admission(new_data, old_data) if e not in validate_admission(new_data)
    ]
    return errs + [e for e in transition if e not in errs]


__all__ = [
    "CEL_RULES",
    "FieldError",
    "is_dns1123_subdomain",
    "is_qualified_name",
    "is_supported",
    "is_valid_label_value",
    "runtime_validate_nodeoverlay",
    "runtime_validate_nodepool",
    "validate",
    "validate_admission",
    "validate_capacitybuffer",
    "validate_labels_and_annotations",
    "validate_nodeclaim",
    "validate_nodeoverlay",
    "validate_nodepool",
    "validate_requirement",
    "validate_update",
]
