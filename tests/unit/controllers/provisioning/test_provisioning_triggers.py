"""The provisioning triggers' pure parts: how many reconciles a pass may take, and which pod
events the pod trigger lets through."""

from __future__ import annotations

import pytest

from karpenter_core.controllers.provisioning.triggers import (
    linear_scale_reconciles,
    may_be_provisionable,
)


@pytest.mark.parametrize(
    ("cpu_milli", "expected"),
    [(1000, 10), (0, 10), (-5, 10), (2000, 26), (30000, 496), (60000, 1000), (120000, 1000)],
)
def test_linear_scale_reconciles(cpu_milli: int, expected: int) -> None:
    assert linear_scale_reconciles(cpu_milli, 10, 1000) == expected


def _pod_obj(*, node: str | None = None, reason: str | None = "Unschedulable") -> dict[str, object]:
    conds = [{"type": "PodScheduled", "status": "False", "reason": reason}] if reason else []
    return {
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {"nodeName": node} if node else {},
        "status": {"conditions": conds},
    }


@pytest.mark.parametrize(
    ("event_type", "obj", "expected"),
    [
        ("ADDED", _pod_obj(), True),
        ("MODIFIED", _pod_obj(), True),
        ("DELETED", _pod_obj(), False),
        ("ADDED", _pod_obj(reason=None), False),
        ("MODIFIED", _pod_obj(reason="SchedulerError"), False),
        ("MODIFIED", _pod_obj(node="n1"), False),
        ("ADDED", {"metadata": {"name": "p"}, "status": {"conditions": "bad"}}, False),
    ],
)
def test_pod_watch_predicate_passes_only_unbound_unschedulable_pods(
    event_type: str, obj: dict[str, object], expected: bool
) -> None:
    assert may_be_provisionable(event_type, obj) is expected
