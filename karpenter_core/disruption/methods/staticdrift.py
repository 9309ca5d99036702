"""Static drift: replace drifted nodes of static NodePools one for one (upstream
``staticdrift.go``; spec disruption §8).

A static NodePool (``spec.replicas``) keeps a fixed number of nodes, so a drifted node is
replaced by a fresh NodeClaim straight from the NodePool's template — no simulation. Per
NodePool, as many as the ``Drifted`` budget and the drifted nodes allow are replaced in one
pass; nothing happens while the pool runs more nodes than its replicas.

Each replacement needs one node count reserved against ``spec.limits.nodes``: the
controller reserves them when the method has decided
(:func:`~karpenter_core.disruption.replacements.reserve_replacements`) and starts only the
commands the limit leaves room for.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from karpenter_core.disruption.methods.drift import is_drifted
from karpenter_core.disruption.replacements import TemplateReplacement
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
from karpenter_core.provisioning.scheduler.nodeclaimtemplate import TemplateError

__all__ = ["StaticDrift"]

log = logging.getLogger("karpenter.disruption")


class StaticDrift:
    """Method 2 of the disruption loop (reason ``Drifted``, eventual)."""

    reason = REASON_DRIFTED
    disruption_class = CLASS_EVENTUAL
    consolidation_type = CONSOLIDATION_TYPE_NONE

    def should_disrupt(self, snapshot: DisruptionSnapshot, candidate: Candidate) -> Verdict:
        return candidate.owned_by_static_nodepool() and is_drifted(candidate)

    def compute_commands(
        self, snapshot: DisruptionSnapshot, budgets: BudgetMap, candidates: Sequence[Candidate]
    ) -> Decision:
        by_pool: dict[str, list[Candidate]] = {}
        for c in candidates:
            by_pool.setdefault(c.nodepool_name(), []).append(c)
        out: list[Command] = []
        for name in sorted(by_pool):
            out.extend(self._pool_commands(snapshot, name, by_pool[name], budgets.get(name, 0)))
        return Decision(tuple(out))

    def _pool_commands(
        self,
        snapshot: DisruptionSnapshot,
        name: str,
        pool_candidates: Sequence[Candidate],
        budget: int,
    ) -> list[Command]:
        """The pool's one-for-one replacements, as many as its budget allows (the node
        limit is the controller's to apply when it reserves their counts)."""
        if budget <= 0:
            return []
        pool = pool_candidates[0].nodepool
        replicas = pool.spec.replicas or 0
        if snapshot.static_nodes.get(name, 0) > replicas:
            return []
        wanted = min(budget, len(pool_candidates))
        try:
            replacements = [TemplateReplacement(pool) for _ in range(wanted)]
        except TemplateError as e:
            log.error("static drift: nodepool %s: %s", name, e)
            return []
        return [
            Command([c], [r]) for c, r in zip(pool_candidates[:wanted], replacements, strict=True)
        ]
