"""EC2 capacity reservations: what an EC2NodeClass's ``capacityReservationSelectorTerms``
select, and how many instances each one still takes.

As upstream (``pkg/providers/capacityreservation``):

- each selector term is one ``DescribeCapacityReservations`` query (an ``id`` term by id,
  a ``tags`` / ``ownerID`` / ``instanceMatchCriteria`` term by filters), always restricted
  to ``state=active``; terms are ORed, the results de-duplicated by id; reservations whose
  end date has passed are dropped; each query's answer is cached for a minute;
- every answer re-syncs the *available count* of the reservations it returned; a launch
  into a reservation takes one off (only when the launch happened after the last sync: a
  sync that already saw it must not be counted twice) and a termination gives one back;
  an ``ReservationCapacityExceeded`` launch error sets it to zero until the next sync.
  The count is what reserved offerings report as their reservation capacity, so the
  scheduler never plans more nodes into a reservation than it holds.

:class:`CapacityReservation` is one entry of ``status.capacityReservations``; a capacity
block is ``expiring`` from 40 minutes before its end (EC2 reclaims its instances then).
"""

from __future__ import annotations

import builtins
import hashlib
import json
import logging
import threading
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from attrs import frozen
from botocore.exceptions import ClientError  # type: ignore[import-untyped]

from karpenter_core.plugin_api import Clock

__all__ = [
    "CAPACITY_BLOCK",
    "DEFAULT",
    "EXPIRATION_PERIOD",
    "STATE_ACTIVE",
    "STATE_EXPIRING",
    "CapacityReservation",
    "CapacityReservationProvider",
    "queries",
    "tag_filters",
]

log = logging.getLogger("karpenter.aws.capacityreservation")

DEFAULT = "default"
CAPACITY_BLOCK = "capacity-block"
STATE_ACTIVE = "active"
STATE_EXPIRING = "expiring"
EXPIRATION_PERIOD = timedelta(minutes=40)
"""A capacity block's instances are reclaimed from this long before its end."""
QUERY_TTL = 60.0
"""How long one query's answer is reused (seconds)."""
_MATCH_CRITERIA = ("open", "targeted")
_NOT_FOUND = frozenset(
    {"InvalidCapacityReservationId.NotFound", "InvalidCapacityReservationId.Malformed"}
)


def _time(value: Any) -> datetime | None:
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, str) and value:
        try:
            t = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
        return t if t.tzinfo else t.replace(tzinfo=UTC)
    return None


def _format(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@frozen
class CapacityReservation:
    """One reservation as ``status.capacityReservations`` lists it."""

    id: str
    zone: str
    instance_type: str
    owner_id: str
    instance_match_criteria: str
    reservation_type: str = DEFAULT
    interruptible: bool = False
    state: str = STATE_ACTIVE
    end_time: datetime | None = None

    @classmethod
    def from_ec2(cls, d: Mapping[str, Any], now: datetime) -> CapacityReservation:
        """From one ``DescribeCapacityReservations`` entry; ``ValueError`` for a match
        criteria or reservation type this provider does not know (EC2 may add some)."""
        rid = str(d.get("CapacityReservationId") or "")
        criteria = str(d.get("InstanceMatchCriteria") or "")
        if criteria not in _MATCH_CRITERIA:
            raise ValueError(f"{rid}: unsupported instance match criteria {criteria!r}")
        raw_type = str(d.get("ReservationType") or DEFAULT)
        if raw_type not in (DEFAULT, CAPACITY_BLOCK):
            raise ValueError(f"{rid}: unsupported reservation type {raw_type!r}")
        end = _time(d.get("EndDate"))
        expiring = raw_type == CAPACITY_BLOCK and end is not None and now >= end - EXPIRATION_PERIOD
        return cls(
            id=rid,
            zone=str(d.get("AvailabilityZone") or ""),
            instance_type=str(d.get("InstanceType") or ""),
            owner_id=str(d.get("OwnerId") or ""),
            instance_match_criteria=criteria,
            reservation_type=raw_type,
            interruptible=bool(d.get("Interruptible")),
            state=STATE_EXPIRING if expiring else STATE_ACTIVE,
            end_time=end,
        )

    @classmethod
    def from_status(cls, m: Mapping[str, Any]) -> CapacityReservation:
        return cls(
            id=str(m.get("id") or ""),
            zone=str(m.get("availabilityZone") or ""),
            instance_type=str(m.get("instanceType") or ""),
            owner_id=str(m.get("ownerID") or ""),
            instance_match_criteria=str(m.get("instanceMatchCriteria") or ""),
            reservation_type=str(m.get("reservationType") or DEFAULT),
            interruptible=bool(m.get("interruptible")),
            state=str(m.get("state") or STATE_ACTIVE),
            end_time=_time(m.get("endTime")),
        )

    def to_status(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "availabilityZone": self.zone,
            "id": self.id,
            "instanceMatchCriteria": self.instance_match_criteria,
            "instanceType": self.instance_type,
            "ownerID": self.owner_id,
            "reservationType": self.reservation_type,
            "interruptible": self.interruptible,
            "state": self.state,
        }
        if self.end_time is not None:
            out["endTime"] = _format(self.end_time)
        return out


def tag_filters(tags: Mapping[str, str]) -> list[dict[str, Any]]:
    """EC2 describe filters for a selector's tags: ``*`` matches any value of the key
    (``tag-key``), anything else the exact value."""
    return [
        {"Name": "tag-key", "Values": [k]} if v == "*" else {"Name": f"tag:{k}", "Values": [v]}
        for k, v in sorted(tags.items())
    ]


def queries(terms: Iterable[Any]) -> list[dict[str, Any]]:
    """The ``DescribeCapacityReservations`` arguments of each selector term."""
    out: list[dict[str, Any]] = []
    active = {"Name": "state", "Values": ["active"]}
    for t in terms:
        if t.id:
            out.append({"CapacityReservationIds": [t.id], "Filters": [active]})
        if t.tags or t.instance_match_criteria:
            filters: list[dict[str, Any]] = [active]
            if t.owner_id:
                filters.append({"Name": "owner-id", "Values": [t.owner_id]})
            filters.extend(tag_filters(t.tags))
            if t.instance_match_criteria:
                filters.append(
                    {"Name": "instance-match-criteria", "Values": [t.instance_match_criteria]}
                )
            out.append({"Filters": filters})
    return out


def _query_key(query: Mapping[str, Any]) -> str:
    return hashlib.sha256(json.dumps(query, sort_keys=True).encode()).hexdigest()


class CapacityReservationProvider:
    """Lists reservations by selector terms and tracks their available counts.

    Thread-safe; :attr:`version` changes whenever an available count does, so cached
    offerings know to rebuild.
    """

    def __init__(self, ec2: Any, clock: Clock, *, ttl: float = QUERY_TTL) -> None:
        self._ec2 = ec2
        self._clock = clock
        self._ttl = ttl
        self._lock = threading.Lock()
        self._list_lock = threading.Lock()
        self._queries: dict[str, tuple[float, builtins.list[dict[str, Any]]]] = {}
        self._available: dict[str, tuple[int, datetime]] = {}
        self.version = 0

    def list(self, terms: Sequence[Any]) -> list[dict[str, Any]]:
        """The active, unexpired reservations the terms select (EC2's dicts, unique by
        id). Raises ``ClientError`` / ``BotoCoreError`` when EC2 fails."""
        found: dict[str, dict[str, Any]] = {}
        with self._list_lock:  # one describe per query even when reconciles overlap
            for query in queries(terms):
                for r in self._describe(query):
                    found.setdefault(str(r.get("CapacityReservationId")), r)
        now = self._clock.now()
        return [r for r in found.values() if (end := _time(r.get("EndDate"))) is None or end > now]

    def _describe(self, query: Mapping[str, Any]) -> builtins.list[dict[str, Any]]:
        key = _query_key(query)
        mono = self._clock.monotonic()
        cached = self._queries.get(key)
        if cached is not None and mono - cached[0] < self._ttl:
            return cached[1]
        out: builtins.list[dict[str, Any]] = []
        args = dict(query)
        if "CapacityReservationIds" not in args:
            args["MaxResults"] = 1000  # not allowed with ids
        try:
            for page in self._ec2.get_paginator("describe_capacity_reservations").paginate(**args):
                out.extend(page.get("CapacityReservations") or [])
        except ClientError as e:
            code = str((e.response.get("Error") or {}).get("Code") or "")
            if code not in _NOT_FOUND:
                raise
        self._sync(
            {
                str(r["CapacityReservationId"]): int(r.get("AvailableInstanceCount") or 0)
                for r in out
            }
        )
        self._queries[key] = (mono, out)
        return out

    # --- available counts --------------------------------------------------------------

    def _sync(self, counts: Mapping[str, int]) -> None:
        now = self._clock.now()
        with self._lock:
            for rid, count in counts.items():
                old = self._available.get(rid)
                if old is None or old[0] != count:
                    self.version += 1
                self._available[rid] = (count, now)

    def set_available(self, reservation_id: str, count: int) -> None:
        """Set a count as EC2 reported it now (a sync of one reservation)."""
        self._sync({reservation_id: count})

    def available(self, reservation_id: str) -> int:
        """How many more instances the reservation takes (0 when never seen)."""
        with self._lock:
            entry = self._available.get(reservation_id)
            return entry[0] if entry is not None else 0

    def mark_launched(self, reservation_id: str, launched_at: datetime | None = None) -> None:
        """One instance launched into the reservation; not counted when EC2's last answer
        came after the launch (it already counted it)."""
        at = launched_at or self._clock.now()
        with self._lock:
            entry = self._available.get(reservation_id)
            if entry is None or entry[1] > at or entry[0] == 0:
                return
            self._available[reservation_id] = (entry[0] - 1, entry[1])
            self.version += 1

    def mark_terminated(self, reservation_id: str) -> None:
        """One instance of the reservation was terminated: its slot is free again. Counted
        whatever the timing: EC2 frees it some time before the instance is gone, and
        overestimating only costs a failed launch."""
        with self._lock:
            entry = self._available.get(reservation_id)
            if entry is None:
                return
            self._available[reservation_id] = (entry[0] + 1, entry[1])
            self.version += 1

    def mark_unavailable(self, *reservation_ids: str) -> None:
        """EC2 said the reservations are full: nothing more goes there until a sync."""
        with self._lock:
            for rid in reservation_ids:
                entry = self._available.get(rid)
                if entry is not None and entry[0] != 0:
                    self._available[rid] = (0, entry[1])
                    self.version += 1
