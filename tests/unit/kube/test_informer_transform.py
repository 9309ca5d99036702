"""The informer cache transform ``serve`` uses (``compact_object``): cached objects lose
``managedFields`` and share their strings, and keep everything the controllers read."""

from __future__ import annotations

import copy
import json
from typing import Any

import attrs

from karpenter_core.apis.objects import Node, Pod
from karpenter_core.kube.client import ADDED, MODIFIED, Obj, ObjectList
from karpenter_core.kube.informer import Informer, SharedInformers, compact_object
from karpenter_core.runtime.clock import VirtualClock
from karpenter_core.sim.apiserver import InMemoryApiServer

MANAGED = [
    {
        "manager": "kube-controller-manager",
        "operation": "Update",
        "apiVersion": "v1",
        "time": "2026-11-30T08:15:42Z",
        "fieldsType": "FieldsV1",
        "fieldsV1": {"f:metadata": {"f:labels": {"f:app": {}}}, "f:spec": {}},
    }
]


def _pod(name: str = "web-1") -> dict[str, Any]:
    """A pod as a Deployment makes it, with what the scheduler and disruption read."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "team",
            "uid": f"uid-{name}",
            "resourceVersion": "41",
            "creationTimestamp": "2026-11-30T08:15:42Z",
            "labels": {"app": "web", "pod-template-hash": "5d9f"},
            "annotations": {"karpenter.sh/do-not-disrupt": "true"},
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": "web-5d9f",
                    "uid": "rs-uid",
                    "controller": True,
                }
            ],
            "managedFields": copy.deepcopy(MANAGED),
        },
        "spec": {
            "nodeName": "node-a",
            "priority": 10,
            "nodeSelector": {"kubernetes.io/os": "linux"},
            "affinity": {
                "podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        {
                            "labelSelector": {"matchLabels": {"app": "web"}},
                            "topologyKey": "kubernetes.io/hostname",
                        }
                    ]
                }
            },
            "tolerations": [
                {
                    "key": "node.kubernetes.io/not-ready",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 300,
                }
            ],
            "topologySpreadConstraints": [
                {
                    "maxSkew": 1,
                    "topologyKey": "topology.kubernetes.io/zone",
                    "whenUnsatisfiable": "DoNotSchedule",
                    "labelSelector": {"matchLabels": {"app": "web"}},
                }
            ],
            "containers": [
                {
                    "name": "app",
                    "image": "registry.example.com/web:v1",
                    "ports": [{"containerPort": 8080, "hostPort": 8080, "protocol": "TCP"}],
                    "resources": {
                        "requests": {"cpu": "250m", "memory": "512Mi"},
                        "limits": {"memory": "512Mi"},
                    },
                    "env": [{"name": "LOG_LEVEL", "value": "info"}],
                    "readinessProbe": {"httpGet": {"path": "/readyz", "port": 8080}},
                    "volumeMounts": [{"name": "data", "mountPath": "/data"}],
                    "imagePullPolicy": "IfNotPresent",
                }
            ],
            "initContainers": [
                {
                    "name": "proxy",
                    "image": "registry.example.com/proxy:v1",
                    "restartPolicy": "Always",
                    "resources": {"requests": {"cpu": "100m"}},
                    "command": ["/proxy", "--port=15001"],
                }
            ],
            "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "web-data"}}],
        },
        "status": {
            "phase": "Running",
            "startTime": "2026-11-30T08:16:03Z",
            "conditions": [
                {"type": "Ready", "status": "True", "lastTransitionTime": "2026-11-30T08:16:03Z"}
            ],
            "containerStatuses": [
                {
                    "name": "app",
                    "ready": True,
                    "restartCount": 2,
                    "state": {"running": {"startedAt": "2026-11-30T08:16:03Z"}},
                    "imageID": "registry.example.com/web@sha256:0123",
                    "allocatedResources": {"cpu": "300m"},
                    "resources": {"requests": {"cpu": "300m"}},
                }
            ],
        },
    }


def _node() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": "node-a",
            "uid": "node-uid",
            "resourceVersion": "7",
            "labels": {"kubernetes.io/hostname": "node-a", "karpenter.sh/nodepool": "default"},
            "managedFields": copy.deepcopy(MANAGED),
        },
        "spec": {
            "providerID": "kwok://node-a",
            "taints": [{"key": "karpenter.sh/disrupted", "effect": "NoSchedule"}],
        },
        "status": {
            "capacity": {"cpu": "4", "memory": "16Gi", "pods": "110"},
            "allocatable": {"cpu": "3900m", "memory": "15Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def _without_managed_fields(obj: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    del out["metadata"]["managedFields"]
    return out


def _stored(obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` as a create request (the server assigns uid and resourceVersion)."""
    for field in ("uid", "resourceVersion"):
        obj["metadata"].pop(field)
    return obj


def _typed(model: Any) -> dict[str, Any]:
    """A typed model's parsed fields (everything but the raw mapping it came from)."""
    return attrs.asdict(model, recurse=False, filter=lambda a, _v: a.name != "raw")


def test_compact_object_drops_managed_fields_and_keeps_the_rest() -> None:
    node = _node()
    before = copy.deepcopy(node)
    compacted = compact_object(node)
    assert "managedFields" not in compacted["metadata"]
    assert compacted == _without_managed_fields(before)
    assert node == before  # the input is left as it was


def test_a_compacted_pod_keeps_what_scheduling_reads_of_its_containers_only() -> None:
    pod = _pod()
    before = copy.deepcopy(pod)
    compacted = compact_object(pod)
    assert pod == before
    expected = _without_managed_fields(before)
    app = expected["spec"]["containers"][0]
    for unread in ("env", "readinessProbe", "volumeMounts", "imagePullPolicy"):
        del app[unread]
    del expected["spec"]["initContainers"][0]["command"]
    expected["status"]["containerStatuses"] = [
        {
            "name": "app",
            "allocatedResources": {"cpu": "300m"},
            "resources": {"requests": {"cpu": "300m"}},
        }
    ]
    assert compacted == expected
    # the pod-level fields the scheduler and disruption read are all still there
    assert compacted["spec"]["volumes"] == before["spec"]["volumes"]
    assert compacted["metadata"]["annotations"] == before["metadata"]["annotations"]


def test_compacted_objects_parse_to_the_same_typed_models() -> None:
    # everything the controllers read goes through these models
    pod = _pod()
    typed = _typed(Pod.from_dict(compact_object(pod)))
    assert typed == _typed(Pod.from_dict(pod))
    # requests from the kubelet's allocation (larger than the spec's), plus the sidecar's
    assert typed["requests"]["cpu"] == 400
    node = _node()
    assert _typed(Node.from_dict(compact_object(node))) == _typed(Node.from_dict(node))


def test_compacted_objects_share_their_strings() -> None:
    # two documents decoded separately have separate copies of every string...
    a = json.loads(json.dumps(_pod("web-1")))
    b = json.loads(json.dumps(_pod("web-2")))
    assert a["status"]["phase"] is not b["status"]["phase"]
    # ...which the transform makes one
    ca, cb = compact_object(a), compact_object(b)
    assert ca["status"]["phase"] is cb["status"]["phase"]
    assert ca["spec"]["containers"][0]["image"] is cb["spec"]["containers"][0]["image"]
    key_a = next(k for k in ca["metadata"]["labels"] if k == "pod-template-hash")
    key_b = next(k for k in cb["metadata"]["labels"] if k == "pod-template-hash")
    assert key_a is key_b


def test_an_informer_with_the_transform_caches_and_delivers_only_transformed_objects() -> None:
    server = InMemoryApiServer(VirtualClock(), seed=1)
    server.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}})
    server.create(_stored(_pod("listed")))
    informers = SharedInformers(server, transform=compact_object)
    inf = informers.informer("pods")
    seen: list[tuple[str, Obj]] = []
    inf.add_handler(lambda event, obj: seen.append((event, obj)))
    inf.pump()  # the listing
    created = server.create(_stored(_pod("watched")))
    inf.pump()  # its watch event
    assert "managedFields" in created["metadata"]  # the server keeps them
    assert sorted(inf.keys()) == ["team/listed", "team/watched"]
    for obj in inf.objects():
        assert "managedFields" not in obj["metadata"]
        assert obj["spec"]["containers"][0]["resources"]["requests"] == {
            "cpu": "250m",
            "memory": "512Mi",
        }
    assert [(e, o["metadata"]["name"]) for e, o in seen] == [
        (ADDED, "listed"),
        (ADDED, "watched"),
    ]
    assert all("managedFields" not in o["metadata"] for _, o in seen)

    # this process's own write, remembered ahead of its watch event, is transformed too
    updated = copy.deepcopy(created)
    updated["metadata"]["labels"]["app"] = "web2"
    result = server.update(updated)
    assert inf.remember(result)
    cached = inf.get("team/watched")
    assert cached is not None
    assert cached["metadata"]["labels"]["app"] == "web2"
    assert "managedFields" not in cached["metadata"]
    inf.pump()
    assert seen[-1][0] == MODIFIED and "managedFields" not in seen[-1][1]["metadata"]


class _PagedClient:
    """A client whose listing applies ``each`` item by item (the real adapter's
    ``list_each``), recording how it was asked."""

    def __init__(self, items: list[Obj]) -> None:
        self.items = items
        self.calls: list[str] = []

    def list_each(self, resource: Any, namespace: Any = None, **kw: Any) -> ObjectList:
        self.calls.append("list_each")
        each = kw["each"]
        return ObjectList([each(copy.deepcopy(o)) for o in self.items], "5")

    def list(self, resource: Any, namespace: Any = None, **kw: Any) -> ObjectList:
        self.calls.append("list")
        return ObjectList([copy.deepcopy(o) for o in self.items], "5")


def test_a_transforming_informer_lists_page_by_page_when_the_client_can() -> None:
    client = _PagedClient([_pod("a"), _pod("b")])
    inf = Informer(client, "pods", transform=compact_object)  # type: ignore[arg-type]
    inf.sync()
    assert client.calls == ["list_each"]
    assert sorted(inf.keys()) == ["team/a", "team/b"]
    assert all("managedFields" not in o["metadata"] for o in inf.objects())

    plain = _PagedClient([_pod("a")])
    untouched = Informer(plain, "pods")  # type: ignore[arg-type]
    untouched.sync()
    assert plain.calls == ["list"]
    cached = untouched.get("team/a")
    assert cached is not None and "managedFields" in cached["metadata"]
