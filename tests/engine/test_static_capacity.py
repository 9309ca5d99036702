"""Static NodePools end to end: the real controllers (``StaticCapacity`` gate on), the KWOK
provider, the simulated kube-scheduler and kubelet, on the in-memory cluster and a virtual
clock (spec operator-and-lifecycle §3.9 and §6, disruption §8 StaticDrift).

Every test steps the clock a second at a time and checks on each step that the pool never
had more NodeClaims than it may: a static pool that overshoots and then trims back would
pass an end-state check.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from engine_helpers import make_scenario, nodepool, web

from karpenter_core.sim.engine import Simulation

GATE_ON = {"FEATURE_GATES": "StaticCapacity=true"}
NODEPOOL_LABEL = "karpenter.sh/nodepool"
HOSTNAME = "kubernetes.io/hostname"


def static_pool(
    replicas: int,
    *,
    name: str = "static",
    limits: dict[str, str] | None = None,
    budgets: list[dict[str, str]] | None = None,
) -> dict[str, Any]:
    pool = nodepool()
    pool["metadata"]["name"] = name
    pool["spec"]["replicas"] = replicas
    pool["spec"]["disruption"] = {"budgets": budgets or [{"nodes": "100%"}]}
    if limits is not None:
        pool["spec"]["limits"] = limits
    return pool


def nodeclaims(sim: Simulation, pool: str = "static") -> list[dict[str, Any]]:
    return [
        nc
        for nc in sim.server.list("nodeclaims").items
        if nc["metadata"].get("labels", {}).get(NODEPOOL_LABEL) == pool
    ]


def live(sim: Simulation, pool: str = "static") -> list[dict[str, Any]]:
    return [nc for nc in nodeclaims(sim, pool) if not nc["metadata"].get("deletionTimestamp")]


def nodes(sim: Simulation, pool: str = "static") -> list[dict[str, Any]]:
    return [
        n
        for n in sim.server.list("nodes").items
        if n["metadata"].get("labels", {}).get(NODEPOOL_LABEL) == pool
    ]


def ready_nodes(sim: Simulation, pool: str = "static") -> list[dict[str, Any]]:
    return [
        n
        for n in nodes(sim, pool)
        if not n["metadata"].get("deletionTimestamp")
        and any(
            c["type"] == "Ready" and c["status"] == "True"
            for c in n.get("status", {}).get("conditions", ())
        )
    ]


class Watcher:
    """Runs the simulation, recording each time virtual time moves the most NodeClaims the
    pool had at once (deleting ones included) and the most live ones."""

    def __init__(self, sim: Simulation, pool: str = "static") -> None:
        self.sim = sim
        self.pool = pool
        self.most = 0
        self.most_live = 0

    def run_until(self, until: float, check: Callable[[], None] | None = None) -> None:
        def sample() -> bool:
            self.most = max(self.most, len(nodeclaims(self.sim, self.pool)))
            self.most_live = max(self.most_live, len(live(self.sim, self.pool)))
            if check is not None:
                check()
            return False

        self.sim.run_until(until, stop_when=sample)
        sample()


def set_replicas(sim: Simulation, replicas: int, pool: str = "static") -> None:
    sim.server.patch("nodepools", pool, {"spec": {"replicas": replicas}})


def test_gate_off_a_static_pool_launches_nothing() -> None:
    sim = Simulation(make_scenario(nodePools=[static_pool(3)]))
    sim.run_until(300)
    assert nodeclaims(sim) == []
    assert "static" in {name for name, _ in sim.registration.skipped}


def test_static_pool_launches_its_replicas_and_follows_10_to_15() -> None:
    sim = Simulation(make_scenario(nodePools=[static_pool(10)], options=GATE_ON))
    w = Watcher(sim)
    w.run_until(120)
    assert len(ready_nodes(sim)) == 10
    assert w.most == 10  # never more, not even briefly
    set_replicas(sim, 15)
    w.run_until(240)
    assert len(ready_nodes(sim)) == 15
    assert w.most == 15


def test_static_claims_are_the_bare_template_and_kwok_picks_the_type() -> None:
    sim = Simulation(make_scenario(nodePools=[static_pool(2)], options=GATE_ON))
    sim.run_until(60)
    for nc in live(sim):
        keys = {r["key"] for r in nc["spec"]["requirements"]}
        assert "node.kubernetes.io/instance-type" not in keys
    pool_reqs = {r["key"]: r for r in static_pool(2)["spec"]["template"]["spec"]["requirements"]}
    allowed_sizes = int(pool_reqs["karpenter.kwok.sh/instance-size"]["values"][0])
    for n in ready_nodes(sim):
        labels = n["metadata"]["labels"]
        assert labels["node.kubernetes.io/instance-type"]
        assert labels["karpenter.sh/capacity-type"] == "on-demand"
        assert int(labels["karpenter.kwok.sh/instance-size"]) < allowed_sizes
    # the report says why they were made: replicas, not pending pods
    created = [d for d in sim.report().to_json_dict()["decisions"] if d["action"] == "Launch"]
    assert len(created) == 2
    assert all(d["reason"].startswith("a replica of static NodePool static: ") for d in created)


def test_node_limit_caps_the_pool() -> None:
    sim = Simulation(
        make_scenario(nodePools=[static_pool(10, limits={"nodes": "5"})], options=GATE_ON)
    )
    w = Watcher(sim)
    w.run_until(300)
    assert len(ready_nodes(sim)) == 5
    assert w.most == 5


def test_scale_to_zero_removes_every_node() -> None:
    sim = Simulation(make_scenario(nodePools=[static_pool(4)], options=GATE_ON))
    sim.run_until(120)
    assert len(ready_nodes(sim)) == 4
    set_replicas(sim, 0)
    sim.run_until(600)
    assert nodes(sim) == []
    assert nodeclaims(sim) == []


def test_a_deleted_node_is_replaced() -> None:
    sim = Simulation(make_scenario(nodePools=[static_pool(3)], options=GATE_ON))
    w = Watcher(sim)
    w.run_until(120)
    victim = live(sim)[0]["metadata"]["name"]
    sim.server.delete("nodeclaims", victim)
    w.run_until(300)
    names = {nc["metadata"]["name"] for nc in live(sim)}
    assert victim not in names and len(names) == 3
    assert len(ready_nodes(sim)) == 3
    assert w.most_live == 3


def one_per_node(name: str, **pod_spec: Any) -> dict[str, Any]:
    """One pod of its own Deployment, on a node no other such pod shares."""
    spec: dict[str, Any] = {
        "affinity": {
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": {"matchLabels": {"spread": "one"}}, "topologyKey": HOSTNAME}
                ]
            }
        },
        **pod_spec,
    }
    w = web(1, cpu="100m", podSpec=spec, labels={"spread": "one"})
    w["deployment"] = name
    return w


def node_of(sim: Simulation, app: str) -> str:
    (pod,) = [
        p
        for p in sim.server.list("pods", "default").items
        if p["metadata"].get("labels", {}).get("app") == app
        and not p["metadata"].get("deletionTimestamp")
    ]
    return str(pod["spec"].get("nodeName") or "")


def test_scale_down_order_empty_then_cheapest_then_do_not_disrupt() -> None:
    workloads = [
        one_per_node("protected"),
        one_per_node("cheap"),
        one_per_node("dear", priority=100_000_000),
    ]
    workloads[0]["annotations"] = {"karpenter.sh/do-not-disrupt": "true"}
    sim = Simulation(
        make_scenario(nodePools=[static_pool(4)], workloads=workloads, options=GATE_ON)
    )
    sim.run_until(180)
    placed = {app: node_of(sim, app) for app in ("protected", "cheap", "dear")}
    assert all(placed.values()) and len(set(placed.values())) == 3
    all_nodes = {n["metadata"]["name"] for n in ready_nodes(sim)}
    (empty,) = all_nodes - set(placed.values())

    def survivors() -> set[str]:
        return {
            n["metadata"]["name"] for n in nodes(sim) if not n["metadata"].get("deletionTimestamp")
        }

    set_replicas(sim, 3)
    sim.run_until(300)
    assert survivors() == {placed["protected"], placed["cheap"], placed["dear"]}
    set_replicas(sim, 2)
    sim.run_until(420)
    assert survivors() == {placed["protected"], placed["dear"]}
    set_replicas(sim, 1)
    sim.run_until(540)
    assert survivors() == {placed["protected"]}
    assert node_of(sim, "protected") == placed["protected"]
    assert empty not in survivors()


def drifted_template(sim: Simulation) -> None:
    """Change a template label: the pool's hash moves and every node drifts."""
    np = sim.server.get("nodepools", "static")
    template = copy.deepcopy(np["spec"]["template"])
    template.setdefault("metadata", {}).setdefault("labels", {})["generation"] = "2"
    sim.server.patch("nodepools", "static", {"spec": {"template": template}})


def test_drift_replaces_two_at_a_time_within_the_node_limit() -> None:
    pool = static_pool(4, limits={"nodes": "6"}, budgets=[{"nodes": "2"}])
    sim = Simulation(make_scenario(nodePools=[pool], options=GATE_ON))
    w = Watcher(sim)
    w.run_until(120)
    old = {nc["metadata"]["name"] for nc in live(sim)}
    assert len(old) == 4
    drifted_template(sim)
    w.run_until(600)
    assert sim.halted is None
    renewed = live(sim)
    assert len(renewed) == 4
    assert not old & {nc["metadata"]["name"] for nc in renewed}
    assert all(nc["metadata"]["labels"].get("generation") == "2" for nc in renewed)
    assert w.most <= 6
    assert w.most == 6  # the limit allowed two replacements at once, and they happened


def test_drift_headroom_of_one_replaces_one_at_a_time() -> None:
    pool = static_pool(4, limits={"nodes": "5"}, budgets=[{"nodes": "2"}])
    sim = Simulation(make_scenario(nodePools=[pool], options=GATE_ON))
    w = Watcher(sim)
    w.run_until(120)
    old = {nc["metadata"]["name"] for nc in live(sim)}
    drifted_template(sim)
    w.run_until(600)
    assert sim.halted is None
    renewed = live(sim)
    assert len(renewed) == 4 and not old & {nc["metadata"]["name"] for nc in renewed}
    assert w.most == 5


def test_dynamic_pool_complements_the_static_one() -> None:
    dynamic = nodepool()
    dynamic["metadata"]["name"] = "dynamic"
    dynamic["spec"]["disruption"]["consolidateAfter"] = "0s"
    sim = Simulation(
        make_scenario(
            nodePools=[static_pool(2), dynamic],
            workloads=[web(12, cpu="500m")],
            options=GATE_ON,
        )
    )
    w = Watcher(sim)
    w.run_until(300)
    pods = [
        p
        for p in sim.server.list("pods", "default").items
        if p["metadata"]["labels"].get("app") == "web"
    ]
    assert len(pods) == 12 and all(p["spec"].get("nodeName") for p in pods)
    static_names = {n["metadata"]["name"] for n in ready_nodes(sim)}
    assert len(static_names) == 2
    assert ready_nodes(sim, "dynamic")  # the pods outgrew the static pool
    on_static = [p for p in pods if p["spec"]["nodeName"] in static_names]
    assert on_static  # the static nodes run pods too
    assert w.most == 2
    # consolidation of the dynamic pool never takes a static node
    sim.server.patch("deployments", "web", {"spec": {"replicas": 0}}, "default")
    w.run_until(900)
    assert {n["metadata"]["name"] for n in ready_nodes(sim)} == static_names
