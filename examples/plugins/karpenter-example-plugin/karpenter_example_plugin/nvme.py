"""The ``nvme.example.com`` DRA driver: local NVMe disks on the larger instance types.

A node of a type with 16 or more CPUs would publish one local NVMe disk per 16 CPUs (at
most 8) through this driver's ResourceSlice, so a pod's ResourceClaim for
``nvme.example.com`` devices could be satisfied there.

With ``IGNORE_DRA_REQUESTS=false`` karpenter-core asks this driver for the devices of each
instance type when it resolves a NodePool's instance types, and the scheduler allocates
pods' ResourceClaims for ``nvme.example.com`` devices against them (docs/dra.md); with the
default (true) the driver is not asked and changes no decision.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from karpenter_core.plugin_api import resources

if TYPE_CHECKING:
    from karpenter_core.plugin_api import InstanceType, NodePool

__all__ = ["DISK_SIZE", "DRIVER", "describe_devices", "disk_count"]

DRIVER = "nvme.example.com"
CPUS_PER_DISK = 16
MAX_DISKS = 8
DISK_SIZE = "475Gi"


def disk_count(instance_type: InstanceType) -> int:
    """How many local disks a node of this type has."""
    cpus = instance_type.capacity.get(resources.CPU, 0) // 1000  # capacity is in milli-units
    return min(cpus // CPUS_PER_DISK, MAX_DISKS)


def describe_devices(
    instance_type: InstanceType, nodepool: NodePool
) -> Sequence[Mapping[str, Any]]:
    """The ResourceSlice (``resource.k8s.io/v1`` shape) a node of ``instance_type`` would
    publish: one pool named after the type, one device per disk; none for small types."""
    count = disk_count(instance_type)
    if count == 0:
        return []
    devices = [
        {
            "name": f"nvme-{i}",
            "attributes": {"index": {"int": i}, "model": {"string": "example-nvme"}},
            "capacity": {"size": {"value": DISK_SIZE}},
        }
        for i in range(count)
    ]
    return [{"driver": DRIVER, "pool": {"name": instance_type.name}, "devices": devices}]
