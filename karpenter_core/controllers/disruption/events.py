"""Disruption's events, with upstream's reasons, messages and dedupe keys
(``pkg/controllers/disruption/events``; spec disruption §12).

Each constructor returns the events to publish (one for the Node, one for the NodeClaim
where upstream emits both), ready for ``recorder.publish``. :func:`render` turns the
notices a decision returns (:mod:`karpenter_core.disruption.notices`) into them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from karpenter_core.apis.objects import Node
from karpenter_core.apis.v1 import NodeClaim, NodePool
from karpenter_core.disruption.notices import (
    Blocked,
    ConsolidationApproved,
    ConsolidationCandidate,
    ConsolidationRejected,
    NodePoolBlocked,
    NodePoolConsolidationApproved,
    Notice,
    PodNotice,
    Unconsolidatable,
)
from karpenter_core.runtime.events import NORMAL, Event

__all__ = [
    "CONSOLIDATION_APPROVED",
    "CONSOLIDATION_CANDIDATE",
    "CONSOLIDATION_REJECTED",
    "DISRUPTION_BLOCKED",
    "DISRUPTION_LAUNCHING",
    "DISRUPTION_TERMINATING",
    "DISRUPTION_WAITING_READINESS",
    "UNCONSOLIDATABLE",
    "blocked",
    "consolidation_approved",
    "consolidation_candidate",
    "consolidation_rejected",
    "launching",
    "node_ref",
    "nodeclaim_ref",
    "nodepool_approved",
    "nodepool_blocked_for_reason",
    "render",
    "terminating",
    "title",
    "unconsolidatable",
    "waiting_on_readiness",
]

DISRUPTION_BLOCKED = "DisruptionBlocked"
DISRUPTION_LAUNCHING = "DisruptionLaunching"
DISRUPTION_WAITING_READINESS = "DisruptionWaitingReadiness"
DISRUPTION_TERMINATING = "DisruptionTerminating"
UNCONSOLIDATABLE = "Unconsolidatable"
CONSOLIDATION_CANDIDATE = "ConsolidationCandidate"
CONSOLIDATION_REJECTED = "ConsolidationRejected"
CONSOLIDATION_APPROVED = "ConsolidationApproved"

UNCONSOLIDATABLE_DEDUPE = 15 * 60.0
NODEPOOL_BLOCKED_DEDUPE = 60.0

NodeClaimLike = NodeClaim | Mapping[str, Any]
"""A NodeClaim as the typed model or as the API server's JSON."""


def title(reason: str) -> str:
    """Go's ``cases.Title(language.Und, cases.NoLower)``: first letter of each word
    upper-cased, the rest kept (``drifted`` -> ``Drifted``)."""
    return " ".join(w[:1].upper() + w[1:] for w in reason.split(" "))


def node_ref(node: Node) -> dict[str, str]:
    """An ObjectReference for a parsed :class:`~karpenter_core.apis.objects.Node`."""
    ref = {"apiVersion": "v1", "kind": "Node", "name": node.name}
    if node.uid:
        ref["uid"] = node.uid
    return ref


def _ref(kind: str, name: object, uid: object) -> dict[str, str]:
    ref = {"apiVersion": "karpenter.sh/v1", "kind": kind, "name": str(name)}
    if uid:
        ref["uid"] = str(uid)
    return ref


def nodeclaim_ref(nodeclaim: NodeClaimLike) -> dict[str, str]:
    """An ObjectReference for a NodeClaim (typed model or JSON)."""
    if isinstance(nodeclaim, NodeClaim):
        return _ref("NodeClaim", nodeclaim.metadata.name, nodeclaim.metadata.uid)
    meta = nodeclaim.get("metadata") or {}
    return _ref("NodeClaim", meta.get("name"), meta.get("uid"))


def _nodepool_ref(nodepool: NodePool) -> dict[str, str]:
    return _ref("NodePool", nodepool.metadata.name, nodepool.metadata.uid)


def _uid(ref: Mapping[str, str]) -> str:
    return ref.get("uid") or ref.get("name", "")


def _pair(
    node: Node | None,
    nodeclaim: NodeClaimLike | None,
    reason: str,
    message: str,
    extra: tuple[str, ...] = (),
    timeout: float | None = None,
) -> list[Event]:
    out = []
    for ref in (
        node_ref(node) if node is not None else None,
        nodeclaim_ref(nodeclaim) if nodeclaim is not None else None,
    ):
        if ref is not None:
            out.append(Event(ref, NORMAL, reason, message, (_uid(ref), *extra), timeout))
    return out


def blocked(node: Node | None, nodeclaim: NodeClaimLike | None, message: str) -> list[Event]:
    """``DisruptionBlocked`` on the Node and NodeClaim: why the node is not a candidate."""
    return _pair(node, nodeclaim, DISRUPTION_BLOCKED, message)


def nodepool_blocked_for_reason(nodepool: NodePool, reason: str) -> Event:
    """``DisruptionBlocked`` on a NodePool whose budgets allow no disruption for
    ``reason`` (deduplicated per minute: a scheduled budget can change every minute)."""
    ref = _nodepool_ref(nodepool)
    return Event(
        ref,
        NORMAL,
        DISRUPTION_BLOCKED,
        f"No allowed disruptions for disruption reason {reason} due to blocking budget",
        (_uid(ref), reason),
        NODEPOOL_BLOCKED_DEDUPE,
    )


def unconsolidatable(
    node: Node | None, nodeclaim: NodeClaimLike | None, message: str
) -> list[Event]:
    """``Unconsolidatable`` (deduplicated for 15 minutes)."""
    return _pair(node, nodeclaim, UNCONSOLIDATABLE, message, timeout=UNCONSOLIDATABLE_DEDUPE)


def launching(nodeclaim: NodeClaimLike, reason: str) -> Event:
    ref = nodeclaim_ref(nodeclaim)
    return Event(
        ref,
        NORMAL,
        DISRUPTION_LAUNCHING,
        f"Launching NodeClaim: {title(reason)}",
        (_uid(ref), reason),
    )


def waiting_on_readiness(nodeclaim: NodeClaimLike) -> Event:
    ref = nodeclaim_ref(nodeclaim)
    return Event(
        ref,
        NORMAL,
        DISRUPTION_WAITING_READINESS,
        "Waiting on readiness to continue disruption",
        (_uid(ref),),
    )


def terminating(node: Node | None, nodeclaim: NodeClaimLike | None, reason: str) -> list[Event]:
    out = []
    if node is not None:
        ref = node_ref(node)
        out.append(
            Event(
                ref,
                NORMAL,
                DISRUPTION_TERMINATING,
                f"Disrupting Node: {title(reason)}",
                (_uid(ref), reason),
            )
        )
    if nodeclaim is not None:
        ref = nodeclaim_ref(nodeclaim)
        out.append(
            Event(
                ref,
                NORMAL,
                DISRUPTION_TERMINATING,
                f"Disrupting NodeClaim: {title(reason)}",
                (_uid(ref), reason),
            )
        )
    return out


def consolidation_candidate(
    node: Node | None, nodeclaim: NodeClaimLike | None, command: str, savings: float
) -> list[Event]:
    message = f"Consolidation candidate: {command} (savings: ${savings:.2f})"
    return _pair(node, nodeclaim, CONSOLIDATION_CANDIDATE, message, (command,))


def consolidation_rejected(
    node: Node | None, nodeclaim: NodeClaimLike | None, command: str, reason: str, savings: float
) -> list[Event]:
    message = f"Consolidation rejected: {command}, reason: {reason} (savings: ${savings:.2f})"
    return _pair(node, nodeclaim, CONSOLIDATION_REJECTED, message, (command, reason))


def consolidation_approved(
    node: Node | None, nodeclaim: NodeClaimLike | None, message: str
) -> list[Event]:
    return _pair(node, nodeclaim, CONSOLIDATION_APPROVED, message)


def nodepool_approved(nodepool: NodePool, message: str) -> Event:
    """``ConsolidationApproved`` on a NodePool a multi-node move was approved in."""
    ref = _nodepool_ref(nodepool)
    return Event(ref, NORMAL, CONSOLIDATION_APPROVED, message, (_uid(ref),))


def render(notice: Notice) -> list[Event]:
    """The events a decision's notice is published as."""
    if isinstance(notice, Blocked):
        return blocked(notice.node, notice.nodeclaim, notice.message)
    if isinstance(notice, Unconsolidatable):
        return unconsolidatable(notice.node, notice.nodeclaim, notice.message)
    if isinstance(notice, NodePoolBlocked):
        return [nodepool_blocked_for_reason(notice.nodepool, notice.reason)]
    if isinstance(notice, ConsolidationCandidate):
        return consolidation_candidate(
            notice.node, notice.nodeclaim, notice.command, notice.savings
        )
    if isinstance(notice, ConsolidationRejected):
        return consolidation_rejected(
            notice.node, notice.nodeclaim, notice.command, notice.reason, notice.savings
        )
    if isinstance(notice, ConsolidationApproved):
        return consolidation_approved(notice.node, notice.nodeclaim, notice.message)
    if isinstance(notice, NodePoolConsolidationApproved):
        return [nodepool_approved(notice.nodepool, notice.message)]
    if isinstance(notice, PodNotice):
        return [notice.event]
    raise TypeError(f"not a disruption notice: {notice!r}")
