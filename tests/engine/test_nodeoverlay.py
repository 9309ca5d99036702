"""NodeOverlays in the engine: the KWOK provider, the real controllers and a virtual clock.

KWOK launches the type whose *own* price is cheapest among a NodeClaim's options (as
upstream's KWOK does), so a price overlay changes what runs through Karpenter's decisions:
consolidation sees the overlaid price of a running node and replaces it with something that
is cheaper by Karpenter's reckoning. A capacity overlay changes what can be launched at all.
With the ``NodeOverlay`` gate off, overlays change nothing.
"""

from __future__ import annotations

import copy
from typing import Any

from engine_helpers import make_scenario, nodepool, web

from karpenter_core.sim.engine import Simulation

INSTANCE_TYPE = "node.kubernetes.io/instance-type"
FUSE = "smarter-devices/fuse"


def gate(on: bool) -> dict[str, str]:
    return {"FEATURE_GATES": f"NodeOverlay={'true' if on else 'false'}"}


def consolidating_pool() -> dict[str, Any]:
    pool = nodepool()
    # linux, on-demand, any size; consolidate at once
    spec = pool["spec"]["template"]["spec"]
    spec["requirements"] = [
        r for r in spec["requirements"] if r["key"] != "karpenter.kwok.sh/instance-size"
    ]
    pool["spec"]["disruption"]["consolidateAfter"] = "0s"
    return pool


def overlay(name: str, requirements: list[dict[str, Any]], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.sh/v1alpha1",
        "kind": "NodeOverlay",
        "metadata": {"name": name},
        "spec": {"requirements": requirements, **spec},
    }


def running_types(sim: Simulation) -> list[str]:
    return sorted(
        nc["metadata"]["labels"][INSTANCE_TYPE]
        for nc in sim.server.list("nodeclaims").items
        if not nc["metadata"].get("deletionTimestamp")
    )


def launched(sim: Simulation, report: Any) -> list[str]:
    """The instance types launched, in order (replacements included)."""
    return [n["instanceType"] for n in report.to_json_dict()["nodes"] if n["launched"] is not None]


def run(
    overlays: list[dict[str, Any]], gate_on: bool, until: float = 1800
) -> tuple[Simulation, Any]:
    sim = Simulation(
        make_scenario(
            nodePools=[consolidating_pool()],
            workloads=[web(1, cpu="100m", memory="128Mi")],
            nodeOverlays=copy.deepcopy(overlays),
            options=gate(gate_on),
        )
    )
    return sim, sim.run(until)


def test_a_price_overlay_changes_which_instance_type_ends_up_launched() -> None:
    base_sim, base_report = run([], gate_on=True)
    (cheapest,) = running_types(base_sim)
    assert launched(base_sim, base_report) == [cheapest]  # nothing to consolidate

    pricey = overlay(
        "pricey",
        [{"key": INSTANCE_TYPE, "operator": "In", "values": [cheapest]}],
        priceAdjustment="+1000",
    )
    sim, report = run([pricey], gate_on=True)
    status = sim.server.get("nodeoverlays", "pricey")["status"]
    assert {c["type"]: c["status"] for c in status["conditions"]}["ValidationSucceeded"] == "True"
    launches = launched(sim, report)
    # KWOK still launches by its own prices first; Karpenter then sees that node at the
    # overlaid price and replaces it with a type that is cheaper by its reckoning
    assert launches[0] == cheapest
    assert len(launches) == 2 and launches[1] != cheapest
    assert running_types(sim) == [launches[1]]


def test_with_the_gate_off_a_price_overlay_changes_nothing() -> None:
    base_sim, _ = run([], gate_on=False)
    (cheapest,) = running_types(base_sim)
    pricey = overlay(
        "pricey",
        [{"key": INSTANCE_TYPE, "operator": "In", "values": [cheapest]}],
        priceAdjustment="+1000",
    )
    sim, report = run([pricey], gate_on=False)
    assert launched(sim, report) == [cheapest]
    assert running_types(sim) == [cheapest]
    assert "status" not in sim.server.get("nodeoverlays", "pricey")
    assert any("NodeOverlay feature gate is off" in n for n in report.to_json_dict()["notes"])


def _fuse_scenario(gate_on: bool) -> tuple[Simulation, Any]:
    fuse = overlay(
        "fuse",
        [{"key": "karpenter.kwok.sh/instance-family", "operator": "In", "values": ["m"]}],
        capacity={FUSE: "4"},
    )
    w = web(2, cpu="500m", memory="512Mi")
    w["requests"][FUSE] = "1"
    sim = Simulation(make_scenario(workloads=[w], nodeOverlays=[fuse], options=gate(gate_on)))
    return sim, sim.run(300)


def test_a_capacity_overlay_lets_pods_asking_for_an_extended_resource_launch() -> None:
    sim, report = _fuse_scenario(gate_on=True)
    launches = launched(sim, report)
    assert launches and all(t.startswith("m-") for t in launches)
    assert report.to_json_dict()["pods"]["pending"] == 0


def test_with_the_gate_off_a_capacity_overlay_launches_nothing() -> None:
    sim, report = _fuse_scenario(gate_on=False)
    assert launched(sim, report) == []
    assert report.to_json_dict()["pods"]["pending"] == 2
