"""``nodeclaim.garbagecollection``: reconcile NodeClaims with the provider's instances.

Every 2 minutes (spec: operator-and-lifecycle §5.7, apis-and-cloudprovider §6):

* A *registered*, non-deleting NodeClaim whose instance is no longer in
  ``CloudProvider.list()`` is deleted (``garbage_collected``) unless its Node is still
  Ready — the instance vanished underneath it. Unregistered ones are left to liveness.
* An instance that no NodeClaim accounts for is terminated, so nothing leaks: a NodeClaim
  accounts for an instance when it carries its providerID, or — for a launch whose
  providerID is not written yet — when the instance carries that NodeClaim's identity
  (see ``instance_matches``). An orphan is only terminated when it was already an orphan
  on the previous pass, so a launch racing with this pass is never mistaken for a leak.
  (Upstream leaves this to each provider's own garbage collection; doing it here once
  protects every provider.)
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from karpenter_core import metrics
from karpenter_core.apis.conditions import is_true
from karpenter_core.apis.v1 import CONDITION_REGISTERED, NodeClaim
from karpenter_core.cloudprovider.errors import is_nodeclaim_not_found
from karpenter_core.controllers.nodeclaim.launch import disrupted_labels
from karpenter_core.controllers.nodeclaim.utils import (
    DuplicateNodeError,
    NodeNotFoundError,
    deletion_timestamp,
    instance_matches,
    is_managed,
    node_for_nodeclaim,
    node_ready_status,
    provider_id,
)
from karpenter_core.kube.client import NotFound, shared_list
from karpenter_core.runtime.context import ControllerContext
from karpenter_core.runtime.reconciler import Result

__all__ = ["INTERVAL", "NAME", "GarbageCollection", "reschedulable_pods"]

log = logging.getLogger("karpenter.nodeclaim.garbagecollection")

NAME = "nodeclaim.garbagecollection"
INTERVAL = 120.0
NODECLAIMS = "nodeclaims"
PODS = "pods"
MIRROR_POD_ANNOTATION = "kubernetes.io/config.mirror"


def _is_reschedulable(pod: Mapping[str, Any]) -> bool:
    meta = pod.get("metadata") or {}
    if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
        return False
    if meta.get("deletionTimestamp"):
        return False
    if MIRROR_POD_ANNOTATION in (meta.get("annotations") or {}):
        return False
    return not any(o.get("kind") == "DaemonSet" for o in meta.get("ownerReferences") or ())


def reschedulable_pods(ctx: ControllerContext, node_name: str) -> list[dict[str, Any]]:
    """Pods on the node that would need a new home: not terminal, not terminating, not
    DaemonSet-owned, not mirror pods."""
    if not node_name:
        return []
    pods = ctx.kube.list(PODS, field_selector=f"spec.nodeName={node_name}")
    return [p for p in pods if _is_reschedulable(p)]


def record_disruption(ctx: ControllerContext, nodeclaim: dict[str, Any], reason: str) -> None:
    """Count the NodeClaim as disrupted for ``reason``, and the pods on its Node that now
    need a new home. Listing the pods is best effort: a failure loses only that count."""
    lbl = disrupted_labels(nodeclaim, reason)
    metrics.NODECLAIMS_DISRUPTED_TOTAL.labels(**lbl).inc()
    node_name = str((nodeclaim.get("status") or {}).get("nodeName") or "")
    try:
        pods = reschedulable_pods(ctx, node_name)
    except Exception as err:
        log.debug("listing reschedulable pods for disruption metric: %s", err)
        pods = []
    metrics.PODS_DISRUPTION_INITIATED_TOTAL.labels(**lbl).inc(len(pods))


class GarbageCollection:
    """The singleton behind ``nodeclaim.garbagecollection``."""

    def __init__(self, ctx: ControllerContext) -> None:
        self.ctx = ctx
        self._orphans: set[str] = set()

    def reconcile(self) -> Result:
        # only read (a NodeClaim to collect is deleted by name): uncopied where the client
        # can share its objects, as every NodeClaim is read every two minutes
        read = shared_list(self.ctx.kube)
        every = list(read(NODECLAIMS))
        nodeclaims = [nc for nc in every if is_managed(nc, self.ctx.cloud_provider)]
        instances = [i for i in self.ctx.cloud_provider.list() if not i.metadata.deletion_timestamp]
        live = {i.provider_id for i in instances if i.provider_id}
        errors: list[BaseException] = []
        for nc in nodeclaims:
            if deletion_timestamp(nc) or provider_id(nc) in live:
                continue
            if not is_true(nc, CONDITION_REGISTERED):
                continue
            try:
                self._collect(nc)
            except Exception as err:
                errors.append(err)
        try:
            self._terminate_orphans(every, instances)
        except Exception as err:
            errors.append(err)
        if errors:
            raise errors[0]
        return Result(requeue_after=INTERVAL)

    def _collect(self, nodeclaim: dict[str, Any]) -> None:
        try:
            node: dict[str, Any] | None = node_for_nodeclaim(self.ctx.kube, nodeclaim)
        except (NodeNotFoundError, DuplicateNodeError):
            node = None
        if node is not None and node_ready_status(node) == "True":
            return
        meta = nodeclaim.get("metadata") or {}
        try:
            self.ctx.kube.delete(NODECLAIMS, str(meta.get("name")))
        except NotFound:
            return
        node_name = str((nodeclaim.get("status") or {}).get("nodeName") or "")
        log.info(
            "garbage collecting nodeclaim %s (node %s, provider-id %s) with no cloudprovider "
            "representation",
            meta.get("name"),
            node_name,
            provider_id(nodeclaim),
        )
        record_disruption(self.ctx, nodeclaim, metrics.REASON_GARBAGE_COLLECTED)

    def _terminate_orphans(
        self, nodeclaims: list[dict[str, Any]], instances: list[NodeClaim]
    ) -> None:
        claimed = {provider_id(nc) for nc in nodeclaims if provider_id(nc)}
        pending = [nc for nc in nodeclaims if not provider_id(nc)]
        orphans: dict[str, NodeClaim] = {}
        for inst in instances:
            pid = inst.provider_id
            if not pid or pid in claimed:
                continue
            if any(instance_matches(inst, nc) for nc in pending):
                continue
            orphans[pid] = inst
        errors: list[BaseException] = []
        for pid, inst in sorted(orphans.items()):
            if pid not in self._orphans:
                continue
            log.info("terminating instance %s: no NodeClaim accounts for it", pid)
            try:
                self.ctx.cloud_provider.delete(inst)
            except Exception as err:
                if not is_nodeclaim_not_found(err):
                    errors.append(err)
        self._orphans = set(orphans)
        if errors:
            raise errors[0]
