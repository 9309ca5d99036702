"""Initialization: decide when a registered NodeClaim's Node is ready for its pods.

Spec: operator-and-lifecycle §5.4. Checked in order, the first failure keeping
``Initialized=Unknown`` with its reason: the Node exists (``NodeNotFound``), is Ready
(``NodeNotReady``), has shed its startup taints (``StartupTaintsExist``) and the known
ephemeral start-up taints (``KnownEphemeralTaintsExist``), every non-zero requested
resource shows allocatable capacity (``ResourceNotRegistered`` — a device plugin has not
registered an extended resource yet), and, with DRA on, every driver named in
``karpenter.sh/requested-dra-drivers`` has published a complete pool
(``DRADriverPoolsNotPublished``). Then the Node is labelled
``karpenter.sh/initialized=true`` and the NodeClaim ``Initialized=True``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

from karpenter_core.apis import labels as wk
from karpenter_core.apis.conditions import ConditionSet
from karpenter_core.apis.taints import Taint, is_known_ephemeral
from karpenter_core.apis.v1 import CONDITION_INITIALIZED, CONDITION_REGISTERED
from karpenter_core.controllers.nodeclaim.utils import (
    DuplicateNodeError,
    NodeIndex,
    NodeNotFoundError,
    milli_or_zero,
    node_for_nodeclaim,
    node_ready_status,
)
from karpenter_core.runtime.context import ControllerContext
from karpenter_core.runtime.reconciler import Result

__all__ = [
    "Initialization",
    "dra_drivers_published",
    "known_ephemeral_taint",
    "requested_resource_missing",
    "startup_taint_remaining",
]

log = logging.getLogger("karpenter.nodeclaim.lifecycle")

NODES = "nodes"
RESOURCE_SLICES = "resourceslices"


def _taint(d: Mapping[str, Any]) -> Taint:
    return Taint(str(d.get("key") or ""), str(d.get("effect") or ""), str(d.get("value") or ""))


def _node_taints(node: Mapping[str, Any]) -> list[Taint]:
    spec = node.get("spec") or {}
    return [_taint(t) for t in spec.get("taints") or () if isinstance(t, Mapping)]


def startup_taint_remaining(node: Mapping[str, Any], nodeclaim: Mapping[str, Any]) -> Taint | None:
    """A node taint matching one of the NodeClaim's startup taints, or None."""
    startup = [_taint(t) for t in (nodeclaim.get("spec") or {}).get("startupTaints") or ()]
    for want in startup:
        for have in _node_taints(node):
            if want.matches(have):
                return have
    return None


def known_ephemeral_taint(node: Mapping[str, Any]) -> Taint | None:
    """The first known ephemeral start-up taint on the node, or None."""
    for taint in _node_taints(node):
        if is_known_ephemeral(taint):
            return taint
    return None


def requested_resource_missing(node: Mapping[str, Any], nodeclaim: Mapping[str, Any]) -> str | None:
    """The first non-zero requested resource with zero allocatable on the node, or None.

    Kubelet zeroes an extended resource's capacity and allocatable at start, so zero
    allocatable for something the NodeClaim asked for means its device plugin has not
    registered yet (allocatable is what scheduling uses).
    """
    requests = ((nodeclaim.get("spec") or {}).get("resources") or {}).get("requests") or {}
    allocatable = (node.get("status") or {}).get("allocatable") or {}
    for name in sorted(requests):
        if milli_or_zero(requests[name]) == 0:
            continue
        if milli_or_zero(allocatable.get(name, 0)) == 0:
            return str(name)
    return None


def _slice_belongs_to(slice_: Mapping[str, Any], node_name: str) -> bool:
    spec = slice_.get("spec") or {}
    if spec.get("nodeName") == node_name:
        return True
    owners = (slice_.get("metadata") or {}).get("ownerReferences") or ()
    return any(o.get("kind") == "Node" and o.get("name") == node_name for o in owners)


def _complete_pool_drivers(slices: Iterable[Mapping[str, Any]]) -> set[str]:
    """Drivers with at least one pool whose slices at its newest generation are all present."""
    pools: dict[tuple[str, str], list[int]] = {}  # (driver, pool) -> [generation, count, seen]
    for s in slices:
        spec = s.get("spec") or {}
        pool = spec.get("pool") or {}
        key = (str(spec.get("driver") or ""), str(pool.get("name") or ""))
        gen = int(pool.get("generation") or 0)
        count = int(pool.get("resourceSliceCount") or 0)
        obs = pools.get(key)
        if obs is None or gen > obs[0]:
            pools[key] = [gen, count, 1]
        elif gen == obs[0]:
            obs[2] += 1
    return {
        driver for (driver, _), (_, count, seen) in pools.items() if count > 0 and seen == count
    }


def dra_drivers_published(
    nodeclaim: Mapping[str, Any], slices: Iterable[Mapping[str, Any]]
) -> str | None:
    """The first requested DRA driver without a complete pool among ``slices``, or None."""
    annotation = str(
        ((nodeclaim.get("metadata") or {}).get("annotations") or {}).get(
            wk.REQUESTED_DRA_DRIVERS_ANNOTATION_KEY, ""
        )
    ).strip()
    if not annotation:
        return None
    complete = _complete_pool_drivers(slices)
    for driver in (d.strip() for d in annotation.split(",")):
        if driver and driver not in complete:
            return driver
    return None


class Initialization:
    """The initialization step of ``nodeclaim.lifecycle``."""

    def __init__(self, ctx: ControllerContext, index: NodeIndex | None = None) -> None:
        self.ctx = ctx
        self.index = index

    def reconcile(self, nodeclaim: dict[str, Any], conds: ConditionSet) -> Result:
        if not conds.is_unknown(CONDITION_INITIALIZED):
            conds.refresh(CONDITION_INITIALIZED)
            return Result()
        if not conds.is_true(CONDITION_REGISTERED):
            return Result()
        try:
            node = node_for_nodeclaim(self.ctx.kube, nodeclaim, self.index)
        except (NodeNotFoundError, DuplicateNodeError):
            conds.set_unknown_with_reason(
                CONDITION_INITIALIZED, "NodeNotFound", "Node not registered with cluster"
            )
            return Result()
        if node_ready_status(node) != "True":
            conds.set_unknown_with_reason(
                CONDITION_INITIALIZED, "NodeNotReady", "Node status is NotReady"
            )
            return Result()
        taint = startup_taint_remaining(node, nodeclaim)
        if taint is not None:
            conds.set_unknown_with_reason(
                CONDITION_INITIALIZED, "StartupTaintsExist", f'StartupTaint "{taint}" still exists'
            )
            return Result()
        taint = known_ephemeral_taint(node)
        if taint is not None:
            conds.set_unknown_with_reason(
                CONDITION_INITIALIZED,
                "KnownEphemeralTaintsExist",
                f'KnownEphemeralTaint "{taint}" still exists',
            )
            return Result()
        missing = requested_resource_missing(node, nodeclaim)
        if missing is not None:
            conds.set_unknown_with_reason(
                CONDITION_INITIALIZED,
                "ResourceNotRegistered",
                f'Resource "{missing}" was requested but not registered',
            )
            return Result()
        driver = self._dra_driver_missing(node, nodeclaim)
        if driver is not None:
            conds.set_unknown_with_reason(
                CONDITION_INITIALIZED,
                "DRADriverPoolsNotPublished",
                f'DRA driver "{driver}" has not published a complete resource pool',
            )
            return Result()
        node_meta = node.get("metadata") or {}
        if (node_meta.get("labels") or {}).get(wk.NODE_INITIALIZED_LABEL_KEY) != "true":
            self.ctx.kube.patch(
                NODES,
                str(node_meta.get("name")),
                {"metadata": {"labels": {wk.NODE_INITIALIZED_LABEL_KEY: "true"}}},
            )
        log.info(
            "initialized nodeclaim %s allocatable=%s",
            (nodeclaim.get("metadata") or {}).get("name"),
            (node.get("status") or {}).get("allocatable"),
        )
        conds.set_true(CONDITION_INITIALIZED)
        return Result()

    def _dra_driver_missing(
        self, node: Mapping[str, Any], nodeclaim: Mapping[str, Any]
    ) -> str | None:
        if self.ctx.options.ignore_dra_requests:
            return None
        annotations = (nodeclaim.get("metadata") or {}).get("annotations") or {}
        if wk.REQUESTED_DRA_DRIVERS_ANNOTATION_KEY not in annotations:
            return None
        node_name = str((node.get("metadata") or {}).get("name") or "")
        slices = [s for s in self.ctx.kube.list(RESOURCE_SLICES) if _slice_belongs_to(s, node_name)]
        return dra_drivers_published(nodeclaim, slices)
