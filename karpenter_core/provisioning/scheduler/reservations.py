"""Reserved-capacity bookkeeping for one scheduling simulation (spec scheduling.md §11).

A reservation id has a finite number of launch slots. A NodeClaim that could launch into a
reserved offering holds one slot of every compatible reservation id (pessimistic), so that
two NodeClaims never both count on the last slot. Holding is idempotent per (host, id).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from karpenter_core.apis.labels import CAPACITY_TYPE_RESERVED
from karpenter_core.provisioning.scheduler.offerings import capacity_type_of, reservation_id_of


class ReservationManager:
    """Tracks remaining capacity per reservation id and which host holds which ids."""

    __slots__ = ("_capacity", "_held")

    def __init__(self, instance_types: Mapping[str, Sequence[Any]]) -> None:
        self._capacity: dict[str, int] = {}
        self._held: dict[str, set[str]] = {}
        for its in instance_types.values():
            for it in its:
                for o in it.offerings:
                    if capacity_type_of(o) != CAPACITY_TYPE_RESERVED:
                        continue
                    rid = reservation_id_of(o)
                    cap = int(getattr(o, "reservation_capacity", 0) or 0)
                    # The smallest capacity any pool reports wins: the cloud cannot launch more.
                    if rid not in self._capacity or self._capacity[rid] > cap:
                        self._capacity[rid] = cap

    def can_reserve(self, host: str, offering: Any) -> bool:
        rid = reservation_id_of(offering)
        if rid in self._held.get(host, ()):
            return True
        # An id never seen at construction has no capacity to give.
        return self._capacity.get(rid, 0) > 0

    def reserve(self, host: str, offerings: Iterable[Any]) -> None:
        for o in offerings:
            rid = reservation_id_of(o)
            held = self._held.setdefault(host, set())
            if rid in held:
                continue
            if self._capacity.get(rid, 0) <= 0:
                raise ValueError(f"reservation {rid!r} has no remaining capacity for {host}")
            self._capacity[rid] -= 1
            held.add(rid)

    def release(self, host: str, offerings: Iterable[Any]) -> None:
        for o in offerings:
            rid = reservation_id_of(o)
            held = self._held.get(host)
            if held is not None and rid in held:
                held.discard(rid)
                self._capacity[rid] += 1

    def has_reservation(self, host: str, offering: Any) -> bool:
        return reservation_id_of(offering) in self._held.get(host, ())

    def remaining_capacity(self, offering: Any) -> int:
        return self._capacity.get(reservation_id_of(offering), 0)

    @property
    def has_reservations(self) -> bool:
        return bool(self._capacity)
