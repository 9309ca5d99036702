"""``explain nodepool``: what a NodePool may do now — its state, limits, the budgets in
force for each disruption reason, drift.

Budgets are :func:`~karpenter_core.disruption.budgets.budget_mapping` at ``now`` (what
the next disruption pass would allow, nodes already disrupting subtracted); limits are
the provisioner's (capacity of the pool's nodes that are not deleting against
``spec.limits``).
"""

from __future__ import annotations

from typing import Any

from attrs import frozen

from karpenter_core.apis.durations import CronError
from karpenter_core.apis.resources import format_resource_list, parse_resource_list
from karpenter_core.apis.v1 import CONDITION_DRIFTED, NodePool
from karpenter_core.disruption.budgets import budget_mapping
from karpenter_core.disruption.methods.balanced import consolidation_policy
from karpenter_core.explain.inputs import ExplainInput
from karpenter_core.explain.node import REASONS, disruption_snapshot
from karpenter_core.explain.pod import ExplainError
from karpenter_core.explain.reasons import Reason

__all__ = ["BudgetState", "NodePoolExplanation", "explain_nodepool"]

READY = "ready"
NOT_READY = "not-ready"
INVALID = "invalid"
STATIC = "static"
DELETING = "deleting"
AT_LIMIT = "at-limit"


@frozen
class BudgetState:
    """One disruption reason's budget for the pool now: ``allowed`` by the budgets in
    force, ``disrupting`` nodes already using it, ``remaining`` what a pass may start;
    ``active`` the budgets (as written) in force now."""

    reason: str
    allowed: int
    disrupting: int
    remaining: int
    active: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "reason": self.reason,
            "allowed": self.allowed,
            "disrupting": self.disrupting,
            "remaining": self.remaining,
            "activeBudgets": list(self.active),
        }


@frozen
class NodePoolExplanation:
    nodepool: str
    summary: Reason
    nodes: int = 0
    limits: tuple[tuple[str, str, str], ...] = ()
    """``(resource, used, limit)``, formatted."""
    budgets: tuple[BudgetState, ...] = ()
    drifted: tuple[str, ...] = ()
    """NodeClaims of the pool whose ``Drifted`` condition is true."""
    consolidation: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": "NodePoolExplanation",
            "nodePool": self.nodepool,
            "summary": self.summary.to_json(),
            "nodes": self.nodes,
            "limits": [{"resource": r, "used": u, "limit": lim} for r, u, lim in self.limits],
            "budgets": [b.to_json() for b in self.budgets],
            "drifted": list(self.drifted),
            "consolidation": self.consolidation,
        }


def explain_nodepool(ei: ExplainInput, name: str) -> NodePoolExplanation:
    """Explain the NodePool ``name``; raises :class:`ExplainError` when it is not in the
    input."""
    if name in ei.inp.invalid_nodepools:
        return NodePoolExplanation(name, Reason(INVALID, ei.inp.invalid_nodepools[name]))
    np = next((p for p in ei.inp.nodepools if p.name == name), None)
    if np is None:
        raise ExplainError(f"nodepool {name} is not in the input")
    snapshot = disruption_snapshot(ei)
    members = [sn for sn in snapshot.state_nodes if sn.nodepool_name() == name]
    limits, full = _limits(ei, np)
    budgets = []
    for reason in REASONS:
        mapping = budget_mapping(snapshot, reason)
        budgets.append(
            BudgetState(
                reason,
                mapping.allowed.get(name, 0),
                mapping.disrupting.get(name, 0),
                mapping.remaining.get(name, 0),
                _active(np, ei, reason),
            )
        )
    drifted = tuple(
        sorted(
            sn.nodeclaim.name
            for sn in members
            if sn.nodeclaim is not None and sn.nodeclaim.is_true(CONDITION_DRIFTED)
        )
    )
    defaulted = np.with_defaults()
    disruption = defaulted.spec.disruption
    after = disruption.consolidate_after if disruption is not None else None
    consolidation = (
        f"{consolidation_policy(defaulted)}, consolidateAfter "
        f"{after if after is not None else 'unset'}"
    )
    return NodePoolExplanation(
        name,
        _summary(np, full),
        nodes=len(members),
        limits=limits,
        budgets=tuple(budgets),
        drifted=drifted,
        consolidation=consolidation,
    )


def _summary(np: NodePool, full: tuple[str, ...]) -> Reason:
    if np.metadata.deletion_timestamp:
        return Reason(DELETING, "being deleted: launches nothing")
    if np.is_static:
        return Reason(STATIC, f"static: keeps {np.spec.replicas} node(s)")
    ready = np.condition("Ready")
    if ready is not None and not ready.is_true:
        return Reason(NOT_READY, f"not ready: {ready.message or ready.reason or 'Ready=False'}")
    if full:
        return Reason(AT_LIMIT, f"at its limits on {', '.join(full)}: launches nothing more")
    return Reason(READY, "ready: may launch nodes")


def _limits(
    ei: ExplainInput, np: NodePool
) -> tuple[tuple[tuple[str, str, str], ...], tuple[str, ...]]:
    """``(resource, used, limit)`` formatted, and the limited resources used up."""
    limits = parse_resource_list(np.spec.limits or None)
    if not limits:
        return (), ()
    used = ei.inp.snapshot.nodepool_resources(np.name)
    shown_used = format_resource_list({k: used.get(k, 0) for k in limits})
    shown_limit = format_resource_list(limits)
    rows = tuple((k, shown_used[k], shown_limit[k]) for k in sorted(limits))
    full = tuple(k for k in sorted(limits) if used.get(k, 0) >= limits[k])
    return rows, full


def _active(np: NodePool, ei: ExplainInput, reason: str) -> tuple[str, ...]:
    """The pool's budgets that apply to ``reason`` and are in force at ``ei.now``."""
    out = []
    budgets = np.spec.disruption.budgets if np.spec.disruption is not None else ()
    for b in budgets:
        if b.reasons is not None and reason not in b.reasons:
            continue
        try:
            active = b.is_active(ei.now)
        except (CronError, ValueError) as e:
            out.append(f"nodes={b.nodes} (invalid: {e})")
            continue
        if active:
            when = f", schedule={b.schedule!r}, duration={b.duration}" if b.schedule else ""
            out.append(f"nodes={b.nodes}{when}")
    return tuple(out)
