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
from typing import TYPE_CHECKING

from karpenter_core import metrics
from karpenter_core.disruption.candidates import sort_by_savings_ratio
from karpenter_core.disruption.methods.consolidation import Consolidation
from karpenter_core.disruption.notices import ConsolidationRejected, Notice
from karpenter_core.disruption.simulation import SimulationError
from karpenter_core.disruption.snapshot import DisruptionSnapshot
from karpenter_core.disruption.types import (
    CONSOLIDATION_TYPE_SINGLE,
    DECISION_NOOP,
    BudgetMap,
    Candidate,
    Command,
    Decision,
    ValidationError,
)

if TYPE_CHECKING:
    from karpenter_core.runtime.clock import Clock

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

    def __init__(self, clock: Clock, *, spot_to_spot: bool = False) -> None:
        super().__init__(clock, spot_to_spot=spot_to_spot)
        self.previously_unseen_nodepools: frozenset[str] = frozenset()

    def order(self, candidates: Sequence[Candidate]) -> list[Candidate]:
        """Best savings ratio first, interleaved across NodePools."""
        return interleave(sort_by_savings_ratio(candidates), self.previously_unseen_nodepools)

    def compute_commands(
        self, snapshot: DisruptionSnapshot, budgets: BudgetMap, candidates: Sequence[Candidate]
    ) -> Decision:
        notices: list[Notice] = []
        command = self._first(snapshot, budgets, candidates, notices)
        return Decision((command,) if command is not None else (), tuple(notices))

    def _first(
        self,
        snapshot: DisruptionSnapshot,
        budgets: BudgetMap,
        candidates: Sequence[Candidate],
        notices: list[Notice],
    ) -> Command | None:
        if self.is_consolidated(snapshot):
            return None
        ordered = self.order(candidates)
        clock = self.clock
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
                return None
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
                command = self.compute_consolidation(snapshot, [candidate], notices)
            except SimulationError as err:
                log.error("failed computing consolidation for %s: %s", candidate.name(), err)
                continue
            if command is None or command.decision == DECISION_NOOP:
                continue
            approved, _ = self.evaluator.approve_command(command, notices)
            if not approved:
                continue
            return command
        if not constrained_by_budgets:
            # A budget may open later; only a pass that saw everything may memoise.
            self.mark_consolidated(snapshot)
        self.previously_unseen_nodepools = frozenset(unseen)
        return None

    def validate(self, snapshot: DisruptionSnapshot, command: Command) -> Decision:
        """See :meth:`Consolidation.check`; a rejection is noted on the candidate as
        ``ConsolidationRejected`` with the reason (``budget``, ``scheduling``, ``churn``)."""
        try:
            return self.check(snapshot, command)
        except ValidationError as err:
            text, savings = str(command), command.estimated_savings()
            for c in command.candidates:
                err.notices.append(
                    ConsolidationRejected(c.state_node.node, c.nodeclaim, text, err.kind, savings)
                )
            raise
