"""Emptiness: remove nodes nothing needs (upstream ``emptiness.go``; spec disruption §7).

A node is empty when no reschedulable pod on it adds a positive eviction cost, and it has
been so for the NodePool's ``consolidateAfter`` (the ``Consolidatable`` condition). One
pass deletes, in one command, every empty candidate the ``Empty`` budgets allow — after the
15 s validation wait re-confirms each one (:class:`~.validation.EmptinessValidator`).
Emptiness runs first, so an empty node that is also drifted goes as ``Empty``.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime

from karpenter_core.apis.v1 import CONDITION_CONSOLIDATABLE
from karpenter_core.controllers.disruption import events
from karpenter_core.controllers.disruption.candidates import sort_by_savings_ratio
from karpenter_core.controllers.disruption.types import (
    CLASS_GRACEFUL,
    CONSOLIDATION_TYPE_EMPTY,
    REASON_EMPTY,
    BudgetMap,
    Candidate,
    Command,
    DisruptionContext,
)
from karpenter_core.controllers.disruption.validation import EmptinessValidator, Validator

__all__ = ["Emptiness"]

log = logging.getLogger("karpenter.disruption")


def consolidation_disabled(candidate: Candidate) -> bool:
    """``consolidateAfter: Never``."""
    disruption = candidate.nodepool.spec.disruption
    after = disruption.consolidate_after if disruption is not None else None
    return after is not None and after.is_never


def is_consolidatable(candidate: Candidate) -> bool:
    cond = candidate.nodeclaim.condition(CONDITION_CONSOLIDATABLE)
    return cond is not None and cond.is_true


class Emptiness:
    """Method 1 of the disruption loop (reason ``Empty``, graceful)."""

    reason = REASON_EMPTY
    disruption_class = CLASS_GRACEFUL
    consolidation_type = CONSOLIDATION_TYPE_EMPTY

    def __init__(self, dctx: DisruptionContext, validator: Validator | None = None) -> None:
        self.dctx = dctx
        self.validator: Validator = validator or EmptinessValidator(
            dctx, self.should_disrupt, self.reason, self.consolidation_type
        )
        self._consolidated: datetime | None = None

    def should_disrupt(self, candidate: Candidate) -> bool:
        if candidate.owned_by_static_nodepool():
            return False
        node = candidate.state_node.node
        if consolidation_disabled(candidate):
            self.dctx.recorder.publish(
                *events.unconsolidatable(
                    node,
                    candidate.nodeclaim,
                    f'NodePool "{candidate.nodepool_name()}" has consolidation disabled',
                )
            )
            return False
        if self.dctx.cluster.has_buffer_pods(candidate.provider_id()):
            self.dctx.recorder.publish(
                *events.unconsolidatable(
                    node, candidate.nodeclaim, f'Node "{candidate.name()}" has buffer pods'
                )
            )
            return False
        return candidate.is_empty() and is_consolidatable(candidate)

    def compute_commands(
        self, budgets: BudgetMap, candidates: Sequence[Candidate]
    ) -> list[Command]:
        state = self.dctx.cluster.consolidation_state()
        if self._consolidated == state:
            return []
        empty: list[Candidate] = []
        constrained = False
        for c in sort_by_savings_ratio(candidates):
            if not c.is_empty():
                continue
            pool = c.nodepool_name()
            if budgets.get(pool, 0) <= 0:
                constrained = True
                continue
            budgets[pool] -= 1
            empty.append(c)
        if not empty:
            if not constrained:
                # Nothing to do until cluster state changes (or a budget opens up).
                self._consolidated = state
            return []
        return [Command(empty)]

    def validate(self, command: Command) -> Command:
        return self.validator.validate(command)
