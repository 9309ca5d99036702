"""The state informers and state.nodeclaimgc: which events they act on and how they pace."""

from __future__ import annotations

from typing import Any

import pytest
from test_cluster import MANAGED, Env, create_status, daemonset, node, nodeclaim, pod

from karpenter_core import metrics
from karpenter_core.apis.v1 import NodeClaim
from karpenter_core.cloudprovider.protocol import NodeClassKind
from karpenter_core.controllers.state import informers, nodeclaimgc
from karpenter_core.runtime.clock import VirtualClock, WallClock
from karpenter_core.runtime.context import ControllerContext
from karpenter_core.runtime.events import EventRecorder
from karpenter_core.runtime.manager import Manager
from karpenter_core.runtime.reconciler import ObjectKey
from karpenter_core.sim.apiserver import InMemoryApiServer
from karpenter_core.state.cluster import Cluster, cluster_of


@pytest.fixture
def env() -> Env:
    return Env()


class KwokOnly:
    """Just enough of a cloud provider to say which NodeClaims are Karpenter's."""

    def supported_node_classes(self) -> list[NodeClassKind]:
        return [NodeClassKind("karpenter.kwok.sh", "KWOKNodeClass")]


def ctx_for(server: InMemoryApiServer, clock: Any, provider: Any = None) -> ControllerContext:
    return ControllerContext(
        kube=server, clock=clock, cloud_provider=provider, recorder=EventRecorder(clock)
    )


def nodepool(name: str = "default", group: str = "karpenter.kwok.sh") -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": name},
        "spec": {
            "template": {
                "spec": {
                    "requirements": [],
                    "nodeClassRef": {"group": group, "kind": "KWOKNodeClass", "name": "d"},
                }
            }
        },
    }


# -- registration -------------------------------------------------------------------------


def test_register_adds_the_upstream_controller_names_and_creates_the_cluster() -> None:
    clock = VirtualClock()
    server = InMemoryApiServer(clock)
    ctx = ctx_for(server, clock)
    manager = Manager(clock, server)
    informers.register(manager, ctx)
    nodeclaimgc.register(manager, ctx)
    assert isinstance(ctx.cluster, Cluster)
    assert [c.name for c in manager.controllers] == [
        "state.node",
        "state.nodeclaim",
        "state.pod",
        "state.daemonset",
        "state.nodepool",
        "state.pricing",
        "state.nodeclaimgc",
    ]


def test_nomination_window_follows_batch_max_duration() -> None:
    clock = VirtualClock()
    ctx = ctx_for(InMemoryApiServer(clock), clock)
    ctx.options = type(ctx.options)(batch_max_duration=30.0)
    assert cluster_of(ctx).nomination_seconds == 60.0


# -- resync ---------------------------------------------------------------------------------


def test_resync_is_a_minute_on_a_wall_clock_and_off_on_a_virtual_one() -> None:
    server = InMemoryApiServer(VirtualClock())
    assert informers.resync_seconds(ctx_for(server, WallClock())) == 60.0
    assert informers.resync_seconds(ctx_for(server, VirtualClock())) is None


@pytest.mark.parametrize("value", [-1, "60", True])
def test_bad_resync_setting_names_the_setting(value: Any) -> None:
    clock = VirtualClock()
    ctx = ctx_for(InMemoryApiServer(clock), clock)
    with pytest.raises(ValueError, match=r"state_resync_seconds"):
        ctx.state_resync_seconds = value


def test_a_zero_resync_setting_means_never_even_on_a_wall_clock() -> None:
    clock = WallClock()
    ctx = ctx_for(InMemoryApiServer(clock), clock)
    ctx.state_resync_seconds = 0
    assert informers.resync_seconds(ctx) is None


def test_resync_recovers_a_missed_pod_event() -> None:
    clock = VirtualClock()
    server = InMemoryApiServer(clock)
    ctx = ctx_for(server, clock)
    ctx.state_resync_seconds = 60
    manager = Manager(clock, server)
    informers.register(manager, ctx)
    manager.start()
    server.create(node())
    server.create(pod(node_name="n1"))
    manager.settle()
    cluster: Cluster = ctx.cluster
    cluster.delete_pod("default/p1")  # as if the informer had lost the pod
    assert cluster.state_nodes()[0].pod_requests().get("cpu", 0) == 0
    manager.run_for(61)
    assert cluster.state_nodes()[0].pod_requests()["cpu"] == 1000


# -- nodeclaims -----------------------------------------------------------------------------


def test_nodeclaims_of_other_node_classes_are_not_tracked() -> None:
    clock = VirtualClock()
    server = InMemoryApiServer(clock)
    ctx = ctx_for(server, clock, KwokOnly())
    manager = Manager(clock, server)
    informers.register(manager, ctx)
    manager.start()
    foreign = nodeclaim("foreign", pid="")
    foreign["spec"]["nodeClassRef"] = {"group": "other.io", "kind": "Other", "name": "x"}
    server.create(foreign)
    server.create(nodeclaim("ours", pid=""))
    manager.settle()
    assert not ctx.cluster.nodeclaim_exists("foreign")
    assert ctx.cluster.nodeclaim_exists("ours")


def test_synced_ignores_unmanaged_nodeclaims_in_the_api() -> None:
    clock = VirtualClock()
    server = InMemoryApiServer(clock)
    foreign = nodeclaim("foreign", pid="")
    foreign["spec"]["nodeClassRef"] = {"group": "other.io", "kind": "Other", "name": "x"}
    server.create(foreign)
    assert Cluster(server, clock, KwokOnly()).synced()  # type: ignore[arg-type]
    assert not Cluster(server, clock).synced()


def test_synced_sets_the_cluster_state_metrics(env: Env) -> None:
    env.create(node())
    assert env.cluster.synced()
    assert metrics.REGISTRY.get_sample_value("karpenter_cluster_state_synced") == 1.0
    assert metrics.REGISTRY.get_sample_value("karpenter_cluster_state_node_count") == 1.0
    env.create(nodeclaim("pending", pid=""))
    env.clock.advance(40)
    assert not env.cluster.synced()
    env.clock.advance(5)
    assert not env.cluster.synced()
    assert metrics.REGISTRY.get_sample_value("karpenter_cluster_state_synced") == 0.0
    assert metrics.REGISTRY.get_sample_value("karpenter_cluster_state_unsynced_time_seconds") == 5.0


# -- nodeclaimgc ----------------------------------------------------------------------------


def test_gc_waits_the_grace_period(env: Env) -> None:
    created = env.create(nodeclaim("nc2", pid=""))
    env.server.delete("nodeclaims", "nc2")
    env.settle()
    env.cluster.update_nodeclaim(created)  # a stale seed re-applied after the delete
    env.manager.run_for(14)
    assert env.cluster.unlaunched_nodeclaim_exists("nc2")
    env.manager.run_for(2)
    assert not env.cluster.nodeclaim_exists("nc2")


def test_gc_keeps_nodeclaims_that_still_exist(env: Env) -> None:
    env.create(nodeclaim("nc2", pid=""))
    env.manager.run_for(20)
    assert env.cluster.unlaunched_nodeclaim_exists("nc2")


def test_gc_leaves_launched_nodeclaims_to_the_informer(env: Env) -> None:
    env.create(node(labels=MANAGED))
    created = create_status(env, nodeclaim())
    gc = nodeclaimgc.NodeClaimGC(env.ctx, env.cluster)
    env.server.delete("nodeclaims", "nc1")
    env.cluster.update_nodeclaim(created)
    gc.reconcile(ObjectKey("", "nc1"))
    assert env.cluster.nodeclaim_exists("nc1")


# -- daemonsets -----------------------------------------------------------------------------


def test_daemonset_template_change_is_seen_on_the_next_poll(env: Env) -> None:
    ds = env.create(daemonset())
    ds["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "300m"
    env.server.update(ds)
    env.settle()
    assert [p.requests["cpu"] for p in env.cluster.daemonset_pods()] == [100]  # updates unwatched
    env.manager.run_for(61)
    assert [p.requests["cpu"] for p in env.cluster.daemonset_pods()] == [300]


# -- nodepools ------------------------------------------------------------------------------


@pytest.fixture
def kwok_env() -> Env:
    """The state informers with a provider that manages KWOK NodeClasses only (the kit's
    fake): pools of other NodeClasses are not this operator's."""
    return Env()


def test_nodepool_status_change_does_not_mark_unconsolidated(kwok_env: Env) -> None:
    np = kwok_env.create(nodepool())
    stamp = kwok_env.cluster.consolidation_state()
    kwok_env.clock.advance(10)
    np["status"] = {"resources": {"cpu": "4"}}
    kwok_env.server.update_status(np)
    kwok_env.settle()
    assert kwok_env.cluster.consolidation_state() == stamp


def test_unmanaged_nodepool_change_does_not_mark_unconsolidated(kwok_env: Env) -> None:
    np = kwok_env.create(nodepool("foreign", group="other.io"))
    stamp = kwok_env.cluster.consolidation_state()
    kwok_env.clock.advance(10)
    np["spec"]["weight"] = 3
    kwok_env.server.update(np)
    kwok_env.settle()
    assert kwok_env.cluster.consolidation_state() == stamp


def test_managed_nodepool_spec_change_marks_unconsolidated(kwok_env: Env) -> None:
    np = kwok_env.create(nodepool())
    stamp = kwok_env.cluster.consolidation_state()
    kwok_env.clock.advance(10)
    np["spec"]["weight"] = 3
    kwok_env.server.update(np)
    kwok_env.settle()
    assert kwok_env.cluster.consolidation_state() > stamp


# -- bad objects ----------------------------------------------------------------------------


def test_unparseable_pod_is_skipped_not_raised(env: Env, caplog: pytest.LogCaptureFixture) -> None:
    env.create(node())
    bad = pod("bad", node_name="n1")
    bad["spec"]["tolerations"] = "not-a-list"
    env.server.create(bad)
    env.settle()
    assert env.manager.controller("state.pod").errors == 0
    assert env.cluster.pod("default/bad") is None
    assert "bad" in caplog.text and "spec.tolerations" in caplog.text


def test_unreadable_nodeclaim_is_skipped_not_raised(
    env: Env, caplog: pytest.LogCaptureFixture
) -> None:
    bad = nodeclaim("bad")
    bad["status"]["capacity"]["cpu"] = "lots"
    create_status(env, bad)
    assert env.manager.controller("state.nodeclaim").errors == 0
    assert not env.cluster.nodeclaim_exists("bad")
    assert "bad" in caplog.text and "status.capacity.cpu" in caplog.text


# -- parsed once ----------------------------------------------------------------------------


def test_state_holds_the_typed_nodeclaim_parsed_once_per_stored_version(env: Env) -> None:
    create_status(env, nodeclaim())
    sn = env.cluster.state_node("kwok://n1")
    assert sn is not None and isinstance(sn.nodeclaim, NodeClaim)
    first = sn.nodeclaim
    informers.NodeClaimInformer(env.ctx).reconcile(ObjectKey("", "nc1"))  # a resync re-read
    again = env.cluster.state_node("kwok://n1")
    assert again is not None and again.nodeclaim is first
    stored = env.server.get("nodeclaims", "nc1")
    stored["metadata"]["labels"]["team"] = "a"
    env.server.update(stored)
    env.settle()
    changed = env.cluster.state_node("kwok://n1")
    assert changed is not None and changed.nodeclaim is not first
    assert changed.labels()["team"] == "a"


def test_a_context_refuses_a_bad_resync_setting() -> None:
    clock = VirtualClock()
    server = InMemoryApiServer(clock)
    with pytest.raises(ValueError, match=r"state_resync_seconds"):
        ControllerContext(
            kube=server,
            clock=clock,
            cloud_provider=None,  # type: ignore[arg-type]
            recorder=EventRecorder(clock),
            state_resync_seconds="soon",  # type: ignore[arg-type]
        )
