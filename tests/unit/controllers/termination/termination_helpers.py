"""A small world for node-termination tests: in-memory API server, virtual clock, the
termination controllers on a Manager, a fake cloud provider and a fake kubelet that
finishes graceful pod deletions when their grace period is over."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from karpenter_core import metrics
from karpenter_core.apis import labels as wk
from karpenter_core.apis.v1 import NodeClaim
from karpenter_core.cloudprovider.errors import NodeClaimNotFoundError
from karpenter_core.cloudprovider.protocol import NodeClassKind
from karpenter_core.controllers.node.termination import EvictionQueue, register
from karpenter_core.kube.client import NotFound
from karpenter_core.runtime.clock import VirtualClock, format_time, parse_time
from karpenter_core.runtime.context import ControllerContext
from karpenter_core.runtime.events import EventRecorder, RecordedEvent
from karpenter_core.runtime.manager import Manager
from karpenter_core.runtime.reconciler import ObjectKey, Result, Watch
from karpenter_core.sim.apiserver import InMemoryApiServer

START = datetime(2026, 1, 1, tzinfo=UTC)
NODE_CLASS = NodeClassKind("karpenter.test.sh", "TestNodeClass")
NODE_CLASS_LABEL = NODE_CLASS.label_key
NODEPOOL = "default"
RS_OWNER = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "rs-uid"}


class FakeCloudProvider:
    """Instances by provider id. ``delete`` starts termination (the instance is gone at the
    next call, which then reports NotFound), like upstream's fake."""

    name = "fake"

    def __init__(self) -> None:
        self.instances: set[str] = set()
        self.delete_calls: list[str] = []
        self.get_calls: list[str] = []

    def get(self, provider_id: str) -> NodeClaim:
        self.get_calls.append(provider_id)
        if provider_id not in self.instances:
            raise NodeClaimNotFoundError(f"instance {provider_id} not found")
        return NodeClaim.from_dict({"metadata": {"name": provider_id}})

    def delete(self, nodeclaim: NodeClaim) -> None:
        self.delete_calls.append(nodeclaim.provider_id)
        if nodeclaim.provider_id not in self.instances:
            raise NodeClaimNotFoundError("instance terminated")
        self.instances.discard(nodeclaim.provider_id)

    def supported_node_classes(self) -> Sequence[NodeClassKind]:
        return [NODE_CLASS]

    def create(self, nodeclaim: NodeClaim) -> NodeClaim:  # pragma: no cover - unused
        raise NotImplementedError

    def list(self) -> list[NodeClaim]:  # pragma: no cover - unused
        return []

    def get_instance_types(self, nodepool: Any) -> list[Any]:  # pragma: no cover - unused
        return []

    def is_drifted(self, nodeclaim: NodeClaim) -> str:  # pragma: no cover - unused
        return ""

    def repair_policies(self) -> list[Any]:  # pragma: no cover - unused
        return []


class FakeKubelet:
    """Finishes graceful pod deletions once their deletionTimestamp arrives, and marks new
    pods Ready ``startup`` seconds after they were created (pods created Ready stay so)."""

    def __init__(self, server: InMemoryApiServer, clock: VirtualClock, startup: float = 0) -> None:
        self.server = server
        self.clock = clock
        self.startup = startup
        self.enabled = True

    def reconcile(self, key: ObjectKey) -> Result:
        if not self.enabled:
            return Result()
        try:
            pod = self.server.get("pods", key.name, key.namespace)
        except NotFound:
            return Result()
        meta = pod["metadata"]
        now = self.clock.now()
        if meta.get("deletionTimestamp"):
            due = parse_time(meta["deletionTimestamp"])
            if now >= due:
                with contextlib.suppress(NotFound):
                    self.server.delete("pods", key.name, key.namespace, grace_period_seconds=0)
                return Result()
            return Result(requeue_after=(due - now).total_seconds())
        phase = (pod.get("status") or {}).get("phase")
        if not pod["spec"].get("nodeName") or _ready(pod) or phase in ("Succeeded", "Failed"):
            return Result()
        ready_at = parse_time(meta["creationTimestamp"]) + timedelta(seconds=self.startup)
        if now < ready_at:
            return Result(requeue_after=(ready_at - now).total_seconds())
        set_running(self.server, pod, now)
        return Result()


def _ready(pod: Mapping[str, Any]) -> bool:
    return any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in (pod.get("status") or {}).get("conditions") or []
    )


def set_running(server: InMemoryApiServer, pod: Mapping[str, Any], now: datetime) -> dict[str, Any]:
    current = server.get("pods", pod["metadata"]["name"], pod["metadata"]["namespace"])
    current["status"] = {
        "phase": "Running",
        "startTime": format_time(now),
        "conditions": [{"type": "Ready", "status": "True"}],
    }
    return server.update_status(current)


class Env:
    """Everything a termination test needs, wired the way ``karpenter simulate`` wires it."""

    def __init__(self, *, kubelet: bool = True, startup: float = 0, seed: int | None = None):
        metrics.reset()
        self.clock = VirtualClock(START)
        self.server = InMemoryApiServer(self.clock)
        self.recorder = EventRecorder(self.clock)
        self.cloud = FakeCloudProvider()
        self.ctx = ControllerContext(
            kube=self.server, clock=self.clock, cloud_provider=self.cloud, recorder=self.recorder
        )
        self.manager = Manager(self.clock, self.server, seed=seed)
        register(self.manager, self.ctx)
        self.kubelet = FakeKubelet(self.server, self.clock, startup)
        self.kubelet.enabled = kubelet
        self.manager.add_controller("test.kubelet", self.kubelet, watches=[Watch("pods")])

    @property
    def queue(self) -> EvictionQueue:
        queue: EvictionQueue = self.ctx.extras["eviction_queue"]
        return queue

    # ---------------------------------------------------------------- objects

    def node(
        self,
        name: str = "node-a",
        *,
        ready: bool = True,
        managed: bool = True,
        labels: Mapping[str, str] | None = None,
        instance: bool = True,
    ) -> dict[str, Any]:
        provider_id = f"test:///{name}"
        node_labels = {
            wk.NODEPOOL_LABEL_KEY: NODEPOOL,
            wk.LABEL_TOPOLOGY_ZONE: "test-zone-a",
            wk.LABEL_HOSTNAME: name,
        }
        if managed:
            node_labels[NODE_CLASS_LABEL] = "default"
        node_labels.update(labels or {})
        self.server.create(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {
                    "name": name,
                    "labels": node_labels,
                    "finalizers": [wk.TERMINATION_FINALIZER],
                },
                "spec": {"providerID": provider_id},
            }
        )
        current = self.server.get("nodes", name)
        current["status"] = {
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]
        }
        if instance:
            self.cloud.instances.add(provider_id)
        return self.server.update_status(current)

    def nodeclaim(
        self,
        node: Mapping[str, Any],
        *,
        name: str | None = None,
        annotations: Mapping[str, str] | None = None,
        conditions: Sequence[Mapping[str, Any]] = (),
    ) -> dict[str, Any]:
        node_name = node["metadata"]["name"]
        nc = self.server.create(
            {
                "apiVersion": "karpenter.sh/v1",
                "kind": "NodeClaim",
                "metadata": {
                    "name": name or f"{node_name}-claim",
                    "labels": {wk.NODEPOOL_LABEL_KEY: NODEPOOL},
                    "annotations": dict(annotations or {}),
                    "finalizers": [wk.TERMINATION_FINALIZER],
                },
                "spec": {
                    "nodeClassRef": {
                        "group": NODE_CLASS.group,
                        "kind": NODE_CLASS.kind,
                        "name": "default",
                    },
                    "requirements": [],
                },
            }
        )
        nc["status"] = {
            "providerID": node["spec"]["providerID"],
            "nodeName": node_name,
            "conditions": [dict(c) for c in conditions],
        }
        return self.server.update_status(nc)

    def pod(
        self,
        name: str,
        node: str | None = "node-a",
        *,
        labels: Mapping[str, str] | None = None,
        owner: Mapping[str, Any] | None = RS_OWNER,
        priority_class: str | None = None,
        grace: int | None = None,
        annotations: Mapping[str, str] | None = None,
        tolerations: Sequence[Mapping[str, Any]] = (),
        volumes: Sequence[Mapping[str, Any]] = (),
        running: bool = True,
        phase: str | None = None,
        namespace: str = "default",
    ) -> dict[str, Any]:
        spec: dict[str, Any] = {"containers": [{"name": "app", "image": "app"}]}
        if node:
            spec["nodeName"] = node
        if priority_class:
            spec["priorityClassName"] = priority_class
        if grace is not None:
            spec["terminationGracePeriodSeconds"] = grace
        if tolerations:
            spec["tolerations"] = [dict(t) for t in tolerations]
        if volumes:
            spec["volumes"] = [dict(v) for v in volumes]
        meta: dict[str, Any] = {
            "name": name,
            "namespace": namespace,
            "labels": dict(labels or {}),
            "annotations": dict(annotations or {}),
        }
        if owner is not None:
            meta["ownerReferences"] = [dict(owner)]
        pod = self.server.create(
            {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}
        )
        if phase is not None:
            pod["status"] = {"phase": phase}
            return self.server.update_status(pod)
        if running and node:
            return set_running(self.server, pod, self.clock.now())
        return pod

    def pdb(self, name: str, labels: Mapping[str, str], **spec: Any) -> dict[str, Any]:
        return self.server.create(
            {
                "apiVersion": "policy/v1",
                "kind": "PodDisruptionBudget",
                "metadata": {"name": name, "namespace": "default"},
                "spec": {"selector": {"matchLabels": dict(labels)}, **spec},
            }
        )

    # ---------------------------------------------------------------- reads

    def get_node(self, name: str = "node-a") -> dict[str, Any] | None:
        try:
            return self.server.get("nodes", name)
        except NotFound:
            return None

    def get_pod(self, name: str, namespace: str = "default") -> dict[str, Any] | None:
        try:
            return self.server.get("pods", name, namespace)
        except NotFound:
            return None

    def get_nodeclaim(self, name: str) -> dict[str, Any] | None:
        try:
            return self.server.get("nodeclaims", name)
        except NotFound:
            return None

    def condition(self, nodeclaim: str, type_: str) -> Mapping[str, Any] | None:
        nc = self.get_nodeclaim(nodeclaim)
        assert nc is not None, f"NodeClaim {nodeclaim} is gone"
        for c in (nc.get("status") or {}).get("conditions") or []:
            if c.get("type") == type_:
                return c
        return None

    def events(self, reason: str) -> list[RecordedEvent]:
        return [e for e in self.recorder.events if e.reason == reason]

    def delete_node(self, name: str = "node-a") -> None:
        self.server.delete("nodes", name)

    def run(self, seconds: float) -> None:
        self.manager.run_for(seconds)

    def settle(self) -> None:
        self.manager.settle()
