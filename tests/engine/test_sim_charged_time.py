"""``chargeComputeTime`` in a whole simulation: Karpenter's reconciles take virtual time,
the report books it per controller (across a restart), the simulated cluster is never
charged, and with the option off the run is what it always was. Each Karpenter reconcile
"costs" a fixed amount on a fake meter, so every figure is exact."""

from __future__ import annotations

from typing import Any

import pytest
from engine_helpers import make_scenario, web

from karpenter_core.runtime.clock import ManualMeter
from karpenter_core.sim.engine import Simulation
from karpenter_core.sim.report import render_text
from karpenter_core.sim.report_html import render_html
from karpenter_core.sim.scenario import Scenario, ScenarioError, parse_scenario

COST = 0.25  # seconds of "compute" per Karpenter reconcile


def costly(sim: Simulation, meter: ManualMeter) -> dict[str, int]:
    """Make every reconcile of Karpenter's current controllers cost ``COST`` on ``meter``;
    returns the reconciles counted per controller as the run goes."""
    counts: dict[str, int] = {}
    for controller in sim.karpenter.controllers:
        inner = controller.run_one

        def run_one(key: Any, inner: Any = inner, name: str = controller.name) -> Any:
            counts[name] = counts.get(name, 0) + 1
            meter.spend(COST)
            return inner(key)

        controller.run_one = run_one  # type: ignore[method-assign]
    return counts


def scenario(charge: bool) -> Scenario:
    return make_scenario(workloads=[web(8, cpu="3")], chargeComputeTime=charge)


def test_every_karpenter_reconcile_is_charged_and_booked_per_controller() -> None:
    meter = ManualMeter()
    sim = Simulation(scenario(True), compute_meter=meter)
    counts = costly(sim, meter)
    report = sim.run(300)
    charged = report.to_json_dict()["computeCharged"]
    assert charged["scale"] == 1.0
    karpenter = {name: n for name, n in counts.items() if name != "sim.observer"}
    assert charged["controllers"] == {
        name: round(n * COST, 3)
        for name, n in sorted(karpenter.items(), key=lambda kv: (-kv[1], kv[0]))
    }
    assert charged["totalSeconds"] == round(sum(karpenter.values()) * COST, 3)
    assert "sim.observer" not in charged["controllers"]  # bookkeeping, not Karpenter
    assert not any(name.startswith("sim.") for name in charged["controllers"])
    assert report.pods_bound == 8 and report.pods_pending == 0
    assert f"Compute    {charged['totalSeconds']:.1f}s charged to the virtual clock (x1)" in (
        render_text(report)
    )
    assert "Compute charged (x1)" in render_html(report)


def test_charged_compute_delays_what_karpenter_does() -> None:
    def first_launch(charge: bool) -> float:
        meter = ManualMeter()
        sim = Simulation(scenario(charge), compute_meter=meter)
        costly(sim, meter)
        sim.run(300)
        launched = [r.launched for r in sim.observer.nodeclaims.values() if r.launched]
        assert launched
        return min(launched)

    free, charged = first_launch(False), first_launch(True)
    # at least the reconciles between the pods' arrival and the launch took time
    assert charged >= free + COST


def test_the_book_survives_a_karpenter_restart() -> None:
    meter = ManualMeter()
    sim = Simulation(scenario(True), compute_meter=meter)
    before = costly(sim, meter)
    sim.run_until(120)
    assert sim.charge is not None
    charged_before = sim.charge.total_seconds
    assert charged_before == sum(n for c, n in before.items() if c != "sim.observer") * COST
    sim.restart_karpenter()
    after = costly(sim, meter)
    report = sim.run(240)
    total = report.to_json_dict()["computeCharged"]["totalSeconds"]
    karpenter_after = sum(n for c, n in after.items() if c != "sim.observer")
    assert total == round(charged_before + karpenter_after * COST, 3)


def test_with_the_option_off_nothing_is_charged_and_the_report_says_null() -> None:
    meter = ManualMeter()
    sim = Simulation(scenario(False), compute_meter=meter)
    costly(sim, meter)
    report = sim.run(300)
    assert sim.charge is None
    assert report.to_json_dict()["computeCharged"] is None
    assert "Compute" not in render_text(report)
    assert "Compute charged" not in render_html(report)


def test_the_scale_multiplies_every_charge() -> None:
    meter = ManualMeter()
    sim = Simulation(
        make_scenario(workloads=[web(2)], chargeComputeTime=True, computeTimeScale=4),
        compute_meter=meter,
    )
    counts = costly(sim, meter)
    charged = sim.run(120).to_json_dict()["computeCharged"]
    assert charged["scale"] == 4.0
    reconciles = sum(n for c, n in counts.items() if c != "sim.observer")
    assert charged["totalSeconds"] == round(reconciles * COST * 4, 3)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"chargeComputeTime": "yes"}, "chargeComputeTime: expected true or false"),
        ({"computeTimeScale": 0}, "computeTimeScale: must be above 0"),
        ({"computeTimeScale": 5000}, "at most 1000"),
        ({"computeTimeScale": "fast"}, "computeTimeScale: expected a positive number"),
        ({"computeTimeScale": True}, "computeTimeScale: expected a positive number"),
    ],
)
def test_bad_charge_fields_are_one_line_errors(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(ScenarioError, match=message) as err:
        parse_scenario({"name": "x", **fields}, "s.yaml")
    assert str(err.value).startswith("s.yaml: ")
    assert "\n" not in str(err.value)


def test_charge_fields_default_off_at_scale_one() -> None:
    parsed = parse_scenario({"name": "x"}, "s.yaml")
    assert (parsed.charge_compute_time, parsed.compute_time_scale) == (False, 1.0)
    parsed = parse_scenario({"name": "x", "chargeComputeTime": True, "computeTimeScale": 2.5})
    assert (parsed.charge_compute_time, parsed.compute_time_scale) == (True, 2.5)


@pytest.mark.timeout(60)
def test_run_until_an_offset_off_the_clocks_nanosecond_grid_returns() -> None:
    """An offset such as 0.1 + 0.2 lies a hair above a time the virtual clock (whole
    nanoseconds) can show: the run must still end there instead of waiting for time to
    reach it. Charged runs meet such offsets all the time (phase ends computed from charged
    readings); a 1/50 perf-suite drift run hung on one."""
    meter = ManualMeter()
    sim = Simulation(scenario(True), compute_meter=meter)
    costly(sim, meter)
    sim.run_until(60.0)
    elapsed = sim.clock.monotonic() - sim.observer.t0
    offset = next(
        o
        for o in (elapsed + k / 3 * 1e-6 for k in range(1, 1000))
        if round((sim.observer.t0 + o) * 1e9) / 1e9 < sim.observer.t0 + o
    )
    sim.run_until(offset)  # returned: the regression looped here for ever
    assert sim.clock.monotonic() - sim.observer.t0 >= offset - 1e-6
    assert sim.halted is None and sim.report().pods_bound == 8


def test_a_wait_for_a_condition_ends_when_it_holds_not_when_karpenter_is_idle() -> None:
    """With charged compute, time moves while Karpenter works through a backlog: a phase
    waiting for its pods stops at the reconcile that saw them bound (the observer counts
    them as their events arrive), not minutes later when every queue is empty."""
    meter = ManualMeter()
    sim = Simulation(scenario(True), compute_meter=meter)
    costly(sim, meter)

    def all_bound() -> bool:
        bound, pending = sim.observer.counts()
        return bound == 8 and pending == 0

    sim.run_until(300, stop_when=all_bound)
    assert all_bound()
    stopped = sim.observer.now()
    last_bound = max(p.bound for p in sim.observer.pods.values() if p.bound is not None)
    assert stopped - last_bound <= 2 * COST
