"""InstanceType: allocatable, allocatable groups, overlays, fits."""

from __future__ import annotations

import pytest
from cp_builders import instance_type, offering, reqs, rl
from hypothesis import given
from hypothesis import strategies as st

from karpenter_core.cloudprovider.types import (
    InstanceTypeOverhead,
    Offerings,
    fits,
)

KUBE_RESERVED = InstanceTypeOverhead(kube_reserved=rl(cpu="100m", memory="1Gi"))


def test_overhead_total_sums_all_three_reservations() -> None:
    overhead = InstanceTypeOverhead(
        kube_reserved=rl(cpu="100m", memory="1Gi"),
        system_reserved=rl(cpu="50m", memory="512Mi"),
        eviction_threshold=rl(memory="100Mi"),
    )
    assert overhead.total() == rl(cpu="150m", memory="1636Mi")


def test_allocatable_is_capacity_minus_overhead() -> None:
    it = instance_type(overhead=KUBE_RESERVED)
    assert it.allocatable() == rl(cpu="3900m", memory="15Gi", pods="110")


def test_overhead_on_a_resource_the_machine_lacks_is_ignored() -> None:
    overhead = InstanceTypeOverhead(kube_reserved=rl(cpu="100m", ephemeral_storage="1Gi"))
    it = instance_type(capacity=rl(cpu="1"), overhead=overhead)
    assert it.allocatable() == rl(cpu="900m")


def test_hugepages_are_taken_out_of_allocatable_memory() -> None:
    capacity = rl(cpu="5", memory="20Gi", ephemeral_storage="100Gi", pods="57")
    capacity.update({"hugepages-2Mi": rl(x="5Gi")["x"], "hugepages-1Gi": rl(x="10Gi")["x"]})
    overhead = InstanceTypeOverhead(kube_reserved=rl(cpu="125m", memory="1Gi"))
    alloc = instance_type(capacity=capacity, overhead=overhead).allocatable()
    assert alloc["memory"] == rl(m="4Gi")["m"]
    assert alloc["cpu"] == rl(c="4875m")["c"]


def test_hugepages_larger_than_memory_floor_allocatable_memory_at_zero() -> None:
    capacity = rl(cpu="5", memory="20Gi")
    capacity.update({"hugepages-2Mi": rl(x="50Gi")["x"], "hugepages-1Gi": rl(x="10Gi")["x"]})
    overhead = InstanceTypeOverhead(kube_reserved=rl(cpu="125m", memory="1Gi"))
    assert instance_type(capacity=capacity, overhead=overhead).allocatable()["memory"] == 0


def test_allocatable_is_computed_once_and_cached() -> None:
    it = instance_type(offerings=[offering()], overhead=KUBE_RESERVED)
    assert it.allocatable() is it.allocatable()
    assert it.allocatable_offerings_list() is it.allocatable_offerings_list()


def test_without_overrides_there_is_one_group_of_available_offerings() -> None:
    a, b, gone = offering(price=1), offering(price=2), offering(price=3, available=False)
    groups = instance_type(
        offerings=[a, b, gone], overhead=KUBE_RESERVED
    ).allocatable_offerings_list()
    assert len(groups) == 1
    assert list(groups[0].offerings) == [a, b]
    assert groups[0].allocatable == rl(cpu="3900m", memory="15Gi", pods="110")


def test_offerings_with_the_same_overrides_share_an_allocatable_group() -> None:
    slots = "test.com/extended-slots"
    override = {"capacity_override": {slots: 12_000}}
    heavy = InstanceTypeOverhead(system_reserved=rl(memory="3Gi"))
    base1, base2 = offering(), offering(zone="test-zone-2")
    o1 = offering(overhead_override=heavy, **override)
    o2 = offering(zone="test-zone-2", overhead_override=heavy, **override)
    unavailable = offering(available=False, overhead_override=heavy, **override)
    it = instance_type(offerings=[base1, o1, base2, o2, unavailable], overhead=KUBE_RESERVED)

    groups = it.allocatable_offerings_list()

    assert len(groups) == 2
    assert list(groups[0].offerings) == [base1, base2]
    assert groups[0].allocatable == rl(cpu="3900m", memory="15Gi", pods="110")
    assert list(groups[1].offerings) == [o1, o2]
    # the override's overhead replaces the base overhead key by key: memory 3Gi, cpu 100m
    assert groups[1].allocatable == {**rl(cpu="3900m", memory="13Gi", pods="110"), slots: 12_000}
    assert it.allocatable() is groups[0].allocatable


def test_different_overrides_form_different_groups() -> None:
    o1 = offering(capacity_override={"example.com/a": 1000})
    o2 = offering(capacity_override={"example.com/a": 2000})
    groups = instance_type(offerings=[o1, o2]).allocatable_offerings_list()
    assert [list(g.offerings) for g in groups] == [[], [o1], [o2]]


def test_empty_capacity_override_is_not_an_override() -> None:
    o = offering(capacity_override={})
    groups = instance_type(offerings=[o]).allocatable_offerings_list()
    assert len(groups) == 1
    assert list(groups[0].offerings) == [o]


def test_capacity_overlay_returns_a_new_type_with_merged_capacity() -> None:
    it = instance_type(overhead=KUBE_RESERVED)
    before = it.allocatable()
    overlaid = it.with_capacity_overlay({"example.com/gpu": 2000, "pods": 50_000})
    assert overlaid.is_capacity_overlay_applied()
    assert not it.is_capacity_overlay_applied()
    assert overlaid.allocatable()["example.com/gpu"] == 2000
    assert overlaid.allocatable()["pods"] == 50_000
    assert it.allocatable() == before


def test_offerings_are_stored_as_an_offerings_tuple() -> None:
    it = instance_type(offerings=[offering()])
    assert isinstance(it.offerings, Offerings)
    assert isinstance(it.offerings, tuple)


def test_offering_price_by_zone_and_capacity_type() -> None:
    it = instance_type(offerings=[offering("z1", "spot", 0.3), offering("z1", "on-demand", 1.0)])
    assert it.offering_price("z1", "spot") == 0.3
    assert it.offering_price("z2", "spot") is None


def test_pricing_overlay_flag_follows_offerings() -> None:
    o = offering(price=1.0)
    it = instance_type(offerings=[o])
    assert not it.is_pricing_overlay_applied()
    overlaid = it.with_offerings([o.with_price_overlay("+10%")])
    assert overlaid.is_pricing_overlay_applied()
    assert overlaid.offerings[0].price == pytest.approx(1.1)


def test_instance_types_compare_by_identity() -> None:
    a, b = instance_type("same"), instance_type("same")
    assert a != b
    assert len({a, b}) == 2


# --- fits ---------------------------------------------------------------------------------


def test_fits_when_requests_fit_and_an_offering_is_compatible() -> None:
    it = instance_type(offerings=[offering("z1")], overhead=KUBE_RESERVED)
    assert fits(it, rl(cpu="3", memory="10Gi"), reqs(zone="z1")) == (True, True)


def test_too_large_requests_do_not_fit_but_offering_is_reported() -> None:
    it = instance_type(offerings=[offering("z1")], overhead=KUBE_RESERVED)
    assert fits(it, rl(cpu="4"), reqs(zone="z1")) == (False, True)


def test_no_compatible_offering_reports_neither() -> None:
    it = instance_type(offerings=[offering("z1")])
    assert fits(it, rl(cpu="1"), reqs(zone="z2")) == (False, False)


def test_unavailable_offerings_do_not_count_for_fits() -> None:
    it = instance_type(offerings=[offering("z1", available=False)])
    assert fits(it, rl(cpu="1"), reqs(zone="z1")) == (False, False)


def test_an_override_group_can_fit_when_the_base_does_not() -> None:
    gpu = "example.com/gpu"
    base = offering("z1")
    with_gpu = offering("z2", capacity_override={gpu: 1000})
    it = instance_type(offerings=[base, with_gpu])
    assert fits(it, {gpu: 1000}, reqs(zone=["z1", "z2"])) == (True, True)
    assert fits(it, {gpu: 1000}, reqs(zone="z1")) == (False, True)


def test_to_dict_lists_resources_and_offerings() -> None:
    it = instance_type("c-1x", offerings=[offering("z1", "spot", 0.5)], overhead=KUBE_RESERVED)
    d = it.to_dict()
    assert d["name"] == "c-1x"
    assert d["capacity"] == {"cpu": "4", "memory": "16Gi", "pods": "110"}
    assert d["allocatable"] == {"cpu": "3900m", "memory": "15Gi", "pods": "110"}
    assert d["overhead"] == {"kubeReserved": {"cpu": "100m", "memory": "1Gi"}}
    assert d["offerings"][0]["price"] == 0.5
    assert d["offerings"][0]["zone"] == "z1"
    assert d["offerings"][0]["capacityType"] == "spot"
    assert {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["c-1x"]} in d[
        "requirements"
    ]


# --- properties -----------------------------------------------------------------------------

_OVERRIDES = [None, {"example.com/a": 1000}, {"example.com/a": 2000}]


@given(st.lists(st.tuples(st.booleans(), st.sampled_from(range(len(_OVERRIDES)))), max_size=10))
def test_every_available_offering_is_in_exactly_one_group(
    specs: list[tuple[bool, int]],
) -> None:
    offerings = [
        offering(price=float(i), available=avail, capacity_override=_OVERRIDES[o])
        for i, (avail, o) in enumerate(specs)
    ]
    groups = instance_type(offerings=offerings).allocatable_offerings_list()
    grouped = [o for g in groups for o in g.offerings]
    assert sorted(id(o) for o in grouped) == sorted(id(o) for o in offerings if o.available)
    assert all(not o.has_overrides for o in groups[0].offerings)
    for g in groups[1:]:
        assert len({o._override_key() for o in g.offerings}) == 1
