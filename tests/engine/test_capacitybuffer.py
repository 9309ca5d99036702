"""CapacityBuffers in the engine: the KWOK provider, the real controllers, a virtual clock.

A buffer keeps room for pods that do not exist yet, so a real scale-up lands at once on
capacity Karpenter already launched, and the buffer is refilled afterwards. Nodes that hold
only buffer capacity are not emptied, until the buffer goes. With the gate off the same
scale-up waits for a launch.
"""

from __future__ import annotations

from typing import Any

from engine_helpers import make_scenario, nodepool, web

from karpenter_core.sim.engine import Simulation

SCALE_AT = 300.0
BUFFER = 4


def gate(on: bool) -> dict[str, str]:
    return {"FEATURE_GATES": f"CapacityBuffer={'true' if on else 'false'}"}


def deployment_buffer(replicas: int) -> dict[str, Any]:
    return {
        "apiVersion": "autoscaling.x-k8s.io/v1beta1",
        "kind": "CapacityBuffer",
        "metadata": {"name": "spare", "namespace": "default"},
        "spec": {
            "scalableRef": {"apiGroup": "apps", "kind": "Deployment", "name": "web"},
            "replicas": replicas,
        },
    }


def template_buffer(replicas: int) -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": "v1",
            "kind": "PodTemplate",
            "metadata": {"name": "spare", "namespace": "default"},
            "template": {
                "metadata": {"labels": {"app": "spare"}},
                "spec": {
                    "containers": [
                        {
                            "name": "c",
                            "image": "i",
                            "resources": {"requests": {"cpu": "1", "memory": "1Gi"}},
                        }
                    ]
                },
            },
        },
        {
            "apiVersion": "autoscaling.x-k8s.io/v1beta1",
            "kind": "CapacityBuffer",
            "metadata": {"name": "spare", "namespace": "default"},
            "spec": {"podTemplateRef": {"name": "spare"}, "replicas": replicas},
        },
    ]


def names(sim: Simulation, resource: str) -> set[str]:
    return {o["metadata"]["name"] for o in sim.server.list(resource).items}


def web_pod_nodes(sim: Simulation) -> list[str | None]:
    return [
        p["spec"].get("nodeName")
        for p in sim.server.list("pods", "default").items
        if p["metadata"]["name"].startswith("web-")
    ]


def condition(sim: Simulation, type_: str) -> dict[str, Any]:
    cb = sim.server.get("capacitybuffers", "spare", "default")
    [cond] = [c for c in cb["status"]["conditions"] if c["type"] == type_]
    return dict(cond)


def scale_up(gate_on: bool) -> tuple[Simulation, set[str]]:
    """web: 2 pods of 1 CPU, scaled to 2 + BUFFER at SCALE_AT; a buffer of BUFFER such
    pods when the gate is on. Returns the simulation just after the scale-up and the nodes
    that existed just before it."""
    sim = Simulation(
        make_scenario(
            workloads=[web(2, cpu="1", memory="1Gi", scale=[{"at": SCALE_AT, "replicas": 6}])],
            objects=[deployment_buffer(BUFFER)],
            options=gate(gate_on),
        )
    )
    sim.run_until(SCALE_AT - 1)
    before = names(sim, "nodes")
    sim.run_until(SCALE_AT + 10)
    return sim, before


def test_a_buffer_lets_a_scale_up_land_without_a_new_launch() -> None:
    sim, before = scale_up(gate_on=True)
    assert condition(sim, "Provisioning")["reason"] in {
        "FitsExistingCapacity",
        "RequiresNewCapacity",  # the refill may already be under way
    }
    nodes = web_pod_nodes(sim)
    assert len(nodes) == 2 + BUFFER
    # Every pod, the new ones included, runs 10 s after the scale-up on a node that was
    # already there: the buffer's spare room.
    assert all(n in before for n in nodes), (nodes, before)


def test_without_the_gate_the_same_scale_up_needs_a_new_node() -> None:
    sim, before = scale_up(gate_on=False)
    assert "status" not in sim.server.get("capacitybuffers", "spare", "default")
    assert any(n not in before for n in web_pod_nodes(sim))


def test_consumed_buffer_capacity_is_refilled() -> None:
    sim, before = scale_up(gate_on=True)
    sim.run_until(SCALE_AT + 120)
    assert names(sim, "nodes") - before  # a launch after the scale-up: the new buffer room
    cond = condition(sim, "Provisioning")
    assert (cond["status"], cond["reason"]) == ("True", "FitsExistingCapacity")
    assert cond["message"] == f"All {BUFFER} virtual pods fit on existing capacity"


def test_a_node_holding_only_buffer_capacity_is_not_emptied_until_the_buffer_goes() -> None:
    pool = nodepool()
    pool["spec"]["disruption"] = {
        "consolidationPolicy": "WhenEmptyOrUnderutilized",
        "consolidateAfter": "0s",
    }
    sim = Simulation(
        make_scenario(nodePools=[pool], objects=template_buffer(3), options=gate(True))
    )
    sim.run_until(60)
    launched = names(sim, "nodeclaims")
    assert len(launched) == 1
    sim.run_until(600)
    assert names(sim, "nodeclaims") == launched  # no emptiness, no churn
    cond = condition(sim, "Provisioning")
    assert (cond["status"], cond["reason"]) == ("True", "FitsExistingCapacity")
    sim.server.delete("capacitybuffers", "spare", "default")
    sim.run_until(900)
    assert names(sim, "nodeclaims") == set()
