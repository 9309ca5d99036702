"""Resource lists as plain dicts of integer milli-units, and the arithmetic on them.

A resource list maps a resource name ("cpu", "memory", "nvidia.com/gpu", ...) to an
integer number of milli-units (see :mod:`karpenter_core.apis.quantity`). Lists are parsed
once, when an object is read; after that every operation here is integer arithmetic on
dicts, because the scheduler calls :func:`fits` and :func:`add` for every pod against every
candidate instance type. No function mutates its inputs; each returns a new dict.

A resource missing from a list counts as zero, as upstream karpenter's ``resources``
package treats it.
"""

from __future__ import annotations

from collections.abc import Mapping

from karpenter_core.apis.limits import shown_repr
from karpenter_core.apis.quantity import (
    BINARY_SI,
    DECIMAL_SI,
    QuantityError,
    format_quantity,
    parse_quantity,
)

ResourceList = Mapping[str, int]

CPU = "cpu"
MEMORY = "memory"
PODS = "pods"
EPHEMERAL_STORAGE = "ephemeral-storage"
STORAGE = "storage"
HUGEPAGES_PREFIX = "hugepages-"

# Byte-counted resources, written in BinarySI when that is exact (as the kubelet does).
_BYTE_RESOURCES = frozenset({MEMORY, EPHEMERAL_STORAGE, STORAGE})


def parse_resource_list(d: Mapping[str, str | int | float] | None) -> dict[str, int]:
    """Parse a Kubernetes ``ResourceList`` (name -> quantity) into milli-units.

    ``None`` (an absent ``requests:``) is the empty list. A bad entry raises
    :class:`QuantityError` naming the resource and quoting the value.
    """
    if d is None:
        return {}
    if not isinstance(d, Mapping):
        raise QuantityError(
            f"a resource list must be a mapping of resource name to quantity, "
            f"got {type(d).__name__}"
        )
    out: dict[str, int] = {}
    for name, value in d.items():
        if not isinstance(name, str) or not name:
            raise QuantityError(f"resource name must be a non-empty string, got {shown_repr(name)}")
        try:
            out[name] = parse_quantity(value)
        except QuantityError as err:
            raise QuantityError(f"resource {name}: {err}") from None
    return out


def _is_byte_resource(name: str) -> bool:
    return name in _BYTE_RESOURCES or name.startswith(HUGEPAGES_PREFIX)


def format_resource_list(r: ResourceList) -> dict[str, str]:
    """Write a resource list back as Kubernetes quantity strings, keys in sorted order.

    Byte-counted resources (memory, storage, hugepages) use BinarySI when the amount is a
    whole number of KiB ("1536Mi"), and DecimalSI otherwise ("1G", "500m"), so what a
    user wrote in either style reads back in that style; everything else is DecimalSI.
    """
    out: dict[str, str] = {}
    for name in sorted(r):
        milli = r[name]
        fmt = DECIMAL_SI
        if _is_byte_resource(name) and milli % 1024000 == 0:
            fmt = BINARY_SI
        out[name] = format_quantity(milli, fmt)
    return out


def add(*lists: ResourceList) -> dict[str, int]:
    """Sum of the lists, per resource (upstream ``resources.Merge``)."""
    if not lists:
        return {}
    out = dict(lists[0])
    for r in lists[1:]:
        for name, value in r.items():
            out[name] = out.get(name, 0) + value
    return out


def subtract(a: ResourceList, b: ResourceList) -> dict[str, int]:
    """``a - b`` for each resource of ``a`` (upstream ``resources.Subtract``).

    Only the resources of ``a`` appear in the result: a resource that is only in ``b``
    is dropped rather than turned negative, as upstream does.
    """
    return {name: value - b.get(name, 0) for name, value in a.items()}


def max_of(*lists: ResourceList) -> dict[str, int]:
    """Per-resource maximum over the lists; a resource in any list appears in the result
    (upstream ``resources.MaxResources``)."""
    out: dict[str, int] = {}
    for r in lists:
        for name, value in r.items():
            current = out.get(name)
            if current is None or value > current:
                out[name] = value
    return out


def min_of(*lists: ResourceList) -> dict[str, int]:
    """Per-resource minimum over the resources present in *every* list (upstream
    ``resources.MinResources``: ``min_of({cpu: 1}, {cpu: 2, gpu: 1}) == {cpu: 1}``)."""
    if not lists:
        return {}
    out = dict(lists[0])
    for r in lists[1:]:
        for name in list(out):
            value = r.get(name)
            if value is None:
                del out[name]
            elif value < out[name]:
                out[name] = value
    return out


def fits(requests: ResourceList, available: ResourceList) -> bool:
    """Whether ``requests`` fit in ``available`` (upstream ``resources.Fits``).

    False if any quantity in ``available`` is negative (an over-committed node fits
    nothing, not even an empty request), or if any request exceeds what is available;
    a resource missing from ``available`` counts as zero, so a zero request for an unknown
    resource fits.
    """
    # Plain loops: for the handful of resources in a list they beat min()/all() here.
    for value in available.values():
        if value < 0:
            return False
    get = available.get
    for name, value in requests.items():  # noqa: SIM110
        if value > get(name, 0):
            return False
    return True


def exceeded(requests: ResourceList, available: ResourceList) -> list[str]:
    """The resources that make :func:`fits` false, sorted by name: those whose request
    exceeds what is available, and those whose available quantity is negative.

    Empty exactly when ``fits(requests, available)`` is true; meant for error messages.
    """
    names = {name for name, value in available.items() if value < 0}
    names.update(name for name, value in requests.items() if value > available.get(name, 0))
    return sorted(names)


def is_zero(r: ResourceList) -> bool:
    """Whether every quantity in the list is zero (an empty list is zero)."""
    return not any(r.values())


def merge_over(base: ResourceList, overrides: ResourceList) -> dict[str, int]:
    """``base`` with each resource of ``overrides`` replacing it (override keys win)."""
    out = dict(base)
    out.update(overrides)
    return out
