"""Replacements taken from a NodePool's template, and the node counts they hold.

Static drift replaces a drifted node of a static NodePool (``spec.replicas``) with a fresh
NodeClaim straight from the NodePool's template (:class:`TemplateReplacement`); static
provisioning launches the same. Each such replacement holds one node count reserved
against ``spec.limits.nodes`` from the moment it is decided until the provisioner has
attempted to create it (the provisioner gives the count back after the attempt, success or
failure — by then a created NodeClaim counts as active). Released any earlier,
``static.provisioning`` could reserve the same headroom in between and the pool would
overshoot its limit.

The disruption controller reserves the counts of the commands a method decided
(:func:`reserve_replacements`), and every path that drops a command before it reaches the
provisioner — the controller's and the orchestration queue's — gives them back with
:func:`release_reservations`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Protocol

from karpenter_core.apis.objects import Pod
from karpenter_core.apis.quantity import QuantityError
from karpenter_core.apis.resources import parse_resource_list
from karpenter_core.apis.v1 import NodePool
from karpenter_core.disruption.types import Command, PricedOption, Replacement
from karpenter_core.provisioning.scheduler.nodeclaimtemplate import NodeClaimTemplate
from karpenter_core.state.statenode import NODES_RESOURCE

__all__ = [
    "UNLIMITED",
    "NodeCountReservations",
    "TemplateReplacement",
    "node_limit",
    "release_reservations",
    "reserve_replacements",
]

UNLIMITED = 2**63 - 1


def node_limit(nodepool: NodePool) -> int:
    """``spec.limits.nodes`` (unlimited when unset or unreadable)."""
    limits = nodepool.spec.limits
    if not limits:
        return UNLIMITED
    try:
        parsed = parse_resource_list(limits)
    except QuantityError:
        return UNLIMITED
    value = parsed.get(NODES_RESOURCE)
    return UNLIMITED if value is None else value // 1000


class TemplateReplacement:
    """A replacement NodeClaim taken as is from a NodePool's template (what the queue
    launches for static drift): the template's labels, annotations (with the NodePool hash)
    and spec, owned by the NodePool.

    ``is_static_nodeclaim`` (the NodePool has ``spec.replicas``) tells the provisioner that
    the launch holds one reserved node count, to give back once it has been attempted;
    ``node_limit`` is the NodePool's node limit that count is reserved against.
    Raises :class:`~karpenter_core.provisioning.scheduler.nodeclaimtemplate.TemplateError`
    when the template cannot be read."""

    def __init__(self, nodepool: NodePool) -> None:
        self.template = NodeClaimTemplate(nodepool)
        self.nodepool_name = self.template.nodepool_name
        self.is_static_nodeclaim = nodepool.is_static
        self.node_limit = node_limit(nodepool)
        self.pods: list[Pod] = []
        self.requirements = self.template.requirements

    def instance_types_by_price(self) -> list[PricedOption]:
        return []

    def to_nodeclaim_dict(self) -> dict[str, Any]:
        spec = {k: v for k, v in self.template.spec.items() if k != "resources"}
        return {
            "apiVersion": "karpenter.sh/v1",
            "kind": "NodeClaim",
            "metadata": {
                "generateName": f"{self.nodepool_name}-",
                "labels": dict(sorted(self.template.labels.items())),
                "annotations": dict(sorted(self.template.annotations.items())),
                "ownerReferences": [
                    {
                        "apiVersion": "karpenter.sh/v1",
                        "kind": "NodePool",
                        "name": self.nodepool_name,
                        "uid": self.template.nodepool_uid,
                        "blockOwnerDeletion": True,
                    }
                ],
            },
            "spec": spec,
        }


class NodeCountReservations(Protocol):
    """Where node counts are reserved (cluster state's ``NodePoolState``)."""

    def reserve_node_count(self, nodepool: str, limit: int, wanted: int) -> int: ...

    def release_node_count(self, nodepool: str, count: int) -> None: ...


def _static(replacements: Iterable[Replacement]) -> list[TemplateReplacement]:
    return [r for r in replacements if isinstance(r, TemplateReplacement) and r.is_static_nodeclaim]


def reserve_replacements(
    state: NodeCountReservations, commands: Sequence[Command]
) -> list[Command]:
    """Reserve one node count per static replacement of ``commands`` (per NodePool, in
    name order, against its node limit) and return the commands whose counts were all
    granted, in order; the others are dropped (a limit reached keeps the first ones).
    Counts granted to a dropped command are given back at once."""
    wanted: dict[str, int] = {}
    limits: dict[str, int] = {}
    for cmd in commands:
        for r in _static(cmd.replacements):
            wanted[r.nodepool_name] = wanted.get(r.nodepool_name, 0) + 1
            limits[r.nodepool_name] = r.node_limit
    if not wanted:
        return list(commands)
    granted: dict[str, int] = {}
    try:
        for pool in sorted(wanted):
            granted[pool] = state.reserve_node_count(pool, limits[pool], wanted[pool])
    except BaseException:
        for pool, count in granted.items():
            state.release_node_count(pool, count)
        raise
    kept: list[Command] = []
    for cmd in commands:
        need: dict[str, int] = {}
        for r in _static(cmd.replacements):
            need[r.nodepool_name] = need.get(r.nodepool_name, 0) + 1
        if all(granted[pool] >= n for pool, n in need.items()):
            for pool, n in need.items():
                granted[pool] -= n
            kept.append(cmd)
    for pool, left in granted.items():
        if left:
            state.release_node_count(pool, left)
    return kept


def release_reservations(state: NodeCountReservations, replacements: Iterable[Replacement]) -> None:
    """Give back the node count each static replacement holds (one per replacement whose
    ``is_static_nodeclaim`` is set) — for a command that will not reach the provisioner.
    Replacements from a simulation hold nothing and are skipped."""
    for r in _static(replacements):
        state.release_node_count(r.nodepool_name, 1)
