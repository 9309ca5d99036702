"""CRD ``x-kubernetes-validations`` rules, compiled and evaluated with CEL.

Each rule is a CEL expression over ``self`` (the value of the schema node that carries it).
The engine and Kubernetes' CEL library (``quantity()``, ``semver()``, string extensions,
``find``, ``cel.bind``) come from :mod:`karpenter_core.apis.cellib`, shared with the DRA
device selectors; the engine implements ``has()``, ``size()``, the ``all``/``exists``/
``exists_one``/``map``/``filter`` macros and ``matches`` itself.

Validation here is create-only: a rule that reads ``oldSelf`` is a transition rule, which the
API server does not run on create, so it is skipped (:attr:`CompiledRule.transition`).

What differs from the API server: no static type check against the schema (a rule comparing a
string with an int fails at evaluation, not when the CRD is installed), no cost budget, no
``optionalOldSelf``, and regular expressions are Python's rather than RE2.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from typing import Any

from attrs import frozen

from karpenter_core.apis.cellib import _find_code, _library, _one_line, _rewrite_bind

_OLD_SELF = re.compile(r"\boldSelf\b")


@frozen(eq=False)
class CompiledRule:
    """One compiled CEL expression (a rule or a messageExpression)."""

    expression: str
    program: Any
    functions: Mapping[str, Callable[..., Any]]
    transition: bool


@functools.lru_cache(maxsize=4096)
def compile_rule(expression: str) -> CompiledRule | str:
    """Compile ``expression`` once (cached by its text); a string is why it does not compile."""
    if not isinstance(expression, str) or not expression.strip():
        return "the rule is empty"
    source = _rewrite_bind(expression)
    if source is None:
        return "cel.bind takes (variable, value, expression)"
    library = _library()
    try:
        program = library.engine.compile(source)
        functions = program.functions()
    except Exception as e:  # the engine raises ValueError; any failure is the rule's
        return _one_line(e)
    for name in functions:
        if name[:1] in "_!@-" or name in library.known:
            continue
        return f"undeclared reference to {name!r}"
    used = {n: library.functions[n] for n in functions if n in library.functions}
    transition = _find_code(_OLD_SELF, expression) is not None
    return CompiledRule(expression, program, used, transition)


def evaluate_rule(rule: CompiledRule, value: Any) -> Any:
    """The rule's value with ``self`` bound to ``value``; raises :class:`RuleError`."""
    try:
        return rule.program.execute({"self": value, **rule.functions})
    except Exception as e:  # any failure inside the engine or a library function
        raise RuleError(_one_line(e)) from None


class RuleError(Exception):
    """A rule that failed to evaluate (a missing key, a bad argument)."""


__all__ = ["CompiledRule", "RuleError", "compile_rule", "evaluate_rule"]
