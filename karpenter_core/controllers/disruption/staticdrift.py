"""Static drift: replace drifted nodes of static NodePools one for one (upstream
``staticdrift.go``; spec disruption §8).

A static NodePool (``spec.replicas``) keeps a fixed number of nodes, so a drifted node is
replaced by a fresh NodeClaim straight from the NodePool's template — no simulation. Per
NodePool, as many as the ``Drifted`` budget, the drifted nodes and the node limit allow are
replaced in one pass; nothing happens while the pool runs more nodes than its replicas.

Each replacement holds one node count reserved against ``spec.limits.nodes`` from the
moment it is decided until the provisioner has attempted to create it (the provisioner
gives the count back after the attempt, success or failure — by then a created NodeClaim
counts as active). Released any earlier, ``static.provisioning`` could reserve the same
headroom in between and the pool would overshoot its limit. Every path that drops a
command before it reaches the provisioner gives its counts back with
:func:`release_reservations`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import Any

from karpenter_core.apis.quantity import QuantityError
from karpenter_core.apis.resources import parse_resource_list
from karpenter_core.apis.v1 import NodePool
from karpenter_core.controllers.disruption.drift import is_drifted
from karpenter_core.controllers.disruption.types import (
    CLASS_EVENTUAL,
    CONSOLIDATION_TYPE_NONE,
    REASON_DRIFTED,
    BudgetMap,
    Candidate,
    Command,
    DisruptionContext,
)
from karpenter_core.provisioning.scheduler.nodeclaimtemplate import NodeClaimTemplate, TemplateError
from karpenter_core.state.cluster import NodePoolState
from karpenter_core.state.statenode import NODES_RESOURCE

__all__ = ["StaticDrift", "TemplateReplacement", "release_reservations"]

log = logging.getLogger("karpenter.disruption")

UNLIMITED = 2**63 - 1


class TemplateReplacement:
    """A replacement NodeClaim taken as is from a NodePool's template (what the queue
    launches for static drift): the template's labels, annotations (with the NodePool hash)
    and spec, owned by the NodePool.

    ``is_static_nodeclaim`` (the NodePool has ``spec.replicas``) tells the provisioner that
    the launch holds one reserved node count, to give back once it has been attempted."""

    def __init__(self, nodepool: NodePool) -> None:
        self.template = NodeClaimTemplate(nodepool)
        self.nodepool_name = self.template.nodepool_name
        self.is_static_nodeclaim = nodepool.is_static
        self.pods: list[Any] = []
        self.requirements = self.template.requirements

    def instance_types_by_price(self) -> list[Any]:
        return []

    def to_nodeclaim_dict(self) -> dict[str, Any]:
        spec = {k: v for k, v in self.template.spec.items() if k != "resources"}
        return {
            "apiVersion": "karpenter.sh/v1",
            "kind": "NodeClaim",
            "metadata": {
                "generateName": f"{self.nodepool_name}-",
                "labels": dict(sorted(self.template.labels.items())),
                "annotations": dict(sorted(self.template.annotations.items())),
                "ownerReferences": [
                    {
                        "apiVersion": "karpenter.sh/v1",
                        "kind": "NodePool",
                        "name": self.nodepool_name,
                        "uid": self.template.nodepool_uid,
                        "blockOwnerDeletion": True,
                    }
                ],
            },
            "spec": spec,
        }


def node_limit(nodepool: NodePool) -> int:
    """``spec.limits.nodes`` (unlimited when unset or unreadable)."""
    limits = nodepool.spec.limits
    if not limits:
        return UNLIMITED
    try:
        parsed = parse_resource_list(limits)
    except QuantityError:
        return UNLIMITED
    value = parsed.get(NODES_RESOURCE)
    return UNLIMITED if value is None else value // 1000


def release_reservations(state: NodePoolState, replacements: Iterable[Any]) -> None:
    """Give back the node count each static replacement holds (one per replacement whose
    ``is_static_nodeclaim`` is set) — for a command that will not reach the provisioner.
    Replacements from a simulation hold nothing and are skipped."""
    for r in replacements:
        if getattr(r, "is_static_nodeclaim", False):
            state.release_node_count(r.nodepool_name, 1)


class StaticDrift:
    """Method 2 of the disruption loop (reason ``Drifted``, eventual)."""

    reason = REASON_DRIFTED
    disruption_class = CLASS_EVENTUAL
    consolidation_type = CONSOLIDATION_TYPE_NONE

    def __init__(self, dctx: DisruptionContext) -> None:
        self.dctx = dctx

    def should_disrupt(self, candidate: Candidate) -> bool:
        return candidate.owned_by_static_nodepool() and is_drifted(candidate)

    def compute_commands(
        self, budgets: BudgetMap, candidates: Sequence[Candidate]
    ) -> list[Command]:
        by_pool: dict[str, list[Candidate]] = {}
        for c in candidates:
            by_pool.setdefault(c.nodepool_name(), []).append(c)
        state = self.dctx.cluster.nodepool_state
        out: list[Command] = []
        try:
            for name in sorted(by_pool):
                out.extend(self._pool_commands(name, by_pool[name], budgets.get(name, 0)))
        except BaseException:
            # nothing is returned, so nobody else would give these counts back
            for cmd in out:
                release_reservations(state, cmd.replacements)
            raise
        return out

    def _pool_commands(
        self, name: str, pool_candidates: Sequence[Candidate], budget: int
    ) -> list[Command]:
        """The pool's one-for-one replacements, each holding one reserved node count
        (kept: the provisioner or the path that drops the command gives it back)."""
        if budget <= 0:
            return []
        state = self.dctx.cluster.nodepool_state
        pool = pool_candidates[0].nodepool
        replicas = pool.spec.replicas or 0
        counts = state.node_counts(name)
        if counts.active + counts.pending_disruption > replicas:
            return []
        wanted = min(budget, len(pool_candidates))
        granted = state.reserve_node_count(name, node_limit(pool), wanted)
        if granted <= 0:
            return []
        try:
            replacements = [TemplateReplacement(pool) for _ in range(granted)]
        except TemplateError as e:
            state.release_node_count(name, granted)
            log.error("static drift: nodepool %s: %s", name, e)
            return []
        except BaseException:
            state.release_node_count(name, granted)
            raise
        return [
            Command([c], [r]) for c, r in zip(pool_candidates[:granted], replacements, strict=True)
        ]
