"""Integer resource-list arithmetic tuned for the solver's inner loop.

Resource lists are ``dict[str, int]`` in milli-units (the ``apis.resources`` convention). These
helpers are the few operations the solver runs millions of times, written without generality
that would cost time there; formatting defers to ``apis.resources`` when it is available.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

PODS = "pods"
ONE_POD = 1000  # one pod, in milli-units


def add(*lists: Mapping[str, int]) -> dict[str, int]:
    out: dict[str, int] = {}
    for r in lists:
        for k, v in r.items():
            out[k] = out.get(k, 0) + v
    return out


def add_into(acc: dict[str, int], r: Mapping[str, int]) -> None:
    for k, v in r.items():
        acc[k] = acc.get(k, 0) + v


def subtract(a: Mapping[str, int], b: Mapping[str, int]) -> dict[str, int]:
    out = dict(a)
    for k, v in b.items():
        out[k] = out.get(k, 0) - v
    return out


def subtract_known(a: Mapping[str, int], b: Mapping[str, int]) -> dict[str, int]:
    """``a - b`` over ``a``'s keys only (upstream ``resources.Subtract``): resources ``a``
    does not track stay untracked."""
    return {k: v - b.get(k, 0) for k, v in a.items()}


def max_of(*lists: Mapping[str, int]) -> dict[str, int]:
    out: dict[str, int] = {}
    for r in lists:
        for k, v in r.items():
            if k not in out or v > out[k]:
                out[k] = v
    return out


def min_of(a: Mapping[str, int], b: Mapping[str, int]) -> dict[str, int]:
    """Element-wise minimum over keys present in either (a missing key counts as zero)."""
    return {k: min(a.get(k, 0), b.get(k, 0)) for k in set(a) | set(b)}


def fits(requests: Mapping[str, int], available: Mapping[str, int]) -> bool:
    """Upstream ``resources.Fits``: no negative availability, and every request within it."""
    for v in available.values():
        if v < 0:
            return False
    return all(v <= available.get(k, 0) for k, v in requests.items())


def exceeds_any(capacity: Mapping[str, int], remaining: Mapping[str, int]) -> bool:
    """True if ``capacity`` is larger than ``remaining`` for any resource ``remaining`` names."""
    return any(capacity.get(k, 0) > v for k, v in remaining.items())


def format_list(r: Mapping[str, int]) -> dict[str, str]:
    try:
        from karpenter_core.apis.resources import format_resource_list
    except ImportError:  # pragma: no cover - only while apis.resources is being written
        return {k: _format_fallback(k, v) for k, v in r.items()}
    return dict(format_resource_list(r))


def _format_fallback(name: str, milli: int) -> str:
    if milli % 1000:
        return f"{milli}m"
    whole = milli // 1000
    if name in ("memory", "ephemeral-storage") or name.startswith("hugepages-"):
        for suffix, size in (("Ti", 1 << 40), ("Gi", 1 << 30), ("Mi", 1 << 20), ("Ki", 1 << 10)):
            if whole and whole % size == 0:
                return f"{whole // size}{suffix}"
    return str(whole)


def total(lists: Iterable[Mapping[str, int]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for r in lists:
        add_into(out, r)
    return out
