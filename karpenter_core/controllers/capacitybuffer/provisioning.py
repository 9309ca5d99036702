"""What a provisioning pass tells the CapacityBuffers (the provisioner calls
:func:`after_schedule` after each solve, with the ``CapacityBuffer`` gate on).

Two things follow from where the solve put the virtual pods:

* each buffer's ``Provisioning`` condition: False ``NotReadyForProvisioning`` (the buffer is
  not ``ReadyForProvisioning``), False ``BufferEmpty`` (zero replicas), False
  ``RequiresNewCapacity`` (some virtual pod needed a new NodeClaim or could not be placed at
  all), True ``FitsExistingCapacity`` (every replica fits on existing or in-flight nodes);
  otherwise (the buffer's pods were not in the pass) the condition is left as it is;
* cluster state's buffer pod counts (providerID -> virtual pods placed there), replaced
  every pass: emptiness never removes a node that holds buffer capacity.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Mapping
from typing import Any

from attrs import define, frozen

from karpenter_core.apis.autoscaling import CONDITION_PROVISIONING
from karpenter_core.apis.conditions import ConditionSet, condition_of
from karpenter_core.controllers.capacitybuffer.controller import CAPACITYBUFFERS
from karpenter_core.controllers.capacitybuffer.virtualpods import (
    buffer_key,
    buffer_key_of,
    is_virtual_pod,
)
from karpenter_core.kube.client import ApiError, Conflict, NotFound

__all__ = [
    "REASON_BUFFER_EMPTY",
    "REASON_FITS_EXISTING_CAPACITY",
    "REASON_NOT_READY_FOR_PROVISIONING",
    "REASON_REQUIRES_NEW_CAPACITY",
    "BufferPlacement",
    "ProvisioningVerdict",
    "after_schedule",
    "buffer_pod_counts",
    "classify",
    "provisioning_verdict",
]

log = logging.getLogger("karpenter.capacitybuffer")

REASON_FITS_EXISTING_CAPACITY = "FitsExistingCapacity"
REASON_REQUIRES_NEW_CAPACITY = "RequiresNewCapacity"
REASON_NOT_READY_FOR_PROVISIONING = "NotReadyForProvisioning"
REASON_BUFFER_EMPTY = "BufferEmpty"


@define
class BufferPlacement:
    """Where one buffer's virtual pods went in a pass."""

    existing: int = 0
    new_capacity: int = 0
    failed: int = 0


@frozen
class ProvisioningVerdict:
    status: str
    reason: str
    message: str


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def classify(results: Any) -> dict[str, BufferPlacement]:
    """Per buffer (``namespace/name``), how many of its virtual pods landed on existing
    nodes, on new NodeClaims, or nowhere."""
    out: dict[str, BufferPlacement] = {}

    def slot(pod: Any) -> BufferPlacement | None:
        key = buffer_key_of(pod)
        if not key:
            return None
        return out.setdefault(key, BufferPlacement())

    for existing in results.existing_nodes:
        for pod in existing.pods:
            if (s := slot(pod)) is not None:
                s.existing += 1
    for nc in results.new_nodeclaims:
        for pod in nc.pods:
            if (s := slot(pod)) is not None:
                s.new_capacity += 1
    for key in results.pod_errors:
        pod = results.pods_by_key.get(key)
        if pod is not None and (s := slot(pod)) is not None:
            s.failed += 1
    return out


def buffer_pod_counts(results: Any) -> dict[str, int]:
    """providerID -> virtual pods the pass placed on that (existing or in-flight) node."""
    counts: dict[str, int] = {}
    for existing in results.existing_nodes:
        n = sum(1 for pod in existing.pods if is_virtual_pod(pod))
        if n:
            pid = existing.state_node.provider_id()
            counts[pid] = counts.get(pid, 0) + n
    return counts


def provisioning_verdict(
    buffer: Mapping[str, Any], placement: BufferPlacement | None
) -> ProvisioningVerdict | None:
    """The buffer's ``Provisioning`` condition after a pass, or None to leave it."""
    ready = condition_of(buffer, "ReadyForProvisioning")
    if ready is None or ready.get("status") != "True":
        return ProvisioningVerdict(
            "False", REASON_NOT_READY_FOR_PROVISIONING, "Buffer is not ReadyForProvisioning"
        )
    replicas = _mapping(buffer.get("status")).get("replicas")
    desired = replicas if isinstance(replicas, int) and not isinstance(replicas, bool) else 0
    if desired <= 0:
        return ProvisioningVerdict("False", REASON_BUFFER_EMPTY, "Buffer has zero desired replicas")
    if placement is None:
        return None
    if placement.new_capacity > 0 or placement.failed > 0:
        return ProvisioningVerdict(
            "False",
            REASON_REQUIRES_NEW_CAPACITY,
            f"{placement.new_capacity}/{desired} virtual pods required new capacity, "
            f"{placement.failed} failed",
        )
    if placement.existing == desired:
        return ProvisioningVerdict(
            "True",
            REASON_FITS_EXISTING_CAPACITY,
            f"All {desired} virtual pods fit on existing capacity",
        )
    return None


def after_schedule(ctx: Any, results: Any | None) -> None:
    """Patch each buffer's ``Provisioning`` condition (only when it changes) and replace
    cluster state's buffer pod counts. ``results`` is None when the pass scheduled nothing.
    A failed write is logged and retried on the next pass; it never fails provisioning."""
    placements = classify(results) if results is not None else {}
    ctx.cluster.update_buffer_pod_counts(buffer_pod_counts(results) if results is not None else {})
    try:
        buffers = ctx.kube.list(CAPACITYBUFFERS).items
    except ApiError as e:
        log.error("listing capacitybuffers: %s", e)
        return
    for buffer in buffers:
        key = buffer_key(buffer)
        verdict = provisioning_verdict(buffer, placements.get(key))
        if verdict is None:
            continue
        current = condition_of(buffer, CONDITION_PROVISIONING) or {}
        if (current.get("status"), current.get("reason"), current.get("message")) == (
            verdict.status,
            verdict.reason,
            verdict.message,
        ):
            continue
        meta = _mapping(buffer.get("metadata"))
        conditions = ConditionSet(copy.deepcopy(dict(buffer)), ctx.clock, root=None)
        conditions.set(CONDITION_PROVISIONING, verdict.status, verdict.reason, verdict.message)
        patch = conditions.status_patch()
        if patch is None:
            continue
        try:
            ctx.kube.patch(
                CAPACITYBUFFERS,
                str(meta.get("name") or ""),
                patch,
                str(meta.get("namespace") or "default"),
                subresource="status",
            )
        except (Conflict, NotFound):
            continue  # changed or gone since the list; the next pass decides again
        except ApiError as e:
            log.error("patching capacitybuffer %s: %s", key, e)
