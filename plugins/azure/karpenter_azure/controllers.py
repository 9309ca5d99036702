"""The Azure provider's controllers, registered through the ``karpenter_controllers`` hook:
``nodeclass.status`` (AKSNodeClass validation, images, Kubernetes version, conditions and
the drift-hash annotations), running only with the ``azure`` cloud provider selected."""

from __future__ import annotations

from karpenter_azure import nodeclass_status
from karpenter_azure.provider import NAME, AzureCloudProvider
from karpenter_core.plugin_api import ControllerContext, ControllerSpec, Reconciler

__all__ = ["CONTROLLERS"]


def _nodeclass_status(ctx: ControllerContext) -> Reconciler:
    provider = ctx.base_cloud_provider
    settings = provider.settings if isinstance(provider, AzureCloudProvider) else {}
    return nodeclass_status.NodeClassStatusReconciler(ctx.kube, ctx.clock, ctx.recorder, settings)


CONTROLLERS = (
    ControllerSpec(
        nodeclass_status.CONTROLLER_NAME,
        _nodeclass_status,
        watches=nodeclass_status.WATCHES,
        cloud_provider=NAME,
    ),
)
