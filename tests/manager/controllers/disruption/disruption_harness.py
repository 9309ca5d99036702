"""A small world for disruption tests: the kit's Environment with no controllers running,
cluster state fed directly (no informers), the fake catalogue, and a DisruptionContext over
them. The decisions are functions of a snapshot: ``world.snapshot()`` takes one as the
controller does, and the helpers below publish what a decision says, as the controller
does, so a test can look at the events.

Upstream's default fixture (spec disruption §17): NodePool ``WhenEmptyOrUnderutilized``,
``consolidateAfter: 0s``, budget ``100%``; nodes Initialized and Consolidatable; pods owned
by a ReplicaSet.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from karpenter_core.apis.labels import (
    CAPACITY_TYPE_LABEL_KEY,
    LABEL_HOSTNAME,
    LABEL_INSTANCE_TYPE,
    LABEL_TOPOLOGY_ZONE,
    NODE_INITIALIZED_LABEL_KEY,
    NODE_REGISTERED_LABEL_KEY,
    NODEPOOL_LABEL_KEY,
)
from karpenter_core.cloudprovider.types import InstanceType
from karpenter_core.controllers.disruption.context import DisruptionContext
from karpenter_core.controllers.disruption.events import render
from karpenter_core.controllers.disruption.snapshot import take_snapshot
from karpenter_core.controllers.provisioning import provisioner_of
from karpenter_core.disruption.budgets import budget_mapping
from karpenter_core.disruption.candidates import filter_candidates, get_candidates
from karpenter_core.disruption.methods.consolidation import Consolidation
from karpenter_core.disruption.methods.drift import Drift
from karpenter_core.disruption.methods.emptiness import Emptiness
from karpenter_core.disruption.methods.spottospot import SPOT_TO_SPOT_FEATURE_GATE
from karpenter_core.disruption.methods.staticdrift import StaticDrift
from karpenter_core.disruption.notices import Notice
from karpenter_core.disruption.simulation import simulate_scheduling
from karpenter_core.disruption.snapshot import DisruptionSnapshot
from karpenter_core.disruption.types import (
    CLASS_GRACEFUL,
    BudgetMap,
    Candidate,
    Command,
    Decision,
    PassAware,
    ValidationError,
)
from karpenter_core.kube.client import NotFound
from karpenter_core.provisioning.scheduler import Results
from karpenter_core.runtime.options import Options
from karpenter_core.testing import KWOK_NODE_CLASS, Environment, FakeCloudProvider
from karpenter_core.testing import builders as b

KWOK_CLASS = KWOK_NODE_CLASS
START = b.START
_ids = itertools.count()


FakeProvider = FakeCloudProvider


class StubQueue:
    """A queue that holds nothing unless told (candidate tests): add provider ids to
    ``queued``."""

    def __init__(self) -> None:
        self.queued: set[str] = set()

    def has_any(self, *provider_ids: str) -> bool:
        return any(p in self.queued for p in provider_ids)

    def provider_ids(self) -> list[str]:
        return sorted(self.queued)


def _capacity(it: InstanceType | None) -> dict[str, str]:
    if it is None:
        return {"cpu": "4", "memory": "8Gi", "pods": "40"}
    return {
        "cpu": f"{it.capacity['cpu']}m",
        "memory": str(it.capacity["memory"] // 1000),
        "pods": str(it.capacity["pods"] // 1000),
    }


class World(Environment):
    """Cluster objects created in the API server *and* pushed into cluster state."""

    def __init__(
        self,
        instance_types: Sequence[InstanceType] | None = None,
        *,
        options: Options | None = None,
        queue: Any = None,
    ) -> None:
        super().__init__(
            FakeProvider(instance_types),
            options=options,
            controllers=(),
            kube_scheduler=False,
            kubelet=False,
        )
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

    def method(self, cls: Any) -> Any:
        """A method of class ``cls`` as its factory builds it (the built-ins' arguments;
        any other class is given the DisruptionContext, as a plugin's factory would be)."""
        if isinstance(cls, type) and issubclass(cls, Consolidation):
            gate = self.ctx.options.gate(SPOT_TO_SPOT_FEATURE_GATE)
            return cls(self.clock, spot_to_spot=gate)
        if isinstance(cls, type) and issubclass(cls, (Emptiness, Drift, StaticDrift)):
            return cls()
        return cls(self.dctx)

    def controller(self, *method_classes: Any, validation_period: float = 0.0) -> Any:
        """A DisruptionController running only ``method_classes`` (in that order) over
        the real queue; validation is immediate unless ``validation_period`` is given."""
        from karpenter_core.controllers.disruption.controller import DisruptionController

        q = self.real_queue()
        methods = [self.method(cls) for cls in method_classes]
        return DisruptionController(self.dctx, q, methods, validation_period=validation_period)

    # -- decisions, as the controller makes them --

    def snapshot(self, *, simulation: bool = True) -> DisruptionSnapshot:
        """The snapshot the controller would take now (with the simulation's inputs)."""
        return take_snapshot(self.dctx, simulation=simulation)

    def publish(self, notices: Sequence[Notice]) -> None:
        """Publish a decision's notices, as the controller does."""
        for notice in notices:
            self.recorder.publish(*render(notice))

    def candidates(
        self,
        disruption_class: str = CLASS_GRACEFUL,
        should_disrupt: Any = None,
        *,
        snapshot: DisruptionSnapshot | None = None,
    ) -> list[Candidate]:
        """The candidates of a fresh snapshot (kept by ``should_disrupt(candidate)`` when
        given), their notices published."""
        snap = snapshot if snapshot is not None else self.snapshot(simulation=False)
        found = get_candidates(snap, disruption_class)
        self.publish(found.notices)
        if should_disrupt is None:
            return list(found.candidates)
        notices: list[Notice] = []
        kept = filter_candidates(found.candidates, should_disrupt, notices)
        self.publish(notices)
        return kept

    def method_candidates(self, method: Any, snapshot: DisruptionSnapshot) -> list[Candidate]:
        """What the controller gives ``method``: its class's candidates (``begin_pass``
        called with all of them) that it keeps."""
        found = get_candidates(snapshot, method.disruption_class)
        self.publish(found.notices)
        if isinstance(method, PassAware):
            method.begin_pass(snapshot, found.candidates)
        notices: list[Notice] = []
        kept = filter_candidates(
            found.candidates, lambda c: method.should_disrupt(snapshot, c), notices
        )
        self.publish(notices)
        return kept

    def compute(
        self,
        method: Any,
        budgets: BudgetMap,
        candidates: Sequence[Candidate] | None = None,
        *,
        snapshot: DisruptionSnapshot | None = None,
    ) -> list[Command]:
        """``method``'s commands on a fresh snapshot (over its candidates unless given),
        its notices published; ``budgets`` is spent as the method spends it."""
        snap = snapshot if snapshot is not None else self.snapshot()
        cands = candidates if candidates is not None else self.method_candidates(method, snap)
        decision = method.compute_commands(snap, budgets, cands)
        if isinstance(decision, Decision):
            self.publish(decision.notices)
            return list(decision.commands)
        return list(decision)

    def validate(self, method: Any, command: Command) -> Command:
        """``method``'s validation of ``command`` on a fresh snapshot, its notices
        published (also when it fails)."""
        try:
            decision = method.validate(self.snapshot(), command)
        except ValidationError as e:
            self.publish(e.notices)
            raise
        self.publish(decision.notices)
        (validated,) = decision.commands
        return validated  # type: ignore[no-any-return]

    def simulate(self, candidates: Sequence[Candidate], *, consolidation: bool = False) -> Results:
        """The scheduling simulation of removing ``candidates``, on a fresh snapshot."""
        notices: list[Notice] = []
        results = simulate_scheduling(
            self.snapshot(), candidates, consolidation=consolidation, notices=notices
        )
        self.publish(notices)
        return results

    def budgets(self, reason: str = "Empty") -> BudgetMap:
        """The budget map for ``reason`` on a fresh snapshot, its notices published."""
        found = budget_mapping(self.snapshot(simulation=False), reason)
        self.publish(found.notices)
        return found.remaining

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
        cap = _capacity(it)
        pid = f"fake://{nodeclaim_name}"
        nc["metadata"]["labels"] = labels
        nc = self.kube.update(nc)
        now = self.clock.now()
        status = b.nodeclaim(
            nodeclaim_name,
            provider_id=pid,
            node_name=nodeclaim_name,
            capacity=cap,
            conditions=[b.condition(t, at=now) for t in ("Launched", "Registered", "Initialized")],
        )["status"]
        self.cluster.update_nodeclaim(self.set_status(nc, status))
        node_labels = {
            **labels,
            NODE_REGISTERED_LABEL_KEY: "true",
            NODE_INITIALIZED_LABEL_KEY: "true",
        }
        node = self.create(
            b.node(nodeclaim_name, labels=node_labels, provider_id=pid, capacity=cap)
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
        conds.append(b.condition("Initialized", at=self.clock.now()))
        self.set_status(nc, {"conditions": conds})

    def refresh(self, name: str) -> None:
        """Push the API's current Node and NodeClaim ``name`` into cluster state."""
        self.cluster.update_nodeclaim(self.kube.get("nodeclaims", name))
        self.cluster.update_node(self.kube.get("nodes", name))

    # -- objects --

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
        return self.create(
            b.nodepool(
                name,
                requirements=requirements,
                expire_after="Never",
                consolidation_policy=policy,
                consolidate_after=consolidate_after,
                budgets=budgets,
                replicas=replicas,
                limits=limits,
                ready=True,
            )
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
        cap = _capacity(next((i for i in self.provider.its if i.name == instance_type), None))
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
        conditions: list[str | dict[str, Any]] = ["Launched", "Registered"]
        if initialized:
            conditions.append("Initialized")
        if consolidatable:
            conditions.append("Consolidatable")
        if drifted:
            conditions.append(b.condition("Drifted", at=drifted_at, reason="NodePoolDrifted"))
        nc = self.create(
            b.nodeclaim(
                name,
                labels=lbls,
                expire_after="Never",
                termination_grace_period=termination_grace_period,
                finalizers=["karpenter.sh/termination"] if nodeclaim_deleting else None,
                provider_id=pid,
                node_name=name if with_node else "",
                capacity=cap,
                conditions=conditions,
            )
        )
        if nodeclaim_deleting:
            self.kube.delete("nodeclaims", name)
            nc = self.kube.get("nodeclaims", name)
        self.cluster.update_nodeclaim(nc)
        if with_node:
            node_labels = {**lbls, NODE_REGISTERED_LABEL_KEY: "true"}
            if initialized:
                node_labels[NODE_INITIALIZED_LABEL_KEY] = "true"
            node = self.create(
                b.node(
                    name,
                    labels=node_labels,
                    annotations=node_annotations,
                    provider_id=pid,
                    capacity=cap,
                    ready=ready,
                )
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
        all_annotations = dict(annotations or {})
        if owner == "Node":
            all_annotations["kubernetes.io/config.mirror"] = "x"
        created = self.create(
            b.pod(
                name,
                namespace=namespace,
                labels=labels or {"app": "web"},
                annotations=all_annotations,
                owner=b.owner_reference(owner, f"{owner.lower()}-x", uid=f"u-{owner}")
                if owner
                else None,
                finalizers=["test/hold"] if terminating else None,
                cpu=cpu,
                priority=priority,
                tolerations=tolerations,
                node_name=node,
                phase=phase,
                unschedulable=not node,
                ready=ready if node else None,
                start_time=start_time if node else None,
            )
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
        return self.create(
            b.pdb(
                name,
                namespace=namespace,
                labels=labels,
                max_unavailable=max_unavailable,
                min_available=min_available,
                disruptions_allowed=disruptions_allowed,
            )
        )

    # -- reading --

    def pid(self, name: str) -> str:
        return f"fake://{name}"
