"""Emptiness: remove nodes nothing needs (upstream ``emptiness.go``; spec disruption §7).

A node is empty when no reschedulable pod on it adds a positive eviction cost, and it has
been so for the NodePool's ``consolidateAfter`` (the ``Consolidatable`` condition). One
pass deletes, in one command, every empty candidate the ``Empty`` budgets allow — after the
15 s validation wait re-confirms each one
(:class:`~karpenter_core.disruption.validation.EmptinessValidator`). Emptiness runs first,
so an empty node that is also drifted goes as ``Empty``.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from karpenter_core.apis.v1 import CONDITION_CONSOLIDATABLE
from karpenter_core.disruption.candidates import sort_by_savings_ratio
from karpenter_core.disruption.notices import Unconsolidatable
from karpenter_core.disruption.snapshot import DisruptionSnapshot
from karpenter_core.disruption.types import (
    CLASS_GRACEFUL,
    CONSOLIDATION_TYPE_EMPTY,
    REASON_EMPTY,
    BudgetMap,
    Candidate,
    Command,
    Decision,
    Verdict,
)
from karpenter_core.disruption.validation import EmptinessValidator, Validator

__all__ = ["Emptiness", "consolidation_disabled", "is_consolidatable"]


def consolidation_disabled(candidate: Candidate) -> bool:
    """``consolidateAfter: Never``."""
    disruption = candidate.nodepool.spec.disruption
    after = disruption.consolidate_after if disruption is not None else None
    return after is not None and after.is_never


def is_consolidatable(candidate: Candidate) -> bool:
    return candidate.nodeclaim.is_true(CONDITION_CONSOLIDATABLE)


class Emptiness:
    """Method 1 of the disruption loop (reason ``Empty``, graceful)."""

    reason = REASON_EMPTY
    disruption_class = CLASS_GRACEFUL
    consolidation_type = CONSOLIDATION_TYPE_EMPTY

    def __init__(self, validator: Validator | None = None) -> None:
        self.validator: Validator = validator or EmptinessValidator(
            self.should_disrupt, self.reason, self.consolidation_type
        )
        self._consolidated: datetime | None = None

    def should_disrupt(self, snapshot: DisruptionSnapshot, candidate: Candidate) -> Verdict:
        if candidate.owned_by_static_nodepool():
            return False
        node = candidate.state_node.node
        if consolidation_disabled(candidate):
            return Unconsolidatable(
                node,
                candidate.nodeclaim,
                f'NodePool "{candidate.nodepool_name()}" has consolidation disabled',
            )
        if candidate.provider_id() in snapshot.buffer_pods:
            return Unconsolidatable(
                node, candidate.nodeclaim, f'Node "{candidate.name()}" has buffer pods'
            )
        return candidate.is_empty() and is_consolidatable(candidate)

    def compute_commands(
        self, snapshot: DisruptionSnapshot, budgets: BudgetMap, candidates: Sequence[Candidate]
    ) -> Decision:
        state = snapshot.consolidation_state
        if state is not None and self._consolidated == state:
            return Decision()
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
            return Decision()
        return Decision((Command(empty),))

    def validate(self, snapshot: DisruptionSnapshot, command: Command) -> Decision:
        return self.validator.validate(snapshot, command)
