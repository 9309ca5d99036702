"""The in-memory API server hands every reader and watcher a private copy, now decoded from
an encoding made once per stored version: copies must stay independent of the store, of
each other and of later versions, and the encodings must not outlive what is stored."""

from __future__ import annotations

from typing import Any

from karpenter_core.kube.client import ADDED, DELETED, MODIFIED
from karpenter_core.runtime.clock import VirtualClock
from karpenter_core.sim.apiserver import InMemoryApiServer, _Encoded


def _cm(name: str, data: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "default", "labels": {"app": "x"}},
        "data": data or {"k": "v"},
    }


def _containers(obj: Any) -> list[int]:
    """ids of every dict and list inside ``obj``."""
    found: list[int] = []
    stack = [obj]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            found.append(id(value))
            stack.extend(value.values())
        elif isinstance(value, list):
            found.append(id(value))
            stack.extend(value)
    return found


def test_reads_are_private_copies() -> None:
    server = InMemoryApiServer(VirtualClock())
    server.create(_cm("a"))
    first = server.get("configmaps", "a", "default")
    first["data"]["k"] = "changed"
    first["metadata"]["labels"]["app"] = "changed"
    second = server.get("configmaps", "a", "default")
    assert second["data"] == {"k": "v"} and second["metadata"]["labels"] == {"app": "x"}
    (listed,) = server.list("configmaps", "default").items
    assert listed == second
    assert not set(_containers(listed)) & set(_containers(second))


def test_a_copy_shares_no_container_within_itself() -> None:
    # the encoder runs without a memo: a container stored twice is copied twice, as
    # deep_copy does, so changing one place in a copy never changes another
    labels = {"app": "x"}
    stored = {"metadata": {"labels": labels}, "spec": {"selector": labels}}
    encoded = _Encoded()
    encoded.put(stored)
    got = encoded.copy(stored)
    assert got == stored
    ids = _containers(got)
    assert len(ids) == len(set(ids))
    got["spec"]["selector"]["app"] = "y"
    assert got["metadata"]["labels"] == {"app": "x"}


def test_tuples_in_a_created_object_come_back_as_lists() -> None:
    server = InMemoryApiServer(VirtualClock())
    obj = _cm("a")
    obj["metadata"]["finalizers"] = ("example.com/f",)
    server.create(obj)
    got = server.get("configmaps", "a", "default")
    assert got["metadata"]["finalizers"] == ["example.com/f"]
    got["metadata"]["finalizers"].append("example.com/g")  # a list, so callers may append


def test_reads_after_a_write_see_the_new_version() -> None:
    server = InMemoryApiServer(VirtualClock())
    server.create(_cm("a"))
    server.get("configmaps", "a", "default")
    server.patch("configmaps", "a", {"data": {"k": "w"}}, "default")
    assert server.get("configmaps", "a", "default")["data"] == {"k": "w"}
    assert server.list("configmaps", "default").items[0]["data"] == {"k": "w"}


def test_each_watcher_gets_its_own_copy_of_each_event() -> None:
    server = InMemoryApiServer(VirtualClock())
    one = server.watch("configmaps", "default", resource_version=server.resource_version)
    two = server.watch("configmaps", "default", resource_version=server.resource_version)
    server.create(_cm("a"))
    server.patch("configmaps", "a", {"data": {"k": "w"}}, "default")
    server.delete("configmaps", "a", "default")
    events_one = one.poll()
    events_two = two.poll()
    assert [e.type for e in events_one] == [ADDED, MODIFIED, DELETED]
    # the ADDED event was superseded before the poll: it still shows the first version
    assert events_one[0].object["data"] == {"k": "v"}
    assert events_one[1].object["data"] == {"k": "w"}
    events_one[1].object["data"]["k"] = "mutated"
    assert events_two[1].object["data"] == {"k": "w"}
    assert not set(_containers(events_one[1].object)) & set(_containers(events_two[1].object))


def test_encodings_are_kept_only_for_what_is_stored() -> None:
    server = InMemoryApiServer(VirtualClock())
    stored_at_start = len(server._encoded._blobs)
    for i in range(20):
        server.create(_cm(f"c{i}"))
    for i in range(20):
        server.patch("configmaps", f"c{i}", {"data": {"n": str(i)}}, "default")
    assert len(server._encoded._blobs) == stored_at_start + 20
    for i in range(20):
        server.delete("configmaps", f"c{i}", "default")
    assert len(server._encoded._blobs) == stored_at_start


def test_shared_reads_are_the_stored_versions_and_a_write_replaces_them() -> None:
    # get_shared/list_shared hand out the stored object itself (no copy); a later write
    # stores a new object, so what a reader was handed never changes under it
    server = InMemoryApiServer(VirtualClock())
    server.create(_cm("a"))
    shared = server.get_shared("configmaps", "a", "default")
    assert server.get_shared("configmaps", "a", "default") is shared
    (listed,) = server.list_shared("configmaps", "default", label_selector="app=x").items
    assert listed is shared
    assert server.list_shared("configmaps", "default", label_selector="app=y").items == []
    server.patch("configmaps", "a", {"data": {"k": "v2"}}, "default")
    assert shared["data"] == {"k": "v"}
    assert server.get_shared("configmaps", "a", "default")["data"] == {"k": "v2"}


def test_poll_shared_delivers_the_events_uncopied_and_once() -> None:
    server = InMemoryApiServer(VirtualClock())
    watch = server.watch("configmaps", "default")
    server.create(_cm("a"))
    server.patch("configmaps", "a", {"data": {"k": "v2"}}, "default")
    events = watch.poll_shared()  # type: ignore[attr-defined]
    assert [e.type for e in events] == [ADDED, MODIFIED]
    assert events[1].object is server.get_shared("configmaps", "a", "default")
    assert events[0].object["data"] == {"k": "v"}
    server.delete("configmaps", "a", "default")
    assert [e.type for e in watch.poll_shared()] == [DELETED]  # type: ignore[attr-defined]
    assert watch.poll_shared() == [] and watch.poll(0) == []  # type: ignore[attr-defined]


def test_a_shared_object_changed_in_place_is_caught_when_it_is_replaced(
    monkeypatch: Any,
) -> None:
    """The test suite runs with VERIFY_ENV set: a reader that edits what it was handed
    without a copy fails at the next write of that object, naming it."""
    import pytest

    from karpenter_core.sim.apiserver import VERIFY_ENV

    monkeypatch.setenv(VERIFY_ENV, "1")
    server = InMemoryApiServer(VirtualClock())
    server.create(_cm("a"))
    server.get_shared("configmaps", "a", "default")["data"]["k"] = "edited"
    with pytest.raises(AssertionError, match="ConfigMap default/a was changed in place"):
        server.patch("configmaps", "a", {"data": {"k": "w"}}, "default")
    clean = InMemoryApiServer(VirtualClock())
    clean.create(_cm("b"))
    clean.patch("configmaps", "b", {"data": {"k": "w"}}, "default")  # untouched: no error


def test_an_informer_with_shared_reads_caches_the_stored_versions() -> None:
    from karpenter_core.kube.informer import Informer

    server = InMemoryApiServer(VirtualClock())
    server.create(_cm("a"))
    shared, copying = (
        Informer(server, "configmaps", shared_reads=True),
        Informer(server, "configmaps"),
    )
    shared.pump(0)
    copying.pump(0)
    stored = server.get_shared("configmaps", "a", "default")
    assert shared.get("default/a") is stored and copying.get("default/a") is not stored
    server.patch("configmaps", "a", {"data": {"k": "w"}}, "default")
    shared.pump(0)
    copying.pump(0)
    assert shared.get("default/a") is server.get_shared("configmaps", "a", "default")
    assert copying.get("default/a") == shared.get("default/a")


def test_a_stored_tuple_is_caught_where_copies_would_differ(monkeypatch: Any) -> None:
    """Stored versions are encoded as they are (no normalising copy first), on the premise
    that the server stores only plain dicts and lists; the suite's check names a version
    that breaks it, whose copies would hand readers lists for its tuples."""
    import pytest

    from karpenter_core.sim.apiserver import VERIFY_ENV, _Encoded

    monkeypatch.setenv(VERIFY_ENV, "1")
    encoded = _Encoded()
    plain = {"kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"k": ["v"]}}
    encoded.put(plain)
    assert encoded.copy(plain) == plain and encoded.copy(plain) is not plain
    with pytest.raises(AssertionError, match="ConfigMap /b holds a tuple"):
        encoded.put({"kind": "ConfigMap", "metadata": {"name": "b"}, "data": {"k": ("v",)}})


def _pending_pod(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": {"app": "x"}},
        "spec": {"containers": [{"name": "c", "image": "i", "resources": {}}]},
    }


def test_binding_and_status_writes_share_what_they_leave_and_change_nothing_stored() -> None:
    """A bind and a status patch store a new version that shares its unchanged parts with
    the old one (copying whole pods was nearly a tenth of a simulated scale-out); the old version
    stays as it was, and copies handed out stay private."""
    server = InMemoryApiServer(VirtualClock())
    server.create(_pending_pod("p"))
    before = server.get_shared("pods", "p", "default")
    snapshot = server.get("pods", "p", "default")
    server.bind("p", "default", "node-a")
    bound = server.get_shared("pods", "p", "default")
    assert before == snapshot  # the old version untouched
    assert bound["spec"]["nodeName"] == "node-a" and "nodeName" not in before["spec"]
    assert bound["spec"]["containers"] is before["spec"]["containers"]
    assert [c["status"] for c in bound["status"]["conditions"]] == ["True"]
    assert not (before.get("status") or {}).get("conditions")
    server.patch(
        "pods",
        "p",
        {"status": {"phase": "Running", "podIP": "10.0.0.1"}},
        "default",
        subresource="status",
    )
    running = server.get_shared("pods", "p", "default")
    assert running["status"]["phase"] == "Running" and bound["status"]["phase"] == "Pending"
    assert running["status"]["conditions"] is bound["status"]["conditions"]
    assert running["metadata"] is not bound["metadata"]
    assert bound["metadata"]["resourceVersion"] != running["metadata"]["resourceVersion"]
    copy = server.get("pods", "p", "default")
    assert copy == running and not set(_containers(copy)) & set(_containers(running))


def test_a_deletion_shares_the_last_version_and_changes_nothing_stored() -> None:
    """The DELETED event's final version shares all but its metadata with the last stored
    version (deep-copying each deleted pod was 8 % of a large scale-in's first minutes);
    the last version keeps its resourceVersion."""
    server = InMemoryApiServer(VirtualClock())
    server.create(_pending_pod("p"))
    watch = server.watch("pods", "default", resource_version=server.resource_version)
    last = server.get_shared("pods", "p", "default")
    rv = last["metadata"]["resourceVersion"]
    snapshot = server.get("pods", "p", "default")
    server.delete("pods", "p", "default", grace_period_seconds=0)
    (event,) = [e for e in watch.poll_shared() if e.type == "DELETED"]
    final = event.object
    assert last == snapshot and last["metadata"]["resourceVersion"] == rv
    assert int(final["metadata"]["resourceVersion"]) > int(rv)
    assert final["spec"] is last["spec"]
    assert final["metadata"] is not last["metadata"]


def test_patch_shared_returns_the_stored_result_and_patch_a_private_copy() -> None:
    """The simulated kubelet writes pod status through :func:`shared_patch` and never
    reads the result back: the server's ``patch_shared`` skips decoding a copy; a client
    without one (a real cluster's) is patched as usual."""
    from karpenter_core.kube.client import shared_patch

    server = InMemoryApiServer(VirtualClock())
    server.create(_cm("a"))
    got = shared_patch(server)("configmaps", "a", {"data": {"k": "w"}}, "default")
    assert got is server.get_shared("configmaps", "a", "default") and got["data"] == {"k": "w"}
    copy = server.patch("configmaps", "a", {"data": {"k": "x"}}, "default")
    assert copy == server.get_shared("configmaps", "a", "default")
    assert copy is not server.get_shared("configmaps", "a", "default")
    again = shared_patch(server)("configmaps", "a", {"data": {"k": "x"}}, "default")
    assert again is server.get_shared("configmaps", "a", "default")  # a no-op write too

    class Plain:
        def __init__(self) -> None:
            self.calls: list[str] = []

        def patch(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
            self.calls.append(args[1])
            return {}

    plain = Plain()
    shared_patch(plain)("configmaps", "b", {}, "default")  # type: ignore[arg-type]
    assert plain.calls == ["b"]


def test_create_shared_returns_the_stored_object_and_create_a_private_copy() -> None:
    """The simulated ReplicaSets create pods through :func:`shared_create` and only read
    the name back; the input is still copied (changing it later changes nothing stored)."""
    from karpenter_core.kube.client import shared_create

    server = InMemoryApiServer(VirtualClock())
    given = _cm("a")
    made = shared_create(server)(given)
    assert made is server.get_shared("configmaps", "a", "default")
    given["data"]["k"] = "changed"
    assert made["data"] == {"k": "v"}
    other = server.create(_cm("b"))
    assert other == server.get_shared("configmaps", "b", "default")
    assert other is not server.get_shared("configmaps", "b", "default")

    class Plain:
        def __init__(self) -> None:
            self.created: list[str] = []

        def create(self, obj: Any, namespace: Any = None) -> dict[str, Any]:
            self.created.append(obj["metadata"]["name"])
            return dict(obj)

    plain = Plain()
    shared_create(plain)(_cm("c"))  # type: ignore[arg-type]
    assert plain.created == ["c"]


def test_without_verification_a_version_is_encoded_when_first_copied_and_only_then() -> None:
    made: list[object] = []

    class Counting(_Encoded):
        def _encode(self, obj: Any) -> bytes:  # type: ignore[override]
            made.append(obj)
            return _Encoded._encode(obj)

    encoded = Counting()
    encoded.verify = False  # as a simulation runs (the suite verifies)
    never_read = {"metadata": {"name": "a"}, "data": {"k": "v"}}
    read = {"metadata": {"name": "b"}, "data": {"k": "w"}}
    encoded.put(never_read)
    encoded.put(read)
    assert made == []  # registering a version encodes nothing
    one, two = encoded.copy(read), encoded.copy(read)
    assert made == [read]  # encoded once, at the first copy
    assert one == two == read
    one["data"]["k"] = "changed"
    assert two["data"]["k"] == "w" and read["data"]["k"] == "w"
    encoded.forget(never_read)
    encoded.forget(read)
    assert made == [read] and not encoded._blobs
