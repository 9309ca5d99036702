"""EC2 placement groups: what an EC2NodeClass's ``placementGroupSelector`` names.

As upstream (``pkg/providers/placementgroup``), a class maps to at most one placement group,
found by id or by name with ``DescribePlacementGroups`` restricted to ``state=available``.
Each answer is reused for :data:`QUERY_TTL`; the last group found is kept for
:data:`KEEP_TTL` so that an EC2 failure does not take the group away from running
launches, drift checks and offerings (the status controller still reports the failure).
Unlike upstream, a query that finds nothing forgets the kept group at once: a deleted
group must not go on being launched into.

The strategy decides what a class can launch (:func:`supports_strategy`: EC2 lists the
strategies each type supports, e.g. burstable types cannot join a ``cluster`` group) and
how offerings look (``partition`` groups get one offering per partition, so topology
spread over ``karpenter.k8s.aws/placement-group-partition`` has domains).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from typing import Any

from attrs import frozen
from botocore.exceptions import BotoCoreError, ClientError  # type: ignore[import-untyped]

from karpenter_core.plugin_api import Clock

__all__ = [
    "KEEP_TTL",
    "QUERY_TTL",
    "STRATEGY_CLUSTER",
    "STRATEGY_PARTITION",
    "STRATEGY_SPREAD",
    "PlacementGroup",
    "PlacementGroupError",
    "PlacementGroupProvider",
    "describe_arguments",
    "is_spread_limit_error",
    "supports_strategy",
]

log = logging.getLogger("karpenter.aws.placementgroup")

STRATEGY_CLUSTER = "cluster"
STRATEGY_PARTITION = "partition"
STRATEGY_SPREAD = "spread"
QUERY_TTL = 60.0
"""How long one DescribePlacementGroups answer is reused (seconds; upstream's minute)."""
KEEP_TTL = 86400.0
"""How long the last group found stands in when EC2 cannot be asked (upstream: a day)."""
_NOT_FOUND = frozenset(
    {
        "InvalidPlacementGroup.Unknown",
        "InvalidPlacementGroupId.NotFound",
        "InvalidPlacementGroupId.Malformed",
    }
)
_SPREAD_LIMIT = "limit of instances in this spread placement group"


@frozen
class PlacementGroup:
    """One resolved placement group."""

    id: str
    name: str
    strategy: str
    partition_count: int = 0
    spread_level: str = ""

    @classmethod
    def from_ec2(cls, d: Mapping[str, Any]) -> PlacementGroup:
        return cls(
            id=str(d.get("GroupId") or ""),
            name=str(d.get("GroupName") or ""),
            strategy=str(d.get("Strategy") or ""),
            partition_count=int(d.get("PartitionCount") or 0),
            spread_level=str(d.get("SpreadLevel") or ""),
        )

    def partitions(self) -> tuple[str, ...]:
        """The partition numbers (``"1"``...) of a partition group; none otherwise."""
        if self.strategy != STRATEGY_PARTITION:
            return ()
        return tuple(str(p) for p in range(1, self.partition_count + 1))


class PlacementGroupError(RuntimeError):
    """DescribePlacementGroups failed; ``last_known`` is the group kept from before."""

    def __init__(self, message: str, last_known: PlacementGroup | None) -> None:
        super().__init__(message)
        self.last_known = last_known


def describe_arguments(selector: Any) -> dict[str, Any]:
    """The ``DescribePlacementGroups`` arguments for a ``placementGroupSelector``."""
    args: dict[str, Any] = {"Filters": [{"Name": "state", "Values": ["available"]}]}
    if selector.id:
        args["GroupIds"] = [selector.id]
    elif selector.name:
        args["GroupNames"] = [selector.name]
    return args


def supports_strategy(info: Mapping[str, Any], group: PlacementGroup | None) -> bool:
    """Whether the type (an ``InstanceTypeInfo``) can join ``group``. A catalogue entry
    without ``PlacementGroupInfo`` (the bundled catalogue keeps none) is not refused:
    EC2 then decides at launch."""
    if group is None:
        return True
    pgi = info.get("PlacementGroupInfo")
    if not isinstance(pgi, Mapping):
        return True
    return group.strategy in (pgi.get("SupportedStrategies") or ())


def is_spread_limit_error(message: str) -> bool:
    """EC2's capacity error for a spread group that already holds seven instances in the
    zone: every type in that zone is then out for the group, not just the one tried."""
    return _SPREAD_LIMIT in message


def _key(selector: Any) -> tuple[str, str]:
    return (str(selector.id or ""), str(selector.name or ""))


class PlacementGroupProvider:
    """Resolves placement group selectors, shared by the status controller, the
    instance types, launches and drift. Thread-safe."""

    def __init__(
        self, ec2: Any, clock: Clock, *, ttl: float = QUERY_TTL, keep: float = KEEP_TTL
    ) -> None:
        self._ec2 = ec2
        self._clock = clock
        self._ttl = ttl
        self._keep = keep
        self._lock = threading.Lock()
        self._queried: dict[tuple[str, str], float] = {}  # key -> answer valid until
        self._known: dict[tuple[str, str], tuple[PlacementGroup, float]] = {}

    def resolve(self, selector: Any) -> PlacementGroup | None:
        """The group ``selector`` names (None: no selector, or no available group of
        that id or name). Raises :class:`PlacementGroupError` when EC2 fails."""
        if selector is None:
            return None
        key = _key(selector)
        with self._lock:
            now = self._clock.monotonic()
            if self._queried.get(key, 0.0) > now:
                return self._kept(key, now)
            try:
                out = self._ec2.describe_placement_groups(**describe_arguments(selector))
            except ClientError as e:
                code = str((e.response.get("Error") or {}).get("Code") or "")
                if code not in _NOT_FOUND:
                    raise PlacementGroupError(
                        f"describing placement groups, {e}", self._kept(key, now)
                    ) from e
                out = {}
            except BotoCoreError as e:
                raise PlacementGroupError(
                    f"describing placement groups, {e}", self._kept(key, now)
                ) from e
            found = [PlacementGroup.from_ec2(g) for g in out.get("PlacementGroups") or []]
            self._queried[key] = now + self._ttl
            if not found:
                self._known.pop(key, None)
                return None
            self._known[key] = (found[0], now + self._keep)
            return found[0]

    def get(self, selector: Any) -> PlacementGroup | None:
        """:meth:`resolve`, but an EC2 failure gives the group kept from before (what
        launches, offerings and drift go on with while EC2 cannot be asked)."""
        try:
            return self.resolve(selector)
        except PlacementGroupError as e:
            log.debug("%s; using the placement group known before", e)
            return e.last_known

    def _kept(self, key: tuple[str, str], now: float) -> PlacementGroup | None:
        known = self._known.get(key)
        if known is None or known[1] <= now:
            return None
        return known[0]
