"""Unit behaviour of the solver's parts: queue, reservations, error texts, helpers."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scheduler_helpers import fake_labels as fake_labels  # autouse fixture
from scheduler_helpers import nodepool, pod, solve

from karpenter_core.provisioning.scheduler import resourcelist as rl
from karpenter_core.provisioning.scheduler.errors import (
    CombinedError,
    InstanceTypeFilterError,
    NodePoolError,
    PodError,
    ReservedOfferingError,
    is_reserved_offering_error,
)
from karpenter_core.provisioning.scheduler.queue import Queue
from karpenter_core.provisioning.scheduler.reservations import ReservationManager
from karpenter_core.testing.fakecatalog import instance_type, offering

# --- queue ---------------------------------------------------------------------------------


def test_queue_orders_by_sort_key() -> None:
    q: Queue[int] = Queue([3, 1, 2], sort_key=lambda x: x, identity=str)
    assert [q.pop(), q.pop(), q.pop(), q.pop()] == [1, 2, 3, None]


def test_queue_stops_after_a_full_pass_without_progress() -> None:
    q: Queue[str] = Queue(["a", "b"], sort_key=lambda x: x, identity=lambda x: x)
    # Both fail and go to the back: after one full pass the head was pushed back when the
    # queue had its current length, so the loop ends.
    a = q.pop()
    assert a == "a"
    q.push(a)
    b = q.pop()
    assert b == "b"
    q.push(b)
    assert q.pop() is None
    assert len(q) == 2


def test_queue_keeps_going_while_something_succeeds() -> None:
    q: Queue[str] = Queue(["a", "b", "c"], sort_key=lambda x: x, identity=lambda x: x)
    q.push(q.pop() or "")  # a fails
    q.pop()  # b succeeds
    q.pop()  # c succeeds
    assert q.pop() == "a"  # queue shrank since a was pushed back: a gets another try


def test_pods_sort_largest_cpu_then_memory_first() -> None:
    small = pod(cpu="100m", memory="1Gi")
    big_cpu = pod(cpu="2", memory="1Gi")
    big_mem = pod(cpu="100m", memory="3Gi")
    results = solve([small, big_mem, big_cpu])
    order = [p.key for nc in results.new_nodeclaims for p in nc.pods]
    assert order == [big_cpu.key, big_mem.key, small.key]


# --- reservations --------------------------------------------------------------------------


def _reserved(rid: str, capacity: int) -> object:
    return offering(
        "reserved", "test-zone-1", 0.1, reservation_id=rid, reservation_capacity=capacity
    )


def test_reservation_capacity_is_the_smallest_seen() -> None:
    a = instance_type("a", offerings=[_reserved("r1", 3)])
    b = instance_type("b", offerings=[_reserved("r1", 1)])
    rm = ReservationManager({"p1": [a], "p2": [b]})
    assert rm.remaining_capacity(a.offerings[0]) == 1


def test_reserve_is_idempotent_per_host_and_release_returns_capacity() -> None:
    o = _reserved("r1", 1)
    rm = ReservationManager({"p": [instance_type("a", offerings=[o])]})
    rm.reserve("h1", [o])
    rm.reserve("h1", [o])
    assert rm.remaining_capacity(o) == 0
    assert rm.can_reserve("h1", o)
    assert not rm.can_reserve("h2", o)
    rm.release("h1", [o])
    assert rm.remaining_capacity(o) == 1
    assert rm.can_reserve("h2", o)


def test_release_without_reservation_is_a_no_op() -> None:
    o = _reserved("r1", 2)
    rm = ReservationManager({"p": [instance_type("a", offerings=[o])]})
    rm.release("nobody", [o])
    assert rm.remaining_capacity(o) == 2


def test_over_reserving_is_refused_with_a_message() -> None:
    o = _reserved("r1", 1)
    rm = ReservationManager({"p": [instance_type("a", offerings=[o])]})
    rm.reserve("h1", [o])
    with pytest.raises(ValueError, match="r1"):
        rm.reserve("h2", [o])


# --- error texts ---------------------------------------------------------------------------


def _filter_error(**flags: bool) -> InstanceTypeFilterError:
    e = InstanceTypeFilterError("zone In [a]", {"cpu": 1000, "pods": 1000})
    for k, v in flags.items():
        setattr(e, k, v)
    return e


@pytest.mark.parametrize(
    ("flags", "prefix"),
    [
        (
            {},
            "no instance type met the scheduling requirements or had enough resources or had a required offering",
        ),
        (
            {"has_offering": True},
            "no instance type met the scheduling requirements or had enough resources,",
        ),
        (
            {"fits": True},
            "no instance type met the scheduling requirements or had a required offering,",
        ),
        (
            {"requirements_met": True},
            "no instance type had enough resources or had a required offering,",
        ),
        ({"fits": True, "has_offering": True}, "no instance type met all requirements,"),
        (
            {"requirements_met": True, "has_offering": True},
            "no instance type has enough resources,",
        ),
        ({"requirements_met": True, "fits": True}, "no instance type has the required offering,"),
        (
            {
                "requirements_met": True,
                "fits": True,
                "has_offering": True,
                "requirements_and_fits": True,
            },
            "no instance type which met the scheduling requirements and had enough resources, had a required offering",
        ),
        (
            {
                "requirements_met": True,
                "fits": True,
                "has_offering": True,
                "fits_and_offering": True,
            },
            "no instance type which had enough resources and the required offering met the scheduling requirements",
        ),
        (
            {
                "requirements_met": True,
                "fits": True,
                "has_offering": True,
                "requirements_and_offering": True,
            },
            "no instance type which met the scheduling requirements and the required offering had the required resources",
        ),
        (
            {"requirements_met": True, "fits": True, "has_offering": True},
            "no instance type met the requirements/resources/offering tuple",
        ),
    ],
)
def test_filter_error_names_the_most_specific_unmet_criteria(
    flags: dict[str, bool], prefix: str
) -> None:
    message = str(_filter_error(**flags))
    assert message.startswith(prefix)
    assert message.endswith('requirements=zone In [a], resources={"cpu":"1","pods":"1"}')


def test_filter_error_hints_at_cpu_typo() -> None:
    e = InstanceTypeFilterError("", {"cpu": 2_000_000_000})
    e.requirements_met = e.has_offering = True
    assert str(e).endswith("(CPU request >= 1 Million, m vs M typo?)")


def test_filter_error_shows_daemon_overhead_range() -> None:
    e = InstanceTypeFilterError("r", {"cpu": 1000})
    e.track_daemon_overhead({"cpu": 1000})
    e.track_daemon_overhead({"cpu": 2000})
    assert 'resources=min={"cpu":"2"}, max={"cpu":"3"}' in str(e)


def test_min_values_error_comes_first() -> None:
    e = _filter_error(requirements_met=True)
    e.min_values_error = "minValues requirement is not met for label(s)"
    assert str(e).startswith("minValues requirement is not met for label(s), requirements=")


def test_reserved_offering_errors_are_recognised_through_wrappers() -> None:
    inner = ReservedOfferingError("could not be reserved")
    assert is_reserved_offering_error(CombinedError([PodError("x"), NodePoolError("p", inner)]))
    assert not is_reserved_offering_error(CombinedError([PodError("x")]))


def test_combined_errors_join_with_semicolons() -> None:
    assert str(CombinedError([PodError("a"), PodError("b", "c")])) == "a; b, c"


# --- resource arithmetic -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("requests", "available", "expected"),
    [
        ({"cpu": 1000}, {"cpu": 1000}, True),
        ({"cpu": 1001}, {"cpu": 1000}, False),
        ({"gpu": 0}, {"cpu": 1000}, True),
        ({"gpu": 1}, {"cpu": 1000}, False),
        ({}, {"cpu": -1}, False),
    ],
)
def test_fits_matches_upstream(
    requests: dict[str, int], available: dict[str, int], expected: bool
) -> None:
    assert rl.fits(requests, available) is expected


def test_min_of_keeps_only_resources_every_list_has() -> None:
    # Upstream MinResources: the finalised NodeClaim gains no zero-valued daemon resources.
    assert rl.min_of({"cpu": 2, "memory": 5}, {"cpu": 3}) == {"cpu": 2}


def test_subtract_keeps_only_the_first_lists_resources() -> None:
    assert rl.subtract({"cpu": 2}, {"cpu": 1, "memory": 5}) == {"cpu": 1}


# --- packing quality -----------------------------------------------------------------------


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=39), min_size=1, max_size=40))
def test_packing_never_leaves_two_half_empty_nodeclaims(tenths: list[int]) -> None:
    """A new NodeClaim opens only when the pod fits no planned one (any-fit), so at most one
    NodeClaim is half empty: count <= 2 * total / capacity + 1. One 4-CPU type (3.9 CPU
    allocatable), pods of 0.1..3.9 CPU. (Upstream tries the emptiest NodeClaim first, which
    can need one more node than first-fit-decreasing; we keep upstream's order.)"""
    catalog = [instance_type("only", cpu=4, memory_gi=64, pods=110)]
    pods = [pod(cpu=f"{t * 100}m") for t in tenths]
    results = solve(pods, [nodepool()], instance_types=catalog)
    assert results.pod_errors == {}
    assert len(results.new_nodeclaims) <= 2 * sum(tenths) / 39 + 1
    half_empty = [nc for nc in results.new_nodeclaims if 2 * nc.requests["cpu"] <= 3900]
    assert len(half_empty) <= 1


# --- results helpers for disruption --------------------------------------------------------


def _bound_pod(name: str, cpu: str) -> object:
    from karpenter_core.apis.objects import Pod

    return Pod.from_dict(
        {
            "metadata": {"name": name, "namespace": "default"},
            "spec": {
                "nodeName": "candidate",
                "containers": [
                    {"name": "c", "image": "i", "resources": {"requests": {"cpu": cpu}}}
                ],
            },
            "status": {"phase": "Running"},
        }
    )


def test_running_pod_that_cannot_move_is_reported() -> None:
    p = _bound_pod("stuck", "500")
    results = solve([p])  # type: ignore[list-item]
    assert not results.all_non_pending_pods_scheduled()
    assert results.non_pending_pod_scheduling_errors().startswith(
        "not all pods would schedule, default/stuck => "
    )


def test_running_pods_that_move_leave_no_errors() -> None:
    results = solve([_bound_pod("ok", "1")])  # type: ignore[list-item]
    assert results.all_non_pending_pods_scheduled()
    assert results.non_pending_pod_scheduling_errors() == "No Pod Scheduling Errors"
    assert results.nodepool_to_pods() == {"default": ["default/ok"]}


def test_option_set_bisects_only_cpu_sorted_lists() -> None:
    from karpenter_core.provisioning.scheduler.instancetypes import InstanceTypeIndex, OptionSet

    index = InstanceTypeIndex()
    small, big = index.wrap([instance_type("small", cpu=2), instance_type("big", cpu=8)])
    assert OptionSet([small, big]).sorted
    unsorted = OptionSet([big, small])
    assert not unsorted.sorted and not unsorted.simple
    assert unsorted.max_allocatable("cpu") == 7900


def test_timed_out_solve_keeps_placements_and_reports_the_rest() -> None:
    from karpenter_core.provisioning.scheduler import SchedulerOptions

    ticks = iter([0.0, 0.0, 0.0, 100.0, 100.0, 100.0])
    pods = [pod(cpu="3"), pod(cpu="2"), pod(cpu="1")]
    options = SchedulerOptions(timeout_seconds=60, monotonic=lambda: next(ticks))
    results = solve(pods, options=options)
    # Clock reads (on the given clock): the deadline, then one check per pod; the third
    # check is past it.
    placed = [p.key for nc in results.new_nodeclaims for p in nc.pods]
    assert placed == [pods[0].key, pods[1].key]
    assert set(results.pod_errors) == {pods[2].key}
    assert "timed out" in str(results.pod_errors[pods[2].key])


def test_consolidation_simulation_keeps_moved_pods_off_recently_changed_nodes() -> None:
    from karpenter_core.apis.objects import Node
    from karpenter_core.provisioning.scheduler.scheduler import Scheduler
    from karpenter_core.state.snapshot import ClusterSnapshot
    from karpenter_core.testing.fakecatalog import default_catalog

    node = Node.from_dict(
        {
            "metadata": {"name": "fresh", "labels": {"kubernetes.io/hostname": "fresh"}},
            "spec": {"providerID": "fake://fresh"},
            "status": {
                "allocatable": {"cpu": "4", "memory": "4Gi", "pods": "10"},
                "capacity": {"cpu": "4", "memory": "4Gi", "pods": "10"},
            },
        }
    )
    moving = _bound_pod("moving", "1")
    snapshot = ClusterSnapshot(nodes=[node])

    def plan(deleting: tuple[str, ...]) -> dict[str, object]:
        scheduler = Scheduler(
            [nodepool()],
            {"default": default_catalog()},
            state_nodes=snapshot.active_state_nodes(),
            under_consolidate_after=lambda sn: True,
            deleting_node_names=deleting,
        )
        return scheduler.solve([moving]).to_json_dict()

    assert plan(())["existingNodes"] == []
    assert plan(("candidate",))["existingNodes"] == [{"name": "fresh", "pods": ["default/moving"]}]
