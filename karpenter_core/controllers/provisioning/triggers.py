"""What opens a batch window: pods kube-scheduler could not place, and nodes being drained.

``provisioner.trigger.pod``: a provisionable pod triggers the batcher with its UID, is
acknowledged in cluster state (first-seen time, for the pod metrics), and is looked at again
every 10 s while it stays provisionable: a pass may not place it (a NodeClaim still coming
up, new pods arriving meanwhile), and each re-trigger opens a fresh window.

``provisioner.trigger.node``: a node tainted ``karpenter.sh/disrupted:NoSchedule`` triggers
with its UID every 10 s, so replacements for its pods are provisioned while it drains (the
deletion timestamp alone is not checked: termination adds the taint).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from typing import Any

from karpenter_core.apis.conditions import condition_of
from karpenter_core.apis.labels import DISRUPTED_TAINT_KEY
from karpenter_core.apis.objects import ObjectError, Pod
from karpenter_core.apis.parsedpods import parsed_pod
from karpenter_core.controllers.provisioning.provisioner import Provisioner
from karpenter_core.kube.client import NotFound, shared_get
from karpenter_core.runtime.context import ControllerContext
from karpenter_core.runtime.reconciler import ObjectKey, Result

__all__ = [
    "NODE_TRIGGER",
    "POD_TRIGGER",
    "RETRIGGER_SECONDS",
    "NodeTrigger",
    "PodTrigger",
    "has_disrupted_taint",
    "linear_scale_reconciles",
    "may_be_provisionable",
]

log = logging.getLogger("karpenter.provisioner")

POD_TRIGGER = "provisioner.trigger.pod"
NODE_TRIGGER = "provisioner.trigger.node"
RETRIGGER_SECONDS = 10.0


def linear_scale_reconciles(cpu_requests_milli: int, minimum: int, maximum: int) -> int:
    """Upstream ``LinearScaleReconciles``: workers grow linearly with CPU cores from
    ``minimum`` at 1 core to ``maximum`` at 60."""
    cores = max(1, math.ceil(max(cpu_requests_milli, 1) / 1000))
    value = int((maximum - minimum) / 59 * (cores - 1)) + minimum
    return max(minimum, min(maximum, value))


def has_disrupted_taint(node: Mapping[str, Any]) -> bool:
    spec = node.get("spec")
    taints = spec.get("taints") if isinstance(spec, Mapping) else None
    return any(
        isinstance(t, Mapping)
        and t.get("key") == DISRUPTED_TAINT_KEY
        and t.get("effect") == "NoSchedule"
        for t in taints or ()
    )


def may_be_provisionable(event_type: str, obj: Mapping[str, Any]) -> bool:
    """Watch predicate for the pod trigger: only events whose pod is unbound and carries
    kube-scheduler's Unschedulable verdict can make it provisionable. Every other event
    (a pod created before the scheduler looked, a bound pod's status updates, deletions)
    would only cost the reconcile an API read under the client rate limit; a burst of
    pods queued thousands of such reads ahead of the ones that matter."""
    if event_type == "DELETED":
        return False
    spec = obj.get("spec")
    if isinstance(spec, Mapping) and spec.get("nodeName"):
        return False
    scheduled = condition_of(obj, "PodScheduled")
    return scheduled is not None and scheduled.get("reason") == "Unschedulable"


class PodTrigger:
    def __init__(self, ctx: ControllerContext, provisioner: Provisioner) -> None:
        self.ctx = ctx
        self.provisioner = provisioner

    def reconcile(self, key: ObjectKey) -> Result:
        # Fast path: cluster state's parsed copy says the pod still waits. A stale "yes"
        # only opens a batch window (the provisioner reads pods afresh); a "no" or a
        # miss is checked against the API, so a trigger is never lost to cache lag.
        cached = self.provisioner.cluster.pod(f"{key.namespace or 'default'}/{key.name}")
        if cached is not None and cached.is_provisionable():
            return self._provisionable(cached)
        get_pod = shared_get(self.ctx.kube)  # parsed, not changed
        try:
            obj = get_pod("pods", key.name, key.namespace or "default")
        except NotFound:
            return Result()
        try:
            pod = parsed_pod(obj)
        except ObjectError as e:
            log.debug("ignoring pod %s: %s", key, e)
            return Result()
        if not pod.is_provisionable():
            return Result()
        return self._provisionable(pod)

    def _provisionable(self, pod: Pod) -> Result:
        self.provisioner.trigger(pod.uid)
        self.provisioner.cluster.ack_pods([pod])
        return Result.after(RETRIGGER_SECONDS)


class NodeTrigger:
    def __init__(self, ctx: ControllerContext, provisioner: Provisioner) -> None:
        self.ctx = ctx
        self.provisioner = provisioner

    def reconcile(self, key: ObjectKey) -> Result:
        try:
            node = self.ctx.kube.get("nodes", key.name)
        except NotFound:
            return Result()
        if not has_disrupted_taint(node):
            return Result()
        meta = node.get("metadata") or {}
        self.provisioner.trigger(str(meta.get("uid") or f"node/{key.name}"))
        return Result.after(RETRIGGER_SECONDS)
