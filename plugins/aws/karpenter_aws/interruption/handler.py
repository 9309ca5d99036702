"""Acting on an interruption: what both the SQS controller and the health poller do to the
NodeClaims of an affected instance.

For each NodeClaim of the instance (and its Node, when it has registered): publish the
kind's event, mark the lost capacity unavailable (a spot interruption means that spot
pool is being reclaimed; launching the replacement into it would be interrupted again),
then delete the NodeClaim for the kinds that delete it. Deleting hands the node to the
core's termination flow (cordon, drain, terminate the instance); for an already broken
instance the termination-timestamp annotation is set first, so the drain does not wait
on PodDisruptionBudgets or grace periods.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any, Protocol

from attrs import frozen

from karpenter_aws.interruption import messages as m
from karpenter_aws.labels import LABEL_CAPACITY_RESERVATION_ID
from karpenter_core.plugin_api import (
    NORMAL,
    WARNING,
    ControllerContext,
    Event,
    NotFound,
    annotations_of,
    format_time,
    labels_of,
    meta_of,
    record_disruption,
    termination_timestamp,
)
from karpenter_core.plugin_api import labels as wk

__all__ = [
    "EVENTS",
    "InstanceIndex",
    "InterruptionHandler",
    "ReservationsLike",
    "UnavailableOfferingsLike",
    "instance_id",
]

log = logging.getLogger("karpenter.aws.interruption")

NODECLAIMS = "nodeclaims"
NODES = "nodes"


class UnavailableOfferingsLike(Protocol):
    """The part of ``karpenter_core.cloudprovider.unavailable.UnavailableOfferings`` interruption uses."""

    def mark(self, instance_type: str, zone: str, capacity_type: str, reason: str) -> None: ...


class ReservationsLike(Protocol):
    """The part of ``karpenter_aws.capacityreservation.CapacityReservationProvider``
    interruption uses."""

    def mark_unavailable(self, *reservation_ids: str) -> None: ...


@frozen
class _EventText:
    type: str
    reason: str
    message: str
    node_message: str = ""


EVENTS: Mapping[str, _EventText] = {
    m.SPOT_INTERRUPTED: _EventText(
        WARNING, "SpotInterrupted", "Spot interruption warning was triggered"
    ),
    m.CAPACITY_RESERVATION_INTERRUPTED: _EventText(
        WARNING,
        "CapacityReservationInstanceInterrupted",
        "Capacity Reservation interruption warning was triggered",
    ),
    m.REBALANCE_RECOMMENDATION: _EventText(
        NORMAL, "SpotRebalanceRecommendation", "Spot rebalance recommendation was triggered"
    ),
    m.INSTANCE_STOPPED: _EventText(WARNING, "InstanceStopping", "Instance is stopping"),
    m.INSTANCE_TERMINATED: _EventText(WARNING, "InstanceTerminating", "Instance is terminating"),
    **{
        kind: _EventText(
            WARNING, "InstanceUnhealthy", "An unhealthy warning was triggered for the instance"
        )
        for kind in (m.SCHEDULED_CHANGE, m.INSTANCE_STATUS, m.SYSTEM_STATUS, m.EVENT_STATUS)
    },
}
"""The event each kind publishes on the NodeClaim and its Node (upstream's reasons)."""

_TERMINATING = _EventText(
    WARNING,
    "TerminatingOnInterruption",
    "Interruption triggered termination for the NodeClaim",
    "Interruption triggered termination for the Node",
)


def instance_id(provider_id: str) -> str:
    """The EC2 instance id of a providerID (``aws:///us-west-2a/i-0abc`` -> ``i-0abc``);
    "" for one that is not an AWS providerID."""
    if not provider_id.startswith("aws://"):
        return ""
    last = provider_id.rstrip("/").rsplit("/", 1)[-1]
    return last if last.startswith("i-") else ""


def _provider_id(obj: Mapping[str, Any], where: str) -> str:
    part = obj.get(where)
    return str(part.get("providerID") or "") if isinstance(part, Mapping) else ""


class InstanceIndex:
    """NodeClaims and Nodes by EC2 instance id, from one list of each: a batch of up to
    ten messages then costs two list calls instead of two per message."""

    def __init__(self, nodeclaims: Iterable[dict[str, Any]], nodes: Iterable[dict[str, Any]]):
        self.nodeclaims: dict[str, list[dict[str, Any]]] = {}
        self.nodes: dict[str, dict[str, Any]] = {}
        for nc in nodeclaims:
            iid = instance_id(_provider_id(nc, "status"))
            if iid:
                self.nodeclaims.setdefault(iid, []).append(nc)
        for node in nodes:
            iid = instance_id(_provider_id(node, "spec"))
            if iid:
                self.nodes.setdefault(iid, node)

    @classmethod
    def load(cls, ctx: ControllerContext) -> InstanceIndex:
        return cls(ctx.kube.list(NODECLAIMS), ctx.kube.list(NODES))


class InterruptionHandler:
    """Applies one message's action to the NodeClaims of its instances."""

    def __init__(
        self,
        ctx: ControllerContext,
        unavailable: UnavailableOfferingsLike | None,
        reservations: ReservationsLike | None = None,
    ) -> None:
        self.ctx = ctx
        self.unavailable = unavailable
        self.reservations = reservations

    def handle(self, message: m.Message, index: InstanceIndex) -> bool:
        """Act on ``message``; returns whether any of its instances has a NodeClaim.

        Raises the first API error after trying every NodeClaim, so one failed write does
        not stop the others and the caller keeps the message for a retry.
        """
        if message.kind == m.NO_OP:
            return False
        found = False
        errors: list[Exception] = []
        for iid in message.instance_ids:
            node = index.nodes.get(iid)
            for nodeclaim in index.nodeclaims.get(iid, ()):
                found = True
                try:
                    self._handle_nodeclaim(message.kind, nodeclaim, node, iid)
                except Exception as err:
                    errors.append(err)
        if errors:
            raise errors[0]
        return found

    def _handle_nodeclaim(
        self, kind: str, nodeclaim: dict[str, Any], node: dict[str, Any] | None, iid: str
    ) -> None:
        self._publish(EVENTS.get(kind), nodeclaim, node)
        self._mark_unavailable(kind, nodeclaim)
        if kind not in m.DELETING_KINDS:
            return
        if kind in m.FORCEFUL_KINDS:
            self._annotate_termination_timestamp(nodeclaim)
        self._delete(kind, nodeclaim, node, iid)

    def _publish(
        self, text: _EventText | None, nodeclaim: dict[str, Any], node: dict[str, Any] | None
    ) -> None:
        if text is None:
            return
        recorder = self.ctx.recorder
        uid = str(meta_of(nodeclaim).get("uid") or "")
        recorder.publish(Event(nodeclaim, text.type, text.reason, text.message, (uid,)))
        if node is not None:
            node_uid = str(meta_of(node).get("uid") or "")
            node_message = text.node_message or text.message
            recorder.publish(Event(node, text.type, text.reason, node_message, (node_uid,)))

    def _mark_unavailable(self, kind: str, nodeclaim: Mapping[str, Any]) -> None:
        """Spot interruption: that spot pool (type x zone) is reclaiming capacity, so the
        pool is kept out of launches. A reservation interruption: that one reservation is
        taking its capacity back, so its available count drops to zero until EC2's next
        answer; the type's other reservations in the zone are not affected."""
        labels = labels_of(nodeclaim)
        if kind == m.CAPACITY_RESERVATION_INTERRUPTED:
            rid = str(labels.get(LABEL_CAPACITY_RESERVATION_ID) or "")
            if rid and self.reservations is not None:
                self.reservations.mark_unavailable(rid)
            return
        if kind != m.SPOT_INTERRUPTED or self.unavailable is None:
            return
        zone = str(labels.get(wk.LABEL_TOPOLOGY_ZONE) or "")
        instance_type = str(labels.get(wk.LABEL_INSTANCE_TYPE) or "")
        if zone and instance_type:
            self.unavailable.mark(instance_type, zone, wk.CAPACITY_TYPE_SPOT, kind)

    def _annotate_termination_timestamp(self, nodeclaim: dict[str, Any]) -> None:
        """Set the termination deadline to now unless one is already due."""
        value = termination_timestamp(annotations_of(nodeclaim), self.ctx.clock.now())
        if value is None:
            return
        key = wk.NODECLAIM_TERMINATION_TIMESTAMP_ANNOTATION_KEY
        name = str(meta_of(nodeclaim).get("name"))
        try:
            patched = self.ctx.kube.patch(
                NODECLAIMS, name, {"metadata": {"annotations": {key: value}}}
            )
        except NotFound:
            return
        nodeclaim["metadata"] = patched.get("metadata") or nodeclaim.get("metadata")

    def _delete(
        self, kind: str, nodeclaim: dict[str, Any], node: dict[str, Any] | None, iid: str
    ) -> None:
        meta = meta_of(nodeclaim)
        if meta.get("deletionTimestamp"):
            return
        name = str(meta.get("name"))
        try:
            remaining = self.ctx.kube.delete(NODECLAIMS, name)
        except NotFound:
            return
        # later messages in the same batch about this instance must see it as deleting
        left = (remaining or {}).get("metadata") or {}
        nodeclaim.setdefault("metadata", {})["deletionTimestamp"] = left.get(
            "deletionTimestamp"
        ) or format_time(self.ctx.clock.now())
        log.info(
            "initiating delete of nodeclaim %s (instance %s) from interruption message %s",
            name,
            iid,
            kind,
        )
        self._publish(_TERMINATING, nodeclaim, node)
        record_disruption(self.ctx, nodeclaim, kind)
