"""The NodeOverlay evaluation and store (spec apis §4, upstream ``nodeoverlay/store.go`` and
the controller's validate/store steps): which overlay prices an offering, how capacity
merges, what a conflict is, all-or-nothing application, and what ``apply_all`` returns."""

from __future__ import annotations

import attrs
import pytest
from nodeoverlay_harness import (
    CAPACITY_TYPE,
    IT,
    NODEPOOL,
    ZONE,
    by_name,
    catalog,
    offering_prices,
    overlay,
    pool,
    req,
)

from karpenter_core.cloudprovider.errors import UnevaluatedNodePoolError, is_unevaluated_nodepool
from karpenter_core.cloudprovider.types import InstanceTypeOverhead, adjusted_price
from karpenter_core.controllers.nodeoverlay.store import (
    InstanceTypeStore,
    StoreSnapshot,
    evaluate,
    order_overlays,
)
from karpenter_core.testing import fakecatalog

FUSE = "smarter-devices/fuse"
GPU = "example.com/gpu"


def served(overlays: list, pools: list | None = None, name: str = "default") -> dict:
    """Evaluate, swap into a store, and return the pool's instance types by name."""
    pools = pools or [pool()]
    store = InstanceTypeStore()
    store.update(evaluate(overlays, pools).snapshot)
    its = next(p.instance_types for p in pools if p.name == name)
    return by_name(store.apply_all(name, its))


# --- ordering -------------------------------------------------------------------------------


def test_overlays_are_ordered_heaviest_first_then_by_name_descending() -> None:
    ordered = order_overlays(
        [
            overlay("a", weight=10),
            overlay("c"),
            overlay("b", weight=10),
            overlay("z", weight=1),
            overlay("a0", weight=50),
        ]
    )
    assert [o.name for o in ordered] == ["a0", "b", "a", "z", "c"]


def test_an_unset_weight_counts_as_zero() -> None:
    assert overlay("x").weight == 0


def test_the_heavier_overlay_prices_the_offering_whatever_its_name() -> None:
    small = [req(IT, "In", "small")]
    its = served(
        [
            overlay("a-light", requirements=small, weight=1, price="5"),
            overlay("z-heavy", requirements=small, weight=100, price="7"),
        ]
    )
    assert set(offering_prices(its["small"]).values()) == {7.0}


def test_equal_weights_the_later_name_is_evaluated_first_and_the_other_conflicts() -> None:
    small = [req(IT, "In", "small")]
    result = evaluate(
        [
            overlay("alpha", requirements=small, weight=5, price="1"),
            overlay("beta", requirements=small, weight=5, price="2"),
        ],
        [pool()],
    )
    assert result.applied == ("beta",)
    assert result.conflicts == ("alpha",)


# --- price ----------------------------------------------------------------------------------


def test_an_overlay_with_no_match_changes_nothing() -> None:
    its = served([overlay("x", requirements=[req(IT, "In", "medium")], price="9")])
    for original in catalog():
        assert offering_prices(its[original.name]) == offering_prices(original)
        assert not its[original.name].is_pricing_overlay_applied()


def test_a_price_overlay_reprices_only_the_offerings_its_requirements_select() -> None:
    base = by_name(catalog())["small"]
    its = served(
        [
            overlay(
                "spot-zone-1",
                requirements=[
                    req(IT, "In", "small"),
                    req(CAPACITY_TYPE, "In", "spot"),
                    req(ZONE, "In", "test-zone-1"),
                ],
                price_adjustment="+50%",
            )
        ]
    )
    before, after = offering_prices(base), offering_prices(its["small"])
    for key, price in before.items():
        if key == ("test-zone-1", "spot"):
            assert after[key] == pytest.approx(adjusted_price(price, "+50%"))
        else:
            assert after[key] == price
    assert offering_prices(its["large"]) == offering_prices(by_name(catalog())["large"])


def test_lower_weight_overlays_still_price_offerings_the_heavier_one_left_alone() -> None:
    its = served(
        [
            overlay("zone-1", requirements=[req(ZONE, "In", "test-zone-1")], weight=10, price="3"),
            overlay("everything", weight=1, price="9"),
        ]
    )
    for it in its.values():
        for (zone, _), price in offering_prices(it).items():
            assert price == (3.0 if zone == "test-zone-1" else 9.0)


def test_same_weight_price_overlays_on_disjoint_offerings_do_not_conflict() -> None:
    result = evaluate(
        [
            overlay("spot", requirements=[req(CAPACITY_TYPE, "In", "spot")], weight=3, price="1"),
            overlay(
                "od", requirements=[req(CAPACITY_TYPE, "In", "on-demand")], weight=3, price="2"
            ),
        ],
        [pool()],
    )
    assert result.conflicts == ()
    assert set(result.applied) == {"spot", "od"}


def test_same_weight_price_overlays_on_the_same_offering_conflict_and_the_loser_applies_nowhere() -> (
    None
):
    result = evaluate(
        [
            # "b" goes first (name descending) and prices every offering
            overlay("b", weight=7, price_adjustment="+1"),
            # "a" also selects large (not touched by anything else) and small's zone-1 offerings
            overlay("a", requirements=[req(ZONE, "In", "test-zone-1")], weight=7, price="100"),
        ],
        [pool()],
    )
    assert result.conflicts == ("a",)
    store = InstanceTypeStore()
    store.update(result.snapshot)
    for it in store.apply_all("default", catalog()):
        base = offering_prices(by_name(catalog())[it.name])
        for key, price in offering_prices(it).items():
            assert price == pytest.approx(base[key] + 1)


def test_a_price_only_overlay_does_not_conflict_with_a_capacity_only_one() -> None:
    result = evaluate(
        [
            overlay("price", weight=2, price="1"),
            overlay("cap", weight=2, capacity={FUSE: "1"}),
        ],
        [pool()],
    )
    assert result.conflicts == ()


# --- capacity -------------------------------------------------------------------------------


def test_a_capacity_overlay_adds_extended_resources_to_the_selected_types() -> None:
    its = served([overlay("fuse", requirements=[req(IT, "In", "large")], capacity={FUSE: "2"})])
    assert its["large"].capacity[FUSE] == 2000
    assert its["large"].allocatable()[FUSE] == 2000
    assert its["large"].is_capacity_overlay_applied()
    assert FUSE not in its["small"].capacity


def test_capacity_from_several_overlays_merges_and_the_heavier_wins_a_shared_key() -> None:
    its = served(
        [
            overlay("heavy", weight=10, capacity={FUSE: "4"}),
            overlay("light", weight=1, capacity={FUSE: "1", GPU: "2"}),
        ]
    )
    for it in its.values():
        assert it.capacity[FUSE] == 4000
        assert it.capacity[GPU] == 2000


def test_same_weight_capacity_overlays_on_different_resources_merge() -> None:
    result = evaluate(
        [overlay("b", weight=4, capacity={FUSE: "1"}), overlay("a", weight=4, capacity={GPU: "1"})],
        [pool()],
    )
    assert result.conflicts == ()
    store = InstanceTypeStore()
    store.update(result.snapshot)
    for it in store.apply_all("default", catalog()):
        assert it.capacity[FUSE] == 1000 and it.capacity[GPU] == 1000


def test_same_weight_capacity_overlays_on_the_same_resource_conflict() -> None:
    result = evaluate(
        [
            overlay("b", requirements=[req(IT, "In", "small")], weight=4, capacity={FUSE: "1"}),
            overlay("a", weight=4, capacity={FUSE: "3", GPU: "1"}),
        ],
        [pool()],
    )
    assert result.conflicts == ("a",)
    store = InstanceTypeStore()
    store.update(result.snapshot)
    its = by_name(store.apply_all("default", catalog()))
    assert its["small"].capacity[FUSE] == 1000
    assert GPU not in its["small"].capacity
    # "a" alone would have reached "large"; all or nothing, so it did not
    assert GPU not in its["large"].capacity and FUSE not in its["large"].capacity


def test_capacity_conflicts_compare_with_the_last_overlay_recorded_as_upstream_does() -> None:
    # Upstream's three-overlay case: good (w10, fuse) on "small"; conflicting-2 (w10,
    # hugepages) on "small"; conflicting-1 (w10, hugepages) on both types -> conflicts.
    hugepages = "hugepages-1Gi"
    result = evaluate(
        [
            overlay(
                "conflicting-overlay-1",
                requirements=[req(IT, "In", "small", "large")],
                weight=10,
                capacity={hugepages: "2Gi"},
            ),
            overlay(
                "good-overlay-1",
                requirements=[req(IT, "In", "small")],
                weight=10,
                capacity={FUSE: "1"},
            ),
            overlay(
                "conflicting-overlay-2",
                requirements=[req(IT, "In", "small")],
                weight=10,
                capacity={hugepages: "3Gi"},
            ),
        ],
        [pool()],
    )
    assert result.conflicts == ("conflicting-overlay-1",)
    assert set(result.applied) == {"good-overlay-1", "conflicting-overlay-2"}


# --- all or nothing across NodePools ----------------------------------------------------------


def test_an_overlay_that_conflicts_in_one_nodepool_is_applied_in_none() -> None:
    pools = [pool("alpha"), pool("beta")]
    result = evaluate(
        [
            # only beta: the NodePool label is always allowed on a pool's instance types
            overlay("b-beta-only", requirements=[req(NODEPOOL, "In", "beta")], weight=5, price="1"),
            overlay("a-everywhere", weight=5, price="2"),
        ],
        pools,
    )
    assert result.conflicts == ("a-everywhere",)
    store = InstanceTypeStore()
    store.update(result.snapshot)
    for it in store.apply_all("alpha", catalog()):
        assert offering_prices(it) == offering_prices(by_name(catalog())[it.name])
    for it in store.apply_all("beta", catalog()):
        assert set(offering_prices(it).values()) == {1.0}


def test_an_overlay_selects_by_the_nodepools_template_labels() -> None:
    pools = [pool("gpu", labels_={"team": "ml"}), pool("web", labels_={"team": "web"})]
    store = InstanceTypeStore()
    store.update(
        evaluate(
            [overlay("ml", requirements=[req("team", "In", "ml")], price="0.5")], pools
        ).snapshot
    )
    assert all(
        set(offering_prices(it).values()) == {0.5} for it in store.apply_all("gpu", catalog())
    )
    assert not any(it.is_pricing_overlay_applied() for it in store.apply_all("web", catalog()))


def test_applied_instance_types_do_not_gain_the_nodepool_or_template_label_requirements() -> None:
    pools = [pool("gpu", labels_={"team": "ml"})]
    store = InstanceTypeStore()
    store.update(
        evaluate(
            [overlay("ml", requirements=[req("team", "In", "ml")], price="0.5")], pools
        ).snapshot
    )
    for it in store.apply_all("gpu", catalog()):
        assert NODEPOOL not in it.requirements
        assert "team" not in it.requirements


# --- the store --------------------------------------------------------------------------------


def test_an_unevaluated_nodepool_is_an_unevaluated_nodepool_error() -> None:
    store = InstanceTypeStore()
    with pytest.raises(UnevaluatedNodePoolError, match='nodepool "default" is awaiting evaluation'):
        store.apply_all("default", catalog())
    store.update(evaluate([], [pool("other")]).snapshot)
    with pytest.raises(UnevaluatedNodePoolError) as err:
        store.apply_all("default", catalog())
    assert is_unevaluated_nodepool(err.value)


def test_an_evaluated_nodepool_without_overlays_gets_its_instance_types_unchanged() -> None:
    store = InstanceTypeStore()
    store.update(evaluate([], [pool()]).snapshot)
    its = catalog()
    out = store.apply_all("default", its)
    assert [a is b for a, b in zip(out, its, strict=True)] == [True, True]


def test_reset_forgets_every_evaluation() -> None:
    store = InstanceTypeStore()
    store.update(evaluate([], [pool()]).snapshot)
    store.reset()
    assert store.snapshot == StoreSnapshot()
    with pytest.raises(UnevaluatedNodePoolError):
        store.apply_all("default", catalog())


def test_applying_copies_on_write_and_never_changes_the_providers_instance_types() -> None:
    its = catalog()
    store = InstanceTypeStore()
    store.update(
        evaluate(
            [
                overlay(
                    "small-spot",
                    requirements=[req(IT, "In", "small"), req(CAPACITY_TYPE, "In", "spot")],
                    price="0.01",
                    capacity={FUSE: "1"},
                )
            ],
            [pool(its=its)],
        ).snapshot
    )
    before = {it.name: (offering_prices(it), dict(it.capacity)) for it in its}
    out = by_name(store.apply_all("default", its))
    small, original = out["small"], by_name(its)["small"]
    assert small is not original
    assert small.requirements is original.requirements
    assert small.overhead is original.overhead
    for new, old in zip(small.offerings, original.offerings, strict=True):
        assert (new is old) == (old.capacity_type != "spot")
    assert out["large"] is by_name(its)["large"]
    assert {it.name: (offering_prices(it), dict(it.capacity)) for it in its} == before


def test_a_repriced_offering_keeps_its_capacity_and_overhead_overrides() -> None:
    override = fakecatalog.offering("on-demand", "test-zone-1", 1.0)
    override = attrs.evolve(
        override,
        capacity_override={FUSE: 1000},
        overhead_override=InstanceTypeOverhead(kube_reserved={"cpu": 500}),
    )
    it = fakecatalog.instance_type("odd", offerings=[override])
    store = InstanceTypeStore()
    store.update(evaluate([overlay("cheap", price="0.2")], [pool(its=[it])]).snapshot)
    (out,) = store.apply_all("default", [it])
    (priced,) = out.offerings
    assert priced.price == 0.2
    assert priced.capacity_override == {FUSE: 1000}
    assert priced.overhead_override == override.overhead_override


def test_one_nodepools_overlays_do_not_leak_into_another() -> None:
    pools = [pool("alpha"), pool("beta")]
    store = InstanceTypeStore()
    store.update(
        evaluate(
            [overlay("alpha", requirements=[req(NODEPOOL, "In", "alpha")], price="4")], pools
        ).snapshot
    )
    alpha = store.apply_all("alpha", catalog())
    beta = store.apply_all("beta", catalog())
    assert all(it.is_pricing_overlay_applied() for it in alpha)
    assert not any(it.is_pricing_overlay_applied() for it in beta)


def test_a_capacity_overlay_is_only_compared_with_the_last_equal_weight_one_recorded() -> None:
    # Processed "3-fuse", "2-gpu", "1-fuse" (names descending): "1-fuse" meets "2-gpu"'s
    # resources, not "3-fuse"'s, so it is no conflict -- and fuse stays "3-fuse"'s.
    result = evaluate(
        [
            overlay("1-fuse", weight=10, capacity={FUSE: "1"}),
            overlay("2-gpu", weight=10, capacity={GPU: "1"}),
            overlay("3-fuse", weight=10, capacity={FUSE: "3"}),
        ],
        [pool()],
    )
    assert result.conflicts == ()
    store = InstanceTypeStore()
    store.update(result.snapshot)
    for it in store.apply_all("default", catalog()):
        assert it.capacity[FUSE] == 3000 and it.capacity[GPU] == 1000


def test_the_same_provider_objects_get_the_same_copies_until_the_next_evaluation() -> None:
    its = catalog()
    store = InstanceTypeStore()
    result = evaluate(
        [overlay("x", requirements=[req(IT, "In", "small")], price="1")], [pool(its=its)]
    )
    store.update(result.snapshot)
    first = store.apply_all("default", its)
    second = store.apply_all("default", its)
    assert [a is b for a, b in zip(first, second, strict=True)] == [True, True]
    assert by_name(first)["small"] is not by_name(its)["small"]
    # a new evaluation (even an identical one) starts afresh
    store.update(result.snapshot)
    third = store.apply_all("default", its)
    assert by_name(third)["small"] is not by_name(first)["small"]
    assert by_name(third)["large"] is by_name(its)["large"]
