"""The nvme.example.com DRA driver: the devices it describes, and what they decide once
karpenter-core simulates ResourceClaims (``IGNORE_DRA_REQUESTS=false``): a pod claiming
two local disks gets an instance type the driver gives two disks, and none without it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from karpenter_example_plugin.nvme import DISK_SIZE, DRIVER, describe_devices

from karpenter_core.cli import main
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


CLAIMING_POD = """
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.kwok.sh, kind: KWOKNodeClass, name: default}
      requirements:
        - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: nvme}
spec:
  selectors:
    - cel: {expression: 'device.driver == "nvme.example.com"'}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: two-disks, namespace: default}
spec:
  spec:
    devices:
      requests:
        - name: disks
          exactly: {deviceClassName: nvme, count: 2}
---
apiVersion: v1
kind: Pod
metadata: {name: db, namespace: default}
spec:
  resourceClaims:
    - {name: scratch, resourceClaimTemplateName: two-disks}
  containers:
    - name: db
      image: db
      resources:
        requests: {cpu: "1"}
        claims: [{name: scratch}]
"""


def _schedule(tmp_path: Path, plugins: str) -> dict[str, object]:
    manifest = tmp_path / "claiming-pod.yaml"
    manifest.write_text(CLAIMING_POD)
    result = CliRunner().invoke(
        main,
        ["schedule", "-f", str(manifest), "-o", "json"],
        env={"KARPENTER_PLUGINS": plugins, "IGNORE_DRA_REQUESTS": "false"},
    )
    assert result.exit_code == 0, result.output
    out: dict[str, object] = json.loads(result.output)
    return out


def test_karpenter_schedule_gives_a_two_disk_claim_a_type_with_two_disks(
    installed: None, tmp_path: Path
) -> None:
    out = _schedule(tmp_path, "kwok,example")
    assert out["podErrors"] == {}
    [claim] = out["nodeClaims"]  # type: ignore[misc]
    assert claim["pods"] == ["default/db"]
    for name in claim["instanceTypes"]:
        cpus = int(name.split("-")[1].removesuffix("x"))
        assert cpus >= 32, name  # one disk per 16 CPUs: two disks need 32


def test_without_the_driver_no_type_has_the_disks_and_the_pod_says_why(
    installed: None, tmp_path: Path
) -> None:
    out = _schedule(tmp_path, "kwok")
    assert out["nodeClaims"] == []
    error = out["podErrors"]["default/db"]  # type: ignore[index]
    assert 'request "disks"' in error and "needs 2 device(s)" in error
