"""A small world for the static-capacity controllers: in-memory API server, virtual clock,
a cluster state fed by hand (objects are pushed into it as they are created), and the two
reconcilers called directly."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from karpenter_core import metrics
from karpenter_core.cloudprovider.fake import FakeCloudProvider
from karpenter_core.controllers.static import StaticDeprovisioner, StaticProvisioner
from karpenter_core.kube.client import create_with_status
from karpenter_core.runtime.clock import VirtualClock, format_time
from karpenter_core.runtime.context import ControllerContext
from karpenter_core.runtime.events import EventRecorder
from karpenter_core.runtime.options import Options
from karpenter_core.runtime.reconciler import ObjectKey, Result
from karpenter_core.sim.apiserver import InMemoryApiServer
from karpenter_core.state.cluster import Cluster

START = datetime(2026, 1, 1, tzinfo=UTC)
NODEPOOL_LABEL = "karpenter.sh/nodepool"
_ids = itertools.count(1)


def condition(type_: str, status: str = "True") -> dict[str, Any]:
    return {
        "type": type_,
        "status": status,
        "reason": type_,
        "message": "",
        "lastTransitionTime": format_time(START),
    }


class World:
    def __init__(self, options: Options | None = None) -> None:
        metrics.reset()
        self.clock = VirtualClock(START)
        self.kube = InMemoryApiServer(self.clock)
        self.recorder = EventRecorder(self.clock)
        self.provider = FakeCloudProvider()
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
        self.provisioner = StaticProvisioner(self.ctx)
        self.deprovisioner = StaticDeprovisioner(self.ctx)

    # -- objects --

    def create(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        """Create, then write ``status`` through the status subresource when given."""
        return create_with_status(self.kube, obj)

    def nodepool(
        self,
        name: str = "static",
        *,
        replicas: int | None = 3,
        limits: Mapping[str, Any] | None = None,
        ready: bool = True,
        labels: Mapping[str, str] | None = None,
        expire_after: str = "Never",
    ) -> dict[str, Any]:
        spec: dict[str, Any] = {
            "template": {
                "metadata": {"labels": dict(labels or {})},
                "spec": {
                    "nodeClassRef": {
                        "group": "karpenter.kwok.sh",
                        "kind": "KWOKNodeClass",
                        "name": "default",
                    },
                    "requirements": [
                        {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}
                    ],
                    "expireAfter": expire_after,
                },
            },
        }
        if replicas is not None:
            spec["replicas"] = replicas
        if limits is not None:
            spec["limits"] = dict(limits)
        status = [
            condition(t, "True" if ready or t != "Ready" else "False")
            for t in ("ValidationSucceeded", "NodeClassReady", "Ready")
        ]
        return self.create(
            {
                "apiVersion": "karpenter.sh/v1",
                "kind": "NodePool",
                "metadata": {"name": name},
                "spec": spec,
                "status": {"conditions": status},
            }
        )

    def set_replicas(self, replicas: int, name: str = "static") -> None:
        self.kube.patch("nodepools", name, {"spec": {"replicas": replicas}})

    def node(
        self,
        name: str | None = None,
        *,
        nodepool: str = "static",
        created_at: datetime = START,
        expire_after: str = "Never",
        launched: bool = True,
    ) -> str:
        """A NodeClaim of ``nodepool`` (launched: with a provider id and a Node), pushed
        into cluster state; returns its name (also the Node's)."""
        name = name or f"{nodepool}-{next(_ids)}"
        pid = f"fake://{name}"
        cap = {"cpu": "4", "memory": "8Gi", "pods": "40"}
        labels = {
            NODEPOOL_LABEL: nodepool,
            "node.kubernetes.io/instance-type": "fake-it-3",
            "topology.kubernetes.io/zone": "test-zone-1",
            "karpenter.sh/capacity-type": "on-demand",
            "kubernetes.io/hostname": name,
        }
        status: dict[str, Any] = {}
        if launched:
            status = {
                "providerID": pid,
                "nodeName": name,
                "capacity": cap,
                "allocatable": cap,
                "conditions": [condition("Launched"), condition("Registered")],
            }
        nc = self.create(
            {
                "apiVersion": "karpenter.sh/v1",
                "kind": "NodeClaim",
                "metadata": {
                    "name": name,
                    "labels": labels,
                    "creationTimestamp": format_time(created_at),
                },
                "spec": {
                    "nodeClassRef": {
                        "group": "karpenter.kwok.sh",
                        "kind": "KWOKNodeClass",
                        "name": "default",
                    },
                    "requirements": [],
                    "expireAfter": expire_after,
                },
                "status": status,
            }
        )
        if launched:
            self.cluster.update_nodeclaim(nc)
            node = self.create(
                {
                    "apiVersion": "v1",
                    "kind": "Node",
                    "metadata": {
                        "name": name,
                        "labels": {**labels, "karpenter.sh/registered": "true"},
                    },
                    "spec": {"providerID": pid},
                    "status": {
                        "capacity": cap,
                        "allocatable": cap,
                        "conditions": [{"type": "Ready", "status": "True"}],
                    },
                }
            )
            self.cluster.update_node(node)
        else:
            self.cluster.update_nodeclaim(nc)
        return name

    def pod(
        self,
        node: str,
        *,
        cpu: str = "1",
        owner: str = "ReplicaSet",
        annotations: Mapping[str, str] | None = None,
        priority: int | None = None,
    ) -> dict[str, Any]:
        name = f"pod-{next(_ids)}"
        spec: dict[str, Any] = {
            "nodeName": node,
            "containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": cpu}}}],
        }
        if priority is not None:
            spec["priority"] = priority
        created = self.create(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": name,
                    "namespace": "default",
                    "annotations": dict(annotations or {}),
                    "ownerReferences": [
                        {
                            "apiVersion": "apps/v1",
                            "kind": owner,
                            "name": "x",
                            "uid": f"u-{owner}",
                            "controller": True,
                        }
                    ],
                },
                "spec": spec,
                "status": {"phase": "Running", "startTime": format_time(START)},
            }
        )
        self.cluster.update_pod(created)
        return created

    # -- reading --

    def nodeclaims(self, nodepool: str = "static") -> list[dict[str, Any]]:
        return [
            nc
            for nc in self.kube.list("nodeclaims").items
            if nc["metadata"].get("labels", {}).get(NODEPOOL_LABEL) == nodepool
        ]

    def live_nodeclaims(self, nodepool: str = "static") -> set[str]:
        return {
            nc["metadata"]["name"]
            for nc in self.nodeclaims(nodepool)
            if not nc["metadata"].get("deletionTimestamp")
        }

    # -- reconciling --

    def provision(self, name: str = "static") -> Result:
        return self.provisioner.reconcile(ObjectKey("", name))

    def deprovision(self, name: str = "static") -> Result:
        return self.deprovisioner.reconcile(ObjectKey("", name))
