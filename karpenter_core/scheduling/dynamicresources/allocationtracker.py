"""Which devices are taken, seen from a NodeClaim and one of its instance types
(``designs/dra-scheduling.md``, "State Management").

A NodeClaim in flight is a superposition of instance types and will become exactly one of
them. So an in-cluster device reserved by a NodeClaim for instance type A is taken for every
other NodeClaim, but still free on the same NodeClaim for instance type B; it is freed when
the last instance type that reserved it is released. A template device exists per NodeClaim
and instance type, so it is only ever taken there.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet

from attrs import define, field

from karpenter_core.scheduling.dynamicresources.devices import DeviceID

_EMPTY: frozenset[DeviceID] = frozenset()
_NONE: dict[str, set[DeviceID]] = {}


@define
class _Reservation:
    nodeclaim: str
    instance_types: set[str] = field(factory=set)


class AllocationTrackerError(RuntimeError):
    """An inconsistent commit or release: a bug in the caller, never a pod's fault."""


class AllocationTracker:
    """Device reservations for one scheduling pass; changed only by :meth:`commit` and
    :meth:`release_instance_types`."""

    def __init__(self, preallocated: Iterable[DeviceID] = ()) -> None:
        self.preallocated: frozenset[DeviceID] = frozenset(d.published for d in preallocated)
        """Devices allocated in the cluster (claims not held only by deleting pods)."""
        self._cluster: dict[DeviceID, _Reservation] = {}
        self._cluster_by_nodeclaim: dict[str, dict[str, set[DeviceID]]] = {}
        self._template: dict[str, dict[str, set[DeviceID]]] = {}

    def is_allocated(self, device: DeviceID, nodeclaim: str, instance_type: str) -> bool:
        """Whether ``device`` is unavailable to ``nodeclaim`` becoming ``instance_type``."""
        if device.template:
            return device in self._template.get(nodeclaim, {}).get(instance_type, ())
        if device in self.preallocated:
            return True
        reservation = self._cluster.get(device)
        if reservation is None:
            return False
        if reservation.nodeclaim != nodeclaim:
            return True
        return instance_type in reservation.instance_types

    def commit(
        self, nodeclaim: str, devices_by_instance_type: Mapping[str, Sequence[DeviceID]]
    ) -> None:
        """Reserve, for each instance type, the devices an allocation chose on it."""
        for instance_type, devices in devices_by_instance_type.items():
            for device in devices:
                if device.template:
                    taken = self._template.setdefault(nodeclaim, {}).setdefault(
                        instance_type, set()
                    )
                    if device in taken:
                        raise AllocationTrackerError(
                            f"{device} is already reserved on {instance_type}"
                        )
                    taken.add(device)
                    continue
                by_type = self._cluster_by_nodeclaim.setdefault(nodeclaim, {})
                taken = by_type.setdefault(instance_type, set())
                if device in taken:
                    raise AllocationTrackerError(f"{device} is already reserved on {instance_type}")
                reservation = self._cluster.get(device)
                if reservation is None:
                    reservation = self._cluster[device] = _Reservation(nodeclaim)
                elif reservation.nodeclaim != nodeclaim:
                    raise AllocationTrackerError(
                        f"{device} is reserved by NodeClaim {reservation.nodeclaim}"
                    )
                taken.add(device)
                reservation.instance_types.add(instance_type)

    def release_instance_types(
        self, nodeclaim: str, instance_types: Iterable[str]
    ) -> list[DeviceID]:
        """Drop the NodeClaim's reservations for pruned instance types; returns the
        in-cluster devices that became free for other NodeClaims."""
        freed: list[DeviceID] = []
        for instance_type in instance_types:
            devices = self._cluster_by_nodeclaim.get(nodeclaim, {}).pop(instance_type, set())
            for device in devices:
                reservation = self._cluster.get(device)
                if reservation is None or instance_type not in reservation.instance_types:
                    raise AllocationTrackerError(f"{device} has no reservation for {instance_type}")
                reservation.instance_types.discard(instance_type)
                if not reservation.instance_types:
                    del self._cluster[device]
                    freed.append(device)
            self._template.get(nodeclaim, {}).pop(instance_type, None)
        return freed

    def has_reservations(self, nodeclaim: str) -> bool:
        """The NodeClaim reserved devices (in the cluster or of templates)."""
        return bool(self._cluster_by_nodeclaim.get(nodeclaim) or self._template.get(nodeclaim))

    def template_reservations(self, nodeclaim: str, instance_type: str) -> AbstractSet[DeviceID]:
        """The template devices the NodeClaim reserved on ``instance_type`` (read only)."""
        return self._template.get(nodeclaim, _NONE).get(instance_type, _EMPTY)

    def cluster_reservations(self, nodeclaim: str, instance_type: str) -> AbstractSet[DeviceID]:
        """The in-cluster devices the NodeClaim reserved for ``instance_type`` (read only)."""
        return self._cluster_by_nodeclaim.get(nodeclaim, _NONE).get(instance_type, _EMPTY)

    def reserved_by(self, nodeclaim: str) -> dict[str, frozenset[DeviceID]]:
        """The NodeClaim's reservations per instance type (in-cluster and template)."""
        out: dict[str, set[DeviceID]] = {}
        for it, devices in self._cluster_by_nodeclaim.get(nodeclaim, {}).items():
            out.setdefault(it, set()).update(devices)
        for it, devices in self._template.get(nodeclaim, {}).items():
            out.setdefault(it, set()).update(devices)
        return {it: frozenset(d) for it, d in out.items() if d}


__all__ = ["AllocationTracker", "AllocationTrackerError"]
