"""A snapshot of a small cluster, written by hand in the shape an API server returns
objects: a NodePool, three launched NodeClaims with their Nodes, and a Deployment whose
ReplicaSet's pods are spread over them, with uids, owner references, timestamps and
statuses as a real cluster has them (the Nodes' provider ids are a foreign cloud's, so
the KWOK provider has to adopt them)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from karpenter_core.sim.startstate import StartingState, starting_state_of
from karpenter_core.snapshot import Snapshot, write_snapshot

TAKEN_AT = datetime(2025, 6, 1, 12, 0, 0, tzinfo=UTC)
INSTANCE_TYPE = "c-4x-amd64-linux"
NODES = ("ip-10-0-1-11", "ip-10-0-1-12", "ip-10-0-1-13")
ZONES = ("test-zone-a", "test-zone-b", "test-zone-c")


def _ts(delta: timedelta) -> str:
    return (TAKEN_AT - delta).strftime("%Y-%m-%dT%H:%M:%SZ")


def _cond(kind: str, since: timedelta) -> dict[str, Any]:
    return {
        "type": kind,
        "status": "True",
        "reason": kind,
        "message": "",
        "lastTransitionTime": _ts(since),
    }


NODE_CLASS_REF = {"group": "karpenter.kwok.sh", "kind": "KWOKNodeClass", "name": "default"}


def _in(key: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": "In", "values": list(values)}


def nodepool(policy: str = "WhenEmptyOrUnderutilized") -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {
            "name": "default",
            "uid": "00000000-0000-4000-8000-000000000001",
            "creationTimestamp": _ts(timedelta(days=2)),
            "generation": 3,
            "resourceVersion": "1234",
        },
        "spec": {
            "template": {
                "spec": {
                    "nodeClassRef": dict(NODE_CLASS_REF),
                    "requirements": [
                        _in("node.kubernetes.io/instance-type", INSTANCE_TYPE, "c-2x-amd64-linux"),
                        _in("karpenter.sh/capacity-type", "on-demand"),
                    ],
                    "expireAfter": "720h",
                }
            },
            "disruption": {
                "consolidationPolicy": policy,
                "consolidateAfter": "30s",
                "budgets": [{"nodes": "10%"}],
            },
        },
        "status": {"conditions": [_cond("Ready", timedelta(days=2))]},
    }


def _labels(i: int) -> dict[str, str]:
    return {
        "karpenter.sh/nodepool": "default",
        "karpenter.sh/capacity-type": "on-demand",
        "node.kubernetes.io/instance-type": INSTANCE_TYPE,
        "topology.kubernetes.io/zone": ZONES[i],
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/os": "linux",
        "karpenter.sh/registered": "true",
        "karpenter.sh/initialized": "true",
    }


_CAPACITY = {"cpu": "4", "memory": "8Gi", "pods": "110", "ephemeral-storage": "20Gi"}
_ALLOCATABLE = {"cpu": "3900m", "memory": "7Gi", "pods": "110", "ephemeral-storage": "18Gi"}


def nodeclaim(i: int) -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodeClaim",
        "metadata": {
            "name": f"default-{'abc'[i]}x{i}yz",
            "uid": f"00000000-0000-4000-8000-00000000010{i}",
            "creationTimestamp": _ts(timedelta(hours=5)),
            "labels": _labels(i),
            "finalizers": ["karpenter.sh/termination"],
            "ownerReferences": [
                {
                    "apiVersion": "karpenter.sh/v1",
                    "kind": "NodePool",
                    "name": "default",
                    "uid": "00000000-0000-4000-8000-000000000001",
                    "blockOwnerDeletion": True,
                }
            ],
            "resourceVersion": "2000",
        },
        "spec": {
            "nodeClassRef": dict(NODE_CLASS_REF),
            "requirements": [
                _in("node.kubernetes.io/instance-type", INSTANCE_TYPE),
                _in("karpenter.sh/capacity-type", "on-demand"),
                _in("karpenter.sh/nodepool", "default"),
            ],
            "resources": {"requests": {"cpu": "1", "pods": "3"}},
            "expireAfter": "720h",
        },
        "status": {
            "providerID": f"aws:///{ZONES[i]}/i-000000000000000{i}",
            "nodeName": NODES[i],
            "capacity": dict(_CAPACITY),
            "allocatable": dict(_ALLOCATABLE),
            "conditions": [
                _cond("Launched", timedelta(hours=5)),
                _cond("Registered", timedelta(hours=5)),
                _cond("Initialized", timedelta(hours=5)),
                _cond("Ready", timedelta(hours=5)),
            ],
            "lastPodEventTime": _ts(timedelta(hours=1)),
        },
    }


def node(i: int) -> dict[str, Any]:
    labels = {**_labels(i), "kubernetes.io/hostname": NODES[i]}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": NODES[i],
            "uid": f"00000000-0000-4000-8000-00000000020{i}",
            "creationTimestamp": _ts(timedelta(hours=5)),
            "labels": labels,
            "finalizers": ["karpenter.sh/termination"],
            "resourceVersion": "2100",
        },
        "spec": {"providerID": f"aws:///{ZONES[i]}/i-000000000000000{i}"},
        "status": {
            "capacity": dict(_CAPACITY),
            "allocatable": dict(_ALLOCATABLE),
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "KubeletReady",
                    "message": "kubelet is posting ready status",
                    "lastHeartbeatTime": _ts(timedelta(seconds=20)),
                    "lastTransitionTime": _ts(timedelta(hours=5)),
                }
            ],
            "phase": "Running",
        },
    }


_TEMPLATE = {
    "metadata": {"labels": {"app": "web"}},
    "spec": {
        "containers": [
            {
                "name": "web",
                "image": "registry.k8s.io/pause:3.9",
                "resources": {"requests": {"cpu": "1", "memory": "512Mi"}},
                "imagePullPolicy": "IfNotPresent",
            }
        ],
        "restartPolicy": "Always",
        "terminationGracePeriodSeconds": 30,
    },
}


def deployment(replicas: int) -> list[dict[str, Any]]:
    """The Deployment and its ReplicaSet (named by a hash the simulator would not
    compute, as a real cluster's is)."""
    rs_template = json.loads(json.dumps(_TEMPLATE))
    rs_template["metadata"]["labels"]["pod-template-hash"] = "5d8f7c9b6"
    return [
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {
                "name": "web",
                "namespace": "default",
                "uid": "00000000-0000-4000-8000-000000000301",
                "creationTimestamp": _ts(timedelta(days=1)),
                "generation": 1,
            },
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": {"app": "web"}},
                "template": json.loads(json.dumps(_TEMPLATE)),
            },
            "status": {"replicas": replicas, "readyReplicas": replicas},
        },
        {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {
                "name": "web-5d8f7c9b6",
                "namespace": "default",
                "uid": "00000000-0000-4000-8000-000000000302",
                "creationTimestamp": _ts(timedelta(days=1)),
                "labels": {"app": "web", "pod-template-hash": "5d8f7c9b6"},
                "ownerReferences": [
                    {
                        "apiVersion": "apps/v1",
                        "kind": "Deployment",
                        "name": "web",
                        "uid": "00000000-0000-4000-8000-000000000301",
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ],
            },
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": {"app": "web", "pod-template-hash": "5d8f7c9b6"}},
                "template": rs_template,
            },
            "status": {"replicas": replicas},
        },
    ]


def pod(n: int, node_index: int | None) -> dict[str, Any]:
    spec = json.loads(json.dumps(_TEMPLATE["spec"]))
    status: dict[str, Any] = {"phase": "Pending", "qosClass": "Burstable"}
    if node_index is not None:
        spec["nodeName"] = NODES[node_index]
        status = {
            "phase": "Running",
            "qosClass": "Burstable",
            "startTime": _ts(timedelta(hours=2)),
            "conditions": [
                {"type": "PodScheduled", "status": "True"},
                {"type": "Ready", "status": "True"},
            ],
        }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"web-5d8f7c9b6-p{n}",
            "namespace": "default",
            "uid": f"00000000-0000-4000-8000-0000000004{n:02d}",
            "creationTimestamp": _ts(timedelta(hours=2)),
            "labels": {"app": "web", "pod-template-hash": "5d8f7c9b6"},
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": "web-5d8f7c9b6",
                    "uid": "00000000-0000-4000-8000-000000000302",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": spec,
        "status": status,
    }


def crafted_objects(
    pods_per_node: Sequence[int] = (2, 2, 1),
    pending: int = 0,
    policy: str = "WhenEmptyOrUnderutilized",
) -> list[dict[str, Any]]:
    """The cluster's objects: ``pods_per_node[i]`` web pods bound to node ``i`` (default:
    the third node holds one pod that fits on the others: consolidation removes it),
    and ``pending`` more web pods no node took yet."""
    placement = [i for i, n in enumerate(pods_per_node) for _ in range(n)] + [None] * pending
    objects: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}},
        nodepool(policy),
    ]
    for i in range(len(pods_per_node)):
        objects += [nodeclaim(i), node(i)]
    objects += deployment(len(placement))
    objects += [pod(n, where) for n, where in enumerate(placement)]
    objects.append(
        {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": "web.1", "namespace": "default"},
            "reason": "Scheduled",
        }
    )
    return objects


def crafted_snapshot(objects: list[dict[str, Any]] | None = None) -> Snapshot:
    return Snapshot.from_objects(
        crafted_objects() if objects is None else objects,
        taken_at=TAKEN_AT.strftime("%Y-%m-%dT%H:%M:%SZ"),
    )


def crafted_state(objects: list[dict[str, Any]] | None = None) -> StartingState:
    return starting_state_of(crafted_snapshot(objects), "crafted.json")


def write_crafted(path: Path, objects: list[dict[str, Any]] | None = None) -> Path:
    write_snapshot(crafted_snapshot(objects), path)
    return path


def as_aws(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The crafted cluster as an AWS one: m5.xlarge nodes (4 vCPU, 16 GiB) in us-west-2,
    NodePools and NodeClaims naming an EC2NodeClass (AL2023) the snapshot holds."""
    zones = {"test-zone-a": "us-west-2a", "test-zone-b": "us-west-2b", "test-zone-c": "us-west-2c"}
    ref = {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}
    for obj in objects:
        labels = obj["metadata"].get("labels") or {}
        if "node.kubernetes.io/instance-type" in labels:
            labels["node.kubernetes.io/instance-type"] = "m5.xlarge"
            zone = labels.get("topology.kubernetes.io/zone", "")
            labels["topology.kubernetes.io/zone"] = zones.get(zone, zone)
        if obj["kind"] == "NodePool":
            spec = obj["spec"]["template"]["spec"]
            spec["nodeClassRef"] = dict(ref)
            spec["requirements"][0]["values"] = ["m5.xlarge", "m5.large", "c5.large"]
        if obj["kind"] == "NodeClaim":
            obj["spec"]["nodeClassRef"] = dict(ref)
            obj["spec"]["requirements"][0]["values"] = ["m5.xlarge"]
    objects.append(
        {
            "apiVersion": "karpenter.k8s.aws/v1",
            "kind": "EC2NodeClass",
            "metadata": {"name": "default", "uid": "00000000-0000-4000-8000-0000000000ec"},
            "spec": {
                "role": "KarpenterNodeRole-example",
                "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "example"}}],
                "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "example"}}],
                "amiSelectorTerms": [{"alias": "al2023@latest"}],
            },
            "status": {
                "conditions": [
                    {
                        "type": "Ready",
                        "status": "True",
                        "reason": "Ready",
                        "message": "",
                        "lastTransitionTime": "2025-06-01T10:00:00Z",
                    }
                ]
            },
        }
    )
    return objects
