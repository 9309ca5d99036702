"""What a NodePool asks of this plugin, read from the NodePool's own annotations.

Every hook of the plugin is opt-in per NodePool: installing the plugin changes nothing
until a NodePool carries one of these annotations, so it can be rolled out pool by pool.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta

from karpenter_core.plugin_api import DurationError, parse_go_duration

__all__ = [
    "CPU_HEADROOM_ANNOTATION",
    "DISCOUNT_ANNOTATION",
    "MAX_NODE_AGE_ANNOTATION",
    "RECYCLE_AFTER_ANNOTATION",
    "PolicyError",
    "cpu_headroom",
    "discounts",
    "max_node_age",
]

DISCOUNT_ANNOTATION = "plugin.example.com/discount"
"""On a NodePool: ``FAMILY=PERCENT[,FAMILY=PERCENT...]`` (``m=25``), a negotiated discount
on every offering of that instance family for this NodePool's nodes."""

MAX_NODE_AGE_ANNOTATION = "plugin.example.com/max-node-age"
"""On a NodePool: a Go duration (``720h``); nodes older than this are recycled."""

RECYCLE_AFTER_ANNOTATION = "plugin.example.com/recycle-after"
"""Written on Nodes by the recycle-schedule controller: when the node becomes due for
recycling (RFC 3339, UTC)."""


CPU_HEADROOM_ANNOTATION = "plugin.example.com/cpu-headroom"
"""On a NodePool that picks the ``headroom`` scorer: the percent of a node's allocatable
CPU to leave free when choosing its instance type (default 20)."""
DEFAULT_CPU_HEADROOM = 20.0


class PolicyError(ValueError):
    """An annotation this plugin cannot read; the message names it and says what it wants."""


def discounts(annotations: Mapping[str, str]) -> dict[str, float]:
    """Instance family -> price multiplier (``{"m": 0.75}`` for ``m=25``); empty when the
    NodePool asks for no discount."""
    raw = annotations.get(DISCOUNT_ANNOTATION, "").strip()
    if not raw:
        return {}
    out: dict[str, float] = {}
    for part in raw.split(","):
        family, sep, percent = part.partition("=")
        try:
            value = float(percent) if sep else -1.0
        except ValueError:
            value = -1.0
        if not family.strip() or not 0.0 <= value < 100.0:
            raise PolicyError(
                f"annotation {DISCOUNT_ANNOTATION}: {part.strip()!r} is not FAMILY=PERCENT "
                "with 0 <= PERCENT < 100"
            )
        out[family.strip()] = 1.0 - value / 100.0
    return out


def max_node_age(annotations: Mapping[str, str]) -> timedelta | None:
    """How old this NodePool's nodes may get, or None when it sets no limit."""
    raw = annotations.get(MAX_NODE_AGE_ANNOTATION)
    if raw is None:
        return None
    try:
        nanoseconds = parse_go_duration(raw.strip())
    except DurationError as e:
        raise PolicyError(f"annotation {MAX_NODE_AGE_ANNOTATION}: {e}") from None
    if nanoseconds <= 0:
        raise PolicyError(
            f"annotation {MAX_NODE_AGE_ANNOTATION}: {raw!r} must be a positive duration"
        )
    return timedelta(microseconds=nanoseconds // 1000)


def cpu_headroom(annotations: Mapping[str, str]) -> float:
    """The CPU fraction to leave free (``0.2`` for the default 20 percent)."""
    raw = annotations.get(CPU_HEADROOM_ANNOTATION, "").strip()
    if not raw:
        return DEFAULT_CPU_HEADROOM / 100.0
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0.0 <= value < 100.0:
        raise PolicyError(
            f"annotation {CPU_HEADROOM_ANNOTATION}: {raw!r} is not a percent "
            "with 0 <= PERCENT < 100"
        )
    return value / 100.0
