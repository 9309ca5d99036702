"""A small world for node-termination tests: the kit's Environment running the
node.termination package with the fake cloud provider, a fake kubelet that finishes
graceful pod deletions when their grace period is over, and the suite's objects."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from karpenter_core.apis import labels as wk
from karpenter_core.controllers.node.termination import EvictionQueue
from karpenter_core.kube.client import NotFound
from karpenter_core.runtime.clock import VirtualClock, format_time, parse_time
from karpenter_core.runtime.reconciler import ObjectKey, Result, Watch
from karpenter_core.sim.apiserver import InMemoryApiServer
from karpenter_core.testing import TEST_NODE_CLASS, Environment, FakeCloudProvider
from karpenter_core.testing import builders as b

NODE_CLASS = TEST_NODE_CLASS
NODE_CLASS_LABEL = NODE_CLASS.label_key
NODEPOOL = "default"
RS_OWNER = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "rs-uid"}


class FakeKubelet:
    """Finishes graceful pod deletions once their deletionTimestamp arrives, and marks new
    pods Ready ``startup`` seconds after they were created (pods created Ready stay so).

    Not the simulated kubelet of ``karpenter_core.sim``: that one also makes Nodes Ready,
    removes taints and collects orphans, all of which these tests want to do by hand, and
    this one can be switched off mid-test (``enabled``)."""

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


class Env(Environment):
    """Everything a termination test needs on the kit's Environment; ``cloud`` is its fake
    provider, which knows an instance for every node made with ``instance=True``."""

    def __init__(self, *, kubelet: bool = True, startup: float = 0, seed: int | None = None):
        super().__init__(
            FakeCloudProvider(node_classes=[NODE_CLASS]),
            controllers=["node.termination"],
            kube_scheduler=False,
            kubelet=False,
            seed=seed,
        )
        self.cloud: FakeCloudProvider = self.provider
        self.fake_kubelet = FakeKubelet(self.server, self.clock, startup)
        self.fake_kubelet.enabled = kubelet
        self.manager.add_controller("test.kubelet", self.fake_kubelet, watches=[Watch("pods")])

    @property
    def queue(self) -> EvictionQueue:
        queue = self.ctx.eviction_queue
        assert queue is not None
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
        """A node of the default pool holding Karpenter's termination finalizer; with
        ``instance`` the cloud knows its instance."""
        provider_id = f"test:///{name}"
        node_labels = {
            wk.NODEPOOL_LABEL_KEY: NODEPOOL,
            wk.LABEL_TOPOLOGY_ZONE: "test-zone-a",
            wk.LABEL_HOSTNAME: name,
        }
        if managed:
            node_labels[NODE_CLASS_LABEL] = "default"
        node_labels.update(labels or {})
        if instance:
            self.cloud.add_instance(provider_id)
        return self.create(
            b.node(
                name,
                labels=node_labels,
                finalizers=[wk.TERMINATION_FINALIZER],
                provider_id=provider_id,
                ready=ready,
            )
        )

    def nodeclaim(
        self,
        node: Mapping[str, Any],
        *,
        name: str | None = None,
        annotations: Mapping[str, str] | None = None,
        conditions: Sequence[Mapping[str, Any]] = (),
    ) -> dict[str, Any]:
        """The launched NodeClaim of ``node``, holding the termination finalizer."""
        node_name = node["metadata"]["name"]
        return self.create(
            b.nodeclaim(
                name or f"{node_name}-claim",
                nodepool=NODEPOOL,
                annotations=annotations,
                finalizers=[wk.TERMINATION_FINALIZER],
                node_class=NODE_CLASS,
                provider_id=node["spec"]["providerID"],
                node_name=node_name,
                conditions=conditions,
            )
        )

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
        """A pod of a ReplicaSet (unless ``owner`` says otherwise) bound to ``node``:
        Running and Ready unless ``running`` is False or a ``phase`` is given."""
        pod = self.server.create(  # the server sets a new pod's status; it is written below
            b.pod(
                name,
                namespace=namespace,
                labels=labels,
                annotations=annotations,
                owner=owner,
                node_name=node,
                priority_class=priority_class,
                termination_grace_period=grace,
                tolerations=tolerations,
                volumes=volumes,
            )
        )
        if phase is not None:
            pod["status"] = {"phase": phase}
            return self.server.update_status(pod)
        if running and node:
            return set_running(self.server, pod, self.clock.now())
        return pod

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

    def delete_node(self, name: str = "node-a") -> None:
        self.server.delete("nodes", name)
