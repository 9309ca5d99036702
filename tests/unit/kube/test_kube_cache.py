"""CachedClient: reads from informer caches, writes (and read-your-writes) through the API.

The informers here are driven step by step (``pump``) against the in-memory API server, so
every assertion is about a known point in the watch's history.
"""

from __future__ import annotations

from typing import Any

import pytest

from karpenter_core.kube.cache import CachedClient, CacheListingClient
from karpenter_core.kube.client import BadRequest, NotFound
from karpenter_core.kube.informer import SharedInformers
from karpenter_core.runtime.clock import VirtualClock
from karpenter_core.sim.apiserver import InMemoryApiServer


class Counting:
    """The in-memory server, counting the reads and watches that reach it."""

    def __init__(self, server: InMemoryApiServer) -> None:
        self.server = server
        self.calls: dict[str, int] = {"get": 0, "list": 0, "watch": 0}

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.server, name)
        if name in self.calls:

            def counted(*args: Any, **kwargs: Any) -> Any:
                self.calls[name] += 1
                return attr(*args, **kwargs)

            return counted
        return attr


def _ns(server: InMemoryApiServer, name: str) -> None:
    server.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})


def _pod(name: str, ns: str = "a", node: str | None = None, **labels: str) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "i"}]}
    if node:
        spec["nodeName"] = node
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "labels": labels},
        "spec": spec,
    }


def _node(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}}


@pytest.fixture
def env() -> tuple[InMemoryApiServer, Counting, SharedInformers, CachedClient]:
    server = InMemoryApiServer(VirtualClock(), seed=1)
    for ns in ("a", "b"):
        _ns(server, ns)
    counting = Counting(server)
    informers = SharedInformers(counting)  # type: ignore[arg-type]
    cached = CachedClient(counting, informers, ["pods", "nodes"])  # type: ignore[arg-type]
    return server, counting, informers, cached


def _pump(informers: SharedInformers) -> None:
    for inf in informers._informers.values():
        inf.pump()


def _names(items: list[dict[str, Any]]) -> list[str]:
    return sorted(f"{o['metadata'].get('namespace', '')}/{o['metadata']['name']}" for o in items)


def test_get_after_sync_is_served_from_the_cache(env: Any) -> None:
    server, counting, informers, cached = env
    server.create(_pod("p1"))
    _pump(informers)
    before = dict(counting.calls)
    pod = cached.get("pods", "p1", "a")
    assert pod["metadata"]["name"] == "p1"
    assert counting.calls["get"] == before["get"]
    assert cached.cache_reads == 1 and cached.api_reads == 0


def test_reads_before_the_cache_has_synced_go_to_the_server(env: Any) -> None:
    server, counting, _informers, cached = env
    server.create(_pod("p1"))
    assert cached.get("pods", "p1", "a")["metadata"]["name"] == "p1"
    assert counting.calls["get"] == 1
    assert _names(cached.list("pods").items) == ["a/p1"]
    assert counting.calls["list"] == 1


def test_a_get_returns_a_copy_the_caller_may_mutate(env: Any) -> None:
    server, _, informers, cached = env
    server.create(_pod("p1", app="web"))
    _pump(informers)
    pod = cached.get("pods", "p1", "a")
    pod["metadata"]["labels"]["app"] = "changed"
    assert cached.get("pods", "p1", "a")["metadata"]["labels"]["app"] == "web"


def test_a_shared_get_returns_the_cached_object_itself_once_synced(env: Any) -> None:
    server, counting, informers, cached = env
    server.create(_pod("p1", app="web"))
    # before the cache has synced: the server's answer
    assert cached.get_shared("pods", "p1", "a")["metadata"]["labels"] == {"app": "web"}
    assert counting.calls["get"] == 1
    _pump(informers)
    shared = cached.get_shared("pods", "p1", "a")
    assert shared is informers.informer("pods").get("a/p1")
    assert shared is cached.get_shared("pods", "p1", "a")
    assert cached.get("pods", "p1", "a") is not shared  # get still copies
    assert counting.calls["get"] == 1
    with pytest.raises(NotFound):
        cached.get_shared("pods", "nope", "a")


def test_a_missing_object_is_not_found_like_the_server_says(env: Any) -> None:
    server, _, informers, cached = env
    _pump(informers)
    with pytest.raises(NotFound) as from_cache:
        cached.get("pods", "nope", "a")
    with pytest.raises(NotFound) as from_server:
        server.get("pods", "nope", "a")
    assert str(from_cache.value) == str(from_server.value)


def test_a_namespaced_get_without_a_namespace_means_default(env: Any) -> None:
    server, _, informers, cached = env
    server.create(_pod("p1", ns="default"))
    _pump(informers)
    assert cached.get("pods", "p1")["metadata"]["namespace"] == "default"


@pytest.mark.parametrize(
    ("namespace", "label_selector", "field_selector"),
    [
        (None, None, None),
        ("a", None, None),
        (None, "app=web", None),
        (None, "app in (web,db),tier!=front", None),
        (None, None, "spec.nodeName=n1"),
        (None, None, "spec.nodeName="),
        ("b", None, "spec.nodeName!=n1"),
        (None, "app", "metadata.name=p2"),
        ("a", "!app", "metadata.namespace=a"),
    ],
)
def test_list_from_the_cache_matches_the_servers_answer(
    env: Any, namespace: str | None, label_selector: str | None, field_selector: str | None
) -> None:
    server, counting, informers, cached = env
    for n in ("n1", "n2"):
        server.create(_node(n))
    server.create(_pod("p1", "a", "n1", app="web", tier="back"))
    server.create(_pod("p2", "a", None, app="db", tier="front"))
    server.create(_pod("p3", "b", "n2", app="web"))
    server.create(_pod("p4", "b", None))
    server.create(_pod("p5", "b", "n1", app="db", tier="back"))
    _pump(informers)
    lists = counting.calls["list"]
    got = cached.list(
        "pods", namespace, label_selector=label_selector, field_selector=field_selector
    )
    want = server.list(
        "pods", namespace, label_selector=label_selector, field_selector=field_selector
    )
    assert counting.calls["list"] == lists  # the cache answered
    assert _names(got.items) == _names(want.items)


def test_a_field_the_kind_does_not_support_is_left_to_the_server(env: Any) -> None:
    _server, counting, informers, cached = env
    _pump(informers)
    lists = counting.calls["list"]
    with pytest.raises(BadRequest, match=r"spec\.bogus"):
        cached.list("pods", field_selector="spec.bogus=x")
    assert counting.calls["list"] == lists + 1


def test_kinds_not_cached_are_read_from_the_server(env: Any) -> None:
    server, counting, informers, cached = env
    server.create(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "a"}}
    )
    _pump(informers)
    assert cached.get("configmaps", "c", "a")["metadata"]["name"] == "c"
    assert counting.calls["get"] == 1


def test_own_writes_are_readable_before_their_watch_event(env: Any) -> None:
    _server, _, informers, cached = env
    _pump(informers)
    cached.create(_pod("p1"))
    assert cached.get("pods", "p1", "a")["metadata"]["name"] == "p1"
    cached.patch("pods", "p1", {"metadata": {"labels": {"step": "2"}}}, "a")
    assert cached.get("pods", "p1", "a")["metadata"]["labels"]["step"] == "2"
    assert _names(cached.list("pods", label_selector="step=2").items) == ["a/p1"]


def test_a_late_watch_event_does_not_undo_a_remembered_write(env: Any) -> None:
    _server, _, informers, cached = env
    _pump(informers)
    cached.create(_pod("p1"))
    cached.patch("pods", "p1", {"metadata": {"labels": {"step": "2"}}}, "a")
    _pump(informers)  # delivers ADDED (older than the patch) then MODIFIED
    assert cached.get("pods", "p1", "a")["metadata"]["labels"]["step"] == "2"


def test_a_write_older_than_the_watch_cannot_resurrect_a_deleted_object(env: Any) -> None:
    server, _, informers, cached = env
    _pump(informers)
    created = server.create(_pod("p1"))
    server.delete("pods", "p1", "a", grace_period_seconds=0)
    _pump(informers)
    inf = informers.informer("pods")
    assert inf.remember(created) is False
    with pytest.raises(NotFound):
        cached.get("pods", "p1", "a")


def test_other_writers_changes_arrive_with_the_watch(env: Any) -> None:
    server, _, informers, cached = env
    server.create(_pod("p1"))
    _pump(informers)
    server.patch("pods", "p1", {"metadata": {"labels": {"by": "other"}}}, "a")
    assert "by" not in cached.get("pods", "p1", "a")["metadata"]["labels"]
    _pump(informers)
    assert cached.get("pods", "p1", "a")["metadata"]["labels"]["by"] == "other"


def test_the_clients_other_attributes_pass_through(env: Any) -> None:
    _, counting, _, cached = env
    counting.host = "https://example.invalid"
    assert cached.host == "https://example.invalid"
    with pytest.raises(AttributeError):
        _ = cached.no_such_attribute


def test_create_with_status_writes_status_through_the_subresource() -> None:
    from karpenter_core.kube.client import create_with_status

    server = InMemoryApiServer(VirtualClock(), seed=1)
    _ns(server, "a")
    pod = _pod("p1")
    pod["status"] = {"phase": "Running"}
    assert server.create(dict(pod)).get("status", {}).get("phase") != "Running"  # ignored
    pod["metadata"]["name"] = "p2"
    created = create_with_status(server, pod)
    assert created["status"]["phase"] == "Running"
    assert server.get("pods", "p2", "a")["status"]["phase"] == "Running"


def test_a_shared_list_returns_the_cached_objects_themselves(env: Any) -> None:
    server, _counting, informers, cached = env
    server.create(_node("n1"))
    server.create(_pod("p1", node="n1"))
    server.create(_pod("p2", node="n2"))
    _pump(informers)
    shared = cached.list_shared("pods", field_selector="spec.nodeName=n1").items
    assert [o["metadata"]["name"] for o in shared] == ["p1"]
    assert shared[0] is informers.informer("pods").get("a/p1")
    assert cached.list("pods", field_selector="spec.nodeName=n1").items[0] is not shared[0]


def test_the_providers_client_lists_from_the_cache_once_attached_and_gets_from_the_api(
    env: Any,
) -> None:
    server, counting, informers, cached = env
    for name in ("n1", "n2"):
        server.create(_node(name))
    provider_client = CacheListingClient(counting)  # type: ignore[arg-type]
    assert len(provider_client.list_shared("nodes")) == 2  # no reader yet: the API
    assert counting.calls["list"] == 1
    provider_client.attach(cached)
    _pump(informers)
    lists = counting.calls["list"]
    shared = provider_client.list_shared("nodes")
    copied = provider_client.list("nodes", label_selector="")
    assert counting.calls["list"] == lists  # both from the synced cache
    assert _names(list(shared)) == _names(list(copied)) == ["/n1", "/n2"]
    first = next(iter(shared))
    assert first is next(o for o in cached.list_shared("nodes") if o is first)  # uncopied
    assert next(iter(copied)) is not first
    gets = counting.calls["get"]
    server.create(_node("n3"))  # not pumped: the cache has not seen it
    assert provider_client.get("nodes", "n3")["metadata"]["name"] == "n3"
    assert counting.calls["get"] == gets + 1  # gets are the API server's
    assert len(provider_client.list("nodes")) == 2  # lists are the cache's


def _nodeclaim(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodeClaim",
        "metadata": {"name": name},
        "spec": {
            "requirements": [],
            "nodeClassRef": {"group": "karpenter.kwok.sh", "kind": "KWOKNodeClass", "name": "d"},
        },
    }


def _launched(server: InMemoryApiServer, name: str, provider_id: str | None) -> None:
    server.patch("nodeclaims", name, {"status": {"providerID": provider_id}}, subresource="status")


def test_nodeclaims_by_provider_id_follow_launches_relaunches_and_deletes() -> None:
    """The cache's providerID index and the in-memory server's answer alike, through every
    change of a NodeClaim's provider ID; before the cache has synced it has no answer, so
    the caller lists instead of reading an empty index as "no NodeClaim"."""
    from karpenter_core.controllers.node.termination.eviction import nodeclaims_for_node
    from karpenter_core.kube.informer import NODECLAIM_PROVIDER_ID_INDEX as INDEX

    server = InMemoryApiServer(VirtualClock(), seed=1)
    informers = SharedInformers(server)
    cached = CachedClient(server, informers, ["nodeclaims"])
    for name in ("a", "b", "c"):
        server.create(_nodeclaim(name))
    assert cached.indexed_shared("nodeclaims", INDEX, "kwok://x") is None  # not synced

    def answers(pid: str) -> tuple[list[str], list[str]]:
        _pump(informers)
        got = []
        for client in (server, cached):
            found = client.indexed_shared("nodeclaims", INDEX, pid)
            assert found is not None
            got.append(sorted(o["metadata"]["name"] for o in found))
        return got[0], got[1]

    assert answers("kwok://x") == ([], [])
    _launched(server, "a", "kwok://x")
    _launched(server, "b", "kwok://y")
    assert answers("kwok://x") == (["a"], ["a"])
    _launched(server, "c", "kwok://x")  # two claim one instance: both are found
    assert answers("kwok://x") == (["a", "c"], ["a", "c"])
    _launched(server, "a", "kwok://z")
    assert answers("kwok://x") == (["c"], ["c"])
    assert answers("kwok://z") == (["a"], ["a"])
    _launched(server, "c", None)
    assert answers("kwok://x") == ([], [])
    server.delete("nodeclaims", "b")
    assert answers("kwok://y") == ([], [])
    # the termination lookup reads the index, and hands out copies
    node = {"metadata": {"name": "n"}, "spec": {"providerID": "kwok://z"}}
    for client in (server, cached):
        found = nodeclaims_for_node(client, node)  # type: ignore[arg-type]
        assert [o["metadata"]["name"] for o in found] == ["a"]
        found[0]["metadata"]["name"] = "changed"
        assert server.get_shared("nodeclaims", "a")["metadata"]["name"] == "a"
    # an index neither keeps: no answer rather than a wrong one
    assert server.indexed_shared("nodes", INDEX, "kwok://z") is None
    assert cached.indexed_shared("nodeclaims", "metadata.labels", "x") is None


def test_api_reader_reads_past_the_cache(env: Any) -> None:
    """``api_reader`` is the API server behind a cache (a stale cache must not answer the
    reads that decide whether to launch again), and any other client itself."""
    from karpenter_core.kube.client import api_reader

    server, _counting, informers, cached = env
    _pump(informers)
    server.create(_node("n1"))  # not pumped: the cache has not seen it
    assert cached.list("nodes").items == []
    assert _names(api_reader(cached).list("nodes").items) == ["/n1"]
    listing = CacheListingClient(server)  # the provider's client under serve
    listing.attach(cached)
    assert listing.list("nodes").items == []
    assert _names(api_reader(listing).list("nodes").items) == ["/n1"]
    assert api_reader(server) is server
