"""The pod and node trigger controllers, reconciled directly over the provisioning tests'
operator (cluster state and the provisioner on the kit's Environment)."""

from __future__ import annotations

import pytest
from provisioning_harness import make_env, pod

from karpenter_core.controllers.provisioning import provisioner_of
from karpenter_core.controllers.provisioning.triggers import (
    RETRIGGER_SECONDS,
    NodeTrigger,
    PodTrigger,
)
from karpenter_core.runtime.reconciler import ObjectKey, Result


def node(name: str, *, disrupted: bool) -> dict[str, object]:
    taints = [{"key": "karpenter.sh/disrupted", "effect": "NoSchedule"}] if disrupted else []
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name},
        "spec": {"taints": taints},
    }


def test_provisionable_pod_opens_a_window_acks_and_requeues() -> None:
    env = make_env()
    env.create(pod("p"))
    trigger = PodTrigger(env.ctx, provisioner_of(env.ctx))
    # Cluster state has not seen the pod yet (nothing ran): the API is asked.
    assert env.ctx.cluster.pod("default/p") is None
    assert trigger.reconcile(ObjectKey("default", "p")) == Result.after(RETRIGGER_SECONDS)
    assert provisioner_of(env.ctx).batcher.wait().retry_after == 1.0
    assert env.ctx.cluster.pod_ack_time("default/p") == env.clock.now()


def test_a_pod_state_thinks_unschedulable_is_rechecked_against_the_api() -> None:
    env = make_env()
    env.create(pod("p"))
    env.settle()  # state has the pending pod
    env.kube.patch(
        "pods",
        "p",
        {"status": {"conditions": [{"type": "PodScheduled", "status": "True"}]}},
        "default",
        subresource="status",
    )
    trigger = PodTrigger(env.ctx, provisioner_of(env.ctx))
    # The cached copy still says Unschedulable: a stale yes only opens a window.
    assert trigger.reconcile(ObjectKey("default", "p")) == Result.after(RETRIGGER_SECONDS)
    env.settle()  # state catches up
    assert trigger.reconcile(ObjectKey("default", "p")) == Result()


def test_pod_without_the_unschedulable_verdict_is_left_alone() -> None:
    env = make_env()
    env.create(pod("p", unschedulable=False))
    trigger = PodTrigger(env.ctx, provisioner_of(env.ctx))
    assert trigger.reconcile(ObjectKey("default", "p")) == Result()
    assert provisioner_of(env.ctx).batcher.wait().retry_after is None


def test_deleted_pod_is_ignored() -> None:
    env = make_env()
    trigger = PodTrigger(env.ctx, provisioner_of(env.ctx))
    assert trigger.reconcile(ObjectKey("default", "gone")) == Result()


@pytest.mark.parametrize(("disrupted", "expected"), [(True, Result.after(10.0)), (False, Result())])
def test_node_trigger_fires_only_for_disrupted_nodes(disrupted: bool, expected: Result) -> None:
    env = make_env()
    env.create(node("n", disrupted=disrupted))
    trigger = NodeTrigger(env.ctx, provisioner_of(env.ctx))
    assert trigger.reconcile(ObjectKey("", "n")) == expected
    assert (provisioner_of(env.ctx).batcher.wait().retry_after is not None) is disrupted
