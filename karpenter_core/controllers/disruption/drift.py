"""Drift: replace nodes that no longer match their NodePool (upstream ``drift.go``; spec
disruption §8).

The ``Drifted`` condition (set by ``nodeclaim.disruption``) says which NodeClaims drifted;
this method turns one of them per pass into a command: its pods are simulated elsewhere and
whatever new NodeClaims that takes become its replacements. Drift is *eventual*: with a
terminationGracePeriod on the NodeClaim, pods that block eviction do not stop it. There is
no price check, no validation wait, and it runs even with consolidation disabled.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from karpenter_core.apis.v1 import CONDITION_DRIFTED
from karpenter_core.controllers.disruption import events
from karpenter_core.controllers.disruption.simulation import (
    CandidateDeletingError,
    simulate_scheduling,
)
from karpenter_core.controllers.disruption.types import (
    CLASS_EVENTUAL,
    CONSOLIDATION_TYPE_NONE,
    REASON_DRIFTED,
    BudgetMap,
    Candidate,
    Command,
    DisruptionContext,
)
from karpenter_core.runtime.clock import parse_time

__all__ = ["Drift", "drifted_since", "is_drifted"]

log = logging.getLogger("karpenter.disruption")


def is_drifted(candidate: Candidate) -> bool:
    cond = candidate.nodeclaim.condition(CONDITION_DRIFTED)
    return cond is not None and cond.is_true


def drifted_since(candidate: Candidate) -> float:
    """When the NodeClaim became Drifted (POSIX seconds; unknown sorts first)."""
    cond = candidate.nodeclaim.condition(CONDITION_DRIFTED)
    if cond is None or not cond.last_transition_time:
        return float("-inf")
    try:
        return parse_time(str(cond.last_transition_time)).timestamp()
    except ValueError:
        return float("-inf")


class Drift:
    """Method 3 of the disruption loop (reason ``Drifted``, eventual)."""

    reason = REASON_DRIFTED
    disruption_class = CLASS_EVENTUAL
    consolidation_type = CONSOLIDATION_TYPE_NONE

    def __init__(self, dctx: DisruptionContext) -> None:
        self.dctx = dctx

    def should_disrupt(self, candidate: Candidate) -> bool:
        return not candidate.owned_by_static_nodepool() and is_drifted(candidate)

    def compute_commands(
        self, budgets: BudgetMap, candidates: Sequence[Candidate]
    ) -> list[Command]:
        """The first candidate (earliest drift, nodes without reschedulable pods first)
        within budget whose pods all fit somewhere, with the new NodeClaims they need."""
        ordered = sorted(candidates, key=drifted_since)
        empty = [c for c in ordered if not c.reschedulable_pods]
        busy = [c for c in ordered if c.reschedulable_pods]
        for c in (*empty, *busy):
            if budgets.get(c.nodepool_name(), 0) <= 0:
                continue
            try:
                results = simulate_scheduling(self.dctx, [c])
            except CandidateDeletingError:
                continue
            if not results.all_non_pending_pods_scheduled():
                message = results.non_pending_pod_scheduling_errors()
                self.dctx.recorder.publish(
                    *events.blocked(
                        c.state_node.node, c.nodeclaim, message[:1].upper() + message[1:]
                    )
                )
                continue
            return [Command([c], results.new_nodeclaims, results)]
        return []
