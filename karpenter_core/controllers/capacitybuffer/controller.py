"""``capacitybuffer``: resolve each CapacityBuffer, write its status, keep its virtual pods.

A reconcile (spec apis §5, operator-and-lifecycle §3.8):

1. resolves the buffer's pod template (:mod:`.resolve`) and computes its replica count
   (:mod:`.replicas`);
2. writes ``status``: ``ReadyForProvisioning`` True ``Resolved``, or False
   ``PodTemplateNotFound`` / ``ScalableRefNotFound`` (the referenced object is missing) /
   ``ResolutionFailed`` (nothing to resolve, an unsupported reference, a template that is
   not a valid pod, unparseable limits); ``replicas``; the template reference and generation
   (``podTemplateRef`` buffers only); the provisioning strategy. Only a changed status is
   written, with the resourceVersion as an optimistic lock (a conflict retries in 1 s);
3. on success replaces the buffer's virtual pods in the shared cache and triggers the
   provisioner with the buffer's UID, so spare capacity is planned within a batch window;
   otherwise drops them;
4. requeues every 30 s: a ``scalableRef`` workload's replica count is not watched, so a
   percentage buffer follows its workload within 30 s.

PodTemplate changes map to the buffers in the same namespace that reference the template.
A deleted buffer's virtual pods are dropped at once.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Hashable, Iterable, Mapping
from typing import Any, Protocol

from karpenter_core.apis.autoscaling import (
    ACTIVE_PROVISIONING_STRATEGY,
    CONDITION_READY_FOR_PROVISIONING,
)
from karpenter_core.apis.conditions import ConditionSet
from karpenter_core.apis.objects import ObjectError, Pod, pod_requests
from karpenter_core.apis.quantity import QuantityError
from karpenter_core.apis.resources import parse_resource_list
from karpenter_core.controllers.capacitybuffer.replicas import compute_replicas
from karpenter_core.controllers.capacitybuffer.resolve import Resolution, resolve
from karpenter_core.controllers.capacitybuffer.virtualpods import VirtualPodCache, buffer_key
from karpenter_core.kube.client import Conflict, KubeClient, NotFound
from karpenter_core.runtime.clock import Clock
from karpenter_core.runtime.reconciler import ObjectKey, Result

__all__ = [
    "CAPACITYBUFFERS",
    "CONFLICT_RETRY_SECONDS",
    "NAME",
    "REASON_POD_TEMPLATE_NOT_FOUND",
    "REASON_RESOLUTION_FAILED",
    "REASON_RESOLVED",
    "REASON_SCALABLE_REF_NOT_FOUND",
    "REQUEUE_SECONDS",
    "CapacityBufferController",
    "Trigger",
    "buffers_referencing",
]

log = logging.getLogger("karpenter.capacitybuffer")

NAME = "capacitybuffer"
CAPACITYBUFFERS = "capacitybuffers"
REQUEUE_SECONDS = 30.0
CONFLICT_RETRY_SECONDS = 1.0

REASON_RESOLVED = "Resolved"
REASON_SCALABLE_REF_NOT_FOUND = "ScalableRefNotFound"
REASON_POD_TEMPLATE_NOT_FOUND = "PodTemplateNotFound"
REASON_RESOLUTION_FAILED = "ResolutionFailed"
RESOLVED_MESSAGE = "Pod template resolved successfully"


class Trigger(Protocol):
    """What the controller needs of the provisioner: open (or extend) a batch window."""

    def trigger(self, uid: str) -> None: ...


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def buffers_referencing(kube: KubeClient, namespace: str, template_name: str) -> list[ObjectKey]:
    """Keys of the buffers in ``namespace`` whose ``podTemplateRef`` names the template."""
    keys = []
    for cb in kube.list(CAPACITYBUFFERS, namespace).items:
        ref = _mapping(cb.get("spec")).get("podTemplateRef")
        if isinstance(ref, Mapping) and ref.get("name") == template_name:
            meta = _mapping(cb.get("metadata"))
            keys.append(ObjectKey(str(meta.get("namespace") or namespace), str(meta.get("name"))))
    return keys


class CapacityBufferController:
    """The ``capacitybuffer`` reconciler (see the module docstring)."""

    def __init__(
        self, kube: KubeClient, clock: Clock, cache: VirtualPodCache, trigger: Trigger | None
    ) -> None:
        self.kube = kube
        self.clock = clock
        self.cache = cache
        self.trigger = trigger

    def podtemplate_to_buffers(self, event_type: str, obj: dict[str, Any]) -> Iterable[Hashable]:
        """Watch mapper: a PodTemplate event wakes the buffers that reference it."""
        meta = _mapping(obj.get("metadata"))
        try:
            return buffers_referencing(
                self.kube, str(meta.get("namespace") or "default"), str(meta.get("name") or "")
            )
        except Exception as e:  # a failed list must not stop the watch; 30 s requeue covers it
            log.warning("mapping podtemplate %s to capacitybuffers: %s", meta.get("name"), e)
            return ()

    def reconcile(self, key: ObjectKey) -> Result:
        try:
            stored = self.kube.get(CAPACITYBUFFERS, key.name, key.namespace or "default")
        except NotFound:
            self.cache.remove(f"{key.namespace or 'default'}/{key.name}")
            return Result()
        buffer = copy.deepcopy(stored)
        template = self._resolve_into_status(buffer)
        old_status = _mapping(stored.get("status"))
        new_status = _mapping(buffer.get("status"))
        if dict(old_status) != dict(new_status):
            meta = _mapping(stored.get("metadata"))
            patch = {
                "metadata": {"resourceVersion": meta.get("resourceVersion")},
                "status": _status_patch(old_status, new_status),
            }
            try:
                buffer = self.kube.patch(
                    CAPACITYBUFFERS,
                    key.name,
                    patch,
                    key.namespace or "default",
                    subresource="status",
                )
            except (Conflict, NotFound):
                return Result.after(CONFLICT_RETRY_SECONDS)
        if template is None:
            self.cache.remove(buffer_key(buffer))
            return Result.after(REQUEUE_SECONDS)
        problem = self.cache.update(buffer, template)
        if problem is not None:  # the template was checked above; defensive only
            log.warning("capacitybuffer %s: %s", buffer_key(buffer), problem)
        if self.trigger is not None:
            uid = str(_mapping(buffer.get("metadata")).get("uid") or buffer_key(buffer))
            self.trigger.trigger(uid)
        return Result.after(REQUEUE_SECONDS)

    def _resolve_into_status(self, buffer: dict[str, Any]) -> Mapping[str, Any] | None:
        """Resolve ``buffer`` and write the outcome into its ``status`` (in place); the
        resolved pod template, or None when it could not be resolved."""
        spec = _mapping(buffer.get("spec"))
        status = buffer.get("status")
        if not isinstance(status, dict):
            status = {}
            buffer["status"] = status
        status["provisioningStrategy"] = str(
            spec.get("provisioningStrategy") or ACTIVE_PROVISIONING_STRATEGY
        )

        conditions = ConditionSet(buffer, self.clock, root=None)

        def ready(value: str, reason: str, message: str) -> None:
            conditions.set(CONDITION_READY_FOR_PROVISIONING, value, reason, message)

        resolved = resolve(self.kube, buffer)
        if not isinstance(resolved, Resolution):
            reason = REASON_RESOLUTION_FAILED
            if resolved.not_found:
                reason = (
                    REASON_POD_TEMPLATE_NOT_FOUND
                    if isinstance(spec.get("podTemplateRef"), Mapping)
                    else REASON_SCALABLE_REF_NOT_FOUND
                )
            ready("False", reason, resolved.message)
            return None
        computed = self._replicas(buffer, resolved)
        if isinstance(computed, str):
            ready("False", REASON_RESOLUTION_FAILED, computed)
            return None
        if resolved.uses_pod_template:
            status["podTemplateRef"] = {"name": resolved.pod_template_name}
            status["podTemplateGeneration"] = resolved.pod_template_generation
        else:
            status.pop("podTemplateRef", None)
            status.pop("podTemplateGeneration", None)
        status["replicas"] = computed
        ready("True", REASON_RESOLVED, RESOLVED_MESSAGE)
        return resolved.template

    def _replicas(self, buffer: Mapping[str, Any], resolved: Resolution) -> int | str:
        """The replica count, or why the template or limits cannot be used."""
        meta = _mapping(buffer.get("metadata"))
        spec = _mapping(buffer.get("spec"))
        pod_spec = _mapping(resolved.template.get("spec"))
        try:
            Pod.from_dict(
                {
                    "metadata": {"name": "template", "namespace": meta.get("namespace")},
                    "spec": pod_spec,
                }
            )
            requests = pod_requests(pod_spec)
        except (ObjectError, QuantityError, ValueError, TypeError) as e:
            return f"the pod template is not a valid pod: {e}"
        limits = spec.get("limits")
        try:
            parsed = parse_resource_list(limits) if limits is not None else None
        except QuantityError as e:
            return f"spec.limits: {e}"
        replicas = spec.get("replicas")
        percentage = spec.get("percentage")
        for field, value in (("replicas", replicas), ("percentage", percentage)):
            if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
                return f"spec.{field} must be an integer, got {value!r}"
        return compute_replicas(
            replicas=replicas,
            percentage=percentage,
            scalable_replicas=resolved.scalable_replicas,
            limits=parsed,
            requests=requests,
        )


def _status_patch(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, Any]:
    """A merge patch from ``old`` to ``new`` status: changed keys, and None for dropped
    ones (so ``podTemplateRef`` disappears when a buffer switches to ``scalableRef``)."""
    patch: dict[str, Any] = {k: v for k, v in new.items() if old.get(k) != v}
    for k in old:
        if k not in new:
            patch[k] = None
    return patch
