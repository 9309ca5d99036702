"""A small operator for provisioning tests: in-memory API server, virtual clock, state
informers and the provisioning controllers, with a fake provider serving the fake catalogue."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from karpenter_core import metrics
from karpenter_core.cloudprovider.fake import FakeCloudProvider
from karpenter_core.cloudprovider.protocol import NodeClassKind
from karpenter_core.controllers import provisioning
from karpenter_core.kube.client import create_with_status
from karpenter_core.runtime.clock import VirtualClock
from karpenter_core.runtime.context import ControllerContext
from karpenter_core.runtime.events import EventRecorder
from karpenter_core.runtime.manager import Manager
from karpenter_core.runtime.options import Options
from karpenter_core.sim.apiserver import InMemoryApiServer
from karpenter_core.state import informers

KWOK_CLASS = NodeClassKind(group="karpenter.kwok.sh", kind="KWOKNodeClass", version="v1alpha1")
START = datetime(2026, 1, 1, tzinfo=UTC)


FakeProvider = FakeCloudProvider


def nodepool(name: str = "default", **spec: Any) -> dict[str, Any]:
    template_spec = {
        "nodeClassRef": {"group": "karpenter.kwok.sh", "kind": "KWOKNodeClass", "name": "default"},
        "requirements": spec.pop("requirements", []),
    }
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": name},
        "spec": {"template": {"spec": template_spec}, **spec},
    }


def pod(
    name: str,
    cpu: str = "1",
    *,
    unschedulable: bool = True,
    node_name: str | None = None,
    namespace: str = "default",
    **extra_spec: Any,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": cpu}}}],
        **extra_spec,
    }
    if node_name:
        spec["nodeName"] = node_name
    status: dict[str, Any] = {"phase": "Pending" if not node_name else "Running"}
    if unschedulable:
        status["conditions"] = [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}
        ]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
        "status": status,
    }


class Env:
    """One operator on a virtual clock."""

    def __init__(
        self,
        *,
        options: Options | None = None,
        provider: FakeProvider | None = None,
        extra: Sequence[Callable[[Manager, ControllerContext], None]] = (),
        with_provisioning: bool = True,
    ) -> None:
        metrics.reset()
        self.clock = VirtualClock(START)
        self.kube = InMemoryApiServer(self.clock)
        self.recorder = EventRecorder(self.clock)
        self.provider = provider or FakeProvider()
        self.ctx = ControllerContext(
            kube=self.kube,
            clock=self.clock,
            cloud_provider=self.provider,  # type: ignore[arg-type]
            recorder=self.recorder,
            options=options or Options(),
        )
        self.ctx.extras["state.resync_seconds"] = None
        self.manager = Manager(self.clock, self.kube)
        informers.register(self.manager, self.ctx)
        if with_provisioning:
            provisioning.register(self.manager, self.ctx)
        for reg in extra:
            reg(self.manager, self.ctx)

    # -- objects --

    def create(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        """Create, then write ``status`` through the status subresource when given."""
        return create_with_status(self.kube, obj)

    def ready_nodepool(self, name: str = "default", **spec: Any) -> dict[str, Any]:
        """A NodePool whose status already says Ready (no nodepool controllers needed)."""
        np = nodepool(name, **spec)
        np["status"] = {
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
        return self.create(np)

    def nodeclaims(self) -> list[dict[str, Any]]:
        return list(self.kube.list("nodeclaims").items)

    def events(self, reason: str) -> list[Any]:
        return [e for e in self.recorder.events if e.reason == reason]

    # -- time --

    def run_for(self, seconds: float) -> None:
        self.manager.run_for(seconds)

    def settle(self) -> None:
        self.manager.settle()
