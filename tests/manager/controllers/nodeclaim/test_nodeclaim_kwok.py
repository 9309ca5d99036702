"""The NodeClaim controllers driving the KWOK provider, with the simulated kubelet and node
termination: a NodeClaim's whole life, and a restart in the middle of a launch."""

from __future__ import annotations

from typing import Any

import pytest
from nodeclaim_helpers import FlakyKube, Server

from karpenter_core.apis import labels as wk
from karpenter_core.kube.client import KubeClient
from karpenter_core.runtime.clock import VirtualClock
from karpenter_core.testing import Environment

kwok = pytest.importorskip("karpenter_kwok.provider")
from karpenter_kwok.instance_types import load_instance_types  # noqa: E402
from karpenter_kwok.labels import KWOK_NODE_CLASS  # noqa: E402

INSTANCE_TYPE = "c-2x-amd64-linux"


class Karpenter(Environment):
    """One Karpenter process (the NodeClaim controllers) plus the cluster's kubelet and
    node termination, over a cluster and a KWOK "cloud" that outlive it."""

    def __init__(
        self,
        server: Server,
        clock: VirtualClock,
        provider: Any,
        kube: KubeClient | None = None,
        *,
        with_termination: bool = True,
    ) -> None:
        super().__init__(
            provider,
            controllers=["nodeclaim", *(["node.termination"] if with_termination else [])],
            kube_scheduler=False,
            server=server,
            clock=clock,
            kube=(lambda _: kube) if kube is not None else None,
        )

    def nodeclaim(self, name: str) -> dict[str, Any]:
        return self.server.get("nodeclaims", name)

    def condition(self, name: str, type_: str) -> str | None:
        conds = (self.nodeclaim(name).get("status") or {}).get("conditions") or []
        return next((c["status"] for c in conds if c["type"] == type_), None)


def cloud() -> tuple[Server, VirtualClock, Any]:
    clock = VirtualClock()
    server = Server(clock)
    provider = kwok.KwokCloudProvider(load_instance_types(None), kube=server, clock=clock)
    return server, clock, provider


def create_nodeclaim(server: Server, name: str = "nc") -> None:
    server.create(
        {
            "apiVersion": "karpenter.sh/v1",
            "kind": "NodeClaim",
            "metadata": {"name": name},
            "spec": {
                "nodeClassRef": {
                    "group": KWOK_NODE_CLASS.group,
                    "kind": KWOK_NODE_CLASS.kind,
                    "name": "default",
                },
                "requirements": [
                    {"key": wk.LABEL_INSTANCE_TYPE, "operator": "In", "values": [INSTANCE_TYPE]},
                    {"key": wk.CAPACITY_TYPE_LABEL_KEY, "operator": "In", "values": ["on-demand"]},
                ],
                "resources": {"requests": {"cpu": "1", "pods": "1"}},
            },
        }
    )


def test_a_kwok_nodeclaim_launches_registers_initializes_and_terminates() -> None:
    server, clock, provider = cloud()
    karpenter = Karpenter(server, clock, provider)
    create_nodeclaim(server)
    karpenter.manager.run_for(30)
    assert karpenter.condition("nc", "Ready") == "True"
    (node,) = server.list("nodes")
    assert node["spec"]["providerID"] == karpenter.nodeclaim("nc")["status"]["providerID"]
    assert node["metadata"]["labels"][wk.NODE_INITIALIZED_LABEL_KEY] == "true"
    assert node["metadata"]["labels"][wk.LABEL_INSTANCE_TYPE] == INSTANCE_TYPE
    assert not node["spec"].get("taints")
    server.delete("nodeclaims", "nc")
    karpenter.manager.run_for(120)
    assert list(server.list("nodeclaims")) == []
    assert list(server.list("nodes")) == []


def test_a_restart_in_the_middle_of_a_kwok_launch_leaks_no_node() -> None:
    server, clock, provider = cloud()
    flaky = FlakyKube(server)
    flaky.fail_status_patches = 10**6  # the launch is never recorded by this process
    first = Karpenter(server, clock, provider, kube=flaky, with_termination=False)  # type: ignore[arg-type]
    create_nodeclaim(server)
    first.manager.settle()
    clock.advance(5)  # KWOK registers the Node; the first process is gone
    second = Karpenter(server, clock, provider)
    second.manager.run_for(30)
    nodes = list(server.list("nodes"))
    assert len(nodes) == 1, "the instance launched before the restart is adopted, not duplicated"
    assert nodes[0]["spec"]["providerID"] == second.nodeclaim("nc")["status"]["providerID"]
    assert second.condition("nc", "Ready") == "True"
