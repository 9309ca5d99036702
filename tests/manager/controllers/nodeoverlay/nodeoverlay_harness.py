"""Helpers for the NodeOverlay tests (imported by name: pytest puts this directory on
sys.path): overlay manifests, a small hand-made catalogue, and an operator on an in-memory
API server and a virtual clock with the NodeOverlay controller registered."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from functools import partial
from typing import Any

from karpenter_core import metrics
from karpenter_core.apis import labels
from karpenter_core.apis.v1alpha1 import NodeOverlay
from karpenter_core.cloudprovider.protocol import NodeClassKind
from karpenter_core.cloudprovider.types import InstanceType
from karpenter_core.controllers import nodeoverlay
from karpenter_core.controllers.nodeoverlay.store import NodePoolInstanceTypes, Overlay
from karpenter_core.controllers.state import informers
from karpenter_core.kube.client import create_with_status
from karpenter_core.runtime.clock import VirtualClock
from karpenter_core.runtime.context import ControllerContext
from karpenter_core.runtime.events import EventRecorder
from karpenter_core.runtime.manager import Manager
from karpenter_core.runtime.options import Options
from karpenter_core.sim.apiserver import InMemoryApiServer
from karpenter_core.testing import builders as b
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


overlay_manifest = b.nodeoverlay


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
    return b.nodepool(name, labels=template_labels)


def ready(np: dict[str, Any]) -> dict[str, Any]:
    """``np`` with a Ready status (no NodePool controllers needed)."""
    return {**np, "status": b.nodepool(ready=True)["status"]}


pod = partial(b.unschedulable_pod, cpu="1")


class Env:
    """One operator on a virtual clock: state informers, optionally provisioning, and the
    NodeOverlay package (when ``with_nodeoverlay``).

    Wired by hand rather than through the kit's Environment (the operator's registry): with
    the NodeOverlay gate on, the registry puts the overlay step on the provider before any
    controller is registered, and the wiring tests here install that step themselves to
    check what it does to the context's provider."""

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
        self.manager = Manager(self.clock, self.kube)
        informers.register(self.manager, self.ctx)
        if with_provisioning:
            from karpenter_core.controllers import provisioning

            provisioning.register(self.manager, self.ctx)
        if with_nodeoverlay:
            nodeoverlay.register(self.manager, self.ctx)

    @property
    def store(self) -> nodeoverlay.InstanceTypeStore:
        store = self.ctx.overlay_store
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
