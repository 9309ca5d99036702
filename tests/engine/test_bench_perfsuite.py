"""bench/perfsuite.py: upstream's performance scenarios parse, are upstream's, and a small
one runs through both phases and reports every figure (nothing here is timed)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def perfsuite() -> ModuleType:
    return _load("perfsuite")


def _pod_spec(workload: Any) -> dict[str, Any]:
    spec: dict[str, Any] = workload.manifest["spec"]["template"]["spec"]
    return spec


def test_every_scenario_parses_into_a_simulation_scenario(perfsuite: ModuleType) -> None:
    for name, make in perfsuite.SCENARIOS.items():
        s = make()
        scenario = perfsuite.build_scenario(s)
        assert [w.name for w in scenario.workloads] == [d.name for d in s.deployments], name
        (pool,) = scenario.nodepools
        assert pool["spec"]["disruption"]["budgets"] == [{"nodes": "100%"}]
        assert s.phases[0].kind == "scale-out", name
        assert s.phases[0].pods == sum(d.replicas for d in s.deployments), name
    assert "large" not in perfsuite.DEFAULT_SCENARIOS
    assert set(perfsuite.DEFAULT_SCENARIOS) == set(perfsuite.SCENARIOS) - {"large"}


def test_scenarios_carry_upstreams_constraints(perfsuite: ModuleType) -> None:
    wide = perfsuite.build_scenario(perfsuite.SCENARIOS["wide-deployments"]())
    assert len(wide.workloads) == 30
    assert sum(w.replicas for w in wide.workloads) == 1000
    first = _pod_spec(wide.workloads[0])
    assert first["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    spreads = [c["topologyKey"] for c in _pod_spec(wide.workloads[4])["topologySpreadConstraints"]]
    assert spreads == ["topology.kubernetes.io/zone", "kubernetes.io/hostname"]
    assert "affinity" not in _pod_spec(wide.workloads[10])

    dnd = perfsuite.build_scenario(perfsuite.SCENARIOS["do-not-disrupt"]())
    protected = dnd.workloads[2].manifest["spec"]["template"]["metadata"]["annotations"]
    assert protected == {"karpenter.sh/do-not-disrupt": "true"}

    drift = perfsuite.SCENARIOS["drift"]()
    assert [p.kind for p in drift.phases] == ["scale-out", "drift"]
    assert drift.phases[1].drift

    interference = perfsuite.SCENARIOS["interference"]()
    assert [p.pods for p in interference.phases] == [500, 750, 600]
    assert [d.name for d in interference.phases[1].create] == ["large-resource-app"]


def test_scaled_keeps_phase_pod_counts_consistent(perfsuite: ModuleType) -> None:
    s = perfsuite.scaled(perfsuite.SCENARIOS["interference"](), 0.02)
    assert [p.pods for p in s.phases] == [10, 15, 12]
    large = perfsuite.scaled(perfsuite.SCENARIOS["large"](), 0.01)
    assert [p.pods for p in large.phases] == [1500, 1050]


def test_a_fiftieth_of_basic_runs_both_phases_and_reports(perfsuite: ModuleType) -> None:
    s = perfsuite.scaled(perfsuite.SCENARIOS["basic"](), 0.02)
    seen: list[str] = []
    result = perfsuite.run_scenario(s, on_phase=lambda ph: seen.append(ph["phase"]))
    assert seen == ["basic/scaleOut", "basic/consolidation"]
    out, scale_in = result["phases"]
    for ph in (out, scale_in):
        assert ph["complete"], ph
        assert ph["podsPending"] == 0
        assert ph["podsBound"] == ph["pods"]
        assert ph["nodes"] > 0 and ph["podsPerNode"] > 0
        assert 0 < ph["cpuUtilization"] <= 1 and 0 < ph["memoryUtilization"] <= 1
        assert ph["virtualSeconds"] >= ph["settledSeconds"] >= 0
        assert ph["wallSeconds"] >= 0 and ph["cpuSeconds"] >= 0 and ph["peakRssMB"] > 0
        assert set(ph["thresholds"]) == {
            "virtualSeconds",
            "cpuUtilization",
            "memoryUtilization",
            "peakRssMB",
        }
    assert (out["pods"], scale_in["pods"]) == (20, 14)
    assert scale_in["podsNetChange"] == -6
    # the consolidation watch ends only after 3 quiet minutes (upstream's rule)
    assert scale_in["virtualSeconds"] >= 180
    assert scale_in["nodesNetChange"] <= 0
    assert scale_in["nodeClaimsRemoved"] >= -scale_in["nodesNetChange"]
    # this process's RSS is the test run's; every other threshold is met at this scale
    misses = perfsuite.check_phases(result["phases"])
    assert [m for m in misses if "peakRssMB" not in m] == []


def test_check_phases_names_each_missed_threshold(perfsuite: ModuleType) -> None:
    phase = {
        "phase": "basic/scaleOut",
        "pods": 10,
        "complete": False,
        "virtualSeconds": 200.0,
        "cpuUtilization": 0.9,
        "memoryUtilization": 0.5,
        "peakRssMB": 100.0,
        "thresholds": {
            "virtualSeconds": 120.0,
            "cpuUtilization": 0.53,
            "memoryUtilization": 0.65,
            "peakRssMB": 260.0,
        },
    }
    misses = perfsuite.check_phases([phase])
    assert len(misses) == 3
    assert any("virtualSeconds 200.0" in m for m in misses)
    assert any("memoryUtilization 0.5" in m for m in misses)
    assert any("did not reach 10 pods" in m for m in misses)


def test_e2e_scenario_flag_prints_one_json_object(
    perfsuite: ModuleType, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    e2e = _load("e2e")
    small = perfsuite.scaled(perfsuite.SCENARIOS["drift"](), 0.02)
    monkeypatch.setitem(e2e.SCENARIOS, "drift", lambda: small)
    # uncharged: a repeatable run (charged time is measured CPU, see docs/simulate.md)
    assert e2e.main(["--scenario", "drift", "--json", "--no-charge-compute-time"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["scenario"] == "drift"
    assert [ph["phase"] for ph in data["phases"]] == ["drift/initial", "drift/drift"]
    drifted = data["phases"][1]
    assert drifted["complete"] and drifted["podsBound"] == 12
    # every node of the old template is replaced: as many NodeClaims go as were there
    assert drifted["nodeClaimsRemoved"] >= data["phases"][0]["nodes"] > 0
    assert drifted["nodeClaimsLaunched"] > 0
