"""In-flight NodeClaims with equal pod counts are tried in upstream's exact order.

Upstream re-sorts ``newNodeClaims`` by pod count with Go's ``sort.Slice`` (pdqsort, not
stable) before every pod no existing node takes, in place, so ties keep whatever order the
previous sorts left. The expected orders here are traced by hand through Go's algorithm
(``src/sort/zsortfunc.go``); ``tests/integration/test_gosort_parity.py`` checks the port
against Go itself.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from scheduler_helpers import fake_labels as fake_labels  # autouse fixture
from scheduler_helpers import nodepool, pod

from karpenter_core.provisioning.scheduler import DEFAULT_OPTIONS, build_topology
from karpenter_core.provisioning.scheduler.queue import (
    Queue,
    go_sort_slice,
    sort_slice,
    stable_after_one_change,
)
from karpenter_core.provisioning.scheduler.results import Results
from karpenter_core.provisioning.scheduler.scheduler import Scheduler
from karpenter_core.state.snapshot import ClusterSnapshot
from karpenter_core.testing.fakecatalog import instance_type


def _perm(keys: list[int]) -> list[int]:
    perm = list(range(len(keys)))
    sort_slice(perm, keys.__getitem__)
    return perm


def test_one_smaller_element_last_of_fifteen() -> None:
    """Keys ``1 x14, 0``. The pivot sample (indexes 3, 6, 9) is all ones, so index 6 is the
    pivot and the slice looks ascending; the nearly-sorted pass stops at the 0 but does not
    shift (fewer than 50). Partition: pivot to the front (6 <-> 0), the 0 swaps with index
    1, the pivot goes back to 1: ``[14, 6, 2, 3, 4, 5, 0, 7, ...]``, split at 1 (even enough).
    The 13 on the right all equal the pivot left of them: the equal-partition moves its
    sample pivot (index 8) to the front (``8 <-> 2``) and is done."""
    assert _perm([1] * 14 + [0]) == [14, 6, 8, 3, 4, 5, 0, 7, 2, 9, 10, 11, 12, 13, 1]


def test_one_grown_element_first_of_fifteen() -> None:
    """Keys ``2, 1 x14`` (a NodeClaim at the front gained a pod). Pivot index 6; the first
    partition finds nothing smaller, so the pivot stays at 0 (``6 <-> 0``) and the split is
    uneven. Patterns are broken on [1, 15): xorshift from 14 gives 14, 9, 14, so indexes 6,
    7, 8 swap with 1, 10, 1. The sample (4, 7, 10) is flat and the element left of the range
    equals the pivot, so an equal-partition runs: pivot (now element 10) to index 1, the 2 met
    at index 8 swaps with the last element, and the range ends there."""
    assert _perm([2] + [1] * 14) == [6, 10, 2, 3, 4, 5, 1, 8, 14, 9, 7, 11, 12, 13, 0]


@pytest.mark.parametrize("n", [0, 1, 2, 12, 13, 49, 50, 51, 200])
def test_sorted_input_with_ties_is_left_alone(n: int) -> None:
    keys = sorted(random.Random(n).randrange(4) for _ in range(n))
    assert _perm(keys) == list(range(n))


def test_short_slices_sort_stably() -> None:
    rng = random.Random(5)
    for n in range(13):
        keys = [rng.randrange(3) for _ in range(n)]
        assert _perm(keys) == sorted(range(n), key=keys.__getitem__)


def test_go_sort_slice_sorts() -> None:
    rng = random.Random(9)
    for n in (13, 40, 64, 300):
        keys = [rng.randrange(n // 3) for _ in range(n)]
        perm = _perm(keys)
        assert sorted(perm) == list(range(n))
        assert [keys[i] for i in perm] == sorted(keys)


def _one_change(rng: random.Random, n: int, append: bool) -> list[int]:
    keys = sorted(rng.randrange(4) for _ in range(n - 1 if append else n))
    if append:
        return [*keys, rng.randrange(4)]
    keys[rng.randrange(n)] += rng.randrange(1, 3)
    return keys


@pytest.mark.parametrize("append", [False, True])
def test_stable_after_one_change_only_when_go_ends_stable(append: bool) -> None:
    """The scheduler's shortcut: when the helper says so, Go's order is the stable one."""
    rng = random.Random(11)
    said_stable = said_nothing = 0
    for n in [*range(2, 80), 150, 400]:
        for _ in range(15):
            keys = _one_change(rng, n, append)
            if keys == sorted(keys):
                continue
            verdict = stable_after_one_change(n, lambda i, j, k=keys: k[i] < k[j])
            changed = n - 1 if append else next(i for i in range(n - 1) if keys[i] > keys[i + 1])
            shortcut = stable_after_one_change(n, lambda i, j, k=keys: k[i] < k[j], changed)
            assert shortcut == verdict, keys
            if verdict:
                said_stable += 1
                assert _perm(keys) == sorted(range(n), key=keys.__getitem__), keys
            else:
                said_nothing += 1
    assert said_stable and said_nothing


def test_go_sort_slice_uses_only_less_and_swap() -> None:
    """The generic entry point, as the scheduler's reference path uses it."""
    data = [3, 1, 2, 1, 0, 3, 2, 1, 0, 0, 1, 2, 3, 1, 2]
    swaps: list[tuple[int, int]] = []

    def swap(i: int, j: int) -> None:
        swaps.append((i, j))
        data[i], data[j] = data[j], data[i]

    go_sort_slice(len(data), lambda i, j: data[i] < data[j], swap)
    assert data == sorted(data)
    assert swaps


def test_queue_breaks_full_ties_as_go_does() -> None:
    """Pods alike down to the uid (none) keep Go's order, not their input order."""
    items = [(1, f"p{i}") for i in range(14)] + [(0, "big")]
    queue = Queue(items, sort_key=lambda x: x[0], identity=lambda x: x[1])
    order = [x[1] for x in queue.items()]
    expected = [14, 6, 8, 3, 4, 5, 0, 7, 2, 9, 10, 11, 12, 13, 1]
    assert order == [items[i][1] for i in expected]


def test_queue_without_ties_sorts_by_key() -> None:
    items = [(3, "c"), (1, "a"), (2, "b")]
    queue = Queue(items, sort_key=lambda x: x[0], identity=lambda x: x[1])
    assert [x[1] for x in queue.items()] == ["a", "b", "c"]


# -- the scheduler --


def _solve(pods: list[Any], reference: bool) -> Results:
    """One NodePool, one 4-CPU type: two 3-CPU pods never share a NodeClaim."""
    pool = nodepool()
    its = {pool.name: [instance_type("four-cpu", cpu=4, memory_gi=16, pods=100)]}
    snapshot = ClusterSnapshot(pods=pods)
    topology = build_topology(snapshot, [], [pool], its, pods, DEFAULT_OPTIONS)
    return Scheduler([pool], its, topology=topology, reference=reference).solve(pods)


def _holder(results: Results, name: str) -> int:
    (index,) = [
        i for i, nc in enumerate(results.new_nodeclaims) if any(p.name == name for p in nc.pods)
    ]
    return index


@pytest.mark.parametrize("reference", [False, True])
def test_fifteen_tied_nodeclaims_take_the_next_pod_in_go_order(reference: bool) -> None:
    """Fifteen 3-CPU pods open fifteen NodeClaims (N0..N14, one pod each; every sort sees
    ones only and changes nothing). The 500m pod takes N0, the first. Before the 400m pod
    the counts read ``2, 1 x14``, which Go sorts to N6, N10, N2, ... (traced above): upstream
    puts it on N6, where a creation-order tie-break would have picked N1."""
    big = [pod(cpu="3") for _ in range(15)]
    second = pod(name="second", cpu="500m")
    third = pod(name="third", cpu="400m")
    results = _solve([*big, second, third], reference)
    assert results.pod_errors == {}
    assert [_holder(results, p.name) for p in big] == list(range(15))
    assert _holder(results, "second") == 0
    assert _holder(results, "third") == 6


@pytest.mark.parametrize("reference", [False, True])
def test_sixty_tied_nodeclaims_shift_stably(reference: bool) -> None:
    """From 50 NodeClaims a flat pivot sample lets Go fix one grown count by shifting it
    past its equals, which keeps the others in order: after N0 takes the 500m pod, the 400m
    pod goes to N1, and the 300m pod (counts ``1 x58, 2, 2``: N0 then N1 at the end) to N2."""
    big = [pod(cpu="3") for _ in range(60)]
    small = [pod(name=f"small-{i}", cpu=f"{500 - 100 * i}m") for i in range(3)]
    results = _solve([*big, *small], reference)
    assert results.pod_errors == {}
    assert [_holder(results, p.name) for p in small] == [0, 1, 2]
