"""Disruption's events, with upstream's reasons, messages and dedupe keys
(``pkg/controllers/disruption/events``; spec disruption §12).

Each constructor returns the events to publish (one for the Node, one for the NodeClaim
where upstream emits both), ready for ``recorder.publish``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

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
    "nodepool_blocked_for_reason",
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


def title(reason: str) -> str:
    """Go's ``cases.Title(language.Und, cases.NoLower)``: first letter of each word
    upper-cased, the rest kept (``drifted`` -> ``Drifted``)."""
    return " ".join(w[:1].upper() + w[1:] for w in reason.split(" "))


def node_ref(node: Any) -> dict[str, str]:
    """An ObjectReference for a parsed :class:`~karpenter_core.apis.objects.Node`."""
    ref = {"apiVersion": "v1", "kind": "Node", "name": str(node.name)}
    if getattr(node, "uid", ""):
        ref["uid"] = str(node.uid)
    return ref


def nodeclaim_ref(nodeclaim: Any) -> dict[str, str]:
    """An ObjectReference for a NodeClaim (API model or dict)."""
    d: Mapping[str, Any] = nodeclaim if isinstance(nodeclaim, Mapping) else nodeclaim.to_dict()
    meta = d.get("metadata") or {}
    ref = {"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim", "name": str(meta.get("name"))}
    if meta.get("uid"):
        ref["uid"] = str(meta["uid"])
    return ref


def _nodepool_ref(nodepool: Any) -> dict[str, str]:
    d: Mapping[str, Any] = nodepool if isinstance(nodepool, Mapping) else nodepool.to_dict()
    meta = d.get("metadata") or {}
    ref = {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "name": str(meta.get("name"))}
    if meta.get("uid"):
        ref["uid"] = str(meta["uid"])
    return ref


def _uid(ref: Mapping[str, str]) -> str:
    return ref.get("uid") or ref.get("name", "")


def _pair(
    node: Any,
    nodeclaim: Any,
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


def blocked(node: Any, nodeclaim: Any, message: str) -> list[Event]:
    """``DisruptionBlocked`` on the Node and NodeClaim: why the node is not a candidate."""
    return _pair(node, nodeclaim, DISRUPTION_BLOCKED, message)


def nodepool_blocked_for_reason(nodepool: Any, reason: str) -> Event:
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


def unconsolidatable(node: Any, nodeclaim: Any, message: str) -> list[Event]:
    """``Unconsolidatable`` (deduplicated for 15 minutes)."""
    return _pair(node, nodeclaim, UNCONSOLIDATABLE, message, timeout=UNCONSOLIDATABLE_DEDUPE)


def launching(nodeclaim: Any, reason: str) -> Event:
    ref = nodeclaim_ref(nodeclaim)
    return Event(
        ref,
        NORMAL,
        DISRUPTION_LAUNCHING,
        f"Launching NodeClaim: {title(reason)}",
        (_uid(ref), reason),
    )


def waiting_on_readiness(nodeclaim: Any) -> Event:
    ref = nodeclaim_ref(nodeclaim)
    return Event(
        ref,
        NORMAL,
        DISRUPTION_WAITING_READINESS,
        "Waiting on readiness to continue disruption",
        (_uid(ref),),
    )


def terminating(node: Any, nodeclaim: Any, reason: str) -> list[Event]:
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


def consolidation_candidate(node: Any, nodeclaim: Any, command: str, savings: float) -> list[Event]:
    message = f"Consolidation candidate: {command} (savings: ${savings:.2f})"
    return _pair(node, nodeclaim, CONSOLIDATION_CANDIDATE, message, (command,))


def consolidation_rejected(
    node: Any, nodeclaim: Any, command: str, reason: str, savings: float
) -> list[Event]:
    message = f"Consolidation rejected: {command}, reason: {reason} (savings: ${savings:.2f})"
    return _pair(node, nodeclaim, CONSOLIDATION_REJECTED, message, (command, reason))


def consolidation_approved(node: Any, nodeclaim: Any, message: str) -> list[Event]:
    return _pair(node, nodeclaim, CONSOLIDATION_APPROVED, message)
