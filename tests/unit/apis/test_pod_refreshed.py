"""``Pod.refreshed``: a later version of a pod parses to what ``Pod.from_dict`` gives,
whether it reuses the earlier parse (status, bookkeeping metadata or a bind changed) or
parses in full (anything else), and bad input fails the same way."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import attrs
import pytest

from karpenter_core.apis.objects import ObjectError, Pod


def _pod() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "web-1",
            "namespace": "shop",
            "uid": "u-1",
            "resourceVersion": "10",
            "creationTimestamp": "2026-12-01T10:00:00Z",
            "labels": {"app": "web"},
            "ownerReferences": [
                {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "uid": "rs"}
            ],
        },
        "spec": {
            "containers": [
                {
                    "name": "c",
                    "image": "i",
                    "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}},
                    "ports": [{"containerPort": 80, "hostPort": 8080}],
                }
            ],
            "tolerations": [{"key": "k", "operator": "Exists"}],
            "priority": 5,
        },
        "status": {"phase": "Pending"},
    }


def _same(a: Pod, b: Pod) -> None:
    for f in attrs.fields(Pod):
        assert getattr(a, f.name) == getattr(b, f.name), f.name
    assert a.key == b.key
    assert a.scheduling_requests == b.scheduling_requests


def _bind(d: dict[str, Any]) -> None:
    d["spec"]["nodeName"] = "node-a"
    d["status"]["conditions"] = [{"type": "PodScheduled", "status": "True"}]


def _running(d: dict[str, Any]) -> None:
    d["status"].update(phase="Running", startTime="2026-12-01T10:00:05Z")


def _resized(d: dict[str, Any]) -> None:
    d["status"]["containerStatuses"] = [
        {"name": "c", "resources": {"requests": {"cpu": "2"}}, "allocatedResources": {"cpu": "2"}}
    ]


def _resize_infeasible(d: dict[str, Any]) -> None:
    _resized(d)
    d["status"]["conditions"] = [
        {"type": "PodResizePending", "status": "True", "reason": "Infeasible"}
    ]


def _relabelled(d: dict[str, Any]) -> None:
    d["metadata"]["labels"] = {"app": "api"}


def _deleting(d: dict[str, Any]) -> None:
    d["metadata"]["deletionTimestamp"] = "2026-12-01T11:00:00Z"


def _new_request(d: dict[str, Any]) -> None:
    d["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "1"


def _toleration_gone(d: dict[str, Any]) -> None:
    del d["spec"]["tolerations"]


def _toleration_changed(d: dict[str, Any]) -> None:
    d["spec"]["tolerations"] = [{"key": "other", "operator": "Exists"}]


def _gate_added(d: dict[str, Any]) -> None:
    d["spec"]["schedulingGates"] = [{"name": "wait"}]


def _nominated(d: dict[str, Any]) -> None:
    d["status"]["nominatedNodeName"] = "node-b"


def _bookkeeping(d: dict[str, Any]) -> None:
    d["metadata"]["resourceVersion"] = "11"
    d["metadata"]["managedFields"] = [{"manager": "kubelet"}]


CHANGES: list[Callable[[dict[str, Any]], None]] = [
    _bind,
    _running,
    _resized,
    _resize_infeasible,
    _relabelled,
    _deleting,
    _new_request,
    _toleration_gone,
    _toleration_changed,
    _gate_added,
    _nominated,
    _bookkeeping,
]


@pytest.mark.parametrize("change", CHANGES, ids=lambda f: f.__name__.strip("_"))
@pytest.mark.parametrize("shared", [True, False], ids=["shared-parts", "decoded-copy"])
def test_a_refreshed_pod_is_what_a_full_parse_gives(
    change: Callable[[dict[str, Any]], None], shared: bool
) -> None:
    before = _pod()
    old = Pod.from_dict(before)
    after = copy.deepcopy(before)
    change(after)
    if shared:
        # as the in-memory API server stores a patch: unchanged parts are the old objects
        for part in ("metadata", "spec"):
            if after[part] == before[part]:
                after[part] = before[part]
    fresh = old.refreshed(after)
    _same(fresh, Pod.from_dict(after))
    assert fresh.raw is after


def test_a_resize_undone_is_read_again() -> None:
    resized = _pod()
    _resized(resized)
    old = Pod.from_dict(resized)
    assert old.requests["cpu"] == 2000
    plain = _pod()
    _same(old.refreshed(plain), Pod.from_dict(plain))
    assert old.refreshed(plain).requests["cpu"] == 500


def test_the_same_object_is_the_same_pod() -> None:
    d = _pod()
    old = Pod.from_dict(d)
    assert old.refreshed(d) is old


def test_a_status_change_keeps_the_parsed_spec() -> None:
    before = _pod()
    old = Pod.from_dict(before)
    after = {**before, "status": {"phase": "Running"}}
    fresh = old.refreshed(after)
    # reused, not parsed again: the same tolerations and host ports objects
    assert fresh.tolerations is old.tolerations
    assert fresh.host_ports is old.host_ports
    assert fresh.phase == "Running"


@pytest.mark.parametrize(
    ("status", "field"),
    [
        ({"phase": 3}, "status.phase"),
        ({"startTime": "yesterday"}, "status.startTime"),
        ({"conditions": "Ready"}, "status.conditions"),
        ({"containerStatuses": {"name": "c"}}, "status.containerStatuses"),
    ],
)
def test_a_bad_status_fails_as_a_full_parse_does(status: dict[str, Any], field: str) -> None:
    before = _pod()
    old = Pod.from_dict(before)
    after = {**before, "status": status}
    with pytest.raises(ObjectError) as full:
        Pod.from_dict(after)
    with pytest.raises(ObjectError) as refreshed:
        old.refreshed(after)
    assert str(refreshed.value) == str(full.value)
    assert field in str(refreshed.value)


def test_a_bad_changed_spec_fails_as_a_full_parse_does() -> None:
    before = _pod()
    old = Pod.from_dict(before)
    after = copy.deepcopy(before)
    after["spec"]["containers"] = []
    with pytest.raises(ObjectError, match=r"spec\.containers"):
        old.refreshed(after)
