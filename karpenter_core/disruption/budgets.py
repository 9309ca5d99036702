"""Disruption budgets per NodePool (upstream ``helpers.go BuildDisruptionBudgetMapping``
and ``NodePool.GetAllowedDisruptionsByReason``; spec disruption §6).

A budget says how many of a NodePool's nodes may be disrupting at once. Nodes that are
already disrupting — NotReady, or marked for deletion (including by earlier commands of
this controller) — use it up, so the number a method may still start is
``max(allowed - disrupting, 0)``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from datetime import datetime

from attrs import frozen

from karpenter_core import metrics
from karpenter_core.apis.durations import CronError
from karpenter_core.apis.v1 import NodePool
from karpenter_core.disruption.notices import NodePoolBlocked, Notice
from karpenter_core.disruption.snapshot import DisruptionSnapshot
from karpenter_core.disruption.types import BudgetMap
from karpenter_core.state.statenode import StateNode

__all__ = [
    "MAX_INT32",
    "BudgetCounts",
    "Budgets",
    "allowed_disruptions",
    "budget_errors",
    "budget_mapping",
    "count_disrupting",
]

log = logging.getLogger("karpenter.disruption")

MAX_INT32 = 2**31 - 1


def budget_errors(nodepool: NodePool, now: datetime) -> list[str]:
    """What is wrong with the NodePool's budgets (a schedule that does not parse, a
    ``nodes`` value that is neither an integer nor a percentage); empty when all are fine."""
    out = []
    budgets = nodepool.spec.disruption.budgets if nodepool.spec.disruption else ()
    for i, budget in enumerate(budgets):
        try:
            budget.allowed_disruptions(now, 0)
        except (CronError, ValueError) as e:
            out.append(f"budgets[{i}]: {e}")
    return out


def allowed_disruptions(nodepool: NodePool, now: datetime, num_nodes: int, reason: str) -> int:
    """The fewest nodes any active budget for ``reason`` allows (MaxInt32 when none
    applies). Fails closed: when *any* budget of the pool is invalid, 0 for every reason.

    A budget with ``reasons`` unset applies to every reason; an inactive scheduled
    budget allows MaxInt32; a percentage is rounded up."""
    allowed = MAX_INT32
    budgets = nodepool.spec.disruption.budgets if nodepool.spec.disruption else ()
    for budget in budgets:
        try:
            value = budget.allowed_disruptions(now, num_nodes)
        except (CronError, ValueError):
            return 0
        if budget.reasons is None or reason in budget.reasons:
            allowed = min(allowed, value)
    return allowed


class BudgetCounts:
    """Per NodePool: nodes counted toward percentages, and those already disrupting."""

    def __init__(self) -> None:
        self.num: dict[str, int] = {}
        self.disrupting: dict[str, int] = {}


def count_disrupting(state_nodes: Iterable[StateNode]) -> BudgetCounts:
    """Count managed, initialised nodes per NodePool, and those NotReady (a missing Ready
    condition counts) or marked for deletion. Nodes whose instance is already terminating
    are not counted at all: they are on their way out and must not hold up the budget."""
    counts = BudgetCounts()
    for sn in state_nodes:
        if not sn.managed() or not sn.initialized():
            continue
        view = sn.nodeclaim_view
        if view is not None and view.instance_terminating:
            continue
        pool = sn.nodepool_name()
        counts.num[pool] = counts.num.get(pool, 0) + 1
        ready = sn.node is not None and bool(sn.node.ready)
        if not ready or sn.marked_for_deletion:
            counts.disrupting[pool] = counts.disrupting.get(pool, 0) + 1
    return counts


@frozen
class Budgets:
    """The budgets of one reason: ``remaining`` is the map a method gets (a fresh copy
    each time it is read), ``allowed`` and ``disrupting`` what each NodePool's budgets
    allow and what already uses them, ``notices`` the NodePools that have nodes but may
    disrupt none."""

    allowed: Mapping[str, int]
    disrupting: Mapping[str, int]
    notices: tuple[Notice, ...] = ()

    @property
    def remaining(self) -> BudgetMap:
        return {
            name: max(allowed - self.disrupting.get(name, 0), 0)
            for name, allowed in self.allowed.items()
        }


def budget_mapping(snapshot: DisruptionSnapshot, reason: str) -> Budgets:
    """NodePool -> nodes that may still start disrupting for ``reason`` (every NodePool of
    the snapshot, by name); sets the ``nodepools_allowed_disruptions`` and
    ``nodepools_nodes_consuming_budgets`` gauges, and tells a NodePool with nodes whose
    budget allows nothing (a :class:`~karpenter_core.disruption.notices.NodePoolBlocked`
    notice, published at most once a minute)."""
    counts = count_disrupting(snapshot.state_nodes)
    allowed_by: dict[str, int] = {}
    disrupting_by: dict[str, int] = {}
    notices: list[Notice] = []
    for name in sorted(snapshot.nodepools):
        nodepool = snapshot.nodepools[name]
        num = counts.num.get(name, 0)
        disrupting = counts.disrupting.get(name, 0)
        allowed = allowed_disruptions(nodepool, snapshot.now, num, reason)
        allowed_by[name] = allowed
        disrupting_by[name] = disrupting
        metrics.NODEPOOLS_ALLOWED_DISRUPTIONS.labels(nodepool=name, reason=reason).set(allowed)
        metrics.NODEPOOLS_NODES_CONSUMING_BUDGETS.labels(nodepool=name, reason=reason).set(
            disrupting
        )
        if num and allowed == 0:
            notices.append(NodePoolBlocked(nodepool, reason))
    return Budgets(allowed_by, disrupting_by, tuple(notices))
