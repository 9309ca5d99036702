"""The simulated kubelet on the in-memory API server, a virtual clock and a Manager."""

from __future__ import annotations

from typing import Any

import pytest

from karpenter_core.sim.kubelet import KubeletOptions, StartupTaintRemover
from karpenter_core.testing import Environment
from karpenter_core.testing import builders as b


class Sim(Environment):
    """The kit's Environment running only the simulated kubelet (and kube-scheduler when
    asked). ``node`` and ``pod`` make the bare objects a kubelet meets: a node without
    allocatable or Ready, a pod bound after it is created."""

    def __init__(self, options: KubeletOptions | None = None, *, scheduler: bool = False) -> None:
        super().__init__(controllers=(), kube_scheduler=scheduler, kubelet=options or True)

    def node(
        self,
        name: str = "n1",
        *,
        taints: list[dict[str, str]] | None = None,
        annotations: dict[str, str] | None = None,
        ready: bool = False,
        allocatable: bool = False,
    ) -> None:
        status: dict[str, Any] = {"capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"}}
        if allocatable:
            status["allocatable"] = {"cpu": "3", "memory": "7Gi", "pods": "110"}
        if ready:
            status["conditions"] = [{"type": "Ready", "status": "True"}]
        self.kube.create(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {
                    "name": name,
                    "labels": {"kubernetes.io/arch": "arm64", "karpenter.sh/nodepool": "default"},
                    "annotations": annotations or {},
                },
                "spec": {"taints": taints or []},
                "status": status,
            }
        )

    def pod(
        self,
        name: str = "p",
        *,
        node: str | None = "n1",
        annotations: dict[str, str] | None = None,
        **spec: Any,
    ) -> None:
        self.kube.create(b.pod(name, annotations=annotations, image="busybox", spec=spec))
        if node is not None:
            self.kube.bind(name, "default", node)

    def get_node(self) -> dict[str, Any]:
        return self.kube.get("nodes", "n1")

    def ready(self) -> bool:
        return any(
            c.get("type") == "Ready" and c.get("status") == "True"
            for c in (self.get_node().get("status") or {}).get("conditions") or []
        )

    def phase(self, name: str = "p") -> str:
        return str((self.kube.get("pods", name, "default").get("status") or {}).get("phase"))

    def pod_exists(self, name: str = "p") -> bool:
        return self.exists("pods", name, "default")


# --- nodes ---------------------------------------------------------------------------------------


def test_node_becomes_ready_after_the_delay() -> None:
    sim = Sim(KubeletOptions(node_ready_delay=10))
    sim.node()
    sim.run_for(9.9)
    assert not sim.ready()
    sim.run_for(0.1)
    assert sim.ready()


def test_ready_node_reports_kubelet_status() -> None:
    sim = Sim()
    sim.node()
    sim.run_for(0)
    status = sim.get_node()["status"]
    ready = next(c for c in status["conditions"] if c["type"] == "Ready")
    assert (ready["reason"], ready["message"]) == (
        "KubeletReady",
        "kubelet is posting ready status",
    )
    pressure = {c["type"]: c["status"] for c in status["conditions"] if c["type"] != "Ready"}
    assert pressure == {"MemoryPressure": "False", "DiskPressure": "False", "PIDPressure": "False"}
    assert status["phase"] == "Running"
    assert status["nodeInfo"]["architecture"] == "arm64"


def test_missing_allocatable_is_filled_from_capacity() -> None:
    sim = Sim()
    sim.node()
    sim.run_for(0)
    assert sim.get_node()["status"]["allocatable"] == {"cpu": "4", "memory": "8Gi", "pods": "110"}


def test_existing_allocatable_is_kept() -> None:
    sim = Sim()
    sim.node(allocatable=True)
    sim.run_for(0)
    assert sim.get_node()["status"]["allocatable"]["cpu"] == "3"


def test_karpenter_taints_and_labels_are_left_alone() -> None:
    sim = Sim()
    taints = [
        {"key": "karpenter.sh/unregistered", "effect": "NoExecute"},
        {"key": "example.com/startup", "effect": "NoSchedule"},
    ]
    sim.node(taints=taints)
    sim.run_for(3600)
    node = sim.get_node()
    assert sim.ready()
    assert node["spec"]["taints"] == taints
    assert node["metadata"]["labels"]["karpenter.sh/nodepool"] == "default"


def test_only_annotated_nodes_are_managed_when_asked() -> None:
    sim = Sim(KubeletOptions(manage_annotation=("kwok.x-k8s.io/node", "fake")))
    sim.node()
    sim.node("n2", annotations={"kwok.x-k8s.io/node": "fake"})
    sim.run_for(60)
    assert not sim.ready()
    conditions = sim.kube.get("nodes", "n2")["status"]["conditions"]
    assert any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)


def test_startup_taint_remover_removes_only_its_taint_after_its_delay() -> None:
    sim = Sim(KubeletOptions(startup_taint_removers=[StartupTaintRemover("example.com/cni", 30)]))
    sim.node(
        taints=[
            {"key": "example.com/cni", "effect": "NoSchedule"},
            {"key": "karpenter.sh/unregistered", "effect": "NoExecute"},
        ]
    )
    sim.run_for(29)
    assert len(sim.get_node()["spec"]["taints"]) == 2
    sim.run_for(1)
    assert sim.get_node()["spec"]["taints"] == [
        {"key": "karpenter.sh/unregistered", "effect": "NoExecute"}
    ]


def test_negative_delays_are_refused() -> None:
    with pytest.raises(ValueError, match="node_ready_delay must be a non-negative"):
        KubeletOptions(node_ready_delay=-1)


# --- pods ----------------------------------------------------------------------------------------


def test_bound_pod_runs_after_the_start_delay() -> None:
    sim = Sim(KubeletOptions(pod_start_delay=5))
    sim.node(ready=True)
    sim.pod()
    sim.run_for(4.9)
    assert sim.phase() == "Pending"
    sim.run_for(0.1)
    pod = sim.kube.get("pods", "p", "default")
    assert pod["status"]["phase"] == "Running"
    ready = {c["type"]: c["status"] for c in pod["status"]["conditions"]}
    assert ready["Ready"] == "True"
    assert ready["PodScheduled"] == "True"
    assert pod["status"]["containerStatuses"][0]["ready"] is True
    assert pod["status"]["startTime"] == "2026-01-01T00:00:05Z"


def test_unbound_pod_is_left_pending() -> None:
    sim = Sim()
    sim.node(ready=True)
    sim.pod(node=None)
    sim.run_for(60)
    assert sim.phase() == "Pending"


def test_pod_waits_for_its_node_to_be_ready() -> None:
    sim = Sim(KubeletOptions(node_ready_delay=20))
    sim.node()
    sim.pod()
    sim.run_for(19)
    assert sim.phase() == "Pending"
    sim.run_for(1)
    assert sim.phase() == "Running"


def test_pod_with_run_seconds_succeeds_after_running_that_long() -> None:
    sim = Sim()
    sim.node(ready=True)
    sim.pod(annotations={"sim.karpenter.sh/run-seconds": "90s"}, restartPolicy="Never")
    sim.run_for(89)
    assert sim.phase() == "Running"
    sim.run_for(1)
    pod = sim.kube.get("pods", "p", "default")
    assert pod["status"]["phase"] == "Succeeded"
    terminated = pod["status"]["containerStatuses"][0]["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (0, "Completed")


def test_run_seconds_zero_finishes_at_once() -> None:
    sim = Sim()
    sim.node(ready=True)
    sim.pod(annotations={"sim.karpenter.sh/run-seconds": "0"})
    sim.run_for(0)
    assert sim.phase() == "Succeeded"


def test_malformed_run_seconds_is_ignored() -> None:
    sim = Sim()
    sim.node(ready=True)
    sim.pod(annotations={"sim.karpenter.sh/run-seconds": "soon"})
    sim.run_for(3600)
    assert sim.phase() == "Running"


def test_deleted_running_pod_goes_after_its_grace_period() -> None:
    sim = Sim()
    sim.node(ready=True)
    sim.pod(terminationGracePeriodSeconds=30)
    sim.run_for(1)
    sim.kube.delete("pods", "p", "default")
    sim.run_for(29)
    assert sim.pod_exists()
    sim.run_for(1)
    assert not sim.pod_exists()


def test_termination_seconds_end_a_pod_before_its_grace_period() -> None:
    sim = Sim(KubeletOptions(termination_seconds=5))
    sim.node(ready=True)
    sim.pod(terminationGracePeriodSeconds=300)
    sim.run_for(1)
    sim.kube.delete("pods", "p", "default")
    sim.run_for(4)
    assert sim.pod_exists()
    sim.run_for(1)
    assert not sim.pod_exists()


def test_pod_that_never_started_goes_at_once_when_deleted() -> None:
    sim = Sim(KubeletOptions(pod_start_delay=60))
    sim.node(ready=True)
    sim.pod(terminationGracePeriodSeconds=30)
    sim.run_for(1)
    sim.kube.delete("pods", "p", "default")
    sim.run_for(0)
    assert not sim.pod_exists()


def test_pod_of_a_deleted_node_is_collected_after_the_quarantine() -> None:
    sim = Sim()
    sim.node(ready=True)
    sim.pod()
    sim.run_for(1)
    sim.kube.delete("nodes", "n1")
    sim.run_for(39)
    assert sim.pod_exists()
    sim.run_for(1)
    assert not sim.pod_exists()


def test_scheduler_and_kubelet_take_a_pod_from_pending_to_running() -> None:
    sim = Sim(KubeletOptions(node_ready_delay=10, pod_start_delay=2), scheduler=True)
    sim.pod(node=None)
    sim.run_for(1)
    sim.node(taints=[{"key": "karpenter.sh/unregistered", "effect": "NoExecute"}])
    sim.run_for(30)
    assert sim.phase() == "Pending"  # Ready, but still unregistered
    sim.kube.patch("nodes", "n1", {"spec": {"taints": []}})
    sim.run_for(1.9)
    assert sim.kube.get("pods", "p", "default")["spec"]["nodeName"] == "n1"
    assert sim.phase() == "Pending"
    sim.run_for(0.1)
    assert sim.phase() == "Running"


# --- node failure --------------------------------------------------------------------------------


def _conditions(node: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in (node.get("status") or {}).get("conditions") or []}


def test_failed_node_reports_every_condition_unknown() -> None:
    sim = Sim()
    sim.node()
    sim.run_for(1)
    sim.kubelet.fail_node("n1")
    conditions = _conditions(sim.get_node())
    assert set(conditions) == {"Ready", "MemoryPressure", "DiskPressure", "PIDPressure"}
    for c in conditions.values():
        assert (c["status"], c["reason"], c["message"]) == (
            "Unknown",
            "NodeStatusUnknown",
            "Kubelet stopped posting node status.",
        )


def test_failed_node_is_not_made_ready_again() -> None:
    sim = Sim(KubeletOptions(node_ready_delay=5))
    sim.node()
    sim.run_for(1)
    sim.kubelet.fail_node("n1")
    sim.run_for(60)
    assert _conditions(sim.get_node())["Ready"]["status"] == "Unknown"


def test_failed_node_keeps_its_startup_taint() -> None:
    taint = {"key": "example.com/agent", "effect": "NoSchedule"}
    sim = Sim(KubeletOptions(startup_taint_removers=[StartupTaintRemover(taint["key"], 10)]))
    sim.node(taints=[taint], ready=True)
    sim.run_for(1)
    sim.kubelet.fail_node("n1")
    sim.run_for(60)
    assert sim.get_node()["spec"]["taints"] == [taint]


def test_pods_of_a_failed_node_are_not_started() -> None:
    sim = Sim(KubeletOptions(pod_start_delay=10))
    sim.node(ready=True)
    sim.pod()
    sim.run_for(1)
    sim.kubelet.fail_node("n1")
    sim.run_for(60)
    assert sim.phase() == "Pending"


def test_deleted_pod_of_a_failed_node_stays_terminating() -> None:
    sim = Sim()
    sim.node(ready=True)
    sim.pod(terminationGracePeriodSeconds=30)
    sim.run_for(1)
    assert sim.phase() == "Running"
    sim.kubelet.fail_node("n1")
    sim.kube.delete("pods", "p", "default")
    sim.run_for(600)
    assert sim.pod_exists()


def test_pods_of_a_failed_node_are_collected_once_the_node_is_deleted() -> None:
    sim = Sim()
    sim.node(ready=True)
    sim.pod()
    sim.run_for(1)
    sim.kubelet.fail_node("n1")
    sim.kube.delete("nodes", "n1")
    sim.run_for(40)
    assert not sim.pod_exists()


def test_a_new_node_with_a_failed_nodes_name_is_managed() -> None:
    sim = Sim()
    sim.node()
    sim.run_for(1)
    sim.kubelet.fail_node("n1")
    sim.kube.delete("nodes", "n1")
    sim.run_for(1)
    sim.node()
    sim.run_for(1)
    assert sim.ready()


def test_failing_a_missing_node_does_nothing() -> None:
    sim = Sim()
    sim.kubelet.fail_node("ghost")
    sim.node("ghost")
    sim.run_for(1)
    assert _conditions(sim.kube.get("nodes", "ghost"))["Ready"]["status"] == "True"
