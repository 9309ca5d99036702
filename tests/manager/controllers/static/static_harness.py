"""A small world for the static-capacity controllers: the kit's Environment with no
controllers running, a cluster state fed by hand (objects are pushed into it as they are
created), and the two reconcilers called directly."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from karpenter_core.controllers.static import StaticDeprovisioner, StaticProvisioner
from karpenter_core.runtime.clock import format_time
from karpenter_core.runtime.options import Options
from karpenter_core.runtime.reconciler import ObjectKey, Result
from karpenter_core.testing import Environment
from karpenter_core.testing import builders as b

START = b.START
NODEPOOL_LABEL = "karpenter.sh/nodepool"
_ids = itertools.count(1)


class World(Environment):
    def __init__(self, options: Options | None = None) -> None:
        super().__init__(options=options, controllers=(), kube_scheduler=False, kubelet=False)
        self.cluster.set_synced(True)
        self.provisioner = StaticProvisioner(self.ctx)
        self.deprovisioner = StaticDeprovisioner(self.ctx)

    # -- objects --

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
        pool = b.nodepool(
            name,
            requirements=[b.requirement("kubernetes.io/os", "In", "linux")],
            labels=labels,
            expire_after=expire_after,
            replicas=replicas,
            limits=limits,
        )
        pool["status"] = {
            "conditions": [
                b.condition(t, ready or t != "Ready") for t in b.NODEPOOL_READY_CONDITIONS
            ]
        }
        return self.create(pool)

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
        claim = b.nodeclaim(name, labels=labels, expire_after=expire_after)
        if launched:
            claim = b.nodeclaim(
                name,
                labels=labels,
                expire_after=expire_after,
                provider_id=pid,
                node_name=name,
                capacity=cap,
                conditions=["Launched", "Registered"],
            )
        claim["metadata"]["creationTimestamp"] = format_time(created_at)
        self.cluster.update_nodeclaim(self.create(claim))
        if launched:
            node_labels = {**labels, "karpenter.sh/registered": "true"}
            node = self.create(b.node(name, labels=node_labels, provider_id=pid, capacity=cap))
            self.cluster.update_node(node)
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
        created = self.create(
            b.pod(
                f"pod-{next(_ids)}",
                node_name=node,
                cpu=cpu,
                annotations=annotations,
                owner=b.owner_reference(owner, "x", uid=f"u-{owner}"),
                priority=priority,
                start_time=START,
            )
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
