"""Dynamic Resource Allocation end to end on a real control plane (issue 11).

kube-apiserver 1.34 serves ``resource.k8s.io/v1``; kube-controller-manager's
resourceclaim-controller makes each pod's ResourceClaim from its template; the real
kube-scheduler allocates it once a node publishes matching devices. Karpenter runs as
``karpenter serve --cloud-provider kwok --ignore-dra-requests=false`` with the KWOK DRA
driver configured (``--provider-setting dra-config=<file>``): it must launch a node of the
only family the driver gives GPUs (the dearest one, so price alone would not pick it), and
the driver, inside the same process, must publish that node's ResourceSlice once the fake
kubelet has made it Ready. The rest is Kubernetes': the claim is allocated from that slice
and the pod is bound.

The control plane, the fake kubelet and the serve subprocess come from ``serve_harness.py``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from serve_harness import (
    APP_NS,
    Cluster,
    Serve,
    cluster_fixture,  # noqa: F401 -- the `cluster` fixture
    wait_for,
)

from karpenter_core.testing import builders as b

pytestmark = pytest.mark.controlplane

DRIVER = "gpu.example.com"
FAMILY = "karpenter.kwok.sh/instance-family"
GPU_FAMILY = "m"  # the dearest 4-vCPU family: only the devices make Karpenter choose it

DRA_CONFIG = f"""
apiVersion: test.karpenter.sh/v1alpha1
kind: DRAConfig
metadata: {{name: gpus}}
spec:
  driver: {DRIVER}
  pools:
  - name: gpus
    nodeSelectorTerms:
    - matchExpressions:
      - {{key: {FAMILY}, operator: In, values: [{GPU_FAMILY}]}}
    resourceSlices:
    - devices:
      - name: gpu-0
        attributes: {{model: {{string: a100}}}}
      - name: gpu-1
        attributes: {{model: {{string: a100}}}}
"""


def _requirements() -> list[dict[str, Any]]:
    return [
        {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]},
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
        {"key": "karpenter.kwok.sh/instance-cpu", "operator": "In", "values": ["4"]},
        {"key": FAMILY, "operator": "In", "values": ["c", "s", GPU_FAMILY]},
    ]


def _gpu_pod(name: str) -> dict[str, Any]:
    pod = b.pod(
        name,
        namespace=APP_NS,
        cpu="500m",
        memory="256Mi",
        spec={
            "terminationGracePeriodSeconds": 0,
            "resourceClaims": [b.pod_claim("gpu", template="gpu")],
        },
    )
    pod["spec"]["containers"][0]["image"] = "registry.k8s.io/pause:3.10"
    pod["spec"]["containers"][0]["resources"]["claims"] = [{"name": "gpu"}]
    del pod["status"]
    return pod


def _bound(cluster: Cluster, name: str) -> str:
    pod = cluster.kube.get("pods", name, APP_NS)
    return str((pod.get("spec") or {}).get("nodeName") or "")


def test_a_pod_with_a_resource_claim_gets_a_node_whose_published_device_is_allocated(
    cluster: Cluster, tmp_path: Path
) -> None:
    config = tmp_path / "dra.yaml"
    config.write_text(DRA_CONFIG)
    op = Serve(
        cluster,
        tmp_path,
        "a",
        "--ignore-dra-requests=false",
        f"--provider-setting=dra-config={config}",
    ).start()
    try:
        kube = cluster.kube
        cluster.apply_nodepool("default", requirements=_requirements())
        kube.create(b.device_class("gpu", driver=DRIVER))
        kube.create(b.resource_claim_template("gpu", namespace=APP_NS))
        created = kube.create(_gpu_pod("trainer"))

        def bound() -> str:
            assert not op.exited(), f"karpenter serve exited; log:\n{op.log_tail()}"
            return _bound(cluster, "trainer")

        node_name = wait_for(bound, "the real kube-scheduler to bind the pod")

        # The kube-scheduler may bind the pod as soon as the Node is ready, before Karpenter
        # has written the NodeClaim's registration: wait for that write, not for the bind.
        def registered() -> dict[str, Any] | None:
            [claim] = cluster.nodeclaims()
            return claim if (claim.get("status") or {}).get("nodeName") else None

        nodeclaim = wait_for(registered, "the NodeClaim to record its Node")
        node = kube.get("nodes", node_name)
        assert node["metadata"]["labels"][FAMILY] == GPU_FAMILY
        assert nodeclaim["status"]["nodeName"] == node_name
        annotations = nodeclaim["metadata"].get("annotations") or {}
        assert annotations.get("karpenter.sh/requested-dra-drivers") == DRIVER

        [published] = kube.list("resourceslices", field_selector=f"spec.nodeName={node_name}").items
        assert published["spec"]["driver"] == DRIVER
        assert published["spec"]["pool"]["name"] == f"{DRIVER}/{node_name}"
        assert published["metadata"]["ownerReferences"][0]["name"] == node_name

        pod = kube.get("pods", "trainer", APP_NS)
        [status] = pod["status"]["resourceClaimStatuses"]
        claim = kube.get("resourceclaims", status["resourceClaimName"], APP_NS)
        [result] = claim["status"]["allocation"]["devices"]["results"]
        assert (result["driver"], result["pool"]) == (DRIVER, published["spec"]["pool"]["name"])
        assert result["device"] in {d["name"] for d in published["spec"]["devices"]}
        assert [r["uid"] for r in claim["status"]["reservedFor"]] == [created["metadata"]["uid"]]
    finally:
        op.terminate()
        print(f"--- {op.log.name} (last lines)\n{op.log_tail(80)}")
