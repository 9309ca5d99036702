"""Resource registry and API errors."""

from __future__ import annotations

import pytest

from karpenter_core.kube.client import (
    AlreadyExists,
    ApiError,
    Conflict,
    Gone,
    KubeClient,
    NotFound,
    ResourceType,
    TooManyRequests,
    UnknownResourceError,
    error_from_status,
    register_resource,
    resource_for,
    resource_of,
)
from karpenter_core.sim.apiserver import InMemoryApiServer


@pytest.mark.parametrize(
    ("name", "api_version", "kind"),
    [
        ("pods", "v1", "Pod"),
        ("Pod", "v1", "Pod"),
        ("pod", "v1", "Pod"),
        ("nodes", "v1", "Node"),
        ("deployments", "apps/v1", "Deployment"),
        ("poddisruptionbudgets", "policy/v1", "PodDisruptionBudget"),
        ("storageclasses", "storage.k8s.io/v1", "StorageClass"),
        ("leases", "coordination.k8s.io/v1", "Lease"),
        ("nodepools", "karpenter.sh/v1", "NodePool"),
        ("nodeclaims.karpenter.sh", "karpenter.sh/v1", "NodeClaim"),
        (("events.k8s.io/v1", "Event"), "events.k8s.io/v1", "Event"),
    ],
)
def test_resources_resolve_by_kind_plural_or_api_version(
    name: str | tuple[str, str], api_version: str, kind: str
) -> None:
    rt = resource_for(name)
    assert (rt.api_version, rt.kind) == (api_version, kind)


def test_scope_and_subresources_are_known() -> None:
    assert resource_for("pods").namespaced
    assert not resource_for("nodes").namespaced
    assert not resource_for("nodeclaims").namespaced
    assert resource_for("nodeclaims").status_subresource
    assert not resource_for("nodeclaims").unconditional_update
    assert not resource_for("configmaps").status_subresource


def test_an_ambiguous_name_lists_the_choices() -> None:
    with pytest.raises(UnknownResourceError, match="ambiguous") as err:
        resource_for("Event")
    assert "events.k8s.io/v1" in str(err.value)


def test_an_unknown_name_is_reported() -> None:
    with pytest.raises(UnknownResourceError, match="widgets"):
        resource_for("widgets")


def test_an_object_without_kind_is_reported() -> None:
    with pytest.raises(UnknownResourceError, match="apiVersion/kind"):
        resource_of({"metadata": {"name": "x"}})


def test_registered_resources_are_served_by_the_in_memory_server() -> None:
    rt = register_resource(ResourceType("example.com", "v1", "Widget", "widgets", True))
    server = InMemoryApiServer()
    server.create({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}})
    assert server.get(rt, "w", "default")["kind"] == "Widget"


def test_the_in_memory_server_is_a_kube_client() -> None:
    assert isinstance(InMemoryApiServer(), KubeClient)


@pytest.mark.parametrize(
    ("status", "cls"),
    [
        ({"code": 404, "reason": "NotFound", "message": "x"}, NotFound),
        ({"code": 409, "reason": "AlreadyExists"}, AlreadyExists),
        ({"code": 409, "reason": "Conflict"}, Conflict),
        ({"code": 410, "reason": "Expired"}, Gone),
        ({"code": 429, "reason": "TooManyRequests"}, TooManyRequests),
        ({"code": 409, "reason": "SomethingNew"}, AlreadyExists),
        ({"code": 418}, ApiError),
    ],
)
def test_status_objects_map_to_error_types(status: dict[str, object], cls: type[ApiError]) -> None:
    err = error_from_status(status)
    assert type(err) is cls
    assert err.code == status["code"]


def test_errors_carry_code_reason_and_message() -> None:
    err = Conflict("the object has been modified")
    assert (err.code, err.reason) == (409, "Conflict")
    assert err.to_status()["message"] == "the object has been modified"
    assert "Conflict (409)" in str(err)


def test_watch_events_unpack_as_type_and_object() -> None:
    server = InMemoryApiServer()
    stream = server.watch("configmaps", resource_version=server.resource_version)
    server.create(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "default"}}
    )
    [(etype, obj)] = stream.poll()
    assert (etype, obj["metadata"]["name"]) == ("ADDED", "a")


def test_a_resolved_name_follows_later_registrations() -> None:
    """Resolved names are remembered, but a registration that makes one ambiguous is seen."""
    first = register_resource(ResourceType("one.example.com", "v1", "Gadget", "gadgets", True))
    assert resource_for("gadgets") is first
    assert resource_for("gadgets") is first  # now from the memo
    register_resource(ResourceType("two.example.com", "v1", "Gadget", "gadgets", True))
    with pytest.raises(UnknownResourceError, match="ambiguous"):
        resource_for("gadgets")
    assert resource_for("gadgets.one.example.com") is first
