"""Helpers for the NodeOverlay tests (imported by name: pytest puts this directory on
sys.path): overlay manifests, a small hand-made catalogue, and an operator on an in-memory
API server and a virtual clock with the NodeOverlay controller registered."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from karpenter_core import metrics
from karpenter_core.apis import labels
from karpenter_core.apis.v1alpha1 import NodeOverlay
from karpenter_core.cloudprovider.protocol import NodeClassKind
from karpenter_core.cloudprovider.types import InstanceType
from karpenter_core.controllers import nodeoverlay
from karpenter_core.controllers.nodeoverlay.store import NodePoolInstanceTypes, Overlay
from karpenter_core.kube.client import create_with_status
from karpenter_core.runtime.clock import VirtualClock
from karpenter_core.runtime.context import ControllerContext
from karpenter_core.runtime.events import EventRecorder
from karpenter_core.runtime.manager import Manager
from karpenter_core.runtime.options import Options
from karpenter_core.sim.apiserver import InMemoryApiServer
from karpenter_core.state import informers
from karpenter_core.testing import fakecatalog
from karpenter_core.testing.fake import FakeCloudProvider

KWOK_CLASS = NodeClassKind(group="karpenter.kwok.sh", kind="KWOKNodeClass", version="v1alpha1")
START = datetime(2026, 1, 1, tzinfo=UTC)
IT = labels.LABEL_INSTANCE_TYPE
ZONE = labels.LABEL_TOPOLOGY_ZONE
CAPACITY_TYPE = labels.CAPACITY_TYPE_LABEL_KEY
NODEPOOL = labels.NODEPOOL_LABEL_KEY


def catalog() -> list[InstanceType]:
    """Two fake types, each with five offerings (spot in zones 1-2, on-demand in 1-3) at
    the fake provider's price (0.1 per vCPU + 0.1 per GB)."""
    return [
        fakecatalog.instance_type("small", cpu=2, memory_gi=4),
        fakecatalog.instance_type("large", cpu=8, memory_gi=16),
    ]


def req(key: str, operator: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": operator, "values": list(values)}


def overlay_manifest(
    name: str,
    *,
    requirements: Sequence[Mapping[str, Any]] = (),
    weight: int | None = None,
    price: str | None = None,
    price_adjustment: str | None = None,
    capacity: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"requirements": [dict(r) for r in requirements]}
    if weight is not None:
        spec["weight"] = weight
    if price is not None:
        spec["price"] = price
    if price_adjustment is not None:
        spec["priceAdjustment"] = price_adjustment
    if capacity is not None:
        spec["capacity"] = dict(capacity)
    return {
        "apiVersion": "karpenter.sh/v1alpha1",
        "kind": "NodeOverlay",
        "metadata": {"name": name},
        "spec": spec,
    }


def overlay(name: str, **kw: Any) -> Overlay:
    """The store's view of :func:`overlay_manifest`."""
    return Overlay.from_model(NodeOverlay.from_dict(overlay_manifest(name, **kw)))


def pool(
    name: str = "default",
    its: Sequence[InstanceType] | None = None,
    labels_: Mapping[str, str] | None = None,
) -> NodePoolInstanceTypes:
    return NodePoolInstanceTypes(name, dict(labels_ or {}), its if its is not None else catalog())


def offering_prices(it: InstanceType) -> dict[tuple[str, str], float]:
    return {(o.zone, o.capacity_type): o.price for o in it.offerings}


def by_name(its: Sequence[InstanceType]) -> dict[str, InstanceType]:
    return {it.name: it for it in its}


class FakeProvider(FakeCloudProvider):
    """The fake provider on this suite's two-type catalogue."""

    def __init__(self, instance_types: Sequence[InstanceType] | None = None) -> None:
        super().__init__(
            instance_types if instance_types is not None else catalog(),
            fail_message="resolving node class: KWOKNodeClass not found",
        )


def nodepool_manifest(
    name: str = "default", template_labels: Mapping[str, str] | None = None
) -> dict[str, Any]:
    template: dict[str, Any] = {
        "spec": {
            "nodeClassRef": {
                "group": "karpenter.kwok.sh",
                "kind": "KWOKNodeClass",
                "name": "default",
            },
            "requirements": [],
        }
    }
    if template_labels:
        template["metadata"] = {"labels": dict(template_labels)}
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": name},
        "spec": {"template": template},
    }


def ready(np: dict[str, Any]) -> dict[str, Any]:
    """``np`` with a Ready status (no NodePool controllers needed)."""
    out = copy.deepcopy(np)
    out["status"] = {
        "conditions": [
            {
                "type": t,
                "status": "True",
                "reason": t,
                "message": "",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            }
            for t in ("ValidationSucceeded", "NodeClassReady", "Ready")
        ]
    }
    return out


def pod(name: str, cpu: str = "1") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": cpu}}}]
        },
        "status": {
            "phase": "Pending",
            "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}],
        },
    }


class Env:
    """One operator on a virtual clock: state informers, optionally provisioning, and the
    NodeOverlay package (when ``with_nodeoverlay``)."""

    def __init__(
        self,
        *,
        provider: FakeProvider | None = None,
        with_provisioning: bool = False,
        with_nodeoverlay: bool = True,
    ) -> None:
        metrics.reset()
        self.clock = VirtualClock(START)
        self.kube = InMemoryApiServer(self.clock)
        self.provider = provider or FakeProvider()
        self.ctx = ControllerContext(
            kube=self.kube,
            clock=self.clock,
            cloud_provider=self.provider,  # type: ignore[arg-type]
            recorder=EventRecorder(self.clock),
            options=Options.from_env({"FEATURE_GATES": "NodeOverlay=true"}),
        )
        self.ctx.extras["state.resync_seconds"] = None
        self.manager = Manager(self.clock, self.kube)
        informers.register(self.manager, self.ctx)
        if with_provisioning:
            from karpenter_core.controllers import provisioning

            provisioning.register(self.manager, self.ctx)
        if with_nodeoverlay:
            nodeoverlay.register(self.manager, self.ctx)

    @property
    def store(self) -> nodeoverlay.InstanceTypeStore:
        store = self.ctx.extras[nodeoverlay.STORE_KEY]
        assert isinstance(store, nodeoverlay.InstanceTypeStore)
        return store

    def create(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        """Create, then write ``status`` through the status subresource when given."""
        return create_with_status(self.kube, obj)

    def overlay_condition(self, name: str) -> dict[str, Any] | None:
        obj = self.kube.get("nodeoverlays", name)
        for c in (obj.get("status") or {}).get("conditions") or ():
            if c.get("type") == "ValidationSucceeded":
                return dict(c)
        return None

    def nodeclaims(self) -> list[dict[str, Any]]:
        return list(self.kube.list("nodeclaims").items)

    def settle(self) -> None:
        self.manager.settle()

    def run_for(self, seconds: float) -> None:
        self.manager.run_for(seconds)
