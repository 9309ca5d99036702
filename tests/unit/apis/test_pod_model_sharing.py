"""Parsed pods share what replicas hold alike (request vectors, tolerations, owner
references; labels and annotations as decoded) without one pod's values leaking into
another's."""

from __future__ import annotations

import json
from typing import Any

from karpenter_core.apis.objects import Pod


def _pod(name: str, cpu: str, labels: dict[str, str], owner: str = "web-1") -> dict[str, Any]:
    return json.loads(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": name,
                    "namespace": "default",
                    "labels": labels,
                    "ownerReferences": [
                        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": owner, "uid": owner}
                    ],
                },
                "spec": {
                    "containers": [
                        {"name": "c", "image": "i", "resources": {"requests": {"cpu": cpu}}}
                    ],
                    "tolerations": [{"key": "k", "operator": "Exists"}],
                },
            }
        )
    )


def test_replicas_share_requests_tolerations_and_owners() -> None:
    a = Pod.from_dict(_pod("a", "500m", {"app": "web"}))
    b = Pod.from_dict(_pod("b", "500m", {"app": "web"}))
    assert a.requests is b.requests and a.requests == {"cpu": 500}
    assert a.scheduling_requests is b.scheduling_requests
    assert a.tolerations is b.tolerations
    assert a.owner_references is b.owner_references


def test_unlike_pods_keep_their_own_values() -> None:
    a = Pod.from_dict(_pod("a", "500m", {"app": "web"}))
    c = Pod.from_dict(_pod("c", "2", {"app": "db"}, owner="db-1"))
    assert c.requests == {"cpu": 2000} and a.requests == {"cpu": 500}
    assert c.owner_references[0].name == "db-1" and a.owner_references[0].name == "web-1"
    assert dict(c.labels) == {"app": "db"} and dict(a.labels) == {"app": "web"}


def test_labels_that_are_not_all_strings_are_still_refused() -> None:
    import pytest

    from karpenter_core.apis.objects import ObjectError

    with pytest.raises(ObjectError, match=r"metadata\.labels\.n"):
        Pod.from_dict(_pod("a", "1", {"n": 1}))  # type: ignore[dict-item]
