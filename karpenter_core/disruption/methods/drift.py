"""Drift: replace nodes that no longer match their NodePool (upstream ``drift.go``; spec
disruption §8).

The ``Drifted`` condition (set by ``nodeclaim.disruption``) says which NodeClaims drifted;
this method turns one of them per pass into a command: its pods are simulated elsewhere and
whatever new NodeClaims that takes become its replacements. Drift is *eventual*: with a
terminationGracePeriod on the NodeClaim, pods that block eviction do not stop it. There is
no price check, no validation wait, and it runs even with consolidation disabled.
"""

from __future__ import annotations

from collections.abc import Sequence

from karpenter_core.apis.v1 import CONDITION_DRIFTED, parse_time
from karpenter_core.disruption.notices import Blocked, Notice
from karpenter_core.disruption.simulation import CandidateDeletingError, simulate_scheduling
from karpenter_core.disruption.snapshot import DisruptionSnapshot
from karpenter_core.disruption.types import (
    CLASS_EVENTUAL,
    CONSOLIDATION_TYPE_NONE,
    REASON_DRIFTED,
    BudgetMap,
    Candidate,
    Command,
    Decision,
    Verdict,
)

__all__ = ["Drift", "drifted_since", "is_drifted"]


def is_drifted(candidate: Candidate) -> bool:
    return candidate.nodeclaim.is_true(CONDITION_DRIFTED)


def drifted_since(candidate: Candidate) -> float:
    """When the NodeClaim became Drifted (POSIX seconds; unknown sorts first)."""
    cond = candidate.nodeclaim.condition(CONDITION_DRIFTED)
    if cond is None:
        return float("-inf")
    try:
        at = parse_time(cond.last_transition_time)
    except ValueError:
        return float("-inf")
    return at.timestamp() if at is not None else float("-inf")


class Drift:
    """Method 3 of the disruption loop (reason ``Drifted``, eventual)."""

    reason = REASON_DRIFTED
    disruption_class = CLASS_EVENTUAL
    consolidation_type = CONSOLIDATION_TYPE_NONE

    def should_disrupt(self, snapshot: DisruptionSnapshot, candidate: Candidate) -> Verdict:
        return not candidate.owned_by_static_nodepool() and is_drifted(candidate)

    def compute_commands(
        self, snapshot: DisruptionSnapshot, budgets: BudgetMap, candidates: Sequence[Candidate]
    ) -> Decision:
        """The first candidate (earliest drift, nodes without reschedulable pods first)
        within budget whose pods all fit somewhere, with the new NodeClaims they need."""
        notices: list[Notice] = []
        ordered = sorted(candidates, key=drifted_since)
        empty = [c for c in ordered if not c.reschedulable_pods]
        busy = [c for c in ordered if c.reschedulable_pods]
        for c in (*empty, *busy):
            if budgets.get(c.nodepool_name(), 0) <= 0:
                continue
            try:
                results = simulate_scheduling(snapshot, [c], notices=notices)
            except CandidateDeletingError:
                continue
            if not results.all_non_pending_pods_scheduled():
                message = results.non_pending_pod_scheduling_errors()
                notices.append(
                    Blocked(c.state_node.node, c.nodeclaim, message[:1].upper() + message[1:])
                )
                continue
            command = Command([c], results.new_nodeclaims, results)
            return Decision((command,), tuple(notices))
        return Decision((), tuple(notices))
