"""Taints, tolerations and the "does this pod tolerate this node?" check.

Matching follows Kubernetes' ``Toleration.ToleratesTaint`` with the comparison operators
(``Gt``/``Lt``, Kubernetes 1.35+) enabled, as upstream Karpenter calls it. Unlike kube-scheduler,
Karpenter treats *every* effect as hard, including ``PreferNoSchedule``: a pod must tolerate
all taints until preference relaxation adds a blanket ``Exists``/``PreferNoSchedule``
toleration.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from attrs import frozen

from karpenter_core.apis import labels as _labels

NO_SCHEDULE = "NoSchedule"
PREFER_NO_SCHEDULE = "PreferNoSchedule"
NO_EXECUTE = "NoExecute"
EFFECTS: frozenset[str] = frozenset({NO_SCHEDULE, PREFER_NO_SCHEDULE, NO_EXECUTE})

OP_EQUAL = "Equal"
OP_EXISTS = "Exists"
OP_GT = "Gt"
OP_LT = "Lt"
TOLERATION_OPERATORS: frozenset[str] = frozenset({"", OP_EQUAL, OP_EXISTS, OP_GT, OP_LT})

TAINT_NODE_NOT_READY = "node.kubernetes.io/not-ready"
TAINT_NODE_UNREACHABLE = "node.kubernetes.io/unreachable"
TAINT_EXTERNAL_CLOUD_PROVIDER = "node.cloudprovider.kubernetes.io/uninitialized"

_INT64_MIN = -(2**63)
_INT64_MAX = 2**63 - 1
# Kubernetes' canonical decimal integer: "0", or an optional "-" then a non-zero digit first.
_CANONICAL_INT = re.compile(r"0|-?[1-9][0-9]*")


def _str_field(d: Mapping[str, Any], name: str, what: str) -> str:
    value = d.get(name)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ValueError(f"{what}.{name}: expected a string, got {value!r}")
    return value


@frozen
class Taint:
    """A node taint. Two taints *match* (are the same slot on a node) when key and effect agree."""

    key: str
    effect: str
    value: str = ""
    time_added: str | None = None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Taint:
        """Parse a k8s taint dict; raises ``ValueError`` naming the bad field."""
        if not isinstance(d, Mapping):
            raise ValueError(f"taint: expected a mapping, got {d!r}")
        key = _str_field(d, "key", "taint")
        if not key:
            raise ValueError("taint.key: required")
        effect = _str_field(d, "effect", "taint")
        if effect not in EFFECTS:
            raise ValueError(
                f"taint {key}: effect must be one of NoSchedule, PreferNoSchedule, NoExecute, "
                f"got {effect!r}"
            )
        time_added = d.get("timeAdded")
        return cls(
            key=key,
            effect=effect,
            value=_str_field(d, "value", "taint"),
            time_added=str(time_added) if time_added is not None else None,
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"key": self.key}
        if self.value:
            out["value"] = self.value
        out["effect"] = self.effect
        if self.time_added is not None:
            out["timeAdded"] = self.time_added
        return out

    def matches(self, other: Taint) -> bool:
        """Same key and effect (k8s ``MatchTaint``); the value does not matter."""
        return self.key == other.key and self.effect == other.effect

    def __str__(self) -> str:
        """``key=value:Effect`` (or ``key:Effect`` without a value), as upstream prints it."""
        if self.value:
            return f"{self.key}={self.value}:{self.effect}"
        return f"{self.key}:{self.effect}"


@frozen
class Toleration:
    """A pod toleration. An empty operator means ``Equal``; an empty key (with ``Exists``)
    matches every taint; an empty effect matches every effect."""

    key: str = ""
    operator: str = ""
    value: str = ""
    effect: str = ""
    toleration_seconds: int | None = None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Toleration:
        """Parse a k8s toleration dict; raises ``ValueError`` naming the bad field."""
        if not isinstance(d, Mapping):
            raise ValueError(f"toleration: expected a mapping, got {d!r}")
        operator = _str_field(d, "operator", "toleration")
        if operator not in TOLERATION_OPERATORS:
            raise ValueError(
                f"toleration.operator: must be one of Equal, Exists, Gt, Lt, got {operator!r}"
            )
        effect = _str_field(d, "effect", "toleration")
        if effect and effect not in EFFECTS:
            raise ValueError(
                f"toleration.effect: must be empty or one of NoSchedule, PreferNoSchedule, "
                f"NoExecute, got {effect!r}"
            )
        seconds = d.get("tolerationSeconds")
        if seconds is not None and (not isinstance(seconds, int) or isinstance(seconds, bool)):
            raise ValueError(f"toleration.tolerationSeconds: expected an integer, got {seconds!r}")
        return cls(
            key=_str_field(d, "key", "toleration"),
            operator=operator,
            value=_str_field(d, "value", "toleration"),
            effect=effect,
            toleration_seconds=seconds,
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.key:
            out["key"] = self.key
        if self.operator:
            out["operator"] = self.operator
        if self.value:
            out["value"] = self.value
        if self.effect:
            out["effect"] = self.effect
        if self.toleration_seconds is not None:
            out["tolerationSeconds"] = self.toleration_seconds
        return out

    def tolerates(self, taint: Taint) -> bool:
        """Kubernetes toleration matching, comparison operators enabled."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        op = self.operator
        if op in ("", OP_EQUAL):
            return self.value == taint.value
        if op == OP_EXISTS:
            return True
        if op in (OP_GT, OP_LT):
            mine = _parse_canonical_int(self.value)
            theirs = _parse_canonical_int(taint.value)
            if mine is None or theirs is None:
                return False
            return theirs > mine if op == OP_GT else theirs < mine
        return False


def _parse_canonical_int(value: str) -> int | None:
    """Kubernetes' strict integer form for toleration comparisons (no "+", no leading zeros)."""
    if _CANONICAL_INT.fullmatch(value) is None:
        return None
    if len(value.lstrip("-")) > 19:  # beyond int64; int() refuses 4,300 digits
        return None
    n = int(value)
    return n if _INT64_MIN <= n <= _INT64_MAX else None


@frozen
class TaintsError:
    """The taints a pod does not tolerate; formatted only when printed."""

    untolerated: tuple[Taint, ...]

    def __str__(self) -> str:
        return "; ".join(f"did not tolerate taint (taint={t})" for t in self.untolerated)


def tolerates(taints: Iterable[Taint], tolerations: Iterable[Toleration]) -> TaintsError | None:
    """``None`` when every taint (any effect, PreferNoSchedule included) is tolerated by at
    least one toleration; otherwise an error listing each untolerated taint."""
    tols = tolerations if isinstance(tolerations, (list, tuple)) else list(tolerations)
    bad: list[Taint] | None = None
    for taint in taints:
        for t in tols:
            if t.tolerates(taint):
                break
        else:
            if bad is None:
                bad = []
            bad.append(taint)
    return TaintsError(tuple(bad)) if bad is not None else None


def merge(taints: Iterable[Taint], with_: Iterable[Taint]) -> list[Taint]:
    """``taints`` plus each taint of ``with_`` whose key/effect slot is not already taken."""
    result = list(taints)
    for taint in with_:
        if not any(taint.matches(t) for t in result):
            result.append(taint)
    return result


KNOWN_EPHEMERAL_TAINTS: tuple[Taint, ...] = (
    Taint(TAINT_NODE_NOT_READY, NO_SCHEDULE),
    Taint(TAINT_NODE_NOT_READY, NO_EXECUTE),
    Taint(TAINT_NODE_UNREACHABLE, NO_SCHEDULE),
    Taint(TAINT_EXTERNAL_CLOUD_PROVIDER, NO_SCHEDULE, "true"),
    Taint(_labels.UNREGISTERED_TAINT_KEY, NO_EXECUTE),
)
"""Taints a node carries while it starts up; ignored on managed, not-yet-initialized nodes."""

KNOWN_EPHEMERAL_TAINT_KEY_PREFIXES: tuple[str, ...] = (_labels.KNOWN_EPHEMERAL_TAINT_PREFIX,)
"""Taint families with controller-chosen suffixes (Node Readiness Controller's
``readiness.k8s.io/<rule>``); any effect counts."""

UNREGISTERED_NO_EXECUTE_TAINT = Taint(_labels.UNREGISTERED_TAINT_KEY, NO_EXECUTE)
DISRUPTED_NO_SCHEDULE_TAINT = Taint(_labels.DISRUPTED_TAINT_KEY, NO_SCHEDULE)


def is_known_ephemeral(taint: Taint | None) -> bool:
    """True for a known start-up taint (matched on key and effect) or a known prefix."""
    if taint is None:
        return False
    if any(known.matches(taint) for known in KNOWN_EPHEMERAL_TAINTS):
        return True
    return taint.key.startswith(KNOWN_EPHEMERAL_TAINT_KEY_PREFIXES)
