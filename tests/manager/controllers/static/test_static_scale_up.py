"""static.provisioning over a cluster: a static NodePool is topped up to ``spec.replicas``
with bare template NodeClaims, within ``limits.nodes``, counted from cluster state."""

from __future__ import annotations

from typing import Any

import pytest
from static_harness import NODEPOOL_LABEL, World

from karpenter_core.apis.labels import (
    LABEL_INSTANCE_TYPE,
    NODEPOOL_HASH_ANNOTATION_KEY,
    NODEPOOL_HASH_VERSION_ANNOTATION_KEY,
)
from karpenter_core.controllers.provisioning import CreateError
from karpenter_core.controllers.static.provisioning import (
    LIMIT_REACHED_REQUEUE,
    RESYNC,
    STATE_LAG_LIMIT,
    UNSYNCED_REQUEUE,
    DeletionsSeen,
    StaticProvisioner,
)
from karpenter_core.runtime.reconciler import ObjectKey, Result


def test_launches_replicas_bare_template_nodeclaims() -> None:
    w = World()
    np = w.nodepool(replicas=3, labels={"team": "a"})
    assert w.provision() == Result.after(RESYNC)
    ncs = w.nodeclaims()
    assert len(ncs) == 3
    for nc in ncs:
        meta = nc["metadata"]
        assert meta["generateName"] == "static-"
        assert meta["labels"][NODEPOOL_LABEL] == "static"
        assert meta["labels"]["team"] == "a"
        assert meta["labels"]["karpenter.kwok.sh/kwoknodeclass"] == "default"
        assert meta["annotations"][NODEPOOL_HASH_VERSION_ANNOTATION_KEY] == "v3"
        assert meta["annotations"][NODEPOOL_HASH_ANNOTATION_KEY]
        (owner,) = meta["ownerReferences"]
        assert (owner["kind"], owner["name"], owner["uid"]) == (
            "NodePool",
            "static",
            np["metadata"]["uid"],
        )
        keys = {r["key"] for r in nc["spec"]["requirements"]}
        assert LABEL_INSTANCE_TYPE not in keys  # the provider picks the type
        assert keys == {"kubernetes.io/os"}


def test_created_nodeclaims_count_at_once_so_a_second_pass_launches_nothing() -> None:
    w = World()
    w.nodepool(replicas=3)
    w.provision()
    w.provision()
    assert len(w.nodeclaims()) == 3
    assert w.cluster.nodepool_state.node_counts("static").active == 3


def test_reservations_are_given_back_after_the_creates() -> None:
    w = World()
    w.nodepool(replicas=4)
    w.provision()
    assert w.cluster.nodepool_state.reserved("static") == 0


def test_scale_up_from_10_to_15_launches_5() -> None:
    w = World()
    w.nodepool(replicas=10)
    for _ in range(10):
        w.node()
    assert w.provision() == Result.after(RESYNC)
    assert len(w.nodeclaims()) == 10
    w.set_replicas(15)
    w.provision()
    assert len(w.nodeclaims()) == 15


def test_node_limit_caps_the_launches() -> None:
    w = World()
    w.nodepool(replicas=10, limits={"nodes": "5"})
    w.provision()
    assert len(w.nodeclaims()) == 5
    assert w.provision() == Result.after(LIMIT_REACHED_REQUEUE)
    assert len(w.nodeclaims()) == 5


def test_node_limit_counts_deleting_nodeclaims() -> None:
    w = World()
    w.nodepool(replicas=3, limits={"nodes": "3"})
    for _ in range(3):
        w.node()
    w.cluster.nodepool_state.mark_deleting("static", w.nodeclaims()[0]["metadata"]["name"])
    # one short of the replicas, but the deleting node still holds its slot of the limit
    assert w.provision() == Result.after(LIMIT_REACHED_REQUEUE)
    assert len(w.nodeclaims()) == 3


def test_another_reservation_holds_the_limit_against_this_pass() -> None:
    w = World()
    w.nodepool(replicas=4, limits={"nodes": "4"})
    w.node()
    # e.g. static drift reserved two slots for replacements it is about to create
    assert w.cluster.nodepool_state.reserve_node_count("static", 4, 2) == 2
    w.provision()
    assert len(w.nodeclaims()) == 2  # the existing one and the single slot left


def test_nodes_pending_disruption_are_counted_as_present() -> None:
    w = World()
    w.nodepool(replicas=2)
    a, b = w.node(), w.node()
    w.cluster.nodepool_state.mark_pending_disruption("static", b)
    assert w.provision() == Result.after(RESYNC)
    assert {nc["metadata"]["name"] for nc in w.nodeclaims()} == {a, b}


@pytest.mark.parametrize(
    "setup",
    ["not ready", "dynamic", "missing"],
)
def test_pools_that_are_not_ready_static_or_present_are_left_alone(setup: str) -> None:
    w = World()
    if setup == "not ready":
        w.nodepool(replicas=3, ready=False)
    elif setup == "dynamic":
        w.nodepool(replicas=None)
    assert w.provision() == Result()
    assert w.nodeclaims() == []


def test_a_deleting_pool_is_left_alone() -> None:
    w = World()
    np = w.nodepool(replicas=3)
    w.kube.patch("nodepools", "static", {"metadata": {"finalizers": ["test/hold"]}})
    w.kube.delete("nodepools", "static")
    assert w.kube.get("nodepools", "static")["metadata"]["deletionTimestamp"]
    assert np["spec"]["replicas"] == 3
    assert w.provision() == Result()
    assert w.nodeclaims() == []


def test_waits_for_cluster_state_to_sync() -> None:
    w = World()
    w.nodepool(replicas=3)
    w.cluster.set_synced(False)
    # a NodeClaim the API has but state has not seen yet: launching now would double it
    w.create(
        {
            "apiVersion": "karpenter.sh/v1",
            "kind": "NodeClaim",
            "metadata": {"name": "unseen", "labels": {NODEPOOL_LABEL: "static"}},
            "spec": {
                "nodeClassRef": {
                    "group": "karpenter.kwok.sh",
                    "kind": "KWOKNodeClass",
                    "name": "default",
                },
                "requirements": [],
            },
        }
    )
    assert w.provision() == Result.after(UNSYNCED_REQUEUE)
    assert len(w.nodeclaims()) == 1


class FailingProvisioner:
    def __init__(self, fail: int) -> None:
        self.fail = fail
        self.attempts = 0

    def create(self, nc: Any, **_: Any) -> str:
        self.attempts += 1
        if self.attempts <= self.fail:
            raise CreateError("nodepool 'static': limits exceeded")
        return f"ok-{self.attempts}"


def test_failed_creates_release_their_reservation_and_back_off() -> None:
    w = World()
    w.nodepool(replicas=3, limits={"nodes": "3"})
    failing = FailingProvisioner(fail=2)
    ctrl = StaticProvisioner(w.ctx, failing)  # type: ignore[arg-type]
    assert ctrl.reconcile(ObjectKey("", "static")) == Result(requeue=True)
    assert failing.attempts == 3
    assert w.cluster.nodepool_state.reserved("static") == 0


def test_invalid_replicas_on_a_stored_pool_is_logged_not_raised(
    caplog: pytest.LogCaptureFixture,
) -> None:
    w = World()
    w.nodepool(replicas=3)
    w.kube.patch("nodepools", "static", {"spec": {"replicas": -2}})
    assert w.kube.get("nodepools", "static")["spec"]["replicas"] == -2
    with caplog.at_level("WARNING", logger="karpenter.static"):
        assert w.provision() == Result()
        assert w.provision() == Result()
    assert [r.getMessage() for r in caplog.records].count(
        "nodepool 'static': spec.replicas must be a non-negative integer, got -2"
    ) == 1
    assert w.nodeclaims() == []


def test_a_reported_deletion_state_has_not_applied_defers_the_count() -> None:
    w = World()
    w.nodepool(replicas=2)
    a, _b = w.node(), w.node()
    deletions = DeletionsSeen(w.clock)
    ctrl = StaticProvisioner(w.ctx, deletions=deletions)
    deletions.record("static", a, gone=True)  # the watch saw it go; state still holds it
    assert ctrl.reconcile(ObjectKey("", "static")) == Result.after(UNSYNCED_REQUEUE)
    assert len(w.nodeclaims()) == 2
    w.kube.delete("nodeclaims", a)
    w.cluster.delete_nodeclaim(a)
    assert ctrl.reconcile(ObjectKey("", "static")) == Result.after(RESYNC)
    assert len(w.live_nodeclaims()) == 2  # replaced


def test_a_deletion_state_never_applies_stops_deferring_after_the_limit() -> None:
    w = World()
    w.nodepool(replicas=2)
    a, _b = w.node(), w.node()
    deletions = DeletionsSeen(w.clock)
    ctrl = StaticProvisioner(w.ctx, deletions=deletions)
    deletions.record("static", a, gone=False)
    assert ctrl.reconcile(ObjectKey("", "static")) == Result.after(UNSYNCED_REQUEUE)
    w.clock.advance(STATE_LAG_LIMIT + 1)
    assert ctrl.reconcile(ObjectKey("", "static")) == Result.after(RESYNC)


def test_deletions_recorded_for_a_dynamic_pool_are_forgotten() -> None:
    w = World()
    w.nodepool(replicas=None)
    a = w.node()
    deletions = DeletionsSeen(w.clock)
    ctrl = StaticProvisioner(w.ctx, deletions=deletions)
    deletions.record("static", a, gone=False)
    assert ctrl.reconcile(ObjectKey("", "static")) == Result()
    assert not deletions.state_behind("static", w.cluster)  # nothing left to wait for
