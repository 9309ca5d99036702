"""A small world for disruption tests: in-memory API server, virtual clock, cluster state
fed directly (no informers), the fake catalogue, and a DisruptionContext over them.

Upstream's default fixture (spec disruption §17): NodePool ``WhenEmptyOrUnderutilized``,
``consolidateAfter: 0s``, budget ``100%``; nodes Initialized and Consolidatable; pods owned
by a ReplicaSet.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from karpenter_core import metrics
from karpenter_core.apis.labels import (
    CAPACITY_TYPE_LABEL_KEY,
    LABEL_HOSTNAME,
    LABEL_INSTANCE_TYPE,
    LABEL_TOPOLOGY_ZONE,
    NODE_INITIALIZED_LABEL_KEY,
    NODE_REGISTERED_LABEL_KEY,
    NODEPOOL_LABEL_KEY,
)
from karpenter_core.cloudprovider.fake import FakeCloudProvider
from karpenter_core.cloudprovider.protocol import NodeClassKind
from karpenter_core.cloudprovider.types import InstanceType
from karpenter_core.controllers.disruption.types import DisruptionContext
from karpenter_core.controllers.provisioning import provisioner_of
from karpenter_core.kube.client import NotFound, create_with_status
from karpenter_core.runtime.clock import VirtualClock, format_time
from karpenter_core.runtime.context import ControllerContext
from karpenter_core.runtime.events import EventRecorder
from karpenter_core.runtime.options import Options
from karpenter_core.sim.apiserver import InMemoryApiServer
from karpenter_core.state.cluster import Cluster

KWOK_CLASS = NodeClassKind(group="karpenter.kwok.sh", kind="KWOKNodeClass", version="v1alpha1")
START = datetime(2026, 1, 1, tzinfo=UTC)
_ids = itertools.count()


FakeProvider = FakeCloudProvider


class StubQueue:
    """A queue that holds nothing unless told (candidate tests)."""

    def __init__(self) -> None:
        self.provider_ids: set[str] = set()

    def has_any(self, *provider_ids: str) -> bool:
        return any(p in self.provider_ids for p in provider_ids)


def _condition(type_: str, status: str = "True", at: datetime = START, reason: str = "") -> dict:
    return {
        "type": type_,
        "status": status,
        "reason": reason or type_,
        "message": "",
        "lastTransitionTime": format_time(at),
    }


class World:
    """Cluster objects created in the API server *and* pushed into cluster state."""

    def __init__(
        self,
        instance_types: Sequence[InstanceType] | None = None,
        *,
        options: Options | None = None,
        queue: Any = None,
    ) -> None:
        metrics.reset()
        self.clock = VirtualClock(START)
        self.kube = InMemoryApiServer(self.clock)
        self.recorder = EventRecorder(self.clock)
        self.provider = FakeProvider(instance_types)
        self.ctx = ControllerContext(
            kube=self.kube,
            clock=self.clock,
            cloud_provider=self.provider,  # type: ignore[arg-type]
            recorder=self.recorder,
            options=options or Options(),
        )
        self.cluster = Cluster(self.kube, self.clock, self.provider)  # type: ignore[arg-type]
        self.ctx.cluster = self.cluster
        self.cluster.set_synced(True)
        self.provisioner = provisioner_of(self.ctx)
        self.queue = queue if queue is not None else StubQueue()
        self.dctx = DisruptionContext(self.ctx, self.cluster, self.queue, self.provisioner)

    def real_queue(self) -> Any:
        """Use the real orchestration queue (its reconciles are driven by hand)."""
        from karpenter_core.controllers.disruption.queue import Queue

        q = Queue(self.ctx, self.cluster, self.provisioner)
        self.enqueued: list[str] = []
        q.bind(self.enqueued.append)
        self.queue = q
        self.dctx = DisruptionContext(self.ctx, self.cluster, q, self.provisioner)
        return q

    def controller(self, *method_classes: Any, validation_period: float = 0.0) -> Any:
        """A DisruptionController running only ``method_classes`` (in that order) over
        the real queue; validation is immediate unless ``validation_period`` is given."""
        from karpenter_core.controllers.disruption.controller import DisruptionController

        q = self.real_queue()
        methods = [cls(self.dctx) for cls in method_classes]
        return DisruptionController(self.dctx, q, methods, validation_period=validation_period)

    def launch(self, nodeclaim_name: str) -> None:
        """Launch, register and initialise a NodeClaim the queue created (a kubelet and
        the lifecycle controller in one step): provider id, conditions, a Node."""
        nc = self.kube.get("nodeclaims", nodeclaim_name)
        labels = dict(nc["metadata"].get("labels") or {})
        reqs = {r["key"]: r for r in nc["spec"].get("requirements") or []}
        it_name = (reqs.get(LABEL_INSTANCE_TYPE) or {}).get("values", ["fake-it-0"])[0]
        labels.setdefault(LABEL_INSTANCE_TYPE, it_name)
        labels.setdefault(LABEL_TOPOLOGY_ZONE, "test-zone-1")
        labels.setdefault(CAPACITY_TYPE_LABEL_KEY, "on-demand")
        labels.setdefault(LABEL_HOSTNAME, nodeclaim_name)
        it = next((i for i in self.provider.its if i.name == it_name), self.provider.its[0])
        cap = {
            "cpu": f"{it.capacity['cpu']}m",
            "memory": str(it.capacity["memory"] // 1000),
            "pods": str(it.capacity["pods"] // 1000),
        }
        pid = f"fake://{nodeclaim_name}"
        nc["metadata"]["labels"] = labels
        nc = self.kube.update(nc)
        conds = [
            _condition(t, at=self.clock.now()) for t in ("Launched", "Registered", "Initialized")
        ]
        nc = self.kube.patch(
            "nodeclaims",
            nodeclaim_name,
            {
                "status": {
                    "providerID": pid,
                    "nodeName": nodeclaim_name,
                    "capacity": cap,
                    "allocatable": cap,
                    "conditions": conds,
                }
            },
            subresource="status",
        )
        self.cluster.update_nodeclaim(nc)
        node_labels = {
            **labels,
            NODE_REGISTERED_LABEL_KEY: "true",
            NODE_INITIALIZED_LABEL_KEY: "true",
        }
        node = self.create(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": nodeclaim_name, "labels": node_labels},
                "spec": {"providerID": pid},
                "status": {
                    "capacity": cap,
                    "allocatable": cap,
                    "conditions": [{"type": "Ready", "status": "True"}],
                },
            }
        )
        self.cluster.update_node(node)

    def execute(self) -> None:
        """Carry out every queued command (upstream tests' ``ExpectMakeNewNodeClaimsReady``
        + queue reconcile + cascade): replacements launch and initialise, candidates'
        NodeClaims are deleted, and their Nodes go with them."""
        q = self.queue
        for pid in list(q.provider_ids()):
            for name in q.replacement_names(pid):
                if not self.cluster.nodeclaim_exists(
                    name
                ) or self.cluster.unlaunched_nodeclaim_exists(name):
                    self.launch(name)
            if q.has_any(pid):
                q.reconcile(pid)
        self.cascade()

    def cascade(self) -> None:
        """NodeClaims gone from the API leave cluster state, with their Nodes."""
        live = {nc["metadata"]["name"] for nc in self.kube.list("nodeclaims").items}
        for sn in self.cluster.state_nodes():
            view = sn.nodeclaim_view
            if view is None or view.name in live:
                continue
            self.cluster.delete_nodeclaim(view.name)
            if sn.node is not None:
                with contextlib.suppress(NotFound):
                    self.kube.delete("nodes", sn.node.name)
                self.cluster.delete_node(sn.node.name)

    def node_names(self) -> list[str]:
        return sorted(n["metadata"]["name"] for n in self.kube.list("nodes").items)

    def tainted(self) -> list[str]:
        return sorted(
            n["metadata"]["name"]
            for n in self.kube.list("nodes").items
            if any(t.get("key") == "karpenter.sh/disrupted" for t in n["spec"].get("taints") or [])
        )

    def initialize(self, nodeclaim_name: str) -> None:
        """Mark a (replacement) NodeClaim Initialized, as the lifecycle controller would."""
        nc = self.kube.get("nodeclaims", nodeclaim_name)
        conds = [
            c for c in nc.get("status", {}).get("conditions", []) if c["type"] != "Initialized"
        ]
        conds.append(_condition("Initialized", at=self.clock.now()))
        self.kube.patch(
            "nodeclaims", nodeclaim_name, {"status": {"conditions": conds}}, subresource="status"
        )

    def refresh(self, name: str) -> None:
        """Push the API's current Node and NodeClaim ``name`` into cluster state."""
        self.cluster.update_nodeclaim(self.kube.get("nodeclaims", name))
        self.cluster.update_node(self.kube.get("nodes", name))

    # -- objects --

    def create(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        """Create, then write ``status`` through the status subresource when given."""
        return create_with_status(self.kube, obj)

    def nodepool(
        self,
        name: str = "default",
        *,
        budgets: Sequence[Mapping[str, Any]] = ({"nodes": "100%"},),
        consolidate_after: str = "0s",
        policy: str = "WhenEmptyOrUnderutilized",
        replicas: int | None = None,
        requirements: Sequence[Mapping[str, Any]] = (),
        limits: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        template_spec: dict[str, Any] = {
            "nodeClassRef": {
                "group": "karpenter.kwok.sh",
                "kind": "KWOKNodeClass",
                "name": "default",
            },
            "requirements": list(requirements),
            "expireAfter": "Never",
        }
        spec: dict[str, Any] = {
            "template": {"spec": template_spec},
            "disruption": {
                "consolidateAfter": consolidate_after,
                "consolidationPolicy": policy,
                "budgets": [dict(b) for b in budgets],
            },
        }
        if replicas is not None:
            spec["replicas"] = replicas
        if limits is not None:
            spec["limits"] = dict(limits)
        return self.create(
            {
                "apiVersion": "karpenter.sh/v1",
                "kind": "NodePool",
                "metadata": {"name": name},
                "spec": spec,
                "status": {
                    "conditions": [
                        _condition(t) for t in ("ValidationSucceeded", "NodeClassReady", "Ready")
                    ]
                },
            }
        )

    def node(
        self,
        name: str | None = None,
        *,
        nodepool: str = "default",
        instance_type: str = "fake-it-3",
        zone: str = "test-zone-1",
        capacity_type: str = "on-demand",
        initialized: bool = True,
        ready: bool = True,
        consolidatable: bool = True,
        drifted: bool = False,
        drifted_at: datetime = START,
        node_annotations: Mapping[str, str] | None = None,
        termination_grace_period: str | None = None,
        nodeclaim_deleting: bool = False,
        labels: Mapping[str, str] | None = None,
        with_node: bool = True,
    ) -> str:
        """A launched NodeClaim and (unless ``with_node`` is False) its Node; returns the
        node name (also the NodeClaim's name)."""
        name = name or f"node-{next(_ids)}"
        pid = f"fake://{name}"
        it = next((i for i in self.provider.its if i.name == instance_type), None)
        cap = {"cpu": "4", "memory": "8Gi", "pods": "40"}
        if it is not None:
            cap = {
                "cpu": f"{it.capacity['cpu']}m",
                "memory": str(it.capacity["memory"] // 1000),
                "pods": str(it.capacity["pods"] // 1000),
            }
        lbls = {
            NODEPOOL_LABEL_KEY: nodepool,
            LABEL_INSTANCE_TYPE: instance_type,
            LABEL_TOPOLOGY_ZONE: zone,
            CAPACITY_TYPE_LABEL_KEY: capacity_type,
            LABEL_HOSTNAME: name,
            "kubernetes.io/os": "linux",
            "kubernetes.io/arch": "amd64",
            **(labels or {}),
        }
        if not nodepool:
            del lbls[NODEPOOL_LABEL_KEY]
        conditions = [_condition("Launched"), _condition("Registered")]
        if initialized:
            conditions.append(_condition("Initialized"))
        if consolidatable:
            conditions.append(_condition("Consolidatable"))
        if drifted:
            conditions.append(_condition("Drifted", at=drifted_at, reason="NodePoolDrifted"))
        nc_spec: dict[str, Any] = {
            "nodeClassRef": {
                "group": "karpenter.kwok.sh",
                "kind": "KWOKNodeClass",
                "name": "default",
            },
            "requirements": [],
            "expireAfter": "Never",
        }
        if termination_grace_period is not None:
            nc_spec["terminationGracePeriod"] = termination_grace_period
        meta: dict[str, Any] = {"name": name, "labels": dict(lbls)}
        if nodeclaim_deleting:
            meta["finalizers"] = ["karpenter.sh/termination"]
        nc = self.create(
            {
                "apiVersion": "karpenter.sh/v1",
                "kind": "NodeClaim",
                "metadata": meta,
                "spec": nc_spec,
                "status": {
                    "providerID": pid,
                    "nodeName": name if with_node else "",
                    "capacity": cap,
                    "allocatable": cap,
                    "conditions": conditions,
                },
            }
        )
        if nodeclaim_deleting:
            self.kube.delete("nodeclaims", name)
            nc = self.kube.get("nodeclaims", name)
        self.cluster.update_nodeclaim(nc)
        if with_node:
            node_labels = dict(lbls)
            node_labels[NODE_REGISTERED_LABEL_KEY] = "true"
            if initialized:
                node_labels[NODE_INITIALIZED_LABEL_KEY] = "true"
            node = self.create(
                {
                    "apiVersion": "v1",
                    "kind": "Node",
                    "metadata": {
                        "name": name,
                        "labels": node_labels,
                        "annotations": dict(node_annotations or {}),
                    },
                    "spec": {"providerID": pid},
                    "status": {
                        "capacity": cap,
                        "allocatable": cap,
                        "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
                    },
                }
            )
            self.cluster.update_node(node)
        return name

    def pod(
        self,
        name: str | None = None,
        node: str | None = None,
        *,
        cpu: str = "1",
        namespace: str = "default",
        annotations: Mapping[str, str] | None = None,
        labels: Mapping[str, str] | None = None,
        owner: str = "ReplicaSet",
        phase: str | None = None,
        terminating: bool = False,
        start_time: datetime | None = START,
        priority: int | None = None,
        tolerations: Sequence[Mapping[str, Any]] = (),
        ready: bool = True,
    ) -> dict[str, Any]:
        name = name or f"pod-{next(_ids)}"
        meta: dict[str, Any] = {
            "name": name,
            "namespace": namespace,
            "labels": dict(labels or {"app": "web"}),
            "annotations": dict(annotations or {}),
        }
        if owner:
            api = "v1" if owner in ("Node",) else "apps/v1"
            meta["ownerReferences"] = [
                {
                    "apiVersion": api,
                    "kind": owner,
                    "name": f"{owner.lower()}-x",
                    "uid": f"u-{owner}",
                    "controller": True,
                }
            ]
        if owner == "Node":
            meta["annotations"]["kubernetes.io/config.mirror"] = "x"
        if terminating:
            meta["finalizers"] = ["test/hold"]
        spec: dict[str, Any] = {
            "containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": cpu}}}],
            "tolerations": [dict(t) for t in tolerations],
        }
        if priority is not None:
            spec["priority"] = priority
        status: dict[str, Any] = {}
        if node:
            spec["nodeName"] = node
            status["phase"] = phase or "Running"
            if start_time is not None:
                status["startTime"] = format_time(start_time)
            status["conditions"] = [{"type": "Ready", "status": "True" if ready else "False"}]
        else:
            status["phase"] = phase or "Pending"
            status["conditions"] = [
                {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}
            ]
        created = self.create(
            {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}
        )
        if terminating:
            self.kube.delete("pods", name, namespace)
            created = self.kube.get("pods", name, namespace)
        self.cluster.update_pod(created)
        return created

    def pdb(
        self,
        name: str = "pdb",
        *,
        labels: Mapping[str, str] | None = None,
        max_unavailable: Any = None,
        min_available: Any = None,
        disruptions_allowed: int = 0,
        namespace: str = "default",
    ) -> dict[str, Any]:
        spec: dict[str, Any] = {"selector": {"matchLabels": dict(labels or {"app": "web"})}}
        if max_unavailable is not None:
            spec["maxUnavailable"] = max_unavailable
        if min_available is not None:
            spec["minAvailable"] = min_available
        return self.create(
            {
                "apiVersion": "policy/v1",
                "kind": "PodDisruptionBudget",
                "metadata": {"name": name, "namespace": namespace},
                "spec": spec,
                "status": {"disruptionsAllowed": disruptions_allowed},
            }
        )

    # -- reading --

    def events(self, reason: str) -> list[Any]:
        return [e for e in self.recorder.events if e.reason == reason]

    def pid(self, name: str) -> str:
        return f"fake://{name}"
