"""Validation: does a decision still hold after a wait? (upstream ``validation.go``;
spec disruption §11).

Emptiness and consolidation decide on a snapshot; pods may bind, nodes may be nominated and
budgets may fill in the meantime. So their commands are held for :data:`VALIDATION_PERIOD`
on the controller's clock (other controllers keep running meanwhile — the controller does
not sleep, it comes back) and then checked again, against a snapshot taken then, before
anything is tainted.

* Emptiness may go ahead with part of its command: the nodes still empty, not nominated
  and within budget (:class:`EmptinessValidator`).
* Consolidation is all-or-nothing and re-simulates (single- and multi-node consolidation
  implement it in :mod:`karpenter_core.disruption.methods.consolidation`).

A failed validation raises :class:`~karpenter_core.disruption.types.ValidationError` with
the kind upstream reports (``churn``, ``budget``, ``scheduling``) and counts the candidates
in ``voluntary_disruption_failed_validations_total``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import attrs

from karpenter_core import metrics
from karpenter_core.disruption.budgets import budget_mapping
from karpenter_core.disruption.candidates import filter_candidates, get_candidates
from karpenter_core.disruption.notices import Notice
from karpenter_core.disruption.snapshot import DisruptionSnapshot
from karpenter_core.disruption.types import (
    CLASS_GRACEFUL,
    Candidate,
    Command,
    Decision,
    ValidationError,
    Verdict,
)

__all__ = [
    "VALIDATION_PERIOD",
    "EmptinessValidator",
    "NoOpValidator",
    "Validator",
    "current_candidates",
]

VALIDATION_PERIOD = 15.0
"""Seconds a command is held before it is validated (upstream ``commandValidationDelay``)."""


class Validator(Protocol):
    """Re-checks a held command against a fresh snapshot; returns the command to start
    (with what it had to say) or raises :class:`ValidationError`."""

    def validate(self, snapshot: DisruptionSnapshot, command: Command) -> Decision: ...


class NoOpValidator:
    """Accepts every command unchanged (tests, and methods that need no re-check)."""

    def validate(self, snapshot: DisruptionSnapshot, command: Command) -> Decision:
        return Decision((command,))


def current_candidates(
    snapshot: DisruptionSnapshot,
    should_disrupt: Callable[[DisruptionSnapshot, Candidate], Verdict],
    notices: list[Notice],
) -> dict[str, Candidate]:
    """The graceful candidates of ``snapshot`` that ``should_disrupt`` keeps, by provider
    id (what a held command's candidates must still be); notices go to ``notices``."""
    found = get_candidates(snapshot, CLASS_GRACEFUL)
    notices.extend(found.notices)
    kept = filter_candidates(found.candidates, lambda c: should_disrupt(snapshot, c), notices)
    return {c.provider_id(): c for c in kept}


class EmptinessValidator:
    """Emptiness's re-check (partial success allowed): the candidates that are still
    candidates (``should_disrupt`` again), not nominated for a pending pod, and within the
    ``Empty`` budget — counted afresh, since earlier commands may have used it."""

    def __init__(
        self,
        should_disrupt: Callable[[DisruptionSnapshot, Candidate], Verdict],
        reason: str,
        consolidation_type: str,
    ) -> None:
        self.should_disrupt = should_disrupt
        self.reason = reason
        self.consolidation_type = consolidation_type

    def _failed(self, count: int) -> None:
        metrics.VOLUNTARY_DISRUPTION_FAILED_VALIDATIONS_TOTAL.labels(
            consolidation_type=self.consolidation_type
        ).inc(count)

    def validate(self, snapshot: DisruptionSnapshot, command: Command) -> Decision:
        notices: list[Notice] = []
        current = current_candidates(snapshot, self.should_disrupt, notices)
        proposed = command.candidates
        fresh = [current[c.provider_id()] for c in proposed if c.provider_id() in current]
        if not fresh:
            self._failed(len(proposed))
            raise ValidationError(
                ValidationError.CHURN, f"{len(proposed)} candidates are no longer valid", notices
            )
        budgets = budget_mapping(snapshot, self.reason)
        notices.extend(budgets.notices)
        remaining = budgets.remaining
        valid: list[Candidate] = []
        for c in fresh:
            pool = c.nodepool_name()
            if c.state_node.nominated(snapshot.monotonic) or remaining.get(pool, 0) <= 0:
                self._failed(1)
                continue
            remaining[pool] -= 1
            valid.append(c)
        if not valid:
            raise ValidationError(
                ValidationError.BUDGET,
                f"{len(proposed)} candidates failed validation because they were nominated "
                "for a pod or would violate disruption budgets",
                notices,
            )
        return Decision((attrs.evolve(command, candidates=valid),), tuple(notices))
