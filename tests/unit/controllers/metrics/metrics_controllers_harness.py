"""An operator with only state informers and the metrics controllers, on an in-memory API
server and a virtual clock; ``scrape()`` reads the real Prometheus exposition."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from karpenter_core import metrics
from karpenter_core.cloudprovider.protocol import NodeClassKind
from karpenter_core.controllers import metrics as metrics_controllers
from karpenter_core.kube.client import create_with_status
from karpenter_core.runtime.clock import VirtualClock
from karpenter_core.runtime.context import ControllerContext
from karpenter_core.runtime.events import EventRecorder
from karpenter_core.runtime.manager import Manager
from karpenter_core.runtime.options import Options
from karpenter_core.sim.apiserver import InMemoryApiServer
from karpenter_core.state import informers

START = datetime(2026, 1, 1, tzinfo=UTC)
KWOK_CLASS = NodeClassKind(group="karpenter.kwok.sh", kind="KWOKNodeClass", version="v1alpha1")
NODECLASS_REF = {"group": "karpenter.kwok.sh", "kind": "KWOKNodeClass", "name": "default"}


class Provider:
    name = "fake"

    def supported_node_classes(self) -> list[NodeClassKind]:
        return [KWOK_CLASS]


def stamp(seconds: float) -> str:
    return (START + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


Sample = tuple[dict[str, str], float]


class Env:
    def __init__(self, options: Options | None = None) -> None:
        metrics.reset()
        self.clock = VirtualClock(START)
        self.kube = InMemoryApiServer(self.clock)
        self.ctx = ControllerContext(
            kube=self.kube,
            clock=self.clock,
            cloud_provider=Provider(),  # type: ignore[arg-type]
            recorder=EventRecorder(self.clock),
            options=options or Options(),
        )
        self.ctx.extras["state.resync_seconds"] = None
        self.manager = Manager(self.clock, self.kube)
        informers.register(self.manager, self.ctx)
        metrics_controllers.register(self.manager, self.ctx)

    def create(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        return create_with_status(self.kube, obj)

    def set_status(self, obj: Mapping[str, Any], status: Mapping[str, Any]) -> dict[str, Any]:
        meta = obj["metadata"]
        return self.kube.patch(
            obj["kind"], meta["name"], {"status": status}, meta.get("namespace"),
            subresource="status",
        )  # fmt: skip

    def bind(self, pod: Mapping[str, Any], node_name: str, status: Mapping[str, Any]) -> None:
        """Bind ``pod`` to ``node_name`` (binding subresource), then write ``status``."""
        meta = pod["metadata"]
        self.kube.bind(meta["name"], meta.get("namespace") or "default", node_name)
        self.set_status(pod, status)

    def run_for(self, seconds: float) -> None:
        self.manager.run_for(seconds)

    def scrape(self, name: str) -> list[Sample]:
        """Samples named ``name`` in what ``/metrics`` would serve now."""
        text = metrics.exposition().decode()
        return [
            (dict(s.labels), float(s.value))
            for family in text_string_to_metric_families(text)
            for s in family.samples
            if s.name == name
        ]

    def value(self, metric: str, /, **labels: str) -> float | None:
        """The one sample of ``metric`` whose labels include ``labels`` (None: no such)."""
        found = [v for lbls, v in self.scrape(metric) if labels.items() <= lbls.items()]
        assert len(found) <= 1, found
        return found[0] if found else None


def pod(
    name: str,
    *,
    cpu: str = "1",
    node: str | None = None,
    phase: str = "Pending",
    conditions: list[dict[str, Any]] | None = None,
    owner: dict[str, Any] | None = None,
    limits_cpu: str | None = None,
) -> dict[str, Any]:
    resources: dict[str, Any] = {"requests": {"cpu": cpu}}
    if limits_cpu:
        resources["limits"] = {"cpu": limits_cpu}
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "i", "resources": resources}]}
    if node:
        spec["nodeName"] = node
    meta: dict[str, Any] = {"name": name, "namespace": "default"}
    if owner:
        meta["ownerReferences"] = [owner]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": spec,
        "status": {"phase": phase, "conditions": conditions or []},
    }


def node(
    name: str,
    *,
    cpu: str = "4",
    allocatable_cpu: str = "3800m",
    memory: str = "16Gi",
    labels: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": dict(labels or {})},
        "spec": {"providerID": f"fake://{name}"},
        "status": {
            "phase": "Running",
            "capacity": {"cpu": cpu, "memory": memory, "pods": "110"},
            "allocatable": {"cpu": allocatable_cpu, "memory": memory, "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


MANAGED_LABELS = {
    "karpenter.sh/nodepool": "default",
    "karpenter.sh/capacity-type": "spot",
    "topology.kubernetes.io/zone": "zone-a",
    "kubernetes.io/arch": "amd64",
    "node.kubernetes.io/instance-type": "m.large",
}


def nodepool(name: str = "default", *, limits: Mapping[str, str] | None = None,
             ref: Mapping[str, str] | None = None) -> dict[str, Any]:  # fmt: skip
    spec: dict[str, Any] = {
        "template": {"spec": {"nodeClassRef": dict(ref or NODECLASS_REF), "requirements": []}}
    }
    if limits is not None:
        spec["limits"] = dict(limits)
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": name},
        "spec": spec,
    }
