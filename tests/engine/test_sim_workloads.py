"""The simulator's workload controllers: replica counts hold, lost pods come back, Jobs finish."""

from __future__ import annotations

from typing import Any

import pytest

from karpenter_core.runtime.clock import VirtualClock
from karpenter_core.runtime.manager import Manager
from karpenter_core.sim import workloads
from karpenter_core.sim.apiserver import InMemoryApiServer
from karpenter_core.sim.scenario import RUN_FOR_ANNOTATION


@pytest.fixture
def env() -> tuple[VirtualClock, InMemoryApiServer, Manager]:
    clock = VirtualClock()
    server = InMemoryApiServer(clock)
    manager = Manager(clock, server)
    workloads.register(manager, server, clock)
    return clock, server, manager


def deployment(name: str, replicas: int) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "x"}]},
            },
        },
    }


def live_pods(server: InMemoryApiServer) -> list[dict[str, Any]]:
    return [
        p
        for p in server.list("pods", "default").items
        if not p["metadata"].get("deletionTimestamp")
        and p.get("status", {}).get("phase") not in ("Succeeded", "Failed")
    ]


def test_deployment_creates_its_replicas_through_a_replicaset(env: Any) -> None:
    _clock, server, manager = env
    server.create(deployment("web", 3))
    manager.run_for(1)
    pods = live_pods(server)
    assert len(pods) == 3
    (rs,) = server.list("replicasets", "default").items
    assert all(p["metadata"]["ownerReferences"][0]["uid"] == rs["metadata"]["uid"] for p in pods)
    assert all(p["metadata"]["labels"]["pod-template-hash"] for p in pods)


def test_scaling_a_deployment_adds_and_removes_pods(env: Any) -> None:
    _clock, server, manager = env
    server.create(deployment("web", 2))
    manager.run_for(1)
    server.patch("deployments", "web", {"spec": {"replicas": 5}}, "default")
    manager.run_for(1)
    assert len(live_pods(server)) == 5
    server.patch("deployments", "web", {"spec": {"replicas": 1}}, "default")
    manager.run_for(1)
    assert len(live_pods(server)) == 1


def test_a_deleted_pod_is_replaced(env: Any) -> None:
    _clock, server, manager = env
    server.create(deployment("web", 2))
    manager.run_for(1)
    victim = live_pods(server)[0]["metadata"]["name"]
    server.delete("pods", victim, "default")
    manager.run_for(1)
    names = {p["metadata"]["name"] for p in live_pods(server)}
    assert len(names) == 2 and victim not in names


def test_an_evicted_terminating_pod_is_replaced_before_it_is_gone(env: Any) -> None:
    _clock, server, manager = env
    server.create(deployment("web", 1))
    manager.run_for(1)
    (pod,) = live_pods(server)
    server.bind(pod["metadata"]["name"], "default", "node-a")
    pod = server.get("pods", pod["metadata"]["name"], "default")
    pod["status"]["phase"] = "Running"
    server.update_status(pod)
    server.evict(pod["metadata"]["name"], "default")  # graceful: 30 s deletionTimestamp
    manager.settle()
    assert server.get("pods", pod["metadata"]["name"], "default")["metadata"]["deletionTimestamp"]
    assert len(live_pods(server)) == 1


def finish(server: InMemoryApiServer, count: int) -> None:
    """Play the kubelet: ``count`` live pods succeed."""
    for pod in live_pods(server)[:count]:
        pod["status"]["phase"] = "Succeeded"
        server.update_status(pod)


def test_job_runs_parallel_pods_until_completions_succeed(env: Any) -> None:
    _clock, server, manager = env
    server.create(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "batch", "namespace": "default"},
            "spec": {
                "parallelism": 2,
                "completions": 3,
                "template": {
                    "metadata": {"annotations": {RUN_FOR_ANNOTATION: "60"}},
                    "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "x"}]},
                },
            },
        }
    )
    manager.run_for(1)
    assert len(live_pods(server)) == 2
    assert all(p["metadata"]["annotations"][RUN_FOR_ANNOTATION] == "60" for p in live_pods(server))
    finish(server, 2)
    manager.run_for(1)
    assert len(live_pods(server)) == 1  # only one completion left to run
    finish(server, 1)
    manager.run_for(1)
    job = server.get("jobs", "batch", "default")
    assert job["status"]["succeeded"] == 3
    assert job["status"]["conditions"][0]["type"] == "Complete"
    assert live_pods(server) == []


def test_lowering_parallelism_stops_extra_job_pods(env: Any) -> None:
    _clock, server, manager = env
    server.create(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "batch", "namespace": "default"},
            "spec": {
                "parallelism": 3,
                "completions": 10,
                "template": {
                    "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "x"}]}
                },
            },
        }
    )
    manager.run_for(1)
    assert len(live_pods(server)) == 3
    server.patch("jobs", "batch", {"spec": {"parallelism": 1}}, "default")
    manager.run_for(1)
    assert len(live_pods(server)) == 1


def daemonset(**pod_spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "agent", "namespace": "default"},
        "spec": {
            "selector": {"matchLabels": {"app": "agent"}},
            "template": {
                "metadata": {"labels": {"app": "agent"}},
                "spec": {"containers": [{"name": "c", "image": "x"}], **pod_spec},
            },
        },
    }


def node(name: str, labels: dict[str, str] | None = None, taints: Any = ()) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {"taints": list(taints)},
    }


def daemons(server: InMemoryApiServer) -> dict[str, str]:
    return {p["spec"]["nodeName"]: p["metadata"]["name"] for p in live_pods(server)}


def test_daemonset_runs_one_pod_on_each_node_it_selects_and_tolerates(env: Any) -> None:
    _clock, server, manager = env
    server.create(daemonset(nodeSelector={"role": "worker"}))
    server.create(node("a", {"role": "worker"}))
    server.create(node("b", {"role": "db"}))
    server.create(
        node("c", {"role": "worker"}, [{"key": "karpenter.sh/unregistered", "effect": "NoExecute"}])
    )
    manager.run_for(1)
    assert set(daemons(server)) == {"a"}
    server.patch("nodes", "c", {"spec": {"taints": []}})  # registered: the taint goes
    server.create(
        node(
            "d",
            {"role": "worker"},
            [{"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"}],
        )
    )
    manager.run_for(1)
    assert set(daemons(server)) == {"a", "c", "d"}  # not-ready is tolerated by daemons
    manager.run_for(1)
    assert len(live_pods(server)) == 3  # no duplicates on later passes


def test_a_deleted_daemon_pod_is_recreated_on_its_node(env: Any) -> None:
    _clock, server, manager = env
    server.create(daemonset())
    server.create(node("a"))
    manager.run_for(1)
    first = daemons(server)["a"]
    server.delete("pods", first, "default", grace_period_seconds=0)
    manager.run_for(1)
    assert set(daemons(server)) == {"a"} and daemons(server)["a"] != first


def statefulset(name: str, replicas: int) -> dict[str, Any]:
    sts = deployment(name, replicas)
    sts["kind"] = "StatefulSet"
    sts["spec"]["volumeClaimTemplates"] = [
        {"metadata": {"name": "data"}, "spec": {"resources": {"requests": {"storage": "1Gi"}}}}
    ]
    return sts


def test_statefulset_keeps_one_pod_per_ordinal_with_its_claim(env: Any) -> None:
    _clock, server, manager = env
    server.create(statefulset("db", 3))
    manager.run_for(1)
    pods = {p["metadata"]["name"]: p for p in live_pods(server)}
    assert sorted(pods) == ["db-0", "db-1", "db-2"]
    assert pods["db-1"]["metadata"]["labels"]["apps.kubernetes.io/pod-index"] == "1"
    assert pods["db-1"]["spec"]["volumes"] == [
        {"name": "data", "persistentVolumeClaim": {"claimName": "data-db-1"}}
    ]
    claims = sorted(c["metadata"]["name"] for c in server.list("persistentvolumeclaims").items)
    assert claims == ["data-db-0", "data-db-1", "data-db-2"]
    server.patch("statefulsets", "db", {"spec": {"replicas": 2}}, "default")
    manager.run_for(1)
    assert sorted(p["metadata"]["name"] for p in live_pods(server)) == ["db-0", "db-1"]


def test_an_evicted_statefulset_pod_comes_back_under_its_name_once_gone(env: Any) -> None:
    _clock, server, manager = env
    server.create(statefulset("db", 1))
    manager.run_for(1)
    (pod,) = live_pods(server)
    uid = pod["metadata"]["uid"]
    server.bind("db-0", "default", "node-a")
    server.evict("db-0", "default")  # graceful: 30 s deletionTimestamp
    manager.settle()
    # the name is taken until the pod is gone: no second pod meanwhile
    assert server.get("pods", "db-0", "default")["metadata"]["uid"] == uid
    assert live_pods(server) == []
    server.delete("pods", "db-0", "default", grace_period_seconds=0)
    manager.run_for(1)
    (back,) = live_pods(server)
    assert back["metadata"]["name"] == "db-0" and back["metadata"]["uid"] != uid
    assert back["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"] == "data-db-0"


@pytest.mark.parametrize("seed", range(6))
def test_a_replicaset_keeps_its_replicas_through_any_mix_of_changes(seed: int) -> None:
    """The ReplicaSet counts its active pods as their states change instead of recounting
    them on each reconcile: whatever happens to its pods (deleted, evicted, failed,
    finished, scaled), it keeps exactly the wanted number alive and its count matches a
    recount."""
    import random

    rng = random.Random(seed)
    clock = VirtualClock()
    server = InMemoryApiServer(clock)
    manager = Manager(clock, server)
    controller = workloads.register(manager, server, clock)
    replicas = 6
    server.create(deployment("web", replicas))
    manager.run_for(1)
    for _ in range(40):
        live = live_pods(server)
        op = rng.choice(("scale", "delete", "evict", "fail", "succeed", "bind"))
        pod = rng.choice(live) if live else None
        if op == "scale":
            replicas = rng.randint(0, 9)
            server.patch("deployments", "web", {"spec": {"replicas": replicas}}, "default")
        elif pod is not None:
            name = pod["metadata"]["name"]
            if op == "delete":
                server.delete("pods", name, "default")
            elif op == "evict":
                server.evict(name, "default")
            elif op == "bind" and not pod["spec"].get("nodeName"):
                server.bind(name, "default", "node-a")
            elif op in ("fail", "succeed"):
                pod["status"]["phase"] = "Failed" if op == "fail" else "Succeeded"
                server.update_status(pod)
        manager.run_for(rng.choice((0.5, 1, 40)))
        assert len(live_pods(server)) == replicas, (seed, op)
        for uid, pods in controller._pods.items():
            assert controller._active.get(uid, 0) == sum(p.active for p in pods.values())
