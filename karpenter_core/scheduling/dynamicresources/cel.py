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
from collections.abc import Callable, Mapping
from typing import Any

from attrs import frozen

from karpenter_core.apis.cellib import (
    _Q,
    _STRING_LITERAL,
    _CallError,
    _library,
    _one_line,
    _rewrite_bind,
    _semver_value,
)
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
