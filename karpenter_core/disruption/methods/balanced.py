"""The Balanced consolidation policy: is a move's saving worth its disruption?

Spec: disruption §10 (upstream ``balanced.go``, ``designs/balanced-consolidation.md``).
Balanced is not a method of its own; it is an evaluator that single- and multi-node
consolidation consult before proposing a move. A move is scored per NodePool as

    score = (savings / NodePool cost) / (disruption / NodePool disruption)

and approved when ``score >= 1/k`` (``k = 2``): a move must save at least half as large a
share of the pool's cost as the share of the pool's disruption it causes. Both shares are
taken against the *whole* pool (every node, not just the candidates), so a move in a big
pool is judged against that pool's size. NodePools with other policies are not scored.

Everything here is a function of its arguments; :class:`BalancedEvaluator` also counts its
moves in metrics, and returns the ``ConsolidationApproved`` notices to publish.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Protocol

from attrs import frozen

from karpenter_core import metrics
from karpenter_core.apis.labels import NODEPOOL_LABEL_KEY
from karpenter_core.apis.v1 import (
    BALANCED_K,
    CONSOLIDATION_POLICY_BALANCED,
    CONSOLIDATION_POLICY_WHEN_EMPTY_OR_UNDERUTILIZED,
    NodePool,
)
from karpenter_core.disruption.notices import (
    ConsolidationApproved,
    NodePoolConsolidationApproved,
    Notice,
)
from karpenter_core.disruption.types import Candidate, Command
from karpenter_core.state.statenode import StateNode

__all__ = [
    "BalancedEvaluator",
    "Evaluator",
    "NodePoolTotals",
    "NoopEvaluator",
    "ScoreResult",
    "compute_nodepool_totals",
    "consolidation_policy",
    "evaluate_balanced_move",
    "score_message",
    "score_move",
]

log = logging.getLogger("karpenter.disruption.balanced")

APPROVED = "approved"
REJECTED = "rejected"


def consolidation_policy(nodepool: NodePool) -> str:
    """The NodePool's effective consolidation policy (the CRD default when unset)."""
    disruption = nodepool.spec.disruption
    policy = disruption.consolidation_policy if disruption is not None else None
    return policy or CONSOLIDATION_POLICY_WHEN_EMPTY_OR_UNDERUTILIZED


def is_balanced(nodepool: NodePool) -> bool:
    return consolidation_policy(nodepool) == CONSOLIDATION_POLICY_BALANCED


@frozen
class NodePoolTotals:
    """What a NodePool's moves are measured against: its whole cost and disruption."""

    total_cost: float
    total_disruption_cost: float


@frozen
class ScoreResult:
    """One NodePool's view of a move: the fraction of its cost saved and of its
    disruption caused."""

    savings_fraction: float = 0.0
    disruption_fraction: float = 0.0
    k: int = BALANCED_K

    @property
    def score(self) -> float:
        """``savings / disruption``; 0 without savings, +inf without disruption."""
        if self.savings_fraction <= 0:
            return 0.0
        if self.disruption_fraction == 0:
            return math.inf
        return self.savings_fraction / self.disruption_fraction

    @property
    def threshold(self) -> float:
        return 1.0 / self.k

    @property
    def approved(self) -> bool:
        return self.score >= self.threshold


def score_move(
    savings: float, disruption_cost: float, totals: NodePoolTotals, k: int = BALANCED_K
) -> ScoreResult:
    """Score a move that saves ``savings`` and causes ``disruption_cost`` in a NodePool
    with ``totals``. A pool with no cost or no disruption to normalise by scores 0."""
    if totals.total_cost <= 0 or totals.total_disruption_cost <= 0:
        return ScoreResult(k=k)
    return ScoreResult(
        savings / totals.total_cost, disruption_cost / totals.total_disruption_cost, k
    )


def score_message(result: ScoreResult) -> str:
    """The ``ConsolidationApproved`` event text."""
    return (
        f"score {result.score:.2f} >= threshold {result.threshold:.2f} (k: {result.k}, "
        f"savings {result.savings_fraction * 100:.1f}%, "
        f"disruption {result.disruption_fraction * 100:.1f}%)"
    )


def compute_nodepool_totals(
    candidates: Sequence[Candidate],
    state_nodes: Iterable[StateNode],
    node_disruption_cost: Callable[[StateNode], float],
    nodepool_cost: Callable[[str], float] | None = None,
) -> dict[str, NodePoolTotals]:
    """Totals for every NodePool that has a candidate.

    ``candidates`` must be all candidates of the pass, before any method's filter: the
    totals describe the pool, not the method's shortlist. Cost is ``nodepool_cost(name)``
    when that is known and positive (the cluster cost tracker: every NodeClaim of the
    pool, candidates or not), else the candidates' summed price, which leaves out nodes
    that are not candidates (do-not-disrupt ones, say) and so overstates a move's share.
    Disruption sums over *every* node labelled with the pool: a candidate contributes its
    reschedule disruption cost, any other node
    ``node_disruption_cost(node)`` (``1 + Σ`` positive pod eviction costs, DaemonSet pods
    excluded).
    """
    by_name = {c.name(): c for c in candidates}
    fallback: dict[str, float] = {}
    for c in candidates:
        fallback[c.nodepool_name()] = fallback.get(c.nodepool_name(), 0.0) + c.price
    disruption: dict[str, float] = {}
    for sn in state_nodes:
        pool = sn.labels().get(NODEPOOL_LABEL_KEY)
        if not pool:
            continue
        cand = by_name.get(sn.name())
        cost = cand.reschedule_disruption_cost if cand is not None else node_disruption_cost(sn)
        disruption[pool] = disruption.get(pool, 0.0) + cost
    out: dict[str, NodePoolTotals] = {}
    for pool, total in fallback.items():
        tracked = nodepool_cost(pool) if nodepool_cost is not None else 0.0
        out[pool] = NodePoolTotals(tracked if tracked > 0 else total, disruption.get(pool, 0.0))
    return out


def _by_pool(candidates: Iterable[Candidate]) -> dict[str, list[Candidate]]:
    out: dict[str, list[Candidate]] = {}
    for c in candidates:
        out.setdefault(c.nodepool_name(), []).append(c)
    return out


def evaluate_balanced_move(
    command: Command, totals: Mapping[str, NodePoolTotals]
) -> tuple[bool, dict[str, ScoreResult] | None]:
    """Score ``command`` in every Balanced NodePool it touches; approve only if all do.

    A move spanning NodePools splits its net savings in proportion to what each pool's
    candidates cost today. A Balanced pool missing from ``totals`` scores 0 (rejected).
    Non-Balanced pools are not scored and never block. A command without candidates is
    rejected (nothing to score).
    """
    if not command.candidates:
        return False, None
    groups = _by_pool(command.candidates)
    savings = command.estimated_savings()
    source_cost = command.source_cost()
    approved = True
    per_pool: dict[str, ScoreResult] = {}
    for pool, members in groups.items():
        if not is_balanced(members[0].nodepool):
            continue
        disruption = sum(c.reschedule_disruption_cost for c in members)
        pool_savings = savings
        if source_cost > 0 and len(groups) > 1:
            pool_savings = savings * (sum(c.price for c in members) / source_cost)
        result = score_move(
            pool_savings, disruption, totals.get(pool, NodePoolTotals(0.0, 0.0)), BALANCED_K
        )
        per_pool[pool] = result
        log.debug(
            "consolidation score nodepool=%s score=%s savings=%s disruption=%s approved=%s",
            pool,
            result.score,
            pool_savings,
            disruption,
            result.approved,
        )
        approved = approved and result.approved
    return approved, per_pool


class Evaluator(Protocol):
    """Decides whether a consolidation move is worth making (spec §18 seam)."""

    def approve_command(
        self, command: Command, notices: list[Notice]
    ) -> tuple[bool, dict[str, ScoreResult] | None]:
        """Whether to make the move, and the per-NodePool scores behind the answer (what
        it has to say goes to ``notices``)."""
        ...

    def can_pass_threshold(self, candidate: Candidate) -> bool:
        """Whether even deleting ``candidate`` outright could be approved (a cheap
        pre-filter: no replacement can score better than a pure delete)."""
        ...

    def emit_multi_node_events(
        self, command: Command, per_pool: Mapping[str, ScoreResult], approved: bool
    ) -> list[Notice]:
        """Metrics for a multi-node move, once its search has settled, and the notices
        to publish."""
        ...


class NoopEvaluator:
    """Approves everything: used until a pass installs NodePool totals."""

    def approve_command(
        self, command: Command, notices: list[Notice]
    ) -> tuple[bool, dict[str, ScoreResult] | None]:
        return True, None

    def can_pass_threshold(self, candidate: Candidate) -> bool:
        return True

    def emit_multi_node_events(
        self, command: Command, per_pool: Mapping[str, ScoreResult], approved: bool
    ) -> list[Notice]:
        return []


class BalancedEvaluator:
    """Scores moves against the NodePool totals of the current pass.

    Rejections only count in metrics: under Balanced they are frequent enough that
    events for them would bury the approvals users look for.
    """

    def __init__(self, totals: Mapping[str, NodePoolTotals]) -> None:
        self.totals = dict(totals)

    def approve_command(
        self, command: Command, notices: list[Notice]
    ) -> tuple[bool, dict[str, ScoreResult] | None]:
        approved, per_pool = evaluate_balanced_move(command, self.totals)
        if len(command.candidates) == 1 and per_pool is not None:
            candidate = command.candidates[0]
            pool = candidate.nodepool_name()
            policy = consolidation_policy(candidate.nodepool)
            result = per_pool.get(pool)
            decision = REJECTED if result is not None and not result.approved else APPROVED
            metrics.CONSOLIDATION_MOVES_TOTAL.labels(
                decision=decision, nodepool=pool, policy=policy
            ).inc()
            if result is not None:
                metrics.CONSOLIDATION_SCORE.labels(
                    decision=decision, nodepool=pool, policy=policy
                ).observe(result.score)
                if result.approved:
                    notices.append(
                        ConsolidationApproved(
                            candidate.state_node.node, candidate.nodeclaim, score_message(result)
                        )
                    )
        return approved, per_pool

    def can_pass_threshold(self, candidate: Candidate) -> bool:
        if not is_balanced(candidate.nodepool):
            return True
        totals = self.totals.get(candidate.nodepool_name())
        if totals is None or totals.total_cost <= 0:
            return True
        return score_move(
            candidate.price, candidate.reschedule_disruption_cost, totals, BALANCED_K
        ).approved

    def emit_multi_node_events(
        self, command: Command, per_pool: Mapping[str, ScoreResult], approved: bool
    ) -> list[Notice]:
        notices: list[Notice] = []
        move = APPROVED if approved else REJECTED
        for pool, members in _by_pool(command.candidates).items():
            nodepool = members[0].nodepool
            policy = consolidation_policy(nodepool)
            metrics.CONSOLIDATION_MOVES_TOTAL.labels(
                decision=move, nodepool=pool, policy=policy
            ).inc()
            result = per_pool.get(pool)
            if result is None:
                continue
            decision = APPROVED if result.approved else REJECTED
            metrics.CONSOLIDATION_SCORE.labels(
                decision=decision, nodepool=pool, policy=policy
            ).observe(result.score)
            if result.approved:
                notices.append(NodePoolConsolidationApproved(nodepool, score_message(result)))
        return notices
