"""The ``max-node-age`` disruption method: recycle nodes older than their NodePool allows.

A NodePool annotated ``plugin.example.com/max-node-age: 720h`` has its nodes removed,
oldest first and one per disruption pass, once they are older than that — so long-lived
nodes pick up new images and kernels without an operator draining them by hand. Unlike
``spec.template.spec.expireAfter`` (which deletes a NodeClaim when its time is up,
whatever the budgets say) this is voluntary disruption: it waits for the NodePool's
disruption budgets, honours PodDisruptionBudgets and ``karpenter.sh/do-not-disrupt``
pods (it is a *graceful* method), and its decisions carry their own reason, ``Aged``.

Like the built-in methods, it decides on the pass's snapshot alone (the time, the
candidates, the budgets) and sizes each command with the scheduling simulation of the
plugin API (``simulate_scheduling``): when the node's pods fit on the rest of the cluster
the command deletes it, otherwise it launches the replacements first; a node whose pods
would have nowhere to go is left alone this pass, and says why (a ``Blocked`` notice the
controller publishes as a ``DisruptionBlocked`` event). Keep the NodePool's budget small
(``nodes: "1"``) to recycle one node at a time.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from karpenter_core.plugin_api import CLASS_GRACEFUL, CONSOLIDATION_TYPE_NONE, ORDER_DRIFT
from karpenter_example_plugin.policy import PolicyError, max_node_age

if TYPE_CHECKING:
    from karpenter_core.plugin_api import (
        BudgetMap,
        Candidate,
        Decision,
        DisruptionContext,
        DisruptionSnapshot,
    )

__all__ = ["NAME", "ORDER", "REASON", "MaxNodeAge", "due_at"]

NAME = "max-node-age"
ORDER = ORDER_DRIFT + 50
"""After drift (a drifted node is replaced, with its replacement launched first, rather
than recycled) and before consolidation."""
REASON = "Aged"
"""The disruption reason of this method's commands (reports, events, metrics)."""


def due_at(candidate: Candidate) -> datetime | None:
    """When the candidate's node reaches its NodePool's maximum age; None when the
    NodePool sets no maximum, or one this plugin cannot read (the recycle-schedule
    controller reports that on the NodePool)."""
    try:
        age = max_node_age(candidate.nodepool.metadata.annotations)
    except PolicyError:
        return None
    created = candidate.nodeclaim.metadata.created_at
    if age is None or created is None:
        return None
    due: datetime = created + age
    return due


class MaxNodeAge:
    """A :class:`karpenter_core.plugin_api.Method`: delete the node that has been due longest.

    It needs nothing from its ``DisruptionContext``: every pass brings its snapshot."""

    reason = REASON
    disruption_class = CLASS_GRACEFUL
    consolidation_type = CONSOLIDATION_TYPE_NONE

    def __init__(self, context: DisruptionContext | None = None) -> None:
        pass

    def should_disrupt(self, snapshot: DisruptionSnapshot, candidate: Candidate) -> bool:
        # A static NodePool keeps a fixed node count through its own controller.
        if candidate.owned_by_static_nodepool():
            return False
        due = due_at(candidate)
        return due is not None and due <= snapshot.now

    def compute_commands(
        self, snapshot: DisruptionSnapshot, budgets: BudgetMap, candidates: Sequence[Candidate]
    ) -> Decision:
        """The oldest due candidate whose NodePool's budget allows one more and whose
        pods fit somewhere, with the replacements they need."""
        # The disruption types load the engine: import them when a pass runs, not when
        # `karpenter plugins` imports this module.
        from karpenter_core.plugin_api import (
            Blocked,
            CandidateDeletingError,
            Command,
            Decision,
            simulate_scheduling,
        )

        due = [(d, c) for c in candidates if (d := due_at(c)) is not None and d <= snapshot.now]
        blocked = []
        for _, candidate in sorted(due, key=lambda pair: pair[0]):
            pool = candidate.nodepool_name()
            if budgets.get(pool, 0) <= 0:
                continue
            try:
                results = simulate_scheduling(snapshot, [candidate])
            except CandidateDeletingError:
                continue
            if not results.all_non_pending_pods_scheduled():
                # its pods would have nowhere to go: not this pass, and say why
                why = results.non_pending_pod_scheduling_errors()
                node, nodeclaim = candidate.state_node.node, candidate.nodeclaim
                blocked.append(Blocked(node, nodeclaim, why[:1].upper() + why[1:]))
                continue
            budgets[pool] -= 1
            command = Command([candidate], results.new_nodeclaims, results)
            return Decision((command,), tuple(blocked))
        return Decision((), tuple(blocked))
