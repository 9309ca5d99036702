"""CEL device selectors, evaluated the way Kubernetes' DRA scheduler evaluates them.

A DeviceClass or a request selects devices with CEL expressions over one ``device``:
``device.driver``, ``device.attributes[domain].name`` (int, bool, string or semver),
``device.capacity[domain].name`` (a quantity) and ``device.allowMultipleAllocations``.
Unqualified attribute and capacity names belong to the device's driver domain. Looking up
a domain the device does not have gives an empty map (so ``has()`` is false and ``in`` is
false); reading a missing name is an evaluation error, which aborts the match.

The engine is ``common-expression-language`` (``import cel``, the Rust ``cel`` crate behind
PyO3). It was measured against ``cel-python`` (``celpy``, pure Python) on the selectors the
allocator meets (compile / evaluate, microseconds, one core of the dev machine):

====================================================================  ===========  =============
expression                                                            Rust         celpy
====================================================================  ===========  =============
``device.driver == "gpu.example.com"``                                13 / 0.2     82 / 166
``device.attributes["gpu.example.com"].model == "a100"``              23 / 0.6     228 / 253
``device.capacity["gpu.example.com"].memory.compareTo(quantity(..))``  48 / 7.8     561 / 690
``device.attributes["gpu.example.com"].index < 4``                     24 / 0.6     264 / 257
====================================================================  ===========  =============

(With a fresh device per evaluation, as here, the Rust engine's Python-to-CEL conversion
adds about 20-25 us.) Neither library knows Kubernetes' CEL environment, so this module adds
it: ``quantity()``/``isQuantity()`` with ``compareTo``, ``isGreaterThan``, ``isLessThan``,
``add``, ``sub``, ``sign``, ``isInteger``, ``asInteger``, ``asApproximateFloat``; ``semver()``/
``isSemver()`` with ``compareTo``, ``isGreaterThan``, ``isLessThan``, ``major``, ``minor``,
``patch`` (version attributes are semvers); cel-go's string extensions; ``find``/``findAll``;
and ``cel.bind``, rewritten to a one-element ``map`` (the engine has no such macro). Quantities
and semvers travel through the engine as tagged maps, so ``==`` compares them by value.

What still differs from cel-go: there is no static type check, so ``device.driver == 1`` is a
runtime error rather than a compile error; functions nobody registered are caught at compile
time by name (``undeclared reference``), not by overload; cost limits are not enforced.

Every failure is a :class:`CELError` value naming the expression: callers turn it into the
pod's error. No exception escapes :func:`compile_selector`, :func:`evaluate` or
:func:`device_matches`.
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Callable, Mapping
from typing import Any

from attrs import frozen

from karpenter_core.apis.quantity import QuantityError, parse_quantity
from karpenter_core.apis.resource import Device, DeviceAttribute

COMPILE = "compile"
RUNTIME = "runtime"

MAX_EXPRESSION_LENGTH = 10 * 1024
"""The API's limit on a selector expression (10 Ki characters)."""


@frozen
class CELError:
    """A selector that cannot be compiled (``kind == "compile"``) or evaluated (``runtime``)."""

    expression: str
    kind: str
    reason: str

    def __str__(self) -> str:
        verb = "failed to compile" if self.kind == COMPILE else "evaluation failed"
        return f"CEL expression {self.expression!r} {verb}: {self.reason}"


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


# --- compile -------------------------------------------------------------------------------


@frozen(eq=False)
class CompiledSelector:
    """A compiled selector. ``domains`` are the string literals of the expression: each is
    given an empty map in ``device.attributes``/``device.capacity`` when the device lacks it,
    which is how upstream answers a lookup of an unknown domain."""

    expression: str
    program: Any
    domains: frozenset[str]
    functions: Mapping[str, Callable[..., Any]]
    """Only the library functions the expression calls: handing the engine all of them on
    every evaluation would triple its cost."""


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


@functools.lru_cache(maxsize=4096)
def compile_selector(expression: str) -> CompiledSelector | CELError:
    """Compile ``expression`` once (cached by its text); a bad one is a :class:`CELError`."""
    if len(expression) > MAX_EXPRESSION_LENGTH:
        return CELError(expression, COMPILE, "expression is longer than 10Ki characters")
    source = _rewrite_bind(expression)
    if source is None:
        return CELError(expression, COMPILE, "cel.bind takes (variable, value, expression)")
    library = _library()
    try:
        program = library.engine.compile(source)
        functions = program.functions()
    except Exception as e:  # the engine raises ValueError, but any failure is the selector's
        return CELError(expression, COMPILE, _one_line(e))
    for name in functions:
        if name[:1] in "_!@-" or name in library.known:
            continue
        return CELError(expression, COMPILE, f"undeclared reference to {name!r}")
    domains = frozenset(a or b for a, b in _STRING_LITERAL.findall(expression))
    used = {n: library.functions[n] for n in functions if n in library.functions}
    return CompiledSelector(expression, program, domains, used)


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


# --- evaluate ------------------------------------------------------------------------------


def _attribute_value(a: DeviceAttribute) -> Any:
    if a.version_value is not None:
        try:
            return _semver_value(a.version_value)
        except _CallError:
            return a.version_value
    return a.value


def device_variable(
    driver: str, device: Device, domains: frozenset[str] = frozenset()
) -> dict[str, Any]:
    """The ``device`` CEL variable: attributes and capacity grouped by domain (unqualified
    names under the driver's), plus an empty map for each of ``domains`` it lacks."""
    attributes: dict[str, dict[str, Any]] = {}
    for qualified, attr in device.attributes.items():
        domain, sep, name = qualified.rpartition("/")
        attributes.setdefault(domain if sep else driver, {})[name] = _attribute_value(attr)
    capacity: dict[str, dict[str, Any]] = {}
    for qualified, cap in device.capacity.items():
        domain, sep, name = qualified.rpartition("/")
        capacity.setdefault(domain if sep else driver, {})[name] = {_Q: str(cap.milli)}
    for d in domains:
        attributes.setdefault(d, {})
        capacity.setdefault(d, {})
    return {
        "driver": driver,
        "attributes": attributes,
        "capacity": capacity,
        "allowMultipleAllocations": bool(device.allow_multiple_allocations),
    }


def evaluate(selector: CompiledSelector, driver: str, device: Device) -> bool | CELError:
    """Whether ``device`` (published by ``driver``) passes the selector; an error, or a
    result that is not a boolean, is a :class:`CELError`."""
    context = {"device": device_variable(driver, device, selector.domains), **selector.functions}
    try:
        result = selector.program.execute(context)
    except Exception as e:  # any failure inside the engine or a library function
        return CELError(selector.expression, RUNTIME, _one_line(e))
    if not isinstance(result, bool):
        return CELError(
            selector.expression,
            RUNTIME,
            f"expression must evaluate to a boolean, got {type(result).__name__}",
        )
    return result


def device_matches(expression: str, driver: str, device: Device) -> bool | CELError:
    """Compile (cached) and evaluate ``expression`` against ``device``."""
    selector = compile_selector(expression)
    if isinstance(selector, CELError):
        return selector
    return evaluate(selector, driver, device)


__all__ = [
    "COMPILE",
    "MAX_EXPRESSION_LENGTH",
    "RUNTIME",
    "CELError",
    "CompiledSelector",
    "compile_selector",
    "device_matches",
    "device_variable",
    "evaluate",
]
