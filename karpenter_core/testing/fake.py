"""A cloud provider for tests: upstream's ``pkg/cloudprovider/fake``, in Python.

It serves a fixed catalogue (upstream's five fake instance types by default) and keeps
pretend instances in memory. ``create`` picks the cheapest instance type and offering the
NodeClaim allows, as upstream's fake does, and records the instance; given a ``kube``
client it also registers the instance's Node, as a real machine's kubelet would, so a
whole operator can take a pending pod to a running one without a cloud. Everything a test
may want to script is a plain attribute: the errors the next calls raise, the catalogue
per NodePool, the drift reason, the repair policies; every call is recorded.

Tests that build their NodeClaims and Nodes by hand can ignore the launch side: an
instance the fake never created is simply not found, so deleting its NodeClaim finishes
at once.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from karpenter_core.apis import labels as wk
from karpenter_core.apis import resources as res
from karpenter_core.apis.v1 import NodeClaim
from karpenter_core.cloudprovider.errors import (
    InsufficientCapacityError,
    NodeClaimNotFoundError,
)
from karpenter_core.cloudprovider.protocol import NodeClassKind, RepairPolicy
from karpenter_core.cloudprovider.types import InstanceType, Offering
from karpenter_core.scheduling.requirements import IN, Requirements

if TYPE_CHECKING:
    from karpenter_core.kube.client import KubeClient

__all__ = ["KWOK_NODE_CLASS", "TEST_NODE_CLASS", "FakeCloudProvider"]

KWOK_NODE_CLASS = NodeClassKind(
    group="karpenter.kwok.sh",
    kind="KWOKNodeClass",
    version="v1alpha1",
    implicit=True,  # as the KWOK provider declares it (see NodeClassKind)
    default_status={"conditions": [{"type": "Ready", "status": "True", "reason": "Ready"}]},
)
"""The NodeClass kind the fake claims by default, so the KWOK examples' NodePools are its
(and a pool naming it needs no NodeClass object: the core treats a missing KWOKNodeClass
as a default, Ready one)."""

TEST_NODE_CLASS = NodeClassKind(group="karpenter.test.sh", kind="TestNodeClass", version="v1")
"""Upstream's ``TestNodeClass``, for tests that want a kind no installed plugin claims."""


class FakeCloudProvider:
    """Serves ``its`` and launches pretend instances (see the module docstring).

    Catalogue: ``its`` (the five-type fake catalogue when None); ``its_for`` overrides it
    per NodePool name; NodePools in ``fail_for`` cannot read theirs
    (``RuntimeError(fail_message)``); ``calls`` counts catalogue reads.

    Instances: ``instances`` maps provider id to the launched NodeClaim (``add_instance``
    makes one by hand). ``create_errors``, ``delete_errors`` and ``get_errors`` are
    raised, first to last, by the next calls; the calls that get past them are recorded in
    ``create_calls`` (NodeClaim names), ``delete_calls`` and ``get_calls`` (provider ids),
    as upstream's fake records them; ``create_then_raise``
    makes the next create launch *and* then raise (a call that timed out but went
    through); ``list_error`` is raised by every ``list`` while set; an instance survives
    ``delete_polls`` delete calls before it is gone (a machine shutting down);
    ``on_create`` sees each NodeClaim before anything else happens.
    """

    name = "fake"

    def __init__(
        self,
        instance_types: Sequence[InstanceType] | None = None,
        *,
        node_classes: Sequence[NodeClassKind] = (KWOK_NODE_CLASS,),
        repair_policies: Sequence[RepairPolicy] = (),
        fail_message: str = "catalogue unavailable",
        kube: KubeClient | None = None,
        provider_id_prefix: str = "fake://",
    ) -> None:
        if instance_types is None:
            from karpenter_core.testing import fakecatalog

            instance_types = fakecatalog.instance_types(5)
        self.its = list(instance_types)
        self.its_for: dict[str, list[InstanceType]] = {}
        self.node_classes = list(node_classes)
        self.policies = list(repair_policies)
        self.fail_for: set[str] = set()
        self.fail_message = fail_message
        self.drift_reason = ""
        self.calls = 0
        self.kube = kube
        """When set, ``create`` also registers the instance's Node here."""
        self.provider_id_prefix = provider_id_prefix
        self.instances: dict[str, NodeClaim] = {}
        self.create_calls: list[str] = []
        self.delete_calls: list[str] = []
        self.get_calls: list[str] = []
        self.create_errors: list[BaseException] = []
        self.delete_errors: list[BaseException] = []
        self.get_errors: list[BaseException] = []
        self.create_then_raise: BaseException | None = None
        self.list_error: BaseException | None = None
        self.delete_polls = 0
        self.on_create: Callable[[NodeClaim], None] | None = None
        self._polls: dict[str, int] = {}
        self._seq = 0

    # ------------------------------------------------------------------ catalogue

    def get_instance_types(self, nodepool: Any) -> list[InstanceType]:
        self.calls += 1
        name = getattr(nodepool, "name", None) if nodepool is not None else None
        if name is not None and name in self.fail_for:
            raise RuntimeError(self.fail_message)
        if name is not None and name in self.its_for:
            return list(self.its_for[name])
        return list(self.its)

    def supported_node_classes(self) -> list[NodeClassKind]:
        return list(self.node_classes)

    def is_drifted(self, nodeclaim: Any) -> str:
        return self.drift_reason

    def repair_policies(self) -> builtins.list[RepairPolicy]:
        return list(self.policies)

    # ------------------------------------------------------------------ instances

    def create(self, nodeclaim: NodeClaim | Mapping[str, Any]) -> NodeClaim:
        """Launch the cheapest instance type and offering ``nodeclaim`` allows (its
        requirements intersect the type's and an available offering's, its requests fit
        the type's allocatable); InsufficientCapacityError when none does."""
        nc = _as_nodeclaim(nodeclaim)
        if self.on_create is not None:
            self.on_create(nc)
        if self.create_errors:
            raise self.create_errors.pop(0)
        self.create_calls.append(nc.name or "")
        instance_type, offering = self._choose(nc)
        self._seq += 1
        launched = NodeClaim.from_dict(self.launched(nc, instance_type, offering))
        self.instances[launched.provider_id] = launched
        if self.kube is not None:
            self.kube.create(self.node_for(launched))
        if self.create_then_raise is not None:
            err, self.create_then_raise = self.create_then_raise, None
            raise err
        return launched

    def launched(
        self, nodeclaim: NodeClaim, instance_type: InstanceType, offering: Offering
    ) -> dict[str, Any]:
        """What the cloud reports for a launch (a NodeClaim manifest): the labels the
        instance type and offering pin, the NodeClaim's own labels over them, a provider
        id, capacity and allocatable. Override to report more (an image id, labels)."""
        labels: dict[str, str] = {wk.LABEL_INSTANCE_TYPE: instance_type.name}
        for reqs in (instance_type.requirements, offering.requirements):
            for req in reqs.values():
                if req.operator() == IN and len(req.values) == 1:
                    labels[req.key] = next(iter(req.values))
        labels.update(nodeclaim.metadata.labels)
        capacity = {k: v for k, v in instance_type.capacity.items() if v}
        allocatable = {k: v for k, v in instance_type.allocatable().items() if v}
        return {
            "apiVersion": "karpenter.sh/v1",
            "kind": "NodeClaim",
            "metadata": {
                "name": nodeclaim.name,
                "labels": labels,
                "annotations": dict(nodeclaim.metadata.annotations),
            },
            "spec": nodeclaim.spec.to_dict(),
            "status": {
                "providerID": f"{self.provider_id_prefix}/{nodeclaim.name}/{self._seq}",
                "capacity": res.format_resource_list(capacity),
                "allocatable": res.format_resource_list(allocatable),
            },
        }

    def node_for(self, launched: NodeClaim) -> dict[str, Any]:
        """The Node the instance's kubelet registers (upstream's ``NodeClaimLinkedNode``):
        named after the NodeClaim, with its labels, taints and startup taints, and the
        ``karpenter.sh/unregistered`` taint Karpenter lifts on registration."""
        name = launched.name or ""
        taints = [t.to_dict() for t in (*launched.spec.taints, *launched.spec.startup_taints)]
        taints.append({"key": wk.UNREGISTERED_TAINT_KEY, "effect": "NoExecute"})
        status = launched.status
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": name,
                "labels": {**launched.metadata.labels, wk.LABEL_HOSTNAME: name},
                "annotations": dict(launched.metadata.annotations),
            },
            "spec": {"providerID": launched.provider_id, "taints": taints},
            "status": {
                "capacity": dict(status.capacity) if status else {},
                "allocatable": dict(status.allocatable) if status else {},
                "phase": "Pending",
            },
        }

    def add_instance(self, provider_id: str, nodeclaim: Mapping[str, Any] | None = None) -> None:
        """Pretend an instance exists (for NodeClaims and Nodes a test made by hand)."""
        manifest = dict(nodeclaim or {"metadata": {"name": provider_id}})
        status = {**(manifest.get("status") or {}), "providerID": provider_id}
        self.instances[provider_id] = NodeClaim.from_dict({**manifest, "status": status})

    def delete(self, nodeclaim: NodeClaim | Mapping[str, Any]) -> None:
        """Terminate the instance; NodeClaimNotFoundError once it is gone (or never was)."""
        pid = _as_nodeclaim(nodeclaim).provider_id
        if self.delete_errors:
            raise self.delete_errors.pop(0)
        self.delete_calls.append(pid)
        if pid not in self.instances:
            raise NodeClaimNotFoundError(f"instance {pid!r} not found")
        seen = self._polls.get(pid, 0)
        if seen < self.delete_polls:
            self._polls[pid] = seen + 1
            return
        del self.instances[pid]

    def get(self, provider_id: str) -> NodeClaim:
        if self.get_errors:
            raise self.get_errors.pop(0)
        self.get_calls.append(provider_id)
        try:
            return self.instances[provider_id]
        except KeyError:
            raise NodeClaimNotFoundError(f"instance {provider_id!r} not found") from None

    def list(self) -> builtins.list[NodeClaim]:
        if self.list_error is not None:
            raise self.list_error
        return builtins.list(self.instances.values())

    # ------------------------------------------------------------------ internals

    def _choose(self, nc: NodeClaim) -> tuple[InstanceType, Offering]:
        reqs = Requirements.from_node_selector_requirements(nc.spec.requirements)
        requests = res.parse_resource_list(
            nc.spec.resources.requests if nc.spec.resources is not None else None
        )
        nodepool = _Named(nc.nodepool_name) if nc.nodepool_name else None
        best: tuple[InstanceType, Offering] | None = None
        for it in self.get_instance_types(nodepool):
            if it.requirements.intersects(reqs) is not None:
                continue
            if not res.fits(requests, it.allocatable()):
                continue
            offering = it.offerings.available().compatible(reqs).cheapest()
            if offering is not None and (best is None or offering.price < best[1].price):
                best = (it, offering)
        if best is None:
            raise InsufficientCapacityError(
                f"no instance type of the fake catalogue has an available offering "
                f"compatible with nodeclaim {nc.name!r}"
            )
        return best


class _Named:
    """What ``get_instance_types`` reads of a NodePool: its name."""

    def __init__(self, name: str) -> None:
        self.name = name


def _as_nodeclaim(nodeclaim: NodeClaim | Mapping[str, Any]) -> NodeClaim:
    return nodeclaim if isinstance(nodeclaim, NodeClaim) else NodeClaim.from_dict(nodeclaim)
