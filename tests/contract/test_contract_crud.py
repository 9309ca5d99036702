"""KubeClient contract: create, get, list, update, patch, delete — API-server semantics."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from contract_builders import configmap, deployment, node, nodepool, pod

from karpenter_core.kube.client import (
    AlreadyExists,
    BadRequest,
    Conflict,
    Invalid,
    KubeClient,
    NotFound,
)

# ---------------------------------------------------------------- create / get


def test_create_assigns_uid_creation_timestamp_and_resource_version(
    kube_client: KubeClient, namespace: str
) -> None:
    created = kube_client.create(configmap("a", namespace))
    meta = created["metadata"]
    assert meta["uid"]
    assert meta["creationTimestamp"].endswith("Z")
    assert meta["resourceVersion"]
    assert meta["namespace"] == namespace
    assert (created["apiVersion"], created["kind"]) == ("v1", "ConfigMap")


def test_get_returns_what_was_created(kube_client: KubeClient, namespace: str) -> None:
    created = kube_client.create(configmap("a", namespace, data={"k": "v"}))
    got = kube_client.get("configmaps", "a", namespace)
    assert got["data"] == {"k": "v"}
    assert got["metadata"]["uid"] == created["metadata"]["uid"]
    assert got["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]


def test_uids_differ_between_objects(kube_client: KubeClient, namespace: str) -> None:
    a = kube_client.create(configmap("a", namespace))
    b = kube_client.create(configmap("b", namespace))
    assert a["metadata"]["uid"] != b["metadata"]["uid"]


def test_resource_versions_increase_across_objects(kube_client: KubeClient, namespace: str) -> None:
    a = kube_client.create(configmap("a", namespace))
    b = kube_client.create(configmap("b", namespace))
    assert int(b["metadata"]["resourceVersion"]) > int(a["metadata"]["resourceVersion"])


def test_create_of_an_existing_name_is_already_exists(
    kube_client: KubeClient, namespace: str
) -> None:
    kube_client.create(configmap("a", namespace))
    with pytest.raises(AlreadyExists) as err:
        kube_client.create(configmap("a", namespace))
    assert err.value.code == 409
    assert err.value.reason == "AlreadyExists"


def test_same_name_in_two_namespaces_is_allowed(
    kube_client: KubeClient, namespace: str, unique: Callable[[str], str]
) -> None:
    other = unique("ct")
    kube_client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": other}})
    try:
        kube_client.create(configmap("a", namespace))
        kube_client.create(configmap("a", other))
        assert kube_client.get("configmaps", "a", other)["metadata"]["namespace"] == other
    finally:
        kube_client.delete("namespaces", other)


def test_generate_name_appends_a_random_suffix(kube_client: KubeClient, namespace: str) -> None:
    obj = configmap("ignored", namespace)
    del obj["metadata"]["name"]
    obj["metadata"]["generateName"] = "gen-"
    a = kube_client.create(obj)
    b = kube_client.create(obj)
    assert a["metadata"]["name"].startswith("gen-")
    assert len(a["metadata"]["name"]) == len("gen-") + 5
    assert a["metadata"]["name"] != b["metadata"]["name"]


def test_create_without_a_name_is_invalid(kube_client: KubeClient, namespace: str) -> None:
    obj = configmap("x", namespace)
    del obj["metadata"]["name"]
    with pytest.raises(Invalid) as err:
        kube_client.create(obj)
    assert err.value.code == 422


def test_create_with_an_invalid_name_is_invalid(kube_client: KubeClient, namespace: str) -> None:
    with pytest.raises(Invalid):
        kube_client.create(configmap("Not_A_Valid_Name", namespace))


def test_create_in_a_missing_namespace_is_not_found(
    kube_client: KubeClient, unique: Callable[[str], str]
) -> None:
    with pytest.raises(NotFound):
        kube_client.create(configmap("a", unique("missing")))


def test_get_of_a_missing_object_is_not_found(kube_client: KubeClient, namespace: str) -> None:
    with pytest.raises(NotFound) as err:
        kube_client.get("configmaps", "nope", namespace)
    assert err.value.code == 404
    assert err.value.reason == "NotFound"


def test_cluster_scoped_objects_have_no_namespace(
    kube_client: KubeClient, unique: Callable[[str], str]
) -> None:
    name = unique("node")
    created = kube_client.create(node(name))
    assert "namespace" not in created["metadata"] or not created["metadata"]["namespace"]
    assert kube_client.get("nodes", name)["metadata"]["name"] == name
    kube_client.delete("nodes", name)


def test_returned_objects_are_copies(kube_client: KubeClient, namespace: str) -> None:
    created = kube_client.create(configmap("a", namespace, data={"k": "v"}))
    created["data"]["k"] = "changed"
    got = kube_client.get("configmaps", "a", namespace)
    got["data"]["k"] = "changed again"
    assert kube_client.get("configmaps", "a", namespace)["data"] == {"k": "v"}


def test_the_object_passed_to_create_is_not_modified(
    kube_client: KubeClient, namespace: str
) -> None:
    obj = configmap("a", namespace)
    kube_client.create(obj)
    assert "uid" not in obj["metadata"]
    assert "resourceVersion" not in obj["metadata"]


# ---------------------------------------------------------------- list


def test_list_filters_by_label_selector(kube_client: KubeClient, namespace: str) -> None:
    kube_client.create(configmap("web", namespace, labels={"app": "web", "tier": "front"}))
    kube_client.create(configmap("db", namespace, labels={"app": "db", "tier": "back"}))
    kube_client.create(configmap("plain", namespace))
    names = lambda sel: sorted(  # noqa: E731
        o["metadata"]["name"] for o in kube_client.list("configmaps", namespace, label_selector=sel)
    )
    assert names("app=web") == ["web"]
    assert names("app!=web") == ["db", "plain"]
    assert names("tier in (front,back)") == ["db", "web"]
    assert names("app") == ["db", "web"]
    assert names("!app") == ["plain"]
    assert names("app=web,tier=back") == []


def test_list_filters_by_metadata_name_field_selector(
    kube_client: KubeClient, namespace: str
) -> None:
    kube_client.create(configmap("a", namespace))
    kube_client.create(configmap("b", namespace))
    items = kube_client.list("configmaps", namespace, field_selector="metadata.name=b").items
    assert [o["metadata"]["name"] for o in items] == ["b"]
    items = kube_client.list("configmaps", namespace, field_selector="metadata.name!=b").items
    assert "b" not in [o["metadata"]["name"] for o in items]


def test_list_with_an_unsupported_field_selector_is_bad_request(
    kube_client: KubeClient, namespace: str
) -> None:
    with pytest.raises(BadRequest) as err:
        kube_client.list("configmaps", namespace, field_selector="data.k=v")
    assert err.value.code == 400


def test_list_in_a_namespace_excludes_other_namespaces(
    kube_client: KubeClient, namespace: str, unique: Callable[[str], str]
) -> None:
    other = unique("ct")
    kube_client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": other}})
    try:
        kube_client.create(configmap("here", namespace, labels={"t": namespace}))
        kube_client.create(configmap("there", other, labels={"t": namespace}))
        assert [o["metadata"]["name"] for o in kube_client.list("configmaps", namespace)] == [
            "here"
        ]
        everywhere = kube_client.list("configmaps", label_selector=f"t={namespace}")
        assert sorted(o["metadata"]["name"] for o in everywhere) == ["here", "there"]
    finally:
        kube_client.delete("namespaces", other)


def test_list_items_carry_api_version_and_kind(kube_client: KubeClient, namespace: str) -> None:
    kube_client.create(configmap("a", namespace))
    items = kube_client.list("configmaps", namespace).items
    assert [(o["apiVersion"], o["kind"]) for o in items] == [("v1", "ConfigMap")]


def test_list_resource_version_is_at_least_the_latest_write(
    kube_client: KubeClient, namespace: str
) -> None:
    created = kube_client.create(configmap("a", namespace))
    listed = kube_client.list("configmaps", namespace)
    assert int(listed.resource_version) >= int(created["metadata"]["resourceVersion"])


# ---------------------------------------------------------------- update


def test_update_bumps_the_resource_version(kube_client: KubeClient, namespace: str) -> None:
    created = kube_client.create(configmap("a", namespace))
    created["data"] = {"k": "v"}
    updated = kube_client.update(created)
    assert int(updated["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])
    assert kube_client.get("configmaps", "a", namespace)["data"] == {"k": "v"}


def test_update_with_a_stale_resource_version_conflicts(
    kube_client: KubeClient, namespace: str
) -> None:
    created = kube_client.create(configmap("a", namespace))
    first = dict(created, data={"k": "1"})
    kube_client.update(first)
    stale = dict(created, data={"k": "2"})
    with pytest.raises(Conflict) as err:
        kube_client.update(stale)
    assert err.value.code == 409
    assert err.value.reason == "Conflict"
    assert kube_client.get("configmaps", "a", namespace)["data"] == {"k": "1"}


def test_an_update_that_changes_nothing_keeps_the_resource_version(
    kube_client: KubeClient, namespace: str
) -> None:
    created = kube_client.create(configmap("a", namespace, data={"k": "v"}))
    again = kube_client.update(created)
    assert again["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]


def test_update_of_a_missing_object_is_not_found(kube_client: KubeClient, namespace: str) -> None:
    with pytest.raises(NotFound):
        kube_client.update(configmap("nope", namespace))


def test_update_ignores_status_of_kinds_with_a_status_subresource(
    kube_client: KubeClient, namespace: str
) -> None:
    created = kube_client.create(pod("p", namespace))
    created["status"] = {"phase": "Running"}
    created["metadata"]["labels"] = {"x": "y"}
    updated = kube_client.update(created)
    assert updated["status"]["phase"] == "Pending"
    assert updated["metadata"]["labels"] == {"x": "y"}


def test_update_status_ignores_spec_changes(kube_client: KubeClient, namespace: str) -> None:
    created = kube_client.create(pod("p", namespace))
    created["spec"]["activeDeadlineSeconds"] = 60
    created["status"] = {"phase": "Running"}
    updated = kube_client.update_status(created)
    assert updated["status"]["phase"] == "Running"
    assert "activeDeadlineSeconds" not in updated["spec"]


def test_update_status_with_a_stale_resource_version_conflicts(
    kube_client: KubeClient, namespace: str
) -> None:
    created = kube_client.create(pod("p", namespace))
    kube_client.update(dict(created, metadata=dict(created["metadata"], labels={"a": "b"})))
    created["status"] = {"phase": "Running"}
    with pytest.raises(Conflict):
        kube_client.update_status(created)


def test_generation_starts_at_one_and_moves_with_spec_only(
    kube_client: KubeClient, namespace: str
) -> None:
    created = kube_client.create(deployment("d", namespace))
    assert created["metadata"]["generation"] == 1
    created["metadata"]["labels"] = {"a": "b"}
    relabelled = kube_client.update(created)
    assert relabelled["metadata"]["generation"] == 1
    relabelled["spec"]["replicas"] = 3
    rescaled = kube_client.update(relabelled)
    assert rescaled["metadata"]["generation"] == 2
    rescaled["status"] = {"observedGeneration": 2}
    status = kube_client.update_status(rescaled)
    assert status["metadata"]["generation"] == 2


def test_custom_resource_generation_and_status_subresource(
    kube_client: KubeClient, unique: Callable[[str], str]
) -> None:
    name = unique("np")
    created = kube_client.create(nodepool(name))
    try:
        assert created["metadata"]["generation"] == 1
        created["spec"]["weight"] = 10
        updated = kube_client.update(created)
        assert updated["metadata"]["generation"] == 2
        updated["status"] = {"conditions": []}
        updated["spec"]["weight"] = 20
        status = kube_client.update_status(updated)
        assert status["metadata"]["generation"] == 2
        assert status["spec"]["weight"] == 10
    finally:
        kube_client.delete("nodepools", name)


def test_custom_resource_update_without_resource_version_is_invalid(
    kube_client: KubeClient, unique: Callable[[str], str]
) -> None:
    name = unique("np")
    created = kube_client.create(nodepool(name))
    try:
        del created["metadata"]["resourceVersion"]
        created["spec"]["weight"] = 5
        with pytest.raises(Invalid):
            kube_client.update(created)
    finally:
        kube_client.delete("nodepools", name)


# ---------------------------------------------------------------- patch


def test_merge_patch_adds_and_null_removes(kube_client: KubeClient, namespace: str) -> None:
    kube_client.create(
        configmap("a", namespace, labels={"keep": "1", "drop": "1"}, data={"k": "v"})
    )
    patched = kube_client.patch(
        "configmaps",
        "a",
        {"metadata": {"labels": {"drop": None, "new": "2"}}, "data": {"k2": "v2"}},
        namespace,
    )
    assert patched["metadata"]["labels"] == {"keep": "1", "new": "2"}
    assert patched["data"] == {"k": "v", "k2": "v2"}


def test_merge_patch_with_a_stale_resource_version_conflicts(
    kube_client: KubeClient, namespace: str
) -> None:
    created = kube_client.create(configmap("a", namespace))
    kube_client.patch("configmaps", "a", {"data": {"x": "1"}}, namespace)
    with pytest.raises(Conflict):
        kube_client.patch(
            "configmaps",
            "a",
            {
                "metadata": {"resourceVersion": created["metadata"]["resourceVersion"]},
                "data": {"x": "2"},
            },
            namespace,
        )


def test_json_patch_applies_operations_in_order(kube_client: KubeClient, namespace: str) -> None:
    kube_client.create(configmap("a", namespace, data={"a": "1", "b": "2"}))
    patched = kube_client.patch(
        "configmaps",
        "a",
        [
            {"op": "replace", "path": "/data/a", "value": "10"},
            {"op": "remove", "path": "/data/b"},
            {"op": "add", "path": "/data/c", "value": "3"},
            {"op": "add", "path": "/metadata/labels", "value": {"x/y": "z"}},
        ],
        namespace,
        patch_type="json",
    )
    assert patched["data"] == {"a": "10", "c": "3"}
    assert patched["metadata"]["labels"] == {"x/y": "z"}


def test_json_patch_failing_test_operation_is_invalid(
    kube_client: KubeClient, namespace: str
) -> None:
    kube_client.create(configmap("a", namespace, data={"a": "1"}))
    with pytest.raises(Invalid):
        kube_client.patch(
            "configmaps",
            "a",
            [{"op": "test", "path": "/data/a", "value": "2"}, {"op": "remove", "path": "/data/a"}],
            namespace,
            patch_type="json",
        )
    assert kube_client.get("configmaps", "a", namespace)["data"] == {"a": "1"}


def test_patch_of_a_missing_object_is_not_found(kube_client: KubeClient, namespace: str) -> None:
    with pytest.raises(NotFound):
        kube_client.patch("configmaps", "nope", {"data": {"a": "b"}}, namespace)


def test_status_patch_through_the_status_subresource(
    kube_client: KubeClient, namespace: str
) -> None:
    kube_client.create(pod("p", namespace))
    main = kube_client.patch("pods", "p", {"status": {"phase": "Running"}}, namespace)
    assert main["status"]["phase"] == "Pending"
    sub = kube_client.patch(
        "pods", "p", {"status": {"phase": "Running"}}, namespace, subresource="status"
    )
    assert sub["status"]["phase"] == "Running"


# ---------------------------------------------------------------- delete and finalizers


def test_delete_removes_an_object_without_finalizers(
    kube_client: KubeClient, namespace: str
) -> None:
    kube_client.create(configmap("a", namespace))
    kube_client.delete("configmaps", "a", namespace)
    with pytest.raises(NotFound):
        kube_client.get("configmaps", "a", namespace)


def test_delete_of_a_missing_object_is_not_found(kube_client: KubeClient, namespace: str) -> None:
    with pytest.raises(NotFound):
        kube_client.delete("configmaps", "nope", namespace)


def test_delete_with_finalizers_only_marks_the_object(
    kube_client: KubeClient, namespace: str
) -> None:
    kube_client.create(configmap("a", namespace, finalizers=["example.com/hold"]))
    kube_client.delete("configmaps", "a", namespace)
    got = kube_client.get("configmaps", "a", namespace)
    assert got["metadata"]["deletionTimestamp"]
    assert got["metadata"]["finalizers"] == ["example.com/hold"]


def test_removing_the_last_finalizer_of_a_deleting_object_removes_it(
    kube_client: KubeClient, namespace: str
) -> None:
    kube_client.create(configmap("a", namespace, finalizers=["example.com/a", "example.com/b"]))
    kube_client.delete("configmaps", "a", namespace)
    got = kube_client.get("configmaps", "a", namespace)
    got["metadata"]["finalizers"] = ["example.com/b"]
    got = kube_client.update(got)
    assert kube_client.get("configmaps", "a", namespace)["metadata"]["finalizers"] == [
        "example.com/b"
    ]
    got["metadata"]["finalizers"] = []
    kube_client.update(got)
    with pytest.raises(NotFound):
        kube_client.get("configmaps", "a", namespace)


def test_removing_a_finalizer_of_a_live_object_keeps_it(
    kube_client: KubeClient, namespace: str
) -> None:
    created = kube_client.create(configmap("a", namespace, finalizers=["example.com/a"]))
    created["metadata"]["finalizers"] = []
    kube_client.update(created)
    assert not kube_client.get("configmaps", "a", namespace)["metadata"].get("finalizers")


def test_no_new_finalizers_on_a_deleting_object(kube_client: KubeClient, namespace: str) -> None:
    kube_client.create(configmap("a", namespace, finalizers=["example.com/a"]))
    kube_client.delete("configmaps", "a", namespace)
    got = kube_client.get("configmaps", "a", namespace)
    got["metadata"]["finalizers"] = ["example.com/a", "example.com/new"]
    with pytest.raises(Invalid):
        kube_client.update(got)


def test_deletion_timestamp_cannot_be_cleared_by_update(
    kube_client: KubeClient, namespace: str
) -> None:
    kube_client.create(configmap("a", namespace, finalizers=["example.com/a"]))
    kube_client.delete("configmaps", "a", namespace)
    got = kube_client.get("configmaps", "a", namespace)
    stamp = got["metadata"]["deletionTimestamp"]
    del got["metadata"]["deletionTimestamp"]
    got["data"] = {"k": "v"}
    updated = kube_client.update(got)
    assert updated["metadata"]["deletionTimestamp"] == stamp


def test_deleting_a_deleting_object_again_changes_nothing(
    kube_client: KubeClient, namespace: str
) -> None:
    kube_client.create(configmap("a", namespace, finalizers=["example.com/a"]))
    kube_client.delete("configmaps", "a", namespace)
    before = kube_client.get("configmaps", "a", namespace)
    kube_client.delete("configmaps", "a", namespace)
    after = kube_client.get("configmaps", "a", namespace)
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]


def test_delete_with_a_mismatched_uid_precondition_conflicts(
    kube_client: KubeClient, namespace: str
) -> None:
    kube_client.create(configmap("a", namespace))
    with pytest.raises(Conflict):
        kube_client.delete("configmaps", "a", namespace, preconditions={"uid": "not-the-uid"})
    assert kube_client.get("configmaps", "a", namespace)


def test_delete_with_a_stale_resource_version_precondition_conflicts(
    kube_client: KubeClient, namespace: str
) -> None:
    created = kube_client.create(configmap("a", namespace))
    kube_client.patch("configmaps", "a", {"data": {"x": "1"}}, namespace)
    with pytest.raises(Conflict):
        kube_client.delete(
            "configmaps",
            "a",
            namespace,
            preconditions={"resourceVersion": created["metadata"]["resourceVersion"]},
        )


def test_update_status_of_a_kind_without_a_status_subresource_is_not_found(
    kube_client: KubeClient, namespace: str
) -> None:
    created = kube_client.create(configmap("a", namespace))
    with pytest.raises(NotFound):
        kube_client.update_status(created)


def test_delete_returns_nothing_when_the_object_is_gone(
    kube_client: KubeClient, namespace: str
) -> None:
    kube_client.create(configmap("a", namespace))
    assert kube_client.delete("configmaps", "a", namespace) is None


def test_delete_returns_the_object_while_finalizers_hold_it(
    kube_client: KubeClient, namespace: str
) -> None:
    kube_client.create(configmap("a", namespace, finalizers=["example.com/hold"]))
    held = kube_client.delete("configmaps", "a", namespace)
    assert held is not None
    assert held["metadata"]["deletionTimestamp"]
