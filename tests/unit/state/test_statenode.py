"""StateNode: which half (Node or NodeClaim) answers, ephemeral taints, capacity, usage."""

from __future__ import annotations

from typing import Any

import pytest

from karpenter_core.apis import v1
from karpenter_core.apis.hostports import HostPort
from karpenter_core.apis.objects import Node, Pod
from karpenter_core.state.statenode import StateNode
from karpenter_core.testing import builders as b

GI = 1024**3 * 1000
NOT_READY = {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}
CUSTOM = {"key": "dedicated", "value": "db", "effect": "NoSchedule"}
STARTUP = {"key": "example.com/agent-not-ready", "effect": "NoExecute"}


def node(
    name: str = "n1",
    *,
    labels: dict[str, str] | None = None,
    taints: list[dict[str, Any]] | None = None,
    capacity: dict[str, str] | None = None,
    allocatable: dict[str, str] | None = None,
    **meta: Any,
) -> Node:
    return Node.from_dict(
        {
            "metadata": {"name": name, "labels": labels or {}, **meta},
            "spec": {"providerID": f"kwok://{name}", "taints": taints or []},
            "status": {
                "capacity": capacity or {"cpu": "4"},
                "allocatable": allocatable or capacity or {"cpu": "4"},
            },
        }
    )


def nodeclaim(
    name: str = "nc1",
    *,
    taints: list[dict[str, Any]] | None = None,
    startup: list[dict[str, Any]] | None = None,
    labels: dict[str, str] | None = None,
    status: dict[str, Any] | None = None,
    **meta: Any,
) -> v1.NodeClaim:
    return v1.NodeClaim.from_dict(nodeclaim_dict(name, taints, startup, labels, status, **meta))


def nodeclaim_dict(
    name: str,
    taints: list[dict[str, Any]] | None,
    startup: list[dict[str, Any]] | None,
    labels: dict[str, str] | None,
    status: dict[str, Any] | None,
    **meta: Any,
) -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodeClaim",
        "metadata": {
            "name": name,
            "labels": labels or {"karpenter.sh/nodepool": "default"},
            **meta,
        },
        "spec": {
            "nodeClassRef": {
                "group": "karpenter.kwok.sh",
                "kind": "KWOKNodeClass",
                "name": "default",
            },
            "requirements": [],
            "taints": taints or [],
            "startupTaints": startup or [],
        },
        "status": {
            "providerID": "kwok://n1",
            "capacity": {"cpu": "8", "memory": "16Gi"},
            "allocatable": {"cpu": "7", "memory": "15Gi"},
            **(status or {}),
        },
    }


REGISTERED = {"karpenter.sh/registered": "true", "karpenter.sh/nodepool": "default"}
INITIALIZED = {**REGISTERED, "karpenter.sh/initialized": "true"}


def pod(name: str, cpu: str = "1", *, ds: bool = False, host_port: int | None = None) -> Pod:
    owner = b.owner_reference("DaemonSet", "d", uid="u") if ds else None
    host_ports = [host_port] if host_port else ()
    return Pod.from_dict(b.pod(name, cpu=cpu, node_name="n1", owner=owner, host_ports=host_ports))


def test_needs_a_node_or_a_nodeclaim() -> None:
    with pytest.raises(ValueError):
        StateNode()


def test_unmanaged_node_is_registered_and_initialized() -> None:
    sn = StateNode(node())
    assert not sn.managed()
    assert sn.registered() and sn.initialized()
    assert sn.name() == "n1"


def test_launched_nodeclaim_without_node_answers_from_the_nodeclaim() -> None:
    sn = StateNode(None, nodeclaim(taints=[CUSTOM]))
    assert sn.managed() and not sn.registered() and not sn.initialized()
    assert sn.name() == "nc1"
    assert sn.provider_id() == "kwok://n1"
    assert sn.nodepool_name() == "default"
    assert [t.key for t in sn.taints()] == ["dedicated"]
    assert sn.allocatable() == {"cpu": 7000, "memory": 15 * GI}


def test_unregistered_node_uses_nodeclaim_labels_and_taints() -> None:
    sn = StateNode(
        node(labels={"karpenter.sh/nodepool": "default"}, taints=[NOT_READY]),
        nodeclaim(taints=[CUSTOM], labels={"from": "claim"}),
    )
    assert sn.labels() == {"from": "claim"}
    assert sn.name() == "nc1"
    assert [t.key for t in sn.taints()] == ["dedicated"]


@pytest.mark.parametrize(
    ("has_node", "managed", "node_labels", "answers", "registered", "initialized"),
    [
        (True, False, {}, "node", True, True),  # unmanaged: the Node, always ready
        (False, True, {}, "claim", False, False),  # launched, no Node yet
        (True, True, {}, "claim", False, False),  # Node not yet registered
        (True, True, {"karpenter.sh/registered": "false"}, "claim", False, False),
        (True, True, REGISTERED, "node", True, False),
        (True, True, INITIALIZED, "node", True, True),
    ],
)
def test_one_half_answers_every_identity_reader(
    has_node: bool,
    managed: bool,
    node_labels: dict[str, str],
    answers: str,
    registered: bool,
    initialized: bool,
) -> None:
    n = node(labels=node_labels, annotations={"side": "node"}) if has_node else None
    claim = nodeclaim(annotations={"side": "claim"}) if managed else None
    sn = StateNode(n, claim)
    assert (sn.registered(), sn.initialized()) == (registered, initialized)
    if answers == "node":
        assert n is not None
        assert (sn.name(), sn.labels(), sn.annotations()) == ("n1", n.labels, {"side": "node"})
    else:
        assert claim is not None
        assert sn.name() == "nc1"
        assert sn.labels() == claim.metadata.labels
        assert sn.annotations() == {"side": "claim"}


def test_registered_uninitialized_node_drops_ephemeral_and_startup_taints() -> None:
    sn = StateNode(
        node(labels=REGISTERED, taints=[NOT_READY, STARTUP, CUSTOM]),
        nodeclaim(startup=[STARTUP]),
    )
    assert sn.name() == "n1"
    assert [t.key for t in sn.taints()] == ["dedicated"]


def test_readiness_prefixed_taints_are_ephemeral() -> None:
    sn = StateNode(
        node(labels=REGISTERED, taints=[{"key": "readiness.k8s.io/net", "effect": "NoSchedule"}]),
        nodeclaim(),
    )
    assert sn.taints() == ()


def test_initialized_node_keeps_all_taints() -> None:
    sn = StateNode(
        node(labels=INITIALIZED, taints=[NOT_READY, STARTUP]), nodeclaim(startup=[STARTUP])
    )
    assert [t.key for t in sn.taints()] == [
        "node.kubernetes.io/not-ready",
        "example.com/agent-not-ready",
    ]


def test_unmanaged_node_keeps_ephemeral_taints() -> None:
    assert [t.key for t in StateNode(node(taints=[NOT_READY])).taints()] == [
        "node.kubernetes.io/not-ready"
    ]


def test_uninitialized_capacity_is_filled_from_the_nodeclaim_and_counts_one_node() -> None:
    sn = StateNode(node(labels=REGISTERED, capacity={"cpu": "8", "memory": "0"}), nodeclaim())
    assert sn.capacity() == {"cpu": 8000, "memory": 16 * GI, "nodes": 1000}


def test_initialized_capacity_is_the_nodes_own() -> None:
    sn = StateNode(node(labels=INITIALIZED, capacity={"cpu": "8"}), nodeclaim())
    assert sn.capacity() == {"cpu": 8000, "nodes": 1000}


def test_available_subtracts_bound_pod_requests_including_pod_count() -> None:
    sn = StateNode(
        node(allocatable={"cpu": "4", "pods": "10"}, capacity={"cpu": "4", "pods": "10"}),
        pods=[pod("a"), pod("b", "500m")],
    )
    assert sn.pod_requests() == {"cpu": 1500, "pods": 2000}
    assert sn.available() == {"cpu": 2500, "pods": 8000}


def test_daemonset_requests_tracked_separately() -> None:
    sn = StateNode(node(), pods=[pod("a"), pod("agent", "200m", ds=True)])
    assert sn.daemonset_requests() == {"cpu": 200, "pods": 1000}


def test_host_ports_and_volumes_are_tracked() -> None:
    sn = StateNode(
        node(),
        pods=[pod("a", host_port=8080)],
        volume_limits={"csi.x": 1},
        pod_volumes={"default/a": {"csi.x": frozenset({"default/pvc-a"})}},
    )
    assert (
        sn.host_port_usage().conflicts("default/other", [HostPort.new("0.0.0.0", 8080)]) is not None
    )
    assert sn.volume_limits() == {"csi.x": 1}
    assert (
        sn.volume_usage().exceeds_limits(
            {"csi.x": frozenset({"default/pvc-b"})}, sn.volume_limits()
        )
        is not None
    )


def test_copy_is_independent() -> None:
    sn = StateNode(node(), pods=[pod("a")])
    cp = sn.copy()
    cp.add_pod(pod("b", host_port=9090))
    assert sn.pod_requests() == {"cpu": 1000, "pods": 1000}
    assert cp.pod_requests() == {"cpu": 2000, "pods": 2000}
    assert sn.host_port_usage().conflicts("default/x", [HostPort.new("0.0.0.0", 9090)]) is None


def test_copies_share_pods_until_either_side_changes_them() -> None:
    """copy() shares the pod list and requests (most copies are only read); whichever
    side adds or removes a pod first takes its own, in either direction and for copies
    of copies, and the others keep what they had."""
    sn = StateNode(node(), pods=[pod("a"), pod("b")])
    cp = sn.copy()
    cpcp = cp.copy()
    assert cp.pods is sn.pods  # shared while nobody changes them
    sn.add_pod(pod("c"))
    cp.remove_pod("default/a")
    cpcp.add_pod(pod("d"))
    assert [p.name for p in sn.pods] == ["a", "b", "c"]
    assert [p.name for p in cp.pods] == ["b"]
    assert [p.name for p in cpcp.pods] == ["a", "b", "d"]
    assert sn.pod_requests()["cpu"] == 3000
    assert cp.pod_requests()["cpu"] == 1000
    assert cpcp.pod_requests()["cpu"] == 3000
    assert (sn.has_pod("default/a"), cp.has_pod("default/a")) == (True, False)
    again = sn.copy()
    again.remove_pod("default/c")
    assert sn.has_pod("default/c") and not again.has_pod("default/c")


def test_copies_share_host_ports_and_volumes_until_either_side_claims_or_releases() -> None:
    """Host-port and volume usage are shared by copies too: a reservation (the scheduler
    placing a pod) or a pod leaving on one side is not seen by the other, in either
    direction; a pod that claims neither copies nothing."""
    sn = StateNode(
        node(),
        pods=[pod("a", host_port=8080)],
        volume_limits={"csi.x": 2},
        pod_volumes={"default/a": {"csi.x": frozenset({"default/pvc-a"})}},
    )
    cp = sn.copy()
    assert cp.host_port_usage() is sn.host_port_usage()
    cp.reserve("default/plain", (), None)  # claims nothing: still shared
    assert cp.host_port_usage() is sn.host_port_usage()
    cp.reserve(
        "default/b", [HostPort.new("0.0.0.0", 9090)], {"csi.x": frozenset({"default/pvc-b"})}
    )

    def port_taken(n: StateNode, port: int) -> bool:
        return (
            n.host_port_usage().conflicts("default/x", [HostPort.new("0.0.0.0", port)]) is not None
        )

    def volumes_full(n: StateNode) -> bool:
        new = {"csi.x": frozenset({"default/pvc-c"})}
        return n.volume_usage().exceeds_limits(new, n.volume_limits()) is not None

    assert (port_taken(cp, 9090), port_taken(sn, 9090)) == (True, False)
    assert (volumes_full(cp), volumes_full(sn)) == (True, False)
    again = sn.copy()
    sn.remove_pod("default/a")  # the original releases: the new copy still holds port 8080
    assert (port_taken(sn, 8080), port_taken(again, 8080), port_taken(cp, 8080)) == (
        False,
        True,
        True,
    )
    assert "default/a" in again.volume_usage() and "default/a" not in sn.volume_usage()


def test_what_is_derived_from_pods_is_kept_until_they_change_and_shared_by_copies() -> None:
    """from_pods computes once per version of the pod list; a copy with the same pods
    reuses it, and a pod added or removed on either side recomputes on that side only."""
    calls: list[list[str]] = []

    def names(pods: Any) -> tuple[str, ...]:
        calls.append([p.name for p in pods])
        return tuple(p.name for p in pods)

    sn = StateNode(node(), pods=[pod("a"), pod("b")])
    assert sn.from_pods("names", names) == ("a", "b")
    cp = sn.copy()
    assert cp.from_pods("names", names) == ("a", "b")
    assert len(calls) == 1
    cp.add_pod(pod("c"))
    sn.remove_pod("default/a")
    assert cp.from_pods("names", names) == ("a", "b", "c")
    assert sn.from_pods("names", names) == ("b",)
    assert sn.copy().from_pods("names", names) == ("b",)
    assert len(calls) == 3
    sn.add_pod(pod("b", "2"))  # re-adding an updated pod is a change too
    assert sn.from_pods("names", names) == ("b",)
    assert len(calls) == 4


def test_label_requirements_are_built_once_per_labels_and_follow_a_new_node() -> None:
    sn = StateNode(node(labels={"zone": "a", "arch": "amd64"}))
    reqs = sn.label_requirements()
    assert sorted(reqs) == ["arch", "zone"] and reqs["zone"].has("a")
    assert sn.label_requirements() is reqs
    assert sn.copy().label_requirements() is reqs
    sn.node = node(labels={"zone": "b"})  # cluster state takes a changed node
    changed = sn.label_requirements()
    assert sorted(changed) == ["zone"] and changed["zone"].has("b")
    assert not changed["zone"].has("a")


def test_label_requirements_built_by_a_copy_serve_the_node_and_later_copies() -> None:
    """Snapshots copy every node and the copies are what ask: what one copy builds must
    not be built again by the next snapshot's copy."""
    sn = StateNode(node(labels={"zone": "a"}))
    first = sn.copy().label_requirements()
    assert sn.label_requirements() is first
    assert sn.copy().label_requirements() is first
    sn.node = node(labels={"zone": "a"})  # re-read, same labels: kept
    assert sn.copy().label_requirements() is first
    sn.node = node(labels={"zone": "b"})
    assert sn.copy().label_requirements()["zone"].has("b")


def test_hostname_label_wins_over_name() -> None:
    assert StateNode(node(labels={"kubernetes.io/hostname": "host-1"})).hostname() == "host-1"
    assert StateNode(node()).hostname() == "n1"


@pytest.mark.parametrize(
    ("sn", "marked"),
    [
        pytest.param(StateNode(node()), False, id="plain"),
        pytest.param(
            StateNode(node(deletionTimestamp="2024-01-01T00:00:00Z")),
            True,
            id="unmanaged-node-deleting",
        ),
        pytest.param(
            StateNode(None, nodeclaim(deletionTimestamp="2024-01-01T00:00:00Z")),
            True,
            id="nodeclaim-deleting",
        ),
        pytest.param(
            StateNode(
                None,
                nodeclaim(
                    status={"conditions": [{"type": "InstanceTerminating", "status": "True"}]}
                ),
            ),
            True,
            id="instance-terminating",
        ),
        pytest.param(
            StateNode(node(deletionTimestamp="2024-01-01T00:00:00Z"), nodeclaim()),
            False,
            id="managed-node-deleting-claim-alive",
        ),
        pytest.param(StateNode(node(), marked_for_deletion=True), True, id="explicitly-marked"),
    ],
)
def test_marked_for_deletion(sn: StateNode, marked: bool) -> None:
    assert sn.marked_for_deletion is marked


def test_hands_back_the_nodeclaim_it_was_given() -> None:
    nc = nodeclaim(taints=[CUSTOM]).with_defaults()
    sn = StateNode(None, nc)
    assert sn.nodeclaim is nc
    assert sn.copy().nodeclaim is nc
    assert sn.name() == "nc1"
    assert [t.key for t in sn.taints()] == ["dedicated"]
