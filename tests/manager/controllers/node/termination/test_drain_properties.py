"""Properties of the drain over random pod mixes: whatever the pods, the node is released,
every drainable pod left through the eviction queue in tier order, and pods the drain must
leave alone (tolerating the disrupted taint, mirror pods) were never touched."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from termination_helpers import Env

from karpenter_core.apis import labels as wk
from karpenter_core.controllers.node.termination.terminator import drain_tiers

KINDS = ("app", "daemon", "critical", "critical-daemon", "tolerant", "mirror", "done")

pod_specs = st.lists(
    st.tuples(st.sampled_from(KINDS), st.integers(min_value=0, max_value=40)),
    min_size=0,
    max_size=8,
)


def _create(env: Env, i: int, kind: str, grace: int, node_uid: str) -> dict[str, Any]:
    name = f"{kind}-{i}"
    daemon = {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "ds", "uid": "ds-uid"}
    if kind == "app":
        return env.pod(name, grace=grace)
    if kind == "daemon":
        return env.pod(name, grace=grace, owner=daemon)
    if kind == "critical":
        return env.pod(name, grace=grace, priority_class="system-cluster-critical")
    if kind == "critical-daemon":
        return env.pod(name, grace=grace, priority_class="system-node-critical", owner=daemon)
    if kind == "tolerant":
        return env.pod(
            name, grace=grace, tolerations=[{"key": wk.DISRUPTED_TAINT_KEY, "operator": "Exists"}]
        )
    if kind == "mirror":
        owner = {"apiVersion": "v1", "kind": "Node", "name": "node-a", "uid": node_uid}
        return env.pod(name, grace=grace, owner=owner)
    return env.pod(name, grace=grace, phase="Succeeded")


@settings(max_examples=40, deadline=None)
@given(pod_specs)
def test_any_pod_mix_drains_in_tier_order_and_releases_the_node(
    specs: list[tuple[str, int]],
) -> None:
    env = Env()
    node = env.node()
    env.nodeclaim(node)
    pods = [
        _create(env, i, kind, grace, node["metadata"]["uid"])
        for i, (kind, grace) in enumerate(specs)
    ]
    drainable = [
        p for p in pods if p["metadata"]["name"].split("-")[0] not in ("tolerant", "mirror", "done")
    ]
    tier_of = {
        p["metadata"]["name"]: t for t, tier in enumerate(drain_tiers(drainable)) for p in tier
    }
    evicted_at: dict[str, float] = {}
    real_evict = env.server.evict

    def observed(name: str, namespace: str, **kw: Any) -> None:
        real_evict(name, namespace, **kw)
        evicted_at[name] = env.clock.monotonic()

    env.server.evict = observed  # type: ignore[method-assign]
    env.delete_node()
    gone_at: dict[str, float] = {}
    while env.get_node() is not None and env.clock.monotonic() < 1800:
        env.manager.step()
        for name in tier_of:
            if name not in gone_at and env.get_pod(name) is None:
                gone_at[name] = env.clock.monotonic()
    assert env.get_node() is None
    assert set(evicted_at) == set(tier_of)
    for name, tier in tier_of.items():
        for other, other_tier in tier_of.items():
            if other_tier < tier:
                assert evicted_at[name] >= gone_at[other], (name, other)
