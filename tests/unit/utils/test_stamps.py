"""Stamps: per-object "last done at" times, pruned at an amortised cost."""

from __future__ import annotations

from karpenter_core.utils.stamps import Stamps


def test_a_stamp_is_read_back_and_replaced() -> None:
    s = Stamps(10.0)
    assert s.get("a") is None
    s.stamp("a", 1.0)
    s.stamp("a", 5.0)
    assert s.get("a") == 5.0 and len(s) == 1


def test_expired_stamps_go_at_a_prune_and_recent_ones_stay() -> None:
    s = Stamps(10.0, min_prune=4)
    for i, key in enumerate("abcd"):
        s.stamp(key, float(i))  # a=0 b=1 c=2 d=3
    s.stamp("e", 11.5)  # the table is full: a and b (older than 10 s) go first
    assert (s.get("a"), s.get("b"), s.get("c"), s.get("e")) == (None, None, 2.0, 11.5)
    assert s.prunes == 1


def test_more_live_keys_than_the_threshold_do_not_prune_at_every_stamp() -> None:
    """A cluster with more live objects than the prune threshold, all stamped within the
    period: the old rule (prune whenever the table is past a fixed size) rebuilt the table
    at every stamp; the doubling threshold prunes a logarithmic number of times."""
    s = Stamps(1e9, min_prune=100)
    for i in range(100_000):
        s.stamp(i, float(i))
    assert len(s) == 100_000
    assert s.prunes <= 11  # 100, 200, 400, ... 102,400
