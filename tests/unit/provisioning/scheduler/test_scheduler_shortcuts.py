"""The solver's shortcuts never change a decision.

``Scheduler(reference=True)`` runs without memoised topology answers, hostname
anti-affinity indexes, signature-shared rejections and bisected instance-type filtering;
for the benchmark's diverse pod mix (and variants) both must produce identical results.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from scheduler_helpers import fake_labels as fake_labels  # autouse fixture

from karpenter_core.provisioning.scheduler import SchedulerOptions, build_topology
from karpenter_core.provisioning.scheduler.scheduler import Scheduler
from karpenter_core.state.snapshot import ClusterSnapshot
from karpenter_core.testing.fakecatalog import instance_types

BENCH = Path(__file__).resolve().parents[4] / "bench" / "scheduling.py"


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_scheduling_shortcuts", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_scheduling_shortcuts"] = module
    spec.loader.exec_module(module)
    return module


def _solve(pods: list[Any], its: list[Any], reference: bool, policy: str) -> dict[str, Any]:
    bench = _bench()
    pool = bench.nodepool()
    options = SchedulerOptions(preference_policy=policy)
    snapshot = ClusterSnapshot(pods=pods)
    topology = build_topology(snapshot, [], [pool], {"default": its}, pods, options)
    scheduler = Scheduler(
        [pool], {"default": its}, topology=topology, options=options, reference=reference
    )
    return scheduler.solve(pods).to_json_dict()


@pytest.mark.parametrize(
    ("seed", "count", "n_types"),
    [(1, 60, 8), (2, 120, 20), (3, 200, 40), (4, 90, 3), (42, 250, 400)],
)
def test_diverse_mix_decisions_match_reference(seed: int, count: int, n_types: int) -> None:
    its = instance_types(n_types)
    pods = _bench().PodFactory(seed).diverse(count)
    fast = _solve(pods, its, reference=False, policy="Respect")
    slow = _solve(pods, its, reference=True, policy="Respect")
    assert fast == slow


@pytest.mark.parametrize("policy", ["Respect", "Ignore"])
def test_preference_mix_decisions_match_reference(policy: str) -> None:
    its = instance_types(30)
    pods = _bench().PodFactory(7).preference(80)
    assert _solve(pods, its, False, policy) == _solve(pods, its, True, policy)


def test_nodeclaims_filled_by_a_scale_out_match_reference_and_are_not_asked_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Pods of three sizes filling many small NodeClaims: a NodeClaim found full for some
    requests is struck out for later pods asking the same, without changing a decision."""
    from karpenter_core.apis.objects import Pod
    from karpenter_core.provisioning.scheduler.nodeclaim import NodeClaim
    from karpenter_core.testing import builders as b

    sizes = (("250m", "1Gi"), ("750m", "2Gi"), ("100m", "128Mi"))
    pods = [
        Pod.from_dict(b.pod(f"p{i}", cpu=sizes[i % 3][0], memory=sizes[i % 3][1]))
        for i in range(900)
    ]
    its = instance_types(4)
    asked = 0
    can_add = NodeClaim.can_add

    def counting(self: NodeClaim, *args: Any, **kwargs: Any) -> Any:
        nonlocal asked
        asked += 1
        return can_add(self, *args, **kwargs)

    monkeypatch.setattr(NodeClaim, "can_add", counting)
    fast = _solve(pods, its, reference=False, policy="Respect")
    fast_asked, asked = asked, 0
    slow = _solve(pods, its, reference=True, policy="Respect")
    assert fast == slow
    nodeclaims = len(fast["nodeClaims"])
    assert nodeclaims > 30
    # every full NodeClaim asked once per size, every pod placed after a few questions;
    # a scan of all the full ones for each NodeClaim opened would be nodeclaims² / 2
    assert fast_asked < 3 * len(pods) + 3 * nodeclaims < asked
