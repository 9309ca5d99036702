"""Dynamic Resource Allocation in the solve (upstream ``scheduling/dra.go`` and
``provisioning/dra.go``; ``designs/dra-scheduling.md``, "Integration with Karpenter's
Scheduler"; docs/dra.md here).

With ``IGNORE_DRA_REQUESTS=false`` a solve builds one
:class:`~karpenter_core.scheduling.dynamicresources.Allocator` (:class:`DRASimulation`) from
what the cluster holds (:class:`DRAInputs`): the published ResourceSlices, minus those of
nodes the solve does not count as capacity (deleting nodes, disruption candidates) and of
nodes not initialized yet (their devices are their instance type's templates until then);
the devices allocated to claims, minus those whose every consumer is a deleting pod; the
DeviceClasses; and the cloud provider's attribute bindings. Each pod's ResourceClaims are
resolved once per solve (:meth:`DRASimulation.claims`).

The scheduler asks the allocator on each placement it considers, the way upstream does:

* an existing node (:meth:`DRASimulation.allocate_on_node`): its published devices once it
  is initialized, its instance type's template devices before; the node's requirements are
  fixed, so only the answer matters;
* an in-flight or new NodeClaim (:meth:`DRASimulation.allocate_on_nodeclaim`): every
  candidate instance type with its template devices; the requirements the devices bring
  (a zonal slice's zone) are merged into the NodeClaim's before topology and instance-type
  filtering, and only the instance types the allocation succeeded on are kept.

The allocation is committed when the pod is placed; instance types the NodeClaim loses
later release what they reserved. When the solve ends, each new NodeClaim is annotated
``karpenter.sh/requested-dra-drivers`` with the drivers of the devices allocated on it (the
initialization gate waits for their ResourceSlices).

Where this departs from upstream, on purpose: a pod whose claim comes from a
ResourceClaimTemplate and has not been created yet is simulated with the claim the
template would give (upstream skips it, scheduling the pod as if it asked for no devices);
an allocated claim pinned by ``matchFields`` to a node (kube-scheduler's allocations of
node-local devices) only fits that node; and the NodeClaim handed to the allocator carries
the pod's own requirements too, so devices it could never use are not picked.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from attrs import field, frozen

from karpenter_core.apis.base import ObjectMeta, OwnerReference
from karpenter_core.apis.labels import LABEL_INSTANCE_TYPE
from karpenter_core.apis.objects import Pod
from karpenter_core.apis.resource import (
    CLAIM_GENERATED,
    CLAIM_NAMED,
    CLAIM_NOT_CREATED,
    APIError,
    DeviceClass,
    ResourceClaim,
    ResourceClaimTemplate,
    ResourceSlice,
    claim_owned_by,
    pod_claim_names,
)
from karpenter_core.cloudprovider.dynamicresources import attribute_bindings_of, templates_of
from karpenter_core.cloudprovider.types import InstanceType
from karpenter_core.provisioning.scheduler.errors import PodError
from karpenter_core.scheduling.dynamicresources import (
    AllocationError,
    AllocationResult,
    Allocator,
    AttributeBinding,
    ResourceClaimAllocationMetadata,
    ResourceSliceTemplate,
    allocated_devices,
    build_attribute_bindings,
)
from karpenter_core.scheduling.requirements import Requirements
from karpenter_core.state.statenode import StateNode

__all__ = [
    "ClaimError",
    "DRAInputs",
    "DRASimulation",
    "in_cluster_slices",
    "node_owner_name",
]

NODE_KIND = "Node"
ClaimKey = tuple[str, str]


def _slices(items: Iterable[ResourceSlice]) -> tuple[ResourceSlice, ...]:
    return tuple(items)


def _uids(items: Iterable[str]) -> frozenset[str]:
    return frozenset(items)


@frozen
class DRAInputs:
    """The cluster's DRA objects a solve reads, parsed: DeviceClasses by name, claims and
    claim templates by ``(namespace, name)``, every ResourceSlice (the solve drops those it
    must not count), and the UIDs of the pods being moved off nodes that are going away
    (pods of deleting nodes, disruption candidates' pods): their claims' devices are free
    and their claims are allocated again."""

    device_classes: Mapping[str, DeviceClass] = field(factory=dict)
    resource_claims: Mapping[ClaimKey, ResourceClaim] = field(factory=dict)
    claim_templates: Mapping[ClaimKey, ResourceClaimTemplate] = field(factory=dict)
    resource_slices: tuple[ResourceSlice, ...] = field(default=(), converter=_slices)
    deleting_pod_uids: frozenset[str] = field(default=frozenset(), converter=_uids)

    @classmethod
    def of(
        cls,
        device_classes: Iterable[DeviceClass] = (),
        resource_claims: Iterable[ResourceClaim] = (),
        claim_templates: Iterable[ResourceClaimTemplate] = (),
        resource_slices: Iterable[ResourceSlice] = (),
        deleting_pod_uids: Iterable[str] = (),
    ) -> DRAInputs:
        """Index typed objects (a later object of the same name replaces an earlier one)."""
        return cls(
            {c.name: c for c in device_classes},
            {c.key: c for c in resource_claims},
            {(t.metadata.namespace or "", t.metadata.name or ""): t for t in claim_templates},
            resource_slices,
            deleting_pod_uids,
        )

    def with_deleting_pods(self, uids: Iterable[str]) -> DRAInputs:
        """These inputs with more pods counted as deleting (a disruption simulation adds the
        candidates' pods to those of deleting nodes)."""
        more = frozenset(uids)
        if more <= self.deleting_pod_uids:
            return self
        return DRAInputs(
            self.device_classes,
            self.resource_claims,
            self.claim_templates,
            self.resource_slices,
            self.deleting_pod_uids | more,
        )


class ClaimError(PodError):
    """A pod's ResourceClaims cannot be resolved (one does not exist yet, or is not the
    pod's): no placement can help, so the pod waits for the next pass, unrelaxed."""

    __slots__ = ()


def node_owner_name(s: ResourceSlice) -> str | None:
    """The Node that owns the slice (an ownerReference of kind Node), or None. Ownership,
    not ``spec.nodeName`` (which only says who can use the devices), decides whose slice
    it is."""
    for ref in s.metadata.owner_references:
        if ref.kind == NODE_KIND:
            return ref.name
    return None


def in_cluster_slices(
    slices: Iterable[ResourceSlice], state_nodes: Iterable[StateNode]
) -> list[ResourceSlice]:
    """The slices whose devices count as capacity for a solve over ``state_nodes``: a slice
    owned by a Node counts only if that node is one of them and initialized (a deleting or
    disrupted node is not capacity; an uninitialized node's devices are its templates);
    slices owned by no node (cluster-wide devices) always count."""
    counted: set[str] = set()
    for sn in state_nodes:
        if sn.node is not None and sn.initialized():
            counted.add(sn.node.name)
    out = []
    for s in slices:
        owner = node_owner_name(s)
        if owner is None or owner in counted:
            out.append(s)
    return out


@frozen
class _View:
    """What the allocator reads of a NodeClaim (see ``NodeClaimView``)."""

    id: str
    nodepool: str
    requirements: Requirements
    instance_types: Sequence[str]
    resource_slices: Mapping[str, Sequence[ResourceSliceTemplate]]
    node_name: str = ""


class DRASimulation:
    """The DRA side of one solve: the allocator, each pool's template devices by instance
    type, and each pod's resolved claims."""

    def __init__(
        self,
        inputs: DRAInputs,
        state_nodes: Sequence[StateNode],
        instance_types: Mapping[str, Sequence[InstanceType]],
    ) -> None:
        self.inputs = inputs
        self.templates: dict[str, dict[str, tuple[ResourceSliceTemplate, ...]]] = {}
        bindings: dict[str, dict[str, Sequence[AttributeBinding]]] = {}
        for pool, its in instance_types.items():
            by_name: dict[str, tuple[ResourceSliceTemplate, ...]] = {}
            for it in its:
                name = it.name
                templates = templates_of(it)
                if templates:
                    by_name[name] = templates
                declared = attribute_bindings_of(it)
                if declared:
                    bindings.setdefault(pool, {})[name] = declared
            self.templates[pool] = by_name
        self.allocator = Allocator(
            in_cluster_slices(inputs.resource_slices, state_nodes),
            allocated_devices(inputs.resource_claims.values(), inputs.deleting_pod_uids),
            build_attribute_bindings(bindings),
            inputs.device_classes,
            inputs.deleting_pod_uids,
        )
        self._claims: dict[str, tuple[ResourceClaim, ...] | ClaimError] = {}

    # -- claims --

    def claims(self, pod: Pod, ident: str) -> tuple[ResourceClaim, ...] | ClaimError:
        """The pod's ResourceClaims (resolved once per solve): named claims, claims the
        resourceclaim controller generated for it, and for a template whose claim is not
        created yet the claim it will be. A claim that does not exist, is being deleted or
        belongs to another pod is a :class:`ClaimError`."""
        hit = self._claims.get(ident)
        if hit is None:
            hit = self._claims[ident] = self._resolve(pod)
        return hit

    def _resolve(self, pod: Pod) -> tuple[ResourceClaim, ...] | ClaimError:
        namespace = pod.namespace or "default"
        pod_name = pod.name
        uid = pod.uid or ""
        try:
            entries = pod_claim_names(pod.raw)
        except APIError as e:
            return ClaimError("invalid pod resource claims", e)
        out: list[ResourceClaim] = []
        for entry in entries:
            if entry.state in (CLAIM_NAMED, CLAIM_GENERATED):
                name = entry.claim_name or ""
                claim = self.inputs.resource_claims.get((namespace, name))
                if claim is None:
                    return ClaimError(f'resourceclaim "{namespace}/{name}" not found')
                if claim.metadata.deletion_timestamp:
                    return ClaimError(f'resourceclaim "{namespace}/{name}" is being deleted')
                if entry.state == CLAIM_GENERATED and not claim_owned_by(claim, uid):
                    return ClaimError(
                        f'resourceclaim "{namespace}/{name}" was not created for pod '
                        f"{namespace}/{pod_name} (pod is not owner)"
                    )
                out.append(claim)
            elif entry.state == CLAIM_NOT_CREATED:
                template_name = entry.template_name or ""
                template = self.inputs.claim_templates.get((namespace, template_name))
                if template is None:
                    return ClaimError(
                        f'resourceclaimtemplate "{namespace}/{template_name}" not found'
                    )
                out.append(_from_template(template, namespace, pod_name, uid, entry.name))
        return tuple(out)

    # -- allocation --

    def allocate_on_nodeclaim(
        self,
        hostname: str,
        nodepool: str,
        requirements: Requirements,
        instance_types: Sequence[str],
        claims: Sequence[ResourceClaim],
    ) -> AllocationResult | AllocationError:
        """Allocate ``claims`` on an in-flight or new NodeClaim: each candidate instance type
        with its template devices."""
        by_name = self.templates.get(nodepool, {})
        slices = {it: t for it in instance_types if (t := by_name.get(it))}
        view = _View(hostname, nodepool, requirements, instance_types, slices)
        return self.allocator.allocate(view, claims)

    def allocate_on_node(
        self, sn: StateNode, requirements: Requirements, claims: Sequence[ResourceClaim]
    ) -> AllocationResult | AllocationError:
        """Allocate ``claims`` on an existing node (or a launched NodeClaim without one):
        its published devices once initialized, its instance type's templates before."""
        nodepool = sn.nodepool_name() or ""
        it = sn.labels().get(LABEL_INSTANCE_TYPE) or ""
        node_name = sn.node.name if sn.node is not None else ""
        slices: dict[str, tuple[ResourceSliceTemplate, ...]] = {}
        if not sn.initialized():
            templates = self.templates.get(nodepool, {}).get(it)
            if templates:
                slices[it] = templates
        ident = sn.provider_id() or sn.name()
        view = _View(ident, nodepool, requirements, (it,), slices, node_name)
        return self.allocator.allocate(view, claims)

    def release(self, hostname: str, instance_types: Iterable[str]) -> None:
        """The NodeClaim lost these instance types: free what they reserved."""
        self.allocator.release_instance_types(hostname, instance_types)

    def drivers(self, nodeclaim: str) -> list[str]:
        """The drivers of the devices allocated on ``nodeclaim``, sorted."""
        found: set[str] = set()
        for meta in self.allocator.claim_metadata.values():
            if meta.nodeclaim != nodeclaim:
                continue
            for devices in meta.devices.values():
                found.update(d.device.driver for d in devices)
        return sorted(found)

    def claim_allocations(self) -> dict[ClaimKey, ResourceClaimAllocationMetadata]:
        """What the solve allocated, per claim (upstream's ``DRAClaimAllocationMetadata``)."""
        return dict(self.allocator.claim_metadata)


def _from_template(
    template: ResourceClaimTemplate, namespace: str, pod_name: str, pod_uid: str, entry: str
) -> ResourceClaim:
    """The claim the resourceclaim controller will create for the pod's ``entry``. Its name
    says where it comes from and can never be a real claim's (so it cannot be mistaken for
    one another pod shares)."""
    spec = template.spec
    meta = spec.metadata or ObjectMeta()
    return ResourceClaim(
        metadata=ObjectMeta(
            name=f"{pod_name}-{entry} (from template {template.metadata.name})",
            namespace=namespace,
            labels=dict(meta.labels),
            annotations=dict(meta.annotations),
            owner_references=(
                OwnerReference(kind="Pod", name=pod_name, uid=pod_uid, controller=True),
            ),
        ),
        spec=spec.spec,
    )
