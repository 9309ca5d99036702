"""Small builders for instance types and offerings used by the cloudprovider tests."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from karpenter_core.apis import labels
from karpenter_core.apis.quantity import parse_quantity
from karpenter_core.cloudprovider.types import InstanceType, InstanceTypeOverhead, Offering
from karpenter_core.scheduling.requirements import IN, Requirement, Requirements


def rl(**quantities: str) -> dict[str, int]:
    """Resource list from keyword quantities; ``_`` in names becomes ``-``."""
    return {k.replace("_", "-"): parse_quantity(v) for k, v in quantities.items()}


def reqs(**values: str | Iterable[str]) -> Requirements:
    """``Requirements`` with ``key In [...]``; keyword ``zone``/``ct``/``it`` are shorthands."""
    alias = {
        "zone": labels.LABEL_TOPOLOGY_ZONE,
        "ct": labels.CAPACITY_TYPE_LABEL_KEY,
        "it": labels.LABEL_INSTANCE_TYPE,
    }
    out = Requirements()
    for key, vals in values.items():
        vs = [vals] if isinstance(vals, str) else list(vals)
        out.add(Requirement.new(alias.get(key, key), IN, vs))
    return out


def offering(
    zone: str = "test-zone-1",
    capacity_type: str = labels.CAPACITY_TYPE_ON_DEMAND,
    price: float = 1.0,
    available: bool = True,
    extra: Mapping[str, str] | None = None,
    **kwargs: object,
) -> Offering:
    r = reqs(zone=zone, ct=capacity_type)
    for k, v in (extra or {}).items():
        r.add(Requirement.new(k, IN, [v]))
    return Offering(requirements=r, price=price, available=available, **kwargs)  # type: ignore[arg-type]


def instance_type(
    name: str = "it",
    offerings: Iterable[Offering] = (),
    capacity: Mapping[str, int] | None = None,
    overhead: InstanceTypeOverhead | None = None,
    extra_requirements: Mapping[str, str | Iterable[str]] | None = None,
) -> InstanceType:
    r = reqs(it=name)
    for k, v in (extra_requirements or {}).items():
        r.add(Requirement.new(k, IN, [v] if isinstance(v, str) else list(v)))
    return InstanceType(
        name=name,
        requirements=r,
        offerings=tuple(offerings),
        capacity=capacity if capacity is not None else rl(cpu="4", memory="16Gi", pods="110"),
        overhead=overhead or InstanceTypeOverhead(),
    )
