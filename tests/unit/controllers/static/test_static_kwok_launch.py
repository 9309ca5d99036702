"""The KWOK provider launches a static NodePool's bare-template NodeClaim (no
instance-type requirement) by picking the cheapest type its requirements allow; any other
NodeClaim without an instance-type requirement is still refused."""

from __future__ import annotations

from typing import Any

import pytest
from karpenter_kwok.provider import KwokCloudProvider, KwokLaunchError

from karpenter_core.cloudprovider.errors import InsufficientCapacityError
from karpenter_core.runtime.clock import VirtualClock
from karpenter_core.sim.apiserver import InMemoryApiServer

ARCH = "kubernetes.io/arch"
SIZE = "karpenter.kwok.sh/instance-size"
CT = "karpenter.sh/capacity-type"


@pytest.fixture
def clock() -> VirtualClock:
    return VirtualClock()


@pytest.fixture
def kube(clock: VirtualClock) -> InMemoryApiServer:
    return InMemoryApiServer(clock)


@pytest.fixture
def provider(kube: InMemoryApiServer, clock: VirtualClock) -> KwokCloudProvider:
    return KwokCloudProvider.from_settings({}, environ={}, kube=kube, clock=clock)


def nodepool(kube: InMemoryApiServer, replicas: int | None) -> None:
    spec: dict[str, Any] = {
        "template": {
            "spec": {
                "nodeClassRef": {
                    "group": "karpenter.kwok.sh",
                    "kind": "KWOKNodeClass",
                    "name": "default",
                },
                "requirements": [],
            }
        }
    }
    if replicas is not None:
        spec["replicas"] = replicas
    kube.create(
        {
            "apiVersion": "karpenter.sh/v1",
            "kind": "NodePool",
            "metadata": {"name": "pool"},
            "spec": spec,
        }
    )


def bare(requirements: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodeClaim",
        "metadata": {"name": "pool-abcde", "labels": {"karpenter.sh/nodepool": "pool"}},
        "spec": {
            "requirements": requirements,
            "nodeClassRef": {
                "group": "karpenter.kwok.sh",
                "kind": "KWOKNodeClass",
                "name": "default",
            },
        },
    }


def cheapest(provider: KwokCloudProvider, ok: Any) -> tuple[str, float]:
    """The catalogue's cheapest (type, price) among offerings whose labels ``ok`` accepts."""
    best: tuple[str, float] | None = None
    for it in provider.get_instance_types():
        labels = {k: min(it.requirements.get(k).values) for k in (ARCH, SIZE)}
        for o in it.offerings:
            if not o.available or not ok(labels, o.capacity_type):
                continue
            if best is None or o.price < best[1]:
                best = (it.name, o.price)
    assert best is not None
    return best


def test_static_claim_without_types_gets_the_cheapest_allowed_type(
    provider: KwokCloudProvider, kube: InMemoryApiServer
) -> None:
    nodepool(kube, replicas=2)
    reqs = [
        {"key": ARCH, "operator": "In", "values": ["arm64"]},
        {"key": SIZE, "operator": "In", "values": ["4"]},
        {"key": CT, "operator": "In", "values": ["on-demand"]},
    ]
    created = provider.create(bare(reqs))
    want, _ = cheapest(
        provider, lambda lb, ct: lb[ARCH] == "arm64" and lb[SIZE] == "4" and ct == "on-demand"
    )
    labels = created.metadata.labels
    assert labels["node.kubernetes.io/instance-type"] == want
    assert labels[ARCH] == "arm64"
    assert labels[CT] == "on-demand"


def test_static_claim_with_no_requirements_gets_the_cheapest_type_of_all(
    provider: KwokCloudProvider, kube: InMemoryApiServer
) -> None:
    nodepool(kube, replicas=1)
    created = provider.create(bare([]))
    want, _ = cheapest(provider, lambda lb, ct: True)
    assert created.metadata.labels["node.kubernetes.io/instance-type"] == want


def test_static_claim_nothing_satisfies_is_insufficient_capacity(
    provider: KwokCloudProvider, kube: InMemoryApiServer
) -> None:
    nodepool(kube, replicas=1)
    with pytest.raises(InsufficientCapacityError, match="no available offering of any"):
        provider.create(bare([{"key": SIZE, "operator": "In", "values": ["9999"]}]))


@pytest.mark.parametrize("replicas", [None, "absent"])
def test_dynamic_or_unknown_pool_claim_without_types_is_still_an_error(
    provider: KwokCloudProvider, kube: InMemoryApiServer, replicas: Any
) -> None:
    if replicas is None:
        nodepool(kube, replicas=None)
    with pytest.raises(KwokLaunchError, match="instance-type requirement"):
        provider.create(bare([]))
