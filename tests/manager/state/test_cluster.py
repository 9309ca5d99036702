"""Cluster state fed by the state informers, on the in-memory API server and a virtual clock."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs
import pytest

from karpenter_core.apis.objects import Pod
from karpenter_core.runtime.clock import VirtualClock
from karpenter_core.sim.apiserver import InMemoryApiServer
from karpenter_core.state.cluster import Cluster
from karpenter_core.testing import Environment
from karpenter_core.testing import builders as b

NP = "karpenter.sh/nodepool"
GI = 1024**3 * 1000


class Env(Environment):
    """The state informers and NodeClaim GC on the kit's Environment (no provider
    launches, no simulated kube-scheduler or kubelet); ``create`` settles, so cluster state
    has seen the object, and writes no status (``create_status`` does, as controllers do)."""

    def __init__(self, server: InMemoryApiServer | None = None, clock: VirtualClock | None = None):
        super().__init__(
            controllers=["state", "state.nodeclaimgc"],
            kube_scheduler=False,
            kubelet=False,
            server=server,
            clock=clock,
        )
        self.manager.start()

    def create(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        out = self.server.create(obj)
        self.settle()
        return out


@pytest.fixture
def env() -> Env:
    return Env()


def node(
    name: str = "n1",
    pid: str | None = "kwok://n1",
    *,
    labels: dict[str, str] | None = None,
    cpu: str = "4",
    memory: str = "8Gi",
) -> dict[str, Any]:
    capacity = {"cpu": cpu, "memory": memory, "pods": "110"}
    return b.node(name, provider_id=pid, labels=labels, capacity=capacity, ready=None)


MANAGED = {
    NP: "default",
    "node.kubernetes.io/instance-type": "c-4x",
    "karpenter.sh/registered": "true",
    "karpenter.sh/initialized": "true",
}


def nodeclaim(
    name: str = "nc1", pid: str = "kwok://n1", *, pool: str = "default"
) -> dict[str, Any]:
    capacity = {"cpu": "4", "memory": "8Gi", "pods": "110"} if pid else None
    return b.nodeclaim(name, nodepool=pool, provider_id=pid or None, capacity=capacity)


def pod(
    name: str = "p1",
    node_name: str | None = None,
    *,
    cpu: str = "1",
    ns: str = "default",
    owner: dict[str, Any] | None = None,
    anti_affinity: bool = False,
) -> dict[str, Any]:
    affinity = None
    if anti_affinity:
        term = {"labelSelector": {"matchLabels": {"app": "a"}}, "topologyKey": "zone"}
        affinity = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    return b.pod(
        name,
        namespace=ns,
        labels={"app": "a"},
        cpu=cpu,
        node_name=node_name,
        owner=owner,
        affinity=affinity,
    )


def create_status(env: Env, obj: dict[str, Any]) -> dict[str, Any]:
    """Create a NodeClaim and then write its status (the status subresource ignores status
    on create), as the lifecycle controller would."""
    status = obj.pop("status", None)
    out = env.server.create(obj)
    if status is not None:
        out["status"] = status
        out = env.server.update_status(out)
    env.settle()
    return out


# -- merging by provider id ---------------------------------------------------------------


def test_node_then_nodeclaim_merge_into_one_state_node(env: Env) -> None:
    env.create(node(labels=MANAGED))
    create_status(env, nodeclaim())
    (sn,) = env.cluster.state_nodes()
    assert sn.node is not None and sn.nodeclaim is not None
    assert sn.provider_id() == "kwok://n1"


def test_nodeclaim_then_node_merge_into_one_state_node(env: Env) -> None:
    create_status(env, nodeclaim())
    (sn,) = env.cluster.state_nodes()
    assert sn.node is None and sn.name() == "nc1"
    env.create(node(labels=MANAGED))
    (sn,) = env.cluster.state_nodes()
    assert sn.node is not None and sn.nodeclaim is not None and sn.name() == "n1"


def test_unlaunched_nodeclaim_is_not_capacity(env: Env) -> None:
    env.create(nodeclaim(pid=""))
    assert env.cluster.state_nodes() == []
    assert env.cluster.unlaunched_nodeclaim_exists("nc1")


def test_unmanaged_node_without_provider_id_is_keyed_by_name(env: Env) -> None:
    env.create(node("plain", pid=None))
    (sn,) = env.cluster.state_nodes()
    assert sn.name() == "plain" and not sn.managed()
    assert env.cluster.provider_id_for_node("plain") == "plain"


def test_managed_node_without_provider_id_is_ignored(env: Env) -> None:
    env.create(node(pid=None, labels=MANAGED))
    assert env.cluster.state_nodes() == []


def test_managed_uninitialized_node_without_instance_type_waits(env: Env) -> None:
    env.create(node(labels={NP: "default"}))
    assert env.cluster.state_nodes() == []


def test_deleting_node_keeps_nodeclaim_half(env: Env) -> None:
    env.create(node(labels=MANAGED))
    create_status(env, nodeclaim())
    env.server.delete("nodes", "n1")
    env.settle()
    (sn,) = env.cluster.state_nodes()
    assert sn.node is None and sn.nodeclaim is not None


def test_deleting_both_halves_removes_state_node(env: Env) -> None:
    env.create(node(labels=MANAGED))
    create_status(env, nodeclaim())
    env.server.delete("nodes", "n1")
    env.server.delete("nodeclaims", "nc1")
    env.settle()
    assert env.cluster.state_nodes() == []
    assert not env.cluster.nodeclaim_exists("nc1")


# -- pods and usage -----------------------------------------------------------------------


def test_binding_a_pod_counts_its_requests(env: Env) -> None:
    env.create(node())
    env.create(pod())
    assert env.cluster.state_nodes()[0].pod_requests().get("cpu", 0) == 0
    env.server.bind("p1", "default", "n1")
    env.settle()
    (sn,) = env.cluster.state_nodes()
    assert sn.pod_requests()["cpu"] == 1000
    assert sn.available()["cpu"] == 3000
    assert env.cluster.binding("default/p1") == "n1"


def test_deleting_a_pod_frees_its_usage(env: Env) -> None:
    env.create(node())
    env.create(pod(node_name="n1"))
    env.server.delete("pods", "p1", "default", grace_period_seconds=0)
    env.settle()
    (sn,) = env.cluster.state_nodes()
    assert sn.pod_requests().get("cpu", 0) == 0
    assert env.cluster.binding("default/p1") is None
    assert env.cluster.pod("default/p1") is None


def test_pods_stay_in_key_order_through_adds_removes_and_a_re_add(env: Env) -> None:
    """The key order is kept between reads and patched on the next one; a pod removed and
    added again between two reads is listed once."""
    cluster = env.cluster
    for name in ("p3", "p1", "p2"):
        cluster.update_pod(Pod.from_dict(pod(name)))
    assert [p.key for p in cluster.pods()] == ["default/p1", "default/p2", "default/p3"]
    cluster.delete_pod("default/p2")
    cluster.update_pod(Pod.from_dict(pod("p0")))
    cluster.delete_pod("default/p3")
    cluster.update_pod(Pod.from_dict(pod("p3", cpu="2")))
    listed = cluster.pods()
    assert [p.key for p in listed] == ["default/p0", "default/p1", "default/p3"]
    assert listed[-1].scheduling_requests["cpu"] == 2000


def test_terminal_pod_frees_usage(env: Env) -> None:
    env.create(node())
    p = env.create(pod(node_name="n1"))
    p["status"] = {"phase": "Succeeded"}
    env.server.update_status(p)
    env.settle()
    assert env.cluster.state_nodes()[0].pod_requests().get("cpu", 0) == 0


def test_pod_bound_before_its_node_is_counted_once_node_arrives(env: Env) -> None:
    env.create(pod(node_name="n1"))
    env.create(node())
    (sn,) = env.cluster.state_nodes()
    assert sn.pod_requests()["cpu"] == 1000


def test_pod_bound_to_unknown_node_is_retried_not_lost(env: Env) -> None:
    env.create(pod(node_name="n1"))
    assert env.cluster.binding("default/p1") is None
    # the node arrives later, by another path than its informer's rebuild: the pod's own
    # retry books it (once)
    env.cluster.update_node(node())
    env.manager.run_for(5)
    assert env.cluster.binding("default/p1") == "n1"
    assert env.cluster.state_nodes()[0].pod_requests()["cpu"] == 1000


def test_reapplying_the_same_pod_does_not_double_count(env: Env) -> None:
    env.create(node())
    p = env.create(pod(node_name="n1"))
    env.cluster.update_pod(p)
    env.manager.run_for(180)  # several periodic re-reads
    assert env.cluster.state_nodes()[0].pod_requests()["cpu"] == 1000


def test_node_update_keeps_pod_usage(env: Env) -> None:
    n = env.create(node())
    env.create(pod(node_name="n1"))
    n["metadata"]["labels"] = {"team": "a"}
    env.server.update(n)
    env.settle()
    (sn,) = env.cluster.state_nodes()
    assert sn.labels()["team"] == "a" and sn.pod_requests()["cpu"] == 1000


def test_state_nodes_are_independent_copies(env: Env) -> None:
    env.create(node())
    copy = env.cluster.state_nodes()[0]
    from karpenter_core.apis.objects import Pod

    copy.add_pod(Pod.from_dict(pod("ghost")))
    assert env.cluster.state_nodes()[0].pod_requests().get("cpu", 0) == 0


# -- synced -------------------------------------------------------------------------------


def test_synced_false_until_every_node_and_nodeclaim_is_seen() -> None:
    clock = VirtualClock()
    server = InMemoryApiServer(clock)
    server.create(node(labels=MANAGED))
    nc = nodeclaim()
    status = nc.pop("status")
    created = server.create(nc)
    created["status"] = status
    server.update_status(created)
    cluster = Cluster(server, clock)
    assert not cluster.synced()
    cluster.update_node(server.get("nodes", "n1"))
    assert not cluster.synced()
    cluster.update_nodeclaim(server.get("nodeclaims", "nc1"))
    assert cluster.synced()


def test_after_a_create_whose_answer_was_lost_synced_waits_for_the_api_servers_nodeclaims() -> None:
    """A NodeClaim create that failed ambiguously may have created it, and the watch that
    would bring it may be broken: state is checked against the API server itself until
    every NodeClaim it lists is known, so provisioning does not make a second one."""
    clock = VirtualClock()
    server = InMemoryApiServer(clock)
    cluster = Cluster(server, clock)
    assert cluster.synced()
    from karpenter_core.kube.client import create_with_status

    # created (and launched), but its answer lost and its event not seen
    create_with_status(server, nodeclaim("nc2", "kwok://n2"))
    assert cluster.synced()  # what state knows is consistent with itself
    cluster.confirm_with_api_server()
    assert not cluster.synced()
    assert not cluster.synced()  # still missing
    cluster.update_nodeclaim(server.get("nodeclaims", "nc2"))
    assert cluster.synced()
    create_with_status(server, nodeclaim("nc3", "kwok://n3"))
    assert cluster.synced()  # the check is over once it passed


def test_synced_false_while_a_launch_is_in_flight(env: Env) -> None:
    assert env.cluster.synced()
    env.create(nodeclaim("nc2", pid=""))
    assert not env.cluster.synced()


def test_nodeclaimgc_forgets_unlaunched_nodeclaim_deleted_unseen(env: Env) -> None:
    created = env.create(nodeclaim("nc2", pid=""))
    # the informer misses the delete (say, its watch was down): only the gc can heal it
    env.server.delete("nodeclaims", "nc2")
    env.settle()
    env.cluster.update_nodeclaim(created)  # stale seed re-applied after the delete
    env.manager.run_for(20)
    assert not env.cluster.nodeclaim_exists("nc2")
    assert env.cluster.synced()


# -- marks, nominations, nodepool resources ---------------------------------------------------


def test_mark_for_deletion_survives_updates(env: Env) -> None:
    n = env.create(node(labels=MANAGED))
    create_status(env, nodeclaim())
    env.cluster.mark_for_deletion("kwok://n1")
    n["metadata"]["labels"]["team"] = "a"
    env.server.update(n)
    env.settle()
    nc = env.server.get("nodeclaims", "nc1")
    nc["metadata"]["labels"]["x"] = "y"
    env.server.update(nc)
    env.settle()
    assert env.cluster.state_nodes()[0].marked_for_deletion
    env.cluster.unmark_for_deletion("kwok://n1")
    assert not env.cluster.state_nodes()[0].marked_for_deletion


def test_marked_node_leaves_nodepool_resources(env: Env) -> None:
    env.create(node(labels=MANAGED))
    create_status(env, nodeclaim())
    assert env.cluster.nodepool_resources("default")["cpu"] == 4000
    assert env.cluster.nodepool_node_count("default") == 1
    env.cluster.mark_for_deletion("kwok://n1")
    assert env.cluster.nodepool_resources("default") == {}
    assert env.cluster.nodepool_state.node_counts("default").deleting == 1
    env.cluster.unmark_for_deletion("kwok://n1")
    assert env.cluster.nodepool_resources("default")["cpu"] == 4000
    assert env.cluster.nodepool_state.node_counts("default").active == 1


def test_nodepool_resources_sum_nodes(env: Env) -> None:
    env.create(node("n1", "kwok://n1", labels=MANAGED))
    env.create(node("n2", "kwok://n2", labels=MANAGED, cpu="8"))
    create_status(env, nodeclaim("nc1", "kwok://n1"))
    create_status(env, nodeclaim("nc2", "kwok://n2"))
    res = env.cluster.nodepool_resources("default")
    assert res["cpu"] == 12000 and res["nodes"] == 2000


def test_nomination_expires_after_window(env: Env) -> None:
    env.create(node())
    env.cluster.nominate_node_for_pod("kwok://n1")
    assert env.cluster.is_node_nominated("kwok://n1")
    env.clock.advance(env.cluster.nomination_seconds + 1)
    assert not env.cluster.is_node_nominated("kwok://n1")


def test_consolidation_state_moves_on_binding_and_restamps_after_five_minutes(env: Env) -> None:
    env.create(node())
    before = env.cluster.consolidation_state()
    env.clock.advance(1)
    env.create(pod(node_name="n1"))
    after = env.cluster.consolidation_state()
    assert after > before
    assert env.cluster.consolidation_state() == after
    env.clock.advance(301)
    assert env.cluster.consolidation_state() > after


# -- daemonsets -----------------------------------------------------------------------------


def daemonset(name: str = "ds") -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "containers": [
                        {"name": "c", "image": "x", "resources": {"requests": {"cpu": "100m"}}}
                    ]
                },
            },
        },
    }


def test_daemonset_cache_prefers_newest_pod_over_template(env: Env) -> None:
    ds = env.create(daemonset())
    assert [p.requests["cpu"] for p in env.cluster.daemonset_pods()] == [100]
    owner = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "name": "ds",
        "uid": ds["metadata"]["uid"],
        "controller": True,
    }
    env.create(pod("ds-a", cpu="250m", owner=owner))
    assert env.cluster.daemonset_pod("default/ds") is not None
    assert [p.requests["cpu"] for p in env.cluster.daemonset_pods()] == [250]


def test_deleted_daemonset_leaves_cache_within_a_poll(env: Env) -> None:
    env.create(daemonset())
    env.server.delete("daemonsets", "ds", "default")
    env.manager.run_for(61)
    assert env.cluster.daemonset_pods() == []


# -- snapshot and restart -------------------------------------------------------------------


def test_snapshot_carries_marks_and_pods(env: Env) -> None:
    env.create(node(labels=MANAGED))
    create_status(env, nodeclaim())
    env.create(pod(node_name="n1"))
    env.create(pod("pending"))
    env.cluster.mark_for_deletion("kwok://n1")
    snap = env.cluster.snapshot()
    assert [p.key for p in snap.pending_pods()] == ["default/pending"]
    assert snap.active_state_nodes() == []
    assert snap.state_nodes()[0].pod_requests()["cpu"] == 1000


def test_snapshot_carries_namespaces_services_and_pod_controllers(env: Env) -> None:
    env.create(
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": "shop", "labels": {"team": "web"}},
        }
    )
    env.create(
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "web", "namespace": "shop"},
            "spec": {"selector": {"app": "web"}},
        }
    )
    env.create(
        {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {"name": "web-1", "namespace": "shop"},
            "spec": {
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "c", "image": "i"}]},
                },
            },
        }
    )
    snap = env.cluster.snapshot()
    assert {n.name: n.labels.get("team") for n in snap.namespaces}["shop"] == "web"
    assert [s.name for s in snap.services] == ["web"]
    assert [c.name for c in snap.controllers] == ["web-1"]


def _fingerprint(c: Cluster) -> Any:
    return [
        (
            sn.provider_id(),
            sn.name(),
            sn.pod_requests(),
            sorted(p.key for p in sn.pods),
            sn.managed(),
            sn.initialized(),
        )
        for sn in c.state_nodes()
    ], {np: c.nodepool_resources(np) for np in ("default", "other")}


def test_restart_rebuilds_identical_state(env: Env) -> None:
    env.create(node("n1", "kwok://n1", labels=MANAGED))
    create_status(env, nodeclaim("nc1", "kwok://n1"))
    create_status(env, nodeclaim("nc2", "kwok://n2", pool="other"))
    env.create(node("plain", pid=None))
    env.create(pod("a", node_name="n1"))
    env.create(pod("b", node_name="plain", cpu="2"))
    env.create(pod("c"))
    env.manager.stop()
    again = Env(server=env.server, clock=env.clock)
    again.settle()
    assert _fingerprint(again.cluster) == _fingerprint(env.cluster)
    assert again.cluster.synced()


# -- scheduling bookkeeping ------------------------------------------------------------------


def test_pod_ack_kept_and_cleared_on_delete(env: Env) -> None:
    from karpenter_core.apis.objects import Pod

    env.create(pod())
    p = Pod.from_dict(env.server.get("pods", "p1", "default"))
    env.cluster.ack_pods([p])
    first = env.cluster.pod_ack_time(p.key)
    env.clock.advance(5)
    env.cluster.ack_pods([p])
    assert env.cluster.pod_ack_time(p.key) == first
    env.clock.advance(5)
    durations = env.cluster.mark_pod_scheduling_decisions([], {"default": [p]})
    assert durations == [10.0]
    assert env.cluster.pod_scheduling_success(p.key) is not None
    env.cluster.mark_pod_scheduling_decisions([p], {})
    assert env.cluster.pod_scheduling_success(p.key) is None
    env.server.delete("pods", "p1", "default")
    env.settle()
    assert env.cluster.pod_ack_time(p.key) is None
    assert env.cluster.pod_scheduling_decision(p.key) is None


def test_anti_affinity_pods_are_reported_with_their_node(env: Env) -> None:
    env.create(node())
    env.create(pod("anti", node_name="n1", anti_affinity=True))
    env.create(pod("plain", node_name="n1"))
    seen: list[tuple[str, str]] = []
    env.cluster.for_pods_with_anti_affinity(lambda p, n: seen.append((p.key, n.name)) or True)
    assert seen == [("default/anti", "n1")]


def test_the_snapshot_keeps_what_topology_reads_of_every_pod(env: Env) -> None:
    """The namespaces (in the order the pods' keys first reach them: "a-b/..." sorts before
    "a/..."), the anti-affinity holders and the unbound pods, in key order, as a walk over
    the pods finds them, through creations, bindings and deletions; anti-affinity held
    bound or not."""
    from karpenter_core.provisioning.scheduler.topology import TopologyBase

    env.create(node())
    for ns in ("a", "a-b", "b", "c"):
        env.create(b.namespace(ns))
    env.create(pod("x", node_name="n1", ns="b"))
    env.create(pod("y", ns="a", anti_affinity=True))
    env.create(pod("z", ns="a-b", anti_affinity=True))
    env.create(pod("w", ns="a"))
    env.create(pod("v", node_name="n1", ns="c", anti_affinity=True))

    def walked(pods: Any) -> tuple[list[str], list[str]]:
        return (
            list(dict.fromkeys(p.namespace for p in pods)),
            [p.key for p in pods if p.has_required_pod_anti_affinity()],
        )

    def kept() -> tuple[list[str], list[str]]:
        snap = env.cluster.snapshot()
        facts = snap.pod_facts
        assert facts is not None and facts.pods is snap.pods
        assert (list(facts.namespaces), [p.key for p in facts.anti_affinity]) == walked(snap.pods)
        assert list(facts.unbound) == [p for p in snap.pods if not p.node_name]
        # a topology over the snapshot reads the same as over its pods walked
        base = TopologyBase(snap, [], [], {})
        walked_base = TopologyBase(attrs.evolve(snap, pods=tuple(snap.pods)), [], [], {})
        assert list(base.namespaces) == list(walked_base.namespaces)
        assert base.anti_affinity_pods == walked_base.anti_affinity_pods
        return walked(snap.pods)

    assert kept() == (["a-b", "a", "b", "c"], ["a-b/z", "a/y", "c/v"])
    env.server.delete("pods", "y", "a")
    env.create(pod("u", node_name="n1", ns="c"))
    env.create(pod("s", ns="c"))
    env.settle()
    assert [p.key for p in env.cluster.snapshot().pod_facts.unbound] == ["a-b/z", "a/w", "c/s"]
    env.server.bind("s", "c", "n1")
    env.settle()
    assert kept() == (["a-b", "a", "b", "c"], ["a-b/z", "c/v"])
    env.server.delete("pods", "w", "a")  # unbound: gone at once
    env.server.delete("pods", "z", "a-b")
    env.settle()
    assert kept() == (["b", "c"], ["c/v"])
    env.create(b.namespace("0"))
    env.create(pod("t", ns="0", anti_affinity=True))
    assert kept() == (["0", "b", "c"], ["0/t", "c/v"])
    env.server.delete("pods", "t", "0")
    env.settle()
    assert kept() == (["b", "c"], ["c/v"])


def test_listeners_hear_changes(env: Env) -> None:
    heard: list[tuple[str, str]] = []
    env.cluster.on_change(lambda kind, name: heard.append((kind, name)))
    env.create(node())
    assert ("node", "n1") in heard


def test_nodepool_generation_change_marks_unconsolidated(env: Env) -> None:
    np = env.create(b.nodepool())  # of the provider's NodeClass: state tracks only those
    stamp = env.cluster.consolidation_state()
    env.clock.advance(10)
    np["spec"]["weight"] = 5
    env.server.update(np)
    env.settle()
    assert env.cluster.consolidation_state() > stamp


# -- the scheduler reads the snapshot ----------------------------------------------------------


def _schedule_on(env: Env, cpu: str) -> dict[str, Any]:
    from karpenter_core.apis.objects import Pod
    from karpenter_core.apis.v1 import NodePool
    from karpenter_core.provisioning.scheduler import schedule
    from karpenter_core.testing.fakecatalog import (
        default_catalog,
        registered_labels,
    )

    pending = Pod.from_dict(env.server.create(pod("pending", cpu=cpu)))
    env.settle()
    pool = NodePool.from_dict(
        {
            "apiVersion": "karpenter.sh/v1",
            "kind": "NodePool",
            "metadata": {"name": "default"},
            "spec": {
                "template": {
                    "spec": {
                        "nodeClassRef": {
                            "group": "karpenter.test.sh",
                            "kind": "TestNodeClass",
                            "name": "default",
                        },
                        "requirements": [],
                    }
                }
            },
        }
    )
    with registered_labels():
        results = schedule(
            env.cluster.snapshot(), [pending], [pool], {"default": default_catalog()}
        )
    out: dict[str, Any] = results.to_json_dict()
    return out


def _existing_node(env: Env) -> None:
    n = node(labels={"kubernetes.io/hostname": "n1", "kubernetes.io/os": "linux"})
    n["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    env.create(n)
    env.create(pod("running", node_name="n1", cpu="3"))


def test_scheduler_places_a_pod_in_the_room_state_leaves(env: Env) -> None:
    _existing_node(env)
    out = _schedule_on(env, "500m")
    assert out["existingNodes"] == [{"name": "n1", "pods": ["default/pending"]}]


def test_scheduler_sees_usage_of_bound_pods(env: Env) -> None:
    _existing_node(env)
    out = _schedule_on(env, "2")
    assert out["existingNodes"] == [] and len(out["nodeClaims"]) == 1


def test_scheduler_skips_nodes_marked_for_deletion(env: Env) -> None:
    _existing_node(env)
    env.cluster.mark_for_deletion("kwok://n1")
    out = _schedule_on(env, "500m")
    assert out["existingNodes"] == [] and len(out["nodeClaims"]) == 1


# -- NodePoolState, buffer pods, pod-to-NodeClaim mapping ---------------------------------------


def test_reserve_node_count_grants_only_what_the_limit_leaves() -> None:
    from karpenter_core.state.cluster import NodePoolState

    state = NodePoolState()
    state.update_nodeclaim("default", "a", marked_for_deletion=False)
    state.update_nodeclaim("default", "b", marked_for_deletion=True)
    assert state.reserve_node_count("default", limit=5, wanted=2) == 2
    assert state.reserve_node_count("default", limit=5, wanted=4) == 1
    assert state.reserve_node_count("default", limit=5, wanted=1) == 0
    state.release_node_count("default", 10)
    assert state.reserved("default") == 0
    assert state.reserve_node_count("default", limit=1, wanted=1) == 0  # already over


def test_nodepool_state_drops_a_pool_when_its_last_claim_goes() -> None:
    from karpenter_core.state.cluster import NodePoolState

    state = NodePoolState()
    state.update_nodeclaim("default", "a", marked_for_deletion=False)
    state.reserve_node_count("default", limit=10, wanted=3)
    state.cleanup("a")
    assert state.node_counts("default").total == 0
    assert state.reserved("default") == 0


def test_deleted_nodeclaim_leaves_nodepool_state(env: Env) -> None:
    create_status(env, nodeclaim())
    assert env.cluster.nodepool_state.node_counts("default").active == 1
    env.server.delete("nodeclaims", "nc1")
    env.settle()
    assert env.cluster.nodepool_state.node_counts("default").total == 0


def test_buffer_pod_counts_are_replaced_wholesale(env: Env) -> None:
    env.cluster.update_buffer_pod_counts({"kwok://n1": 2, "kwok://n2": 1})
    env.cluster.update_buffer_pod_counts({"kwok://n2": 3})
    assert not env.cluster.has_buffer_pods("kwok://n1")
    assert env.cluster.buffer_pod_count("kwok://n2") == 3


def test_pod_to_nodeclaim_mapping_cleared_by_a_scheduling_error(env: Env) -> None:
    from karpenter_core.apis.objects import Pod

    p = Pod.from_dict(env.create(pod()))
    env.cluster.update_pod_to_nodeclaim_mapping({"nc-a": [p]})
    assert env.cluster.pod_nodeclaim(p.key) == "nc-a"
    env.cluster.mark_pod_scheduling_decisions([p], {})
    assert env.cluster.pod_nodeclaim(p.key) == ""


# -- deletions the informers never saw on their own ---------------------------------------------


def test_pod_recreated_unbound_under_the_same_name_frees_the_old_usage(env: Env) -> None:
    env.create(node())
    env.create(pod(node_name="n1"))
    env.server.delete("pods", "p1", "default", grace_period_seconds=0)
    env.server.create(pod())  # same name, pending; one reconcile sees only this one
    env.settle()
    assert env.cluster.state_nodes()[0].pod_requests().get("cpu", 0) == 0
    assert env.cluster.binding("default/p1") is None


def test_nodeclaim_recreated_unlaunched_under_the_same_name_drops_the_old_capacity(
    env: Env,
) -> None:
    create_status(env, nodeclaim())
    env.server.delete("nodeclaims", "nc1")
    env.server.create(nodeclaim(pid=""))
    env.settle()
    assert env.cluster.state_nodes() == []
    assert env.cluster.unlaunched_nodeclaim_exists("nc1")
