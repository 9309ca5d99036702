"""The simulated kube-scheduler on the in-memory API server, a virtual clock and a Manager."""

from __future__ import annotations

from typing import Any

import pytest

from karpenter_core.sim.kubescheduler import (
    MOST_ALLOCATED,
    KubeScheduler,
    KubeSchedulerOptions,
)
from karpenter_core.testing import Environment
from karpenter_core.testing import builders as b


class Sim(Environment):
    """The kit's Environment running only the simulated kube-scheduler."""

    def __init__(self, options: KubeSchedulerOptions | None = None) -> None:
        super().__init__(controllers=(), kube_scheduler=options or True, kubelet=False)
        assert self.kube_scheduler is not None
        self.scheduler: KubeScheduler = self.kube_scheduler

    def node(
        self,
        name: str,
        *,
        cpu: str = "4",
        pods: str = "110",
        ready: bool = True,
        labels: dict[str, str] | None = None,
        taints: list[dict[str, str]] | None = None,
        unschedulable: bool = False,
    ) -> None:
        spec: dict[str, Any] = {"taints": taints or []}
        if unschedulable:
            spec["unschedulable"] = True
        self.kube.create(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {
                    "name": name,
                    "labels": {"kubernetes.io/hostname": name, **(labels or {})},
                },
                "spec": spec,
                "status": {
                    "allocatable": {"cpu": cpu, "memory": "16Gi", "pods": pods},
                    "capacity": {"cpu": cpu, "memory": "16Gi", "pods": pods},
                    "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
                },
            }
        )

    def pod(
        self,
        name: str,
        *,
        cpu: str = "1",
        labels: dict[str, str] | None = None,
        ports: list[int] | None = None,
        **spec: Any,
    ) -> None:
        self.kube.create(b.pod(name, cpu=cpu, labels=labels, host_ports=ports or (), spec=spec))

    def run(self) -> None:
        self.manager.settle()

    def get(self, name: str) -> dict[str, Any]:
        return self.kube.get("pods", name, "default")

    def node_of(self, name: str) -> str | None:
        return (self.get(name).get("spec") or {}).get("nodeName")

    def scheduled(self, name: str) -> dict[str, Any] | None:
        for c in (self.get(name).get("status") or {}).get("conditions") or []:
            if c.get("type") == "PodScheduled":
                return dict(c)
        return None


@pytest.fixture
def sim() -> Sim:
    return Sim()


def test_pending_pod_is_bound_to_a_ready_node_that_fits(sim: Sim) -> None:
    sim.node("a")
    sim.pod("p")
    sim.run()
    assert sim.node_of("p") == "a"
    assert sim.scheduled("p") is not None and sim.scheduled("p")["status"] == "True"  # type: ignore[index]


def test_pod_that_fits_nowhere_is_marked_unschedulable_with_the_reasons(sim: Sim) -> None:
    sim.node("a", cpu="1")
    sim.node("b", taints=[{"key": "karpenter.sh/unregistered", "effect": "NoExecute"}])
    sim.pod("p", cpu="2")
    sim.run()
    cond = sim.scheduled("p")
    assert sim.node_of("p") is None
    assert cond is not None
    assert (cond["status"], cond["reason"]) == ("False", "Unschedulable")
    assert cond["message"] == (
        "0/2 nodes are available: 1 Insufficient cpu, 1 node(s) had untolerated taint(s)."
    )


def test_no_nodes_at_all_says_so(sim: Sim) -> None:
    sim.pod("p")
    sim.run()
    cond = sim.scheduled("p")
    assert cond is not None and cond["message"] == "no nodes available to schedule pods"


def test_not_ready_node_counts_as_tainted_not_ready(sim: Sim) -> None:
    sim.node("a", ready=False)
    sim.pod("p")
    not_ready = {
        "key": "node.kubernetes.io/not-ready",
        "operator": "Exists",
        "effect": "NoSchedule",
    }
    sim.pod("tolerant", tolerations=[not_ready])
    sim.run()
    assert sim.node_of("p") is None
    message = sim.scheduled("p")["message"]  # type: ignore[index]
    assert message == "0/1 nodes are available: 1 node(s) had untolerated taint(s)."
    assert sim.node_of("tolerant") == "a"


def test_pod_binds_once_the_unregistered_taint_is_removed(sim: Sim) -> None:
    sim.node("a", taints=[{"key": "karpenter.sh/unregistered", "effect": "NoExecute"}])
    sim.pod("p")
    sim.run()
    assert sim.node_of("p") is None
    sim.kube.patch("nodes", "a", {"spec": {"taints": []}})
    sim.run()
    assert sim.node_of("p") == "a"


def test_startup_taint_keeps_pods_off_until_removed(sim: Sim) -> None:
    sim.node("a", taints=[{"key": "example.com/cni-not-ready", "effect": "NoSchedule"}])
    sim.pod("p")
    sim.run()
    assert sim.node_of("p") is None


def test_tolerated_taint_does_not_block(sim: Sim) -> None:
    sim.node("a", taints=[{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}])
    sim.pod(
        "p",
        tolerations=[
            {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}
        ],
    )
    sim.run()
    assert sim.node_of("p") == "a"


def test_prefer_no_schedule_taint_does_not_block(sim: Sim) -> None:
    sim.node("a", taints=[{"key": "soft", "effect": "PreferNoSchedule"}])
    sim.pod("p")
    sim.run()
    assert sim.node_of("p") == "a"


def test_cordoned_node_is_skipped(sim: Sim) -> None:
    sim.node("a", unschedulable=True)
    sim.pod("p")
    sim.run()
    assert sim.scheduled("p")["message"] == "0/1 nodes are available: 1 node(s) were unschedulable."  # type: ignore[index]


def test_node_selector_must_match(sim: Sim) -> None:
    sim.node("a", labels={"zone": "z1"})
    sim.node("b", labels={"zone": "z2"})
    sim.pod("p", nodeSelector={"zone": "z2"})
    sim.run()
    assert sim.node_of("p") == "b"


def test_required_node_affinity_terms_are_alternatives(sim: Sim) -> None:
    sim.node("a", labels={"zone": "z1"})
    sim.node("b", labels={"disk": "ssd"})
    sim.pod(
        "p",
        affinity={
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z9"]}]},
                        {"matchExpressions": [{"key": "disk", "operator": "Exists"}]},
                    ]
                }
            }
        },
    )
    sim.run()
    assert sim.node_of("p") == "b"


def test_unmatched_affinity_is_reported(sim: Sim) -> None:
    sim.node("a")
    sim.pod("p", nodeSelector={"zone": "z2"})
    sim.run()
    assert sim.scheduled("p")["message"] == (  # type: ignore[index]
        "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector."
    )


def test_match_fields_select_a_node_by_name(sim: Sim) -> None:
    sim.node("a")
    sim.node("b")
    sim.pod(
        "p",
        affinity={
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchFields": [
                                {"key": "metadata.name", "operator": "In", "values": ["b"]}
                            ]
                        }
                    ]
                }
            }
        },
    )
    sim.run()
    assert sim.node_of("p") == "b"


def test_host_port_conflict_moves_the_second_pod(sim: Sim) -> None:
    sim.node("a")
    sim.node("b")
    sim.pod("p1", ports=[8080])
    sim.pod("p2", ports=[8080])
    sim.scheduler.options = KubeSchedulerOptions(scoring=MOST_ALLOCATED)
    sim.run()
    assert {sim.node_of("p1"), sim.node_of("p2")} == {"a", "b"}


def test_pods_count_against_the_pods_resource(sim: Sim) -> None:
    sim.node("a", pods="1")
    sim.pod("p1", cpu="100m")
    sim.pod("p2", cpu="100m")
    sim.run()
    assert sim.node_of("p1") == "a"
    assert sim.scheduled("p2")["message"] == "0/1 nodes are available: 1 Too many pods."  # type: ignore[index]


def test_higher_priority_pod_is_placed_first(sim: Sim) -> None:
    sim.pod("low", cpu="3", priority=0)
    sim.pod("high", cpu="3", priority=100)
    sim.node("a")
    sim.run()
    assert sim.node_of("high") == "a"
    assert sim.node_of("low") is None


def test_older_pod_is_placed_first_at_equal_priority(sim: Sim) -> None:
    sim.pod("first", cpu="3")
    sim.clock.advance(5)
    sim.pod("second", cpu="3")
    sim.node("a")
    sim.run()
    assert sim.node_of("first") == "a"
    assert sim.node_of("second") is None


def test_least_allocated_spreads_pods(sim: Sim) -> None:
    sim.node("a")
    sim.node("b")
    sim.pod("p1")
    sim.pod("p2")
    sim.run()
    assert {sim.node_of("p1"), sim.node_of("p2")} == {"a", "b"}


def test_most_allocated_packs_pods() -> None:
    sim = Sim(KubeSchedulerOptions(scoring=MOST_ALLOCATED))
    sim.node("a")
    sim.node("b")
    sim.pod("p1")
    sim.pod("p2")
    sim.run()
    assert sim.node_of("p1") == sim.node_of("p2")


def test_condition_is_not_rewritten_when_unchanged(sim: Sim) -> None:
    sim.node("a", cpu="1")
    sim.pod("p", cpu="2")
    sim.run()
    version = sim.get("p")["metadata"]["resourceVersion"]
    sim.node("b", cpu="1")  # a new node: another pass, same verdict
    sim.run()
    assert sim.get("p")["metadata"]["resourceVersion"] == version


def test_gated_pod_is_marked_scheduling_gated_and_left_unbound(sim: Sim) -> None:
    sim.node("a")
    sim.pod("p", schedulingGates=[{"name": "example.com/wait"}])
    sim.run()
    assert sim.node_of("p") is None
    assert sim.scheduled("p")["reason"] == "SchedulingGated"  # type: ignore[index]


def test_pods_for_another_scheduler_are_left_alone(sim: Sim) -> None:
    sim.node("a")
    sim.pod("p", schedulerName="other")
    sim.run()
    assert sim.node_of("p") is None
    assert sim.scheduled("p") is None


def test_deleting_a_pod_frees_room_for_a_pending_one(sim: Sim) -> None:
    sim.node("a", cpu="2")
    sim.pod("big", cpu="2")
    sim.run()
    sim.pod("next", cpu="2")
    sim.run()
    assert sim.node_of("next") is None
    sim.kube.delete("pods", "big", "default", grace_period_seconds=0)
    sim.run()
    assert sim.node_of("next") == "a"


def test_required_anti_affinity_keeps_pods_apart() -> None:
    sim = Sim(KubeSchedulerOptions(scoring=MOST_ALLOCATED))
    sim.node("a")
    sim.node("b")
    anti = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {"matchLabels": {"app": "web"}},
                    "topologyKey": "kubernetes.io/hostname",
                }
            ]
        }
    }
    sim.pod("w1", labels={"app": "web"}, affinity=anti)
    sim.pod("w2", labels={"app": "web"}, affinity=anti)
    sim.pod("w3", labels={"app": "web"}, affinity=anti)
    sim.run()
    assert {sim.node_of("w1"), sim.node_of("w2")} == {"a", "b"}
    assert sim.node_of("w3") is None
    assert "didn't match pod anti-affinity rules" in sim.scheduled("w3")["message"]  # type: ignore[index]


def test_existing_pods_anti_affinity_repels_newcomers() -> None:
    sim = Sim(KubeSchedulerOptions(scoring=MOST_ALLOCATED))
    sim.node("a")
    sim.node("b")
    sim.pod(
        "loner",
        affinity={
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "labelSelector": {"matchLabels": {"app": "noisy"}},
                        "topologyKey": "kubernetes.io/hostname",
                    }
                ]
            }
        },
    )
    sim.run()
    home = sim.node_of("loner")
    sim.pod("noisy", labels={"app": "noisy"})
    sim.run()
    assert sim.node_of("noisy") not in (None, home)


def test_anti_affinity_of_a_pod_placed_earlier_in_the_same_pass_repels() -> None:
    sim = Sim(KubeSchedulerOptions(scoring=MOST_ALLOCATED))
    sim.node("a")
    sim.node("b")
    sim.pod(
        "loner",
        affinity={
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "labelSelector": {"matchLabels": {"app": "noisy"}},
                        "topologyKey": "kubernetes.io/hostname",
                    }
                ]
            }
        },
    )
    sim.clock.advance(1)
    sim.pod("noisy", labels={"app": "noisy"})
    sim.run()
    assert sim.node_of("loner") is not None
    assert sim.node_of("noisy") not in (None, sim.node_of("loner"))


def test_required_pod_affinity_follows_the_target(sim: Sim) -> None:
    sim.node("a")
    sim.node("b")
    sim.pod("db", labels={"app": "db"}, nodeSelector={"kubernetes.io/hostname": "b"})
    sim.run()
    sim.pod(
        "app",
        affinity={
            "podAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "labelSelector": {"matchLabels": {"app": "db"}},
                        "topologyKey": "kubernetes.io/hostname",
                    }
                ]
            }
        },
    )
    sim.run()
    assert sim.node_of("app") == "b"


def test_topology_spread_do_not_schedule_balances_zones() -> None:
    sim = Sim(KubeSchedulerOptions(scoring=MOST_ALLOCATED))
    sim.node("a", cpu="8", labels={"zone": "z1"})
    sim.node("b", cpu="8", labels={"zone": "z2"})
    spread = [
        {
            "maxSkew": 1,
            "topologyKey": "zone",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "web"}},
        }
    ]
    for i in range(4):
        sim.pod(f"w{i}", labels={"app": "web"}, topologySpreadConstraints=spread)
    sim.run()
    placed = [sim.node_of(f"w{i}") for i in range(4)]
    assert placed.count("a") == 2
    assert placed.count("b") == 2


def test_spread_needs_the_topology_label_on_the_node(sim: Sim) -> None:
    sim.node("a")
    sim.pod(
        "p",
        labels={"app": "web"},
        topologySpreadConstraints=[
            {
                "maxSkew": 1,
                "topologyKey": "zone",
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": "web"}},
            }
        ],
    )
    sim.run()
    assert "missing required label" in sim.scheduled("p")["message"]  # type: ignore[index]
