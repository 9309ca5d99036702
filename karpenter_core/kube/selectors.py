"""Label and field selectors with the API server's syntax and matching rules.

Label selectors come in two shapes: the string form used on the wire
(``app=web,tier in (a,b),!legacy``) and the ``metav1.LabelSelector`` dict form used inside
objects (``matchLabels`` / ``matchExpressions``). Both parse into the same
:class:`~karpenter_core.apis.labelselector.LabelSelector` (the one implementation of the
matching rules, re-exported here), whose ``str()`` is the canonical string form, so a
selector built from an object can be sent to a real API server unchanged.

Field selectors only support ``=``, ``==`` and ``!=`` (the API server has no set-based
field selectors); which fields a kind supports is the server's business, not this module's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from attrs import frozen

from karpenter_core.apis.labelselector import (
    DOES_NOT_EXIST,
    EQUALS,
    EVERYTHING,
    EXISTS,
    GREATER_THAN,
    IN,
    LESS_THAN,
    NOT_EQUALS,
    NOT_IN,
    NOTHING,
    LabelRequirement,
    LabelSelector,
    SelectorError,
    requirement,
)

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
            reqs.append(requirement(ident("a label key"), DOES_NOT_EXIST, ()))
        else:
            key = ident("a label key")
            op = peek()
            if op is None or op == ",":
                reqs.append(requirement(key, EXISTS, ()))
            elif op in ("=", "==", "!="):
                take(op)
                nxt = peek()
                value = "" if nxt is None or nxt == "," else ident("a label value")
                reqs.append(requirement(key, EQUALS if op == "=" else op, (value,)))
            elif op in ("<", ">"):
                take(op)
                reqs.append(
                    requirement(
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
                reqs.append(requirement(key, op, values))
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


def label_selector_from_dict(selector: Mapping[str, Any] | None) -> LabelSelector:
    """A ``metav1.LabelSelector`` mapping as a :class:`LabelSelector` (None selects
    nothing, ``{}`` everything), as ``metav1.LabelSelectorAsSelector`` gives it to
    PodDisruptionBudgets (policy/v1) and most controllers; raises :class:`SelectorError`."""
    return LabelSelector.from_dict(selector)


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
