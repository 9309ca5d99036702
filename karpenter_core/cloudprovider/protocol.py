"""The contract between Karpenter's core and a cloud provider.

A provider is any object with these methods; it does not inherit from anything, so a
plugin can implement it without importing more than the value types. Methods are
synchronous: controllers call them from worker threads (or on the simulator's virtual
clock), which keeps providers free of an event loop they may not want.

Failures are raised as the classified errors of :mod:`karpenter_core.cloudprovider.errors`
so the core can react to them (delete the NodeClaim on insufficient capacity, finish a
deletion on NotFound, ...).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from attrs import field, frozen

if TYPE_CHECKING:
    from karpenter_core.apis.v1 import NodeClaim, NodePool
    from karpenter_core.cloudprovider.types import InstanceType

__all__ = [
    "Adoption",
    "AdoptsInstances",
    "CloudProvider",
    "DriftReason",
    "InjectsOfferingOutages",
    "NodeClassKind",
    "NodeLifecycleHook",
    "NodeLifecycleHookResult",
    "OfferingOutage",
    "RepairPolicy",
    "SimulatesNodes",
]

DriftReason = str
"""Why a NodeClaim no longer matches what its provider would launch; ``""`` = not drifted."""


@frozen
class RepairPolicy:
    """A Node condition that marks a node unhealthy once it has lasted ``toleration``.

    ``node.health`` replaces such a node (when the NodeRepair gate is on and the
    NodePool is not too unhealthy as a whole).
    """

    condition_type: str
    condition_status: str
    toleration: timedelta


@frozen
class NodeClassKind:
    """A NodeClass kind a provider manages, e.g. ``karpenter.kwok.sh`` / ``KWOKNodeClass``.

    The core uses it to decide which NodeClaims are its own (by group and kind), what to
    watch, and to build the ``<group>/<lowercase kind>`` NodeClass label key.

    Two optional behaviours a provider declares for its kind:

    - ``implicit``: the kind need not exist. While the cluster has *no* object of this
      kind, a NodePool naming one behaves as if a default, Ready NodeClass of that name
      existed (KWOK's rule, so a simulation needs no KWOKNodeClass); once any exists, the
      named one must exist (a missing one is ``NodeClassNotFound``).
    - ``default_status``: the ``status`` the kind's CRD defaults a missing one to (KWOK's
      CRD defaults it to Ready=True). A real API server applies CRD defaults to every
      stored object; the in-memory one knows no CRD schemas, so a NodeClass read without
      a status is given this one, as a cluster would have returned it.

    Neither takes part in equality or hashing: a kind is its group, kind and version.
    """

    group: str
    kind: str
    version: str = ""
    implicit: bool = field(default=False, eq=False)
    default_status: Mapping[str, Any] | None = field(default=None, eq=False)

    @property
    def api_version(self) -> str:
        """``group/version`` when the version is known, else just the group."""
        return f"{self.group}/{self.version}" if self.version else self.group

    @property
    def label_key(self) -> str:
        """The node label naming the NodeClass, ``<group>/<kind in lower case>``."""
        return f"{self.group}/{self.kind.lower()}"

    def __str__(self) -> str:
        return f"{self.kind}.{self.group}"


@runtime_checkable
class CloudProvider(Protocol):
    """What the core needs from a cloud: launch, find, delete, and describe capacity."""

    @property
    def name(self) -> str:
        """The provider's name (``kwok``, ``aws``...); the ``provider`` metric label."""
        ...

    def create(self, nodeclaim: NodeClaim) -> NodeClaim:
        """Launch an instance satisfying the NodeClaim's requirements and requests.

        Returns the NodeClaim as launched: resolved labels (instance type, zone, capacity
        type, arch/os, reservation id...) and status ``provider_id``, ``image_id``,
        ``capacity`` and ``allocatable``. Raises InsufficientCapacityError,
        NodeClassNotReadyError or CreateError for the failures the core reacts to.
        """
        ...

    def delete(self, nodeclaim: NodeClaim) -> None:
        """Trigger termination; raise NodeClaimNotFoundError once the instance is gone.

        The core calls again until it gets NodeClaimNotFoundError.
        """
        ...

    def get(self, provider_id: str) -> NodeClaim:
        """The NodeClaim for a live instance, or NodeClaimNotFoundError."""
        ...

    def list(self) -> Sequence[NodeClaim]:
        """Every live instance this provider manages, each with its provider id."""
        ...

    def get_instance_types(self, nodepool: NodePool | None) -> Sequence[InstanceType]:
        """All instance types for the NodePool, including ones with no available offering.

        Unavailable offerings are reported with ``available=False`` rather than dropped,
        because drift and consolidation need to know a type still exists.
        """
        ...

    def is_drifted(self, nodeclaim: NodeClaim) -> DriftReason:
        """A provider-specific drift reason, or ``""`` (called after the core's checks)."""
        ...

    def repair_policies(self) -> Sequence[RepairPolicy]:
        """Node conditions that make a node eligible for repair; empty disables repair."""
        ...

    def supported_node_classes(self) -> Sequence[NodeClassKind]:
        """The NodeClass kinds this provider manages; the first is the default."""
        ...


@frozen
class NodeLifecycleHookResult:
    """What a registration hook wants: nothing (done), a backoff requeue, or a delay."""

    requeue: bool = False
    requeue_after: timedelta | None = None

    @property
    def is_done(self) -> bool:
        """True when the hook lets registration finish."""
        return not self.requeue and self.requeue_after is None


@runtime_checkable
class NodeLifecycleHook(Protocol):
    """Gates NodeClaim registration: it completes only once every hook is done."""

    @property
    def name(self) -> str:
        """The hook's name, for logs and events."""
        ...

    def registered(self, nodeclaim: NodeClaim) -> NodeLifecycleHookResult:
        """Whether this hook's preconditions hold for the registered NodeClaim."""
        ...


# --------------------------------------------------------------------------- optional
# Capabilities a provider may have beyond the CloudProvider protocol. The core checks for
# them with ``isinstance`` (they are runtime-checkable) and never imports a plugin by name.


@frozen
class OfferingOutage:
    """Offerings that are out of capacity for a while (``karpenter simulate``'s
    ``OfferingOutage`` event): those matching every given field (None matches any), from
    ``start`` until ``end`` (None: for good), in seconds since the provider was built
    (a simulation's start)."""

    instance_type: str | None = None
    zone: str | None = None
    capacity_type: str | None = None
    start: float = 0.0
    end: float | None = None


@runtime_checkable
class InjectsOfferingOutages(Protocol):
    """A provider that can make offerings unavailable on demand (KWOK's failure
    injection), so simulations can play capacity outages; launches of a matching
    offering then fail with an insufficient-capacity error."""

    def add_offering_outage(self, outage: OfferingOutage) -> None: ...


@runtime_checkable
class SimulatesNodes(Protocol):
    """A provider whose nodes have no kubelet of their own (KWOK): in a simulation the
    simulated kubelet manages the Nodes carrying ``simulated_node_annotation``
    (key, value), as the KWOK controller does in a cluster."""

    @property
    def simulated_node_annotation(self) -> tuple[str, str]: ...


@frozen
class Adoption:
    """What a provider made of a cluster's existing Nodes and NodeClaims
    (:class:`AdoptsInstances`): the objects as the simulation should create them (provider
    ids and annotations rewritten so the provider's ``get``/``list``/``delete`` find them,
    everything else kept), and what it could not price or describe."""

    nodes: tuple[dict[str, Any], ...]
    nodeclaims: tuple[dict[str, Any], ...]
    unknown_instance_types: Mapping[str, int] = field(factory=dict)
    """Instance type (``""`` when a node has no label) -> how many adopted nodes have it,
    for types the provider's catalogue does not list: the nodes stay, as capacity with no
    price, and the simulation reports them."""


@runtime_checkable
class AdoptsInstances(Protocol):
    """A provider that can take over instances it did not launch (KWOK in a simulation
    starting from a snapshot of a cluster): after adoption a NodeClaim of the snapshot is
    one of the provider's instances, which disruption can delete and whose price counts."""

    def adopt_instances(
        self, nodes: Sequence[Mapping[str, Any]], nodeclaims: Sequence[Mapping[str, Any]]
    ) -> Adoption: ...
