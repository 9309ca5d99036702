"""A pod class's pending queue: queue order whatever the order of arrival, removed pods
never come back, a replaced pod is held once, and the unmarked view skips marked pods."""

from __future__ import annotations

import random

import attrs
from hypothesis import given, settings
from hypothesis import strategies as st

from karpenter_core.sim.pendingpods import ClassQueue, SortKey


@attrs.frozen
class _Pod:
    sort_key: SortKey
    marked: str = ""


def _walk(queue: ClassQueue, *, unmarked: bool = False) -> list[str]:
    out: list[str] = []
    pod = queue.unmarked_after(None) if unmarked else queue.first()
    while pod is not None:
        out.append(pod.sort_key[2])
        key = pod.sort_key
        pod = queue.unmarked_after(key) if unmarked else queue.after(key)
    return out


def _count_reads(queue: ClassQueue) -> list[int]:
    """Count the queue's member lookups from now on (in the returned one-item list)."""
    reads = [0]

    class Counting(dict[SortKey, object]):
        def get(self, key: SortKey, default: object = None) -> object:
            reads[0] += 1
            return super().get(key, default)

    queue._members = Counting(queue._members)  # type: ignore[assignment]
    return reads


def test_order_follows_the_key_not_arrival_and_removals_stick() -> None:
    rng = random.Random(3)
    pods = [
        _Pod((-rng.choice([0, 10]), float(rng.randint(0, 5)), f"ns/p{i:03}")) for i in range(300)
    ]
    queue = ClassQueue("Unschedulable")
    for pod in rng.sample(pods, len(pods)):
        queue.add(pod)
    gone = set(rng.sample(range(300), 200))  # enough to compact the stale entries
    for i in sorted(gone):
        queue.remove(pods[i])
    queue.remove(pods[min(gone)])  # removing twice changes nothing
    expected = [p.sort_key[2] for p in sorted(pods, key=lambda p: p.sort_key)]
    assert _walk(queue) == [k for k in expected if int(k[4:]) not in gone]
    assert len(queue) == 100


def test_a_marked_version_leaves_the_unmarked_view_and_is_held_once() -> None:
    queue = ClassQueue("Unschedulable")
    a, b, c = (_Pod((0, 0.0, f"ns/{n}")) for n in "abc")
    for pod in (c, a, b):
        queue.add(pod)
    assert _walk(queue, unmarked=True) == ["ns/a", "ns/b", "ns/c"]
    b_marked = attrs.evolve(b, marked="Unschedulable")
    queue.remove(b)
    queue.add(b_marked)
    queue.add(attrs.evolve(c, marked="SchedulingGated"))  # another reason: still unmarked
    assert _walk(queue) == ["ns/a", "ns/b", "ns/c"]
    assert _walk(queue, unmarked=True) == ["ns/a", "ns/c"]
    assert queue.at((0, 0.0, "ns/b")) is b_marked


def test_a_walk_drops_the_marked_keys_it_passes_and_a_pod_unmarked_again_returns() -> None:
    """A scale-out marks thousands of pods between compactions; each pass walked all of
    them again. The walk forgets the keys it passes over, so the next walk does not."""
    queue = ClassQueue("Unschedulable")
    pods = [_Pod((0, float(i), f"ns/p{i:04}")) for i in range(1000)]
    for pod in pods:
        queue.add(pod)
    for pod in pods[:250]:  # marked versions replace them (fewer than a compaction needs)
        queue.remove(pod)
        queue.add(attrs.evolve(pod, marked="Unschedulable"))
    reads = _count_reads(queue)
    first = queue.unmarked_after(None)
    assert first is not None and first.sort_key == pods[250].sort_key
    assert reads[0] >= 250
    reads[0] = 0
    again = queue.unmarked_after(None)
    assert again is not None and again.sort_key == pods[250].sort_key
    assert reads[0] == 1
    queue.remove(queue.at(pods[5].sort_key))  # type: ignore[arg-type]
    queue.add(pods[5])  # its condition cleared: unmarked again
    assert _walk(queue, unmarked=True)[:2] == ["ns/p0005", "ns/p0250"]
    assert len(_walk(queue, unmarked=True)) == 751


def test_a_walk_drops_the_removed_keys_it_passes_and_a_pod_added_again_returns() -> None:
    """Pods bound in a scale-out leave the queue one by one, fewer than a compaction
    needs; each pass's first read walked every one of them again. A read forgets the
    keys of removed pods it passes, so the next read does not."""
    queue = ClassQueue("Unschedulable")
    pods = [_Pod((0, float(i), f"ns/p{i:04}")) for i in range(1000)]
    for pod in pods:
        queue.add(pod)
    for pod in pods[:200]:
        queue.remove(pod)
    reads = _count_reads(queue)
    first = queue.first()
    assert first is not None and first.sort_key == pods[200].sort_key
    assert reads[0] >= 200
    reads[0] = 0
    again = queue.first()
    assert again is not None and again.sort_key == pods[200].sort_key
    assert reads[0] == 1
    queue.add(pods[7])  # the same pod pending again under its key
    assert _walk(queue)[:2] == ["ns/p0007", "ns/p0200"]
    assert len(_walk(queue)) == 801 == len(queue)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["add", "mark", "remove", "read", "burst"]),
            st.integers(0, 3),
            st.integers(0, 60),
        ),
        max_size=300,
    ),
    st.integers(0, 1200),
)
def test_walks_match_the_members_sorted_afresh_whatever_the_arrivals_and_reads(
    ops: list[tuple[str, int, int]], head: int
) -> None:
    """Keys that arrive out of order are put in place at the next read, one by one when
    few (after a long sorted head) and by a sort when many; either way both walks equal
    a fresh sort of what the queue holds."""
    queue = ClassQueue("Unschedulable")
    held: dict[SortKey, _Pod] = {}
    for i in range(head):  # a sorted head, so late keys are few against it
        pod = _Pod((0, float(i), f"ns/h{i:05}"))
        queue.add(pod)
        held[pod.sort_key] = pod
    for op, t, n in ops:
        key: SortKey = (0, float(t) if t else head + 0.5, f"ns/p{n:03}")
        old = held.get(key)
        if op == "burst":  # many keys at once, in reverse: more than one by one takes
            for j in reversed(range(n, n + 40)):
                pod = _Pod((0, float(t), f"ns/p{j:03}"))
                queue.remove(held.get(pod.sort_key, pod))
                queue.add(pod)
                held[pod.sort_key] = pod
        elif op == "read":
            assert _walk(queue) == [k[2] for k in sorted(held)]
        elif op == "remove" and old is not None:
            queue.remove(old)
            del held[key]
        elif op in ("add", "mark"):
            new = _Pod(key, "Unschedulable" if op == "mark" else "")
            if old is not None:
                queue.remove(old)
            queue.add(new)
            held[key] = new
    assert _walk(queue) == [k[2] for k in sorted(held)]
    assert _walk(queue, unmarked=True) == [k[2] for k in sorted(held) if not held[k].marked]
    assert len(queue) == len(held)
