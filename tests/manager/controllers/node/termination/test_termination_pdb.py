"""Draining a node whose pods a PodDisruptionBudget covers: the budget is never exceeded,
no replica is lost, and the node goes only after its pods.

A fake ReplicaSet controller replaces every pod that starts terminating with a new one on
another node, which (like a real pod) becomes Ready only after a start-up delay; the PDB
(minAvailable 4 of 5) therefore lets one pod go at a time, and only after its replacement
is Ready. The eviction API is observed from outside: every eviction that succeeded is
checked against the number of healthy replicas counted independently of the server's
PDB status.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from termination_helpers import RS_OWNER, Env

from karpenter_core import metrics
from karpenter_core.kube.client import TooManyRequests
from karpenter_core.runtime.reconciler import ObjectKey, Result, Watch
from karpenter_core.testing import builders as b

APP = {"app": "web"}
REPLICAS = 5
MIN_AVAILABLE = 4
ORIGINAL_ON_DRAINING_NODE = ["web-0", "web-1", "web-2", "web-3"]


def _healthy(pod: dict[str, Any]) -> bool:
    if pod["metadata"].get("deletionTimestamp"):
        return False
    return any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in (pod.get("status") or {}).get("conditions") or []
    )


class FakeReplicaSet:
    """Keeps REPLICAS non-terminating pods labelled app=web, creating new ones on node-b."""

    def __init__(self, env: Env) -> None:
        self.env = env
        self.counter = itertools.count(REPLICAS)
        self.created: list[str] = []

    def reconcile(self, key: ObjectKey) -> Result:
        pods = self.env.server.list("pods", "default", label_selector="app=web").items
        live = [p for p in pods if not p["metadata"].get("deletionTimestamp")]
        for _ in range(REPLICAS - len(live)):
            name = f"web-{next(self.counter)}"
            self.env.pod(name, node="node-b", labels=APP, grace=30, running=False)
            self.created.append(name)
        return Result()


@pytest.mark.parametrize("seed", [None, 1, 7])
def test_a_pdb_covered_drain_never_exceeds_the_budget_and_loses_no_replica(
    seed: int | None,
) -> None:
    env = Env(startup=20, seed=seed)
    rs = FakeReplicaSet(env)
    env.manager.add_controller(
        "test.replicaset",
        rs,
        watches=[Watch("pods", mapper=lambda _t, _o: [ObjectKey("default", "web")])],
    )
    node_a = env.node("node-a")
    env.node("node-b")
    env.nodeclaim(node_a)
    for name in ORIGINAL_ON_DRAINING_NODE:
        env.pod(name, node="node-a", labels=APP, grace=30)
    env.pod("web-4", node="node-b", labels=APP, grace=30)
    env.create(b.pdb("web", labels=APP, min_available=MIN_AVAILABLE))

    evictions: list[tuple[float, str, int]] = []
    refusals: list[str] = []
    real_evict = env.server.evict

    def observed_evict(name: str, namespace: str, **kw: Any) -> None:
        before = [p for p in env.server.list("pods", namespace, label_selector="app=web").items]
        healthy_before = sum(1 for p in before if _healthy(p))
        try:
            real_evict(name, namespace, **kw)
        except TooManyRequests:
            refusals.append(name)
            raise
        evictions.append((env.clock.monotonic(), name, healthy_before))

    env.server.evict = observed_evict  # type: ignore[method-assign]

    env.delete_node("node-a")
    gone_at: dict[str, float] = {}
    node_gone_at: float | None = None
    while env.clock.monotonic() < 3600:
        env.manager.step()
        pods = env.server.list("pods", "default", label_selector="app=web").items
        # The budget holds at every step, whatever order the controllers ran in.
        assert sum(1 for p in pods if _healthy(p)) >= MIN_AVAILABLE
        names = {p["metadata"]["name"] for p in pods}
        now = env.clock.monotonic()
        for original in ORIGINAL_ON_DRAINING_NODE:
            if original not in names:
                gone_at.setdefault(original, now)
        if env.get_node("node-a") is None:
            node_gone_at = now
            break
    assert node_gone_at is not None, "node-a was never released"

    # Every original pod on node-a left through the Eviction API, each only while the
    # budget had room for it, and none was force-deleted.
    assert sorted(name for _, name, _ in evictions) == ORIGINAL_ON_DRAINING_NODE
    assert all(healthy > MIN_AVAILABLE for _, _, healthy in evictions)
    assert refusals, "the PDB should have refused some evictions"
    assert env.events("Disrupted") == []
    # One at a time: each eviction waited for the previous replacement to become Ready.
    times = sorted(t for t, _, _ in evictions)
    assert all(b - a >= 20 for a, b in itertools.pairwise(times))
    # The node went only after its pods, and no replica was lost.
    assert node_gone_at >= max(gone_at.values())
    env.run_for(60)
    pods = env.server.list("pods", "default", label_selector="app=web").items
    assert sum(1 for p in pods if _healthy(p)) == REPLICAS
    assert all(p["spec"]["nodeName"] == "node-b" for p in pods)
    assert metrics.sample("karpenter_pods_eviction_requests_total", {"code": "200"}) == 4
    assert metrics.sample("karpenter_pods_eviction_requests_total", {"code": "429"}) == len(
        refusals
    )


def test_a_max_unavailable_budget_drains_one_pod_at_a_time_without_replacements() -> None:
    env = Env()
    node = env.node()
    env.nodeclaim(node)
    for i in range(3):
        env.pod(f"p{i}", labels=APP, grace=15, owner=RS_OWNER)
    env.create(b.pdb("web", labels=APP, max_unavailable=1))
    terminating_counts: list[int] = []
    real_evict = env.server.evict

    def observed_evict(name: str, namespace: str, **kw: Any) -> None:
        real_evict(name, namespace, **kw)
        pods = env.server.list("pods", namespace, label_selector="app=web").items
        terminating_counts.append(sum(1 for p in pods if p["metadata"].get("deletionTimestamp")))

    env.server.evict = observed_evict  # type: ignore[method-assign]
    env.delete_node()
    env.run_for(600)
    assert env.get_node() is None
    assert terminating_counts == [1, 1, 1]
