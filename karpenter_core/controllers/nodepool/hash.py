"""``nodepool.hash``: stamp ``karpenter.sh/nodepool-hash`` (+ ``-version``) on NodePools.

Static drift compares a NodeClaim's hash annotation with its NodePool's. When the hash
*scheme* changes (the version annotation differs from ``v3``), the pool's NodeClaims are
migrated first: each gets the current version and, unless it is already marked Drifted,
the pool's new hash, so a scheme change alone never looks like drift.
"""

from __future__ import annotations

import logging

from karpenter_core.apis.accessors import annotations_of, name_of
from karpenter_core.apis.conditions import condition_of
from karpenter_core.apis.labels import (
    NODEPOOL_HASH_ANNOTATION_KEY,
    NODEPOOL_HASH_VERSION,
    NODEPOOL_HASH_VERSION_ANNOTATION_KEY,
    NODEPOOL_LABEL_KEY,
)
from karpenter_core.apis.v1 import CONDITION_DRIFTED, APIError, NodePool
from karpenter_core.controllers.nodepool.common import managed_nodepool
from karpenter_core.kube.client import NotFound
from karpenter_core.runtime.context import ControllerContext
from karpenter_core.runtime.reconciler import ObjectKey, Result
from karpenter_core.state.cluster import is_managed_nodeclaim

__all__ = ["NAME", "Hash"]

log = logging.getLogger("karpenter.nodepool")

NAME = "nodepool.hash"


class Hash:
    def __init__(self, ctx: ControllerContext) -> None:
        self.ctx = ctx

    def reconcile(self, key: ObjectKey) -> Result:
        stored = managed_nodepool(self.ctx, key.name)
        if stored is None:
            return Result()
        try:
            pool_hash = NodePool.from_dict(stored).hash()
        except APIError as e:
            log.warning("not hashing nodepool %s: %s", key.name, e)
            return Result()
        annotations = annotations_of(stored)
        if annotations.get(NODEPOOL_HASH_VERSION_ANNOTATION_KEY) != NODEPOOL_HASH_VERSION:
            self._migrate_nodeclaims(key.name, pool_hash)
        wanted = {
            NODEPOOL_HASH_ANNOTATION_KEY: pool_hash,
            NODEPOOL_HASH_VERSION_ANNOTATION_KEY: NODEPOOL_HASH_VERSION,
        }
        if any(annotations.get(k) != v for k, v in wanted.items()):
            try:
                self.ctx.kube.patch("nodepools", key.name, {"metadata": {"annotations": wanted}})
            except NotFound:
                return Result()
        return Result()

    def _migrate_nodeclaims(self, pool: str, pool_hash: str) -> None:
        selector = f"{NODEPOOL_LABEL_KEY}={pool}"
        for nc in self.ctx.kube.list("nodeclaims", label_selector=selector).items:
            if not is_managed_nodeclaim(nc, self.ctx.cloud_provider):
                continue
            annotations = annotations_of(nc)
            if annotations.get(NODEPOOL_HASH_VERSION_ANNOTATION_KEY) == NODEPOOL_HASH_VERSION:
                continue
            patch = {NODEPOOL_HASH_VERSION_ANNOTATION_KEY: NODEPOOL_HASH_VERSION}
            if condition_of(nc, CONDITION_DRIFTED) is None:
                patch[NODEPOOL_HASH_ANNOTATION_KEY] = pool_hash
            try:
                self.ctx.kube.patch(
                    "nodeclaims",
                    name_of(nc),
                    {"metadata": {"annotations": patch}},
                )
            except NotFound:
                continue
