"""``node.hydration``: copy the NodeClass label from a NodeClaim to its Node.

Nodes launched before the NodeClass label existed lack it; once the NodeClaim has it
(``nodeclaim.hydration``), the Node of that NodeClaim — when exactly one managed
NodeClaim has the Node's providerID — gets ``<group>/<kind in lower case>=<name>``.
"""

from __future__ import annotations

import contextlib
from typing import Any

from karpenter_core.apis.accessors import labels_of
from karpenter_core.controllers.nodeclaim.hydration import nodeclass_label
from karpenter_core.controllers.nodeclaim.utils import (
    NodeIndex,
    nodeclaim_of_node,
    provider_id,
)
from karpenter_core.kube.client import NotFound
from karpenter_core.runtime.context import ControllerContext
from karpenter_core.runtime.reconciler import ObjectKey, Result

__all__ = ["NAME", "NodeHydration"]

NAME = "node.hydration"
NODES = "nodes"


class NodeHydration:
    """The keyed (by Node name) reconciler behind ``node.hydration``."""

    def __init__(self, ctx: ControllerContext) -> None:
        self.ctx = ctx
        self.index = NodeIndex()

    def nodeclaim_mapper(self, event_type: str, obj: dict[str, Any]) -> list[ObjectKey]:
        """NodeClaim events: index them, and enqueue the Nodes with their providerID."""
        self.index.observe(event_type, obj)
        return [ObjectKey("", n) for n in self.index.node_names_for(provider_id(obj))]

    def node_mapper(self, event_type: str, obj: dict[str, Any]) -> list[ObjectKey]:
        self.index.observe_node(event_type, obj)
        return [ObjectKey("", str((obj.get("metadata") or {}).get("name") or ""))]

    def reconcile(self, key: ObjectKey) -> Result:
        pair = nodeclaim_of_node(self.ctx.kube, self.ctx.cloud_provider, self.index, key.name)
        if pair is None:
            return Result()
        node, nodeclaim = pair
        want = nodeclass_label(nodeclaim)
        if want is None or labels_of(node).get(want[0]) == want[1]:
            return Result()
        with contextlib.suppress(NotFound):
            self.ctx.kube.patch(NODES, key.name, {"metadata": {"labels": {want[0]: want[1]}}})
        return Result()
