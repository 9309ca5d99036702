"""Test doubles and builders for the NodeClaim controller tests.

``Env`` is the kit's Environment running the registry's ``nodeclaim`` package on the
suite's provider: the kit's fake on one instance type, reporting what these tests check
the lifecycle copies (an image id, a provider label and annotation).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from karpenter_core import metrics
from karpenter_core.apis import labels as wk
from karpenter_core.apis.v1 import NodeClaim
from karpenter_core.cloudprovider.protocol import NodeClassKind
from karpenter_core.cloudprovider.types import InstanceType, InstanceTypeOverhead, Offering
from karpenter_core.hookspecs import NodeLifecycleHookSpec
from karpenter_core.kube.client import KubeClient
from karpenter_core.plugins import PluginContributions
from karpenter_core.runtime.clock import VirtualClock
from karpenter_core.runtime.options import Options
from karpenter_core.scheduling.requirements import IN, Requirement, Requirements
from karpenter_core.sim.apiserver import InMemoryApiServer
from karpenter_core.testing import TEST_NODE_CLASS, Environment
from karpenter_core.testing import builders as b
from karpenter_core.testing import fake as testing_fake

NODE_CLASS = TEST_NODE_CLASS
OTHER_NODE_CLASS = NodeClassKind("other.test.sh", "OtherNodeClass", "v1")
GI = 1 << 30


def fake_instance_type(
    name: str = "fake-large",
    zone: str = "zone-a",
    capacity_type: str = "on-demand",
    extended: dict[str, int] | None = None,
) -> InstanceType:
    """The instance type the fake launches: one offering, in ``zone``/``capacity_type``;
    4 CPU and 16Gi of which 3800m and 15Gi are allocatable, plus ``extended`` resources
    (whole units)."""
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
        capacity={
            "cpu": 4000,
            "memory": 16 * GI * 1000,
            "pods": 110_000,
            **{k: v * 1000 for k, v in (extended or {}).items()},
        },
        overhead=InstanceTypeOverhead(kube_reserved={"cpu": 200, "memory": GI * 1000}),
    )


class FakeCloudProvider(testing_fake.FakeCloudProvider):
    """The kit's fake on :func:`fake_instance_type`, for ``NODE_CLASS``; what it launches
    also carries an image id, the provider's ``team`` label and a ``fake.test/launched``
    annotation (instead of the claim's own), which the lifecycle must copy."""

    def __init__(self, clock: VirtualClock | None = None) -> None:
        super().__init__([fake_instance_type()], node_classes=[NODE_CLASS])

    def launched(
        self, nodeclaim: NodeClaim, instance_type: InstanceType, offering: Offering
    ) -> dict[str, Any]:
        out = super().launched(nodeclaim, instance_type, offering)
        out["metadata"]["labels"]["team"] = "provider"
        out["metadata"]["annotations"] = {"fake.test/launched": "yes"}
        out["status"]["imageID"] = "img-1"
        return out


Server = InMemoryApiServer


class Env(Environment):
    """The registry's ``nodeclaim`` package on the kit's Environment (no simulated
    kube-scheduler or kubelet: tests register Nodes by hand). ``kube`` wraps ``server``
    (a client that fails on cue); ``server``/``clock``/``provider`` of another Env make
    this one a restarted operator over the same cluster and cloud. ``hooks`` are node
    registration hooks, as a plugin's ``karpenter_node_lifecycle_hooks`` gives them."""

    def __init__(
        self,
        *,
        options: Options | None = None,
        hooks: Sequence[Any] = (),
        kube: KubeClient | None = None,
        server: InMemoryApiServer | None = None,
        clock: VirtualClock | None = None,
        provider: FakeCloudProvider | None = None,
    ) -> None:
        plugins = None
        if hooks:
            specs = tuple(NodeLifecycleHookSpec(h.name, h.registered) for h in hooks)
            plugins = PluginContributions(node_lifecycle_hooks=specs)
        super().__init__(
            provider or FakeCloudProvider(),
            options=options,
            controllers=["nodeclaim"],
            kube_scheduler=False,
            kubelet=False,
            server=server,
            clock=clock,
            kube=(lambda _: kube) if kube is not None else None,
            plugins=plugins,
            reset_metrics=server is None,
        )

    # ------------------------------------------------------------------ reading

    def nodeclaim(self, name: str) -> dict[str, Any]:
        return self.server.get("nodeclaims", name)

    def node(self, name: str) -> dict[str, Any]:
        return self.server.get("nodes", name)

    def condition(self, name: str, type_: str) -> dict[str, Any] | None:
        conds = (self.nodeclaim(name).get("status") or {}).get("conditions") or []
        return next((c for c in conds if c["type"] == type_), None)

    # ------------------------------------------------------------------ building

    def create_nodepool(self, name: str = "default") -> dict[str, Any]:
        return self.server.create(b.nodepool(name, node_class=NODE_CLASS))

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
        """An on-demand NodeClaim asking for one CPU and one pod unless told."""
        return self.server.create(
            b.nodeclaim(
                name,
                nodepool=nodepool,
                labels=labels,
                annotations=annotations,
                node_class=node_class,
                requirements=[b.requirement(wk.CAPACITY_TYPE_LABEL_KEY, "In", "on-demand")],
                requests=requests or {"cpu": "1", "pods": "1"},
                taints=taints or (),
                startup_taints=startup_taints or (),
                termination_grace_period=termination_grace_period,
                finalizers=finalizers,
            )
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
        node_taints = list(taints or [])
        if unregistered_taint:
            node_taints.append({"key": wk.UNREGISTERED_TAINT_KEY, "effect": "NoExecute"})
        return self.server.create(
            b.node(
                name or f"node-{nodeclaim_name}",
                labels=labels,
                taints=node_taints,
                provider_id=nc["status"]["providerID"],
                capacity=capacity or {"cpu": "4", "memory": "16Gi", "pods": "110"},
                allocatable=allocatable or {"cpu": "3800m", "memory": "15Gi", "pods": "110"},
                ready=ready,
                owner=b.owner_reference(nc, controller=False, block_owner_deletion=True)
                if owner
                else None,
            )
        )

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
