"""What a disruption decision has to say besides its commands: blocked reasons and the
other notes upstream publishes as events (spec disruption §12).

The decisions in :mod:`karpenter_core.disruption` publish nothing themselves. They return
these values next to their commands; the disruption controller turns each one into the
Kubernetes events upstream emits (``controllers/disruption/events.py`` holds the reasons,
messages and dedupe keys) and publishes them. A plugin method may return them too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeAlias

from attrs import frozen

from karpenter_core.apis.objects import Node
from karpenter_core.apis.v1 import NodeClaim, NodePool

if TYPE_CHECKING:
    from karpenter_core.runtime.events import Event

__all__ = [
    "Blocked",
    "ConsolidationApproved",
    "ConsolidationCandidate",
    "ConsolidationRejected",
    "EventSink",
    "NodePoolBlocked",
    "NodePoolConsolidationApproved",
    "Notice",
    "PodNotice",
    "Unconsolidatable",
]


@frozen
class Blocked:
    """``DisruptionBlocked`` on the Node and its NodeClaim: why the node is not disrupted
    (not a candidate, or its pods would have nowhere to go)."""

    node: Node | None
    nodeclaim: NodeClaim | None
    message: str


@frozen
class NodePoolBlocked:
    """``DisruptionBlocked`` on a NodePool whose budgets allow no disruption for
    ``reason`` now."""

    nodepool: NodePool
    reason: str


@frozen
class Unconsolidatable:
    """``Unconsolidatable`` on the Node and its NodeClaim: why consolidation leaves it."""

    node: Node | None
    nodeclaim: NodeClaim | None
    message: str


@frozen
class ConsolidationCandidate:
    """``ConsolidationCandidate``: the node is part of a replace decision (``command`` is
    the decision's text, ``savings`` its estimated savings)."""

    node: Node | None
    nodeclaim: NodeClaim | None
    command: str
    savings: float


@frozen
class ConsolidationRejected:
    """``ConsolidationRejected``: a held consolidation command failed validation
    (``reason`` is the validation error's kind)."""

    node: Node | None
    nodeclaim: NodeClaim | None
    command: str
    reason: str
    savings: float


@frozen
class ConsolidationApproved:
    """``ConsolidationApproved`` on a single-node move's Node and NodeClaim (Balanced)."""

    node: Node | None
    nodeclaim: NodeClaim | None
    message: str


@frozen
class NodePoolConsolidationApproved:
    """``ConsolidationApproved`` on a NodePool a multi-node move was approved in."""

    nodepool: NodePool
    message: str


@frozen
class PodNotice:
    """An event the shared pod predicates (:mod:`karpenter_core.utils.pod`) produced while a
    decision asked about a pod (``DoNotDisruptUntil``, ``InvalidDoNotDisruptAnnotation``...),
    as they made it."""

    event: Event


Notice: TypeAlias = (
    Blocked
    | NodePoolBlocked
    | Unconsolidatable
    | ConsolidationCandidate
    | ConsolidationRejected
    | ConsolidationApproved
    | NodePoolConsolidationApproved
    | PodNotice
)
"""Anything a decision returns for the controller to publish."""

NOTICE_TYPES = (
    Blocked,
    NodePoolBlocked,
    Unconsolidatable,
    ConsolidationCandidate,
    ConsolidationRejected,
    ConsolidationApproved,
    NodePoolConsolidationApproved,
    PodNotice,
)
"""The :data:`Notice` classes, for ``isinstance``."""


class EventSink:
    """Collects the events the pod predicates publish (they take anything with
    ``publish``) as :class:`PodNotice` values in ``notices``."""

    def __init__(self, notices: list[Notice]) -> None:
        self.notices = notices

    def publish(self, *events: Event) -> None:
        self.notices.extend(PodNotice(e) for e in events)
