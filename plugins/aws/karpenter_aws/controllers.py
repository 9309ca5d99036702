"""The AWS provider's controllers, registered through the ``karpenter_controllers`` hook.

Upstream's AWS provider adds these beside the core's: ``nodeclass.status`` (EC2NodeClass
status and finalizer), the interruption singletons (the SQS queue poller when the
``interruption-queue`` setting names a queue, and the instance-status poller), the
catalogue and price refresh, ``nodeclaim.tagging``, the launch-template cache's hydration
and clean-up, ``cloudprovider.metrics`` (offering price and availability series), and the
capacity-reservation singletons (``capacityreservation.capacitytype`` and
``capacityreservation.expiration``). Each
runs only with the ``aws``
cloud provider selected; its factory reaches the provider's clients and caches through
the controller context's ``base_cloud_provider``.
"""

from __future__ import annotations

from karpenter_aws import interruption, nodeclass_status
from karpenter_aws import metrics as aws_metrics
from karpenter_aws import reservation_controllers as reservations
from karpenter_aws.launchtemplate import LaunchTemplateCleanup
from karpenter_aws.provider import (
    NAME,
    TAGGING_CONTROLLER,
    AWSCloudProvider,
    refresh_controller,
    tagging_controller,
    tagging_watches,
)
from karpenter_core.plugin_api import (
    ControllerContext,
    ControllerSpec,
    ItemExponentialFailureRateLimiter,
    RateLimiter,
    Reconciler,
    SingletonReconciler,
)

__all__ = ["CATALOGUE_REFRESH", "CONTROLLERS", "LAUNCH_TEMPLATE_CLEANUP", "aws_provider"]

CATALOGUE_REFRESH = "aws.catalogue.refresh"
LAUNCH_TEMPLATE_CLEANUP = "aws.launchtemplate.cleanup"


def aws_provider(ctx: ControllerContext) -> AWSCloudProvider:
    """The AWS provider behind ``ctx`` (its clients, settings and caches)."""
    provider = ctx.base_cloud_provider
    if not isinstance(provider, AWSCloudProvider):
        raise TypeError(
            f"the AWS controllers need the aws cloud provider, got {type(provider).__name__}"
        )
    return provider


def _nodeclass_status(ctx: ControllerContext) -> Reconciler:
    p = aws_provider(ctx)
    return nodeclass_status.NodeClassStatusReconciler(
        ctx.kube,
        ctx.clock,
        ctx.recorder,
        p.clients,
        p.settings,
        reservations=p.reservations,
        reserved_capacity=ctx.options.gate("ReservedCapacity"),
        placement_groups=p.placement_groups,
    )


def _instance_status(ctx: ControllerContext) -> SingletonReconciler:
    return interruption.InstanceStatusController(ctx, aws_provider(ctx).clients.ec2)


def _interruption_queue(ctx: ControllerContext) -> SingletonReconciler | None:
    p = aws_provider(ctx)
    if not p.settings.interruption_queue:
        return None  # interruption handling is off without a queue
    return interruption.InterruptionController(
        ctx,
        p.clients.sqs,
        p.settings.interruption_queue,
        p.unavailable,
        reservations=p.reservations,
    )


def _queue_rate_limiter() -> RateLimiter:
    # a queue created after start-up is found within minutes, not the default's 16
    return ItemExponentialFailureRateLimiter(base_delay=1.0, max_delay=interruption.RETRY_CAP)


def _refresh(ctx: ControllerContext) -> SingletonReconciler:
    return refresh_controller(aws_provider(ctx))


def _offering_metrics(ctx: ControllerContext) -> SingletonReconciler:
    return aws_metrics.OfferingMetricsController(
        ctx.kube, aws_provider(ctx), reserved_capacity=ctx.options.gate("ReservedCapacity")
    )


def _tagging(ctx: ControllerContext) -> Reconciler:
    return tagging_controller(ctx.kube, aws_provider(ctx))


def _launch_template_cleanup(ctx: ControllerContext) -> SingletonReconciler:
    p = aws_provider(ctx)
    return LaunchTemplateCleanup(p.instances.launch_templates, p.settings.cluster_name)


def _capacity_type(ctx: ControllerContext) -> SingletonReconciler:
    return reservations.CapacityTypeController(ctx.kube, aws_provider(ctx))


def _expiration(ctx: ControllerContext) -> SingletonReconciler:
    return reservations.ExpirationController(ctx.kube, aws_provider(ctx).reservations, ctx.clock)


CONTROLLERS = (
    ControllerSpec(
        nodeclass_status.CONTROLLER_NAME,
        _nodeclass_status,
        watches=nodeclass_status.WATCHES,
        cloud_provider=NAME,
    ),
    ControllerSpec(
        interruption.INSTANCE_STATUS_NAME, _instance_status, singleton=True, cloud_provider=NAME
    ),
    ControllerSpec(
        interruption.NAME,
        _interruption_queue,
        singleton=True,
        cloud_provider=NAME,
        rate_limiter=_queue_rate_limiter,
    ),
    ControllerSpec(CATALOGUE_REFRESH, _refresh, singleton=True, cloud_provider=NAME),
    ControllerSpec(TAGGING_CONTROLLER, _tagging, watches=tagging_watches(), cloud_provider=NAME),
    ControllerSpec(
        LAUNCH_TEMPLATE_CLEANUP, _launch_template_cleanup, singleton=True, cloud_provider=NAME
    ),
    ControllerSpec(
        aws_metrics.CONTROLLER_NAME, _offering_metrics, singleton=True, cloud_provider=NAME
    ),
    ControllerSpec(
        reservations.CAPACITY_TYPE_NAME, _capacity_type, singleton=True, cloud_provider=NAME
    ),
    ControllerSpec(reservations.EXPIRATION_NAME, _expiration, singleton=True, cloud_provider=NAME),
)
"""Every controller the AWS plugin registers, in upstream's order."""
