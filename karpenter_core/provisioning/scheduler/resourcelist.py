"""Resource-list arithmetic for the solver.

Resource lists are ``dict[str, int]`` in milli-units. The operations with upstream meaning
(``add``, ``subtract``, ``max_of``, ``min_of``, ``fits``, formatting) are the shared ones
from :mod:`karpenter_core.apis.resources`; this module adds only the in-place and folding
helpers the solver's inner loop needs, which allocate nothing per call beyond the result.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from karpenter_core.apis.resources import (
    add,
    fits,
    max_of,
    min_of,
    subtract,
)
from karpenter_core.apis.resources import (
    format_resource_list as format_list,
)

__all__ = [
    "ONE_POD",
    "PODS",
    "add",
    "add_into",
    "exceeds_any",
    "fits",
    "format_list",
    "max_of",
    "min_of",
    "subtract",
    "total",
]

PODS = "pods"
ONE_POD = 1000  # one pod, in milli-units


def add_into(acc: dict[str, int], r: Mapping[str, int]) -> None:
    """``acc += r`` in place (the solver accumulates requests without copying)."""
    for k, v in r.items():
        acc[k] = acc.get(k, 0) + v


def total(lists: Iterable[Mapping[str, int]]) -> dict[str, int]:
    """The sum of any number of lists, e.g. a generator of pod requests."""
    out: dict[str, int] = {}
    for r in lists:
        add_into(out, r)
    return out


def exceeds_any(capacity: Mapping[str, int], remaining: Mapping[str, int]) -> bool:
    """True if ``capacity`` is larger than ``remaining`` for any resource ``remaining`` names
    (an instance type a NodePool's remaining limits cannot afford)."""
    return any(capacity.get(k, 0) > v for k, v in remaining.items())
