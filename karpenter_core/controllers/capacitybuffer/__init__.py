"""CapacityBuffer support (feature gate ``CapacityBuffer``, default off): keep spare
capacity warm for pods that do not exist yet.

``register(manager, ctx)`` is called by the operator's registry only when the gate is on.
It adds the ``capacitybuffer`` controller (10 workers; CapacityBuffer and PodTemplate
watches) and, unless cluster-state observability is off, a status-condition metrics
controller for CapacityBuffers (``operator_status_condition_*``, as for NodeClaims).

The controller resolves each buffer into virtual pods (:mod:`.virtualpods`) held in a cache
shared through ``ctx.extras``; the provisioner, with the gate on, schedules them together
with the pending pods and afterwards reports on each buffer (:mod:`.provisioning`). The
emptiness method of disruption keeps nodes that hold buffer pods.
"""

from __future__ import annotations

from karpenter_core.controllers.capacitybuffer.controller import (
    CAPACITYBUFFERS,
    NAME,
    REASON_POD_TEMPLATE_NOT_FOUND,
    REASON_RESOLUTION_FAILED,
    REASON_RESOLVED,
    REASON_SCALABLE_REF_NOT_FOUND,
    REQUEUE_SECONDS,
    CapacityBufferController,
)
from karpenter_core.controllers.capacitybuffer.provisioning import (
    REASON_BUFFER_EMPTY,
    REASON_FITS_EXISTING_CAPACITY,
    REASON_NOT_READY_FOR_PROVISIONING,
    REASON_REQUIRES_NEW_CAPACITY,
    after_schedule,
)
from karpenter_core.controllers.capacitybuffer.replicas import compute_replicas
from karpenter_core.controllers.capacitybuffer.resolve import PODTEMPLATES
from karpenter_core.controllers.capacitybuffer.virtualpods import (
    VirtualPodCache,
    cache_of,
    is_virtual_pod,
)
from karpenter_core.runtime.context import ControllerContext
from karpenter_core.runtime.manager import Manager
from karpenter_core.runtime.reconciler import Watch

__all__ = [
    "CAPACITYBUFFERS",
    "NAME",
    "PODTEMPLATES",
    "REASON_BUFFER_EMPTY",
    "REASON_FITS_EXISTING_CAPACITY",
    "REASON_NOT_READY_FOR_PROVISIONING",
    "REASON_POD_TEMPLATE_NOT_FOUND",
    "REASON_REQUIRES_NEW_CAPACITY",
    "REASON_RESOLUTION_FAILED",
    "REASON_RESOLVED",
    "REASON_SCALABLE_REF_NOT_FOUND",
    "REQUEUE_SECONDS",
    "STATUS_CONTROLLER",
    "CapacityBufferController",
    "VirtualPodCache",
    "after_schedule",
    "cache_of",
    "compute_replicas",
    "is_virtual_pod",
    "register",
]

STATUS_CONTROLLER = "operatorpkg.capacitybuffer.status"


def register(manager: Manager, ctx: ControllerContext) -> None:
    """Add ``capacitybuffer`` (and its status-condition metrics controller)."""
    from karpenter_core.controllers.nodeoverlay.controller import GenerationChanged
    from karpenter_core.controllers.provisioning import provisioner_of

    controller = CapacityBufferController(ctx.kube, ctx.clock, cache_of(ctx), provisioner_of(ctx))
    manager.add_controller(
        NAME,
        controller,
        watches=[
            # The controller's own status writes do not move the generation.
            Watch(CAPACITYBUFFERS, predicate=GenerationChanged()),
            Watch(PODTEMPLATES, mapper=controller.podtemplate_to_buffers),
        ],
        workers=10,
    )
    if not ctx.options.disable_cluster_state_observability:
        from karpenter_core.controllers.status import ConditionMetrics, StatusKind

        kind = StatusKind(
            STATUS_CONTROLLER, CAPACITYBUFFERS, "autoscaling.x-k8s.io", "CapacityBuffer"
        )
        manager.add_controller(
            kind.controller,
            ConditionMetrics(kind, ctx.kube, ctx.clock, ctx.recorder),
            watches=[Watch(kind.resource)],
            workers=10,
        )
