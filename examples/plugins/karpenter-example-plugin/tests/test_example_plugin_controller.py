"""The recycle-schedule controller in the kit's Environment, and the whole plugin in
`karpenter simulate` on the bundled scenario."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

import pytest
from click.testing import CliRunner
from example_plugin_support import SCENARIO, annotated_nodepool
from karpenter_example_plugin.policy import MAX_NODE_AGE_ANNOTATION, RECYCLE_AFTER_ANNOTATION

from karpenter_core.cli import main
from karpenter_core.plugin_api import format_time
from karpenter_core.plugins import KarpenterPluginManager
from karpenter_core.testing import Environment
from karpenter_core.testing import builders as b
from karpenter_core.testing.expectations import expect_event, expect_provisioned


@pytest.fixture
def env(
    make_karpenter_env: Callable[..., Environment], plugin_manager: KarpenterPluginManager
) -> Environment:
    return make_karpenter_env(plugin_manager=plugin_manager)


def _node_and_claim(env: Environment, max_age: str | None) -> tuple[dict[str, Any], datetime]:
    annotations = {MAX_NODE_AGE_ANNOTATION: max_age} if max_age else {}
    env.apply(annotated_nodepool(annotations, consolidation_policy="WhenEmpty"))
    node = expect_provisioned(env, b.pod("web", cpu="1"))["web"]
    [claim] = env.nodeclaims()
    created = datetime.fromisoformat(claim["metadata"]["creationTimestamp"])
    return node, created


def _recycle_after(env: Environment, node: dict[str, Any]) -> str | None:
    annotations = env.get(node)["metadata"].get("annotations") or {}
    return annotations.get(RECYCLE_AFTER_ANNOTATION)


def test_the_controller_runs_beside_the_cores(env: Environment) -> None:
    assert "example.recycle-schedule" in env.controllers


def test_each_node_says_when_it_will_be_recycled(env: Environment) -> None:
    node, created = _node_and_claim(env, "20m")
    due = format_time(created + timedelta(minutes=20))
    assert _recycle_after(env, node) == due
    event = expect_event(env, "RecycleScheduled", obj=node, type_="Normal")
    assert due in event.message


def test_the_date_follows_the_nodepool(env: Environment) -> None:
    node, created = _node_and_claim(env, "20m")
    env.apply(annotated_nodepool({MAX_NODE_AGE_ANNOTATION: "1h"}, consolidation_policy="WhenEmpty"))
    env.settle()
    assert _recycle_after(env, node) == format_time(created + timedelta(hours=1))
    env.apply(annotated_nodepool({}, consolidation_policy="WhenEmpty"))
    env.settle()
    assert _recycle_after(env, node) is None


def test_nodes_of_a_pool_without_a_maximum_age_get_no_date(env: Environment) -> None:
    node, _ = _node_and_claim(env, None)
    env.run_for(60)
    assert _recycle_after(env, node) is None
    assert not env.events("RecycleScheduled")


def test_karpenter_simulate_on_the_bundled_scenario_shows_the_method_and_the_controller(
    installed: None,
) -> None:
    result = CliRunner().invoke(
        main, ["simulate", str(SCENARIO), "-o", "json"], env={"KARPENTER_PLUGINS": "kwok,example"}
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert "example.recycle-schedule" in report["controllers"]
    first_nodes = {
        d["nodeClaim"]
        for d in report["decisions"]
        if d["offsetSeconds"] < 60 and d["action"] == "Launch"
    }
    aged = [d for d in report["decisions"] if d["action"] == "Disrupt"]
    assert {d["nodeClaim"] for d in aged} == first_nodes
    # each node's replacement is launched first (the plugin API's scheduling simulation)
    assert all(d["reason"].startswith("Aged: replace with 1 replacement") for d in aged)
    assert min(d["offsetSeconds"] for d in aged) >= 20 * 60
    assert report["removalReasons"] == {"aged": 3}
    # the controller's announcements are events, not decisions
    assert not [d for d in report["decisions"] if d["action"] == "RecycleScheduled"]
    scheduled = [e for e in report["events"] if e["reason"] == "RecycleScheduled"]
    assert len(scheduled) == report["nodesLaunched"] == 6
    assert report["pods"]["pending"] == 0
