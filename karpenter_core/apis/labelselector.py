"""Label selectors: the one implementation of Kubernetes' label-selector rules.

A :class:`LabelSelector` is a conjunction of :class:`LabelRequirement` values. It comes from
the ``metav1.LabelSelector`` mapping found inside objects (``matchLabels`` and
``matchExpressions``, :meth:`LabelSelector.from_dict`) or from the string form used on the wire
(``app=web,tier in (a,b),!legacy``, parsed by :func:`karpenter_core.kube.selectors.parse_label_selector`);
both give the same value, whose ``str()`` is the canonical string form.

Semantics are apimachinery's ``metav1.LabelSelectorAsSelector``: a missing selector (None)
selects nothing, an empty one (``{}``) everything; keys must be qualified names and values
label values (:mod:`karpenter_core.apis.names`). :meth:`LabelSelector.from_dict` raises
:class:`SelectorError` for a selector the API server would refuse; :meth:`LabelSelector.compile`
(and :func:`label_selector_matches`) turn such a selector into one that selects nothing, as
the schedulers do, and remember compiled selectors so a selector repeated across replicas is
parsed once.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from typing import Any, Final

from attrs import field, frozen

from karpenter_core.apis.names import label_key_problem, label_value_problem

__all__ = [
    "DOES_NOT_EXIST",
    "DOUBLE_EQUALS",
    "EQUALS",
    "EVERYTHING",
    "EXISTS",
    "GREATER_THAN",
    "IN",
    "LESS_THAN",
    "NOTHING",
    "NOT_EQUALS",
    "NOT_IN",
    "LabelRequirement",
    "LabelSelector",
    "SelectorError",
    "label_selector_matches",
    "requirement",
]


class SelectorError(ValueError):
    """A selector that cannot be parsed. ``path`` is the field at fault inside the selector
    (``matchExpressions[0].operator``), empty for the string form; ``str()`` names it."""

    def __init__(self, message: str, path: str = "") -> None:
        super().__init__(f"{path}: {message}" if path else message)
        self.path = path
        self.message = message


# Operators, in the spelling of the string form.
IN: Final = "in"
NOT_IN: Final = "notin"
EQUALS: Final = "="
DOUBLE_EQUALS: Final = "=="
NOT_EQUALS: Final = "!="
EXISTS: Final = "exists"
DOES_NOT_EXIST: Final = "!"
GREATER_THAN: Final = "gt"
LESS_THAN: Final = "lt"

_DICT_OPERATORS: Final = {
    "In": IN,
    "NotIn": NOT_IN,
    "Exists": EXISTS,
    "DoesNotExist": DOES_NOT_EXIST,
}

# How a requirement tests labels: the value must be in the set, must not be, the key must be
# there, must not be, or the value must be an integer above / below a bound.
_T_IN, _T_NOT_IN, _T_EXISTS, _T_ABSENT, _T_GT, _T_LT = range(6)
_TEST_OF: Final = {
    IN: _T_IN,
    EQUALS: _T_IN,
    DOUBLE_EQUALS: _T_IN,
    NOT_IN: _T_NOT_IN,
    NOT_EQUALS: _T_NOT_IN,
    EXISTS: _T_EXISTS,
    DOES_NOT_EXIST: _T_ABSENT,
    GREATER_THAN: _T_GT,
    LESS_THAN: _T_LT,
}


def _test_of(req: LabelRequirement) -> tuple[str, int, Any]:
    test = _TEST_OF[req.operator]
    arg: Any = frozenset(req.values)
    if test in (_T_GT, _T_LT):
        arg = int(req.values[0])
    return req.key, test, arg


@frozen
class LabelRequirement:
    """One clause of a label selector (build with :func:`requirement`, which checks it)."""

    key: str
    operator: str
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        return _run(((_test_of(self)),), labels)

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
        return f"{self.key}{op}{self.values[0]}"


def requirement(key: str, operator: str, values: Iterable[str] = ()) -> LabelRequirement:
    """A checked requirement (``labels.NewRequirement``): a qualified key, the number of
    values the operator takes, label-value syntax (integers for ``gt``/``lt``). Raises
    :class:`SelectorError`."""
    problem = label_key_problem(key)
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
        except (TypeError, ValueError):
            raise SelectorError(
                f"label selector for {key!r}: value {vals[0]!r} of {operator!r} must be an integer"
            ) from None
    else:
        raise SelectorError(f"label selector for {key!r}: unknown operator {operator!r}")
    if operator not in (GREATER_THAN, LESS_THAN):
        for v in vals:
            problem = label_value_problem(v)
            if problem:
                raise SelectorError(f"label selector for {key!r}: {problem}")
    return LabelRequirement(
        key, operator, tuple(sorted(set(vals))) if operator in (IN, NOT_IN) else vals
    )


def _run(tests: tuple[tuple[str, int, Any], ...], labels: Mapping[str, str]) -> bool:
    for key, test, arg in tests:
        value = labels.get(key)
        if test == _T_IN:
            if value is None or value not in arg:
                return False
        elif test == _T_NOT_IN:
            if value is not None and value in arg:
                return False
        elif test == _T_EXISTS:
            if value is None:
                return False
        elif test == _T_ABSENT:
            if value is not None:
                return False
        else:
            if value is None:
                return False
            try:
                have = int(value)
            except ValueError:
                return False
            if not (have > arg if test == _T_GT else have < arg):
                return False
    return True


@frozen
class LabelSelector:
    """A conjunction of label requirements; a ``nothing`` selector matches no object at all.

    ``signature`` identifies the selector regardless of the order and repetition of its
    requirements (two pods declaring the same selector share a topology group even when the
    API server and the scheduler both injected one ``matchLabelKeys`` expression).
    """

    requirements: tuple[LabelRequirement, ...] = ()
    nothing: bool = False
    _tests: tuple[tuple[str, int, Any], ...] = field(init=False, eq=False, repr=False)
    signature: Hashable = field(init=False, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        object.__setattr__(self, "_tests", tuple(_test_of(r) for r in self.requirements))
        object.__setattr__(
            self, "signature", ("nothing",) if self.nothing else frozenset(self.requirements)
        )

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        if self.nothing:
            return False
        return _run(self._tests, labels or {})

    @property
    def empty(self) -> bool:
        """True when the selector matches every object."""
        return not self.nothing and not self.requirements

    def with_requirements(self, *reqs: LabelRequirement) -> LabelSelector:
        """This selector and ``reqs`` (nothing stays nothing, as apimachinery's ``Add``)."""
        if self.nothing or not reqs:
            return self
        return LabelSelector(tuple(sorted((*self.requirements, *reqs), key=lambda r: r.key)))

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.requirements)

    @classmethod
    def from_dict(cls, selector: Mapping[str, Any] | None) -> LabelSelector:
        """A ``metav1.LabelSelector`` mapping; None selects nothing, ``{}`` everything.

        Raises :class:`SelectorError` (with the field at fault) for a selector the API server
        would reject: wrong shapes, unknown operators, values where none belong, invalid keys
        or values.
        """
        if selector is None:
            return NOTHING
        if not isinstance(selector, Mapping):
            raise SelectorError(f"label selector must be a mapping, got {type(selector).__name__}")
        reqs: list[LabelRequirement] = []
        match_labels = selector.get("matchLabels")
        if match_labels is not None:
            if not isinstance(match_labels, Mapping):
                raise SelectorError("expected a map of label keys to values", "matchLabels")
            for k, v in match_labels.items():
                if not isinstance(v, str):
                    raise SelectorError(
                        f"expected a string, got {type(v).__name__}", f"matchLabels.{k}"
                    )
                try:
                    reqs.append(requirement(k, EQUALS, (v,)))
                except SelectorError as e:
                    raise SelectorError(e.message, f"matchLabels.{k}") from None
        exprs = selector.get("matchExpressions")
        if exprs is not None:
            if not isinstance(exprs, list | tuple):
                raise SelectorError("expected a list", "matchExpressions")
            for i, expr in enumerate(exprs):
                reqs.append(_expression(expr, f"matchExpressions[{i}]"))
        return cls(tuple(sorted(reqs, key=lambda r: r.key)))

    @classmethod
    def compile(cls, selector: Any) -> LabelSelector:
        """Like :meth:`from_dict`, but a selector that does not parse (or is not a mapping)
        selects nothing instead of raising, as the schedulers treat one. Results are
        remembered by the selector's content."""
        try:
            key = _cache_key(selector)
            hash(key)
        except (TypeError, AttributeError):
            key = None
        if key is not None:
            hit = _COMPILED.get(key)
            if hit is not None:
                return hit
        try:
            compiled = cls.from_dict(selector)
        except SelectorError:
            compiled = NOTHING
        if key is not None:
            if len(_COMPILED) >= _COMPILED_MAX:
                _COMPILED.clear()
            _COMPILED[key] = compiled
        return compiled


def _expression(expr: Any, path: str) -> LabelRequirement:
    """One ``matchExpressions`` entry (``LabelSelectorRequirement``)."""
    if not isinstance(expr, Mapping):
        raise SelectorError(f"expected an object, got {type(expr).__name__}", path)
    key = expr.get("key")
    if not isinstance(key, str) or not key:
        raise SelectorError("required", f"{path}.key")
    raw_op = expr.get("operator")
    op = _DICT_OPERATORS.get(raw_op) if isinstance(raw_op, str) else None
    if op is None:
        raise SelectorError(
            f"unsupported operator {raw_op!r} (one of In, NotIn, Exists, DoesNotExist)",
            f"{path}.operator",
        )
    values = expr.get("values")
    if values is None:
        values = ()
    if not isinstance(values, list | tuple):
        raise SelectorError("expected a list", f"{path}.values")
    for j, v in enumerate(values):
        if not isinstance(v, str):
            raise SelectorError(f"expected a string, got {type(v).__name__}", f"{path}.values[{j}]")
    try:
        return requirement(key, op, values)
    except SelectorError as e:
        where = f"{path}.key" if e.message.startswith("invalid label key") else f"{path}.values"
        raise SelectorError(e.message, where) from None


EVERYTHING = LabelSelector()
NOTHING = LabelSelector(nothing=True)

_COMPILED_MAX = 4096
_COMPILED: dict[Hashable, LabelSelector] = {}


def _cache_key(selector: Any) -> Hashable:
    """The content of a selector mapping as a hashable value (TypeError when it holds
    something unhashable, which is then compiled without the cache)."""
    if selector is None:
        return None
    if not isinstance(selector, Mapping):
        raise TypeError("not a mapping")
    labels = selector.get("matchLabels")
    exprs = selector.get("matchExpressions")
    return (
        tuple(labels.items()) if isinstance(labels, Mapping) else labels,
        tuple(
            (e.get("key"), e.get("operator"), tuple(e.get("values") or ()))
            if isinstance(e, Mapping)
            else e
            for e in exprs
        )
        if isinstance(exprs, list | tuple)
        else exprs,
    )


def label_selector_matches(selector: Any, labels: Mapping[str, str] | None) -> bool:
    """Whether ``selector`` (a ``metav1.LabelSelector`` mapping, or None) selects ``labels``;
    a selector that does not parse selects nothing."""
    return LabelSelector.compile(selector).matches(labels)
