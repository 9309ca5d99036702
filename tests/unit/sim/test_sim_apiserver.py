"""In-memory API server behaviour beyond the shared contract: history bounds, indexes,
bookmarks, PDB status bookkeeping, determinism, scale and thread safety."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from karpenter_core.kube.client import (
    ADDED,
    BOOKMARK,
    AlreadyExists,
    BadRequest,
    Forbidden,
    Gone,
    Invalid,
    NotFound,
)
from karpenter_core.runtime.clock import VirtualClock
from karpenter_core.sim.apiserver import InMemoryApiServer, apply_json_patch, apply_merge_patch
from karpenter_core.testing import builders as b


def cm(name: str, namespace: str = "default", **meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, **meta},
    }


def pod(name: str, node: str | None = None, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return b.pod(name, node_name=node, labels=labels)


def test_watch_older_than_the_history_is_gone() -> None:
    server = InMemoryApiServer(watch_history=5)
    first = server.create(cm("a"))
    for i in range(10):
        server.create(cm(f"x{i}"))
    with pytest.raises(Gone, match="too old"):
        server.watch("configmaps", resource_version=first["metadata"]["resourceVersion"])


def test_watch_within_the_history_replays_every_later_event() -> None:
    server = InMemoryApiServer(watch_history=5)
    for i in range(10):
        server.create(cm(f"x{i}"))
    recent = server.create(cm("recent"))
    server.create(cm("after1"))
    server.create(cm("after2"))
    stream = server.watch("configmaps", resource_version=recent["metadata"]["resourceVersion"])
    assert [e.object["metadata"]["name"] for e in stream.poll()] == ["after1", "after2"]


def test_a_non_numeric_resource_version_is_a_bad_request() -> None:
    with pytest.raises(BadRequest, match="not valid"):
        InMemoryApiServer().watch("configmaps", resource_version="abc")


def test_send_bookmarks_reaches_only_watches_that_asked() -> None:
    server = InMemoryApiServer()
    rv = server.resource_version
    with_marks = server.watch("configmaps", resource_version=rv, allow_watch_bookmarks=True)
    without = server.watch("configmaps", resource_version=rv)
    server.create(cm("a"))
    server.send_bookmarks()
    marks = with_marks.poll()
    assert [e.type for e in marks] == [ADDED, BOOKMARK]
    assert marks[1].object["metadata"]["resourceVersion"] == server.resource_version
    assert [e.type for e in without.poll()] == [ADDED]


def test_send_initial_events_requires_bookmarks() -> None:
    with pytest.raises(Invalid, match="allowWatchBookmarks"):
        InMemoryApiServer().watch("configmaps", send_initial_events=True)


def test_stopped_watches_receive_nothing_more() -> None:
    server = InMemoryApiServer()
    stream = server.watch("configmaps", resource_version=server.resource_version)
    stream.stop()
    server.create(cm("a"))
    assert stream.poll() == []


def test_pods_by_node_index_follows_binding_and_deletion() -> None:
    server = InMemoryApiServer()
    server.create(pod("a", node="n1"))
    server.create(pod("b"))
    server.bind("b", "default", "n1")
    server.create(pod("c", node="n2"))
    assert sorted(p["metadata"]["name"] for p in server.pods_on_node("n1")) == ["a", "b"]
    server.delete("pods", "a", "default", grace_period_seconds=0)
    assert [p["metadata"]["name"] for p in server.pods_on_node("n1")] == ["b"]
    assert [p["metadata"]["name"] for p in server.pods_on_node("")] == []


def test_thousands_of_pods_list_by_node_from_the_index() -> None:
    server = InMemoryApiServer(VirtualClock())
    for i in range(3000):
        server.create(pod(f"p{i}", node=f"n{i % 100}"))
    assert server.count("pods") == 3000
    on_node = server.list("pods", field_selector="spec.nodeName=n7").items
    assert len(on_node) == 30
    assert all(p["spec"]["nodeName"] == "n7" for p in on_node)


_HOSTNAME = "kubernetes.io/hostname"


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["create", "relabel", "unlabel", "delete"]),
            st.sampled_from(["n1", "n2", "n3", "n4"]),
            st.sampled_from(["h1", "h2", "h3"]),
        ),
        max_size=30,
    )
)
def test_a_hostname_selector_lists_what_a_scan_of_every_node_finds(
    ops: list[tuple[str, str, str]],
) -> None:
    """Node lists by hostname come from an index (KWOK asks at every launch); through
    creates, relabels, removed labels and deletes they answer as a full scan would."""
    server = InMemoryApiServer(VirtualClock())
    for op, name, host in ops:
        exists = server.count("nodes") and any(
            n["metadata"]["name"] == name for n in server.list("nodes").items
        )
        if op == "create" and not exists:
            server.create(b.node(name, labels={_HOSTNAME: host, "other": "x"}))
        elif op == "relabel" and exists:
            server.patch("nodes", name, {"metadata": {"labels": {_HOSTNAME: host}}})
        elif op == "unlabel" and exists:
            server.patch("nodes", name, {"metadata": {"labels": {_HOSTNAME: None}}})
        elif op == "delete" and exists:
            server.delete("nodes", name)
    every = server.list("nodes").items
    for host in ("h1", "h2", "h3"):
        scanned = [
            n["metadata"]["name"]
            for n in every
            if (n["metadata"].get("labels") or {}).get(_HOSTNAME) == host
        ]
        for selector in (f"{_HOSTNAME}={host}", f"{_HOSTNAME} in ({host}),other=x"):
            listed = server.list("nodes", label_selector=selector).items
            assert [n["metadata"]["name"] for n in listed] == scanned


def test_the_same_seed_gives_the_same_uids_and_generated_names() -> None:
    def run() -> list[str]:
        server = InMemoryApiServer(VirtualClock(), seed=42)
        obj = server.create(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "g-"}}
        )
        return [obj["metadata"]["name"], obj["metadata"]["uid"]]

    assert run() == run()


def test_timestamps_come_from_the_given_clock() -> None:
    clock = VirtualClock()
    server = InMemoryApiServer(clock)
    clock.advance(3600)
    created = server.create(cm("a"))
    assert created["metadata"]["creationTimestamp"] == "2026-01-01T01:00:00Z"


def test_graceful_pod_deletion_stamps_the_due_time() -> None:
    clock = VirtualClock()
    server = InMemoryApiServer(clock)
    server.create(pod("p", node="n1"))
    deleting = server.delete("pods", "p", "default")
    assert deleting is not None
    assert deleting["metadata"]["deletionTimestamp"] == "2026-01-01T00:00:30Z"


def test_pdb_status_follows_pod_readiness() -> None:
    server = InMemoryApiServer()
    server.create(
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "b", "namespace": "default"},
            "spec": {"selector": {"matchLabels": {"app": "x"}}, "maxUnavailable": 1},
        }
    )
    created = server.create(pod("p", node="n1", labels={"app": "x"}))

    def status() -> dict[str, Any]:
        result: dict[str, Any] = server.get("poddisruptionbudgets", "b", "default")["status"]
        return result

    assert (status()["currentHealthy"], status()["disruptionsAllowed"]) == (0, 0)
    created["status"] = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
    server.update_status(created)
    assert (status()["currentHealthy"], status()["disruptionsAllowed"]) == (1, 1)
    assert status()["conditions"][0]["reason"] == "SufficientPods"


def test_pdb_with_both_budgets_is_invalid() -> None:
    with pytest.raises(Invalid, match="cannot be both set"):
        InMemoryApiServer().create(
            {
                "apiVersion": "policy/v1",
                "kind": "PodDisruptionBudget",
                "metadata": {"name": "b", "namespace": "default"},
                "spec": {"selector": {}, "minAvailable": 1, "maxUnavailable": 1},
            }
        )


def test_a_terminating_namespace_refuses_new_objects() -> None:
    server = InMemoryApiServer()
    server.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "gone"}})
    server.create(cm("held", "gone", finalizers=["example.com/x"]))
    server.delete("namespaces", "gone")
    assert server.get("namespaces", "gone")["status"]["phase"] == "Terminating"
    with pytest.raises(Forbidden, match="being terminated"):
        server.create(cm("new", "gone"))
    held = server.get("configmaps", "held", "gone")
    held["metadata"]["finalizers"] = []
    server.update(held)
    with pytest.raises(NotFound):
        server.get("namespaces", "gone")


def test_dependents_with_another_live_owner_survive() -> None:
    server = InMemoryApiServer()
    a = server.create(cm("owner-a"))
    b = server.create(cm("owner-b"))
    refs = [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "name": o["metadata"]["name"],
            "uid": o["metadata"]["uid"],
        }
        for o in (a, b)
    ]
    server.create(cm("dep", ownerReferences=refs))
    server.delete("configmaps", "owner-a", "default")
    dep = server.get("configmaps", "dep", "default")
    assert [r["name"] for r in dep["metadata"]["ownerReferences"]] == ["owner-b"]
    server.delete("configmaps", "owner-b", "default")
    with pytest.raises(NotFound):
        server.get("configmaps", "dep", "default")


@pytest.mark.parametrize(
    ("call", "error", "text"),
    [
        (lambda s: s.create(["not", "a", "mapping"]), BadRequest, "mapping"),
        (
            lambda s: s.create({"apiVersion": "x/v1", "kind": "Nope", "metadata": {"name": "a"}}),
            NotFound,
            "Nope",
        ),
        (lambda s: s.list("pods", label_selector="a in b"), BadRequest, r"'\('"),
        (lambda s: s.list("nodes", field_selector="spec.nodeName=x"), BadRequest, "not supported"),
        (lambda s: s.get("pods", "x"), BadRequest, "namespace is required"),
        (
            lambda s: s.delete("configmaps", "x", "default", propagation_policy="Later"),
            BadRequest,
            "Later",
        ),
        (
            lambda s: s.patch("configmaps", "x", {}, "default", patch_type="strategic"),
            NotFound,
            "not found",
        ),
        (lambda s: s.create(pod("nocontainers") | {"spec": {}}), Invalid, "containers"),
    ],
)
def test_bad_input_is_a_clear_api_error(call: Any, error: type[Exception], text: str) -> None:
    with pytest.raises(error, match=text):
        call(InMemoryApiServer())


def test_an_unknown_patch_type_is_a_bad_request() -> None:
    server = InMemoryApiServer()
    server.create(cm("a"))
    with pytest.raises(BadRequest, match="patch type"):
        server.patch("configmaps", "a", {}, "default", patch_type="strategic")


def test_a_blocking_watch_iterator_ends_at_its_timeout() -> None:
    server = InMemoryApiServer()
    stream = server.watch(
        "configmaps", resource_version=server.resource_version, timeout_seconds=0.01
    )
    assert list(stream) == []
    assert stream.stopped


# ---------------------------------------------------------------- patch functions


@pytest.mark.parametrize(
    ("target", "patch", "expected"),
    [
        ({"a": 1}, {"a": 2}, {"a": 2}),
        ({"a": 1}, {"a": None}, {}),
        ({"a": {"b": 1, "c": 2}}, {"a": {"b": None, "d": 3}}, {"a": {"c": 2, "d": 3}}),
        ({"a": [1, 2]}, {"a": [3]}, {"a": [3]}),
        ({"a": 1}, {"b": {"c": None}}, {"a": 1, "b": {}}),
        ({"a": "x"}, {"a": {"b": 1}}, {"a": {"b": 1}}),
    ],
)
def test_merge_patch_rfc7386(
    target: dict[str, Any], patch: dict[str, Any], expected: dict[str, Any]
) -> None:
    assert apply_merge_patch(target, patch) == expected


def test_merge_patch_does_not_modify_its_inputs() -> None:
    target = {"a": {"b": 1}}
    patch = {"a": {"c": [1]}}
    result = apply_merge_patch(target, patch)
    result["a"]["c"].append(2)
    assert target == {"a": {"b": 1}}
    assert patch == {"a": {"c": [1]}}


@pytest.mark.parametrize(
    ("ops", "expected"),
    [
        ([{"op": "add", "path": "/l/1", "value": 9}], {"m": {"k": "v"}, "l": [1, 9, 2]}),
        ([{"op": "add", "path": "/l/-", "value": 9}], {"m": {"k": "v"}, "l": [1, 2, 9]}),
        ([{"op": "remove", "path": "/l/0"}], {"m": {"k": "v"}, "l": [2]}),
        ([{"op": "replace", "path": "/m/k", "value": "w"}], {"m": {"k": "w"}, "l": [1, 2]}),
        ([{"op": "move", "from": "/m/k", "path": "/n"}], {"m": {}, "l": [1, 2], "n": "v"}),
        ([{"op": "copy", "from": "/l", "path": "/c"}], {"m": {"k": "v"}, "l": [1, 2], "c": [1, 2]}),
        ([{"op": "add", "path": "/m/a~1b", "value": 1}], {"m": {"k": "v", "a/b": 1}, "l": [1, 2]}),
        ([{"op": "test", "path": "/m/k", "value": "v"}], {"m": {"k": "v"}, "l": [1, 2]}),
    ],
)
def test_json_patch_rfc6902(ops: list[dict[str, Any]], expected: dict[str, Any]) -> None:
    assert apply_json_patch({"m": {"k": "v"}, "l": [1, 2]}, ops) == expected


@pytest.mark.parametrize(
    ("ops", "error"),
    [
        ([{"op": "remove", "path": "/missing"}], Invalid),
        ([{"op": "replace", "path": "/missing", "value": 1}], Invalid),
        ([{"op": "add", "path": "/l/5", "value": 1}], Invalid),
        ([{"op": "test", "path": "/m/k", "value": "x"}], Invalid),
        ([{"op": "frobnicate", "path": "/m"}], BadRequest),
        ([{"path": "/m"}], BadRequest),
        ({"op": "add"}, BadRequest),
        ([{"op": "add", "path": "m", "value": 1}], BadRequest),
    ],
)
def test_json_patch_errors(ops: Any, error: type[Exception]) -> None:
    with pytest.raises(error):
        apply_json_patch({"m": {"k": "v"}, "l": [1, 2]}, ops)


def test_foreground_deletion_removes_dependents_before_the_owner() -> None:
    server = InMemoryApiServer()
    owner = server.create(cm("owner"))
    ref = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": "owner",
        "uid": owner["metadata"]["uid"],
    }
    server.create(cm("dep", ownerReferences=[ref]))
    stream = server.watch("configmaps", resource_version=server.resource_version)
    server.delete("configmaps", "owner", "default", propagation_policy="Foreground")
    assert [(e.type, e.object["metadata"]["name"]) for e in stream.poll()] == [
        ("DELETED", "dep"),
        ("DELETED", "owner"),
    ]


def test_background_deletion_removes_the_owner_first() -> None:
    server = InMemoryApiServer()
    owner = server.create(cm("owner"))
    ref = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": "owner",
        "uid": owner["metadata"]["uid"],
    }
    server.create(cm("dep", ownerReferences=[ref]))
    stream = server.watch("configmaps", resource_version=server.resource_version)
    server.delete("configmaps", "owner", "default")
    assert [(e.type, e.object["metadata"]["name"]) for e in stream.poll()] == [
        ("DELETED", "owner"),
        ("DELETED", "dep"),
    ]


# ---------------------------------------------------------------- watch/list agreement


_names = st.sampled_from(["a", "b", "c"])
_ops = st.lists(
    st.one_of(
        st.tuples(st.just("create"), _names, st.booleans()),
        st.tuples(st.just("patch"), _names, st.integers(0, 3)),
        st.tuples(st.just("label"), _names, st.sampled_from(["web", "db"])),
        st.tuples(st.just("delete"), _names, st.none()),
        st.tuples(st.just("release"), _names, st.none()),
    ),
    max_size=40,
)


@settings(max_examples=150, deadline=None)
@given(_ops)
def test_replaying_a_watch_rebuilds_what_list_returns(ops: list[tuple[str, str, Any]]) -> None:
    """Any sequence of writes: the events a watch delivers, applied in order, give exactly the
    listed state (for an unfiltered and a label-filtered watch), with rising resourceVersions."""
    server = InMemoryApiServer(VirtualClock())
    start = server.resource_version
    everything = server.watch("configmaps", "default", resource_version=start)
    webs = server.watch("configmaps", "default", resource_version=start, label_selector="tier=web")
    for op, name, arg in ops:
        try:
            if op == "create":
                server.create(cm(name, finalizers=["example.com/x"] if arg else []))
            elif op == "patch":
                server.patch("configmaps", name, {"data": {"n": str(arg)}}, "default")
            elif op == "label":
                server.patch("configmaps", name, {"metadata": {"labels": {"tier": arg}}}, "default")
            elif op == "delete":
                server.delete("configmaps", name, "default")
            else:
                server.patch("configmaps", name, {"metadata": {"finalizers": None}}, "default")
        except (NotFound, AlreadyExists):
            pass

    def replay(stream: Any) -> dict[str, Any]:
        state: dict[str, Any] = {}
        last = int(start)
        for event in stream.poll():
            rv = int(event.object["metadata"]["resourceVersion"])
            assert rv > last
            last = rv
            if event.type == "DELETED":
                del state[event.object["metadata"]["name"]]
            else:
                state[event.object["metadata"]["name"]] = event.object
        return state

    listed = {o["metadata"]["name"]: o for o in server.list("configmaps", "default")}
    assert replay(everything) == listed
    listed_webs = {
        o["metadata"]["name"]: o
        for o in server.list("configmaps", "default", label_selector="tier=web")
    }
    assert replay(webs) == listed_webs


_pod_ops = st.lists(
    st.tuples(
        st.sampled_from(["create", "relabel", "ready", "unready", "delete", "force"]),
        st.sampled_from(["p1", "p2", "p3", "p4"]),
        st.sampled_from(["x", "y"]),
    ),
    max_size=40,
)


@settings(max_examples=150, deadline=None)
@given(_pod_ops, st.sampled_from([1, "50%", 0]))
def test_incremental_budget_status_matches_a_recount(
    ops: list[tuple[str, str, str]], budget: Any
) -> None:
    server = InMemoryApiServer(VirtualClock())
    server.create(
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "b", "namespace": "default"},
            "spec": {"selector": {"matchLabels": {"app": "x"}}, "maxUnavailable": budget},
        }
    )

    def set_ready(name: str, ready: bool) -> None:
        current = server.get("pods", name, "default")
        current["status"] = {
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        }
        server.update_status(current)

    for op, name, app in ops:
        try:
            if op == "create":
                server.create(pod(name, node="n1", labels={"app": app}))
            elif op == "relabel":
                server.patch("pods", name, {"metadata": {"labels": {"app": app}}}, "default")
            elif op in ("ready", "unready"):
                set_ready(name, op == "ready")
            elif op == "delete":
                server.delete("pods", name, "default")
            else:
                server.delete("pods", name, "default", grace_period_seconds=0)
        except (NotFound, AlreadyExists):
            pass

    pods = server.list("pods", "default", label_selector="app=x").items
    healthy = [
        p
        for p in pods
        if not p["metadata"].get("deletionTimestamp")
        and any(
            c["type"] == "Ready" and c["status"] == "True"
            for c in p["status"].get("conditions", [])
        )
    ]
    status = server.get("poddisruptionbudgets", "b", "default")["status"]
    assert status["expectedPods"] == len(pods)
    assert status["currentHealthy"] == len(healthy)
    assert status["disruptionsAllowed"] == max(
        0, status["currentHealthy"] - status["desiredHealthy"]
    )


def test_a_csr_approval_patch_writes_only_the_conditions() -> None:
    from karpenter_core.kube.client import ResourceType, register_resource

    csr = register_resource(
        ResourceType(
            group="certificates.k8s.io",
            version="v1",
            kind="CertificateSigningRequest",
            plural="certificatesigningrequests",
            namespaced=False,
            status_subresource=True,
            field_selectors=("spec.signerName",),  # as a provider plugin registers it
        )
    )
    server = InMemoryApiServer(VirtualClock())
    server.create(
        {
            "apiVersion": "certificates.k8s.io/v1",
            "kind": "CertificateSigningRequest",
            "metadata": {"name": "csr-1"},
            "spec": {"signerName": "kubernetes.io/kube-apiserver-client-kubelet"},
        }
    )
    approved = {"type": "Approved", "status": "True", "reason": "R"}
    out = server.patch(
        csr,
        "csr-1",
        {"spec": {"signerName": "other"}, "status": {"conditions": [approved], "certificate": "x"}},
        subresource="approval",
    )
    assert out["status"] == {"conditions": [approved]}
    assert out["spec"]["signerName"] == "kubernetes.io/kube-apiserver-client-kubelet"
    with pytest.raises(NotFound, match="no subresource 'approval'"):
        server.patch("nodes", "n1", {}, subresource="approval")
