"""The records a simulation's observer keeps: one small mutable record per pod, node and
NodeClaim (times in seconds since the run started), and the frozen values it appends,
decisions and samples. Kept apart from the observer so the report's renderings and the
decision folding can use them without the observer's imports."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from attrs import define, field, frozen

__all__ = ["Decision", "NodeClaimRecord", "NodeRecord", "PodRecord", "Sample"]


@define(slots=True)
class PodRecord:
    key: str
    owner: str
    created: float
    cpu: int = 0
    memory: int = 0
    bound: float | None = None
    node: str = ""
    finished: float | None = None
    deleting: float | None = None
    gone: float | None = None
    daemon: bool = False
    """A DaemonSet's pod: counts toward node utilisation, not toward the pod figures."""
    existing: bool = False
    """Bound before the run started (a snapshot's running pod): it waited for no node in
    this run, so it is left out of the pending times."""


@define(slots=True)
class NodeClaimRecord:
    name: str
    nodepool: str
    created: float
    launched: float | None = None
    provider_id: str = ""
    instance_type: str = ""
    zone: str = ""
    capacity_type: str = ""
    price: float | None = None
    node_name: str = ""
    registered: float | None = None
    initialized: float | None = None
    deleting: float | None = None
    gone: float | None = None
    reason: str = ""
    options: int = 0
    """How many instance types the NodeClaim's requirements allowed."""
    existing: bool = False
    """Launched before the run started (a snapshot's NodeClaim): not one of the run's
    launches; its cost counts from the start."""

    def to_json_dict(self, time_of: Callable[[float | None], str | None]) -> dict[str, Any]:
        return {
            "name": self.name,
            "nodePool": self.nodepool,
            "node": self.node_name or None,
            "instanceType": self.instance_type or None,
            "zone": self.zone or None,
            "capacityType": self.capacity_type or None,
            "pricePerHour": self.price,
            "created": time_of(self.created),
            "launched": time_of(self.launched),
            "registered": time_of(self.registered),
            "initialized": time_of(self.initialized),
            "removed": time_of(self.deleting),
            "gone": time_of(self.gone),
            "removalReason": self.reason or None,
            "existing": self.existing,
        }


@define(slots=True)
class NodeRecord:
    name: str
    nodepool: str
    created: float
    cpu: int = 0
    memory: int = 0
    ready: bool = False
    deleting: float | None = None
    gone: float | None = None
    capacity_type: str = ""


@frozen
class Decision:
    """Something Karpenter (or the scenario) did, at ``t`` seconds into the run, as the
    observer saw it: a NodeClaim created, launched or deleted, a disruption command
    started, a scenario step. The report folds these into one row per decision
    (:mod:`karpenter_core.sim.decisions`)."""

    t: float
    action: str
    reason: str
    details: Mapping[str, Any] = field(factory=dict)
    source: str = "karpenter"


@frozen
class Sample:
    t: float
    nodes: int
    pending_pods: int
    bound_pods: int
    cost_per_hour: float
    cpu_utilization: float
    memory_utilization: float
    nodes_by_capacity_type: tuple[tuple[str, int], ...] = ()
    """(capacity type, nodes) for the types with nodes; a node without the label counts
    under ``""``."""
    cost_by_capacity_type: tuple[tuple[str, float], ...] = ()
    """(capacity type, $/h) of the running instances, by their NodeClaims' type."""
