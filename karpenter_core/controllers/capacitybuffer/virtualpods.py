"""Virtual pods: the in-memory pods a CapacityBuffer asks the provisioner to make room for.

They are never written to the API server. The provisioner schedules them with the pending
pods (so capacity is launched for them, or they are found to fit on existing nodes), and
otherwise ignores them: no binding, no events, no nominations, no scheduling decisions, no
pending-pod metrics. They are told apart by the ``karpenter.sh/capacity-buffer-fake-pod``
annotation.

Each buffer that is ``ReadyForProvisioning`` with a positive ``status.replicas`` gets that
many copies of its pod template: named ``capacity-buffer-<buffer>-<i>`` (i from 1), UID
``<buffer uid>-<i>``, the template's labels (so spreads and affinities of other pods see
them as the workload they stand for), the lowest priority, an Unschedulable condition, no
node name, and without PVC or ephemeral volumes (a virtual pod has no claims to bind; its
placement must not wait for storage that will never be provisioned).

The :class:`VirtualPodCache` is filled by the capacitybuffer controller as it resolves
buffers; the first read after a start lists the buffers itself so a restarted operator does
not launch a pass without them.
"""

from __future__ import annotations

import copy
import logging
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from karpenter_core.apis.autoscaling import CONDITION_READY_FOR_PROVISIONING
from karpenter_core.apis.conditions import is_true
from karpenter_core.apis.labels import (
    CAPACITY_BUFFER_FAKE_POD_ANNOTATION_KEY,
    CAPACITY_BUFFER_NAME_ANNOTATION_KEY,
    CAPACITY_BUFFER_NAMESPACE_ANNOTATION_KEY,
)
from karpenter_core.apis.objects import ObjectError, Pod
from karpenter_core.kube.client import ApiError, KubeClient
from karpenter_core.runtime.clock import Clock, format_time

if TYPE_CHECKING:
    from karpenter_core.runtime.context import ControllerContext

__all__ = [
    "FAKE_POD_ANNOTATION_VALUE",
    "VIRTUAL_POD_PRIORITY",
    "VirtualPodCache",
    "buffer_key",
    "buffer_key_of",
    "build_virtual_pods",
    "cache_of",
    "is_ready_for_provisioning",
    "is_virtual_pod",
    "virtual_pod_manifests",
]

log = logging.getLogger("karpenter.capacitybuffer")

FAKE_POD_ANNOTATION_VALUE = "true"
VIRTUAL_POD_PRIORITY = -(2**31)
"""int32's minimum: a virtual pod is worth less than any real one."""


def is_virtual_pod(pod: Pod) -> bool:
    """Whether ``pod`` is a CapacityBuffer's virtual pod rather than a real one."""
    return pod.annotations.get(CAPACITY_BUFFER_FAKE_POD_ANNOTATION_KEY) == FAKE_POD_ANNOTATION_VALUE


def buffer_key_of(pod: Pod) -> str:
    """``namespace/name`` of the buffer a virtual pod stands for ("" for a real pod)."""
    if not is_virtual_pod(pod):
        return ""
    ns = pod.annotations.get(CAPACITY_BUFFER_NAMESPACE_ANNOTATION_KEY, "")
    name = pod.annotations.get(CAPACITY_BUFFER_NAME_ANNOTATION_KEY, "")
    return f"{ns}/{name}" if ns and name else ""


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _status_replicas(buffer: Mapping[str, Any]) -> int:
    replicas = _mapping(buffer.get("status")).get("replicas")
    return replicas if isinstance(replicas, int) and not isinstance(replicas, bool) else 0


def is_ready_for_provisioning(buffer: Mapping[str, Any]) -> bool:
    """``ReadyForProvisioning=True``, a positive ``status.replicas`` and a reference."""
    ready = is_true(buffer, CONDITION_READY_FOR_PROVISIONING)
    spec = _mapping(buffer.get("spec"))
    has_ref = isinstance(spec.get("podTemplateRef"), Mapping) or isinstance(
        spec.get("scalableRef"), Mapping
    )
    return ready and has_ref and _status_replicas(buffer) > 0


def _sanitized_spec(spec: Mapping[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(dict(spec))
    out.pop("nodeName", None)
    volumes = out.get("volumes")
    if isinstance(volumes, list):
        dropped = {
            v.get("name")
            for v in volumes
            if isinstance(v, Mapping) and ("persistentVolumeClaim" in v or "ephemeral" in v)
        }
        if dropped:
            out["volumes"] = [
                v for v in volumes if not (isinstance(v, Mapping) and v.get("name") in dropped)
            ]
            for key in ("containers", "initContainers"):
                for c in out.get(key) or ():
                    if isinstance(c, dict) and isinstance(c.get("volumeMounts"), list):
                        c["volumeMounts"] = [
                            m
                            for m in c["volumeMounts"]
                            if not (isinstance(m, Mapping) and m.get("name") in dropped)
                        ]
    out["priority"] = VIRTUAL_POD_PRIORITY
    return out


def virtual_pod_manifests(
    buffer: Mapping[str, Any], template: Mapping[str, Any], created: str
) -> list[dict[str, Any]]:
    """The virtual pods of ``buffer`` (``status.replicas`` of them) as pod dicts."""
    count = _status_replicas(buffer)
    if count <= 0:
        return []
    meta = _mapping(buffer.get("metadata"))
    name = str(meta.get("name") or "")
    namespace = str(meta.get("namespace") or "default")
    uid = str(meta.get("uid") or f"{namespace}/{name}")
    labels = dict(_mapping(_mapping(template.get("metadata")).get("labels")))
    spec = _sanitized_spec(_mapping(template.get("spec")))
    return [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"capacity-buffer-{name}-{i}",
                "namespace": namespace,
                "uid": f"{uid}-{i}",
                "labels": dict(labels),
                "annotations": {
                    CAPACITY_BUFFER_FAKE_POD_ANNOTATION_KEY: FAKE_POD_ANNOTATION_VALUE,
                    CAPACITY_BUFFER_NAME_ANNOTATION_KEY: name,
                    CAPACITY_BUFFER_NAMESPACE_ANNOTATION_KEY: namespace,
                },
                "creationTimestamp": created,
            },
            "spec": copy.deepcopy(spec),
            "status": {
                "phase": "Pending",
                "conditions": [
                    {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}
                ],
            },
        }
        for i in range(1, count + 1)
    ]


def build_virtual_pods(
    buffer: Mapping[str, Any], template: Mapping[str, Any], created: str
) -> list[Pod] | str:
    """Parsed virtual pods of ``buffer``, or why its template cannot make a pod."""
    out: list[Pod] = []
    for manifest in virtual_pod_manifests(buffer, template, created):
        try:
            out.append(Pod.from_dict(manifest))
        except ObjectError as e:
            return f"its pod template is not a valid pod: {e}"
    return out


class VirtualPodCache:
    """Virtual pods per buffer (``namespace/name``), shared by the capacitybuffer
    controller (writer) and the provisioner (reader)."""

    def __init__(self, kube: KubeClient, clock: Clock) -> None:
        self.kube = kube
        self.clock = clock
        self._lock = threading.Lock()
        self._pods: dict[str, list[Pod]] = {}
        self._warmed = False

    def update(self, buffer: Mapping[str, Any], template: Mapping[str, Any]) -> str | None:
        """Replace ``buffer``'s virtual pods from its (already written) status; a buffer
        that is not ready is removed. Returns a problem with the template, if any."""
        key = buffer_key(buffer)
        if not is_ready_for_provisioning(buffer):
            self.remove(key)
            return None
        pods = build_virtual_pods(buffer, template, format_time(self.clock.now()))
        if isinstance(pods, str):
            self.remove(key)
            return pods
        with self._lock:
            self._pods[key] = pods
        return None

    def remove(self, key: str) -> None:
        with self._lock:
            self._pods.pop(key, None)

    def keys(self) -> list[str]:
        with self._lock:
            return sorted(self._pods)

    def get_all(self) -> list[Pod]:
        """Every virtual pod, buffers in name order; the first call lists the buffers."""
        with self._lock:
            if not self._warmed:
                try:
                    self._pods = self._hydrate()
                except ApiError as e:
                    log.error("listing capacitybuffers for virtual pods: %s", e)
                    return []
                self._warmed = True
            return [p for key in sorted(self._pods) for p in self._pods[key]]

    def _hydrate(self) -> dict[str, list[Pod]]:
        from karpenter_core.controllers.capacitybuffer.resolve import Resolution, resolve

        out: dict[str, list[Pod]] = {}
        created = format_time(self.clock.now())
        for buffer in self.kube.list("capacitybuffers").items:
            if not is_ready_for_provisioning(buffer):
                continue
            resolved = resolve(self.kube, buffer)
            if not isinstance(resolved, Resolution):
                log.debug("skipping capacitybuffer %s: %s", buffer_key(buffer), resolved.message)
                continue
            pods = build_virtual_pods(buffer, resolved.template, created)
            if isinstance(pods, str):
                log.warning("skipping capacitybuffer %s: %s", buffer_key(buffer), pods)
                continue
            out[buffer_key(buffer)] = pods
        return out


def buffer_key(buffer: Mapping[str, Any]) -> str:
    """``namespace/name`` of a CapacityBuffer dict."""
    meta = _mapping(buffer.get("metadata"))
    return f"{meta.get('namespace') or 'default'}/{meta.get('name') or ''}"


def cache_of(ctx: ControllerContext) -> VirtualPodCache:
    """The process's virtual-pod cache (``ctx.virtual_pods``), created on first use, so
    the controller and the provisioner share one whichever registers first."""
    if ctx.virtual_pods is None:
        ctx.virtual_pods = VirtualPodCache(ctx.kube, ctx.clock)
    return ctx.virtual_pods
