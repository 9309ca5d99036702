"""Multi-node consolidation: remove several nodes at once, replacing them by at most one.

Spec: disruption §9 "Multi-node" (upstream ``multinodeconsolidation.go``). Candidates are
ordered best-value first and cut to what the budgets allow; then a binary search finds the
longest prefix that can be consolidated together (all its pods fit elsewhere, or into one
cheaper NodeClaim). A longer prefix is better: more nodes go in one disruption. The search
stops after one minute on the controller's clock and keeps the best command found so far.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import TypeVar

from karpenter_core import metrics
from karpenter_core.disruption.candidates import sort_by_savings_ratio
from karpenter_core.disruption.methods.balanced import ScoreResult
from karpenter_core.disruption.methods.consolidation import (
    Consolidation,
    filter_out_same_instance_type,
)
from karpenter_core.disruption.notices import Notice
from karpenter_core.disruption.simulation import SimulationError
from karpenter_core.disruption.snapshot import DisruptionSnapshot
from karpenter_core.disruption.types import (
    CONSOLIDATION_TYPE_MULTI,
    DECISION_DELETE,
    DECISION_REPLACE,
    BudgetMap,
    Candidate,
    Command,
    Decision,
)
from karpenter_core.provisioning.scheduler.nodeclaim import NodeClaim as SchedulerNodeClaim

__all__ = [
    "MAX_BATCH",
    "MULTI_NODE_CONSOLIDATION_TIMEOUT",
    "MultiNodeConsolidation",
    "search_prefixes",
    "take_within_budgets",
]

log = logging.getLogger("karpenter.disruption.multinode")

MULTI_NODE_CONSOLIDATION_TIMEOUT = timedelta(minutes=1)
MAX_BATCH = 100
"""Candidates considered at once (the search may still try 101: upstream's quirk)."""

T = TypeVar("T")


def take_within_budgets(
    candidates: Sequence[Candidate], budgets: BudgetMap
) -> tuple[list[Candidate], bool]:
    """Keep candidates in order while their NodePool's budget lasts, spending it.

    Returns the kept candidates and whether a budget turned any away. Filtering before
    the search keeps the order and means every prefix tried is one the budgets allow.
    """
    kept: list[Candidate] = []
    constrained = False
    for c in candidates:
        pool = c.nodepool_name()
        if budgets.get(pool, 0) <= 0:
            constrained = True
            continue
        kept.append(c)
        budgets[pool] = budgets.get(pool, 0) - 1
    return kept, constrained


def search_prefixes(
    count: int,
    max_batch: int,
    attempt: Callable[[int], T | None],
    expired: Callable[[], bool],
) -> tuple[T | None, bool]:
    """Binary search for the longest prefix length whose ``attempt`` succeeds.

    ``attempt(n)`` tries the first ``n`` candidates and returns a result or None. Needs at
    least two candidates (one is single-node's job). Lengths tried lie in
    ``2 .. min(count, max_batch + 1)``: with more than ``max_batch`` candidates the upper
    bound is ``max_batch + 1``, as upstream. Success moves the search up, failure down,
    so feasibility is assumed monotone in the prefix length (close enough: a shorter
    batch has fewer pods to place). ``expired()`` is checked before each attempt; on
    expiry the best result so far is returned. Returns ``(best, timed_out)``.
    """
    if count < 2:
        return None, False
    low = 1
    high = count - 1 if count <= max_batch else max_batch
    best: T | None = None
    while low <= high:
        if expired():
            return best, True
        mid = (low + high) // 2
        result = attempt(mid + 1)
        if result is not None:
            best = result
            low = mid + 1
        else:
            high = mid - 1
    return best, False


class MultiNodeConsolidation(Consolidation):
    """Method 4 of the disruption loop: ≤1 command per pass, N→0 or N→1."""

    consolidation_type = CONSOLIDATION_TYPE_MULTI

    def compute_commands(
        self, snapshot: DisruptionSnapshot, budgets: BudgetMap, candidates: Sequence[Candidate]
    ) -> Decision:
        if self.is_consolidated(snapshot):
            return Decision()
        notices: list[Notice] = []
        ordered = sort_by_savings_ratio(candidates)
        disruptable, constrained_by_budgets = take_within_budgets(ordered, budgets)
        command, per_pool = self._first_n(
            snapshot, disruptable, min(len(disruptable), MAX_BATCH), notices
        )
        if command is None:
            if not constrained_by_budgets:
                self.mark_consolidated(snapshot)
            return Decision((), tuple(notices))
        if per_pool is not None:
            # Also when no pool was scored: the move still counts, per NodePool and policy.
            notices.extend(self.evaluator.emit_multi_node_events(command, per_pool, True))
        return Decision((command,), tuple(notices))

    def _first_n(
        self,
        snapshot: DisruptionSnapshot,
        candidates: Sequence[Candidate],
        max_batch: int,
        notices: list[Notice],
    ) -> tuple[Command | None, dict[str, ScoreResult] | None]:
        clock = self.clock
        deadline = clock.now() + MULTI_NODE_CONSOLIDATION_TIMEOUT
        approved_scores: dict[str, ScoreResult] | None = None
        rejected: tuple[Command, dict[str, ScoreResult]] | None = None

        def attempt(size: int) -> Command | None:
            nonlocal approved_scores, rejected
            batch = candidates[:size]
            try:
                command = self.compute_consolidation(snapshot, batch, notices)
            except SimulationError as err:
                log.error("failed computing multi-node consolidation: %s", err)
                return None
            if command is None:
                return None
            if command.decision == DECISION_REPLACE and not self._distinct_replacement(
                command, batch
            ):
                return None
            if command.decision not in (DECISION_DELETE, DECISION_REPLACE):
                return None
            approved, per_pool = self.evaluator.approve_command(command, notices)
            if not approved:
                if per_pool is not None:
                    rejected = (command, per_pool)
                return None
            if per_pool is not None:
                approved_scores = per_pool
            return command

        best, timed_out = search_prefixes(
            len(candidates), max_batch, attempt, lambda: clock.now() > deadline
        )
        if timed_out:
            metrics.VOLUNTARY_DISRUPTION_CONSOLIDATION_TIMEOUTS_TOTAL.labels(
                consolidation_type=self.consolidation_type
            ).inc()
            log.info(
                "multi-node consolidation timed out, %s",
                "returning the last valid command" if best is not None else "no command found",
            )
        if best is None and rejected is not None:
            # Scores are reported once, for the smallest batch that failed, rather than
            # at every step of the search.
            notices.extend(self.evaluator.emit_multi_node_events(rejected[0], rejected[1], False))
        return best, approved_scores if best is not None else None

    @staticmethod
    def _distinct_replacement(command: Command, batch: Sequence[Candidate]) -> bool:
        """Apply :func:`filter_out_same_instance_type` to the replacement; False when
        nothing (or nothing satisfying minValues) is left."""
        replacement = command.replacements[0]
        if not isinstance(replacement, SchedulerNodeClaim):
            return False
        by_identity = {id(info.it): info for info in replacement.options}
        cut = filter_out_same_instance_type(
            [info.it for info in replacement.options],
            replacement.requirements,
            [(c.instance_type, c.labels()) for c in batch],
        )
        if cut.error is not None or not cut.instance_types:
            return False
        replacement.set_options([by_identity[id(it)] for it in cut.instance_types])
        return True

    def validate(self, snapshot: DisruptionSnapshot, command: Command) -> Decision:
        """See :meth:`Consolidation.check`. Unlike single-node, a rejection notes nothing
        (upstream's rejected multi-node command has no candidates left to name)."""
        return self.check(snapshot, command)
