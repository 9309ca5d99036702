"""static.provisioning: a static NodePool is topped up to ``spec.replicas`` with bare
template NodeClaims, within ``limits.nodes``, counted from cluster state."""

from __future__ import annotations

from typing import Any

import pytest

from karpenter_core.controllers.static import launch_count, static_pool
from karpenter_core.controllers.static.provisioning import StaticPool
from karpenter_core.state.cluster import NodePoolCounts


def pool(replicas: int) -> StaticPool:
    return StaticPool("p", replicas, 2**63 - 1, True, False)


@pytest.mark.parametrize(
    ("replicas", "active", "pending", "expected"),
    [
        (3, 0, 0, 3),
        (15, 10, 0, 5),  # a scale-up launches only the difference
        (3, 3, 0, 0),
        (3, 4, 0, 0),  # over: deprovisioning's job
        (3, 2, 1, 0),  # one being replaced by static drift counts as present
        (5, 2, 1, 3),  # missing nodes: replicas - active, as upstream
        (0, 0, 0, 0),
    ],
)
def test_launch_count(replicas: int, active: int, pending: int, expected: int) -> None:
    assert launch_count(pool(replicas), NodePoolCounts(active, 0, pending)) == expected


def test_static_pool_reads_replicas_limits_and_readiness() -> None:
    np: dict[str, Any] = {
        "metadata": {"name": "p"},
        "spec": {"replicas": 4, "limits": {"nodes": "7", "cpu": "100"}},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }
    assert static_pool(np) == StaticPool("p", 4, 7, ready=True, deleting=False)


def test_a_pool_without_replicas_is_not_static() -> None:
    assert static_pool({"metadata": {"name": "p"}, "spec": {}}) is None


@pytest.mark.parametrize("bad", [-1, "three", True, 1.5])
def test_invalid_replicas_is_a_message_naming_the_field(bad: Any) -> None:
    problem = static_pool({"metadata": {"name": "p"}, "spec": {"replicas": bad}})
    assert isinstance(problem, str)
    assert "spec.replicas" in problem and "'p'" in problem
