"""Seeding the in-memory API server from a snapshot's objects (no Manager: the objects
only), and the server's restore."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from karpenter_core.runtime.clock import VirtualClock
from karpenter_core.sim.apiserver import InMemoryApiServer
from karpenter_core.sim.startstate import DEFAULT_START, rank, seed_from_objects, starting_state_of
from karpenter_core.snapshot import Snapshot


def _pod(name: str, ns: str = "shop", owner_uid: str = "") -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": name,
        "namespace": ns,
        "uid": f"uid-{name}",
        "creationTimestamp": "2024-05-05T05:05:05Z",
        "resourceVersion": "99",
    }
    if owner_uid:
        meta["ownerReferences"] = [
            {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "name": "rs",
                "uid": owner_uid,
                "controller": True,
            }
        ]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {"containers": [{"name": "c", "image": "i"}], "nodeName": "n1"},
        "status": {"phase": "Running", "startTime": "2024-05-05T05:05:06Z"},
    }


def test_restore_keeps_uid_creation_and_status() -> None:
    server = InMemoryApiServer(VirtualClock(datetime(2025, 1, 1, tzinfo=UTC)))
    server.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}})
    got = server.restore(_pod("p"))
    assert got["metadata"]["uid"] == "uid-p"
    assert got["metadata"]["creationTimestamp"] == "2024-05-05T05:05:05Z"
    assert got["status"]["phase"] == "Running" and got["spec"]["nodeName"] == "n1"
    assert got["metadata"]["resourceVersion"] != "99"
    # a second object cannot take a uid already in use: it gets its own
    other = server.restore({**_pod("q"), "metadata": {**_pod("q")["metadata"], "uid": "uid-p"}})
    assert other["metadata"]["uid"] != "uid-p"
    # create still stamps its own
    made = _pod("r")
    del made["metadata"]["resourceVersion"]
    fresh = server.create(made)
    assert fresh["metadata"]["uid"] != "uid-r" and fresh["status"]["phase"] == "Pending"


def test_seeding_orders_owners_first_makes_namespaces_and_says_what_it_left_out() -> None:
    server = InMemoryApiServer(VirtualClock(datetime(2025, 1, 1, tzinfo=UTC)))
    rs = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": "rs", "namespace": "shop", "uid": "rs-uid"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {}}, "template": {}},
    }
    lease = {
        "apiVersion": "coordination.k8s.io/v1beta9",
        "kind": "Lease",
        "metadata": {"name": "l"},
    }
    gone = _pod("gone")
    gone["metadata"]["deletionTimestamp"] = "2024-05-05T06:00:00Z"
    seeded = seed_from_objects(
        server, [_pod("p", owner_uid="rs-uid"), lease, rs, gone, {"kind": "Pod"}]
    )
    assert seeded.created == {"Namespace": 1, "Pod": 1, "ReplicaSet": 1}
    assert server.get("pods", "p", "shop")["metadata"]["ownerReferences"][0]["uid"] == "rs-uid"
    notes = " | ".join(seeded.notes)
    assert "1 objects being deleted" in notes
    assert "1 Lease objects" in notes
    assert "1 snapshot items without apiVersion, kind or name" in notes
    # no provider given: the (absent) nodes need no adoption, so nothing is said about it
    assert "adopt" not in notes


def test_nodes_without_an_adopting_provider_are_kept_and_said_so() -> None:
    server = InMemoryApiServer(VirtualClock(datetime(2025, 1, 1, tzinfo=UTC)))
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n1"},
        "status": {"phase": "Running"},
    }
    seeded = seed_from_objects(server, [node], provider=object())
    assert seeded.created == {"Node": 1}
    assert any("cannot adopt" in n for n in seeded.notes)


def test_rank_puts_namespaces_first_and_pods_last() -> None:
    kinds = ["Pod", "ReplicaSet", "ConfigMap", "Deployment", "NodeClaim", "Node", "Namespace"]
    assert sorted(kinds, key=rank) == [
        "Namespace",
        "Node",
        "NodeClaim",
        "Deployment",
        "ReplicaSet",
        "ConfigMap",
        "Pod",
    ]


def test_start_time_is_taken_at_else_the_newest_object() -> None:
    pod = _pod("p")
    taken = starting_state_of(Snapshot.from_objects([pod], taken_at="2025-03-03T03:03:03Z"), "s")
    assert taken.taken_at == datetime(2025, 3, 3, 3, 3, 3, tzinfo=UTC)
    untimed = starting_state_of(Snapshot.from_objects([pod]), "s")
    assert untimed.taken_at == datetime(2024, 5, 5, 5, 5, 5, tzinfo=UTC)
    assert starting_state_of(Snapshot.from_objects([]), "s").taken_at == DEFAULT_START


def test_pods_whose_owner_is_missing_are_said_so() -> None:
    server = InMemoryApiServer(VirtualClock(datetime(2025, 1, 1, tzinfo=UTC)))
    seeded = seed_from_objects(server, [_pod("p", owner_uid="no-such-rs"), _pod("q")])
    assert seeded.created["Pod"] == 2
    assert any("does not hold" in n and "(1 ReplicaSet pods)" in n for n in seeded.notes), (
        seeded.notes
    )


def test_pods_of_captured_workloads_need_no_note_but_an_unsimulated_owner_does() -> None:
    """A StatefulSet the snapshot holds runs in the simulation: its pods are replaced. A
    pod owned by a kind no simulated controller runs (an operator's) is not."""
    server = InMemoryApiServer(VirtualClock(datetime(2025, 1, 1, tzinfo=UTC)))
    sts = {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "db", "namespace": "shop", "uid": "sts-uid"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {}}, "template": {}},
    }
    member = _pod("db-0")
    member["metadata"]["ownerReferences"] = [
        {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db", "uid": "sts-uid",
         "controller": True}
    ]  # fmt: skip
    seeded = seed_from_objects(server, [sts, member])
    assert seeded.created == {"Namespace": 1, "Pod": 1, "StatefulSet": 1}
    assert not any("owner" in n for n in seeded.notes), seeded.notes
    flink = {**_pod("job-1")}
    flink["metadata"]["ownerReferences"] = [
        {"apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkDeployment", "name": "f",
         "uid": "f-uid", "controller": True}
    ]  # fmt: skip
    seeded = seed_from_objects(server, [flink])
    assert any("(1 FlinkDeployment pods)" in n for n in seeded.notes), seeded.notes
