"""The engine's runtime: clocks, work queues, reconcilers, the controller manager, events.

Controllers depend on these, never on threads or ``time`` directly, so the same controller
runs in ``serve`` (wall clock, threads) and in ``simulate`` (virtual clock, one thread).
"""

from karpenter_core.runtime.clock import Clock, TimerHandle, VirtualClock, WallClock
from karpenter_core.runtime.events import Event, EventRecorder, RecordedEvent
from karpenter_core.runtime.manager import Controller, LivelockError, Manager
from karpenter_core.runtime.reconciler import (
    ObjectKey,
    Reconciler,
    Result,
    SingletonReconciler,
    Watch,
    key_of,
)
from karpenter_core.runtime.workqueue import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    MaxOfRateLimiter,
    RateLimiter,
    ShutDown,
    WorkQueue,
    default_controller_rate_limiter,
)

__all__ = [
    "BucketRateLimiter",
    "Clock",
    "Controller",
    "Event",
    "EventRecorder",
    "ItemExponentialFailureRateLimiter",
    "LivelockError",
    "Manager",
    "MaxOfRateLimiter",
    "ObjectKey",
    "RateLimiter",
    "Reconciler",
    "RecordedEvent",
    "Result",
    "ShutDown",
    "SingletonReconciler",
    "TimerHandle",
    "VirtualClock",
    "WallClock",
    "Watch",
    "WorkQueue",
    "default_controller_rate_limiter",
    "key_of",
]
