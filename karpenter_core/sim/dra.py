"""kube-scheduler's DynamicResources plugin for the simulated kube-scheduler (issue 11).

A pod with ``spec.resourceClaims`` is schedulable on a node only if each of its claims is
either allocated already and reachable from the node (its ``status.allocation.nodeSelector``
matches), or can be allocated now from the devices the node reaches (ResourceSlices that are
``allNodes``, name the node, or select it) that no other claim holds. Binding the pod then
writes each claim: the new allocation (with kube-scheduler's ``delete-protection``
finalizer) and the pod in ``reservedFor``.

The plugin's three steps, as kube-scheduler runs them (``pkg/scheduler/framework/plugins/
dynamicresources`` of Kubernetes 1.34), are the methods of :class:`DynamicResources`, one
object per scheduling pass:

* :meth:`~DynamicResources.prefilter` resolves the pod's claims; a claim not created yet,
  missing, being deleted or not owned by the pod, and a request naming a DeviceClass that
  does not exist, make the pod unschedulable on every node with kube-scheduler's message;
* :meth:`~DynamicResources.filter` tests one node: ``resourceclaim not available on the
  node`` for an allocated claim whose node selector does not match it, ``cannot allocate all
  claims`` when the unallocated ones cannot all be satisfied there;
* :meth:`~DynamicResources.reserve` (after the node is chosen) takes the devices for the
  rest of the pass and returns the claim writes (:class:`ClaimWrite`), which
  :func:`write_claims` applies before the pod is bound.

Devices are allocated by :mod:`karpenter_core.scheduling.dynamicresources` (Karpenter's port
of the structured allocator) over in-cluster devices only: the same search, constraints and
selectors Karpenter's own scheduler simulates, so the features it does not simulate are
not allocated here either (the pod stays unschedulable: ``cannot allocate all claims``).
Pure but for :func:`write_claims`: objects in, decisions out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from attrs import frozen

from karpenter_core.apis.accessors import labels_of, meta_of
from karpenter_core.apis.resource import (
    CLAIM_NAMED,
    CLAIM_NOT_CREATED,
    CLAIM_NOT_NEEDED,
    APIError,
    DeviceClass,
    ResourceClaim,
    ResourceSlice,
    pod_claim_names,
)
from karpenter_core.kube.client import KubeClient, deep_copy
from karpenter_core.scheduling.dynamicresources import (
    AllocationError,
    AllocationResult,
    Allocator,
    DeviceID,
    ResourceSliceTemplate,
    allocated_devices,
)
from karpenter_core.scheduling.nodeselector import node_selector_matches
from karpenter_core.scheduling.requirements import Requirements

__all__ = [
    "CLAIM_FINALIZER",
    "REASON_CANNOT_ALLOCATE",
    "REASON_NOT_AVAILABLE",
    "ClaimWrite",
    "DynamicResources",
    "PodClaims",
    "write_claims",
]

REASON_CANNOT_ALLOCATE = "cannot allocate all claims"
"""A node's Filter failure: the pod's unallocated claims cannot all be allocated there."""
REASON_NOT_AVAILABLE = "resourceclaim not available on the node"
"""A node's Filter failure: an allocated claim's node selector does not match the node."""
CLAIM_FINALIZER = "resource.kubernetes.io/delete-protection"
"""kube-scheduler's finalizer on a claim it allocates (the resource-claim controller
deallocates the claim before it goes)."""


@frozen
class PodClaims:
    """A pod's claims as PreFilter resolved them: those allocated already and those to
    allocate, in the order of ``spec.resourceClaims``."""

    namespace: str
    pod_name: str
    pod_uid: str
    allocated: tuple[ResourceClaim, ...] = ()
    pending: tuple[ResourceClaim, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.allocated and not self.pending

    @property
    def key(self) -> tuple[str, str]:
        return (self.namespace, self.pod_name)


@frozen
class ClaimWrite:
    """What binding a pod writes to one of its claims: ``allocation`` (None when the claim
    was allocated before; then only the reservation is added) and the pod as a consumer."""

    namespace: str
    name: str
    allocation: Mapping[str, Any] | None
    consumer: Mapping[str, str]

    def apply(self, claim: Mapping[str, Any]) -> dict[str, Any]:
        """The claim with this write applied (finalizer, allocation, reservedFor)."""
        out: dict[str, Any] = deep_copy(claim)
        status = out.setdefault("status", {})
        if self.allocation is not None:
            finalizers = out["metadata"].setdefault("finalizers", [])
            if CLAIM_FINALIZER not in finalizers:
                finalizers.append(CLAIM_FINALIZER)
            status["allocation"] = deep_copy(self.allocation)
        reserved = list(status.get("reservedFor") or [])
        if not any(r.get("uid") == self.consumer["uid"] for r in reserved):
            reserved.append(dict(self.consumer))
        status["reservedFor"] = reserved
        return out


def _parse(model: Any, objs: Iterable[Mapping[str, Any]]) -> list[Any]:
    out = []
    for obj in objs:
        try:
            out.append(model.from_dict(obj))
        except APIError:
            continue  # kube-apiserver would not have stored it; nothing can use it
    return out


class DynamicResources:
    """The DynamicResources plugin over one pass's snapshot of slices, claims and classes.

    Devices a pod took earlier in the pass (:meth:`reserve`) are taken for later pods, and
    the claims it allocated read as allocated to them (a claim shared by two pods is
    allocated once, on the first pod's node)."""

    def __init__(
        self,
        slices: Iterable[Mapping[str, Any]] = (),
        claims: Iterable[Mapping[str, Any]] = (),
        device_classes: Iterable[Mapping[str, Any]] = (),
    ) -> None:
        self.slices: list[ResourceSlice] = _parse(ResourceSlice, slices)
        parsed: list[ResourceClaim] = _parse(ResourceClaim, claims)
        self.claims: dict[tuple[str, str], ResourceClaim] = {c.key: c for c in parsed}
        self.device_classes: dict[str, DeviceClass] = {
            c.name: c for c in _parse(DeviceClass, device_classes)
        }
        # claims being deleted are allocated until the resource-claim controller deallocates
        self.allocator = Allocator(
            self.slices, allocated_devices(parsed), device_classes=self.device_classes
        )
        self._slice_of: dict[tuple[str, str, str], ResourceSlice] = {}
        for s in self.slices:
            for d in s.spec.devices:
                key = (s.spec.driver, s.spec.pool.name, d.name)
                seen = self._slice_of.get(key)
                if seen is None or s.spec.pool.generation > seen.spec.pool.generation:
                    self._slice_of[key] = s
        self._results: dict[tuple[tuple[str, str], str], AllocationResult] = {}

    @property
    def active(self) -> bool:
        """Anything to do at all (a cluster without DRA objects costs nothing)."""
        return bool(self.claims or self.slices)

    # ------------------------------------------------------------------ PreFilter

    def prefilter(self, pod: Mapping[str, Any]) -> PodClaims | str:
        """The pod's claims, or why it cannot be scheduled on any node now."""
        meta = meta_of(pod)
        ns = str(meta.get("namespace") or "default")
        name = str(meta.get("name") or "")
        uid = str(meta.get("uid") or "")
        try:
            entries = pod_claim_names(pod)
        except APIError as e:
            return str(e)
        allocated: list[ResourceClaim] = []
        pending: list[ResourceClaim] = []
        for entry in entries:
            if entry.state == CLAIM_NOT_NEEDED:
                continue
            if entry.state == CLAIM_NOT_CREATED or entry.claim_name is None:
                return f'pod "{ns}/{name}": ResourceClaim not created yet'
            claim = self.claims.get((ns, entry.claim_name))
            if claim is None:
                return f'resourceclaim.resource.k8s.io "{entry.claim_name}" not found'
            if claim.metadata.deletion_timestamp:
                return f'resourceclaim "{claim.name}" is being deleted'
            if entry.state != CLAIM_NAMED and not _controlled_by(claim, uid):
                return (
                    f"ResourceClaim {ns}/{claim.name} was not created for pod {ns}/{name} "
                    "(pod is not owner)"
                )
            (allocated if claim.allocation is not None else pending).append(claim)
        for claim in pending:
            missing = self._missing_class(claim)
            if missing:
                return missing
        return PodClaims(ns, name, uid, tuple(allocated), tuple(pending))

    def _missing_class(self, claim: ResourceClaim) -> str:
        for request in claim.spec.devices.requests:
            alternatives: Sequence[tuple[str, str]]
            if request.exactly is not None:
                alternatives = [(request.name, request.exactly.device_class_name)]
            else:
                alternatives = [
                    (f"{request.name}/{sub.name}", sub.device_class_name)
                    for sub in request.first_available
                ]
            for request_name, class_name in alternatives:
                if class_name and class_name not in self.device_classes:
                    return f"request {request_name}: device class {class_name} does not exist"
        return ""

    # ------------------------------------------------------------------ Filter

    def filter(self, claims: PodClaims, node: Mapping[str, Any]) -> str:
        """Why ``node`` cannot take the pod's claims ("" when it can)."""
        node_name = str(meta_of(node).get("name") or "")
        labels = labels_of(node)
        for claim in claims.allocated:
            selector = claim.allocation.node_selector if claim.allocation else None
            if selector is not None and not node_selector_matches(
                selector.to_dict(), labels, node_name
            ):
                return REASON_NOT_AVAILABLE
        if not claims.pending:
            return ""
        view = _NodeView(node_name, Requirements.from_labels(labels))
        result = self.allocator.allocate(view, claims.pending)
        if isinstance(result, AllocationError) or result.allocation is None:
            return REASON_CANNOT_ALLOCATE
        self._results[(claims.key, node_name)] = result
        return ""

    # ------------------------------------------------------------------ Reserve

    def reserve(self, claims: PodClaims, node: Mapping[str, Any]) -> list[ClaimWrite]:
        """The pod goes to ``node`` (which passed :meth:`filter` in this pass): take the
        devices for the rest of the pass and return the claims' writes."""
        node_name = str(meta_of(node).get("name") or "")
        consumer = {"resource": "pods", "name": claims.pod_name, "uid": claims.pod_uid}
        writes = [ClaimWrite(claims.namespace, c.name, None, consumer) for c in claims.allocated]
        if claims.pending:
            result = self._results.pop((claims.key, node_name), None)
            if result is None or result.allocation is None:
                raise ValueError(
                    f"pod {claims.namespace}/{claims.pod_name}: not filtered on {node_name}"
                )
            result.allocation.commit()
            for claim in claims.pending:
                meta = result.allocation.claims[claim.key]
                chosen = meta.devices.get(node_name, [])
                allocation = self._allocation([(d.device, str(d.request)) for d in chosen])
                writes.append(ClaimWrite(claims.namespace, claim.name, allocation, consumer))
        for w in writes:
            current = self.claims.get((w.namespace, w.name))
            if current is not None:
                self.claims[(w.namespace, w.name)] = ResourceClaim.from_dict(
                    w.apply(current.to_dict())
                )
        for key in [k for k in self._results if k[0] == claims.key]:
            del self._results[key]
        return writes

    def _allocation(self, devices: Sequence[tuple[DeviceID, str]]) -> dict[str, Any]:
        """``status.allocation`` for the chosen devices, with the node selector the
        structured allocator derives from their slices (a node-local device pins the claim
        to its node; selectors of node-selecting slices are merged; allNodes adds none)."""
        results = []
        node_name = ""
        fields: list[dict[str, Any]] = []
        expressions: list[dict[str, Any]] = []
        for device, request in devices:
            results.append(
                {
                    "request": request,
                    "driver": device.driver,
                    "pool": device.pool,
                    "device": device.device,
                }
            )
            s = self._slice_of.get((device.driver, device.pool, device.device))
            if s is None or node_name:
                continue
            if s.spec.node_name:
                node_name = s.spec.node_name
            elif s.spec.node_selector is not None and s.spec.node_selector.node_selector_terms:
                first = s.spec.node_selector.node_selector_terms[0].to_dict()
                for target, entries in (
                    (fields, first.get("matchFields") or []),
                    (expressions, first.get("matchExpressions") or []),
                ):
                    target.extend(e for e in entries if e not in target)
        allocation: dict[str, Any] = {"devices": {"results": results}}
        if node_name:
            allocation["nodeSelector"] = {
                "nodeSelectorTerms": [
                    {
                        "matchFields": [
                            {"key": "metadata.name", "operator": "In", "values": [node_name]}
                        ]
                    }
                ]
            }
        elif fields or expressions:
            term: dict[str, Any] = {}
            if expressions:
                term["matchExpressions"] = expressions
            if fields:
                term["matchFields"] = fields
            allocation["nodeSelector"] = {"nodeSelectorTerms": [term]}
        return allocation


@frozen
class _NodeView:
    """A node as the allocator sees an existing NodeClaim: its name, its labels as
    requirements, one "instance type" (the node itself) and no template devices."""

    node_name: str
    requirements: Requirements

    @property
    def id(self) -> str:
        return self.node_name

    @property
    def nodepool(self) -> str:
        return ""

    @property
    def instance_types(self) -> Sequence[str]:
        return (self.node_name,)

    @property
    def resource_slices(self) -> Mapping[str, Sequence[ResourceSliceTemplate]]:
        return {}


def _controlled_by(claim: ResourceClaim, pod_uid: str) -> bool:
    """The claim's controller ownerReference is the pod (``resourceclaim.IsForPod``)."""
    return any(ref.uid == pod_uid and ref.controller for ref in claim.metadata.owner_references)


def write_claims(kube: KubeClient, writes: Sequence[ClaimWrite]) -> None:
    """Apply the writes of :meth:`DynamicResources.reserve` as kube-scheduler's PreBind
    does: the finalizer first (a plain update), then the status (allocation and
    reservation). Raises the client's error when a write fails (the pod is not bound)."""
    for w in writes:
        claim = kube.get("resourceclaims", w.name, w.namespace)
        updated = w.apply(claim)
        if updated["metadata"].get("finalizers") != claim["metadata"].get("finalizers"):
            claim = kube.update({**claim, "metadata": updated["metadata"]})
            updated["metadata"] = claim["metadata"]
        kube.update_status(updated)
