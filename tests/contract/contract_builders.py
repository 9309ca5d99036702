"""Minimal valid objects for the contract tests (valid on a real API server too).

Not the test kit's builders: these contract tests assert what a real kube-apiserver does
with exactly these objects (no status, no resources, a pullable image), against both
backends, and must stay minimal."""

from __future__ import annotations

from typing import Any

from karpenter_core.kube.client import KubeClient


def pod(
    name: str,
    namespace: str,
    *,
    labels: dict[str, str] | None = None,
    node_name: str | None = None,
    finalizers: list[str] | None = None,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if labels:
        meta["labels"] = labels
    if finalizers:
        meta["finalizers"] = finalizers
    spec: dict[str, Any] = {"containers": [{"name": "app", "image": "registry.k8s.io/pause:3.9"}]}
    if node_name:
        spec["nodeName"] = node_name
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def node(name: str, *, labels: dict[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "Node", "metadata": meta, "spec": {}}


def configmap(
    name: str,
    namespace: str,
    *,
    labels: dict[str, str] | None = None,
    data: dict[str, str] | None = None,
    finalizers: list[str] | None = None,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if labels:
        meta["labels"] = labels
    if finalizers:
        meta["finalizers"] = finalizers
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data or {}}


def deployment(name: str, namespace: str, replicas: int = 1) -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "app", "image": "registry.k8s.io/pause:3.9"}]},
            },
        },
    }


def nodepool(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": name},
        "spec": {
            "template": {
                "spec": {
                    "nodeClassRef": {
                        "group": "karpenter.kwok.sh",
                        "kind": "KWOKNodeClass",
                        "name": "default",
                    },
                    "requirements": [],
                }
            }
        },
    }


def pdb(
    name: str,
    namespace: str,
    selector: dict[str, str],
    *,
    min_available: int | str | None = None,
    max_unavailable: int | str | None = None,
    unhealthy_pod_eviction_policy: str | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"selector": {"matchLabels": selector}}
    if min_available is not None:
        spec["minAvailable"] = min_available
    if max_unavailable is not None:
        spec["maxUnavailable"] = max_unavailable
    if unhealthy_pod_eviction_policy is not None:
        spec["unhealthyPodEvictionPolicy"] = unhealthy_pod_eviction_policy
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def replicaset(name: str, namespace: str, labels: dict[str, str], replicas: int) -> dict[str, Any]:
    """A ReplicaSet: the controller a real disruption controller asks for a budget's scale
    (percentages and maxUnavailable need one; no replicaset controller runs in the tests)."""
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "app", "image": "registry.k8s.io/pause:3.9"}]},
            },
        },
    }


def controller_ref(owner: dict[str, Any]) -> dict[str, Any]:
    meta = owner["metadata"]
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": meta["name"],
        "uid": meta["uid"],
        "controller": True,
    }


def running_pod(
    client: KubeClient,
    name: str,
    namespace: str,
    node_name: str,
    *,
    labels: dict[str, str] | None = None,
    ready: bool = True,
    owner: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Create a pod bound to ``node_name`` and report it Running (and Ready), as a kubelet would."""
    new = pod(name, namespace, labels=labels, node_name=node_name)
    if owner is not None:
        new["metadata"]["ownerReferences"] = [controller_ref(owner)]
    created = client.create(new)
    created["status"] = {
        "phase": "Running",
        "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
    }
    return client.update_status(created)
