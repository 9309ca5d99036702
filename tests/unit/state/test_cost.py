"""ClusterCost: the per-NodePool offering table behind ``karpenter_nodepools_cost_total``
and Balanced consolidation (spec operator-and-lifecycle §4.12, upstream
``pkg/state/cost``)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from karpenter_core import metrics
from karpenter_core.apis.labels import (
    CAPACITY_TYPE_LABEL_KEY,
    LABEL_INSTANCE_TYPE,
    LABEL_TOPOLOGY_ZONE,
    NODEPOOL_LABEL_KEY,
)
from karpenter_core.cloudprovider.types import InstanceType
from karpenter_core.runtime.clock import VirtualClock
from karpenter_core.runtime.context import ControllerContext
from karpenter_core.runtime.events import EventRecorder
from karpenter_core.sim.apiserver import InMemoryApiServer
from karpenter_core.state.cost import (
    NECESSARY_LABELS,
    ClusterCost,
    OfferingCount,
    OfferingKey,
    cluster_cost_of,
    existing_cluster_cost,
)
from karpenter_core.testing import builders as b
from karpenter_core.testing import fakecatalog
from karpenter_core.testing.fake import FakeCloudProvider

SPOT = 1.50
ON_DEMAND = 3.00
ZONE = "test-zone-1"
ERRORS = "karpenter_nodepools_cost_tracker_errors_total"


@pytest.fixture(autouse=True)
def _clean_metrics() -> Iterator[None]:
    metrics.reset()
    yield
    metrics.reset()


def catalog(spot: float = SPOT, on_demand: float = ON_DEMAND) -> list[InstanceType]:
    """Upstream's test catalogue: one type, a spot and an on-demand offering in one zone."""
    return [
        fakecatalog.instance_type(
            "test-instance",
            offerings=[
                fakecatalog.offering("spot", ZONE, spot),
                fakecatalog.offering("on-demand", ZONE, on_demand),
            ],
        )
    ]


def nodeclaim(
    name: str,
    pool: str = "pool-a",
    capacity_type: str = "spot",
    instance_type: str = "test-instance",
    zone: str = ZONE,
) -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodeClaim",
        "metadata": {
            "name": name,
            "labels": {
                NODEPOOL_LABEL_KEY: pool,
                CAPACITY_TYPE_LABEL_KEY: capacity_type,
                LABEL_INSTANCE_TYPE: instance_type,
                LABEL_TOPOLOGY_ZONE: zone,
            },
        },
    }


class Env:
    """A ClusterCost alone over an API server holding the NodePools: the unit under test
    has no controllers, so this is not the kit's Environment."""

    def __init__(self, pools: tuple[str, ...] = ("pool-a", "pool-b")) -> None:
        self.clock = VirtualClock()
        self.kube = InMemoryApiServer(self.clock)
        self.provider = FakeCloudProvider(catalog())
        for p in pools:
            self.kube.create(b.nodepool(p))
        self.cost = ClusterCost(self.kube, self.provider)

    def add(self, *ncs: dict[str, Any]) -> None:
        for nc in ncs:
            assert self.cost.update_nodeclaim(nc) is None


@pytest.fixture
def env() -> Env:
    return Env()


def errors(pool: str) -> float:
    return metrics.sample(ERRORS, {"nodepool": pool}) or 0.0


def spot_key(instance_type: str = "test-instance") -> OfferingKey:
    return OfferingKey(ZONE, "spot", instance_type)


def od_key(instance_type: str = "test-instance") -> OfferingKey:
    return OfferingKey(ZONE, "on-demand", instance_type)


# -- adding ------------------------------------------------------------------------------------


def test_a_spot_nodeclaim_costs_its_offerings_price(env: Env) -> None:
    env.add(nodeclaim("a"))
    assert env.cost.nodepool_cost("pool-a") == pytest.approx(SPOT)
    assert env.cost.offerings("pool-a") == {spot_key(): OfferingCount(1, SPOT)}
    assert env.cost.cluster_cost() == pytest.approx(SPOT)


def test_the_same_offering_twice_counts_two(env: Env) -> None:
    env.add(nodeclaim("a"), nodeclaim("b"))
    assert env.cost.offerings("pool-a") == {spot_key(): OfferingCount(2, SPOT)}
    assert env.cost.nodepool_cost("pool-a") == pytest.approx(2 * SPOT)


def test_offerings_and_nodepools_are_kept_apart(env: Env) -> None:
    env.add(
        nodeclaim("a"),
        nodeclaim("b", capacity_type="on-demand"),
        nodeclaim("c", pool="pool-b"),
    )
    assert env.cost.nodepool_cost("pool-a") == pytest.approx(SPOT + ON_DEMAND)
    assert env.cost.nodepool_cost("pool-b") == pytest.approx(SPOT)
    assert env.cost.cluster_cost() == pytest.approx(2 * SPOT + ON_DEMAND)
    assert env.cost.nodepools() == ["pool-a", "pool-b"]


def test_a_nodeclaim_is_counted_once_however_often_it_is_updated(env: Env) -> None:
    nc = nodeclaim("a")
    for _ in range(3):
        env.add(nc)
    assert env.cost.offerings("pool-a") == {spot_key(): OfferingCount(1, SPOT)}


def test_a_counted_nodeclaim_stays_where_its_first_labels_put_it(env: Env) -> None:
    env.add(nodeclaim("a"))
    env.add(nodeclaim("a", capacity_type="on-demand", pool="pool-b"))
    assert env.cost.offerings("pool-a") == {spot_key(): OfferingCount(1, SPOT)}
    assert env.cost.nodepool_cost("pool-b") == 0.0


@pytest.mark.parametrize("missing", NECESSARY_LABELS)
def test_a_nodeclaim_missing_a_necessary_label_is_not_counted_until_it_has_it(
    env: Env, missing: str
) -> None:
    nc = nodeclaim("a")
    del nc["metadata"]["labels"][missing]
    assert env.cost.update_nodeclaim(nc) is None  # not an error: the labels come at launch
    assert env.cost.cluster_cost() == 0.0
    assert not env.cost.is_tracked("a")
    assert errors("pool-a") == 0.0
    env.add(nodeclaim("a"))
    assert env.cost.nodepool_cost("pool-a") == pytest.approx(SPOT)


@pytest.mark.parametrize(
    "broken",
    [
        {},
        {"metadata": None},
        {"metadata": {"name": "a", "labels": "not-a-map"}},
        {"metadata": {"name": "a", "labels": {**nodeclaim("x")["metadata"]["labels"], NODEPOOL_LABEL_KEY: 7}}},
    ],
)  # fmt: skip
def test_a_malformed_nodeclaim_is_ignored_not_raised(env: Env, broken: dict[str, Any]) -> None:
    assert env.cost.update_nodeclaim(broken) is None
    assert env.cost.cluster_cost() == 0.0


@pytest.mark.parametrize(
    "nc",
    [
        nodeclaim("a", instance_type="not-in-the-catalogue"),
        nodeclaim("a", zone="test-zone-9"),
        nodeclaim("a", capacity_type="reserved"),
    ],
    ids=["unknown-type", "unknown-zone", "unknown-capacity-type"],
)
def test_an_unknown_offering_is_counted_at_zero_and_logged(
    env: Env, nc: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR, logger="karpenter.state.cost"):
        assert env.cost.update_nodeclaim(nc) is None
    assert env.cost.is_tracked("a")
    assert env.cost.nodepool_cost("pool-a") == 0.0
    (offering,) = env.cost.offerings("pool-a").values()
    assert offering == OfferingCount(1, 0.0)
    (record,) = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert "no price for offering" in record.getMessage()
    # upstream logs this case and counts it only in the log, not the error metric
    assert errors("pool-a") == 0.0


def test_an_unknown_price_is_filled_in_by_the_next_repricing(env: Env) -> None:
    env.add(nodeclaim("a", instance_type="new-type"))
    assert env.cost.nodepool_cost("pool-a") == 0.0
    newer = [
        fakecatalog.instance_type("new-type", offerings=[fakecatalog.offering("spot", ZONE, 0.7)])
    ]
    env.cost.update_offerings("pool-a", newer)
    assert env.cost.nodepool_cost("pool-a") == pytest.approx(0.7)


def test_the_price_is_looked_up_once_per_offering_and_pool(env: Env) -> None:
    env.add(nodeclaim("a"))
    calls = env.provider.calls
    env.add(nodeclaim("b"))  # same offering: the kept price is reused
    assert env.provider.calls == calls
    env.add(nodeclaim("c", capacity_type="on-demand"))
    assert env.provider.calls == calls + 1


def test_a_nodepool_missing_from_the_api_is_an_error_and_a_retry_succeeds() -> None:
    env = Env(pools=("pool-a",))
    error = env.cost.update_nodeclaim(nodeclaim("a", pool="ghost"))
    assert error is not None and "nodeclaim a" in error and "nodepool ghost not found" in error
    assert errors("ghost") == 1.0
    assert not env.cost.is_tracked("a")
    assert env.cost.cluster_cost() == 0.0
    env.kube.create(b.nodepool("ghost"))
    env.add(nodeclaim("a", pool="ghost"))
    assert env.cost.nodepool_cost("ghost") == pytest.approx(SPOT)
    assert errors("ghost") == 1.0


def test_a_provider_failure_is_an_error_naming_the_pool(env: Env) -> None:
    env.provider.fail_for.add("pool-b")
    error = env.cost.update_nodeclaim(nodeclaim("a", pool="pool-b"))
    assert error is not None and "catalogue unavailable" in error and "pool-b" in error
    assert errors("pool-b") == 1.0
    assert errors("pool-a") == 0.0
    env.add(nodeclaim("b"))  # other pools are unaffected
    assert env.cost.nodepool_cost("pool-a") == pytest.approx(SPOT)


def test_an_invalid_nodepool_is_an_error_not_a_traceback() -> None:
    env = Env(pools=())
    bad = b.nodepool("bad")
    bad["spec"]["template"]["spec"]["requirements"] = "not-a-list"
    env.kube.create(bad)
    error = env.cost.update_nodeclaim(nodeclaim("a", pool="bad"))
    assert error is not None and "nodepool bad is invalid" in error
    assert errors("bad") == 1.0


# -- deleting ----------------------------------------------------------------------------------


def test_deleting_one_of_two_on_an_offering_decrements_it(env: Env) -> None:
    env.add(nodeclaim("a"), nodeclaim("b"))
    assert env.cost.delete_nodeclaim("a") is None
    assert env.cost.offerings("pool-a") == {spot_key(): OfferingCount(1, SPOT)}
    assert env.cost.nodepool_cost("pool-a") == pytest.approx(SPOT)


def test_deleting_from_a_mixed_pool_keeps_the_other_offering(env: Env) -> None:
    env.add(nodeclaim("a"), nodeclaim("b", capacity_type="on-demand"))
    env.cost.delete_nodeclaim("a")
    assert env.cost.offerings("pool-a") == {od_key(): OfferingCount(1, ON_DEMAND)}
    assert env.cost.nodepool_cost("pool-a") == pytest.approx(ON_DEMAND)


def test_deleting_from_one_pool_leaves_the_others(env: Env) -> None:
    env.add(nodeclaim("a"), nodeclaim("b", pool="pool-b"))
    env.cost.delete_nodeclaim("b")
    assert env.cost.nodepools() == ["pool-a"]
    assert env.cost.cluster_cost() == pytest.approx(SPOT)


def test_deleting_the_last_nodeclaim_prunes_the_offering_and_the_pool(env: Env) -> None:
    env.add(nodeclaim("a"))
    env.cost.delete_nodeclaim("a")
    assert env.cost.nodepools() == []
    assert env.cost.offerings("pool-a") == {}
    assert env.cost.nodepool_cost("pool-a") == 0.0
    assert not env.cost.is_tracked("a")


def test_deleting_an_untracked_nodeclaim_is_a_no_op(env: Env) -> None:
    env.add(nodeclaim("a"))
    assert env.cost.delete_nodeclaim("never-seen") is None
    assert env.cost.nodepool_cost("pool-a") == pytest.approx(SPOT)
    assert errors("pool-a") == 0.0


def test_re_adding_an_offering_after_it_was_pruned_counts_it_again() -> None:
    # Upstream's regression: an offering re-added after its count reached 0 while the
    # pool survived (kept alive by another offering) must count 1, also after re-pricing.
    env = Env()
    env.provider.its = [
        fakecatalog.instance_type("spot-only", offerings=[fakecatalog.offering("spot", ZONE, SPOT)]),
        fakecatalog.instance_type("od-only", offerings=[fakecatalog.offering("on-demand", ZONE, ON_DEMAND)]),
    ]  # fmt: skip
    env.add(nodeclaim("anchor", instance_type="od-only", capacity_type="on-demand"))
    env.add(nodeclaim("first", instance_type="spot-only"))
    env.cost.delete_nodeclaim("first")
    assert env.cost.cluster_cost() == pytest.approx(ON_DEMAND)
    env.add(nodeclaim("second", instance_type="spot-only"))
    assert env.cost.cluster_cost() == pytest.approx(ON_DEMAND + SPOT)
    env.cost.update_offerings("pool-a", env.provider.its)
    assert env.cost.cluster_cost() == pytest.approx(ON_DEMAND + SPOT)


def test_deleting_a_nodepool_forgets_it_and_its_nodeclaims(env: Env) -> None:
    env.add(
        nodeclaim("a"), nodeclaim("b", capacity_type="on-demand"), nodeclaim("c", pool="pool-b")
    )
    env.cost.delete_nodepool("pool-a")
    assert env.cost.nodepools() == ["pool-b"]
    assert env.cost.nodepool_cost("pool-a") == 0.0
    assert not env.cost.is_tracked("a") and not env.cost.is_tracked("b")
    assert env.cost.delete_nodeclaim("a") is None  # its later deletion is a no-op
    assert errors("pool-a") == 0.0
    assert env.cost.cluster_cost() == pytest.approx(SPOT)


def test_reset_forgets_everything(env: Env) -> None:
    env.add(nodeclaim("a"), nodeclaim("b", pool="pool-b"))
    env.cost.reset()
    assert env.cost.cluster_cost() == 0.0
    assert env.cost.nodepools() == []
    assert not env.cost.is_tracked("a")


# -- re-pricing --------------------------------------------------------------------------------


def test_repricing_recomputes_every_pool_from_counts(env: Env) -> None:
    env.add(
        nodeclaim("a"),
        nodeclaim("b", capacity_type="on-demand"),
        nodeclaim("c", pool="pool-b"),
    )
    new_spot = 2.50
    for pool in ("pool-a", "pool-b"):
        env.cost.update_offerings(pool, catalog(spot=new_spot))
    assert env.cost.nodepool_cost("pool-a") == pytest.approx(new_spot + ON_DEMAND)
    assert env.cost.nodepool_cost("pool-b") == pytest.approx(new_spot)
    assert env.cost.cluster_cost() == pytest.approx(2 * new_spot + ON_DEMAND)


def test_repricing_multiplies_by_the_count(env: Env) -> None:
    env.add(nodeclaim("a"), nodeclaim("b"), nodeclaim("c"))
    env.cost.update_offerings("pool-a", catalog(spot=0.5))
    assert env.cost.offerings("pool-a") == {spot_key(): OfferingCount(3, 0.5)}
    assert env.cost.nodepool_cost("pool-a") == pytest.approx(1.5)


def test_repricing_one_pool_leaves_the_others_prices(env: Env) -> None:
    env.add(nodeclaim("a"), nodeclaim("b", pool="pool-b"))
    env.cost.update_offerings("pool-a", catalog(spot=9.0))
    assert env.cost.nodepool_cost("pool-b") == pytest.approx(SPOT)


def test_an_offering_the_new_list_omits_keeps_its_price(env: Env) -> None:
    env.add(nodeclaim("a"), nodeclaim("b", capacity_type="on-demand"))
    only_spot = [
        fakecatalog.instance_type(
            "test-instance", offerings=[fakecatalog.offering("spot", ZONE, 2.0)]
        )
    ]
    env.cost.update_offerings("pool-a", [*only_spot, None])  # type: ignore[list-item]
    assert env.cost.offerings("pool-a")[od_key()] == OfferingCount(1, ON_DEMAND)
    assert env.cost.nodepool_cost("pool-a") == pytest.approx(2.0 + ON_DEMAND)


def test_repricing_an_untracked_pool_tracks_nothing(env: Env) -> None:
    env.cost.update_offerings("pool-a", catalog())
    assert env.cost.nodepools() == []
    assert env.cost.cluster_cost() == 0.0


def test_a_price_kept_from_repricing_is_used_for_the_next_nodeclaim(env: Env) -> None:
    env.add(nodeclaim("a"))
    env.cost.update_offerings("pool-a", catalog(spot=4.0))
    env.provider.its = catalog(spot=99.0)  # not consulted: the offering is tracked
    env.add(nodeclaim("b"))
    assert env.cost.nodepool_cost("pool-a") == pytest.approx(8.0)


# -- the model: any sequence of adds and deletes ------------------------------------------------

_OFFERINGS = [
    ("pool-a", "spot"),
    ("pool-a", "on-demand"),
    ("pool-b", "spot"),
    ("pool-b", "on-demand"),
]
_PRICE = {"spot": SPOT, "on-demand": ON_DEMAND}

_ops = st.lists(
    st.tuples(st.booleans(), st.integers(0, 5), st.sampled_from(_OFFERINGS)), max_size=40
)


@settings(max_examples=60, deadline=None)
@given(_ops)
def test_costs_always_equal_the_prices_of_the_counted_nodeclaims(
    ops: list[tuple[bool, int, tuple[str, str]]],
) -> None:
    env = Env()
    live: dict[str, tuple[str, str]] = {}  # name -> the (pool, capacity type) first seen
    for add, i, (pool, ct) in ops:
        name = f"nc-{i}"
        if add:
            env.add(nodeclaim(name, pool=pool, capacity_type=ct))
            live.setdefault(name, (pool, ct))
        else:
            assert env.cost.delete_nodeclaim(name) is None
            live.pop(name, None)
    for pool in ("pool-a", "pool-b"):
        expected = sum(_PRICE[ct] for p, ct in live.values() if p == pool)
        assert env.cost.nodepool_cost(pool) == pytest.approx(expected)
    assert env.cost.nodepools() == sorted({p for p, _ in live.values()})
    assert errors("pool-a") == errors("pool-b") == 0.0


# -- the shared instance -------------------------------------------------------------------------


def test_the_context_holds_one_tracker_created_on_first_use() -> None:
    clock = VirtualClock()
    kube = InMemoryApiServer(clock)
    provider = FakeCloudProvider(catalog())
    ctx = ControllerContext(
        kube=kube, clock=clock, cloud_provider=provider, recorder=EventRecorder(clock)
    )
    assert existing_cluster_cost(ctx) is None
    cost = cluster_cost_of(ctx)
    assert cluster_cost_of(ctx) is cost
    assert existing_cluster_cost(ctx) is cost
    assert cost.cloud_provider is provider and cost.kube is kube
