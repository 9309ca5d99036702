"""Failure injection for the KWOK provider: what a real cloud does to launches, on demand.

Simulations and tests need launches that fail the way real ones do, reproducibly:

- **insufficient capacity**: the chosen offering (instance type, zone, capacity type) has
  no capacity, so ``create`` raises ``InsufficientCapacityError`` (the core deletes the
  NodeClaim and provisions again, elsewhere);
- **never registers**: the instance is created but its Node never appears (the core's
  registration TTL has to clean up);
- **launch latency**: the Node appears some time after ``create`` returns (on top of the
  KWOKNodeClass ``nodeRegistrationDelay``), optionally with seeded jitter.

A :class:`FaultRule` selects offerings (an empty selector matches every value) and may be
limited to the first ``attempts`` launches it matches, and/or to a time window measured in
seconds since the provider was built (the start of a simulation). Rules are plain values
parsed from the provider settings (JSON or YAML lists) or built in Python.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from attrs import field, frozen

from karpenter_core.plugin_api import DurationError, ManifestError, parse_go_duration, parse_yaml

__all__ = [
    "FaultRule",
    "FaultSettingError",
    "KwokFaults",
    "parse_duration_seconds",
    "parse_rules",
]


class FaultSettingError(ValueError):
    """A failure-injection setting that cannot be understood; the message names it."""


def _str_set(value: Iterable[str]) -> frozenset[str]:
    if isinstance(value, str):
        return frozenset({value})
    return frozenset(value)


@frozen
class FaultRule:
    """Which launches a fault hits.

    ``instance_types`` / ``zones`` / ``capacity_types``: the offering must match each
    non-empty set. ``attempts``: only the first N matching launches are hit (None: all).
    ``start`` / ``end``: seconds since the provider was built; the rule is active in
    ``[start, end)`` (``end`` None: for ever).
    """

    instance_types: frozenset[str] = field(default=frozenset(), converter=_str_set)
    zones: frozenset[str] = field(default=frozenset(), converter=_str_set)
    capacity_types: frozenset[str] = field(default=frozenset(), converter=_str_set)
    attempts: int | None = None
    start: float = 0.0
    end: float | None = None

    def __attrs_post_init__(self) -> None:
        if self.attempts is not None and self.attempts < 0:
            raise FaultSettingError(f"attempts must not be negative, got {self.attempts}")
        if self.start < 0:
            raise FaultSettingError(f"the window start must not be negative, got {self.start}s")
        if self.end is not None and self.end < self.start:
            raise FaultSettingError(
                f"the window ends ({self.end}s) before it starts ({self.start}s)"
            )

    def matches(self, instance_type: str, zone: str, capacity_type: str) -> bool:
        """True when the offering is one this rule selects (ignoring attempts and time)."""
        return (
            (not self.instance_types or instance_type in self.instance_types)
            and (not self.zones or zone in self.zones)
            and (not self.capacity_types or capacity_type in self.capacity_types)
        )

    def active_at(self, elapsed: float) -> bool:
        """True when ``elapsed`` seconds since the provider was built fall in the window."""
        return elapsed >= self.start and (self.end is None or elapsed < self.end)


def _rules(value: Iterable[FaultRule]) -> tuple[FaultRule, ...]:
    return tuple(value)


@frozen
class KwokFaults:
    """Every failure the KWOK provider injects; the default injects none."""

    insufficient_capacity: tuple[FaultRule, ...] = field(default=(), converter=_rules)
    never_register: tuple[FaultRule, ...] = field(default=(), converter=_rules)
    launch_latency: float = 0.0
    launch_latency_jitter: float = 0.0

    def __attrs_post_init__(self) -> None:
        for name in ("launch_latency", "launch_latency_jitter"):
            value = getattr(self, name)
            if not math.isfinite(value) or value < 0:
                raise FaultSettingError(f"{name} must be a non-negative duration, got {value}")


def parse_duration_seconds(value: Any, what: str) -> float:
    """A Go duration string (``"90s"``, ``"1m30s"``) or a number of seconds, as seconds."""
    if isinstance(value, bool):
        raise FaultSettingError(f"{what}: expected a duration such as 30s, got {value!r}")
    if isinstance(value, int | float):
        seconds = float(value)
    elif isinstance(value, str):
        text = value.strip()
        try:
            seconds = float(text)
        except ValueError:
            try:
                seconds = parse_go_duration(text) / 1e9
            except DurationError:
                raise FaultSettingError(
                    f"{what}: {value!r} is not a duration (use e.g. 30s, 5m, 1h30m)"
                ) from None
    else:
        raise FaultSettingError(f"{what}: expected a duration such as 30s, got {value!r}")
    if not math.isfinite(seconds) or seconds < 0:
        raise FaultSettingError(f"{what}: must be a non-negative duration, got {value!r}")
    return seconds


_RULE_KEYS = ("instanceTypes", "zones", "capacityTypes", "attempts", "after", "until")


def _names(value: Any, where: str) -> frozenset[str]:
    if value is None:
        return frozenset()
    if isinstance(value, str):
        return frozenset({value})
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return frozenset(value)
    raise FaultSettingError(f"{where}: expected a list of strings, got {value!r}")


def _rule(obj: Any, where: str) -> FaultRule:
    if not isinstance(obj, Mapping):
        raise FaultSettingError(f"{where}: expected a mapping with {', '.join(_RULE_KEYS)}")
    unknown = sorted(set(obj) - set(_RULE_KEYS))
    if unknown:
        raise FaultSettingError(
            f"{where}: unknown field(s) {', '.join(map(str, unknown))} "
            f"(accepted: {', '.join(_RULE_KEYS)})"
        )
    attempts = obj.get("attempts")
    if attempts is not None and (
        not isinstance(attempts, int) or isinstance(attempts, bool) or attempts < 0
    ):
        raise FaultSettingError(
            f"{where}.attempts: expected a non-negative integer, got {attempts!r}"
        )
    start = parse_duration_seconds(obj["after"], f"{where}.after") if "after" in obj else 0.0
    end = parse_duration_seconds(obj["until"], f"{where}.until") if "until" in obj else None
    if end is not None and end < start:
        raise FaultSettingError(f"{where}: until ({end}s) is before after ({start}s)")
    return FaultRule(
        instance_types=_names(obj.get("instanceTypes"), f"{where}.instanceTypes"),
        zones=_names(obj.get("zones"), f"{where}.zones"),
        capacity_types=_names(obj.get("capacityTypes"), f"{where}.capacityTypes"),
        attempts=attempts,
        start=start,
        end=end,
    )


def parse_rules(text: str, setting: str) -> tuple[FaultRule, ...]:
    """Rules from a setting's text: a JSON or YAML list of mappings with ``instanceTypes``,
    ``zones``, ``capacityTypes`` (lists of names), ``attempts`` (int), ``after`` and
    ``until`` (durations since the provider was built). Empty text means no rules."""
    if not text.strip():
        return ()
    try:  # karpenter-core's loader: YAML (so JSON) with bounded nesting, aliases, integers
        docs = parse_yaml(text, f"setting {setting}")
    except ManifestError as e:
        raise FaultSettingError(f"{e} (not valid JSON or YAML)") from None
    data = docs[0] if len(docs) == 1 else docs
    if isinstance(data, Mapping):
        data = [data]
    if not isinstance(data, list):
        raise FaultSettingError(f"setting {setting}: expected a list of rules, got {data!r}")
    return tuple(_rule(item, f"setting {setting}[{i}]") for i, item in enumerate(data))
