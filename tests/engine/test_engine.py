"""The engine end to end: the real controllers, simulated kube-scheduler and kubelet, the
KWOK provider and the workload controllers, on the in-memory cluster and a virtual clock."""

from __future__ import annotations

import json
from typing import Any

import pytest
from engine_helpers import make_scenario, nodepool, web

from karpenter_core.runtime.reconciler import Result
from karpenter_core.sim.engine import Simulation, SimulationError
from karpenter_core.sim.report import CAPACITY_TYPE_LABEL


def conditions(obj: dict[str, Any]) -> dict[str, str]:
    return {c["type"]: c["status"] for c in obj.get("status", {}).get("conditions", ())}


def app_pods(sim: Simulation) -> list[dict[str, Any]]:
    return [
        p
        for p in sim.server.list("pods", "default").items
        if p["metadata"].get("labels", {}).get("app") == "web"
    ]


def test_pending_pods_become_nodeclaims_nodes_and_bound_pods() -> None:
    sim = Simulation(make_scenario(workloads=[web(5)]))
    report = sim.run(300)
    nodeclaims = sim.server.list("nodeclaims").items
    nodes = {n["metadata"]["name"] for n in sim.server.list("nodes").items}
    assert nodeclaims
    for nc in nodeclaims:
        assert conditions(nc)["Launched"] == "True"
        assert conditions(nc)["Registered"] == "True"
        assert conditions(nc)["Initialized"] == "True"
        assert nc["status"]["nodeName"] in nodes
    pods = app_pods(sim)
    assert len(pods) == 5
    assert all(p["spec"].get("nodeName") in nodes for p in pods)
    data = report.to_json_dict()
    assert data["nodesLaunched"] == len(nodeclaims)
    assert data["pods"]["bound"] == 5 and data["pods"]["pending"] == 0
    assert data["cost"]["perHourAtEnd"] > 0
    assert [d["action"] for d in data["decisions"]].count("Launch") == len(nodeclaims)
    assert data["metrics"]["karpenter_nodeclaims_created_total"] == len(nodeclaims)


def test_insufficient_capacity_launch_falls_back_to_another_offering() -> None:
    pool = nodepool(("spot", "on-demand"))
    pool["spec"]["template"]["spec"]["requirements"] += [
        {
            "key": "node.kubernetes.io/instance-type",
            "operator": "In",
            "values": ["c-4x-amd64-linux"],
        },
        {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["test-zone-a"]},
    ]
    sim = Simulation(
        make_scenario(
            nodePools=[pool],
            workloads=[web(3)],
            events=[{"at": 0, "type": "OfferingOutage", "capacityType": "spot"}],
        )
    )
    report = sim.run(600)
    data = report.to_json_dict()
    abandoned = [n for n in data["nodes"] if n["launched"] is None]
    assert len(abandoned) == 1 and all(
        n["removalReason"] == "insufficient capacity" for n in abandoned
    )
    launched = [n for n in data["nodes"] if n["launched"] is not None]
    assert launched and all(n["capacityType"] == "on-demand" for n in launched)
    assert data["pods"]["bound"] == 3 and data["pods"]["pending"] == 0


def test_a_node_that_never_registers_is_cleaned_up_after_the_ttl() -> None:
    sim = Simulation(
        make_scenario(
            cloudProvider={"name": "kwok", "settings": {"never-register": '[{"attempts": 1}]'}},
            workloads=[web(2)],
        )
    )
    sim.run_until(14 * 60)
    first = sorted(sim.observer.nodeclaims.values(), key=lambda r: r.created)[0]
    assert first.launched is not None and first.registered is None and first.deleting is None
    report = sim.run(20 * 60)
    assert first.deleting is not None
    assert 15 * 60 <= first.deleting - first.created <= 16 * 60
    assert first.reason == "registration timeout"
    assert first.gone is not None  # finalized, the instance deleted
    data = report.to_json_dict()
    assert data["pods"]["bound"] == 2 and data["pods"]["pending"] == 0


def test_deleting_a_node_drains_it_respecting_a_pdb_and_loses_no_pod() -> None:
    pdb = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "web"}}},
    }
    sim = Simulation(make_scenario(objects=[pdb], workloads=[web(4, cpu="500m")]))
    sim.run_until(240)
    healthy_before = [p for p in app_pods(sim) if conditions(p).get("Ready") == "True"]
    assert len(healthy_before) == 4
    victim_node = healthy_before[0]["spec"]["nodeName"]
    on_victim = {
        p["metadata"]["name"] for p in healthy_before if p["spec"]["nodeName"] == victim_node
    }
    sim.server.delete("nodes", victim_node)
    min_healthy = 4
    for second in range(241, 1200):
        sim.run_until(second)
        healthy = [
            p
            for p in app_pods(sim)
            if conditions(p).get("Ready") == "True" and not p["metadata"].get("deletionTimestamp")
        ]
        min_healthy = min(min_healthy, len(healthy))
        if victim_node not in {n["metadata"]["name"] for n in sim.server.list("nodes").items}:
            break
    else:
        raise AssertionError(f"node {victim_node} was never removed")
    assert min_healthy >= 3  # maxUnavailable 1: never two down at once
    sim.run_until(1500)
    live = [p for p in app_pods(sim) if not p["metadata"].get("deletionTimestamp")]
    assert len(live) == 4
    assert all(p["spec"].get("nodeName") and p["spec"]["nodeName"] != victim_node for p in live)
    assert on_victim.isdisjoint(p["metadata"]["name"] for p in live)  # they were replaced


@pytest.mark.parametrize(
    "when",
    ["batch window open", "launches in flight", "steady state"],
)
def test_a_restart_mid_scenario_rebuilds_state_and_launches_nothing_twice(when: str) -> None:
    scenario = make_scenario(workloads=[web(12, cpu="3")])
    baseline = Simulation(scenario)
    baseline.run(600)
    expected = len(baseline.observer.nodeclaims)

    sim = Simulation(scenario)
    if when == "batch window open":
        sim.run_until(0.5)
        assert not sim.observer.nodeclaims and sim.observer.counts() == (0, 12)
    elif when == "launches in flight":
        sim.run_until(600, stop_when=lambda: bool(sim.observer.nodeclaims))
        assert any(r.registered is None for r in sim.observer.nodeclaims.values())
    else:
        sim.run_until(300)
        assert sim.observer.counts() == (12, 0)
    sim.restart_karpenter()
    report = sim.run(600)
    data = report.to_json_dict()
    assert data["nodeClaimsCreated"] == expected
    assert data["nodesRemoved"] == 0 and data["nodeClaimsNotLaunched"] == 0
    assert data["pods"]["bound"] == 12 and data["pods"]["pending"] == 0
    assert any(d["action"] == "Restart" for d in data["decisions"])
    assert sim.ctx.cluster.synced()  # the new state caught up with the API


def test_an_unknown_cloud_provider_is_a_simulation_error() -> None:
    with pytest.raises(SimulationError, match="cloudProvider 'nimbus'"):
        Simulation(make_scenario(cloudProvider="nimbus"))


def test_an_offering_outage_is_reported_when_it_starts_and_ends() -> None:
    data = (
        Simulation(
            make_scenario(
                workloads=[web(1)],
                events=[
                    {"at": "1m", "type": "OfferingOutage", "zone": "test-zone-a", "duration": "2m"}
                ],
            )
        )
        .run(300)
        .to_json_dict()
    )
    outage = [
        (d["offsetSeconds"], d["action"]) for d in data["decisions"] if "Offering" in d["action"]
    ]
    assert outage == [(60.0, "OfferingOutage"), (180.0, "OfferingRestored")]


def test_same_seed_gives_the_same_report() -> None:
    scenario = make_scenario(
        nodePools=[nodepool(("spot", "on-demand"))],
        workloads=[web(6, scale=[{"at": "3m", "replicas": 10}])],
        events=[{"at": "5m", "type": "SpotInterruption"}],
    )

    def run() -> dict[str, Any]:
        data = Simulation(scenario, seed=7).run(600).to_json_dict()
        data.pop("wallSeconds")
        return data

    assert json.dumps(run(), sort_keys=True) == json.dumps(run(), sort_keys=True)


def test_spot_interruption_replaces_the_node() -> None:
    sim = Simulation(
        make_scenario(
            nodePools=[nodepool(("spot",))],
            workloads=[web(3)],
            events=[{"at": "4m", "type": "SpotInterruption"}],
        )
    )
    data = sim.run(900).to_json_dict()
    assert data["removalReasons"] == {"spot interruption": 1}
    assert data["nodesLaunched"] >= 2
    assert data["pods"]["bound"] == 3 and data["pods"]["pending"] == 0
    spot = [
        n
        for n in sim.server.list("nodes").items
        if n["metadata"]["labels"].get(CAPACITY_TYPE_LABEL) == "spot"
    ]
    assert spot


def test_a_failed_node_is_left_by_its_pods_and_they_run_elsewhere() -> None:
    sim = Simulation(
        make_scenario(
            workloads=[web(4, cpu="500m")],
            events=[{"at": "3m", "type": "NodeFailure"}],
        )
    )
    sim.run_until(170)
    (failed,) = [n["metadata"]["name"] for n in sim.server.list("nodes").items]
    sim.run_until(181)
    node = sim.server.get("nodes", failed)
    assert conditions(node)["Ready"] == "Unknown"
    assert any(t["key"] == "node.kubernetes.io/unreachable" for t in node["spec"]["taints"])
    sim.run_until(8 * 60 - 1)  # pods tolerate an unreachable node for 5 minutes
    assert all(p["spec"]["nodeName"] == failed for p in app_pods(sim))
    data = sim.run(15 * 60).to_json_dict()
    assert (
        conditions(sim.server.get("nodes", failed))["Ready"] == "Unknown"
    )  # no kubelet revived it
    running = [p for p in app_pods(sim) if not p["metadata"].get("deletionTimestamp")]
    assert len(running) == 4 and all(p["spec"]["nodeName"] != failed for p in running)
    assert data["pods"]["bound"] == 4 and data["pods"]["pending"] == 0


def test_a_vanished_instance_is_garbage_collected_and_replaced() -> None:
    sim = Simulation(
        make_scenario(
            workloads=[web(4, cpu="500m")],
            events=[{"at": "3m", "type": "NodeFailure", "mode": "InstanceGone"}],
        )
    )
    data = sim.run(15 * 60).to_json_dict()
    assert data["removalReasons"] == {"garbage collected": 1}
    removed = next(n for n in data["nodes"] if n["removed"])
    assert removed["gone"] is not None
    assert data["nodesLaunched"] == 2
    assert data["pods"]["bound"] == 4 and data["pods"]["pending"] == 0


def test_an_event_with_nothing_to_hit_is_a_note_not_an_error() -> None:
    sim = Simulation(
        make_scenario(workloads=[web(1)], events=[{"at": "1m", "type": "SpotInterruption"}])
    )
    data = sim.run(120).to_json_dict()
    assert any("SpotInterruption" in n and "no spot node" in n for n in data["notes"])
    assert data["nodesRemoved"] == 0


def test_a_restart_event_in_the_scenario_restarts_karpenter() -> None:
    sim = Simulation(
        make_scenario(
            workloads=[web(4, scale=[{"at": "2m", "replicas": 12}])],
            events=[{"at": "2m", "type": "KarpenterRestart"}],
        )
    )
    data = sim.run(600).to_json_dict()
    assert sim.restarts == 1
    assert [d["offsetSeconds"] for d in data["decisions"] if d["action"] == "Restart"] == [120.0]
    assert data["pods"]["bound"] == 12 and data["pods"]["pending"] == 0
    assert data["nodesRemoved"] == 0


class _Livelock:
    def __init__(self, sim: Simulation) -> None:
        self.sim = sim

    def reconcile(self) -> Result:
        self.sim.karpenter.controller("test.livelock").trigger()
        return Result()


def test_a_livelocked_controller_stops_the_run_with_a_note_not_a_crash() -> None:
    sim = Simulation(make_scenario(workloads=[web(1)]))
    sim.karpenter._max_per_instant = 1000
    sim.karpenter.add_singleton("test.livelock", _Livelock(sim))
    data = sim.run(60).to_json_dict()
    assert sim.halted is not None
    assert any("stopped early" in n and "test.livelock" in n for n in data["notes"])


def test_a_workload_in_a_missing_namespace_is_refused_up_front() -> None:
    with pytest.raises(
        SimulationError, match=r"workloads\[0\] \(Deployment web\): namespace 'shop'"
    ):
        Simulation(make_scenario(workloads=[web(1, namespace="shop")]))
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}}
    data = Simulation(make_scenario(objects=[namespace], workloads=[web(1, namespace="shop")])).run(
        60
    )
    assert data.pods_bound == 1


def test_each_report_counts_only_its_own_runs_metrics() -> None:
    scenario = make_scenario(workloads=[web(5)])
    first = Simulation(scenario).run(120).to_json_dict()
    second = Simulation(scenario).run(120).to_json_dict()
    created = first["metrics"]["karpenter_nodeclaims_created_total"]
    assert created == first["nodeClaimsCreated"] > 0
    assert second["metrics"]["karpenter_nodeclaims_created_total"] == created


def test_daemonset_pods_run_on_launched_nodes_and_count_toward_utilisation_only() -> None:
    ds = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "agent", "namespace": "default"},
        "spec": {
            "selector": {"matchLabels": {"app": "agent"}},
            "template": {
                "metadata": {"labels": {"app": "agent"}},
                "spec": {
                    "containers": [
                        {"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}
                    ]
                },
            },
        },
    }
    sim = Simulation(make_scenario(objects=[ds], workloads=[web(3)]))
    data = sim.run(300).to_json_dict()
    nodes = {n["metadata"]["name"] for n in sim.server.list("nodes").items}
    agents = [
        p
        for p in sim.server.list("pods", "default").items
        if p["metadata"]["labels"].get("app") == "agent"
    ]
    assert nodes and {p["spec"]["nodeName"] for p in agents} == nodes
    assert len(agents) == len(nodes)
    assert data["pods"]["created"] == 3 and data["pods"]["bound"] == 3  # daemons not counted
    # Karpenter sized the nodes for the daemon too: the app pods and the agent both fit
    assert all(conditions(p).get("Ready") == "True" for p in agents)
