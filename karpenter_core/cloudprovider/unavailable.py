"""Offerings recently found out of capacity (the ICE cache).

When a cloud answers a launch with an insufficient-capacity error for an instance type in a
zone and capacity type (EC2's InsufficientInstanceCapacity, Azure's SkuNotAvailable or
AllocationFailed, GCE's ZONE_RESOURCE_POOL_EXHAUSTED), that offering is marked unavailable for a few minutes (upstream
``UnavailableOfferingsTTL``, 3 min) so the scheduler stops choosing it and the next launch
tries something else. Marks expire on their own: capacity comes back.

Three kinds of entries, as upstream ``pkg/cache/unavailableofferings.go``:

- an offering, keyed ``<capacityType>:<instanceType>:<zone>[:<pgID>[:<partition>]]``;
- a whole capacity type (spot is off when its service-linked role cannot be created);
- a subnet out of IP addresses (a zone is unavailable only when *all* the NodeClass's
  subnets in it are).

Every provider plugin shares this one implementation (``karpenter_core.plugin_api``
exports it), so the scheduler sees the same expiry semantics whatever the cloud.

Built offerings are cached, so readers need to know when any of this changed:
:meth:`UnavailableOfferings.seq` returns a number that grows whenever an entry concerning
the type is added or expires. Expiry is checked against the injected clock whenever the
cache is read (no background sweeper), so a :class:`VirtualClock` drives it exactly.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable

from karpenter_core.runtime.clock import Clock

__all__ = ["UNAVAILABLE_OFFERINGS_TTL", "UnavailableOfferings", "offering_key"]

UNAVAILABLE_OFFERINGS_TTL = 180.0
"""Seconds an insufficient-capacity mark lasts (upstream: 3 minutes)."""

log = logging.getLogger("karpenter.cloudprovider.unavailable")


def offering_key(
    instance_type: str,
    zone: str,
    capacity_type: str,
    placement_group_id: str = "",
    placement_group_partition: str = "",
) -> str:
    """The cache key of one offering, in upstream's format.

    A placement-group scope makes an ICE inside that group (and partition) block only
    launches into it, not ordinary launches of the same type and zone.
    """
    key = f"{capacity_type}:{instance_type}:{zone}"
    if placement_group_id:
        key = f"{key}:{placement_group_id}"
        if placement_group_partition:
            key = f"{key}:{placement_group_partition}"
    return key


class UnavailableOfferings:
    """The ICE cache: marks with a TTL on ``clock``'s monotonic time. Thread-safe."""

    def __init__(self, clock: Clock, ttl: float = UNAVAILABLE_OFFERINGS_TTL) -> None:
        if ttl <= 0:
            raise ValueError(f"unavailable-offerings ttl must be positive, got {ttl}")
        self._clock = clock
        self._ttl = float(ttl)
        self._lock = threading.Lock()
        # key -> (instance type, expiry)
        self._offerings: dict[str, tuple[str, float]] = {}
        self._capacity_types: dict[str, float] = {}
        self._subnets: dict[str, float] = {}
        self._type_seq: dict[str, int] = {}
        self._global_seq = 0  # capacity-type and subnet changes concern every type
        self._next_expiry = float("inf")  # reads skip the sweep until then

    @property
    def ttl(self) -> float:
        return self._ttl

    # --- writing ---------------------------------------------------------------------------

    def mark(
        self,
        instance_type: str,
        zone: str,
        capacity_type: str,
        reason: str = "",
        *,
        placement_group_id: str = "",
        placement_group_partition: str = "",
        fleet_id: str = "",
    ) -> None:
        """Mark one offering unavailable for the TTL (marking again extends it)."""
        key = offering_key(
            instance_type, zone, capacity_type, placement_group_id, placement_group_partition
        )
        with self._lock:
            self._sweep_locked()
            until = self._clock.monotonic() + self._ttl
            self._offerings[key] = (instance_type, until)
            self._expire_at_locked(until)
            self._type_seq[instance_type] = self._type_seq.get(instance_type, 0) + 1
        log.debug(
            "removing offering from offerings: instance-type=%s zone=%s capacity-type=%s "
            "reason=%s ttl=%ss%s%s",
            instance_type,
            zone,
            capacity_type,
            reason or "unknown",
            int(self._ttl),
            f" placement-group-id={placement_group_id}" if placement_group_id else "",
            f" fleet-id={fleet_id}" if fleet_id else "",
        )

    def mark_capacity_type(self, capacity_type: str) -> None:
        """Mark every offering of ``capacity_type`` unavailable for the TTL."""
        with self._lock:
            self._sweep_locked()
            until = self._clock.monotonic() + self._ttl
            self._capacity_types[capacity_type] = until
            self._expire_at_locked(until)
            self._global_seq += 1
        log.debug("capacity type %s marked unavailable for %ss", capacity_type, int(self._ttl))

    def mark_subnet(self, subnet_id: str) -> None:
        """Mark a subnet as out of addresses for the TTL."""
        with self._lock:
            self._sweep_locked()
            until = self._clock.monotonic() + self._ttl
            self._subnets[subnet_id] = until
            self._expire_at_locked(until)
            self._global_seq += 1

    def delete(self, instance_type: str, zone: str, capacity_type: str) -> None:
        """Forget one offering's mark (launch succeeded there after all)."""
        with self._lock:
            if self._offerings.pop(offering_key(instance_type, zone, capacity_type), None):
                self._type_seq[instance_type] = self._type_seq.get(instance_type, 0) + 1

    def flush(self) -> None:
        """Forget every mark."""
        with self._lock:
            for instance_type, _ in self._offerings.values():
                self._type_seq[instance_type] = self._type_seq.get(instance_type, 0) + 1
            self._offerings.clear()
            self._capacity_types.clear()
            self._subnets.clear()
            self._global_seq += 1

    # --- reading ---------------------------------------------------------------------------

    def is_unavailable(
        self,
        instance_type: str,
        zone: str,
        capacity_type: str,
        *,
        subnet_ids: Iterable[str] = (),
        placement_group_id: str = "",
        placement_group_partition: str = "",
    ) -> bool:
        """True while the offering, its capacity type, or every one of ``subnet_ids`` is
        marked. An empty ``subnet_ids`` never makes a zone unavailable (the zone
        requirement already excludes zones without subnets)."""
        key = offering_key(
            instance_type, zone, capacity_type, placement_group_id, placement_group_partition
        )
        subnets = list(subnet_ids)
        with self._lock:
            self._sweep_locked()
            if key in self._offerings or capacity_type in self._capacity_types:
                return True
            return bool(subnets) and all(s in self._subnets for s in subnets)

    def seq(self, instance_type: str) -> int:
        """A number that changes whenever a mark concerning ``instance_type`` is added,
        removed or expires; cached offerings of the type are stale when it differs."""
        with self._lock:
            self._sweep_locked()
            return self._type_seq.get(instance_type, 0) + self._global_seq

    def __len__(self) -> int:
        """How many offering marks are live."""
        with self._lock:
            self._sweep_locked()
            return len(self._offerings)

    def _expire_at_locked(self, until: float) -> None:
        self._next_expiry = min(self._next_expiry, until)

    def _sweep_locked(self) -> None:
        now = self._clock.monotonic()
        if now < self._next_expiry:
            return
        expired = [k for k, (_, until) in self._offerings.items() if until <= now]
        for k in expired:
            instance_type, _ = self._offerings.pop(k)
            self._type_seq[instance_type] = self._type_seq.get(instance_type, 0) + 1
        for table in (self._capacity_types, self._subnets):
            gone = [k for k, until in table.items() if until <= now]
            for k in gone:
                del table[k]
                self._global_seq += 1
        self._next_expiry = min(
            [until for _, until in self._offerings.values()]
            + list(self._capacity_types.values())
            + list(self._subnets.values()),
            default=float("inf"),
        )
