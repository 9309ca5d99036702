"""Consolidation under charged compute ("faithful time", docs/simulate.md): single-node's
3-minute timeout is read from the controller clock between candidates, so when each
candidate's scheduling simulation costs 10 s of compute the pass stops at the deadline
by compute alone — no test code moves the clock; multi-node's 1-minute search likewise.
The compute is a fake meter advanced by the wrapped simulation, so the count is exact."""

from __future__ import annotations

from typing import Any

import pytest
from disruption_harness import World

from karpenter_core import metrics
from karpenter_core.disruption.methods import consolidation as consolidation_module
from karpenter_core.disruption.methods.multinode import MultiNodeConsolidation
from karpenter_core.disruption.methods.singlenode import SingleNodeConsolidation
from karpenter_core.disruption.simulation import simulate_scheduling
from karpenter_core.runtime.clock import ManualMeter

CANDIDATES = 25
COST = 10.0  # seconds of compute per candidate's simulation


class CostlySimulation:
    """The real scheduling simulation, plus ``COST`` seconds on the fake meter per call."""

    def __init__(
        self, meter: ManualMeter, monkeypatch: pytest.MonkeyPatch, cost: float = COST
    ) -> None:
        self.meter = meter
        self.cost = cost
        self.calls = 0
        monkeypatch.setattr(consolidation_module, "simulate_scheduling", self)

    def __call__(self, *args: Any, **kw: Any) -> Any:
        self.calls += 1
        self.meter.spend(self.cost)
        return simulate_scheduling(*args, **kw)


def crowded_world() -> World:
    """``CANDIDATES`` nodes, each with a 1.5-CPU pod on a 2-CPU type: no pod fits
    elsewhere and no cheaper type holds it, so every candidate is simulated and none
    yields a command."""
    w = World()
    w.nodepool()
    for i in range(CANDIDATES):
        w.pod(node=w.node(f"n{i:02d}", instance_type="fake-it-1"), cpu="1.5")
    return w


def timeouts(kind: str = "single") -> float:
    return metrics.sample(
        "karpenter_voluntary_disruption_consolidation_timeouts_total",
        {"consolidation_type": kind},
    )


def test_a_pass_of_costly_candidates_stops_at_three_virtual_minutes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    w = crowded_world()
    meter = ManualMeter()
    sim = CostlySimulation(meter, monkeypatch)
    method: SingleNodeConsolidation = w.method(SingleNodeConsolidation)
    before, start = timeouts(), w.clock.monotonic()
    with w.clock.charging(meter) as span:
        assert w.compute(method, {"default": 100}) == []
    # checked before each candidate: at 180 s the deadline has not passed, at 190 s it has
    assert sim.calls == 19
    assert timeouts() == before + 1
    assert span.seconds == 190.0
    assert w.clock.monotonic() == start + 190.0
    assert not method.is_consolidated(w.snapshot())  # a timed-out pass memoises nothing


def test_without_charging_the_same_pass_sees_every_candidate(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    w = crowded_world()
    sim = CostlySimulation(ManualMeter(), monkeypatch)
    method: SingleNodeConsolidation = w.method(SingleNodeConsolidation)
    before, start = timeouts(), w.clock.monotonic()
    assert w.compute(method, {"default": 100}) == []
    assert sim.calls == CANDIDATES
    assert timeouts() == before
    assert w.clock.monotonic() == start
    assert method.is_consolidated(w.snapshot())


def test_a_multi_node_search_of_costly_batches_stops_after_one_virtual_minute(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    w = World()
    w.nodepool()
    for i in range(8):  # small pods on big nodes: every batch size can consolidate
        w.pod(node=w.node(f"n{i}", instance_type="fake-it-4"), cpu="200m")
    meter = ManualMeter()
    sim = CostlySimulation(meter, monkeypatch, cost=40.0)
    method: MultiNodeConsolidation = w.method(MultiNodeConsolidation)
    before = timeouts("multi")
    with w.clock.charging(meter) as span:
        (cmd,) = w.compute(method, {"default": 100})
    # 40 s per batch tried: two fit in the minute, the third is never started
    assert sim.calls == 2
    assert timeouts("multi") == before + 1
    assert span.seconds == 80.0
    assert len(cmd.candidates) >= 2  # the best command found before the deadline
