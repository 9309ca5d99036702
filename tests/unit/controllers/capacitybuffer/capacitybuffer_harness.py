"""A small operator for CapacityBuffer tests: in-memory API server, virtual clock, state
informers, the provisioning controllers and (gate on) the capacitybuffer controller, with
the fake provider serving the fake catalogue."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from karpenter_core import metrics
from karpenter_core.cloudprovider.fake import FakeCloudProvider
from karpenter_core.controllers import capacitybuffer, provisioning
from karpenter_core.kube.client import create_with_status
from karpenter_core.runtime.clock import VirtualClock
from karpenter_core.runtime.context import ControllerContext
from karpenter_core.runtime.events import EventRecorder
from karpenter_core.runtime.manager import Manager
from karpenter_core.runtime.options import Options
from karpenter_core.sim.apiserver import InMemoryApiServer
from karpenter_core.state import informers

START = datetime(2026, 1, 1, tzinfo=UTC)
CPU_REQUEST = {"cpu": "1"}


def container(requests: Mapping[str, str] | None = None) -> dict[str, Any]:
    return {
        "name": "c",
        "image": "i",
        "resources": {"requests": dict(requests if requests is not None else CPU_REQUEST)},
    }


def pod_template_spec(
    requests: Mapping[str, str] | None = None, labels: Mapping[str, str] | None = None
) -> dict[str, Any]:
    return {
        "metadata": {"labels": dict(labels or {"app": "web"})},
        "spec": {"containers": [container(requests)]},
    }


def podtemplate(name: str = "tmpl", **kw: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PodTemplate",
        "metadata": {"name": name, "namespace": "default"},
        "template": pod_template_spec(**kw),
    }


def deployment(name: str = "web", replicas: int | None = 10, **kw: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "selector": {"matchLabels": {"app": "web"}},
        "template": pod_template_spec(**kw),
    }
    if replicas is not None:
        spec["replicas"] = replicas
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    }


def buffer(name: str = "buf", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "autoscaling.x-k8s.io/v1beta1",
        "kind": "CapacityBuffer",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    }


def pending_pod(name: str, cpu: str = "1") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": [container({"cpu": cpu})]},
        "status": {
            "phase": "Pending",
            "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}],
        },
    }


def gate(on: bool = True) -> Options:
    return Options.from_env({"FEATURE_GATES": f"CapacityBuffer={'true' if on else 'false'}"})


class Env:
    """One operator on a virtual clock; the capacitybuffer package is registered only when
    the gate is on (as the operator's registry does)."""

    def __init__(self, *, gate_on: bool = True, provider: FakeCloudProvider | None = None) -> None:
        metrics.reset()
        self.clock = VirtualClock(START)
        self.kube = InMemoryApiServer(self.clock)
        self.recorder = EventRecorder(self.clock)
        self.provider = provider or FakeCloudProvider()
        self.ctx = ControllerContext(
            kube=self.kube,
            clock=self.clock,
            cloud_provider=self.provider,  # type: ignore[arg-type]
            recorder=self.recorder,
            options=gate(gate_on),
        )
        self.ctx.extras["state.resync_seconds"] = None
        self.manager = Manager(self.clock, self.kube)
        informers.register(self.manager, self.ctx)
        provisioning.register(self.manager, self.ctx)
        if gate_on:
            capacitybuffer.register(self.manager, self.ctx)

    def create(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        """Create, then write ``status`` through the status subresource when given."""
        return create_with_status(self.kube, obj)

    def ready_nodepool(self, name: str = "default", **spec: Any) -> dict[str, Any]:
        return self.create(
            {
                "apiVersion": "karpenter.sh/v1",
                "kind": "NodePool",
                "metadata": {"name": name},
                "spec": {
                    "template": {
                        "spec": {
                            "nodeClassRef": {
                                "group": "karpenter.kwok.sh",
                                "kind": "KWOKNodeClass",
                                "name": "default",
                            },
                            "requirements": [],
                        }
                    },
                    **spec,
                },
                "status": {
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
                },
            }
        )

    def buffer(self, name: str = "buf") -> dict[str, Any]:
        return self.kube.get("capacitybuffers", name, "default")

    def condition(self, name: str, type_: str) -> dict[str, Any] | None:
        for c in (self.buffer(name).get("status") or {}).get("conditions") or ():
            if c.get("type") == type_:
                return dict(c)
        return None

    def nodeclaims(self) -> list[dict[str, Any]]:
        return list(self.kube.list("nodeclaims").items)

    def launch(self, nc: Mapping[str, Any], provider_id: str, cpu: str = "16") -> None:
        """Pretend the NodeClaim launched: a provider id and capacity make it existing
        capacity."""
        resources = {"cpu": cpu, "memory": "64Gi", "pods": "110"}
        self.kube.patch(
            "nodeclaims",
            nc["metadata"]["name"],
            {
                "status": {
                    "providerID": provider_id,
                    "capacity": resources,
                    "allocatable": resources,
                }
            },
            subresource="status",
        )

    def run_for(self, seconds: float) -> None:
        self.manager.run_for(seconds)
