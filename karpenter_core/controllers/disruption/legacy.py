"""Disruption methods written before snapshots keep running.

Such a method (a plugin's) has ``should_disrupt(candidate)`` and
``compute_commands(budgets, candidates)`` — no snapshot argument — and reads what it needs
from its ``DisruptionContext`` (``simulate_scheduling(context, ...)``). :func:`adapt` wraps
it in an object with the snapshot contract (:class:`~karpenter_core.disruption.types.Method`)
that sets ``context.snapshot`` to the pass's snapshot before each call.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol, cast

from karpenter_core.controllers.disruption.context import DisruptionContext
from karpenter_core.disruption.snapshot import DisruptionSnapshot
from karpenter_core.disruption.types import (
    BudgetMap,
    Candidate,
    Command,
    Decision,
    Method,
    Verdict,
)

__all__ = ["LegacyMethod", "LegacyValidatingMethod", "adapt", "is_legacy", "method_name"]

_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


class _Legacy(Protocol):
    """A method written before snapshots (what is called on it)."""

    @property
    def reason(self) -> str: ...

    @property
    def disruption_class(self) -> str: ...

    @property
    def consolidation_type(self) -> str: ...

    def should_disrupt(self, candidate: Candidate) -> object: ...

    def compute_commands(
        self, budgets: BudgetMap, candidates: Sequence[Candidate]
    ) -> Iterable[Command]: ...


class _LegacyValidating(_Legacy, Protocol):
    def validate(self, command: Command) -> Command: ...


def _positional_count(fn: Callable[..., object]) -> int | None:
    """How many positional parameters a bound method takes (None: any number, or
    unknown)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return None
    if any(p.kind == inspect.Parameter.VAR_POSITIONAL for p in params):
        return None
    return sum(1 for p in params if p.kind in _POSITIONAL)


def is_legacy(method: object) -> bool:
    """The method's ``compute_commands`` takes ``(budgets, candidates)``: it was written
    before the snapshot argument."""
    compute = getattr(method, "compute_commands", None)
    return callable(compute) and _positional_count(compute) == 2


class LegacyMethod:
    """A method without the snapshot argument, run with the snapshot contract."""

    def __init__(self, inner: _Legacy, dctx: DisruptionContext) -> None:
        self.inner = inner
        self.dctx = dctx

    @property
    def reason(self) -> str:
        return str(self.inner.reason)

    @property
    def disruption_class(self) -> str:
        return str(self.inner.disruption_class)

    @property
    def consolidation_type(self) -> str:
        return str(self.inner.consolidation_type)

    def _enter(self, snapshot: DisruptionSnapshot) -> None:
        self.dctx.snapshot = snapshot

    def begin_pass(self, snapshot: DisruptionSnapshot, candidates: Sequence[Candidate]) -> None:
        begin = getattr(self.inner, "begin_pass", None)
        if callable(begin):
            self._enter(snapshot)
            begin(candidates, snapshot.state_nodes)

    def should_disrupt(self, snapshot: DisruptionSnapshot, candidate: Candidate) -> Verdict:
        self._enter(snapshot)
        return bool(self.inner.should_disrupt(candidate))

    def compute_commands(
        self, snapshot: DisruptionSnapshot, budgets: BudgetMap, candidates: Sequence[Candidate]
    ) -> Decision:
        self._enter(snapshot)
        return Decision(tuple(self.inner.compute_commands(budgets, candidates)))

    def __getattr__(self, name: str) -> Any:
        # the method's own attributes (its state, its helpers) stay reachable
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)


class LegacyValidatingMethod(LegacyMethod):
    """A :class:`LegacyMethod` whose commands are validated after the wait."""

    def __init__(self, inner: _LegacyValidating, dctx: DisruptionContext) -> None:
        super().__init__(inner, dctx)
        self._validate = inner.validate

    def validate(self, snapshot: DisruptionSnapshot, command: Command) -> Decision:
        self._enter(snapshot)
        return Decision((self._validate(command),))


def adapt(method: object, dctx: DisruptionContext) -> Method:
    """``method`` itself when it takes the snapshot, else its adapter."""
    if not is_legacy(method):
        return cast(Method, method)
    if callable(getattr(method, "validate", None)):
        return LegacyValidatingMethod(cast(_LegacyValidating, method), dctx)
    return LegacyMethod(cast(_Legacy, method), dctx)


def method_name(method: object) -> str:
    """The method's class name (the adapted one's, for an adapter)."""
    inner = method.inner if isinstance(method, LegacyMethod) else method
    return type(inner).__name__
