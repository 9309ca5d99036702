"""Consolidation end to end: the real controllers (provisioner, disruption controller and
queue, termination), the simulated kube-scheduler and kubelet and the KWOK catalogue, on
the in-memory cluster and a virtual clock (spec disruption §9, §17 scenarios 19, 24, 26,
27, 33).

Each scenario places pods deliberately: pods created together share a node, a pod
created later that does not fit opens a new one. Big "filler" pods are deleted at 10
minutes, leaving underused nodes for consolidation to act on. Workloads are one-replica
Deployments, so an evicted pod is recreated and scheduled again, as in a real cluster.

KWOK prices are linear in vCPU and memory, so merging nodes of one type never saves; the
savings come from smaller types.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from engine_helpers import make_scenario, nodepool

from karpenter_core import metrics
from karpenter_core.sim.engine import Simulation

INSTANCE_TYPE = "node.kubernetes.io/instance-type"
FILLER_GONE = 600  # seconds: when the filler pods are deleted
END = 1500


@pytest.fixture(autouse=True)
def fresh_metrics() -> Iterator[None]:
    """Decision counters are process-wide: each scenario reads its own."""
    metrics.reset()
    yield


def pool(
    *,
    capacity_types: tuple[str, ...] = ("on-demand",),
    instance_types: tuple[str, ...] | None = (
        "c-1x-amd64-linux",
        "c-2x-amd64-linux",
        "c-4x-amd64-linux",
        "c-8x-amd64-linux",
    ),
    policy: str = "WhenEmptyOrUnderutilized",
) -> dict[str, Any]:
    p = nodepool(capacity_types)
    # upstream's test fixture: consolidate at once, no budget in the way (the default 10%
    # of two nodes would allow only one at a time, which rules out multi-node moves)
    p["spec"]["disruption"] = {
        "consolidationPolicy": policy,
        "consolidateAfter": "0s",
        "budgets": [{"nodes": "100%"}],
    }
    if instance_types is not None:
        p["spec"]["template"]["spec"]["requirements"].append(
            {"key": INSTANCE_TYPE, "operator": "In", "values": list(instance_types)}
        )
    return p


def deployment(name: str, cpu: str, *, at: int = 0, delete_at: int | None = None) -> dict[str, Any]:
    d: dict[str, Any] = {
        "deployment": name,
        "replicas": 1,
        "requests": {"cpu": cpu, "memory": "100Mi"},
        "at": at,
    }
    if delete_at is not None:
        d["deleteAt"] = delete_at
    return d


def nodes(sim: Simulation) -> list[dict[str, Any]]:
    return list(sim.server.list("nodes").items)


def node_types(sim: Simulation) -> list[str]:
    return sorted(n["metadata"]["labels"][INSTANCE_TYPE] for n in nodes(sim))


def running(sim: Simulation) -> dict[str, str]:
    """Deployment name -> the node its live pod is bound to."""
    out = {}
    for p in sim.server.list("pods", "default").items:
        if p["metadata"].get("deletionTimestamp") or not p["spec"].get("nodeName"):
            continue
        if p.get("status", {}).get("phase") != "Running":
            continue
        out[p["metadata"]["labels"]["app"]] = p["spec"]["nodeName"]
    return out


def decisions(report: Any, action: str) -> list[str]:
    return [d["reason"] for d in report.to_json_dict()["decisions"] if d["action"] == action]


def events(report: Any, reason: str) -> list[str]:
    """The messages of the controllers' events with this reason (the report's events)."""
    return [e["message"] for e in report.to_json_dict()["events"] if e["reason"] == reason]


def underutilized(decision: str) -> float:
    total = 0.0
    for kind in ("single", "multi"):
        total += (
            metrics.sample(
                "karpenter_voluntary_disruption_decisions_total",
                {"decision": decision, "reason": "underutilized", "consolidation_type": kind},
            )
            or 0.0
        )
    return total


def test_an_underused_nodes_pods_move_elsewhere_and_the_node_is_deleted() -> None:
    # A holds filler + c (0.5 CPU); b (1 CPU) arrives later and opens B. With the filler
    # gone, A and B are both underused and either's pod fits on the other.
    sim = Simulation(
        make_scenario(
            nodePools=[pool(instance_types=("c-4x-amd64-linux",))],
            workloads=[
                deployment("filler", "3", delete_at=FILLER_GONE),
                deployment("c", "500m"),
                deployment("b", "1", at=120),
            ],
        )
    )
    sim.run_until(FILLER_GONE - 10)
    assert len(nodes(sim)) == 2
    report = sim.run(END)
    assert len(nodes(sim)) == 1
    (survivor,) = (n["metadata"]["name"] for n in nodes(sim))
    assert running(sim) == {"b": survivor, "c": survivor}
    assert underutilized("delete") == 1.0
    assert underutilized("replace") == 0.0
    assert len(decisions(report, "Launch")) == 2


def test_two_underused_nodes_are_replaced_by_one_cheaper_node() -> None:
    # Two c-4x nodes each keep a 0.8 CPU pod: both fit one c-2x, which costs a quarter.
    sim = Simulation(
        make_scenario(
            nodePools=[pool()],
            workloads=[
                deployment("filler1", "3", delete_at=FILLER_GONE),
                deployment("s1", "800m"),
                deployment("filler2", "3", at=120, delete_at=FILLER_GONE),
                deployment("s2", "800m", at=120),
            ],
        )
    )
    sim.run_until(FILLER_GONE - 10)
    assert node_types(sim) == ["c-4x-amd64-linux", "c-4x-amd64-linux"]
    sim.run(END)
    assert node_types(sim) == ["c-2x-amd64-linux"]
    (survivor,) = (n["metadata"]["name"] for n in nodes(sim))
    assert running(sim) == {"s1": survivor, "s2": survivor}
    assert (
        metrics.sample(
            "karpenter_voluntary_disruption_decisions_total",
            {"decision": "replace", "reason": "underutilized", "consolidation_type": "multi"},
        )
        == 1.0
    )


def test_a_node_with_a_cheaper_instance_type_for_its_pods_is_replaced() -> None:
    sim = Simulation(
        make_scenario(
            nodePools=[pool()],
            workloads=[
                deployment("filler", "3", delete_at=FILLER_GONE),
                deployment("small", "500m"),
            ],
        )
    )
    sim.run_until(FILLER_GONE - 10)
    assert node_types(sim) == ["c-4x-amd64-linux"]
    report = sim.run(END)
    assert node_types(sim) == ["c-1x-amd64-linux"]
    (survivor,) = (n["metadata"]["name"] for n in nodes(sim))
    assert running(sim) == {"small": survivor}
    assert (
        metrics.sample(
            "karpenter_voluntary_disruption_decisions_total",
            {"decision": "replace", "reason": "underutilized", "consolidation_type": "single"},
        )
        == 1.0
    )
    # one decision: replace the old NodeClaim with the one that launched before the old
    # one was deleted
    data = report.to_json_dict()
    (disrupt,) = [d for d in data["decisions"] if d["action"] == "Disrupt"]
    assert disrupt["decision"] == "replace"
    (replacement,) = disrupt["replacements"]
    nodes_by_name = {n["name"]: n for n in data["nodes"]}
    assert nodes_by_name[replacement]["instanceType"] == "c-1x-amd64-linux"
    assert f"{replacement} c-1x-amd64-linux (" in disrupt["reason"]
    (old,) = disrupt["candidates"]
    assert nodes_by_name[replacement]["launched"] < nodes_by_name[old]["removed"]
    assert replacement not in {d.get("nodeClaim") for d in data["decisions"]}


def spot_scenario(gate: bool) -> Simulation:
    # A spot c-8x keeps a 0.5 CPU pod. Linux types of both architectures whose spot price
    # is below a c-8x's: the 1x, 2x and 4x sizes of the c, s and m families, 18 in all.
    return Simulation(
        make_scenario(
            nodePools=[pool(capacity_types=("spot",), instance_types=None)],
            workloads=[
                deployment("filler", "7", delete_at=FILLER_GONE),
                deployment("small", "500m"),
            ],
            options={"FEATURE_GATES": f"SpotToSpotConsolidation={str(gate).lower()}"},
        )
    )


def test_spot_to_spot_consolidation_needs_the_feature_gate() -> None:
    sim = spot_scenario(gate=False)
    sim.run_until(FILLER_GONE - 10)
    (before,) = node_types(sim)
    assert before.startswith("c-8x-")
    report = sim.run(END)
    assert node_types(sim) == [before]
    assert (
        "SpotToSpotConsolidation is disabled, can't replace a spot node with a spot node"
        in events(report, "Unconsolidatable")
    )
    assert underutilized("replace") == 0.0


def test_spot_to_spot_consolidation_launches_with_the_cheapest_fifteen_types() -> None:
    sim = spot_scenario(gate=True)
    sim.run_until(FILLER_GONE - 10)
    (before,) = node_types(sim)
    sim.run(END)
    (after,) = node_types(sim)
    assert after != before
    (nodeclaim,) = sim.server.list("nodeclaims").items
    (types,) = (r["values"] for r in nodeclaim["spec"]["requirements"] if r["key"] == INSTANCE_TYPE)
    assert len(types) == 15
    assert after in types
    capacity = next(
        r["values"]
        for r in nodeclaim["spec"]["requirements"]
        if r["key"] == "karpenter.sh/capacity-type"
    )
    assert capacity == ["spot"]


def test_when_empty_never_consolidates_a_node_that_still_has_pods() -> None:
    sim = Simulation(
        make_scenario(
            nodePools=[pool(policy="WhenEmpty")],
            workloads=[
                deployment("filler", "3", delete_at=FILLER_GONE),
                deployment("small", "500m"),
            ],
        )
    )
    report = sim.run(END)
    assert node_types(sim) == ["c-4x-amd64-linux"]
    assert underutilized("replace") == 0.0 and underutilized("delete") == 0.0
    assert 'NodePool "default" has consolidation policy WhenEmpty, but node is not empty' in events(
        report, "Unconsolidatable"
    )
