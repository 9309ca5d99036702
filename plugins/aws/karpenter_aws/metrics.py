"""The AWS provider's catalogue series, with upstream's names and labels.

Upstream karpenter-provider-aws exports, per instance type, its vCPUs and memory (set
whenever a type is built) and, per offering (instance type x capacity type x zone), its
estimated hourly price and whether it is available (a ``cloudprovider.metrics`` singleton
that walks every NodePool's instance types each minute). Dashboards built for the Go
operator read these. They live on the core's registry, like every plugin series.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from karpenter_core.plugin_api import (
    NodePool,
    Result,
    labels,
    metrics,
)

if TYPE_CHECKING:
    from karpenter_core.plugin_api import CloudProvider, InstanceType, KubeClient

__all__ = [
    "CONTROLLER_NAME",
    "INSTANCE_TYPE_CPU",
    "INSTANCE_TYPE_MEMORY",
    "OFFERING_AVAILABLE",
    "OFFERING_PRICE",
    "OfferingMetricsController",
    "record_instance_type",
]

log = logging.getLogger("karpenter.aws.metrics")

CONTROLLER_NAME = "cloudprovider.metrics"
INTERVAL = 60.0
"""Seconds between two passes (upstream: a minute)."""

_SUBSYSTEM = f"{metrics.NAMESPACE}_cloudprovider"
_NODEPOOLS = ("karpenter.sh/v1", "NodePool")
_OFFERING_LABELS = ("instance_type", "capacity_type", "zone")

INSTANCE_TYPE_CPU = metrics.gauge(
    f"{_SUBSYSTEM}_instance_type_cpu_cores",
    "VCPUs cores for a given instance type.",
    ("instance_type",),
)
INSTANCE_TYPE_MEMORY = metrics.gauge(
    f"{_SUBSYSTEM}_instance_type_memory_bytes",
    "Memory, in bytes, for a given instance type.",
    ("instance_type",),
)
OFFERING_AVAILABLE = metrics.gauge(
    f"{_SUBSYSTEM}_instance_type_offering_available",
    "Instance type offering availability, based on instance type, capacity type, and zone",
    _OFFERING_LABELS,
)
OFFERING_PRICE = metrics.gauge(
    f"{_SUBSYSTEM}_instance_type_offering_price_estimate",
    "Instance type offering estimated hourly price used when making informed decisions on "
    "node cost calculation, based on instance type, capacity type, and zone.",
    _OFFERING_LABELS,
)


def record_instance_type(name: str, vcpus: int, memory_mib: int) -> None:
    """Set the type's cpu and memory series (EC2's figures, before any overhead)."""
    INSTANCE_TYPE_CPU.labels(instance_type=name).set(vcpus)
    INSTANCE_TYPE_MEMORY.labels(instance_type=name).set(memory_mib * 1024 * 1024)


def offering_series(
    instance_types: Iterable[InstanceType], *, reserved_capacity: bool
) -> tuple[dict[tuple[str, str, str], bool], dict[tuple[str, str, str], float]]:
    """(availability, price) per (type, capacity type, zone) over ``instance_types``.

    As upstream: a dimension is available when any offering of it is; its price is the
    last one seen; with the ReservedCapacity gate, every zone of a type without a reserved
    offering gets one, unavailable, priced 0."""
    available: dict[tuple[str, str, str], bool] = {}
    price: dict[tuple[str, str, str], float] = {}
    for it in instance_types:
        zones: set[str] = set()
        for offering in it.offerings:
            key = (it.name, offering.capacity_type, offering.zone)
            available[key] = available.get(key, False) or offering.available
            price[key] = offering.price
            zones.add(offering.zone)
        if reserved_capacity:
            for zone in zones:
                key = (it.name, labels.CAPACITY_TYPE_RESERVED, zone)
                if key not in available:
                    available[key] = False
                    price[key] = 0.0
    return available, price


class OfferingMetricsController:
    """Upstream's ``cloudprovider.metrics`` singleton: each minute, every NodePool's
    instance types' offerings as availability and price series. A NodePool whose types
    cannot be listed is skipped (logged) and the others still published."""

    def __init__(
        self, kube: KubeClient, cloud_provider: CloudProvider, *, reserved_capacity: bool
    ) -> None:
        self._kube = kube
        self._cloud_provider = cloud_provider
        self._reserved_capacity = reserved_capacity

    def _instance_types(self) -> tuple[list[InstanceType], list[str]]:
        types: list[InstanceType] = []
        failed: list[str] = []
        for obj in self._kube.list(_NODEPOOLS).items:
            name = str((obj.get("metadata") or {}).get("name") or "")
            try:
                nodepool: Any = NodePool.from_dict(obj, defaults=True)
                types.extend(self._cloud_provider.get_instance_types(nodepool))
            except Exception as e:  # one broken NodePool must not hide the others' series
                log.warning("cloudprovider.metrics: instance types of NodePool %s: %s", name, e)
                failed.append(name)
        return types, failed

    def reconcile(self) -> Result:
        types, failed = self._instance_types()
        available, price = offering_series(types, reserved_capacity=self._reserved_capacity)
        for (name, capacity_type, zone), ok in available.items():
            OFFERING_AVAILABLE.labels(
                instance_type=name, capacity_type=capacity_type, zone=zone
            ).set(1 if ok else 0)
        for (name, capacity_type, zone), value in price.items():
            OFFERING_PRICE.labels(instance_type=name, capacity_type=capacity_type, zone=zone).set(
                value
            )
        # upstream returns an error when a NodePool failed: retried with backoff
        return Result(requeue=True) if failed else Result.after(INTERVAL)
