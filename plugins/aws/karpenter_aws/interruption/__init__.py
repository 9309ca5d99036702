"""AWS interruption handling: act on EC2's warnings before the instance disappears.

Two singletons, registered by :func:`register`:

* ``interruption`` (only with the ``interruption-queue`` setting) long-polls the SQS queue
  EventBridge delivers EC2 and AWS Health events to: spot interruption warnings, capacity
  reservation interruptions, scheduled maintenance, instance stop/terminate state changes
  and rebalance recommendations (see :mod:`.messages` for the dispatch table);
* ``interruption.instancestatus`` polls ``DescribeInstanceStatus`` for instances whose
  EC2 status checks fail or that have scheduled events (see :mod:`.instancestatus`).

Each deletes the affected NodeClaims, so the core drains and replaces the nodes while the
instance still runs (a spot instance has two minutes after its warning).
"""

from __future__ import annotations

from karpenter_aws.clients import AWSClients
from karpenter_aws.interruption.controller import NAME, InterruptionController
from karpenter_aws.interruption.handler import UnavailableOfferingsLike
from karpenter_aws.interruption.instancestatus import NAME as INSTANCE_STATUS_NAME
from karpenter_aws.interruption.instancestatus import InstanceStatusController
from karpenter_aws.interruption.messages import KINDS, Message, ParseError, parse
from karpenter_aws.settings import AWSSettings
from karpenter_core.runtime.context import ControllerContext
from karpenter_core.runtime.manager import Manager
from karpenter_core.runtime.workqueue import ItemExponentialFailureRateLimiter

RETRY_CAP = 300.0
"""Longest back-off between attempts of the queue controller after failures (a missing
queue, a failed batch)."""

__all__ = [
    "INSTANCE_STATUS_NAME",
    "KINDS",
    "NAME",
    "RETRY_CAP",
    "InstanceStatusController",
    "InterruptionController",
    "Message",
    "ParseError",
    "UnavailableOfferingsLike",
    "parse",
    "register",
]


def register(
    manager: Manager,
    ctx: ControllerContext,
    clients: AWSClients,
    settings: AWSSettings,
    unavailable: UnavailableOfferingsLike | None,
) -> None:
    """Add the interruption singletons to ``manager``.

    The instance-status poller always runs (it needs only ``ec2:DescribeInstanceStatus``,
    and stops with a logged error without it); the queue controller runs when
    ``settings.interruption_queue`` names a queue.
    """
    manager.add_singleton(INSTANCE_STATUS_NAME, InstanceStatusController(ctx, clients.ec2))
    if settings.interruption_queue:
        manager.add_singleton(
            NAME,
            InterruptionController(ctx, clients.sqs, settings.interruption_queue, unavailable),
            # a queue created after start-up is found within minutes, not the default's 16
            rate_limiter=ItemExponentialFailureRateLimiter(base_delay=1.0, max_delay=RETRY_CAP),
        )
