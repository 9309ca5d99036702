"""The ICE cache: marks, their 3-minute expiry on a virtual clock, and sequence numbers."""

from __future__ import annotations

import pytest

from karpenter_core.cloudprovider.unavailable import (
    UNAVAILABLE_OFFERINGS_TTL,
    UnavailableOfferings,
    offering_key,
)
from karpenter_core.runtime.clock import VirtualClock


@pytest.fixture
def clock() -> VirtualClock:
    return VirtualClock()


@pytest.fixture
def ice(clock: VirtualClock) -> UnavailableOfferings:
    return UnavailableOfferings(clock)


def test_ttl_is_three_minutes() -> None:
    assert UNAVAILABLE_OFFERINGS_TTL == 180.0


def test_key_format_matches_upstream() -> None:
    assert offering_key("m5.large", "us-west-2a", "spot") == "spot:m5.large:us-west-2a"
    assert offering_key("m5.large", "us-west-2a", "spot", "pg-1") == "spot:m5.large:us-west-2a:pg-1"
    assert (
        offering_key("m5.large", "us-west-2a", "spot", "pg-1", "2")
        == "spot:m5.large:us-west-2a:pg-1:2"
    )


def test_marked_offering_is_unavailable_only_for_its_zone_and_capacity_type(
    ice: UnavailableOfferings,
) -> None:
    ice.mark("m5.large", "us-west-2a", "spot", "InsufficientInstanceCapacity")
    assert ice.is_unavailable("m5.large", "us-west-2a", "spot")
    assert not ice.is_unavailable("m5.large", "us-west-2b", "spot")
    assert not ice.is_unavailable("m5.large", "us-west-2a", "on-demand")
    assert not ice.is_unavailable("m5.xlarge", "us-west-2a", "spot")


def test_mark_expires_after_three_minutes(ice: UnavailableOfferings, clock: VirtualClock) -> None:
    ice.mark("m5.large", "us-west-2a", "spot")
    clock.advance(179)
    assert ice.is_unavailable("m5.large", "us-west-2a", "spot")
    clock.advance(1)
    assert not ice.is_unavailable("m5.large", "us-west-2a", "spot")
    assert len(ice) == 0


def test_marking_again_extends_the_mark(ice: UnavailableOfferings, clock: VirtualClock) -> None:
    ice.mark("m5.large", "us-west-2a", "spot")
    clock.advance(120)
    ice.mark("m5.large", "us-west-2a", "spot")
    clock.advance(120)
    assert ice.is_unavailable("m5.large", "us-west-2a", "spot")
    clock.advance(60)
    assert not ice.is_unavailable("m5.large", "us-west-2a", "spot")


def test_seq_changes_on_mark_and_on_expiry_for_that_type_only(
    ice: UnavailableOfferings, clock: VirtualClock
) -> None:
    before, other = ice.seq("m5.large"), ice.seq("c5.large")
    ice.mark("m5.large", "us-west-2a", "spot")
    marked = ice.seq("m5.large")
    assert marked != before
    assert ice.seq("c5.large") == other
    clock.advance(UNAVAILABLE_OFFERINGS_TTL)
    assert ice.seq("m5.large") != marked
    assert ice.seq("c5.large") == other


def test_capacity_type_mark_covers_every_type_and_changes_every_seq(
    ice: UnavailableOfferings, clock: VirtualClock
) -> None:
    seq = ice.seq("m5.large")
    ice.mark_capacity_type("spot")
    assert ice.is_unavailable("m5.large", "us-west-2a", "spot")
    assert ice.is_unavailable("c6g.large", "us-west-2d", "spot")
    assert not ice.is_unavailable("m5.large", "us-west-2a", "on-demand")
    assert ice.seq("m5.large") != seq
    clock.advance(UNAVAILABLE_OFFERINGS_TTL)
    assert not ice.is_unavailable("m5.large", "us-west-2a", "spot")


def test_zone_is_unavailable_only_when_all_its_subnets_are(ice: UnavailableOfferings) -> None:
    ice.mark_subnet("subnet-1")
    subnets = ["subnet-1", "subnet-2"]
    assert not ice.is_unavailable("m5.large", "us-west-2a", "spot", subnet_ids=subnets)
    ice.mark_subnet("subnet-2")
    assert ice.is_unavailable("m5.large", "us-west-2a", "spot", subnet_ids=subnets)
    # no subnets known for the zone: subnet marks say nothing about it
    assert not ice.is_unavailable("m5.large", "us-west-2a", "spot", subnet_ids=[])


def test_placement_group_mark_does_not_block_ordinary_launches(ice: UnavailableOfferings) -> None:
    ice.mark("m5.large", "us-west-2a", "on-demand", placement_group_id="pg-1")
    assert ice.is_unavailable("m5.large", "us-west-2a", "on-demand", placement_group_id="pg-1")
    assert not ice.is_unavailable("m5.large", "us-west-2a", "on-demand")


def test_delete_and_flush(ice: UnavailableOfferings) -> None:
    ice.mark("m5.large", "us-west-2a", "spot")
    seq = ice.seq("m5.large")
    ice.delete("m5.large", "us-west-2a", "spot")
    assert not ice.is_unavailable("m5.large", "us-west-2a", "spot")
    assert ice.seq("m5.large") != seq
    ice.mark("m5.large", "us-west-2b", "spot")
    ice.mark_capacity_type("on-demand")
    ice.flush()
    assert not ice.is_unavailable("m5.large", "us-west-2b", "spot")
    assert not ice.is_unavailable("m5.large", "us-west-2b", "on-demand")


def test_ttl_must_be_positive(clock: VirtualClock) -> None:
    with pytest.raises(ValueError, match="ttl"):
        UnavailableOfferings(clock, ttl=0)
