"""``nodeclaim.hydration``: label every NodeClaim with the NodeClass it uses.

Spec: operator-and-lifecycle §5.7. NodeClaims created before the NodeClass label existed
lack ``<nodeclass group>/<kind in lower case>=<nodeClassRef.name>``; this adds it (the
``node.hydration`` controller then copies it to the Node). Drift and the NodeClass
watches select NodeClaims by that label.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any

from karpenter_core.apis.accessors import labels_of
from karpenter_core.controllers.nodeclaim.utils import managed_nodeclaim
from karpenter_core.kube.client import NotFound
from karpenter_core.runtime.context import ControllerContext
from karpenter_core.runtime.reconciler import ObjectKey, Result

__all__ = ["NAME", "Hydration", "nodeclass_label"]

NAME = "nodeclaim.hydration"
NODECLAIMS = "nodeclaims"


def nodeclass_label(nodeclaim: Mapping[str, Any]) -> tuple[str, str] | None:
    """The (key, value) NodeClass label the NodeClaim should carry, or None without a ref."""
    ref = (nodeclaim.get("spec") or {}).get("nodeClassRef")
    if not isinstance(ref, Mapping) or not ref.get("kind"):
        return None
    return f"{ref.get('group') or ''}/{str(ref.get('kind')).lower()}", str(ref.get("name") or "")


class Hydration:
    """The keyed reconciler behind ``nodeclaim.hydration``."""

    def __init__(self, ctx: ControllerContext) -> None:
        self.ctx = ctx

    def reconcile(self, key: ObjectKey) -> Result:
        nodeclaim = managed_nodeclaim(self.ctx.kube, self.ctx.cloud_provider, key.name)
        if nodeclaim is None:
            return Result()
        want = nodeclass_label(nodeclaim)
        if want is None or labels_of(nodeclaim).get(want[0]) == want[1]:
            return Result()
        with contextlib.suppress(NotFound):
            self.ctx.kube.patch(NODECLAIMS, key.name, {"metadata": {"labels": {want[0]: want[1]}}})
        return Result()
