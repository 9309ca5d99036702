"""The simulated kube-scheduler's DynamicResources plugin at work (issue 11): pods with
ResourceClaims are bound only where their devices are, the claims are allocated and
reserved when they are, and devices come free with their pods."""

from __future__ import annotations

from typing import Any

from karpenter_core.sim.dra import CLAIM_FINALIZER
from karpenter_core.testing import Environment
from karpenter_core.testing import builders as b

DRIVER = "gpu.example.com"


class Sim(Environment):
    """The kit's Environment running only the simulated kube-scheduler (and the
    simulated kube-controller-manager's resource-claim controller, in the server)."""

    def __init__(self) -> None:
        super().__init__(controllers=(), kube_scheduler=True, kubelet=False)
        self.kube.create(b.device_class("gpu", driver=DRIVER))
        self.kube.create(b.resource_claim_template("gpu"))

    def node(self, name: str, *gpus: str) -> None:
        self.kube.create(b.node(name, labels={"kubernetes.io/hostname": name}, ready=True))
        if gpus:
            self.kube.create(b.resource_slice(f"{name}-gpus", node_name=name, devices=gpus))

    def gpu_pod(self, name: str) -> None:
        self.kube.create(
            b.pod(name, cpu="100m", spec={"resourceClaims": [b.pod_claim("gpu", template="gpu")]})
        )

    def node_of(self, name: str) -> str | None:
        return self.kube.get("pods", name, "default")["spec"].get("nodeName")

    def message(self, name: str) -> str:
        conditions = self.kube.get("pods", name, "default")["status"].get("conditions") or []
        [scheduled] = [c for c in conditions if c["type"] == "PodScheduled"]
        return str(scheduled["message"])

    def claim_of(self, name: str) -> dict[str, Any]:
        pod = self.kube.get("pods", name, "default")
        [status] = pod["status"]["resourceClaimStatuses"]
        return self.kube.get("resourceclaims", status["resourceClaimName"], "default")


def test_a_pod_goes_where_its_device_is_and_its_claim_is_allocated_there() -> None:
    env = Sim()
    env.node("plain")
    env.node("gpu-node", "gpu-0")
    env.gpu_pod("trainer")
    env.settle()
    assert env.node_of("trainer") == "gpu-node"
    claim = env.claim_of("trainer")
    assert claim["metadata"]["finalizers"] == [CLAIM_FINALIZER]
    assert claim["status"]["allocation"]["devices"]["results"] == [
        {"request": "devices", "driver": DRIVER, "pool": "gpu-node", "device": "gpu-0"}
    ]
    uid = env.kube.get("pods", "trainer", "default")["metadata"]["uid"]
    assert claim["status"]["reservedFor"] == [{"resource": "pods", "name": "trainer", "uid": uid}]


def test_a_pod_whose_devices_are_taken_waits_and_says_why() -> None:
    env = Sim()
    env.node("gpu-node", "gpu-0")
    env.gpu_pod("first")
    env.settle()
    env.gpu_pod("second")
    env.settle()
    assert env.node_of("second") is None
    assert env.message("second") == "0/1 nodes are available: 1 cannot allocate all claims."


def test_devices_come_free_with_their_pod() -> None:
    env = Sim()
    env.node("gpu-node", "gpu-0")
    env.gpu_pod("first")
    env.settle()
    env.gpu_pod("second")
    env.settle()
    env.kube.delete("pods", "first", "default", grace_period_seconds=0)
    env.settle()
    assert env.node_of("second") == "gpu-node"


def test_a_device_published_later_lets_the_pod_be_bound() -> None:
    env = Sim()
    env.node("gpu-node")
    env.gpu_pod("trainer")
    env.settle()
    assert env.node_of("trainer") is None
    env.kube.create(b.resource_slice("late", node_name="gpu-node", devices=["gpu-0"]))
    env.settle()
    assert env.node_of("trainer") == "gpu-node"


def test_a_missing_device_class_fails_the_pod_on_every_node() -> None:
    env = Sim()
    env.node("gpu-node", "gpu-0")
    env.kube.create(b.resource_claim_template("fpga", device_class_name="fpga"))
    env.kube.create(
        b.pod("p", cpu="100m", spec={"resourceClaims": [b.pod_claim("x", template="fpga")]})
    )
    env.settle()
    assert env.message("p") == (
        "0/1 nodes are available: request devices: device class fpga does not exist."
    )


def test_pods_without_claims_are_scheduled_as_before() -> None:
    env = Sim()
    env.node("gpu-node", "gpu-0")
    env.kube.create(b.pod("web", cpu="100m"))
    env.settle()
    assert env.node_of("web") == "gpu-node"
    assert env.kube.list("resourceclaims").items == []
