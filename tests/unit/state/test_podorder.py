"""KeyOrdered: cluster state's pods in key order, kept as they change.

The snapshots read its tuple as "every pod, ordered by key"; whatever the mix of new,
replaced and removed keys between two reads, it must equal sorting the map afresh."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from karpenter_core.state.podorder import KeyOrdered

_keys = st.text(alphabet="abcdef/-", min_size=1, max_size=4)
_op = st.one_of(
    st.tuples(st.just("set"), _keys, st.integers(1, 1_000)),
    st.tuples(st.just("pop"), _keys, st.just(0)),
    st.tuples(st.just("read"), st.just(""), st.just(0)),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(_keys, st.integers(1, 1_000)), max_size=300), st.lists(_op, max_size=300))
def test_reads_equal_the_sorted_map(
    initial: list[tuple[str, int]], ops: list[tuple[str, str, int]]
) -> None:
    ordered: KeyOrdered[int] = KeyOrdered()
    model: dict[str, int] = {}
    for key, value in initial:
        assert ordered.set(key, value) == model.get(key)
        model[key] = value
    ordered.values()  # what follows is the incremental path: merges, holes, in-place sets
    for op, key, value in ops:
        if op == "set":
            assert ordered.set(key, value) == model.get(key)
            model[key] = value
        elif op == "pop":
            assert ordered.pop(key) == model.pop(key, None)
        else:
            assert ordered.values() == tuple(model[k] for k in sorted(model))
        assert len(ordered) == len(model)
        assert ordered.get(key) == model.get(key)
    assert ordered.values() == tuple(model[k] for k in sorted(model))


def test_a_read_is_cached_until_a_change() -> None:
    ordered: KeyOrdered[str] = KeyOrdered()
    for key in ("b", "a", "c"):
        ordered.set(key, key.upper())
    first = ordered.values()
    assert first == ("A", "B", "C")
    assert ordered.values() is first
    ordered.set("b", "B2")
    assert ordered.values() == ("A", "B2", "C")
    ordered.pop("a")
    ordered.set("aa", "AA")
    assert ordered.values() == ("AA", "B2", "C")
    assert "a" not in ordered and "aa" in ordered


def test_few_new_keys_are_inserted_many_are_sorted_afresh() -> None:
    """Both merge paths give the same order: a handful of keys among many go in by
    binary search; a burst larger than a 32nd of the keys is sorted with the rest."""
    for burst in (3, 500):
        ordered: KeyOrdered[int] = KeyOrdered()
        for i in range(0, 2_000, 2):
            ordered.set(f"ns/pod-{i:05d}", i)
        ordered.values()
        for i in range(1, 2 * burst, 2):
            ordered.set(f"ns/pod-{i:05d}", i)
        for i in range(0, 200, 4):
            ordered.pop(f"ns/pod-{i:05d}")
        expected = sorted(
            [i for i in range(0, 2_000, 2) if i >= 200 or i % 4] + list(range(1, 2 * burst, 2))
        )
        assert list(ordered.values()) == expected
        # the merged keys are found again where they went: each replaced in place
        for i in expected:
            ordered.set(f"ns/pod-{i:05d}", -i)
        assert list(ordered.values()) == [-i for i in expected]
