"""Upstream's fake cloud-provider catalogue (``pkg/cloudprovider/fake``), for tests and bench.

Instance types carry the fake provider's extra well-known labels (``size``, ``special``,
``integer``) and, by default, five offerings: spot in zones 1-2 and on-demand in zones 1-3,
priced 0.1 per vCPU plus 0.1 per GB of memory. ``instance_types(n)`` is ``fake.InstanceTypes``:
type *i* has i+1 vCPU, 2(i+1) GiB and 10(i+1) pods. Scenario tests and the scheduling
benchmark use this so their numbers compare with upstream's.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager

from karpenter_core.apis import labels
from karpenter_core.cloudprovider.types import (
    InstanceType,
    InstanceTypeOverhead,
    Offering,
    register_reservation_labels,
    reservation_id_label,
)
from karpenter_core.scheduling.requirements import (
    DOES_NOT_EXIST,
    IN,
    Requirement,
    Requirements,
)

LABEL_INSTANCE_SIZE = "size"
EXOTIC_INSTANCE_LABEL_KEY = "special"
INTEGER_INSTANCE_LABEL_KEY = "integer"
RESOURCE_GPU_VENDOR_A = "fake.com/vendor-a"
RESOURCE_GPU_VENDOR_B = "fake.com/vendor-b"

GI = 1 << 30
MILLI = 1000


RESERVATION_ID_LABEL = "karpenter.sh/reservation-id"


def register_labels() -> None:
    """What the fake provider registers at start-up: its extra well-known labels and the
    reservation-id label reserved offerings carry."""
    labels.register_well_known_labels(
        [
            LABEL_INSTANCE_SIZE,
            EXOTIC_INSTANCE_LABEL_KEY,
            INTEGER_INSTANCE_LABEL_KEY,
            RESERVATION_ID_LABEL,
        ]
    )
    if not reservation_id_label():
        register_reservation_labels(RESERVATION_ID_LABEL)


@contextmanager
def registered_labels() -> Iterator[None]:
    """:func:`register_labels` for the duration of a block, then the previous registrations
    back: tests must not leak the fake provider's labels into unrelated tests."""
    from karpenter_core.cloudprovider import types

    saved_well_known = set(labels.WELL_KNOWN_LABELS)
    saved_label = types.reservation_id_label()
    saved_extra = types.reserved_capacity_labels()
    register_labels()
    try:
        yield
    finally:
        labels.WELL_KNOWN_LABELS.clear()
        labels.WELL_KNOWN_LABELS.update(saved_well_known)
        types._reservation_id_label = saved_label
        types._reserved_capacity_labels.clear()
        types._reserved_capacity_labels.update(saved_extra)


def price_from_resources(capacity: Mapping[str, int]) -> float:
    price = 0.0
    for k, v in capacity.items():
        if k == "cpu":
            price += 0.1 * v / MILLI
        elif k == "memory":
            price += 0.1 * (v / MILLI) / 1e9
        elif k in (RESOURCE_GPU_VENDOR_A, RESOURCE_GPU_VENDOR_B):
            price += 1.0
    return price


def offering(
    capacity_type: str,
    zone: str,
    price: float,
    available: bool = True,
    reservation_id: str = "",
    reservation_capacity: int = 0,
) -> Offering:
    reqs = Requirements(
        Requirement.new(labels.CAPACITY_TYPE_LABEL_KEY, IN, [capacity_type]),
        Requirement.new(labels.LABEL_TOPOLOGY_ZONE, IN, [zone]),
    )
    if reservation_id:
        key = reservation_id_label() or RESERVATION_ID_LABEL
        reqs.add(Requirement.new(key, IN, [reservation_id]))
    return Offering(
        requirements=reqs,
        price=price,
        available=available,
        reservation_capacity=reservation_capacity,
    )


def default_offerings(price: float) -> list[Offering]:
    return [
        offering("spot", "test-zone-1", price),
        offering("spot", "test-zone-2", price),
        offering("on-demand", "test-zone-1", price),
        offering("on-demand", "test-zone-2", price),
        offering("on-demand", "test-zone-3", price),
    ]


def instance_type(
    name: str,
    cpu: int = 4,
    memory_gi: float = 4,
    pods: int = 5,
    extra: Mapping[str, int] | None = None,
    offerings: Sequence[Offering] | None = None,
    arch: str = "amd64",
    oses: Sequence[str] = ("darwin", "linux", "windows"),
    requirements: Sequence[Requirement] = (),
) -> InstanceType:
    """A fake instance type (upstream ``fake.NewInstanceType``). ``cpu`` is whole cores."""
    capacity = {"cpu": cpu * MILLI, "memory": int(memory_gi * GI) * MILLI, "pods": pods * MILLI}
    for k, v in (extra or {}).items():
        capacity[k] = v * MILLI
    offs = (
        list(offerings)
        if offerings is not None
        else default_offerings(price_from_resources(capacity))
    )
    available = [o for o in offs if o.available]
    reqs = Requirements(
        Requirement.new(labels.LABEL_INSTANCE_TYPE, IN, [name]),
        Requirement.new(labels.LABEL_ARCH, IN, [arch]),
        Requirement.new(labels.LABEL_OS, IN, list(oses)),
        Requirement.new(labels.LABEL_TOPOLOGY_ZONE, IN, sorted({o.zone for o in available})),
        Requirement.new(
            labels.CAPACITY_TYPE_LABEL_KEY, IN, sorted({o.capacity_type for o in available})
        ),
        Requirement.new(INTEGER_INSTANCE_LABEL_KEY, IN, [str(cpu)]),
    )
    large = cpu > 4 and memory_gi > 8
    reqs.add(Requirement.new(LABEL_INSTANCE_SIZE, IN, ["large" if large else "small"]))
    reqs.add(
        Requirement.new(EXOTIC_INSTANCE_LABEL_KEY, IN, ["optional"])
        if large
        else Requirement.new(EXOTIC_INSTANCE_LABEL_KEY, DOES_NOT_EXIST)
    )
    for r in requirements:
        reqs[r.key] = r
    return InstanceType(
        name=name,
        requirements=reqs,
        offerings=offs,
        capacity=capacity,
        overhead=InstanceTypeOverhead(kube_reserved={"cpu": 100, "memory": 10 * (1 << 20) * MILLI}),
    )


def instance_types(n: int) -> list[InstanceType]:
    """``fake.InstanceTypes(n)``: ``fake-it-i`` with i+1 vCPU, 2(i+1) GiB, 10(i+1) pods."""
    return [
        instance_type(f"fake-it-{i}", cpu=i + 1, memory_gi=2 * (i + 1), pods=10 * (i + 1))
        for i in range(n)
    ]


def default_catalog() -> list[InstanceType]:
    """The fake provider's default instance types (spec scheduling.md §15 fixture)."""
    return [
        instance_type("default-instance-type"),
        instance_type("small-instance-type", cpu=2, memory_gi=2),
        instance_type("gpu-vendor-instance-type", extra={RESOURCE_GPU_VENDOR_A: 2}),
        instance_type("gpu-vendor-b-instance-type", extra={RESOURCE_GPU_VENDOR_B: 2}),
        instance_type(
            "arm-instance-type",
            cpu=16,
            memory_gi=128,
            arch="arm64",
            oses=("darwin", "ios", "linux", "windows"),
        ),
        instance_type("single-pod-instance-type", pods=1),
    ]
