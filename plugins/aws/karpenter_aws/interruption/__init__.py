"""AWS interruption handling: act on EC2's warnings before the instance disappears.

Two singletons, registered through the plugin's ``karpenter_controllers`` hook
(:mod:`karpenter_aws.controllers`):

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

from karpenter_aws.interruption.controller import NAME, InterruptionController
from karpenter_aws.interruption.handler import UnavailableOfferingsLike
from karpenter_aws.interruption.instancestatus import NAME as INSTANCE_STATUS_NAME
from karpenter_aws.interruption.instancestatus import InstanceStatusController
from karpenter_aws.interruption.messages import KINDS, Message, ParseError, parse

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
]
