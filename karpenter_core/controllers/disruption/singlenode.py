"""Single-node consolidation: remove or replace one underused node at a time.

Spec: disruption §9 "Single-node" (upstream ``singlenodeconsolidation.go``). Candidates are
tried best-value first (highest price per unit of disruption), interleaved across
NodePools so one big pool cannot starve the others; the first candidate that yields a
delete or a cheaper replacement becomes the pass's command. A pass gives up after three
minutes on the controller's clock and, next time, starts with the NodePools it never
reached.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from datetime import timedelta

from karpenter_core import metrics
from karpenter_core.controllers.disruption import events as devents
from karpenter_core.controllers.disruption.candidates import sort_by_savings_ratio
from karpenter_core.controllers.disruption.consolidation import Consolidation
from karpenter_core.controllers.disruption.simulation import SimulationError
from karpenter_core.controllers.disruption.types import (
    CONSOLIDATION_TYPE_SINGLE,
    DECISION_NOOP,
    BudgetMap,
    Candidate,
    Command,
    DisruptionContext,
    ValidationError,
)

__all__ = ["SINGLE_NODE_CONSOLIDATION_TIMEOUT", "SingleNodeConsolidation", "interleave"]

log = logging.getLogger("karpenter.disruption.singlenode")

SINGLE_NODE_CONSOLIDATION_TIMEOUT = timedelta(minutes=3)


def interleave(candidates: Iterable[Candidate], first: Iterable[str] = ()) -> list[Candidate]:
    """Round-robin ``candidates`` across their NodePools, keeping each pool's order.

    NodePools named in ``first`` (those a timed-out pass never reached) lead, then the
    rest; both groups by name, so the order is deterministic.
    """
    by_pool: dict[str, list[Candidate]] = {}
    for c in candidates:
        by_pool.setdefault(c.nodepool_name(), []).append(c)
    leading = sorted(set(first))
    order = leading + sorted(p for p in by_pool if p not in set(leading))
    longest = max((len(v) for v in by_pool.values()), default=0)
    out: list[Candidate] = []
    for i in range(longest):
        for pool in order:
            members = by_pool.get(pool, [])
            if i < len(members):
                out.append(members[i])
    return out


class SingleNodeConsolidation(Consolidation):
    """Method 5 of the disruption loop: ≤1 command per pass, 1→0 or 1→1."""

    consolidation_type = CONSOLIDATION_TYPE_SINGLE

    def __init__(self, dctx: DisruptionContext) -> None:
        super().__init__(dctx)
        self.previously_unseen_nodepools: frozenset[str] = frozenset()

    def order(self, candidates: Sequence[Candidate]) -> list[Candidate]:
        """Best savings ratio first, interleaved across NodePools."""
        return interleave(sort_by_savings_ratio(candidates), self.previously_unseen_nodepools)

    def compute_commands(
        self, budgets: BudgetMap, candidates: Sequence[Candidate]
    ) -> list[Command]:
        if self.is_consolidated():
            return []
        ordered = self.order(candidates)
        clock = self.dctx.clock
        deadline = clock.now() + SINGLE_NODE_CONSOLIDATION_TIMEOUT
        unseen = {c.nodepool_name() for c in ordered}
        constrained_by_budgets = False
        for i, candidate in enumerate(ordered):
            if clock.now() > deadline:
                metrics.VOLUNTARY_DISRUPTION_CONSOLIDATION_TIMEOUTS_TOTAL.labels(
                    consolidation_type=self.consolidation_type
                ).inc()
                log.info(
                    "abandoning single-node consolidation due to timeout after %d candidates", i
                )
                self.previously_unseen_nodepools = frozenset(unseen)
                return []
            pool = candidate.nodepool_name()
            unseen.discard(pool)
            # Single-node commands hold one candidate: the budget is checked, not spent.
            if budgets.get(pool, 0) <= 0:
                constrained_by_budgets = True
                continue
            # A delete is the best any move on this node can score; if even that fails
            # the balanced threshold, no replacement will pass.
            if not self.evaluator.can_pass_threshold(candidate):
                continue
            try:
                command = self.compute_consolidation([candidate])
            except SimulationError as err:
                log.error("failed computing consolidation for %s: %s", candidate.name(), err)
                continue
            if command is None or command.decision == DECISION_NOOP:
                continue
            approved, _ = self.evaluator.approve_command(command)
            if not approved:
                continue
            return [command]
        if not constrained_by_budgets:
            # A budget may open later; only a pass that saw everything may memoise.
            self.mark_consolidated()
        self.previously_unseen_nodepools = frozenset(unseen)
        return []

    def validate(self, command: Command) -> Command:
        """See :meth:`Consolidation.check`; a rejection is published on the candidate as
        ``ConsolidationRejected`` with the reason (``budget``, ``scheduling``, ``churn``)."""
        try:
            return self.check(command)
        except ValidationError as err:
            text, savings = str(command), command.estimated_savings()
            for c in command.candidates:
                self.dctx.recorder.publish(
                    *devents.consolidation_rejected(
                        c.state_node.node, c.nodeclaim, text, err.kind, savings
                    )
                )
            raise
