"""The pure parts of ``bench/serve.py`` that turn watch instants into its figures: which
pod state counts as kube-scheduler's Unschedulable verdict, and how runs are combined."""

from __future__ import annotations

import importlib.util
import statistics
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def serve() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_serve", ROOT / "bench" / "serve.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("bench_serve", module)
    spec.loader.exec_module(module)
    return module


def _pod(*conditions: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": "p"}, "status": {"conditions": list(conditions)}}


@pytest.mark.parametrize(
    ("pod", "verdict"),
    [
        (_pod({"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}), True),
        # gated pods are not yet considered by kube-scheduler, nor provisioned for
        (_pod({"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}), False),
        (_pod({"type": "PodScheduled", "status": "True"}), False),
        (_pod({"type": "Ready", "status": "False", "reason": "Unschedulable"}), False),
        (_pod(), False),
        ({"metadata": {"name": "p"}}, False),
        ({"metadata": {"name": "p"}, "status": None}, False),
    ],
)
def test_only_kube_schedulers_unschedulable_verdict_counts(
    serve: ModuleType, pod: dict[str, Any], verdict: bool
) -> None:
    assert serve._unschedulable(pod) is verdict


def test_the_spread_of_one_sample_is_that_sample(serve: ModuleType) -> None:
    assert serve._spread([1.25]) == (1.25, 1.25, 1.25)


def test_the_spread_is_p50_p95_and_max(serve: ModuleType) -> None:
    sample = [float(i) for i in range(1, 101)]
    q = statistics.quantiles(sample, n=100)
    assert serve._spread(list(reversed(sample))) == (round(q[49], 3), round(q[94], 3), 100.0)


def test_runs_combine_into_each_figures_median(serve: ModuleType) -> None:
    runs = [
        {"pods": 1000, "nodeclaims": 33, "latencyP95": 7.0, "latencyTarget": 2.0},
        {"pods": 1000, "nodeclaims": 34, "latencyP95": 9.5, "latencyTarget": 2.0},
        {"pods": 1000, "nodeclaims": 33, "latencyP95": 6.25, "latencyTarget": 2.0},
    ]
    combined = serve.median_of_runs(runs)
    assert combined == {"pods": 1000, "nodeclaims": 33, "latencyP95": 7.0, "latencyTarget": 2.0}
    assert isinstance(combined["nodeclaims"], int)


def test_an_even_number_of_runs_can_give_a_fractional_count(serve: ModuleType) -> None:
    combined = serve.median_of_runs([{"nodeclaims": 33}, {"nodeclaims": 34}])
    assert combined == {"nodeclaims": 33.5}
