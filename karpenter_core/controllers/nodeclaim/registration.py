"""Registration: adopt the Node that joined for a launched NodeClaim.

Spec: apis-and-cloudprovider §3.2, operator-and-lifecycle §5.3. Once a Node with the
NodeClaim's providerID exists, the Node gets the termination finalizer and an owner
reference to the NodeClaim; the NodeClaim's taints and startup taints are merged in
(unless the Node is labelled ``karpenter.sh/do-not-sync-taints=true``, meaning the
provider manages taints itself), and its labels and annotations are copied over the
Node's. When every registration hook agrees, the ``karpenter.sh/unregistered`` taint is
removed and ``karpenter.sh/registered=true`` set — that is the signal that syncing is
over — and the NodeClaim becomes ``Registered=True`` with ``status.nodeName``.

A Node that joined without the unregistered taint (and is not yet labelled registered)
could have been scheduled to before its labels and taints were synced, so that is
reported (``UnregisteredTaintMissing``) but registration still proceeds.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Sequence
from typing import Any

from karpenter_core import metrics
from karpenter_core.apis import labels as wk
from karpenter_core.apis.accessors import labels_of
from karpenter_core.apis.conditions import ConditionSet
from karpenter_core.apis.copying import deep_copy
from karpenter_core.apis.v1 import (
    API_VERSION,
    CONDITION_NODE_REGISTRATION_HEALTHY,
    CONDITION_REGISTERED,
    NODEPOOL_READY_DEPENDENTS,
    NodeClaim,
)
from karpenter_core.cloudprovider.protocol import NodeLifecycleHook
from karpenter_core.controllers.nodeclaim.nodepoolhealth import NodePoolHealth, Status
from karpenter_core.controllers.nodeclaim.utils import (
    DuplicateNodeError,
    NodeIndex,
    NodeNotFoundError,
    merge_patch,
    node_for_nodeclaim,
    status_patch,
)
from karpenter_core.kube.client import Conflict, NotFound
from karpenter_core.runtime.context import ControllerContext
from karpenter_core.runtime.reconciler import Result

__all__ = [
    "Registration",
    "merge_taints",
    "sync_node",
]

log = logging.getLogger("karpenter.nodeclaim.lifecycle")

EVENT_UNREGISTERED_TAINT_MISSING = "UnregisteredTaintMissing"
NODES = "nodes"
NODEPOOLS = "nodepools"


def _taint_matches(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return a.get("key") == b.get("key") and a.get("effect") == b.get("effect")


def merge_taints(
    base: Sequence[dict[str, Any]], extra: Sequence[dict[str, Any]]
) -> list[dict[str, Any]]:
    """``base`` plus every taint of ``extra`` whose key and effect are not already there."""
    out = [dict(t) for t in base]
    for taint in extra:
        if not any(_taint_matches(taint, t) for t in out):
            out.append(dict(taint))
    return out


def _is_unregistered_taint(taint: dict[str, Any]) -> bool:
    return taint.get("key") == wk.UNREGISTERED_TAINT_KEY and taint.get("effect") == "NoExecute"


def sync_node(nodeclaim: dict[str, Any], node: dict[str, Any]) -> None:
    """Sync finalizer, owner reference, taints, annotations and labels onto ``node`` (in place)."""
    meta = node.setdefault("metadata", {})
    finalizers = list(meta.get("finalizers") or [])
    if wk.TERMINATION_FINALIZER not in finalizers:
        finalizers.append(wk.TERMINATION_FINALIZER)
        meta["finalizers"] = finalizers
    nc_meta = nodeclaim.get("metadata") or {}
    owners = list(meta.get("ownerReferences") or [])
    if not any(
        o.get("apiVersion") == API_VERSION
        and o.get("kind") == "NodeClaim"
        and o.get("uid") == nc_meta.get("uid")
        for o in owners
    ):
        owners.append(
            {
                "apiVersion": API_VERSION,
                "kind": "NodeClaim",
                "name": nc_meta.get("name"),
                "uid": nc_meta.get("uid"),
                "blockOwnerDeletion": True,
            }
        )
        meta["ownerReferences"] = owners
    if (meta.get("labels") or {}).get(wk.NODE_DO_NOT_SYNC_TAINTS_LABEL_KEY) != "true":
        spec = node.setdefault("spec", {})
        nc_spec = nodeclaim.get("spec") or {}
        taints = merge_taints(spec.get("taints") or [], nc_spec.get("taints") or [])
        taints = merge_taints(taints, nc_spec.get("startupTaints") or [])
        if taints:
            spec["taints"] = taints
    if nc_meta.get("annotations"):
        meta["annotations"] = {**(meta.get("annotations") or {}), **nc_meta["annotations"]}
    if nc_meta.get("labels"):
        meta["labels"] = {**(meta.get("labels") or {}), **nc_meta["labels"]}


class Registration:
    """The registration step of ``nodeclaim.lifecycle``."""

    def __init__(
        self,
        ctx: ControllerContext,
        health: NodePoolHealth,
        hooks: Sequence[NodeLifecycleHook] = (),
        index: NodeIndex | None = None,
    ) -> None:
        self.ctx = ctx
        self.health = health
        self.hooks = tuple(hooks)
        self.index = index

    def reconcile(self, nodeclaim: dict[str, Any], conds: ConditionSet) -> Result:
        if not conds.is_unknown(CONDITION_REGISTERED):
            conds.refresh(CONDITION_REGISTERED)
            return Result()
        try:
            node = node_for_nodeclaim(self.ctx.kube, nodeclaim, self.index)
        except NodeNotFoundError:
            conds.set_unknown_with_reason(
                CONDITION_REGISTERED, "NodeNotFound", "Node not registered with cluster"
            )
            return Result()
        except DuplicateNodeError:
            conds.set_false(
                CONDITION_REGISTERED,
                "MultipleNodesFound",
                "Invariant violated, matched multiple nodes",
            )
            return Result()
        node_labels = labels_of(node)
        taints = (node.get("spec") or {}).get("taints") or []
        if wk.NODE_REGISTERED_LABEL_KEY not in node_labels and not any(
            _is_unregistered_taint(t) for t in taints
        ):
            log.error(
                "node claim registration error: node %s is missing the %s taint, which prevents "
                "registration-related race conditions on Karpenter-managed nodes",
                (node.get("metadata") or {}).get("name"),
                wk.UNREGISTERED_TAINT_KEY,
            )
            self.ctx.recorder.warning(
                nodeclaim,
                EVENT_UNREGISTERED_TAINT_MISSING,
                f"Missing {wk.UNREGISTERED_TAINT_KEY} taint which prevents registration related "
                "race conditions on Karpenter-managed nodes",
                str((nodeclaim.get("metadata") or {}).get("uid") or ""),
            )
        stored = deep_copy(node)
        sync_node(nodeclaim, node)
        hooks_result, hook_error = self._check_hooks(nodeclaim, conds)
        ready = hook_error is None and hooks_result == Result()
        if ready:
            sync_node(nodeclaim, node)
            spec = node.setdefault("spec", {})
            spec["taints"] = [t for t in spec.get("taints") or [] if not _is_unregistered_taint(t)]
            if not spec["taints"]:
                del spec["taints"]
            node["metadata"].setdefault("labels", {})[wk.NODE_REGISTERED_LABEL_KEY] = "true"
        if node != stored:
            patch = merge_patch(stored, node)
            patch.setdefault("metadata", {})["resourceVersion"] = (
                stored.get("metadata") or {}
            ).get("resourceVersion")
            try:
                self.ctx.kube.patch(NODES, str(stored["metadata"]["name"]), patch)
            except Conflict:
                return Result(requeue=True)
        if not ready:
            if hook_error is not None:
                raise hook_error
            return hooks_result
        node_name = str(node["metadata"].get("name") or "")
        log.info(
            "registered nodeclaim %s (node %s)",
            (nodeclaim.get("metadata") or {}).get("name"),
            node_name,
        )
        conds.set_true(CONDITION_REGISTERED)
        nodeclaim.setdefault("status", {})["nodeName"] = node_name
        nc_labels = labels_of(nodeclaim)
        metrics.NODES_CREATED_TOTAL.labels(
            **{
                metrics.LABEL_NODEPOOL: nc_labels.get(wk.NODEPOOL_LABEL_KEY, ""),
                metrics.LABEL_ZONE: nc_labels.get(wk.LABEL_TOPOLOGY_ZONE, ""),
            }
        ).inc()
        try:
            record_registration(self.ctx, self.health, nodeclaim, success=True)
        except Conflict:
            return Result(requeue=True)
        return Result()

    def _check_hooks(
        self, nodeclaim: dict[str, Any], conds: ConditionSet
    ) -> tuple[Result, Exception | None]:
        if not self.hooks:
            return Result(), None
        model = NodeClaim.from_dict(nodeclaim)
        pending: list[str] = []
        errors: list[str] = []
        requeue = False
        requeue_after = 0.0
        for hook in self.hooks:
            try:
                res = hook.registered(model)
            except Exception as err:
                pending.append(hook.name)
                errors.append(f'registration hook "{hook.name}" failed, {err}')
                continue
            if res.is_done:
                continue
            pending.append(hook.name)
            after = res.requeue_after.total_seconds() if res.requeue_after is not None else 0.0
            if after > 0 and (requeue_after == 0 or after < requeue_after):
                requeue_after = after
            requeue = requeue or res.requeue
        if not pending:
            return Result(), None
        log.debug("awaiting registration hooks %s", pending)
        conds.set_unknown_with_reason(
            CONDITION_REGISTERED, "RegistrationHookPending", ", ".join(pending)
        )
        failure = RuntimeError("; ".join(errors)) if errors else None
        return Result(requeue=requeue, requeue_after=requeue_after), failure


def record_registration(
    ctx: ControllerContext, health: NodePoolHealth, nodeclaim: dict[str, Any], *, success: bool
) -> None:
    """Record a registration outcome for the NodeClaim's NodePool and update its
    ``NodeRegistrationHealthy`` condition when the verdict changes.

    Only NodeClaims owned by that very NodePool (owner reference UID) count: a NodePool
    deleted and re-created under the same name starts with a clean record.
    """
    pool_name = labels_of(nodeclaim).get(wk.NODEPOOL_LABEL_KEY, "")
    if not pool_name:
        return
    try:
        nodepool = ctx.kube.get(NODEPOOLS, pool_name)
    except NotFound:
        return  # a NodePool that is gone has no health to record
    pool_meta = nodepool.get("metadata") or {}
    uid = str(pool_meta.get("uid") or "")
    owners = (nodeclaim.get("metadata") or {}).get("ownerReferences") or []
    if not any(o.get("kind") == "NodePool" and o.get("uid") == uid for o in owners):
        return
    stored = deep_copy(nodepool)
    conds = ConditionSet(nodepool, ctx.clock, dependents=NODEPOOL_READY_DEPENDENTS)
    verdict = health.dry_run(uid, success)
    changed = False
    if success:
        if verdict is Status.HEALTHY:
            changed = conds.set_true(CONDITION_NODE_REGISTRATION_HEALTHY)
    elif verdict is Status.UNHEALTHY and not conds.is_false(CONDITION_NODE_REGISTRATION_HEALTHY):
        launched = ConditionSet(deep_copy(nodeclaim), ctx.clock).get("Launched") or {}
        if launched.get("status") == "True":
            changed = conds.set_false(
                CONDITION_NODE_REGISTRATION_HEALTHY, "RegistrationFailed", "Failed to register node"
            )
        else:
            changed = conds.set_false(
                CONDITION_NODE_REGISTRATION_HEALTHY,
                str(launched.get("reason") or ""),
                str(launched.get("message") or ""),
            )
    if changed:
        with contextlib.suppress(NotFound):
            ctx.kube.patch(
                NODEPOOLS, pool_name, status_patch(stored, nodepool), subresource="status"
            )
    health.update(uid, success)
