"""matchAttribute constraints and the attribute bindings that back them for template devices
(``designs/dra-scheduling.md``, "Attribute Bindings" and "Constraints").

A constraint is stateful so the search can backtrack: :meth:`MatchAttribute.add` pins the
value with the first device and checks later ones against it; :meth:`MatchAttribute.remove`
undoes exactly one successful add. A device that lacks the attribute (a value known only at
run time, like a PCIe root) can still satisfy it through the cloud provider's bindings for
the instance type; a constraint settled one way (concrete values or bindings) rejects
devices that would need the other.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping, Sequence

from attrs import define, field, frozen

from karpenter_core.apis.resource import Device, DeviceAttribute
from karpenter_core.scheduling.dynamicresources.devices import (
    AttributeBinding,
    DeviceID,
    RequestName,
)

# attribute -> nodepool -> instance type -> device -> devices bound to it (transitively)
_Graph = dict[str, dict[str, dict[str, dict[DeviceID, frozenset[DeviceID]]]]]


@frozen
class AttributeBindings:
    """Which devices share a run-time attribute, per ``(attribute, nodepool, instance type)``.

    Devices are keyed as published (``template`` cleared); bindings never cross the triple.
    """

    graph: _Graph = field(factory=dict)

    def _bound_set(
        self, nodepool: str, instance_type: str, attribute: str, device: DeviceID
    ) -> frozenset[DeviceID] | None:
        return (
            self.graph.get(attribute, {})
            .get(nodepool, {})
            .get(instance_type, {})
            .get(device.published)
        )

    def has_bindings(
        self, nodepool: str, instance_type: str, attribute: str, device: DeviceID
    ) -> bool:
        """The device takes part in some binding for the attribute on this instance type."""
        return self._bound_set(nodepool, instance_type, attribute, device) is not None

    def bound(
        self, nodepool: str, instance_type: str, attribute: str, a: DeviceID, b: DeviceID
    ) -> bool:
        """``a`` and ``b`` share the attribute (a device is bound to itself when it is bound
        to anything)."""
        bound = self._bound_set(nodepool, instance_type, attribute, a)
        if bound is None:
            return False
        if a.published == b.published:
            return len(bound) > 0
        return b.published in bound


def build_attribute_bindings(
    bindings_by_nodepool: Mapping[str, Mapping[str, Sequence[AttributeBinding]]],
) -> AttributeBindings:
    """Build the binding graph from ``{nodepool: {instance type: bindings}}``.

    Each binding of two devices or more links all its devices pairwise; the links are then
    closed transitively (breadth-first, over the declared links only) within each
    ``(attribute, nodepool, instance type)``. A device is not bound to itself.
    """
    direct: dict[str, dict[str, dict[str, dict[DeviceID, set[DeviceID]]]]] = {}
    for nodepool, by_type in bindings_by_nodepool.items():
        for instance_type, bindings in by_type.items():
            for b in bindings:
                devices = [d.published for d in b.devices]
                if len(devices) < 2:
                    continue
                graph = (
                    direct.setdefault(b.attribute, {})
                    .setdefault(nodepool, {})
                    .setdefault(instance_type, {})
                )
                for d in devices:
                    graph.setdefault(d, set()).update(o for o in devices if o != d)
    closed: _Graph = {}
    for attribute, direct_by_pool in direct.items():
        for pool_name, direct_by_type in direct_by_pool.items():
            for type_name, links in direct_by_type.items():
                out: dict[DeviceID, frozenset[DeviceID]] = {}
                for start in links:
                    seen = {start}
                    queue = deque([start])
                    while queue:
                        for nxt in links.get(queue.popleft(), ()):
                            if nxt not in seen:
                                seen.add(nxt)
                                queue.append(nxt)
                    seen.discard(start)
                    out[start] = frozenset(seen)
                closed.setdefault(attribute, {}).setdefault(pool_name, {})[type_name] = out
    return AttributeBindings(closed)


def lookup_attribute(device: Device, device_id: DeviceID, name: str) -> DeviceAttribute | None:
    """The attribute by qualified name; failing that, when the name's domain is the device's
    driver, by its bare name (drivers may publish their own attributes unqualified)."""
    attr = device.attributes.get(name)
    if attr is not None:
        return attr
    domain, sep, bare = name.partition("/")
    if sep and domain == device_id.driver:
        return device.attributes.get(bare)
    return None


def attribute_values_equal(a: DeviceAttribute | None, b: DeviceAttribute | None) -> bool:
    """Same type and same value (an int 1 never equals a bool true or a string "1")."""
    if a is None or b is None:
        return False
    return a.type_name == b.type_name and a.value == b.value


@frozen
class BindingContext:
    """Where binding lookups happen: the instance type being searched and its nodepool."""

    bindings: AttributeBindings
    nodepool: str
    instance_type: str


@define
class MatchAttribute:
    """All devices of the constrained requests (every request when ``requests`` is empty)
    share one value of ``attribute``."""

    attribute: str
    requests: frozenset[str] = frozenset()
    binding: BindingContext | None = None
    value: DeviceAttribute | None = None
    used_binding: bool = False
    devices: list[DeviceID] = field(factory=list)

    def applies_to(self, request: RequestName) -> bool:
        """Named by the parent request, or (for a chosen alternative) by ``parent/sub``."""
        if not self.requests or request.parent in self.requests:
            return True
        return bool(request.sub) and str(request) in self.requests

    def add(self, request: RequestName, device: Device, device_id: DeviceID) -> bool:
        """Take the device if it keeps the constraint; on False nothing changed."""
        if not self.applies_to(request):
            return True
        attr = lookup_attribute(device, device_id, self.attribute)
        if attr is not None:
            if self.used_binding:
                return False
            if not self.devices:
                self.value = attr
            elif not attribute_values_equal(self.value, attr):
                return False
            self.devices.append(device_id)
            return True
        if self.devices and not self.used_binding:
            return False
        ctx = self.binding
        if ctx is None or not ctx.bindings.has_bindings(
            ctx.nodepool, ctx.instance_type, self.attribute, device_id
        ):
            return False
        if self.devices and not ctx.bindings.bound(
            ctx.nodepool, ctx.instance_type, self.attribute, self.devices[0], device_id
        ):
            return False
        self.used_binding = True
        self.devices.append(device_id)
        return True

    def remove(self, request: RequestName, device: Device, device_id: DeviceID) -> None:
        """Undo the last successful :meth:`add` for this request."""
        if not self.applies_to(request):
            return
        if self.devices:
            self.devices.pop()
        if not self.devices:
            self.value = None
            self.used_binding = False

    def reset(self) -> None:
        self.value = None
        self.used_binding = False
        self.devices.clear()


def match_attribute_constraints(
    constraints: Iterable[tuple[str, Sequence[str]]],
) -> list[MatchAttribute]:
    """Constraints from ``(attribute, requests)`` pairs."""
    return [MatchAttribute(attr, frozenset(reqs)) for attr, reqs in constraints]


__all__ = [
    "AttributeBindings",
    "BindingContext",
    "MatchAttribute",
    "attribute_values_equal",
    "build_attribute_bindings",
    "lookup_attribute",
    "match_attribute_constraints",
]
