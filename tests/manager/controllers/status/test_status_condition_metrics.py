"""Status-condition metrics (operatorpkg's ``operator_status_condition_*`` and
``operator_termination_*``) for NodeClaims, NodePools and Nodes, read from the real
Prometheus exposition on an in-memory API server and a virtual clock."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

from karpenter_core import metrics
from karpenter_core.controllers import status
from karpenter_core.runtime.clock import format_time
from karpenter_core.testing import Environment
from karpenter_core.testing import builders as b
from karpenter_core.testing.expectations import metric_samples, metric_value


def stamp(seconds: float) -> str:
    return format_time(b.START + timedelta(seconds=seconds))


def make_env() -> Environment:
    return Environment(controllers=["status"], kube_scheduler=False, kubelet=False)


def set_conditions(env: Environment, resource: str, name: str, conds: list[dict[str, Any]]) -> None:
    env.kube.patch(resource, name, {"status": {"conditions": conds}}, subresource="status")


def cond(ctype: str, status_: str, reason: str, at: float) -> dict[str, Any]:
    return {
        "type": ctype,
        "status": status_,
        "reason": reason,
        "message": "",
        "lastTransitionTime": stamp(at),
    }


@pytest.fixture(autouse=True)
def _clean() -> Iterator[None]:
    metrics.reset()
    yield
    metrics.reset()


def test_each_condition_is_counted_with_its_type_status_reason_group_and_kind() -> None:
    env = make_env()
    env.kube.create(b.nodepool("pool", node_class={"group": "g", "kind": "K", "name": "n"}))
    set_conditions(env, "nodepools", "pool", [cond("Ready", "False", "NotReady", 0)])
    env.manager.run_for(1)
    assert (
        metric_value(
            "operator_status_condition_count",
            name="pool",
            namespace="",
            group="karpenter.sh",
            kind="NodePool",
            type="Ready",
            status="False",
            reason="NotReady",
        )
        == 1.0
    )


def test_current_status_seconds_grow_from_the_last_transition() -> None:
    env = make_env()
    env.kube.create(b.node("n1", ready=None))
    set_conditions(env, "nodes", "n1", [cond("Ready", "True", "KubeletReady", 0)])

    def held() -> float | None:
        return metric_value(
            "operator_status_condition_current_status_seconds",
            name="n1",
            kind="Node",
            type="Ready",
        )

    env.manager.run_for(35)
    first = held()
    assert first is not None
    # read when collected: the figure is the clock's, with no reconcile in between
    env.clock.advance(7)
    assert held() == pytest.approx(first + 7)


def test_an_unchanged_object_is_not_revisited() -> None:
    """Nothing requeues an object to move its time gauges: only changes reconcile it."""
    env = make_env()
    env.kube.create(b.node("n1", ready=None))
    set_conditions(env, "nodes", "n1", [cond("Ready", "True", "KubeletReady", 0)])
    env.manager.run_for(1)
    assert env.manager.controller("operatorpkg.node.status").queue.waiting() == 0


def test_a_status_change_replaces_the_series_and_counts_one_transition() -> None:
    env = make_env()
    env.kube.create(b.nodepool("pool", node_class={"group": "g", "kind": "K", "name": "n"}))
    set_conditions(env, "nodepools", "pool", [cond("Ready", "False", "NotReady", 0)])
    env.manager.run_for(1)
    env.manager.run_for(59)
    set_conditions(env, "nodepools", "pool", [cond("Ready", "True", "Ready", 60)])
    env.manager.run_for(1)
    counts = metric_samples("operator_status_condition_count")
    assert [(lbl["status"], v) for lbl, v in counts if lbl["name"] == "pool"] == [("True", 1.0)]
    assert (
        metric_value(
            "operator_status_condition_transitions_total",
            type="Ready",
            status="True",
            reason="Ready",
            kind="NodePool",
        )
        == 1.0
    )
    assert (
        metric_value(
            "operator_status_condition_transitions_total",
            type="Ready",
            status="False",
            reason="NotReady",
            kind="NodePool",
        )
        == 1.0
    )  # its first sighting
    # It held False for 60 s before the change.
    assert (
        metric_value(
            "operator_status_condition_transition_seconds_sum",
            type="Ready",
            status="False",
            kind="NodePool",
        )
        == 60.0
    )


def test_a_condition_seen_for_the_first_time_counts_once_without_an_event() -> None:
    env = make_env()
    env.kube.create(b.node("n1", ready=None))
    set_conditions(env, "nodes", "n1", [cond("Ready", "True", "KubeletReady", 0)])
    env.manager.run_for(30)  # refreshed three times: still one transition
    assert [v for _, v in metric_samples("operator_status_condition_transitions_total")] == [1.0]
    assert not [e for e in env.recorder.events if e.reason == "Ready"]


def test_a_transition_is_announced_with_an_event() -> None:
    env = make_env()
    env.kube.create(b.node("n1", ready=None))
    set_conditions(env, "nodes", "n1", [cond("Ready", "Unknown", "NodeStatusUnknown", 0)])
    env.manager.run_for(1)
    set_conditions(env, "nodes", "n1", [cond("Ready", "True", "KubeletReady", 1)])
    env.manager.run_for(1)
    [event] = [e for e in env.recorder.events if e.reason == "Ready"]
    assert event.type == "Normal" and event.name == "n1"
    assert event.message == (
        "Status condition transitioned, Type: Ready, Status: Unknown -> True, Reason: KubeletReady"
    )


def test_a_deleting_object_reports_its_termination_time_and_duration_when_gone() -> None:
    env = make_env()
    env.kube.create(
        {
            "apiVersion": "karpenter.sh/v1",
            "kind": "NodeClaim",
            "metadata": {"name": "nc", "finalizers": ["karpenter.sh/termination"]},
            "spec": {"nodeClassRef": {"group": "g", "kind": "K", "name": "n"}},
        }
    )
    set_conditions(env, "nodeclaims", "nc", [cond("Launched", "True", "Launched", 0)])
    env.manager.run_for(1)
    env.kube.delete("nodeclaims", "nc")
    env.manager.run_for(25)
    current = metric_value("operator_termination_current_time_seconds", name="nc", kind="NodeClaim")
    assert current is not None and 15.0 <= current <= 25.0
    env.kube.patch("nodeclaims", "nc", {"metadata": {"finalizers": None}})
    env.manager.run_for(1)
    finalized = [e for e in env.recorder.events if e.reason == "Finalized"]
    assert [(e.name, e.message) for e in finalized] == [
        ("nc", "Finalized karpenter.sh/termination")
    ]
    assert metric_value("operator_termination_current_time_seconds", name="nc") is None
    assert metric_value("operator_status_condition_count", name="nc") is None
    assert (
        metric_value(
            "operator_termination_duration_seconds_count", group="karpenter.sh", kind="NodeClaim"
        )
        == 1.0
    )
    duration = metric_value("operator_termination_duration_seconds_sum", kind="NodeClaim")
    assert duration is not None and 25.0 <= duration <= 26.0


def test_register_adds_one_controller_per_kind() -> None:
    env = make_env()
    assert set(status.NAMES) == {
        "operatorpkg.nodeclaim.status",
        "operatorpkg.nodepool.status",
        "operatorpkg.node.status",
    }
    assert set(status.NAMES) <= {c.name for c in env.manager.controllers}
