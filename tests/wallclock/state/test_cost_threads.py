"""The cost tracker under concurrent adds and deletes (serve's workers) loses no update."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from karpenter_core import metrics
from karpenter_core.apis.labels import (
    CAPACITY_TYPE_LABEL_KEY,
    LABEL_INSTANCE_TYPE,
    LABEL_TOPOLOGY_ZONE,
    NODEPOOL_LABEL_KEY,
)
from karpenter_core.cloudprovider.types import InstanceType
from karpenter_core.runtime.clock import VirtualClock
from karpenter_core.sim.apiserver import InMemoryApiServer
from karpenter_core.state.cost import (
    ClusterCost,
    OfferingCount,
    OfferingKey,
)
from karpenter_core.testing import builders as b
from karpenter_core.testing import fakecatalog
from karpenter_core.testing.fake import FakeCloudProvider

SPOT = 1.50
ON_DEMAND = 3.00
ZONE = "test-zone-1"


@pytest.fixture(autouse=True)
def _clean_metrics() -> Iterator[None]:
    metrics.reset()
    yield
    metrics.reset()


def catalog(spot: float = SPOT, on_demand: float = ON_DEMAND) -> list[InstanceType]:
    """Upstream's test catalogue: one type, a spot and an on-demand offering in one zone."""
    return [
        fakecatalog.instance_type(
            "test-instance",
            offerings=[
                fakecatalog.offering("spot", ZONE, spot),
                fakecatalog.offering("on-demand", ZONE, on_demand),
            ],
        )
    ]


def nodeclaim(
    name: str,
    pool: str = "pool-a",
    capacity_type: str = "spot",
    instance_type: str = "test-instance",
    zone: str = ZONE,
) -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodeClaim",
        "metadata": {
            "name": name,
            "labels": {
                NODEPOOL_LABEL_KEY: pool,
                CAPACITY_TYPE_LABEL_KEY: capacity_type,
                LABEL_INSTANCE_TYPE: instance_type,
                LABEL_TOPOLOGY_ZONE: zone,
            },
        },
    }


class Env:
    """A ClusterCost alone over an API server holding the NodePools: the unit under test
    has no controllers, so this is not the kit's Environment."""

    def __init__(self, pools: tuple[str, ...] = ("pool-a", "pool-b")) -> None:
        self.clock = VirtualClock()
        self.kube = InMemoryApiServer(self.clock)
        self.provider = FakeCloudProvider(catalog())
        for p in pools:
            self.kube.create(b.nodepool(p))
        self.cost = ClusterCost(self.kube, self.provider)

    def add(self, *ncs: dict[str, Any]) -> None:
        for nc in ncs:
            assert self.cost.update_nodeclaim(nc) is None


@pytest.fixture
def env() -> Env:
    return Env()


def spot_key(instance_type: str = "test-instance") -> OfferingKey:
    return OfferingKey(ZONE, "spot", instance_type)


def test_concurrent_adds_and_deletes_lose_no_update(env: Env) -> None:
    def worker(k: int) -> None:
        for i in range(50):
            env.add(nodeclaim(f"w{k}-{i}"))
        for i in range(0, 50, 2):
            env.cost.delete_nodeclaim(f"w{k}-{i}")

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert env.cost.offerings("pool-a") == {spot_key(): OfferingCount(4 * 25, SPOT)}
