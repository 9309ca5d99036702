"""Test doubles and builders for the NodeClaim controller tests.

``Env`` wires the controllers the way the operator does (``register(manager, ctx)``) on an
``InMemoryApiServer`` and a ``VirtualClock``; ``FakeCloudProvider`` is a small provider
whose failures a test scripts.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any

from karpenter_core import metrics
from karpenter_core.apis import labels as wk
from karpenter_core.apis.v1 import NodeClaim
from karpenter_core.cloudprovider.errors import NodeClaimNotFoundError
from karpenter_core.cloudprovider.protocol import NodeClassKind, RepairPolicy
from karpenter_core.cloudprovider.types import InstanceType, Offering
from karpenter_core.controllers.nodeclaim import register
from karpenter_core.hookspecs import NodeLifecycleHookSpec
from karpenter_core.kube.client import KubeClient
from karpenter_core.plugins import PluginContributions
from karpenter_core.runtime.clock import VirtualClock
from karpenter_core.runtime.context import ControllerContext
from karpenter_core.runtime.events import EventRecorder
from karpenter_core.runtime.manager import Manager
from karpenter_core.runtime.options import Options
from karpenter_core.scheduling.requirements import IN, Requirement, Requirements
from karpenter_core.sim.apiserver import InMemoryApiServer

NODE_CLASS = NodeClassKind("karpenter.test.sh", "TestNodeClass", "v1")
OTHER_NODE_CLASS = NodeClassKind("other.test.sh", "OtherNodeClass", "v1")


def fake_instance_type(
    name: str = "fake-large", zone: str = "zone-a", capacity_type: str = "on-demand"
) -> InstanceType:
    """The instance type the fake launches: one offering, in ``zone``/``capacity_type``."""
    offering = Offering(
        requirements=Requirements(
            Requirement.new(wk.LABEL_TOPOLOGY_ZONE, IN, [zone]),
            Requirement.new(wk.CAPACITY_TYPE_LABEL_KEY, IN, [capacity_type]),
        ),
        price=1.0,
        available=True,
    )
    return InstanceType(
        name=name,
        requirements=Requirements(Requirement.new(wk.LABEL_INSTANCE_TYPE, IN, [name])),
        offerings=(offering,),
        capacity={"cpu": 4000, "memory": 16 * 1024**3 * 1000, "pods": 110_000},
    )


class FakeCloudProvider:
    """Launches pretend instances; ``errors`` are raised by the next ``create`` calls.

    ``create_then_raise`` makes the next create launch an instance *and* then raise (a
    timed-out API call that did go through). ``delete_polls`` is how many ``delete`` calls
    an instance survives before ``NodeClaimNotFoundError``.
    """

    def __init__(self, clock: VirtualClock) -> None:
        self.clock = clock
        self.instances: dict[str, NodeClaim] = {}
        self.errors: list[BaseException] = []
        self.create_then_raise: BaseException | None = None
        self.created: list[str] = []
        self.deleted: list[str] = []
        self.delete_calls: list[str] = []
        self.delete_polls = 0
        self._polls: dict[str, int] = {}
        self.on_create: Callable[[NodeClaim], None] | None = None
        self.list_error: BaseException | None = None
        self.seq = 0
        self.instance_types: list[InstanceType] = [fake_instance_type()]
        self.drift_reason = ""

    @property
    def name(self) -> str:
        return "fake"

    def create(self, nodeclaim: NodeClaim) -> NodeClaim:
        if self.on_create is not None:
            self.on_create(nodeclaim)
        if self.errors:
            raise self.errors.pop(0)
        self.seq += 1
        pid = f"fake:///{nodeclaim.name}/{self.seq}"
        launched = {
            "apiVersion": "karpenter.sh/v1",
            "kind": "NodeClaim",
            "metadata": {
                "name": nodeclaim.name,
                "labels": {
                    wk.LABEL_INSTANCE_TYPE: "fake-large",
                    wk.LABEL_TOPOLOGY_ZONE: "zone-a",
                    wk.CAPACITY_TYPE_LABEL_KEY: "on-demand",
                    "team": "provider",
                },
                "annotations": {"fake.test/launched": "yes"},
            },
            "spec": nodeclaim.spec.to_dict(),
            "status": {
                "providerID": pid,
                "imageID": "img-1",
                "capacity": {"cpu": "4", "memory": "16Gi", "pods": "110"},
                "allocatable": {"cpu": "3800m", "memory": "15Gi", "pods": "110"},
            },
        }
        instance = NodeClaim.from_dict(launched)
        self.instances[pid] = instance
        self.created.append(nodeclaim.name)
        if self.create_then_raise is not None:
            err, self.create_then_raise = self.create_then_raise, None
            raise err
        return instance

    def delete(self, nodeclaim: NodeClaim) -> None:
        pid = nodeclaim.provider_id
        self.delete_calls.append(pid)
        if pid not in self.instances:
            raise NodeClaimNotFoundError(f"instance {pid} not found")
        seen = self._polls.get(pid, 0)
        if seen < self.delete_polls:
            self._polls[pid] = seen + 1
            return
        del self.instances[pid]
        self.deleted.append(pid)

    def get(self, provider_id: str) -> NodeClaim:
        try:
            return self.instances[provider_id]
        except KeyError:
            raise NodeClaimNotFoundError(f"instance {provider_id} not found") from None

    def list(self) -> Sequence[NodeClaim]:
        if self.list_error is not None:
            raise self.list_error
        return list(self.instances.values())

    def get_instance_types(self, nodepool: Any) -> Sequence[InstanceType]:
        return list(self.instance_types)

    def is_drifted(self, nodeclaim: NodeClaim) -> str:
        return self.drift_reason

    def repair_policies(self) -> Sequence[RepairPolicy]:
        return ()

    def supported_node_classes(self) -> Sequence[NodeClassKind]:
        return (NODE_CLASS,)


Server = InMemoryApiServer


class Env:
    """Server, clock, provider, recorder, context and a manager with the controllers."""

    def __init__(
        self,
        *,
        options: Options | None = None,
        extras: dict[str, Any] | None = None,
        hooks: Sequence[Any] = (),
        kube: KubeClient | None = None,
        server: InMemoryApiServer | None = None,
        clock: VirtualClock | None = None,
        provider: FakeCloudProvider | None = None,
    ) -> None:
        self.clock = clock or VirtualClock()
        self.server = server or Server(self.clock)
        self.kube: KubeClient = kube or self.server
        self.provider = provider or FakeCloudProvider(self.clock)
        self.recorder = EventRecorder(self.clock)
        self.ctx = ControllerContext(
            kube=self.kube,
            clock=self.clock,
            cloud_provider=self.provider,
            recorder=self.recorder,
            options=options or Options(),
            extras=extras if extras is not None else {},
        )
        if hooks:  # registration hooks, as a plugin's karpenter_node_lifecycle_hooks
            self.ctx.plugins = PluginContributions(
                node_lifecycle_hooks=tuple(
                    NodeLifecycleHookSpec(h.name, h.registered) for h in hooks
                )
            )
        self.manager = Manager(self.clock, self.kube)
        register(self.manager, self.ctx)

    # ------------------------------------------------------------------ running

    def settle(self) -> None:
        self.manager.settle()

    def run_for(self, seconds: float) -> None:
        self.manager.run_for(seconds)

    # ------------------------------------------------------------------ reading

    def nodeclaim(self, name: str) -> dict[str, Any]:
        return self.server.get("nodeclaims", name)

    def node(self, name: str) -> dict[str, Any]:
        return self.server.get("nodes", name)

    def exists(self, resource: str, name: str) -> bool:
        return any(o["metadata"]["name"] == name for o in self.server.list(resource))

    def condition(self, name: str, type_: str) -> dict[str, Any] | None:
        conds = (self.nodeclaim(name).get("status") or {}).get("conditions") or []
        return next((c for c in conds if c["type"] == type_), None)

    def events(self, reason: str) -> list[Any]:
        return [e for e in self.recorder.events if e.reason == reason]

    # ------------------------------------------------------------------ building

    def create_nodepool(self, name: str = "default") -> dict[str, Any]:
        return self.server.create(
            {
                "apiVersion": "karpenter.sh/v1",
                "kind": "NodePool",
                "metadata": {"name": name},
                "spec": {
                    "template": {
                        "spec": {
                            "nodeClassRef": {
                                "group": NODE_CLASS.group,
                                "kind": NODE_CLASS.kind,
                                "name": "default",
                            },
                            "requirements": [],
                        }
                    }
                },
            }
        )

    def create_nodeclaim(
        self,
        name: str = "nc",
        *,
        nodepool: dict[str, Any] | None = None,
        labels: dict[str, str] | None = None,
        annotations: dict[str, str] | None = None,
        taints: list[dict[str, Any]] | None = None,
        startup_taints: list[dict[str, Any]] | None = None,
        requests: dict[str, str] | None = None,
        node_class: NodeClassKind = NODE_CLASS,
        termination_grace_period: str | None = None,
        finalizers: list[str] | None = None,
    ) -> dict[str, Any]:
        meta: dict[str, Any] = {"name": name, "labels": dict(labels or {})}
        if annotations:
            meta["annotations"] = dict(annotations)
        if finalizers:
            meta["finalizers"] = list(finalizers)
        if nodepool is not None:
            meta["labels"][wk.NODEPOOL_LABEL_KEY] = nodepool["metadata"]["name"]
            meta["ownerReferences"] = [
                {
                    "apiVersion": "karpenter.sh/v1",
                    "kind": "NodePool",
                    "name": nodepool["metadata"]["name"],
                    "uid": nodepool["metadata"]["uid"],
                    "blockOwnerDeletion": True,
                }
            ]
        spec: dict[str, Any] = {
            "nodeClassRef": {"group": node_class.group, "kind": node_class.kind, "name": "default"},
            "requirements": [
                {"key": wk.CAPACITY_TYPE_LABEL_KEY, "operator": "In", "values": ["on-demand"]}
            ],
            "resources": {"requests": dict(requests or {"cpu": "1", "pods": "1"})},
        }
        if taints:
            spec["taints"] = taints
        if startup_taints:
            spec["startupTaints"] = startup_taints
        if termination_grace_period is not None:
            spec["terminationGracePeriod"] = termination_grace_period
        return self.server.create(
            {"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim", "metadata": meta, "spec": spec}
        )

    def create_node_for(
        self,
        nodeclaim_name: str,
        *,
        name: str | None = None,
        ready: bool = True,
        unregistered_taint: bool = True,
        taints: list[dict[str, Any]] | None = None,
        labels: dict[str, str] | None = None,
        allocatable: dict[str, str] | None = None,
        capacity: dict[str, str] | None = None,
        owner: bool = False,
    ) -> dict[str, Any]:
        """A Node joining for the NodeClaim, as a kubelet would register it."""
        nc = self.nodeclaim(nodeclaim_name)
        pid = nc["status"]["providerID"]
        node_taints = list(taints or [])
        if unregistered_taint:
            node_taints.append({"key": wk.UNREGISTERED_TAINT_KEY, "effect": "NoExecute"})
        meta: dict[str, Any] = {
            "name": name or f"node-{nodeclaim_name}",
            "labels": dict(labels or {}),
        }
        if owner:
            meta["ownerReferences"] = [
                {
                    "apiVersion": "karpenter.sh/v1",
                    "kind": "NodeClaim",
                    "name": nodeclaim_name,
                    "uid": nc["metadata"]["uid"],
                    "blockOwnerDeletion": True,
                }
            ]
        node: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": meta,
            "spec": {"providerID": pid},
            "status": {
                "capacity": dict(capacity or {"cpu": "4", "memory": "16Gi", "pods": "110"}),
                "allocatable": dict(
                    allocatable or {"cpu": "3800m", "memory": "15Gi", "pods": "110"}
                ),
                "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
            },
        }
        if node_taints:
            node["spec"]["taints"] = node_taints
        return self.server.create(node)

    def set_node_ready(self, name: str, ready: bool) -> None:
        node = self.node(name)
        node["status"]["conditions"] = [{"type": "Ready", "status": "True" if ready else "False"}]
        self.server.update_status(node)

    def set_node_taints(self, name: str, taints: list[dict[str, Any]]) -> None:
        self.server.patch("nodes", name, {"spec": {"taints": taints}})

    def launched_and_registered(self, name: str = "nc", **kwargs: Any) -> dict[str, Any]:
        """A NodeClaim taken through launch and registration, with its Node Ready."""
        self.create_nodeclaim(name, **kwargs)
        self.settle()
        self.create_node_for(name)
        self.settle()
        return self.nodeclaim(name)


def sample(name: str, labels: dict[str, str]) -> float:
    """A metric sample's current value (0 when never observed)."""
    value = metrics.REGISTRY.get_sample_value(name, labels)
    return 0.0 if value is None else value


def disrupted(reason: str, nodepool: str = "", capacity_type: str = "") -> float:
    return sample(
        "karpenter_nodeclaims_disrupted_total",
        {
            "reason": reason,
            "nodepool": nodepool,
            "capacity_type": capacity_type,
            "consolidation_policy": "",
            "termination_mode": "graceful",
        },
    )


def minutes(n: float) -> float:
    return timedelta(minutes=n).total_seconds()


def deep(obj: Any) -> Any:
    return copy.deepcopy(obj)


class FlakyKube:
    """A KubeClient that fails chosen calls once, delegating everything else."""

    def __init__(self, server: InMemoryApiServer) -> None:
        self.server = server
        self.fail_status_patches = 0
        self.error: BaseException = RuntimeError("injected API failure")

    def patch(
        self, resource: Any, name: str, patch: Any, namespace: str | None = None, **kw: Any
    ) -> Any:
        if kw.get("subresource") == "status" and self.fail_status_patches > 0:
            self.fail_status_patches -= 1
            raise self.error
        return self.server.patch(resource, name, patch, namespace, **kw)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.server, name)
