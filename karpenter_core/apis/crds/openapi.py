"""Validate an object against a CRD's ``openAPIV3Schema`` as the kube-apiserver does on create.

One generic mechanism for any CRD (every provider's NodeClass): structural defaulting first
(``default`` for absent fields; a ``null`` in a non-nullable field is dropped, or replaced by
its default), then the OpenAPI checks (type, properties, required, additionalProperties,
items, enum, pattern, lengths, bounds, item counts, property counts, uniqueItems, the formats
Kubernetes checks, nullable, ``x-kubernetes-int-or-string``,
``x-kubernetes-preserve-unknown-fields``, ``x-kubernetes-list-type`` set/map), unknown fields
(as ``kubectl apply``'s strict field validation refuses them), then every
``x-kubernetes-validations`` CEL rule with ``self`` bound to its node's value
(:mod:`karpenter_core.apis.crds.celrules`).

Errors carry field paths and the API server's wording (``spec.role: Invalid value: "integer":
spec.role in body must be of type string: "integer"``, ``spec.subnetSelectorTerms: Required
value``, ``spec.amiFamily: Unsupported value: "Ubuntu": supported values: ...``). A rule that
does not compile is the CRD's problem: :attr:`CRDSchema.problems` lists it once, and it is not
evaluated.

Left out: ``oldSelf`` (transition) rules (validation is create-only, as on create),
``anyOf``/``oneOf``/``not`` (only ``allOf`` is applied; structural schemas use the others for
int-or-string and quantities), CEL cost limits and static type checks, ``x-kubernetes-
embedded-resource`` metadata checks, ratcheting.
"""

from __future__ import annotations

import base64
import copy
import ipaddress
import json
import re
import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from attrs import frozen

from karpenter_core.apis.crds.celrules import CompiledRule, RuleError, compile_rule, evaluate_rule
from karpenter_core.apis.limits import MAX_SHOWN_CHARS, elide, shown

Schema = Mapping[str, Any]


@frozen
class FieldError:
    """One problem with one field: ``str()`` gives ``"<path>: <message>"``."""

    path: str
    message: str

    def __str__(self) -> str:
        return (
            f"{elide(self.path, 2 * MAX_SHOWN_CHARS)}: {self.message}"
            if self.path
            else self.message
        )


# --- defaulting ------------------------------------------------------------------------------


def apply_defaults(value: Any, schema: Schema) -> Any:
    """``value`` with the schema's defaults applied (structural defaulting, in place on a copy
    the caller owns): absent properties get their ``default``; a ``null`` in a non-nullable
    property is replaced by its default or dropped."""
    if isinstance(value, dict):
        props: Mapping[str, Schema] = schema.get("properties") or {}
        for key, sub in props.items():
            if not isinstance(sub, Mapping):
                continue
            if key in value and value[key] is None and not sub.get("nullable"):
                if "default" in sub:
                    value[key] = copy.deepcopy(sub["default"])
                else:
                    del value[key]
            elif key not in value and "default" in sub:
                value[key] = copy.deepcopy(sub["default"])
        additional = schema.get("additionalProperties")
        for key in list(value):
            child = props.get(key) if key in props else additional
            if isinstance(child, Mapping):
                if value[key] is None and not child.get("nullable") and key not in props:
                    if "default" in child:
                        value[key] = copy.deepcopy(child["default"])
                    else:
                        del value[key]
                        continue
                value[key] = apply_defaults(value[key], child)
    elif isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, Mapping):
            for i, item in enumerate(value):
                if item is None and not items.get("nullable") and "default" in items:
                    value[i] = copy.deepcopy(items["default"])
                else:
                    value[i] = apply_defaults(item, items)
    for sub in schema.get("allOf") or ():
        if isinstance(sub, Mapping):
            value = apply_defaults(value, sub)
    return value


# --- values as the API server prints them ----------------------------------------------------


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "integer" if value.is_integer() else "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, list | tuple):
        return "array"
    return type(value).__name__


def _show(value: Any) -> str:
    if isinstance(value, Mapping):
        return '"object"'
    if isinstance(value, list | tuple):
        return '"array"'
    if value is None:
        return "null"
    return shown(value)


def type_ok(value: Any, type_: str) -> bool:
    """Whether ``value`` (decoded JSON) is of the OpenAPI ``type_`` (an integral float is an
    integer, a bool is not a number)."""
    if type_ == "object":
        return isinstance(value, Mapping)
    if type_ == "array":
        return isinstance(value, list | tuple)
    if type_ == "string":
        return isinstance(value, str)
    if type_ == "boolean":
        return isinstance(value, bool)
    if type_ == "integer":
        if isinstance(value, bool):
            return False
        return isinstance(value, int) or (isinstance(value, float) and value.is_integer())
    if type_ == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    return True


_PATTERNS: dict[str, re.Pattern[str] | None] = {}


def _pattern(p: str) -> re.Pattern[str] | None:
    if p not in _PATTERNS:
        try:
            # ASCII: in RE2 (the API server's engine) \d, \w, \s and \b are ASCII classes
            _PATTERNS[p] = re.compile(p, re.ASCII)
        except re.error:
            _PATTERNS[p] = None
    return _PATTERNS[p]


# --- formats (the ones kube-openapi's strfmt registry checks for CRDs) -----------------------

DATE_TIME_RE = re.compile(
    r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$", re.ASCII
)
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$", re.ASCII)
_HOSTNAME = re.compile(
    r"^[a-zA-Z0-9]([-a-zA-Z0-9]{0,61}[a-zA-Z0-9])?(\.[a-zA-Z0-9]([-a-zA-Z0-9]{0,61}[a-zA-Z0-9])?)*\.?$",
    re.ASCII,
)
_MAC = re.compile(r"^([0-9A-Fa-f]{2}[:-]){5}[0-9A-Fa-f]{2}$", re.ASCII)
_DURATION = re.compile(r"^(-?(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+|0)$")
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+$")


def _ip(version: int) -> Any:
    def check(s: str) -> bool:
        try:
            return ipaddress.ip_address(s).version == version
        except ValueError:
            return False

    return check


def _cidr(s: str) -> bool:
    try:
        ipaddress.ip_network(s, strict=False)
    except ValueError:
        return False
    return "/" in s


def _uuid(s: str) -> bool:
    try:
        uuid.UUID(s)
    except ValueError:
        return False
    return len(s) == 36


def _byte(s: str) -> bool:
    try:
        base64.b64decode(s, validate=True)
    except ValueError:
        return False
    return True


_FORMATS: dict[str, Any] = {
    "date-time": lambda s: bool(DATE_TIME_RE.match(s)),
    "datetime": lambda s: bool(DATE_TIME_RE.match(s)),
    "date": lambda s: bool(_DATE.match(s)),
    "hostname": lambda s: len(s) <= 255 and bool(_HOSTNAME.match(s)),
    "ipv4": _ip(4),
    "ipv6": _ip(6),
    "cidr": _cidr,
    "mac": lambda s: bool(_MAC.match(s)),
    "uuid": _uuid,
    "byte": _byte,
    "duration": lambda s: bool(_DURATION.match(s)),
    "email": lambda s: bool(_EMAIL.match(s)),
}


# --- the walker ------------------------------------------------------------------------------


@frozen
class RuleProblem:
    """A rule in the CRD that does not compile (the CRD's problem, not a manifest's)."""

    schema_path: str
    rule: str
    reason: str

    def __str__(self) -> str:
        where = self.schema_path or "<root>"
        return f"x-kubernetes-validations rule {elide(repr(self.rule))} at {where} does not compile: {self.reason}"


def _child(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _rule_field_path(path: str, field_path: str) -> str:
    """``fieldPath`` (``.a.b``, ``['x']``, ``[0]``) appended to ``path``."""
    out = path
    for m in re.finditer(
        r"\.([A-Za-z_][A-Za-z0-9_]*)|\['((?:[^'\\]|\\.)*)'\]|\[(\d+)\]", field_path
    ):
        if m.group(1) is not None:
            out = _child(out, m.group(1))
        elif m.group(2) is not None:
            out = _child(out, m.group(2))
        else:
            out = f"{out}[{m.group(3)}]"
    return out


class _Walker:
    def __init__(self, problems: dict[tuple[str, str], RuleProblem]) -> None:
        self.errors: list[FieldError] = []
        self.rule_errors: list[FieldError] = []
        self.problems = problems
        self.blocking = False
        self.rules: list[tuple[Any, Schema, Any, str]] = []

    def add(self, path: str, message: str, *, blocking: bool = False) -> None:
        self.errors.append(FieldError(path, message))
        self.blocking = self.blocking or blocking

    def invalid(self, path: str, value: Any, detail: str) -> None:
        self.add(path, f"Invalid value: {_show(value)}: {path} in body {detail}")

    def walk(self, value: Any, schema: Schema, path: str) -> None:
        if value is None:
            if not schema.get("nullable"):
                type_ = schema.get("type")
                if type_:
                    self.add(
                        path,
                        f'Invalid value: "null": {path} in body must be of type {type_}: "null"',
                        blocking=True,
                    )
            return
        any_of = [sub for sub in schema.get("anyOf") or () if isinstance(sub, Mapping)]
        if any_of:
            self._check_any_of(value, any_of, path)
        if not self._check_type(value, schema, path):
            return
        if isinstance(value, Mapping):
            self._walk_object(value, schema, path)
        elif isinstance(value, list | tuple):
            self._walk_array(value, schema, path)
        else:
            self._check_scalar(value, schema, path)
        for sub in schema.get("allOf") or ():
            if isinstance(sub, Mapping):
                self.walk(value, sub, path)
        rules = schema.get("x-kubernetes-validations")
        if rules:
            self.rules.append((value, schema, rules, path))

    def _check_any_of(self, value: Any, branches: list[Schema], path: str) -> None:
        """``anyOf``: when no branch accepts the value, the API server says so and reports the
        first branch's errors."""
        first: _Walker | None = None
        for branch in branches:
            sub = _Walker(self.problems)
            sub.walk(value, branch, path)
            if not sub.errors:
                return
            first = first or sub
        self.add("<nil>", f'Invalid value: "": "{path}" must validate at least one schema (anyOf)')
        if first is not None:
            self.errors += first.errors
            self.blocking = self.blocking or first.blocking

    def _check_type(self, value: Any, schema: Schema, path: str) -> bool:
        if schema.get("x-kubernetes-int-or-string"):
            if isinstance(value, str) or type_ok(value, "integer"):
                return True
            actual = _type_name(value)
            self.add(
                path,
                f'Invalid value: "{actual}": {path} in body must be of type integer,string: '
                f'"{actual}"',
                blocking=True,
            )
            return False
        type_ = schema.get("type")
        if type_ and not type_ok(value, type_):
            actual = _type_name(value)
            self.add(
                path,
                f'Invalid value: "{actual}": {path} in body must be of type {type_}: "{actual}"',
                blocking=True,
            )
            return False
        return True

    def _walk_object(self, value: Mapping[str, Any], schema: Schema, path: str) -> None:
        props: Mapping[str, Schema] = schema.get("properties") or {}
        additional = schema.get("additionalProperties")
        for req in schema.get("required") or ():
            if value.get(req) is None:
                self.add(_child(path, req), "Required value", blocking=True)
        n = len(value)
        max_props = schema.get("maxProperties")
        if max_props is not None and n > max_props:
            self.add(path, f"Too many: {n}: must have at most {max_props} items", blocking=True)
        min_props = schema.get("minProperties")
        if min_props is not None and n < min_props:
            self.invalid(path, n, f"should have at least {min_props} properties")
        for key in sorted(value, key=str):
            key_s = str(key)
            if key_s in props:
                self.walk(value[key], props[key_s], _child(path, key_s))
            elif isinstance(additional, Mapping):
                self.walk(value[key], additional, _child(path, key_s))

    def _walk_array(self, value: Sequence[Any], schema: Schema, path: str) -> None:
        n = len(value)
        max_items = schema.get("maxItems")
        if max_items is not None and n > max_items:
            self.add(path, f"Too many: {n}: must have at most {max_items} items", blocking=True)
        min_items = schema.get("minItems")
        if min_items is not None and n < min_items:
            self.invalid(path, n, f"should have at least {min_items} items")
        items = schema.get("items")
        if isinstance(items, Mapping):
            for i, item in enumerate(value):
                self.walk(item, items, f"{path}[{i}]")
        list_type = schema.get("x-kubernetes-list-type")
        if list_type == "set" or schema.get("uniqueItems"):
            seen: list[str] = []
            for i, item in enumerate(value):
                k = json.dumps(item, sort_keys=True)
                if k in seen:
                    self.add(f"{path}[{i}]", f"Duplicate value: {_show(item)}")
                seen.append(k)
        elif list_type == "map":
            keys = schema.get("x-kubernetes-list-map-keys") or []
            item_props = items.get("properties", {}) if isinstance(items, Mapping) else {}
            seen_keys: set[str] = set()
            for i, item in enumerate(value):
                if not isinstance(item, Mapping):
                    continue
                parts = {}
                for name in keys:
                    v = item.get(name)
                    if v is None:
                        v = (item_props.get(name) or {}).get("default")
                    parts[name] = v
                k = json.dumps(parts, sort_keys=True, separators=(",", ":"))
                if k in seen_keys:
                    self.add(f"{path}[{i}]", f"Duplicate value: {k}")
                seen_keys.add(k)

    def _check_scalar(self, value: Any, schema: Schema, path: str) -> None:
        enum = schema.get("enum")
        if enum is not None and value not in enum:
            supported = ", ".join(json.dumps(e) for e in enum)
            self.add(
                path,
                f"Unsupported value: {_show(value)}: supported values: {supported}",
                blocking=True,
            )
        if isinstance(value, str):
            # Length and pattern are one validator, which stops at its first failure.
            min_len = schema.get("minLength")
            max_len = schema.get("maxLength")
            pattern = schema.get("pattern")
            compiled = _pattern(pattern) if isinstance(pattern, str) else None
            if max_len is not None and len(value) > max_len:
                self.add(path, f"Too long: may not be more than {max_len} bytes", blocking=True)
            elif min_len is not None and len(value) < min_len:
                self.invalid(path, value, f"should be at least {min_len} chars long")
            elif compiled is not None and not compiled.search(value):
                self.invalid(path, value, f"should match '{pattern}'")
            fmt = schema.get("format")
            check = _FORMATS.get(fmt) if isinstance(fmt, str) else None
            if check is not None and not check(value):
                self.add(
                    path,
                    f"Invalid value: {_show(value)}: {path} in body must be of type {fmt}: "
                    f"{_show(value)}",
                    blocking=True,
                )
        elif not isinstance(value, bool) and isinstance(value, int | float):
            self._check_number(value, schema, path)

    def _check_number(self, value: float, schema: Schema, path: str) -> None:
        minimum = schema.get("minimum")
        if minimum is not None:
            if schema.get("exclusiveMinimum") and value <= minimum:
                self.invalid(path, value, f"should be greater than {minimum}")
            elif value < minimum:
                self.invalid(path, value, f"should be greater than or equal to {minimum}")
        maximum = schema.get("maximum")
        if maximum is not None:
            if schema.get("exclusiveMaximum") and value >= maximum:
                self.invalid(path, value, f"should be less than {maximum}")
            elif value > maximum:
                self.invalid(path, value, f"should be less than or equal to {maximum}")
        multiple = schema.get("multipleOf")
        if multiple and value % multiple:
            self.invalid(path, value, f"should be a multiple of {multiple}")

    def _check_rules(
        self, value: Any, schema: Schema, rules: Iterable[Mapping[str, Any]], path: str
    ) -> None:
        type_name = "string" if schema.get("x-kubernetes-int-or-string") else schema.get("type")
        shown_type = f'"{type_name or _type_name(value)}"'
        for rule in rules:
            if not isinstance(rule, Mapping):
                continue
            text = rule.get("rule")
            compiled = compile_rule(text) if isinstance(text, str) else "the rule is not a string"
            if isinstance(compiled, str):
                key = (_schema_path(path), str(text))
                self.problems.setdefault(key, RuleProblem(key[0], str(text), compiled))
                continue
            if compiled.transition:
                continue  # an oldSelf rule: not run on create
            target = path
            fp = rule.get("fieldPath")
            if isinstance(fp, str) and fp:
                target = _rule_field_path(path, fp)
            try:
                ok = evaluate_rule(compiled, value)
            except RuleError as e:
                # The API server's wording: "<error> evaluating rule: <message, else the rule>"
                # (cel-go names a missing key bare: "no such key: evictionSoftGracePeriod").
                error = _NO_SUCH_KEY.sub(r"no such key: \1", str(e))
                message = rule.get("message")
                about = message if isinstance(message, str) and message.strip() else str(text)
                self.rule_errors.append(
                    FieldError(
                        target,
                        f"Invalid value: {shown_type}: {error} evaluating rule: {about.strip()}",
                    )
                )
                continue
            if ok is True:
                continue
            if ok is not False:
                self.rule_errors.append(
                    FieldError(
                        target,
                        f"Invalid value: {shown_type}: rule evaluation error: the rule must "
                        f"evaluate to a boolean, got {_type_name(ok)}",
                    )
                )
                continue
            message = self._message(rule, compiled, value, path)
            reason = rule.get("reason")
            if reason == "FieldValueRequired":
                line = f"Required value: {message}"
            elif reason == "FieldValueForbidden":
                line = f"Forbidden: {message}"
            elif reason == "FieldValueDuplicate":
                line = f"Duplicate value: {json.dumps(message)}"
            else:
                line = f"Invalid value: {shown_type}: {message}"
            self.rule_errors.append(FieldError(target, line))

    def _message(
        self, rule: Mapping[str, Any], compiled: CompiledRule, value: Any, path: str
    ) -> str:
        expr = rule.get("messageExpression")
        if isinstance(expr, str) and expr:
            program = compile_rule(expr)
            if isinstance(program, str):
                key = (_schema_path(path), expr)
                self.problems.setdefault(key, RuleProblem(key[0], expr, program))
            else:
                try:
                    out = evaluate_rule(program, value)
                except RuleError:
                    out = None
                if isinstance(out, str) and out.strip() and "\n" not in out:
                    return out
        message = rule.get("message")
        if isinstance(message, str) and message:
            return message
        return f"failed rule: {compiled.expression}"


_NO_SUCH_KEY = re.compile(r"^no such key: '(.*)'$")


def _schema_path(path: str) -> str:
    """A field path with element indexes dropped (the place in the schema)."""
    return re.sub(r"\[\d+\]", "[*]", path)


# --- the public face -------------------------------------------------------------------------


class CRDSchema:
    """The served versions of one CRD, ready to validate objects of its kind."""

    def __init__(self, crd: Mapping[str, Any]) -> None:
        spec = crd["spec"]
        self.name = str(crd["metadata"]["name"])
        self.group = str(spec["group"])
        self.kind = str(spec["names"]["kind"])
        self.schemas: dict[str, Schema] = {}
        for version in spec.get("versions") or ():
            if not version.get("served"):
                continue
            s = (version.get("schema") or {}).get("openAPIV3Schema")
            if isinstance(s, Mapping):
                self.schemas[f"{self.group}/{version['name']}"] = s
        self._problems: dict[tuple[str, str], RuleProblem] = {}

    @property
    def problems(self) -> list[RuleProblem]:
        """Rules of this CRD that do not compile (found so far), each once."""
        return list(self._problems.values())

    def serves(self, api_version: str, kind: str) -> bool:
        return kind == self.kind and api_version in self.schemas

    def validate(self, obj: Mapping[str, Any]) -> list[FieldError]:
        """Field errors of ``obj`` on create: schema errors first, then CEL rule failures."""
        schema = self.schemas[str(obj.get("apiVersion"))]
        return validate_object(obj, schema, self._problems)

    def check_spec(self, version: str, spec: Any) -> SpecCheck:
        """Validate ``spec`` as the ``spec`` of an object of this kind at ``version`` (``v1``,
        without the group) on create, and default it: the errors are
        :meth:`validate`'s for ``{apiVersion, kind, metadata: {name}, spec}`` (field paths
        start at ``spec``), and :attr:`SpecCheck.spec` is ``spec`` after structural
        defaulting (a copy; a spec that is not an object is returned as given). One call for
        a provider's NodeClass model over the CRD it ships."""
        api_version = f"{self.group}/{version}"
        schema = self.schemas.get(api_version)
        if schema is None:
            raise LookupError(f"the CRD {self.name} serves no version {version!r}")
        obj = {
            "apiVersion": api_version,
            "kind": self.kind,
            "metadata": {"name": "spec-check"},
            "spec": copy.deepcopy(spec),
        }
        errors = validate_object(obj, schema, self._problems)
        defaulted = apply_defaults(obj, schema)
        return SpecCheck(errors=tuple(errors), spec=defaulted.get("spec"))


@frozen
class SpecCheck:
    """What :meth:`CRDSchema.check_spec` found: the field errors (empty when the API server
    would accept the object) and the defaulted spec."""

    errors: tuple[FieldError, ...]
    spec: Any


def validate_object(
    obj: Mapping[str, Any],
    schema: Schema,
    problems: dict[tuple[str, str], RuleProblem] | None = None,
) -> list[FieldError]:
    """Field errors of ``obj`` against ``schema`` after structural defaulting."""
    value = apply_defaults(copy.deepcopy(dict(obj)), schema)
    meta = value.get("metadata")
    if isinstance(meta, Mapping):
        # Rules at the root see only metadata.name and generateName.
        value["metadata"] = {k: meta[k] for k in ("name", "generateName") if k in meta}
    unknown = unknown_fields(value, schema)
    if unknown:
        # The API server refuses such an object while decoding it (kubectl apply's strict field
        # validation), before any other check.
        return [FieldError("", f'strict decoding error: unknown field "{u}"') for u in unknown]
    walker = _Walker(problems if problems is not None else {})
    walker.walk(value, schema, "")
    if walker.blocking:
        # A wrong type, missing required field, unsupported value or exceeded size stops the
        # API server from running the CEL rules at all; it says so in one more error.
        return [*walker.errors, FieldError("<nil>", f"Invalid value: null: {RULES_NOT_CHECKED}")]
    for args in walker.rules:
        walker._check_rules(*args)
    return list(dict.fromkeys(walker.errors + walker.rule_errors))


RULES_NOT_CHECKED = (
    "some validation rules were not checked because the object was invalid; correct the "
    "existing errors to complete validation"
)


def unknown_fields(
    value: Any, schema: Schema | None, path: str = "", root: bool = True
) -> list[str]:
    """The paths the API server's pruning would drop (fields the schema does not declare),
    as its strict field validation names them."""
    if schema is not None and schema.get("x-kubernetes-preserve-unknown-fields"):
        if isinstance(value, Mapping):
            props = schema.get("properties") or {}
            add = schema.get("additionalProperties")
            out: list[str] = []
            for k, v in value.items():
                sub = props.get(k) if k in props else (add if isinstance(add, Mapping) else None)
                if sub is not None:
                    out += unknown_fields(v, sub, _child(path, str(k)), False)
            return out
        if isinstance(value, list) and isinstance(schema.get("items"), Mapping):
            return [
                u
                for i, v in enumerate(value)
                for u in unknown_fields(v, schema["items"], f"{path}[{i}]", False)
            ]
        return []
    out = []
    if isinstance(value, Mapping):
        props = (schema or {}).get("properties") or {}
        add = (schema or {}).get("additionalProperties")
        for k in sorted(value, key=str):
            key = str(k)
            sub_path = _child(path, key)
            if root and key in ("apiVersion", "kind", "metadata"):
                continue  # the object's type and metadata are the API server's, not the schema's
            if key in props:
                out += unknown_fields(value[k], props[key], sub_path, False)
            elif isinstance(add, Mapping):
                out += unknown_fields(value[k], add, sub_path, False)
            elif add is not True:
                out.append(sub_path)
    elif isinstance(value, list):
        items = (schema or {}).get("items")
        sub = items if isinstance(items, Mapping) else None
        for i, v in enumerate(value):
            out += unknown_fields(v, sub, f"{path}[{i}]", False)
    return out


__all__ = [
    "RULES_NOT_CHECKED",
    "CRDSchema",
    "FieldError",
    "RuleProblem",
    "SpecCheck",
    "apply_defaults",
    "unknown_fields",
    "validate_object",
]
