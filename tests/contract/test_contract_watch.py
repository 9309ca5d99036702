"""KubeClient contract: watches — resume from a resourceVersion, selectors, bookmarks, 410."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from contract_builders import configmap, deployment, nodepool
from contract_support import GARBAGE_COLLECTOR, NAMESPACE_CONTROLLER, Backend

from karpenter_core.kube.client import (
    ADDED,
    BOOKMARK,
    DELETED,
    INITIAL_EVENTS_END_ANNOTATION,
    MODIFIED,
    Gone,
    KubeClient,
    NotFound,
    WatchEvent,
    WatchStream,
)


def _take(stream: WatchStream, n: int, timeout: float = 10.0) -> list[WatchEvent]:
    """The next ``n`` events (waiting up to ``timeout`` for each batch on a real server)."""
    events: list[WatchEvent] = []
    while len(events) < n:
        batch = stream.poll(timeout)
        if not batch:
            break
        events.extend(batch)
    return events


def _summary(events: list[WatchEvent]) -> list[tuple[str, str]]:
    return [(e.type, e.object["metadata"]["name"]) for e in events]


def test_watch_from_a_resource_version_sees_later_changes_in_order(
    kube_client: KubeClient, namespace: str
) -> None:
    start = kube_client.list("configmaps", namespace).resource_version
    stream = kube_client.watch("configmaps", namespace, resource_version=start)
    try:
        created = kube_client.create(configmap("a", namespace))
        kube_client.update(dict(created, data={"k": "v"}))
        kube_client.delete("configmaps", "a", namespace)
        events = _take(stream, 3)
    finally:
        stream.stop()
    assert _summary(events) == [(ADDED, "a"), (MODIFIED, "a"), (DELETED, "a")]
    rvs = [int(e.object["metadata"]["resourceVersion"]) for e in events]
    assert rvs == sorted(rvs) and len(set(rvs)) == 3
    assert events[1].object["data"] == {"k": "v"}


def test_watch_without_a_resource_version_starts_with_what_exists(
    kube_client: KubeClient, namespace: str
) -> None:
    kube_client.create(configmap("a", namespace))
    kube_client.create(configmap("b", namespace))
    stream = kube_client.watch("configmaps", namespace)
    try:
        initial = _take(stream, 2)
        kube_client.create(configmap("c", namespace))
        later = _take(stream, 1)
    finally:
        stream.stop()
    assert sorted(_summary(initial)) == [(ADDED, "a"), (ADDED, "b")]
    assert _summary(later) == [(ADDED, "c")]


def test_watch_resumes_exactly_after_the_given_resource_version(
    kube_client: KubeClient, namespace: str
) -> None:
    kube_client.create(configmap("before", namespace))
    middle = kube_client.create(configmap("middle", namespace))
    kube_client.create(configmap("after", namespace))
    stream = kube_client.watch(
        "configmaps", namespace, resource_version=middle["metadata"]["resourceVersion"]
    )
    try:
        events = _take(stream, 1)
    finally:
        stream.stop()
    assert _summary(events) == [(ADDED, "after")]


def test_watch_in_a_namespace_ignores_other_namespaces(
    kube_client: KubeClient, namespace: str, unique: Callable[[str], str]
) -> None:
    other = unique("ct")
    kube_client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": other}})
    try:
        start = kube_client.list("configmaps", namespace).resource_version
        stream = kube_client.watch("configmaps", namespace, resource_version=start)
        try:
            kube_client.create(configmap("elsewhere", other))
            kube_client.create(configmap("here", namespace))
            events = _take(stream, 1)
        finally:
            stream.stop()
    finally:
        kube_client.delete("namespaces", other)
    assert _summary(events) == [(ADDED, "here")]


def test_label_selected_watch_sees_objects_enter_and_leave(
    kube_client: KubeClient, namespace: str
) -> None:
    start = kube_client.list("configmaps", namespace).resource_version
    stream = kube_client.watch(
        "configmaps", namespace, resource_version=start, label_selector="app=web"
    )
    try:
        created = kube_client.create(configmap("a", namespace, labels={"app": "db"}))
        joined = kube_client.patch(
            "configmaps", "a", {"metadata": {"labels": {"app": "web"}}}, namespace
        )
        kube_client.patch("configmaps", "a", {"data": {"k": "v"}}, namespace)
        left = kube_client.patch(
            "configmaps", "a", {"metadata": {"labels": {"app": "db"}}}, namespace
        )
        kube_client.patch("configmaps", "a", {"data": {"k": "w"}}, namespace)
        kube_client.create(configmap("b", namespace, labels={"app": "web"}))
        events = _take(stream, 4)
    finally:
        stream.stop()
    assert created["metadata"]["labels"] == {"app": "db"}
    assert _summary(events) == [(ADDED, "a"), (MODIFIED, "a"), (DELETED, "a"), (ADDED, "b")]
    assert events[0].object["metadata"]["resourceVersion"] == joined["metadata"]["resourceVersion"]
    assert events[2].object["metadata"]["resourceVersion"] == left["metadata"]["resourceVersion"]


def test_field_selected_watch_follows_the_field(kube_client: KubeClient, namespace: str) -> None:
    start = kube_client.list("configmaps", namespace).resource_version
    stream = kube_client.watch(
        "configmaps", namespace, resource_version=start, field_selector="metadata.name=b"
    )
    try:
        kube_client.create(configmap("a", namespace))
        kube_client.create(configmap("b", namespace))
        events = _take(stream, 1)
    finally:
        stream.stop()
    assert _summary(events) == [(ADDED, "b")]


def test_deleted_event_carries_the_last_state_of_the_object(
    kube_client: KubeClient, namespace: str
) -> None:
    kube_client.create(configmap("a", namespace, data={"k": "last"}, finalizers=["example.com/x"]))
    kube_client.delete("configmaps", "a", namespace)
    deleting = kube_client.get("configmaps", "a", namespace)
    stream = kube_client.watch(
        "configmaps", namespace, resource_version=deleting["metadata"]["resourceVersion"]
    )
    try:
        deleting["metadata"]["finalizers"] = []
        kube_client.update(deleting)
        events = _take(stream, 1)
    finally:
        stream.stop()
    assert _summary(events) == [(DELETED, "a")]
    assert events[0].object["data"] == {"k": "last"}
    assert events[0].object["metadata"]["deletionTimestamp"]


def test_watch_from_an_expired_resource_version_is_gone(
    kube_client: KubeClient, unique: Callable[[str], str]
) -> None:
    # A real API server serves watches from its watch cache, which holds every version since
    # it began watching the kind; for built-in kinds that is the server's start (so RV "1"
    # may still be served). A custom resource's cache begins when its CRD is installed, so
    # "1" predates it on every backend.
    name = unique("np")
    kube_client.create(nodepool(name))
    try:
        with pytest.raises(Gone) as err:
            stream = kube_client.watch("nodepools", resource_version="1")
            try:
                _take(stream, 1, timeout=5.0)
            finally:
                stream.stop()
    finally:
        kube_client.delete("nodepools", name)
    assert err.value.code == 410


def test_initial_events_end_with_an_annotated_bookmark(
    kube_client: KubeClient, namespace: str
) -> None:
    kube_client.create(configmap("a", namespace))
    kube_client.create(configmap("b", namespace))
    stream = kube_client.watch(
        "configmaps", namespace, allow_watch_bookmarks=True, send_initial_events=True
    )
    try:
        events = _take(stream, 3)
    finally:
        stream.stop()
    assert sorted(_summary(events[:2])) == [(ADDED, "a"), (ADDED, "b")]
    bookmark = events[2]
    assert bookmark.type == BOOKMARK
    assert bookmark.object["metadata"]["annotations"][INITIAL_EVENTS_END_ANNOTATION] == "true"
    assert int(bookmark.object["metadata"]["resourceVersion"]) >= max(
        int(e.object["metadata"]["resourceVersion"]) for e in events[:2]
    )


def test_a_stopped_watch_ends_its_iteration(kube_client: KubeClient, namespace: str) -> None:
    stream = kube_client.watch("configmaps", namespace)
    stream.stop()
    assert list(stream) == []
    assert stream.stopped


def test_watch_events_are_copies(kube_client: KubeClient, namespace: str) -> None:
    start = kube_client.list("configmaps", namespace).resource_version
    stream = kube_client.watch("configmaps", namespace, resource_version=start)
    try:
        kube_client.create(configmap("a", namespace, data={"k": "v"}))
        [event] = _take(stream, 1)
    finally:
        stream.stop()
    event.object["data"]["k"] = "mutated"
    assert kube_client.get("configmaps", "a", namespace)["data"] == {"k": "v"}


# ---------------------------------------------------------------- controller-manager loops


def test_deleting_an_owner_deletes_its_dependents(backend: Backend, namespace: str) -> None:
    backend.require(GARBAGE_COLLECTOR)
    client = backend.client
    owner = client.create(deployment("owner", namespace))
    dependent = configmap("dep", namespace)
    dependent["metadata"]["ownerReferences"] = [
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "name": "owner",
            "uid": owner["metadata"]["uid"],
        }
    ]
    client.create(dependent)
    client.delete("deployments", "owner", namespace)

    def gone() -> None:
        with pytest.raises(NotFound):
            client.get("configmaps", "dep", namespace)

    backend.eventually(gone)


def test_orphan_deletion_keeps_dependents_without_the_owner_reference(
    backend: Backend, namespace: str
) -> None:
    backend.require(GARBAGE_COLLECTOR)
    client = backend.client
    owner = client.create(deployment("owner", namespace))
    dependent = configmap("dep", namespace)
    dependent["metadata"]["ownerReferences"] = [
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "name": "owner",
            "uid": owner["metadata"]["uid"],
        }
    ]
    client.create(dependent)
    client.delete("deployments", "owner", namespace, propagation_policy="Orphan")

    def released() -> None:
        assert not client.get("configmaps", "dep", namespace)["metadata"].get("ownerReferences")

    backend.eventually(released)


def test_deleting_a_namespace_deletes_its_contents(
    backend: Backend, unique: Callable[[str], str]
) -> None:
    backend.require(NAMESPACE_CONTROLLER)
    client = backend.client
    ns = unique("ct")
    client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    client.create(configmap("a", ns))
    client.delete("namespaces", ns)

    def gone() -> None:
        with pytest.raises(NotFound):
            client.get("namespaces", ns)
        with pytest.raises(NotFound):
            client.get("configmaps", "a", ns)

    backend.eventually(gone)
