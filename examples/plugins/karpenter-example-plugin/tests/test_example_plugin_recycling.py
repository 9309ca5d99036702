"""The max-node-age disruption method, run by the real disruption controller in the kit's
Environment (fake cloud provider, simulated kube-scheduler and kubelet, virtual clock)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from example_plugin_support import annotated_nodepool
from karpenter_example_plugin.policy import MAX_NODE_AGE_ANNOTATION

from karpenter_core.plugins import KarpenterPluginManager
from karpenter_core.testing import Environment
from karpenter_core.testing import builders as b
from karpenter_core.testing.expectations import (
    expect_deleted,
    expect_event,
    expect_no_event,
    expect_provisioned,
)

TWENTY_MINUTES = {MAX_NODE_AGE_ANNOTATION: "20m"}


@pytest.fixture
def env(
    make_karpenter_env: Callable[..., Environment], plugin_manager: KarpenterPluginManager
) -> Environment:
    return make_karpenter_env(plugin_manager=plugin_manager)


def _pool(annotations: dict[str, str], **kwargs: Any) -> dict[str, Any]:
    # consolidation only of empty nodes, so nothing but this method replaces a busy node
    return annotated_nodepool(annotations, consolidation_policy="WhenEmpty", **kwargs)


def _deleting(env: Environment, names: set[str]) -> set[str]:
    return {
        nc["metadata"]["name"]
        for nc in env.nodeclaims()
        if nc["metadata"]["name"] in names and nc["metadata"].get("deletionTimestamp")
    }


def _draining(env: Environment, names: set[str]) -> set[str]:
    """Deleting and not drained yet: what a disruption budget counts (once drained, the
    instance is terminating and no longer holds the budget, as upstream)."""
    drained = {
        nc["metadata"]["name"]
        for nc in env.nodeclaims()
        for c in (nc.get("status") or {}).get("conditions") or ()
        if c["type"] == "Drained" and c["status"] == "True"
    }
    return _deleting(env, names) - drained


def test_a_node_past_its_maximum_age_is_disrupted_as_aged(env: Environment) -> None:
    env.apply(_pool(TWENTY_MINUTES))
    expect_provisioned(env, b.pod("web", cpu="1"))
    [claim] = env.nodeclaims()
    env.run_for(timedelta(minutes=19))
    assert _deleting(env, {claim["metadata"]["name"]}) == set()
    env.run_for(timedelta(minutes=2))
    event = expect_event(env, "DisruptionTerminating", obj=claim)
    assert event.message == "Disrupting NodeClaim: Aged"
    env.run_for(timedelta(minutes=1))
    expect_deleted(env, claim)


def test_nodes_of_a_pool_without_a_maximum_age_stay(env: Environment) -> None:
    env.apply(_pool({}))
    expect_provisioned(env, b.pod("web", cpu="1"))
    [claim] = env.nodeclaims()
    env.run_for(timedelta(hours=2))
    assert [nc["metadata"]["uid"] for nc in env.nodeclaims()] == [claim["metadata"]["uid"]]
    expect_no_event(env, "DisruptionTerminating")


def test_the_budget_lets_one_node_go_at_a_time(env: Environment) -> None:
    env.apply(_pool(TWENTY_MINUTES, budgets=[{"nodes": "1"}]))
    # pods too big to share a node of the fake catalogue: two nodes, due at the same time
    expect_provisioned(env, b.pod("a", cpu="3"), b.pod("b", cpu="3"))
    originals = {nc["metadata"]["name"] for nc in env.nodeclaims()}
    assert len(originals) == 2
    env.run_for(timedelta(minutes=19))
    most_at_once = 0
    for _ in range(60):  # ten minutes in ten-second steps
        env.run_for(10)
        most_at_once = max(most_at_once, len(_draining(env, originals)))
    assert most_at_once == 1
    assert originals.isdisjoint(nc["metadata"]["name"] for nc in env.nodeclaims())


def test_a_do_not_disrupt_pod_keeps_its_node(env: Environment) -> None:
    env.apply(_pool(TWENTY_MINUTES))
    pod = b.pod("batch", cpu="1", annotations={"karpenter.sh/do-not-disrupt": "true"})
    expect_provisioned(env, pod)
    [claim] = env.nodeclaims()
    env.run_for(timedelta(minutes=40))
    assert _deleting(env, {claim["metadata"]["name"]}) == set()
    expect_no_event(env, "DisruptionTerminating")


def test_an_unreadable_maximum_age_disrupts_nothing_and_says_so(env: Environment) -> None:
    pool = env.apply(_pool({MAX_NODE_AGE_ANNOTATION: "a fortnight"}))
    expect_provisioned(env, b.pod("web", cpu="1"))
    env.run_for(timedelta(minutes=40))
    expect_no_event(env, "DisruptionTerminating")
    warning = expect_event(env, "InvalidRecyclePolicy", obj=pool, type_="Warning")
    assert MAX_NODE_AGE_ANNOTATION in warning.message
