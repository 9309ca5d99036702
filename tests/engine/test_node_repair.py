"""Node repair end to end: the real controllers (NodeRepair gate on), the KWOK provider's
repair policies (``Ready`` ``False`` or ``Unknown`` for 10 minutes), the simulated
kube-scheduler, kubelet and workload controllers, on the in-memory cluster and a virtual
clock.

A node "goes NotReady" here the way a machine whose kubelet died does, minus the pod
eviction kube-controller-manager would add: the simulated kubelet stops managing it
(KWOK's annotation is taken off) and its ``Ready`` condition turns ``False``. Its pods stay
bound, so whatever moves them is Karpenter's doing.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from engine_helpers import make_scenario, web

from karpenter_core.runtime.clock import format_time
from karpenter_core.sim.engine import Simulation

REPAIR = {"FEATURE_GATES": "NodeRepair=true"}
TOLERATION = 10 * 60  # KWOK's repair policies
HOSTNAME = "kubernetes.io/hostname"


def app_pods(sim: Simulation) -> list[dict[str, Any]]:
    return [
        p
        for p in sim.server.list("pods", "default").items
        if p["metadata"].get("labels", {}).get("app") == "web"
    ]


def running_on(sim: Simulation) -> dict[str, str]:
    """Live app pods (not terminating) -> the node they are bound to ("" when pending)."""
    return {
        p["metadata"]["name"]: p["spec"].get("nodeName", "")
        for p in app_pods(sim)
        if not p["metadata"].get("deletionTimestamp")
    }


def node_names(sim: Simulation) -> set[str]:
    return {n["metadata"]["name"] for n in sim.server.list("nodes").items}


def nodeclaim_of(sim: Simulation, node_name: str) -> dict[str, Any]:
    pid = sim.server.get("nodes", node_name)["spec"]["providerID"]
    (nc,) = [
        nc
        for nc in sim.server.list("nodeclaims").items
        if nc.get("status", {}).get("providerID") == pid
    ]
    return nc


def set_ready(sim: Simulation, node_name: str, status: str) -> None:
    """Turn the node's Ready condition to ``status``; while it is not True the simulated
    kubelet leaves the node alone (as a dead kubelet would), afterwards it manages it
    again."""
    key, value = sim.provider.simulated_node_annotation
    annotations: dict[str, Any] = {key: None if status != "True" else value}
    sim.server.patch("nodes", node_name, {"metadata": {"annotations": annotations}})
    node = sim.server.get("nodes", node_name)
    conditions = [c for c in node["status"].get("conditions", ()) if c["type"] != "Ready"]
    conditions.append(
        {
            "type": "Ready",
            "status": status,
            "reason": "KubeletReady" if status == "True" else "KubeletNotReady",
            "message": "test",
            "lastTransitionTime": format_time(sim.clock.now()),
        }
    )
    node["status"]["conditions"] = conditions
    sim.server.update_status(node)


def repaired(sim: Simulation) -> int:
    return int(sim.report().to_json_dict()["removalReasons"].get("unhealthy", 0))


def one_pod_per_node(replicas: int) -> dict[str, Any]:
    """A Deployment whose pods each need a node of their own (hostname anti-affinity)."""
    return web(
        replicas,
        cpu="500m",
        podSpec={
            "affinity": {
                "podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": HOSTNAME}
                    ]
                }
            }
        },
    )


def settled(sim: Simulation, at: float, pods: int) -> set[str]:
    """Run to ``at`` and return the nodes, checking every pod is bound."""
    sim.run_until(at)
    placed = running_on(sim)
    assert len(placed) == pods and all(placed.values()), placed
    return node_names(sim)


def blocked_events(sim: Simulation) -> Iterable[Any]:
    return [e for e in sim.recorder.events if e.reason == "NodeRepairBlocked"]


def test_a_node_not_ready_past_the_toleration_is_replaced_and_its_pods_move() -> None:
    sim = Simulation(make_scenario(workloads=[web(4, cpu="500m")], options=REPAIR))
    (failed,) = settled(sim, 120, 4)
    failed_nodeclaim = nodeclaim_of(sim, failed)["metadata"]["name"]
    set_ready(sim, failed, "False")
    went_down = 120

    sim.run_until(went_down + TOLERATION - 1)
    assert failed in node_names(sim)
    assert not nodeclaim_of(sim, failed)["metadata"].get("deletionTimestamp")
    assert set(running_on(sim).values()) == {failed}  # nothing moved the pods yet

    sim.run_until(went_down + TOLERATION + 5 * 60)
    assert failed not in node_names(sim)
    assert failed_nodeclaim not in {
        nc["metadata"]["name"] for nc in sim.server.list("nodeclaims").items
    }
    placed = running_on(sim)
    assert len(placed) == 4 and all(placed.values())
    assert failed not in placed.values()
    assert repaired(sim) == 1


def test_a_node_not_ready_for_less_than_the_toleration_is_left_alone() -> None:
    sim = Simulation(make_scenario(workloads=[web(4, cpu="500m")], options=REPAIR))
    nodes = settled(sim, 120, 4)
    (flapping,) = nodes
    before = running_on(sim)
    set_ready(sim, flapping, "False")
    sim.run_until(120 + TOLERATION - 60)
    set_ready(sim, flapping, "True")

    sim.run_until(120 + 3 * TOLERATION)
    assert node_names(sim) == nodes
    assert not nodeclaim_of(sim, flapping)["metadata"].get("deletionTimestamp")
    assert running_on(sim) == before
    assert repaired(sim) == 0


def test_three_of_five_nodes_unhealthy_blocks_repair_in_the_nodepool() -> None:
    sim = Simulation(make_scenario(workloads=[one_pod_per_node(5)], options=REPAIR))
    nodes = settled(sim, 180, 5)
    assert len(nodes) == 5
    down = sorted(nodes)[:3]
    for name in down:
        set_ready(sim, name, "False")

    sim.run_until(180 + 3 * TOLERATION)
    assert node_names(sim) == nodes
    assert not any(
        nc["metadata"].get("deletionTimestamp") for nc in sim.server.list("nodeclaims").items
    )
    assert repaired(sim) == 0
    blocked = {e.name for e in blocked_events(sim) if e.kind == "Node"}
    assert blocked == set(down)


def test_with_the_gate_off_nothing_is_repaired() -> None:
    sim = Simulation(make_scenario(workloads=[web(4, cpu="500m")]))
    (failed,) = settled(sim, 120, 4)
    set_ready(sim, failed, "False")
    sim.run_until(120 + 3 * TOLERATION)
    assert failed in node_names(sim)
    assert not nodeclaim_of(sim, failed)["metadata"].get("deletionTimestamp")
    assert repaired(sim) == 0
