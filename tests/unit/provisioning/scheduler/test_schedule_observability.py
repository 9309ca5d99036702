"""What a solve reports beyond placements: template hash, why pools were skipped, each
pending pod's effective zone, and the scheduler's own metrics."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from scheduler_helpers import fake_labels as fake_labels  # autouse fixture
from scheduler_helpers import nodepool, pod, solve

from karpenter_core import metrics
from karpenter_core.apis.v1 import NodePool
from karpenter_core.provisioning.scheduler import schedule
from karpenter_core.provisioning.scheduler.solvemetrics import effective_zone
from karpenter_core.runtime.scope import controller_scope
from karpenter_core.scheduling.requirements import IN, Requirement, Requirements
from karpenter_core.state.snapshot import ClusterSnapshot
from karpenter_core.testing.fakecatalog import instance_type

ZONE = "topology.kubernetes.io/zone"
INSTANCE_TYPE = "node.kubernetes.io/instance-type"
HASH = "karpenter.sh/nodepool-hash"


@pytest.fixture(autouse=True)
def _clean() -> Iterator[None]:
    metrics.reset()
    yield
    metrics.reset()


def zone_pod(*zones: str) -> Any:
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": ZONE, "operator": "In", "values": list(zones)}]}
                ]
            }
        }
    }
    return pod(affinity=affinity)


# --- template hash ---------------------------------------------------------------------------


def test_new_nodeclaims_carry_the_computed_nodepool_hash() -> None:
    np = nodepool()
    assert HASH not in (np.to_dict()["metadata"].get("annotations") or {})
    results = solve([pod()], [np])
    [nc] = results.new_nodeclaims
    annotations = nc.to_nodeclaim_dict()["metadata"]["annotations"]
    assert annotations[HASH] == np.hash()
    assert annotations["karpenter.sh/nodepool-hash-version"] == "v3"


def test_a_stale_hash_annotation_is_not_copied() -> None:
    d = nodepool().to_dict()
    d["metadata"]["annotations"] = {HASH: "stale"}
    its = {"default": [instance_type("t1")]}
    results = schedule(ClusterSnapshot(), [pod()], [NodePool.from_dict(d)], its)
    [nc] = results.new_nodeclaims
    assert nc.annotations[HASH] == nodepool().hash()


# --- skipped pools ---------------------------------------------------------------------------


def min_values_pool(name: str = "default") -> Any:
    return nodepool(
        name,
        requirements=[
            {"key": INSTANCE_TYPE, "operator": "In", "values": ["t1", "t2", "t3"], "minValues": 3}
        ],
    )


def test_a_pool_dropped_for_min_values_is_flagged() -> None:
    its = [instance_type("t1"), instance_type("t2", cpu=8, memory_gi=8)]
    results = solve([pod()], [min_values_pool()], instance_types=its)
    assert "default" in results.skipped_nodepools
    assert results.min_values_skipped_nodepools == frozenset({"default"})


def test_a_pool_dropped_for_having_no_instance_types_is_not_flagged_as_min_values() -> None:
    results = solve([pod()], [nodepool()], instance_types={"default": []})
    assert results.skipped_nodepools == {"default": "no instance types"}
    assert results.min_values_skipped_nodepools == frozenset()


# --- effective zones -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("zones", "expected"),
    [
        ((), "flexible"),
        (("test-zone-2",), "test-zone-2"),
        (("test-zone-1", "test-zone-3"), "flexible"),
    ],
)
def test_each_pending_pod_reports_its_effective_zone(zones: tuple[str, ...], expected: str) -> None:
    p = zone_pod(*zones) if zones else pod()
    results = solve([p])
    assert results.effective_zones == {p.key: expected}


def zone_reqs(*zones: str) -> Requirements:
    return Requirements(Requirement.new(ZONE, IN, zones))


@pytest.mark.parametrize(
    ("pod_zones", "volume_zones", "spread", "expected"),
    [
        ((), [("a",)], None, "a"),
        ((), [("a",), ("b",)], None, "flexible"),
        (("a", "b"), [("b",)], None, "b"),
        (("a",), [("b",)], None, "none"),
        ((), [], {"c"}, "c"),
        (("a", "b"), [], {"b", "c"}, "b"),
        (("a",), [], {"c"}, "none"),
    ],
)
def test_effective_zone_intersects_pod_volume_and_spread_zones(
    pod_zones: tuple[str, ...],
    volume_zones: list[tuple[str, ...]],
    spread: set[str] | None,
    expected: str,
) -> None:
    strict = zone_reqs(*pod_zones) if pod_zones else Requirements()
    volumes = [zone_reqs(*z) for z in volume_zones]
    assert effective_zone(strict, volumes, spread) == expected


def test_an_unsatisfiable_zonal_spread_means_no_zone() -> None:
    assert effective_zone(Requirements(), [], None, spread_satisfiable=False) == "none"


def test_pods_that_are_not_pending_have_no_effective_zone() -> None:
    running = pod()
    raw = dict(running.raw)
    raw["status"] = {"phase": "Running"}
    moved = type(running).from_dict(raw)
    results = solve([moved])
    assert results.effective_zones == {}


# --- metrics ---------------------------------------------------------------------------------


def duration_count(controller: str) -> float | None:
    return metrics.sample(
        "karpenter_scheduler_scheduling_duration_seconds_count", {"controller": controller}
    )


def test_every_solve_is_timed_under_the_given_controller() -> None:
    its = {"default": [instance_type("t1")]}
    schedule(ClusterSnapshot(), [pod()], [nodepool()], its, controller="disruption")
    assert duration_count("disruption") == 1.0


def test_the_controller_defaults_to_the_running_reconcile() -> None:
    with controller_scope("disruption"):
        solve([pod()])
    assert duration_count("disruption") == 1.0
    assert duration_count("") is None


def test_queue_depth_is_left_at_zero_and_unfinished_work_is_removed() -> None:
    its = {"default": [instance_type("t1")]}
    schedule(ClusterSnapshot(), [pod(), pod()], [nodepool()], its, controller="provisioner")
    depth = metrics.samples("karpenter_scheduler_queue_depth")
    assert [(labels["controller"], value) for labels, value in depth] == [("provisioner", 0.0)]
    assert metrics.samples("karpenter_scheduler_unfinished_work_seconds") == []


def test_a_new_solve_replaces_the_controllers_previous_queue_series() -> None:
    its = {"default": [instance_type("t1")]}
    for _ in range(3):
        schedule(ClusterSnapshot(), [pod()], [nodepool()], its, controller="provisioner")
    schedule(ClusterSnapshot(), [pod()], [nodepool()], its, controller="disruption")
    controllers = sorted(
        labels["controller"] for labels, _ in metrics.samples("karpenter_scheduler_queue_depth")
    )
    assert controllers == ["disruption", "provisioner"]
