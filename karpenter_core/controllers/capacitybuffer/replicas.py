"""How many virtual pods a CapacityBuffer asks for (spec apis §5, "Replica count").

Pure functions over integers and milli-unit resource lists, so the algebra can be tested
as a table:

1. the base is the larger of ``spec.replicas`` and ``ceil(scalable * percentage / 100)``
   (the percentage term is at least 1 when both the percentage and the scalable's replica
   count are positive: a small Deployment still gets some headroom);
2. ``spec.limits`` caps the base at ``min over resources of floor(limit / request)``,
   counting only resources the pod actually requests (a limit on something the pod does not
   ask for cannot run out);
3. with neither ``replicas`` nor ``percentage``, the limits alone decide.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

__all__ = ["MAX_INT32", "compute_replicas", "limit_replicas", "percentage_replicas"]

MAX_INT32 = 2**31 - 1
"""Replica counts are int32 in the API; a huge limit over a tiny request is clamped."""


def percentage_replicas(scalable_replicas: int, percentage: int) -> int:
    """``ceil(scalable * percentage / 100)``, at least 1 when both are positive."""
    n = math.ceil(scalable_replicas * percentage / 100)
    if n < 1 and percentage > 0 and scalable_replicas > 0:
        return 1
    return max(0, n)


def limit_replicas(limits: Mapping[str, int], requests: Mapping[str, int]) -> int | None:
    """How many pods of ``requests`` fit in ``limits`` (both milli-units): the minimum over
    the limited resources the pod requests (non-zero) of ``floor(limit / request)``. None
    when no limited resource is requested, so the limits say nothing about this pod."""
    best: int | None = None
    for name, limit in limits.items():
        request = requests.get(name, 0)
        if request <= 0:
            continue
        n = min(max(0, limit) // request, MAX_INT32)
        best = n if best is None else min(best, n)
    return best


def compute_replicas(
    *,
    replicas: int | None,
    percentage: int | None,
    scalable_replicas: int | None,
    limits: Mapping[str, int] | None,
    requests: Mapping[str, int],
) -> int:
    """The buffer's replica count. ``scalable_replicas`` is the referenced workload's
    ``spec.replicas`` (None for a ``podTemplateRef`` buffer, where a percentage means
    nothing); ``limits`` is the parsed ``spec.limits`` (None when unset)."""
    candidates: list[int] = []
    if percentage is not None and scalable_replicas is not None and scalable_replicas > 0:
        candidates.append(percentage_replicas(scalable_replicas, percentage))
    if replicas is not None:
        candidates.append(replicas)
    desired = max(0, max(candidates, default=0))  # a negative spec means nothing
    if limits is not None:
        capped = limit_replicas(limits, requests)
        if capped is not None:
            return min(desired, capped) if candidates else capped
    return desired
