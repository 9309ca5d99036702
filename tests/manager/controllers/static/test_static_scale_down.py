"""static.deprovisioning over a cluster: a static NodePool over ``spec.replicas`` loses its
surplus, unlaunched NodeClaims first, then empty nodes, then the cheapest to disrupt, nodes
with do-not-disrupt pods last."""

from __future__ import annotations

import pytest
from static_harness import World

from karpenter_core.controllers.static.provisioning import RESYNC
from karpenter_core.kube.client import ApiError
from karpenter_core.runtime.reconciler import Result


def test_within_replicas_nothing_is_deleted() -> None:
    w = World()
    w.nodepool(replicas=3)
    nodes = {w.node() for _ in range(3)}
    assert w.deprovision() == Result.after(RESYNC)
    assert w.live_nodeclaims() == nodes


def test_scale_down_deletes_empty_nodes_before_busy_ones() -> None:
    w = World()
    w.nodepool(replicas=2)
    busy1, empty, busy2, ds_only = w.node(), w.node(), w.node(), w.node()
    assert {empty, ds_only} & w.live_nodeclaims() == {empty, ds_only}
    w.pod(busy1)
    w.pod(busy2)
    w.pod(ds_only, owner="DaemonSet")
    assert w.deprovision() == Result.after(RESYNC)
    assert w.live_nodeclaims() == {busy1, busy2}
    counts = w.cluster.nodepool_state.node_counts("static")
    assert (counts.active, counts.deleting) == (2, 2)


def test_unlaunched_nodeclaims_go_first() -> None:
    w = World()
    w.nodepool(replicas=2)
    empty_a, empty_b = w.node(), w.node()
    pending = w.node(launched=False)
    w.deprovision()
    assert pending not in w.live_nodeclaims()
    assert len(w.live_nodeclaims() & {empty_a, empty_b}) == 2


def test_cheapest_busy_node_goes_first() -> None:
    w = World()
    w.nodepool(replicas=1)
    expensive, cheap = w.node(), w.node()
    w.pod(expensive, priority=1000)
    w.pod(expensive, priority=1000)
    w.pod(cheap)
    w.deprovision()
    assert w.live_nodeclaims() == {expensive}


def test_a_node_closer_to_expiry_is_cheaper() -> None:
    w = World()
    w.nodepool(replicas=1)
    old = w.node(expire_after="10h")
    w.clock.advance(8 * 3600)
    young = w.node(expire_after="10h")
    w.pod(old)
    w.pod(young)
    w.deprovision()
    assert w.live_nodeclaims() == {young}


def test_do_not_disrupt_nodes_go_last() -> None:
    w = World()
    w.nodepool(replicas=1)
    protected, busy = w.node(), w.node()
    w.pod(protected, annotations={"karpenter.sh/do-not-disrupt": "true"})
    w.pod(busy, priority=100000)
    w.deprovision()
    assert w.live_nodeclaims() == {protected}


def test_a_daemonset_pod_with_do_not_disrupt_makes_a_node_non_empty() -> None:
    w = World()
    w.nodepool(replicas=1)
    guarded, busy = w.node(), w.node()
    w.pod(guarded, owner="DaemonSet", annotations={"karpenter.sh/do-not-disrupt": "true"})
    w.pod(busy)
    w.deprovision()
    assert w.live_nodeclaims() == {guarded}


def test_scale_to_zero_deletes_every_nodeclaim() -> None:
    w = World()
    w.nodepool(replicas=0)
    for _ in range(3):
        w.pod(w.node())
    w.node(launched=False)
    w.deprovision()
    assert w.live_nodeclaims() == set()


def test_nodes_already_deleting_are_not_counted_again() -> None:
    w = World()
    w.nodepool(replicas=2)
    a, b, c = w.node(), w.node(), w.node()
    w.deprovision()
    assert len(w.live_nodeclaims()) == 2
    # the watch has not caught up, but the pool's counters already say deleting
    w.deprovision()
    assert len(w.live_nodeclaims()) == 2
    assert {a, b, c} - w.live_nodeclaims()


def test_pending_disruption_is_not_a_surplus() -> None:
    """Static drift's replacement exists alongside the node it replaces: not an excess."""
    w = World()
    w.nodepool(replicas=2)
    a, b, replacement = w.node(), w.node(), w.node()
    w.cluster.nodepool_state.mark_pending_disruption("static", a)
    assert w.deprovision() == Result.after(RESYNC)
    assert w.live_nodeclaims() == {a, b, replacement}


def test_dynamic_pools_are_left_alone() -> None:
    w = World()
    w.nodepool(replicas=None)
    nodes = {w.node() for _ in range(2)}
    assert w.deprovision() == Result()
    assert w.live_nodeclaims() == nodes


def test_a_failing_delete_is_retried_then_reported_as_an_api_error() -> None:
    w = World()
    w.nodepool(replicas=0)
    w.node()
    calls: list[str] = []

    def refuse(*args: object, **kwargs: object) -> None:
        calls.append(str(args[1]))
        raise ApiError("server unavailable")

    w.kube.delete = refuse  # type: ignore[method-assign]
    with pytest.raises(ApiError, match="deprovisioning nodeclaims failed"):
        w.deprovision()
    assert len(calls) == 3
    assert w.cluster.nodepool_state.node_counts("static").deleting == 0
