"""The interruption controllers' Prometheus series, with upstream's names and labels.

They live on the core's registry (``karpenter_core.metrics.REGISTRY``) so ``/metrics``
serves them next to the core's, and are tracked with the core's series so
``metrics.reset()`` and ``metrics.snapshot()`` (tests, simulation reports) include them.
"""

from __future__ import annotations

from karpenter_core.plugin_api import metrics

__all__ = [
    "DELETED_MESSAGES",
    "INSTANCE_STATUS_UNHEALTHY",
    "MESSAGE_LATENCY",
    "RECEIVED_MESSAGES",
]

_SUBSYSTEM = f"{metrics.NAMESPACE}_interruption"

RECEIVED_MESSAGES = metrics.counter(
    f"{_SUBSYSTEM}_received_messages",
    "Count of messages received from the SQS queue. Broken down by message type and "
    "whether the message was actionable.",
    ("message_type",),
)
DELETED_MESSAGES = metrics.counter(
    f"{_SUBSYSTEM}_deleted_messages", "Count of messages deleted from the SQS queue."
)
MESSAGE_LATENCY = metrics.histogram(
    f"{_SUBSYSTEM}_message_queue_duration_seconds",
    "Amount of time an interruption message is on the queue before it is processed by karpenter.",
)
INSTANCE_STATUS_UNHEALTHY = metrics.counter(
    f"{_SUBSYSTEM}_instance_status_unhealthy",
    "Count of unique unhealthy instance statuses detected from EC2 DescribeInstanceStatus. "
    "Broken down by status check category.",
    ("category",),
)
