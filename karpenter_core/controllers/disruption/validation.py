"""Validation: does a decision still hold after a wait? (upstream ``validation.go``;
spec disruption §11).

Emptiness and consolidation decide on a snapshot; pods may bind, nodes may be nominated and
budgets may fill in the meantime. So their commands are held for :data:`VALIDATION_PERIOD`
on the controller's clock (other controllers keep running meanwhile — the controller does
not sleep, it comes back) and then checked again before anything is tainted.

* Emptiness may go ahead with part of its command: the nodes still empty, not nominated
  and within budget (:class:`EmptinessValidator`).
* Consolidation is all-or-nothing and re-simulates (single- and multi-node consolidation
  implement it in :mod:`.consolidation`).

A failed validation raises :class:`~karpenter_core.controllers.disruption.types.ValidationError`
with the kind upstream reports (``churn``, ``budget``, ``scheduling``) and counts the
candidates in ``voluntary_disruption_failed_validations_total``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import attrs

from karpenter_core import metrics
from karpenter_core.controllers.disruption.budgets import build_budget_mapping
from karpenter_core.controllers.disruption.candidates import (
    build_nodepool_catalog,
    get_candidates,
)
from karpenter_core.controllers.disruption.types import (
    CLASS_GRACEFUL,
    Candidate,
    Command,
    DisruptionContext,
    ValidationError,
)

__all__ = [
    "VALIDATION_PERIOD",
    "EmptinessValidator",
    "NoOpValidator",
    "Validator",
]

VALIDATION_PERIOD = 15.0
"""Seconds a command is held before it is validated (upstream ``commandValidationDelay``)."""


class Validator(Protocol):
    """Re-checks a held command; returns the command to start or raises
    :class:`ValidationError`."""

    def validate(self, command: Command) -> Command: ...


class NoOpValidator:
    """Accepts every command unchanged (tests, and methods that need no re-check)."""

    def validate(self, command: Command) -> Command:
        return command


class EmptinessValidator:
    """Emptiness's re-check (partial success allowed): the candidates that are still
    candidates (``should_disrupt`` again), not nominated for a pending pod, and within the
    ``Empty`` budget — counted afresh, since earlier commands may have used it."""

    def __init__(
        self,
        dctx: DisruptionContext,
        should_disrupt: Callable[[Candidate], bool],
        reason: str,
        consolidation_type: str,
    ) -> None:
        self.dctx = dctx
        self.should_disrupt = should_disrupt
        self.reason = reason
        self.consolidation_type = consolidation_type

    def _failed(self, count: int) -> None:
        metrics.VOLUNTARY_DISRUPTION_FAILED_VALIDATIONS_TOTAL.labels(
            consolidation_type=self.consolidation_type
        ).inc(count)

    def validate(self, command: Command) -> Command:
        catalog = build_nodepool_catalog(self.dctx)
        current = {
            c.provider_id(): c
            for c in get_candidates(self.dctx, CLASS_GRACEFUL, self.should_disrupt, catalog=catalog)
        }
        proposed = command.candidates
        fresh = [current[c.provider_id()] for c in proposed if c.provider_id() in current]
        if not fresh:
            self._failed(len(proposed))
            raise ValidationError(
                ValidationError.CHURN, f"{len(proposed)} candidates are no longer valid"
            )
        budgets = build_budget_mapping(self.dctx, self.reason, catalog)
        valid: list[Candidate] = []
        for c in fresh:
            pool = c.nodepool_name()
            if self.dctx.cluster.is_node_nominated(c.provider_id()) or budgets.get(pool, 0) <= 0:
                self._failed(1)
                continue
            budgets[pool] -= 1
            valid.append(c)
        if not valid:
            raise ValidationError(
                ValidationError.BUDGET,
                f"{len(proposed)} candidates failed validation because they were nominated "
                "for a pod or would violate disruption budgets",
            )
        return attrs.evolve(command, candidates=valid)
