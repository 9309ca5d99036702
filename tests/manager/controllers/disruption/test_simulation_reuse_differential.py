"""Differential test: the pass-shared simulation (``PassState``: prepared existing nodes,
topology counts derived from one count of the whole cluster) decides exactly as the
reference that rebuilds everything per simulation.

Clusters are generated from seeds: several NodePools (one tainted, one zonal), nodes of
many sizes in three zones, some uninitialised, deleting, NodeClaim-only or recently changed
(inside consolidateAfter), pods with zone and hostname spreads (hard and soft), required
hostname anti-affinity, preferred zone affinity, host ports, tolerations, do-not-disrupt,
pending pods, a DaemonSet and PDBs. For every candidate alone, and for runs of candidates
as multi-node consolidation tries them, both paths must give the same NodeClaims (pools,
instance types, requirements, pods), the same placements on existing nodes, the same
existing nodes and the same pod errors; and every built-in method must reach the same
commands from the same snapshot.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from disruption_harness import World

from karpenter_core.disruption import simulation
from karpenter_core.disruption.methods.drift import Drift
from karpenter_core.disruption.methods.emptiness import Emptiness
from karpenter_core.disruption.methods.multinode import MultiNodeConsolidation
from karpenter_core.disruption.methods.singlenode import SingleNodeConsolidation
from karpenter_core.disruption.simulation import SimulationError, simulate_scheduling
from karpenter_core.disruption.types import CLASS_EVENTUAL, CLASS_GRACEFUL
from karpenter_core.provisioning import scheduler as scheduler_package
from karpenter_core.provisioning.scheduler import Results
from karpenter_core.testing import builders as b
from karpenter_core.testing.fakecatalog import instance_types

ZONES = ("test-zone-1", "test-zone-2", "test-zone-3")
APPS = ("web", "api", "db", "cache", "batch")
SEEDS = range(14)


def _spread(app: str, key: str, hard: bool) -> dict[str, Any]:
    return {
        "maxSkew": 1,
        "topologyKey": key,
        "whenUnsatisfiable": "DoNotSchedule" if hard else "ScheduleAnyway",
        "labelSelector": {"matchLabels": {"app": app}},
    }


def _constraints(rng: random.Random, app: str) -> dict[str, Any]:
    kind = rng.choice(["none", "none", "zone", "host", "host-soft", "anti", "affinity"])
    if kind == "zone":
        return {"topology_spread": [_spread(app, "topology.kubernetes.io/zone", True)]}
    if kind == "host":
        return {"topology_spread": [_spread(app, "kubernetes.io/hostname", True)]}
    if kind == "host-soft":
        return {"topology_spread": [_spread(app, "kubernetes.io/hostname", False)]}
    term = {"labelSelector": {"matchLabels": {"app": app}}}
    if kind == "anti":
        term["topologyKey"] = "kubernetes.io/hostname"
        return {
            "affinity": {
                "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
            }
        }
    if kind == "affinity":
        term["topologyKey"] = "topology.kubernetes.io/zone"
        return {
            "affinity": {
                "podAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {"weight": 10, "podAffinityTerm": term}
                    ]
                }
            }
        }
    return {}


def generated_world(seed: int) -> World:
    rng = random.Random(seed)
    world = World(instance_types(8))
    world.nodepool("general")
    world.create(
        b.nodepool(
            "tainted",
            taints=[{"key": "team", "value": "ml", "effect": "NoSchedule"}],
            consolidation_policy="WhenEmptyOrUnderutilized",
            consolidate_after="0s",
            budgets=[{"nodes": "100%"}],
            expire_after="Never",
            ready=True,
        )
    )
    world.nodepool(
        "zonal",
        consolidate_after=rng.choice(["0s", "1h"]),
        requirements=[b.requirement("topology.kubernetes.io/zone", "In", "test-zone-1")],
    )
    world.create(b.daemonset("logs", cpu="100m", memory="64Mi"))
    for app in APPS:
        world.pdb(f"pdb-{app}", labels={"app": app}, max_unavailable="50%", disruptions_allowed=50)
    nodes = []
    for i in range(rng.randint(16, 32)):
        pool = rng.choice(["general", "general", "tainted", "zonal"])
        with_node = rng.random() > 0.05
        name = world.node(
            f"n{seed}-{i:02d}",
            nodepool=pool,
            instance_type=f"fake-it-{rng.randint(1, 7)}",
            zone="test-zone-1" if pool == "zonal" else rng.choice(ZONES),
            capacity_type=rng.choice(["on-demand", "on-demand", "spot"]),
            initialized=rng.random() > 0.1,
            with_node=with_node,
            drifted=rng.random() < 0.2,
        )
        if with_node:  # pods bind to Nodes
            nodes.append((name, pool))
    for name, _ in nodes:
        if rng.random() < 0.08:
            world.cluster.mark_for_deletion(world.pid(name))
    for j in range(rng.randint(20, 70)):
        node, pool = rng.choice(nodes)
        pending = rng.random() < 0.1
        app = rng.choice(APPS)
        options: dict[str, Any] = _constraints(rng, app)
        if pool == "tainted" or rng.random() < 0.2:
            options["tolerations"] = [{"key": "team", "operator": "Equal", "value": "ml"}]
        if rng.random() < 0.08:
            options["host_ports"] = [8080]
        annotations = {"karpenter.sh/do-not-disrupt": "true"} if rng.random() < 0.05 else None
        pod = world.create(
            b.pod(
                f"p{seed}-{j:03d}",
                labels={"app": app},
                annotations=annotations,
                owner=b.owner_reference("ReplicaSet", f"rs-{app}", uid=f"rs-{app}"),
                cpu=rng.choice(["100m", "250m", "500m", "900m", "1500m", "2"]),
                memory=rng.choice(["128Mi", "512Mi", "1Gi", "3Gi"]),
                node_name=None if pending else node,
                unschedulable=pending,
                ready=None if pending else True,
                start_time=None if pending else b.START,
                **options,
            )
        )
        world.cluster.update_pod(pod)
    return world


def summary(results: Results) -> Any:
    return (
        results.to_json_dict(),
        sorted(n.name for n in results.existing_nodes),
        {key: str(err) for key, err in results.pod_errors.items()},
    )


def both(world: World, snapshot: Any, candidates: Any, consolidation: bool) -> tuple[Any, Any]:
    answers = []
    for reuse in (True, False):
        notices: list[Any] = []
        try:
            out: Any = summary(
                simulate_scheduling(
                    snapshot, candidates, consolidation=consolidation, notices=notices, reuse=reuse
                )
            )
        except SimulationError as e:
            out = ("error", str(e))
        answers.append((out, [type(n).__name__ for n in notices]))
    return answers[0], answers[1]


@pytest.mark.parametrize("seed", SEEDS)
def test_every_simulation_matches_the_rebuilding_reference(seed: int) -> None:
    world = generated_world(seed)
    snapshot = world.snapshot()
    compared = 0
    for cls, consolidation in ((CLASS_GRACEFUL, True), (CLASS_EVENTUAL, False)):
        candidates = world.candidates(cls, snapshot=snapshot)
        runs = [[c] for c in candidates]
        runs += [candidates[:k] for k in (2, 3, 5, len(candidates)) if k <= len(candidates)]
        for run in runs:
            reused, rebuilt = both(world, snapshot, run, consolidation)
            assert reused == rebuilt, [c.name() for c in run]
            compared += 1
    assert compared >= 8  # the generator produced candidates to compare on


@pytest.mark.parametrize("seed", SEEDS)
def test_every_method_decides_as_with_the_rebuilding_reference(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    decided = []
    for reuse in (True, False):
        monkeypatch.setattr(simulation, "REUSE_PASS_STATE", reuse)
        world = generated_world(seed)
        commands = []
        for cls in (Emptiness, Drift, MultiNodeConsolidation, SingleNodeConsolidation):
            method = world.method(cls)
            snapshot = world.snapshot()
            budgets = world.budgets(method.reason)
            for cmd in world.compute(method, budgets, snapshot=snapshot):
                commands.append(
                    (
                        cls.__name__,
                        cmd.decision,
                        sorted(c.name() for c in cmd.candidates),
                        [
                            (r.nodepool_name, [i.name for i in r.instance_types_by_price()])
                            for r in cmd.replacements
                        ],
                    )
                )
        decided.append(commands)
    assert decided[0] == decided[1]


@pytest.mark.parametrize("seed", SEEDS)
def test_a_provisioning_solve_decides_as_with_the_plain_constructor(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The provisioner's solve takes existing nodes from their prepared views; the same
    pods over the same cluster must be placed as the plain constructor places them."""
    world = generated_world(seed)
    snapshot = world.snapshot()
    assert snapshot.simulation is not None
    inputs = snapshot.simulation
    cluster = inputs.cluster
    # the pending pods and every pod of a few nodes, as if those nodes had gone
    pods = [p for p in cluster.pods if not p.node_name]
    for sn in cluster.active_state_nodes()[:: max(1, seed % 4 + 2)]:
        pods.extend(p for p in sn.pods if p.is_reschedulable())
    answers = []
    for prepared in (True, False):
        monkeypatch.setattr(scheduler_package, "PREPARED_EXISTING_NODES", prepared)
        results = scheduler_package.schedule(
            cluster, pods, inputs.nodepools, inputs.instance_types, inputs.options
        )
        answers.append(summary(results))
    assert answers[0] == answers[1]
    assert answers[0][1]  # some pods went to existing nodes
