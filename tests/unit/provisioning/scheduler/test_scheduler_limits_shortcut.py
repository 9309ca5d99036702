"""A pool at its limits: the affordable instance types are worked out once per limits
state, not once per pod attempt, and decisions are the same as filtering every time."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from scheduler_helpers import fake_labels as fake_labels  # autouse fixture

from karpenter_core.apis.v1 import NodePool
from karpenter_core.provisioning.scheduler import SchedulerOptions, build_topology
from karpenter_core.provisioning.scheduler import resourcelist as rl
from karpenter_core.provisioning.scheduler.scheduler import Scheduler
from karpenter_core.state.snapshot import ClusterSnapshot
from karpenter_core.testing.fakecatalog import instance_types

BENCH = Path(__file__).resolve().parents[4] / "bench" / "scheduling.py"


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_scheduling_limits", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_scheduling_limits"] = module
    spec.loader.exec_module(module)
    return module


def limited_pool(cpu: str) -> NodePool:
    d = _bench().nodepool().to_dict()
    d["spec"]["limits"] = {"cpu": cpu, "memory": "20000Gi"}
    return NodePool.from_dict(d)


def solve(pods: list[Any], its: list[Any], pool: NodePool, reference: bool) -> dict[str, Any]:
    options = SchedulerOptions()
    snapshot = ClusterSnapshot(pods=pods)
    topology = build_topology(snapshot, [], [pool], {pool.name: its}, pods, options)
    scheduler = Scheduler(
        [pool], {pool.name: its}, topology=topology, options=options, reference=reference
    )
    return scheduler.solve(pods).to_json_dict()


@pytest.mark.parametrize(("cpu", "count", "n_types"), [("20", 150, 40), ("60", 200, 40)])
def test_decisions_at_the_limits_match_filtering_every_time(
    cpu: str, count: int, n_types: int
) -> None:
    its = instance_types(n_types)
    pods = _bench().PodFactory(11).diverse(count)
    fast = solve(pods, its, limited_pool(cpu), reference=False)
    slow = solve(pods, its, limited_pool(cpu), reference=True)
    assert fast == slow
    assert fast["podErrors"], "the scenario must actually run into the limits"
    assert fast["nodeClaims"]


def test_affordable_types_are_filtered_once_per_limits_state(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = 0
    exceeds_any = rl.exceeds_any

    def counting(capacity: Any, remaining: Any) -> bool:
        nonlocal calls
        calls += 1
        return exceeds_any(capacity, remaining)

    monkeypatch.setattr(rl, "exceeds_any", counting)
    its = instance_types(100)
    pods = _bench().PodFactory(3).generic(300)
    result = solve(pods, its, limited_pool("30"), reference=False)
    claims = len(result["nodeClaims"])
    assert len(result["podErrors"]) > 100
    # At most one pass over the types per limits state (the start, then one per NodeClaim),
    # plus the one pool-wide check each time: nothing per pending pod.
    assert calls <= (claims + 1) * (len(its) + 1)
