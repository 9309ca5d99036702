"""The allocator's vocabulary: device identities, template slices, and the NodeClaim view.

Devices come from two places (``designs/dra-scheduling.md``, "Device Sources"): ResourceSlices
published in the cluster (:class:`~karpenter_core.apis.resource.ResourceSlice`), and the
slices a cloud provider says an instance type *would* publish once launched
(:class:`ResourceSliceTemplate`). A :class:`DeviceID` keeps them apart with ``template``:
an in-cluster device is one device everywhere, a template device exists once per NodeClaim
and instance type.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import NamedTuple, Protocol

from attrs import field, frozen

from karpenter_core.apis.resource import CounterSet, Device, NodeSelector
from karpenter_core.scheduling.requirements import Requirement, Requirements


class DeviceID(NamedTuple):
    """``driver/pool/device``; ``template`` marks a device that does not exist yet."""

    driver: str
    pool: str
    device: str
    template: bool = False

    def __str__(self) -> str:
        prefix = "virtual/" if self.template else ""
        return f"{prefix}{self.driver}/{self.pool}/{self.device}"

    @property
    def published(self) -> DeviceID:
        """The same device as the cluster will know it (``template`` cleared)."""
        return self._replace(template=False)


class PoolKey(NamedTuple):
    driver: str
    pool: str


class RequestName(NamedTuple):
    """A request of a claim: ``parent`` alone for ``exactly``, ``parent/sub`` for the
    ``firstAvailable`` alternative that was chosen."""

    parent: str
    sub: str = ""

    def __str__(self) -> str:
        return f"{self.parent}/{self.sub}" if self.sub else self.parent


def _str_tuple(items: Iterable[str]) -> tuple[str, ...]:
    return tuple(items)


def _device_tuple(items: Iterable[Device]) -> tuple[Device, ...]:
    return tuple(items)


def _counter_set_tuple(items: Iterable[CounterSet]) -> tuple[CounterSet, ...]:
    return tuple(items)


def _template_tuple(items: Iterable[ResourceSliceTemplate]) -> tuple[ResourceSliceTemplate, ...]:
    return tuple(items)


def _binding_tuple(items: Iterable[AttributeBinding]) -> tuple[AttributeBinding, ...]:
    return tuple(items)


def _device_id_tuple(items: Iterable[DeviceID]) -> tuple[DeviceID, ...]:
    return tuple(items)


@frozen
class ResourceSliceTemplate:
    """Devices a driver will publish on a node of an instance type (always node-local; a
    template reports generation 0 and a slice count of 1)."""

    driver: str
    pool: str
    devices: tuple[Device, ...] = field(default=(), converter=_device_tuple)
    shared_counters: tuple[CounterSet, ...] = field(default=(), converter=_counter_set_tuple)


@frozen
class AttributeBinding:
    """Devices of an instance type that will share ``attribute``'s value at run time (a PCIe
    root, say), though the value is unknown before launch. Needs two devices or more."""

    attribute: str
    devices: tuple[DeviceID, ...] = field(converter=_device_id_tuple)


@frozen
class DynamicResources:
    """What a cloud provider says about an instance type's DRA devices."""

    resource_slice_templates: tuple[ResourceSliceTemplate, ...] = field(
        default=(), converter=_template_tuple
    )
    attribute_bindings: tuple[AttributeBinding, ...] = field(default=(), converter=_binding_tuple)


class NodeClaimView(Protocol):
    """What the allocator reads of a NodeClaim: an existing node (one instance type, no
    templates once initialized), a node not yet initialized (its type's full template set),
    or an in-flight/new NodeClaim (templates for every candidate type)."""

    @property
    def id(self) -> str: ...

    @property
    def node_name(self) -> str:
        """The concrete node's name, "" while there is none (slices pinned by nodeName match
        only that node)."""
        ...

    @property
    def nodepool(self) -> str: ...

    @property
    def requirements(self) -> Requirements: ...

    @property
    def instance_types(self) -> Sequence[str]: ...

    @property
    def resource_slices(self) -> Mapping[str, Sequence[ResourceSliceTemplate]]: ...


@frozen
class NodeClaimDevices:
    """A plain :class:`NodeClaimView` (tests, and callers without a class of their own)."""

    id: str
    instance_types: tuple[str, ...] = field(default=(), converter=_str_tuple)
    resource_slices: Mapping[str, Sequence[ResourceSliceTemplate]] = field(factory=dict)
    requirements: Requirements = field(factory=Requirements)
    node_name: str = ""
    nodepool: str = ""


@frozen(eq=False)
class DeviceWithID:
    """A candidate device with its identity and, for a device of a slice with a node
    selector, the requirements that using it puts on the node (None: node-local or
    reachable from every node)."""

    device: Device
    id: DeviceID
    topology: Requirements | None = None


def node_selector_requirements(selector: NodeSelector | None) -> Requirements | None:
    """The requirements of a node selector's terms, intersected (upstream's reading, which
    treats the ORed terms of a slice or an allocation as one requirement set)."""
    if selector is None:
        return None
    reqs = Requirements()
    for term in selector.node_selector_terms:
        reqs.add(*term_requirements(term.match_expressions))
    return reqs


def term_requirements(expressions: Sequence[object]) -> tuple[Requirement, ...]:
    """One node-selector term's expressions as requirements."""
    return tuple(Requirements.from_node_selector_requirements(expressions).values())


__all__ = [
    "AttributeBinding",
    "DeviceID",
    "DeviceWithID",
    "DynamicResources",
    "NodeClaimDevices",
    "NodeClaimView",
    "PoolKey",
    "RequestName",
    "ResourceSliceTemplate",
    "node_selector_requirements",
    "term_requirements",
]
