"""bench/e2e.py: upstream's basic scenario and the output shape (nothing here is timed)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "e2e.py"


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_e2e", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_e2e"] = module
    spec.loader.exec_module(module)
    return module


def test_basic_scenario_is_upstreams() -> None:
    scenario = _bench().basic_scenario()
    small, large = scenario.workloads
    assert (small.replicas, large.replicas) == (500, 500)
    requests = [
        w.manifest["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]
        for w in (small, large)
    ]
    assert requests == [{"cpu": "900m", "memory": "3100Mi"}, {"cpu": "3500m", "memory": "28Gi"}]
    (pool,) = scenario.nodepools
    reqs = {r["key"]: r for r in pool["spec"]["template"]["spec"]["requirements"]}
    assert reqs["karpenter.kwok.sh/instance-size"] == {
        "key": "karpenter.kwok.sh/instance-size",
        "operator": "Lt",
        "values": ["32"],
    }
    assert pool["spec"]["disruption"]["consolidateAfter"] == "30s"
    assert "limits" not in pool["spec"]


def test_json_output_has_the_documented_keys(capsys: pytest.CaptureFixture[str]) -> None:
    assert _bench().main(["--json", "--small", "6", "--large", "4"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert set(data) == {
        "virtualSecondsToAllBound",
        "wallSeconds",
        "cpuUtilization",
        "memoryUtilization",
        "peakRssMB",
    }
    assert data["virtualSecondsToAllBound"] is not None and data["virtualSecondsToAllBound"] > 0
    assert 0 < data["cpuUtilization"] <= 1 and 0 < data["memoryUtilization"] <= 1
    assert data["peakRssMB"] > 0


def test_pods_scale_runs_a_fraction_of_a_perf_scenario(capsys: pytest.CaptureFixture[str]) -> None:
    # a hundredth of `large`: 1,500 pods out, then each deployment down 30 % (to 1,050)
    argv = ["--scenario", "large", "--pods-scale", "0.01", "--no-charge-compute-time", "--json"]
    assert _bench().main(argv) == 0
    result = json.loads(capsys.readouterr().out)
    out, scale_in = result["phases"]
    assert (out["pods"], out["podsBound"], out["podsPending"]) == (1500, 1500, 0)
    assert (scale_in["pods"], scale_in["podsBound"]) == (1050, 1050)
    assert scale_in["nodesNetChange"] < 0  # consolidation removed nodes
