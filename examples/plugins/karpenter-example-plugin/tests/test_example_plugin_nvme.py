"""The nvme.example.com DRA driver: the devices it describes. karpenter-core does not
allocate ResourceClaims against DRA drivers yet (its issue 11), so what the driver
describes changes no decision; `karpenter plugins` lists it (see the registration
tests)."""

from __future__ import annotations

import pytest
from karpenter_example_plugin.nvme import DISK_SIZE, DRIVER, describe_devices

from karpenter_core.plugin_api import NodePool
from karpenter_core.plugins import KarpenterPluginManager, dra_drivers
from karpenter_core.testing import builders as b
from karpenter_core.testing import fakecatalog

POOL = NodePool.from_dict(b.nodepool())


@pytest.mark.parametrize(("cpus", "disks"), [(1, 0), (15, 0), (16, 1), (40, 2), (128, 8), (256, 8)])
def test_one_disk_per_sixteen_cpus_up_to_eight(cpus: int, disks: int) -> None:
    slices = describe_devices(fakecatalog.instance_type("t", cpu=cpus), POOL)
    assert sum(len(s["devices"]) for s in slices) == disks


def test_a_slice_is_one_pool_named_after_the_type_in_resource_k8s_io_v1_shape() -> None:
    [slice_] = describe_devices(fakecatalog.instance_type("big", cpu=32), POOL)
    assert slice_["driver"] == DRIVER
    assert slice_["pool"] == {"name": "big"}
    assert [d["name"] for d in slice_["devices"]] == ["nvme-0", "nvme-1"]
    assert slice_["devices"][1]["attributes"]["index"] == {"int": 1}
    assert slice_["devices"][0]["capacity"] == {"size": {"value": DISK_SIZE}}


def test_the_core_finds_the_driver_by_name(plugin_manager: KarpenterPluginManager) -> None:
    spec = dra_drivers(plugin_manager)[DRIVER]
    assert spec.describe_devices is describe_devices
