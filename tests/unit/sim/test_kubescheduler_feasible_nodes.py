"""The simulated kube-scheduler stops a pod's search at kube-scheduler's
``numFeasibleNodesToFind`` and starts the next pod's where it stopped."""

from __future__ import annotations

from typing import Any

import pytest

from karpenter_core.runtime.clock import VirtualClock
from karpenter_core.sim.apiserver import InMemoryApiServer
from karpenter_core.sim.kubescheduler import (
    KubeScheduler,
    KubeSchedulerOptions,
    feasible_nodes_to_find,
)


@pytest.mark.parametrize(
    ("nodes", "percentage", "wanted"),
    [
        (50, 0, 50),  # below 100 nodes: every node
        (100, 0, 100),  # 50 - 0 = 50% of 100 is 50, raised to the floor of 100
        (1000, 0, 420),  # 50 - 8 = 42%
        (5000, 0, 500),  # 50 - 40 = 10%
        (10000, 0, 500),  # 50 - 80 < 5: 5%
        (1000, 30, 300),
        (1000, 5, 100),  # the floor of 100 nodes
        (1000, 100, 1000),
    ],
)
def test_how_many_feasible_nodes_kube_scheduler_looks_for(
    nodes: int, percentage: int, wanted: int
) -> None:
    assert feasible_nodes_to_find(nodes, percentage) == wanted


def _node(i: int) -> dict[str, Any]:
    allocatable = {"cpu": "4", "memory": "8Gi", "pods": "110"}
    name = f"node-{i:04d}"
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {
            "allocatable": allocatable,
            "capacity": allocatable,
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def _pod(name: str, cpu: str = "1") -> dict[str, Any]:
    container = {"name": "c", "image": "i", "resources": {"requests": {"cpu": cpu}}}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": [container]},
    }


def _run(nodes: int, pods: list[dict[str, Any]], percentage: int = 0) -> dict[str, str | None]:
    clock = VirtualClock()
    kube = InMemoryApiServer(clock, seed=1)
    for i in range(nodes):
        kube.create(_node(i))
    for pod in pods:
        kube.create(pod)
    scheduler = KubeScheduler(
        kube, clock, KubeSchedulerOptions(percentage_of_nodes_to_score=percentage)
    )
    scheduler.reconcile()
    return {p["metadata"]["name"]: p["spec"].get("nodeName") for p in kube.list("pods").items}


def test_each_pod_searches_from_where_the_last_stopped() -> None:
    # 200 empty nodes, all equally good: 100 feasible nodes suffice (50% of 200 is 100), so
    # the first pod takes the best of node-0000..0099 (the name sorting first) and the
    # second the best of node-0100..0199
    placed = _run(200, [_pod("a"), _pod("b")])
    assert placed == {"a": "node-0000", "b": "node-0100"}
    # trying every node, both would go to the first nodes by name
    assert _run(200, [_pod("a"), _pod("b")], percentage=100) == {
        "a": "node-0000",
        "b": "node-0001",
    }


def test_a_pod_that_fits_nowhere_tried_every_node() -> None:
    clock = VirtualClock()
    kube = InMemoryApiServer(clock, seed=1)
    for i in range(300):
        kube.create(_node(i))
    kube.create(_pod("huge", cpu="64"))
    KubeScheduler(kube, clock).reconcile()
    pod = kube.get("pods", "huge", "default")
    (cond,) = [c for c in pod["status"]["conditions"] if c["type"] == "PodScheduled"]
    assert cond["message"] == "0/300 nodes are available: 300 Insufficient cpu."
