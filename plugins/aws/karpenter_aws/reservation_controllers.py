"""The capacity-reservation singletons upstream runs beside the provider
(``pkg/controllers/capacityreservation``).

``capacityreservation.capacitytype``: a reservation that ends does not stop its
instances; EC2 keeps them running as plain on-demand capacity. Each minute every
instance Karpenter launched is listed through the cloud provider; a NodeClaim labelled
``reserved`` whose instance is now on-demand is relabelled ``on-demand`` and loses the
reservation labels, and so is its registered Node. Otherwise the scheduler and the
disruption controllers would keep counting the node against a reservation that no longer
holds it (and price it as nearly free). Only that demotion is synced: EC2 never moves a
running on-demand instance into a reservation for Karpenter. Deleting NodeClaims are left
alone (they are draining anyway), and so are Nodes that have not registered yet (their
labels are still being synced; the next pass gets them).

``capacityreservation.expiration``: EC2 reclaims a capacity block's instances shortly
before the block ends. Each minute the reservations of the managed NodeClaims are looked
up by id; a NodeClaim whose block is ``expiring`` (from 40 minutes before its end, see
:mod:`karpenter_aws.capacityreservation`) is deleted, so the core's termination flow
drains it and its pods are rescheduled while there is still time, instead of them dying
with the reclaimed instance.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any, Protocol

from botocore.exceptions import BotoCoreError, ClientError  # type: ignore[import-untyped]

from karpenter_aws.capacityreservation import (
    STATE_EXPIRING,
    CapacityReservation,
    CapacityReservationProvider,
)
from karpenter_aws.labels import (
    GROUP,
    LABEL_CAPACITY_RESERVATION_ID,
    LABEL_CAPACITY_RESERVATION_INTERRUPTIBLE,
    LABEL_CAPACITY_RESERVATION_TYPE,
)
from karpenter_aws.nodeclass import CapacityReservationSelectorTerm
from karpenter_core.plugin_api import (
    Clock,
    Conflict,
    KubeClient,
    NotFound,
    Result,
    labels_of,
    meta_of,
)
from karpenter_core.plugin_api import labels as wk

__all__ = [
    "CAPACITY_TYPE_NAME",
    "EXPIRATION_NAME",
    "RESERVATION_LABELS",
    "CapacityTypeController",
    "ExpirationController",
]

log = logging.getLogger("karpenter.aws.capacityreservation")

CAPACITY_TYPE_NAME = "capacityreservation.capacitytype"
EXPIRATION_NAME = "capacityreservation.expiration"
INTERVAL = 60.0
"""Both controllers look again every minute (upstream's period)."""

RESERVATION_LABELS = (
    LABEL_CAPACITY_RESERVATION_ID,
    LABEL_CAPACITY_RESERVATION_TYPE,
    LABEL_CAPACITY_RESERVATION_INTERRUPTIBLE,
)
"""The labels only a reserved node carries."""

_NODECLAIMS = "nodeclaims"
_NODES = "nodes"


class _CloudProviderLike(Protocol):
    """The cloud provider's ``list``: every instance Karpenter launched, as NodeClaims
    labelled with the capacity type EC2 reports for it now."""

    def list(self) -> Iterable[Any]: ...


def _provider_id(obj: Mapping[str, Any], where: str) -> str:
    part = obj.get(where)
    return str(part.get("providerID") or "") if isinstance(part, Mapping) else ""


def _managed(nodeclaim: Mapping[str, Any]) -> bool:
    """A NodeClaim of an EC2NodeClass (upstream's ``ListManaged``)."""
    ref = (nodeclaim.get("spec") or {}).get("nodeClassRef") or {}
    return str(ref.get("group") or "") == GROUP


def _demotion() -> dict[str, Any]:
    """A merge patch: capacity type on-demand, reservation labels removed."""
    labels: dict[str, str | None] = {wk.CAPACITY_TYPE_LABEL_KEY: wk.CAPACITY_TYPE_ON_DEMAND}
    labels.update(dict.fromkeys(RESERVATION_LABELS))
    return {"metadata": {"labels": labels}}


class CapacityTypeController:
    """Relabels reserved NodeClaims (and Nodes) whose instance is on-demand now."""

    def __init__(self, kube: KubeClient, cloud_provider: _CloudProviderLike) -> None:
        self._kube = kube
        self._cloud_provider = cloud_provider

    def reconcile(self) -> Result:
        cloud = {
            str(getattr(nc.status, "provider_id", "") or ""): nc.metadata.labels.get(
                wk.CAPACITY_TYPE_LABEL_KEY, ""
            )
            for nc in self._cloud_provider.list()
        }
        nodes: dict[str, list[dict[str, Any]]] = {}
        for node in self._kube.list(_NODES):
            nodes.setdefault(_provider_id(node, "spec"), []).append(node)
        updated: list[str] = []
        conflicts = 0
        for nc in self._kube.list(_NODECLAIMS):
            pid = _provider_id(nc, "status")
            if not pid or cloud.get(pid) != wk.CAPACITY_TYPE_ON_DEMAND:
                continue  # not launched yet, gone, or still reserved/spot
            try:
                if self._demote(nc, nodes.get(pid, ())):
                    updated.append(str(meta_of(nc).get("name")))
            except Conflict:
                conflicts += 1
        if updated:
            log.info("updated capacity type for nodeclaims %s", sorted(updated))
        return Result(requeue=True) if conflicts else Result.after(INTERVAL)

    def _demote(self, nodeclaim: Mapping[str, Any], nodes: Iterable[Mapping[str, Any]]) -> bool:
        if meta_of(nodeclaim).get("deletionTimestamp"):
            return False
        updated = False
        if labels_of(nodeclaim).get(wk.CAPACITY_TYPE_LABEL_KEY) == wk.CAPACITY_TYPE_RESERVED:
            updated |= self._patch(_NODECLAIMS, nodeclaim)
        # a reservation can end before the node registers: there may be no Node yet
        for node in nodes:
            labels = labels_of(node)
            if (
                meta_of(node).get("deletionTimestamp")
                or labels.get(wk.NODE_REGISTERED_LABEL_KEY) != "true"
                or labels.get(wk.CAPACITY_TYPE_LABEL_KEY) != wk.CAPACITY_TYPE_RESERVED
            ):
                continue
            updated |= self._patch(_NODES, node)
        return updated

    def _patch(self, resource: str, obj: Mapping[str, Any]) -> bool:
        name = str(meta_of(obj).get("name"))
        try:
            self._kube.patch(resource, name, _demotion())
        except NotFound:
            return False
        return True


class ExpirationController:
    """Deletes the NodeClaims of capacity blocks that are about to be reclaimed."""

    def __init__(
        self, kube: KubeClient, reservations: CapacityReservationProvider, clock: Clock
    ) -> None:
        self._kube = kube
        self._reservations = reservations
        self._clock = clock

    def reconcile(self) -> Result:
        claims = [
            nc
            for nc in self._kube.list(_NODECLAIMS)
            if _managed(nc) and labels_of(nc).get(LABEL_CAPACITY_RESERVATION_ID)
        ]
        ids = sorted({str(labels_of(nc)[LABEL_CAPACITY_RESERVATION_ID]) for nc in claims})
        if not ids:
            return Result.after(INTERVAL)
        try:
            found = self._reservations.list([CapacityReservationSelectorTerm(id=i) for i in ids])
        except (ClientError, BotoCoreError) as e:
            log.warning("capacity block expiration: describing reservations failed: %s", e)
            return Result(requeue=True)
        now = self._clock.now()
        expiring: set[str] = set()
        for raw in found:
            try:
                cr = CapacityReservation.from_ec2(raw, now)
            except ValueError as e:
                log.error("capacity block expiration: %s", e)
                continue
            if cr.state == STATE_EXPIRING:
                expiring.add(cr.id)
        failed = 0
        for nc in claims:
            rid = str(labels_of(nc)[LABEL_CAPACITY_RESERVATION_ID])
            meta = meta_of(nc)
            if rid not in expiring or meta.get("deletionTimestamp"):
                continue
            name = str(meta.get("name"))
            try:
                self._kube.delete(_NODECLAIMS, name)
            except NotFound:
                continue
            except Exception as e:  # the others are still deleted; retried with back-off
                log.warning("capacity block expiration: deleting nodeclaim %s: %s", name, e)
                failed += 1
                continue
            log.info(
                "initiating delete of nodeclaim %s for capacity block expiration "
                "(capacity-reservation-id %s)",
                name,
                rid,
            )
        return Result(requeue=True) if failed else Result.after(INTERVAL)
