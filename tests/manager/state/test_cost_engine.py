"""End to end on the simulation engine's virtual clock: ``karpenter_nodepools_cost_total``
follows NodeClaims as they launch and as consolidation removes them, and agrees with the
simulation report's own per-hour cost (same provider prices, no NodeOverlay)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from karpenter_core import metrics
from karpenter_core.sim.engine import Simulation
from karpenter_core.sim.scenario import parse_scenario
from karpenter_core.state.cost import existing_cluster_cost

COST = "karpenter_nodepools_cost_total"


@pytest.fixture(autouse=True)
def _clean_metrics() -> Iterator[None]:
    metrics.reset()
    yield
    metrics.reset()


def scenario() -> Any:
    pool = {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": "default"},
        "spec": {
            "template": {
                "spec": {
                    "nodeClassRef": {
                        "group": "karpenter.kwok.sh",
                        "kind": "KWOKNodeClass",
                        "name": "default",
                    },
                    "requirements": [
                        {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]},
                        {
                            "key": "karpenter.sh/capacity-type",
                            "operator": "In",
                            "values": ["on-demand"],
                        },
                        {
                            "key": "karpenter.kwok.sh/instance-size",
                            "operator": "Lt",
                            "values": ["32"],
                        },
                    ],
                    "expireAfter": "Never",
                }
            },
            "disruption": {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "30s"},
        },
    }
    web = {
        "deployment": "web",
        "replicas": 2,
        "requests": {"cpu": "500m", "memory": "512Mi"},
        "scale": [{"at": "5m", "replicas": 40}, {"at": "10m", "replicas": 0}],
    }
    return parse_scenario(
        {"name": "cost", "seed": 0, "nodePools": [pool], "workloads": [web]}, "cost.yaml"
    )


def gauge() -> float | None:
    return metrics.sample(COST, {"nodepool": "default"})


def live_launched(sim: Simulation) -> list[Any]:
    return [
        r for r in sim.observer.nodeclaims.values() if r.launched is not None and r.gone is None
    ]


def test_the_cost_gauge_follows_launches_and_deletions() -> None:
    sim = Simulation(scenario())
    cost = existing_cluster_cost(sim.ctx)
    assert cost is not None

    sim.run_until(4 * 60)
    small = gauge()
    assert live_launched(sim) and small is not None and small > 0
    assert small == pytest.approx(sim.observer.cost_per_hour())
    assert small == pytest.approx(cost.nodepool_cost("default"))

    sim.run_until(9 * 60)  # the scale-up's nodes have launched
    assert len(live_launched(sim)) > 1
    large = gauge()
    assert large is not None and large > small
    assert large == pytest.approx(sim.observer.cost_per_hour())

    sim.run_until(20 * 60)  # scaled to zero; consolidation removed the empty nodes
    assert live_launched(sim) == []
    assert gauge() == 0.0
    assert cost.nodepools() == []


def test_the_tracked_cost_includes_a_nodeoverlay_price_the_report_does_not() -> None:
    # Upstream's gauge is "Karpenter's view", NodeOverlays included; the report prices
    # nodes at the provider's own price. A -50% overlay on every type halves the former.
    raw = {
        "name": "overlay",
        "seed": 0,
        "nodePools": [scenario().nodepools[0]],
        "workloads": [{"deployment": "web", "replicas": 2, "requests": {"cpu": "500m"}}],
        "nodeOverlays": [
            {
                "apiVersion": "karpenter.sh/v1alpha1",
                "kind": "NodeOverlay",
                "metadata": {"name": "half"},
                "spec": {
                    "requirements": [
                        {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}
                    ],
                    "priceAdjustment": "-50%",
                },
            }
        ],
        "options": {"FEATURE_GATES": "NodeOverlay=true"},
    }
    sim = Simulation(parse_scenario(raw, "overlay.yaml"))
    sim.run_until(4 * 60)
    assert live_launched(sim)
    provider_price = sim.observer.cost_per_hour()
    assert provider_price > 0
    assert gauge() == pytest.approx(provider_price / 2)
