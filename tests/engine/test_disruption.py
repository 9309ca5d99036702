"""Disruption end to end on the virtual clock: the real disruption controller and queue with
provisioning, termination, the simulated kube-scheduler and kubelet, and the KWOK
provider (spec disruption §7, §8, §6, §4, §13)."""

from __future__ import annotations

import copy
from typing import Any

from engine_helpers import make_scenario, nodepool, web

from karpenter_core.sim.engine import Simulation


def pool(**disruption: Any) -> dict[str, Any]:
    p = nodepool()
    p["spec"]["disruption"].update(disruption)
    return p


def app_pods(sim: Simulation) -> list[dict[str, Any]]:
    return [
        p
        for p in sim.server.list("pods", "default").items
        if p["metadata"].get("labels", {}).get("app") == "web"
        and not p["metadata"].get("deletionTimestamp")
    ]


def records(sim: Simulation) -> list[Any]:
    return sorted(sim.observer.nodeclaims.values(), key=lambda r: (r.created, r.name))


def drift_the_pool(sim: Simulation) -> None:
    """Change the NodePool template (a label): its hash changes, every NodeClaim drifts."""
    np = sim.server.get("nodepools", "default")
    template = np["spec"]["template"]
    template.setdefault("metadata", {}).setdefault("labels", {})["team"] = "blue"
    sim.server.update(np)


def test_an_empty_node_is_removed_after_consolidate_after() -> None:
    workload = web(3, cpu="500m", scale=[{"at": "5m", "replicas": 0}])
    sim = Simulation(
        make_scenario(
            nodePools=[pool(consolidateAfter="2m", consolidationPolicy="WhenEmpty")],
            workloads=[workload],
        )
    )
    sim.run_until(5 * 60)
    (first,) = records(sim)
    assert first.deleting is None
    sim.run_until(6 * 60 + 50)  # within consolidateAfter of the last pod leaving
    assert first.deleting is None
    data = sim.run(12 * 60).to_json_dict()
    assert first.reason == "empty"
    assert 7 * 60 <= first.deleting <= 8 * 60
    assert data["removalReasons"] == {"empty": 1}
    assert data["metrics"]["karpenter_voluntary_disruption_decisions_total"] == 1
    (decision,) = [d for d in data["decisions"] if d["action"] == "Disrupt"]
    assert decision["nodeClaim"] == first.name
    assert decision["reason"].startswith("Empty: delete")


def test_a_drifted_node_is_replaced_and_its_pods_move_to_the_replacement() -> None:
    sim = Simulation(make_scenario(workloads=[web(3, cpu="500m")]))
    sim.run_until(5 * 60)
    (old,) = records(sim)
    before = {p["metadata"]["name"] for p in app_pods(sim)}
    drift_the_pool(sim)
    sim.run_until(20 * 60)
    assert old.reason == "drifted"
    assert old.gone is not None
    replacements = [r for r in records(sim) if r.name != old.name]
    assert len(replacements) == 1
    (new,) = replacements
    # the old node was deleted only once its replacement had initialised
    assert new.initialized is not None and old.deleting is not None
    assert new.initialized <= old.deleting
    pods = app_pods(sim)
    assert len(pods) == 3
    assert {p["spec"].get("nodeName") for p in pods} == {new.node_name}
    assert before.isdisjoint(p["metadata"]["name"] for p in pods)  # evicted and recreated


def test_budgets_limit_how_many_drifted_nodes_are_disrupted_at_once() -> None:
    big = web(
        4,
        cpu="3",
        podSpec={
            "topologySpreadConstraints": [
                {
                    "maxSkew": 1,
                    "topologyKey": "kubernetes.io/hostname",
                    "whenUnsatisfiable": "DoNotSchedule",
                    "labelSelector": {"matchLabels": {"app": "web"}},
                }
            ]
        },
    )
    sim = Simulation(make_scenario(nodePools=[pool(budgets=[{"nodes": "1"}])], workloads=[big]))
    sim.run_until(5 * 60)
    originals = {r.name for r in records(sim)}
    assert len(originals) == 4
    drift_the_pool(sim)
    most_at_once = 0
    for t in range(5 * 60 + 10, 60 * 60, 10):
        sim.run_until(t)
        tainted = [
            n
            for n in sim.server.list("nodes").items
            if any(x.get("key") == "karpenter.sh/disrupted" for x in n["spec"].get("taints") or [])
        ]
        most_at_once = max(most_at_once, len(tainted))
        if all(sim.observer.nodeclaims[n].gone is not None for n in originals):
            break
    assert most_at_once == 1
    assert all(sim.observer.nodeclaims[n].reason == "drifted" for n in originals)
    assert all(sim.observer.nodeclaims[n].gone is not None for n in originals)
    assert len(app_pods(sim)) == 4


def test_a_do_not_disrupt_pod_keeps_its_drifted_node() -> None:
    guarded = web(2, cpu="500m", annotations={"karpenter.sh/do-not-disrupt": "true"})
    sim = Simulation(make_scenario(workloads=[guarded]))
    sim.run_until(5 * 60)
    (old,) = records(sim)
    drift_the_pool(sim)
    sim.run_until(30 * 60)
    assert old.deleting is None
    assert len(records(sim)) == 1
    blocked = [
        e
        for e in sim.recorder.events
        if e.reason == "DisruptionBlocked" and 'do-not-disrupt" annotation' in e.message
    ]
    assert blocked


def test_an_expired_node_goes_and_its_pods_run_elsewhere() -> None:
    p = nodepool()
    p["spec"]["template"]["spec"]["expireAfter"] = "10m"
    sim = Simulation(make_scenario(nodePools=[copy.deepcopy(p)], workloads=[web(2, cpu="500m")]))
    data = sim.run(25 * 60).to_json_dict()
    first = records(sim)[0]
    assert first.reason == "expired"
    assert first.deleting is not None and 10 * 60 <= first.deleting - first.created <= 11 * 60
    assert data["removalReasons"].get("expired", 0) >= 1
    assert data["pods"]["bound"] == 2 and data["pods"]["pending"] == 0
