"""Properties of informer-fed cluster state, checked against an independent oracle: merging a
fresh listing of the API server with :class:`ClusterSnapshot` (which the scheduler's
``karpenter schedule`` path uses). Whatever history of Nodes, NodeClaims and pods the API
saw, and however the informers interleaved with it, state must end up the same as the
listing says — and a restarted Cluster over the same server must agree."""

from __future__ import annotations

import threading
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_cluster import MANAGED, Env, node, nodeclaim, pod

from karpenter_core.apis.objects import Node, Pod
from karpenter_core.apis.v1 import NodeClaim
from karpenter_core.kube.client import ApiError
from karpenter_core.runtime.clock import VirtualClock
from karpenter_core.sim.apiserver import InMemoryApiServer
from karpenter_core.state.cluster import Cluster
from karpenter_core.state.snapshot import ClusterSnapshot
from karpenter_core.state.statenode import StateNode

NODES = 2
PODS = 3

OPS = st.sampled_from(
    [
        "node",
        "node_managed",
        "node_unmanaged_no_pid",
        "node_relabel",
        "node_delete",
        "nodeclaim",
        "nodeclaim_unlaunched",
        "nodeclaim_launch",
        "nodeclaim_delete",
        "pod_pending",
        "pod_bound",
        "pod_bind",
        "pod_finish",
        "pod_delete",
    ]
)


def _apply(server: InMemoryApiServer, op: str, i: int, j: int) -> None:
    name, pid, nc_name, pod_name = f"n{i}", f"kwok://n{i}", f"nc{i}", f"p{j}"
    try:
        if op == "node":
            server.create(node(name, pid))
        elif op == "node_managed":
            server.create(node(name, pid, labels=dict(MANAGED)))
        elif op == "node_unmanaged_no_pid":
            server.create(node(name, None))
        elif op == "node_relabel":
            n = server.get("nodes", name)
            n["metadata"].setdefault("labels", {})["touched"] = str(j)
            server.update(n)
        elif op == "node_delete":
            server.delete("nodes", name)
        elif op in ("nodeclaim", "nodeclaim_unlaunched"):
            obj = nodeclaim(nc_name, pid)
            status = obj.pop("status", None)
            created = server.create(obj)
            if op == "nodeclaim" and status is not None:
                created["status"] = status
                server.update_status(created)
        elif op == "nodeclaim_launch":
            nc = server.get("nodeclaims", nc_name)
            nc["status"] = nodeclaim(nc_name, pid)["status"]
            server.update_status(nc)
        elif op == "nodeclaim_delete":
            server.delete("nodeclaims", nc_name)
        elif op == "pod_pending":
            server.create(pod(pod_name, cpu="100m"))
        elif op == "pod_bound":
            server.create(pod(pod_name, name, cpu="100m"))
        elif op == "pod_bind":
            server.bind(pod_name, "default", name)
        elif op == "pod_finish":
            p = server.get("pods", pod_name, "default")
            p["status"] = {**(p.get("status") or {}), "phase": "Succeeded"}
            server.update_status(p)
        elif op == "pod_delete":
            server.delete("pods", pod_name, "default", grace_period_seconds=0)
    except ApiError:
        pass  # the op did not apply to the current world (already exists, not found...)


def _fingerprint_nodes(nodes: list[StateNode]) -> list[Any]:
    return sorted(
        (
            sn.provider_id(),
            sn.name(),
            sn.node is not None,
            sn.nodeclaim is not None,
            tuple(sorted(sn.pod_requests().items())),
            tuple(sorted(p.key for p in sn.pods)),
            sn.initialized(),
        )
        for sn in nodes
    )


def _nonzero(r: dict[str, int]) -> dict[str, int]:
    return {k: v for k, v in r.items() if v}


def _oracle(server: InMemoryApiServer) -> ClusterSnapshot:
    return ClusterSnapshot(
        nodes=[Node.from_dict(n) for n in server.list("nodes").items],
        nodeclaims=[NodeClaim.from_dict(n) for n in server.list("nodeclaims").items],
        pods=[Pod.from_dict(p) for p in server.list("pods").items],
    )


def _check(cluster: Cluster, server: InMemoryApiServer) -> None:
    oracle = _oracle(server)
    assert _fingerprint_nodes(cluster.state_nodes()) == _fingerprint_nodes(oracle.state_nodes())
    for pool in ("default",):
        assert _nonzero(cluster.nodepool_resources(pool)) == _nonzero(
            oracle.nodepool_resources(pool)
        )
    # in key order, each pod as listed now (the order is kept between changes, not redone)
    listed = sorted((p.key, p.node_name, p.phase) for p in oracle.pods)
    assert [(p.key, p.node_name, p.phase) for p in cluster.pods()] == listed
    assert [(p.key, p.node_name, p.phase) for p in cluster.snapshot().pods] == listed


STEPS = st.lists(
    st.tuples(OPS, st.integers(0, NODES - 1), st.integers(0, PODS - 1), st.booleans()),
    min_size=1,
    max_size=50,
)
"""Each step: an operation on the API server, the node and pod it concerns, and whether the
informers catch up (and state is checked) right after it."""


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=STEPS)
def test_informer_state_matches_a_fresh_listing(steps: list[tuple[str, int, int, bool]]) -> None:
    env = Env()
    for op, i, j, settle in steps:
        _apply(env.server, op, i, j)
        if settle:
            env.settle()
            _check(env.cluster, env.server)
    env.manager.run_for(30)
    _check(env.cluster, env.server)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=STEPS)
def test_restart_over_the_same_server_agrees(steps: list[tuple[str, int, int, bool]]) -> None:
    env = Env()
    for op, i, j, settle in steps:
        _apply(env.server, op, i, j)
        if settle:
            env.settle()
    env.manager.run_for(30)
    env.manager.stop()
    again = Env(server=env.server, clock=env.clock)
    again.manager.run_for(30)
    assert _fingerprint_nodes(again.cluster.state_nodes()) == _fingerprint_nodes(
        env.cluster.state_nodes()
    )
    assert _nonzero(again.cluster.nodepool_resources("default")) == _nonzero(
        env.cluster.nodepool_resources("default")
    )


def test_concurrent_pod_updates_leave_consistent_usage() -> None:
    """Threads binding and deleting pods at once (as serve's workers do) never corrupt usage."""
    clock = VirtualClock()
    server = InMemoryApiServer(clock)
    cluster = Cluster(server, clock)
    cluster.update_node(server.create(node("n1", "kwok://n1", cpu="1000")))
    pods = [server.create(pod(f"p{k}", "n1", cpu="100m")) for k in range(200)]

    def worker(chunk: list[dict[str, Any]]) -> None:
        for p in chunk:
            cluster.update_pod(p)
            cluster.update_pod(p)
        for p in chunk[::2]:
            cluster.delete_pod(f"default/{p['metadata']['name']}")

    threads = [threading.Thread(target=worker, args=(pods[k::8],)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    kept = sum(len(pods[k::8][1::2]) for k in range(8))
    (sn,) = cluster.state_nodes()
    assert len(sn.pods) == kept
    assert sn.pod_requests()["cpu"] == 100 * kept
