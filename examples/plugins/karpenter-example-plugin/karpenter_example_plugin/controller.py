"""The ``example.recycle-schedule`` controller: tell people when a node will be recycled.

For every NodePool with ``plugin.example.com/max-node-age``, each of its nodes gets the
annotation ``plugin.example.com/recycle-after`` (its NodeClaim's creation time plus the
maximum age, RFC 3339) and a ``RecycleScheduled`` event, so ``kubectl describe node``
says when the ``max-node-age`` disruption method will take it. The annotation follows
the NodePool: changing or removing the maximum age rewrites or removes it. A maximum age
this plugin cannot read is a ``InvalidRecyclePolicy`` warning event on the NodePool.

It is keyed by NodePool: NodePool events enqueue the pool itself, NodeClaim events the
pool named by the NodeClaim's ``karpenter.sh/nodepool`` label (a NodeClaim's node name
arrives with a status update). The work queue folds a burst of events into one
reconcile per pool.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from karpenter_core.plugin_api import (
    NotFound,
    ObjectKey,
    Result,
    Watch,
    format_time,
    labels,
)
from karpenter_example_plugin.policy import (
    MAX_NODE_AGE_ANNOTATION,
    RECYCLE_AFTER_ANNOTATION,
    PolicyError,
    max_node_age,
)

if TYPE_CHECKING:
    from karpenter_core.plugin_api import ControllerContext

__all__ = ["NAME", "WATCHES", "RecycleSchedule"]

NAME = "example.recycle-schedule"
SCHEDULED = "RecycleScheduled"
INVALID = "InvalidRecyclePolicy"


def _pool_of_nodeclaim(event_type: str, nodeclaim: dict[str, Any]) -> Iterable[ObjectKey]:
    pool = ((nodeclaim.get("metadata") or {}).get("labels") or {}).get(labels.NODEPOOL_LABEL_KEY)
    return (ObjectKey("", pool),) if pool else ()


WATCHES = (Watch("nodepools"), Watch("nodeclaims", mapper=_pool_of_nodeclaim))


def _annotations(obj: Mapping[str, Any]) -> Mapping[str, str]:
    return (obj.get("metadata") or {}).get("annotations") or {}


class RecycleSchedule:
    """A keyed :class:`karpenter_core.plugin_api.Reconciler` (keys: NodePools)."""

    def __init__(self, context: ControllerContext) -> None:
        self.kube = context.kube
        self.recorder = context.recorder

    def reconcile(self, key: ObjectKey) -> Result:
        try:
            nodepool = self.kube.get("nodepools", key.name)
        except NotFound:
            return Result()  # its NodeClaims go with it
        try:
            age = max_node_age(_annotations(nodepool))
        except PolicyError as e:
            self.recorder.warning(nodepool, INVALID, str(e))
            age = None
        selector = f"{labels.NODEPOOL_LABEL_KEY}={key.name}"
        for nodeclaim in self.kube.list("nodeclaims", label_selector=selector).items:
            node_name = (nodeclaim.get("status") or {}).get("nodeName")
            if node_name:
                self._annotate(node_name, _due(nodeclaim, age), key.name)
        return Result()

    def _annotate(self, node_name: str, due: str | None, pool: str) -> None:
        try:
            node = self.kube.get("nodes", node_name)
        except NotFound:
            return
        if _annotations(node).get(RECYCLE_AFTER_ANNOTATION) == due:
            return
        # a JSON merge patch: None removes the annotation
        patch = {"metadata": {"annotations": {RECYCLE_AFTER_ANNOTATION: due}}}
        node = self.kube.patch("nodes", node_name, patch)
        if due is not None:
            message = (
                f"Node will be recycled after {due} ({MAX_NODE_AGE_ANNOTATION} of NodePool {pool})"
            )
            self.recorder.normal(node, SCHEDULED, message)


def _due(nodeclaim: Mapping[str, Any], age: timedelta | None) -> str | None:
    created = (nodeclaim.get("metadata") or {}).get("creationTimestamp")
    if age is None or not created:
        return None
    return format_time(datetime.fromisoformat(str(created)) + age)
