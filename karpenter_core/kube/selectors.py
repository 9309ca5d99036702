"""Label and field selectors with the API server's syntax and matching rules.

Label selectors come in two shapes: the string form used on the wire
(``app=web,tier in (a,b),!legacy``) and the ``metav1.LabelSelector`` dict form used inside
objects (``matchLabels`` / ``matchExpressions``). Both parse into the same
:class:`LabelSelector`, whose ``str()`` is the canonical string form, so a selector built
from an object can be sent to a real API server unchanged.

Field selectors only support ``=``, ``==`` and ``!=`` (the API server has no set-based
field selectors); which fields a kind supports is the server's business, not this module's.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from attrs import frozen

__all__ = [
    "EVERYTHING",
    "NOTHING",
    "FieldRequirement",
    "FieldSelector",
    "LabelRequirement",
    "LabelSelector",
    "SelectorError",
    "field_value",
    "label_selector_from_dict",
    "parse_field_selector",
    "parse_label_selector",
]


class SelectorError(ValueError):
    """A selector that cannot be parsed; the message names the offending part."""


# Operators, in the spelling the string form uses.
IN = "in"
NOT_IN = "notin"
EQUALS = "="
DOUBLE_EQUALS = "=="
NOT_EQUALS = "!="
EXISTS = "exists"
DOES_NOT_EXIST = "!"
GREATER_THAN = "gt"
LESS_THAN = "lt"

_NAME_RE = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_DNS1123_SUBDOMAIN_RE = re.compile(
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
)
_VALUE_RE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$")


def validate_label_key(key: str) -> str | None:
    """Why ``key`` is not a valid label key (a qualified name), or None when it is."""
    prefix, slash, name = key.rpartition("/")
    if slash and (not prefix or len(prefix) > 253 or not _DNS1123_SUBDOMAIN_RE.match(prefix)):
        return f"invalid label key {key!r}: prefix must be a DNS subdomain"
    if not name or len(name) > 63 or not _NAME_RE.match(name):
        return (
            f"invalid label key {key!r}: name part must be 63 characters or less, "
            "alphanumeric, '-', '_' or '.', starting and ending with an alphanumeric character"
        )
    return None


def validate_label_value(value: str) -> str | None:
    """Why ``value`` is not a valid label value, or None when it is."""
    if len(value) > 63 or not _VALUE_RE.match(value):
        return (
            f"invalid label value {value!r}: must be 63 characters or less, empty or "
            "alphanumeric, '-', '_' or '.', starting and ending with an alphanumeric character"
        )
    return None


@frozen
class LabelRequirement:
    """One clause of a label selector."""

    key: str
    operator: str
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        op = self.operator
        if op in (IN, EQUALS, DOUBLE_EQUALS):
            return self.key in labels and labels[self.key] in self.values
        if op in (NOT_IN, NOT_EQUALS):
            return self.key not in labels or labels[self.key] not in self.values
        if op == EXISTS:
            return self.key in labels
        if op == DOES_NOT_EXIST:
            return self.key not in labels
        if op in (GREATER_THAN, LESS_THAN):
            if self.key not in labels:
                return False
            try:
                have = int(labels[self.key])
            except ValueError:
                return False
            want = int(self.values[0])
            return have > want if op == GREATER_THAN else have < want
        raise AssertionError(f"unknown operator {op}")  # pragma: no cover - guarded at build

    def __str__(self) -> str:
        op = self.operator
        if op == EXISTS:
            return self.key
        if op == DOES_NOT_EXIST:
            return f"!{self.key}"
        if op in (IN, NOT_IN):
            return f"{self.key} {op} ({','.join(sorted(self.values))})"
        if op == GREATER_THAN:
            return f"{self.key}>{self.values[0]}"
        if op == LESS_THAN:
            return f"{self.key}<{self.values[0]}"
        if op == DOUBLE_EQUALS:
            return f"{self.key}=={self.values[0]}"
        return f"{self.key}{op}{self.values[0]}"


def _requirement(key: str, operator: str, values: Iterable[str]) -> LabelRequirement:
    problem = validate_label_key(key)
    if problem:
        raise SelectorError(problem)
    vals = tuple(values)
    if operator in (IN, NOT_IN):
        if not vals:
            raise SelectorError(
                f"label selector for {key!r}: operator {operator!r} needs at least one value"
            )
    elif operator in (EQUALS, DOUBLE_EQUALS, NOT_EQUALS):
        if len(vals) != 1:
            raise SelectorError(
                f"label selector for {key!r}: operator {operator!r} needs exactly one value"
            )
    elif operator in (EXISTS, DOES_NOT_EXIST):
        if vals:
            raise SelectorError(
                f"label selector for {key!r}: operator {operator!r} takes no values"
            )
    elif operator in (GREATER_THAN, LESS_THAN):
        if len(vals) != 1:
            raise SelectorError(
                f"label selector for {key!r}: operator {operator!r} needs exactly one value"
            )
        try:
            int(vals[0])
        except ValueError:
            raise SelectorError(
                f"label selector for {key!r}: value {vals[0]!r} of {operator!r} must be an integer"
            ) from None
    else:
        raise SelectorError(f"label selector for {key!r}: unknown operator {operator!r}")
    if operator not in (GREATER_THAN, LESS_THAN):
        for v in vals:
            problem = validate_label_value(v)
            if problem:
                raise SelectorError(f"label selector for {key!r}: {problem}")
    return LabelRequirement(
        key, operator, tuple(sorted(set(vals))) if operator in (IN, NOT_IN) else vals
    )


@frozen
class LabelSelector:
    """A conjunction of label requirements; ``nothing`` selectors match no object at all."""

    requirements: tuple[LabelRequirement, ...] = ()
    nothing: bool = False

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        if self.nothing:
            return False
        lbls = labels or {}
        return all(r.matches(lbls) for r in self.requirements)

    @property
    def empty(self) -> bool:
        """True when the selector matches every object."""
        return not self.nothing and not self.requirements

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.requirements)


EVERYTHING = LabelSelector()
NOTHING = LabelSelector(nothing=True)

_SPECIAL = set(" \t\n,()=!<>")


def _tokens(text: str) -> list[str]:
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in " \t\n":
            i += 1
        elif c in ",()":
            out.append(c)
            i += 1
        elif c == "!" and i + 1 < n and text[i + 1] == "=":
            out.append("!=")
            i += 2
        elif c == "=" and i + 1 < n and text[i + 1] == "=":
            out.append("==")
            i += 2
        elif c in "=!<>":
            out.append(c)
            i += 1
        else:
            j = i
            while j < n and text[j] not in _SPECIAL:
                j += 1
            out.append(text[i:j])
            i = j
    return out


def parse_label_selector(text: str | None) -> LabelSelector:
    """Parse the string form of a label selector; empty or None selects everything."""
    if text is None or not text.strip():
        return EVERYTHING
    toks = _tokens(text)
    pos = 0
    reqs: list[LabelRequirement] = []

    def peek() -> str | None:
        return toks[pos] if pos < len(toks) else None

    def take(what: str) -> str:
        nonlocal pos
        tok = peek()
        if tok is None:
            raise SelectorError(f"label selector {text!r}: expected {what} at end of input")
        pos += 1
        return tok

    def ident(what: str) -> str:
        tok = take(what)
        if tok in {",", "(", ")", "=", "==", "!=", "!", "<", ">"}:
            raise SelectorError(f"label selector {text!r}: expected {what}, found {tok!r}")
        return tok

    while True:
        if peek() == "!":
            take("!")
            reqs.append(_requirement(ident("a label key"), DOES_NOT_EXIST, ()))
        else:
            key = ident("a label key")
            op = peek()
            if op is None or op == ",":
                reqs.append(_requirement(key, EXISTS, ()))
            elif op in ("=", "==", "!="):
                take(op)
                nxt = peek()
                value = "" if nxt is None or nxt == "," else ident("a label value")
                reqs.append(_requirement(key, EQUALS if op == "=" else op, (value,)))
            elif op in ("<", ">"):
                take(op)
                reqs.append(
                    _requirement(
                        key, GREATER_THAN if op == ">" else LESS_THAN, (ident("an integer"),)
                    )
                )
            elif op in (IN, NOT_IN):
                take(op)
                if take("'('") != "(":
                    raise SelectorError(f"label selector {text!r}: expected '(' after {op!r}")
                values: list[str] = []
                while True:
                    tok = take("a value or ')'")
                    if tok == ")":
                        break
                    if tok == ",":
                        continue
                    if tok in {"(", "=", "==", "!=", "!", "<", ">"}:
                        raise SelectorError(
                            f"label selector {text!r}: unexpected {tok!r} in value list"
                        )
                    values.append(tok)
                reqs.append(_requirement(key, op, values))
            else:
                raise SelectorError(
                    f"label selector {text!r}: unknown operator {op!r} after {key!r}"
                )
        sep = peek()
        if sep is None:
            break
        if sep != ",":
            raise SelectorError(f"label selector {text!r}: expected ',' but found {sep!r}")
        take(",")
        if peek() is None:
            raise SelectorError(f"label selector {text!r}: trailing ','")
    return LabelSelector(tuple(sorted(reqs, key=lambda r: r.key)))


_DICT_OPERATORS = {"In": IN, "NotIn": NOT_IN, "Exists": EXISTS, "DoesNotExist": DOES_NOT_EXIST}


def label_selector_from_dict(selector: Mapping[str, Any] | None) -> LabelSelector:
    """Convert a ``metav1.LabelSelector`` dict; None selects nothing, ``{}`` everything.

    This mirrors ``metav1.LabelSelectorAsSelector``, which PodDisruptionBudgets (policy/v1)
    and most controllers use.
    """
    if selector is None:
        return NOTHING
    if not isinstance(selector, Mapping):
        raise SelectorError(f"label selector must be a mapping, got {type(selector).__name__}")
    reqs: list[LabelRequirement] = []
    match_labels = selector.get("matchLabels") or {}
    if not isinstance(match_labels, Mapping):
        raise SelectorError("label selector: matchLabels must be a mapping")
    for k, v in match_labels.items():
        reqs.append(_requirement(str(k), EQUALS, (str(v),)))
    exprs = selector.get("matchExpressions") or []
    if not isinstance(exprs, list):
        raise SelectorError("label selector: matchExpressions must be a list")
    for i, expr in enumerate(exprs):
        if not isinstance(expr, Mapping):
            raise SelectorError(f"label selector: matchExpressions[{i}] must be a mapping")
        op = _DICT_OPERATORS.get(str(expr.get("operator")))
        if op is None:
            raise SelectorError(
                f"label selector: matchExpressions[{i}].operator {expr.get('operator')!r} is not "
                "one of In, NotIn, Exists, DoesNotExist"
            )
        values = expr.get("values") or []
        reqs.append(_requirement(str(expr.get("key", "")), op, [str(v) for v in values]))
    return LabelSelector(tuple(sorted(reqs, key=lambda r: r.key)))


@frozen
class FieldRequirement:
    """``field=value`` or ``field!=value``."""

    field: str
    operator: str
    value: str

    def matches(self, fields: Mapping[str, str]) -> bool:
        have = fields.get(self.field, "")
        return have == self.value if self.operator == EQUALS else have != self.value

    def __str__(self) -> str:
        escaped = self.value.replace("\\", "\\\\").replace(",", "\\,").replace("=", "\\=")
        return f"{self.field}{self.operator}{escaped}"


@frozen
class FieldSelector:
    """A conjunction of field requirements."""

    requirements: tuple[FieldRequirement, ...] = ()

    def matches(self, fields: Mapping[str, str]) -> bool:
        return all(r.matches(fields) for r in self.requirements)

    @property
    def empty(self) -> bool:
        return not self.requirements

    def fields(self) -> list[str]:
        return [r.field for r in self.requirements]

    def exact(self, field: str) -> str | None:
        """The value ``field`` must equal, when the selector pins it (lets servers use indexes)."""
        for r in self.requirements:
            if r.field == field and r.operator == EQUALS:
                return r.value
        return None

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.requirements)


BOOLEAN_FIELDS = frozenset({"spec.unschedulable", "spec.hostNetwork"})
"""Fields the server compares as ``true``/``false`` even when the object leaves them unset."""


def field_value(obj: Mapping[str, Any], path: str) -> str:
    """The string an API server compares a field selector against (``spec.nodeName`` of an
    unbound pod is ``""``; an unset boolean field is ``"false"``; an Event's ``source`` is
    its component)."""
    cur: Any = obj
    for part in path.split("."):
        if not isinstance(cur, Mapping):
            cur = None
            break
        cur = cur.get(part)
    if path == "source" and isinstance(obj.get("source"), Mapping):
        cur = obj["source"].get("component")
    if isinstance(cur, bool):
        return "true" if cur else "false"
    if cur is None:
        return "false" if path in BOOLEAN_FIELDS else ""
    return str(cur)


def _split_unescaped(text: str, sep: str) -> list[str]:
    parts: list[str] = []
    cur: list[str] = []
    i = 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            cur.append(text[i : i + 2])
            i += 2
            continue
        if c == sep:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(c)
        i += 1
    parts.append("".join(cur))
    return parts


def _unescape(value: str, text: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(value):
        c = value[i]
        if c == "\\":
            if i + 1 >= len(value) or value[i + 1] not in "\\,=":
                raise SelectorError(f"field selector {text!r}: invalid escape in {value!r}")
            out.append(value[i + 1])
            i += 2
            continue
        if c in ",=":
            raise SelectorError(f"field selector {text!r}: unescaped {c!r} in value {value!r}")
        out.append(c)
        i += 1
    return "".join(out)


def parse_field_selector(text: str | None) -> FieldSelector:
    """Parse ``a=b,c!=d`` (``==`` is accepted for ``=``; ``\\,`` ``\\=`` ``\\\\`` escape)."""
    if text is None or not text.strip():
        return FieldSelector()
    reqs: list[FieldRequirement] = []
    for part in _split_unescaped(text, ","):
        if not part.strip():
            raise SelectorError(f"field selector {text!r}: empty requirement")
        for op in ("!=", "==", "="):
            idx = _find_unescaped(part, op)
            if idx >= 0:
                field = part[:idx].strip()
                value = part[idx + len(op) :]
                if not field:
                    raise SelectorError(f"field selector {text!r}: missing field name in {part!r}")
                reqs.append(
                    FieldRequirement(
                        field, NOT_EQUALS if op == "!=" else EQUALS, _unescape(value, text)
                    )
                )
                break
        else:
            raise SelectorError(f"field selector {text!r}: {part!r} has no operator (=, == or !=)")
    return FieldSelector(tuple(reqs))


def _find_unescaped(text: str, op: str) -> int:
    i = 0
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text.startswith(op, i):
            return i
        i += 1
    return -1
