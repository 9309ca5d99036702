"""The KWOK provider under the real controllers, through karpenter-core's test kit: what a
plugin's own suite does with the ``make_karpenter_env`` fixture."""

from __future__ import annotations

from collections.abc import Callable

from karpenter_core.apis import labels as wk
from karpenter_core.testing import Environment
from karpenter_core.testing import builders as b
from karpenter_core.testing.expectations import expect_condition, expect_provisioned


def test_a_pending_pod_runs_on_a_kwok_node(make_karpenter_env: Callable[..., Environment]) -> None:
    env = make_karpenter_env("kwok", provider_settings={"seed": "1"})
    assert env.provider.name == "kwok"
    env.apply(b.nodepool())
    nodes = expect_provisioned(env, b.pod("web", cpu="1"), within=120)
    [claim] = env.nodeclaims()
    expect_condition(claim, "Initialized")
    node = nodes["web"]
    assert node["spec"]["providerID"].startswith("kwok://")
    assert node["metadata"]["labels"][wk.NODEPOOL_LABEL_KEY] == "default"
