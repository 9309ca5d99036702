"""Kubernetes' CEL library on the ``common-expression-language`` engine (``import cel``).

Shared by the DRA device selectors (:mod:`karpenter_core.scheduling.dynamicresources.cel`)
and the CRD ``x-kubernetes-validations`` rules (:mod:`karpenter_core.apis.crds.celrules`):
``quantity()``/``semver()`` and their methods, cel-go's string extensions, ``find``/``findAll``,
``cel.bind`` rewritten to a one-element ``map``, the engine imported on first use, and engine
errors turned into one line.
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Callable, Mapping
from typing import Any

from attrs import frozen

from karpenter_core.apis.quantity import QuantityError, parse_quantity

# --- Kubernetes' CEL library: quantity and semver ------------------------------------------

_Q = "__quantity__"
_V = "__semver__"


class _CallError(Exception):
    """Raised by a library function; the engine reports it as an evaluation error."""


def _quantity_value(text: Any) -> dict[str, str]:
    if not isinstance(text, str):
        raise _CallError("quantity() takes a string")
    try:
        return {_Q: str(parse_quantity(text))}
    except QuantityError as e:
        raise _CallError(str(e)) from None


def _milli(v: Any) -> int:
    if isinstance(v, Mapping) and _Q in v:
        return int(v[_Q])
    raise _CallError("expected a quantity")


_SEMVER = re.compile(
    r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
    r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?"
)


def _parse_semver(text: str) -> tuple[int, int, int, str] | None:
    m = _SEMVER.fullmatch(text)
    if m is None:
        return None
    return (int(m.group(1)), int(m.group(2)), int(m.group(3)), m.group(4) or "")


def _normalize_semver(text: str) -> str:
    """``v1.2`` -> ``1.2.0`` (what ``semver(s, true)`` accepts): a ``v`` prefix, missing
    minor/patch and leading zeros are forgiven."""
    t = text[1:] if text.startswith("v") else text
    core, sep, rest = t.partition("-") if "-" in t.split("+")[0] else t.partition("+")
    parts = core.split(".")
    if not 1 <= len(parts) <= 3 or not all(p.isdigit() for p in parts):
        return text
    parts = [str(int(p)) for p in parts] + ["0"] * (3 - len(parts))
    return ".".join(parts) + (sep + rest if sep else "")


def _semver_value(text: Any, normalize: Any = False) -> dict[str, str]:
    if not isinstance(text, str):
        raise _CallError("semver() takes a string")
    if normalize is True:
        text = _normalize_semver(text)
    parsed = _parse_semver(text)
    if parsed is None:
        raise _CallError(f"invalid semver {text!r}")
    major, minor, patch, pre = parsed
    # Build metadata does not take part in precedence or equality: drop it.
    return {_V: f"{major}.{minor}.{patch}" + (f"-{pre}" if pre else "")}


def _semver_key(v: Any) -> tuple[int, int, int, str]:
    if isinstance(v, Mapping) and _V in v:
        parsed = _parse_semver(str(v[_V]))
        if parsed is not None:
            return parsed
    raise _CallError("expected a semver")


def _compare_pre(a: str, b: str) -> int:
    """semver.org rule 11 for pre-release identifiers (no pre-release ranks higher)."""
    if a == b:
        return 0
    if not a:
        return 1
    if not b:
        return -1
    for x, y in zip(a.split("."), b.split("."), strict=False):
        if x == y:
            continue
        if x.isdigit() and y.isdigit():
            return -1 if int(x) < int(y) else 1
        if x.isdigit():
            return -1
        if y.isdigit():
            return 1
        return -1 if x < y else 1
    return (len(a.split(".")) > len(b.split("."))) - (len(a.split(".")) < len(b.split(".")))


def _compare(a: Any, b: Any) -> int:
    if isinstance(a, Mapping) and _Q in a:
        x, y = _milli(a), _milli(b)
        return (x > y) - (x < y)
    if isinstance(a, Mapping) and _V in a:
        ka, kb = _semver_key(a), _semver_key(b)
        if ka[:3] != kb[:3]:
            return -1 if ka[:3] < kb[:3] else 1
        return _compare_pre(ka[3], kb[3])
    raise _CallError("compareTo applies to quantities and semvers")


def _add(a: Any, b: Any) -> dict[str, str]:
    other = b * 1000 if isinstance(b, int) and not isinstance(b, bool) else _milli(b)
    return {_Q: str(_milli(a) + other)}


def _sub(a: Any, b: Any) -> dict[str, str]:
    other = b * 1000 if isinstance(b, int) and not isinstance(b, bool) else _milli(b)
    return {_Q: str(_milli(a) - other)}


def _as_integer(a: Any) -> int:
    m = _milli(a)
    if m % 1000:
        raise _CallError("quantity is not an integer")
    n = m // 1000
    if not -(2**63) <= n < 2**63:
        raise _CallError("quantity overflows int64")
    return n


def _is_quantity(text: Any) -> bool:
    try:
        _quantity_value(text)
    except _CallError:
        return False
    return True


def _is_semver(text: Any, normalize: Any = False) -> bool:
    try:
        _semver_value(text, normalize)
    except _CallError:
        return False
    return True


def _semver_part(i: int) -> Callable[[Any], int]:
    def part(v: Any) -> int:
        major, minor, patch, _ = _semver_key(v)
        return (major, minor, patch)[i]

    return part


def _find(s: Any, pattern: Any) -> str:
    m = re.search(str(pattern), str(s))
    return m.group(0) if m else ""


def _find_all(s: Any, pattern: Any, limit: Any = -1) -> list[str]:
    found = [m.group(0) for m in re.finditer(str(pattern), str(s))]
    return found if limit < 0 else found[:limit]


_K8S_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "quantity": _quantity_value,
    "isQuantity": _is_quantity,
    "semver": _semver_value,
    "isSemver": _is_semver,
    "compareTo": _compare,
    "isGreaterThan": lambda a, b: _compare(a, b) > 0,
    "isLessThan": lambda a, b: _compare(a, b) < 0,
    "add": _add,
    "sub": _sub,
    "sign": lambda a: (_milli(a) > 0) - (_milli(a) < 0),
    "isInteger": lambda a: _milli(a) % 1000 == 0,
    "asInteger": _as_integer,
    "asApproximateFloat": lambda a: _milli(a) / 1000.0,
    "major": _semver_part(0),
    "minor": _semver_part(1),
    "patch": _semver_part(2),
    "find": _find,
    "findAll": _find_all,
}

_STRING_EXTENSIONS = [
    "charAt",
    "indexOf",
    "lastIndexOf",
    "substring",
    "replace",
    "split",
    "join",
    "lowerAscii",
    "upperAscii",
    "trim",
    "strings.quote",
    "sets.contains",
    "sets.equivalent",
    "sets.intersects",
]


# What the engine implements itself (operators are named _x_, !_, @...).
_NATIVE = frozenset(
    [
        "size",
        "int",
        "uint",
        "double",
        "string",
        "bytes",
        "bool",
        "dyn",
        "type",
        "timestamp",
        "duration",
        "matches",
        "startsWith",
        "endsWith",
        "contains",
        "getDate",
        "getDayOfMonth",
        "getDayOfWeek",
        "getDayOfYear",
        "getFullYear",
        "getHours",
        "getMilliseconds",
        "getMinutes",
        "getMonth",
        "getSeconds",
    ]
)


@frozen
class _Library:
    engine: Any
    functions: Mapping[str, Callable[..., Any]]
    known: frozenset[str]


@functools.cache
def _library() -> _Library:
    """The CEL engine, imported on first use. Its package imports its command-line front end
    (rich, typer, prompt_toolkit) with it: about 17 MB and 0.3 s at start-up that an
    operator whose pods claim no devices should not pay."""
    import cel
    from cel import stdlib

    functions: dict[str, Callable[..., Any]] = {
        **{n: f for n, f in stdlib.STDLIB_FUNCTIONS.items() if n in _STRING_EXTENSIONS},
        **_K8S_FUNCTIONS,
    }
    return _Library(cel, functions, _NATIVE | frozenset(functions))


class _QuietLibraryFailures(logging.Filter):
    """The engine logs a warning for every Python function that raises; ours raise on bad
    input by design (the caller gets the CELError), so those warnings are noise."""

    def filter(self, record: logging.LogRecord) -> bool:
        msg = record.getMessage()
        return not (msg.startswith("Python function '") and "_CallError" in msg)


logging.getLogger("cel").addFilter(_QuietLibraryFailures())


_STRING_LITERAL = re.compile(r'"((?:[^"\\\n]|\\.)*)"|\'((?:[^\'\\\n]|\\.)*)\'')


def _split_args(text: str, start: int) -> tuple[list[str], int] | None:
    """Top-level comma-separated arguments of the call whose ``(`` is at ``start - 1``;
    returns them and the index after the closing ``)``."""
    depth = 0
    args: list[str] = []
    begin = start
    i = start
    while i < len(text):
        c = text[i]
        if c in "\"'":
            m = _STRING_LITERAL.match(text, i)
            if m is None:
                return None
            i = m.end()
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            if depth == 0:
                args.append(text[begin:i])
                return args, i + 1
            depth -= 1
        elif c == "," and depth == 0:
            args.append(text[begin:i])
            begin = i + 1
        i += 1
    return None


_BIND = re.compile(r"\bcel\s*\.\s*bind\s*\(")


def _rewrite_bind(expression: str) -> str | None:
    """``cel.bind(v, init, body)`` -> ``[init].map(v, body)[0]`` (same scoping, same value);
    None when a bind is malformed."""
    out = expression
    while True:
        m = _find_code(_BIND, out)
        if m is None:
            return out
        parsed = _split_args(out, m.end())
        if parsed is None:
            return None
        args, end = parsed
        if len(args) != 3 or not re.fullmatch(r"\s*[A-Za-z_][A-Za-z0-9_]*\s*", args[0]):
            return None
        var, init, body = (a.strip() for a in args)
        out = f"{out[: m.start()]}[{init}].map({var}, {body})[0]{out[end:]}"


def _find_code(pattern: re.Pattern[str], text: str) -> re.Match[str] | None:
    """The first match of ``pattern`` outside string literals."""
    pos = 0
    while True:
        m = pattern.search(text, pos)
        if m is None:
            return None
        inside = any(s.start() < m.start() < s.end() for s in _STRING_LITERAL.finditer(text))
        if not inside:
            return m
        pos = m.start() + 1


_LIBRARY_FAILURE = re.compile(
    r"Function '([\w.]+)' error: Python function call failed: _CallError: (.*?)\.?"
    r" Check function arguments and their types\.?$"
)


def _one_line(e: BaseException) -> str:
    text = str(e).strip() or type(e).__name__
    if isinstance(e, KeyError):
        text = f"no such key: {text}"
    text = " ".join(text.split())
    return _LIBRARY_FAILURE.sub(r"\1(): \2", text)
