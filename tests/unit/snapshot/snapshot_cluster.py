"""A small cluster on the in-memory API server with the relations a snapshot must keep:
pods bound to nodes, node selectors and required node affinity on custom labels, PDBs
selecting pods, owner references, a claim mounted by a pod, a NodeClass referenced by its
NodePool, and server-side bookkeeping (managedFields, last-applied) to be dropped.

Workloads own the pods as a real cluster's do: a StatefulSet (with its headless Service)
owns ``ledger-*``, a Deployment's ReplicaSet owns ``checkout-1``, a Job ``indexer-1``, the
DaemonSet the ``log-agent`` pods; a CapacityBuffer names a PodTemplate."""

from __future__ import annotations

from typing import Any

from karpenter_core.kube.client import create_with_status
from karpenter_core.runtime.clock import VirtualClock
from karpenter_core.sim.apiserver import InMemoryApiServer

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def _node(name: str, team: str, zone: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/hostname": name,
                "topology.kubernetes.io/zone": zone,
                "node.kubernetes.io/instance-type": "m5.large",
                "karpenter.sh/nodepool": "general",
                "karpenter.sh/capacity-type": "spot",
                "acme.com/team": team,
            },
        },
        "spec": {"providerID": f"aws:///{zone}/i-0{name}"},
        "status": {
            "capacity": {"cpu": "2", "memory": "8Gi", "pods": "29"},
            "allocatable": {"cpu": "1930m", "memory": "7Gi", "pods": "29"},
            "addresses": [
                {"type": "InternalIP", "address": "10.0.0.7"},
                {"type": "Hostname", "address": name},
            ],
        },
    }


def _pod(name: str, ns: str, app: str, node: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": ns,
            "labels": {"app": app, "app.kubernetes.io/name": app, "tier": "backend"},
            "annotations": {LAST_APPLIED: '{"secret": "config"}', "acme.com/owner": "alice"},
            "managedFields": [{"manager": "kubectl", "operation": "Apply"}],
        },
        "spec": {
            "nodeName": node,
            "containers": [
                {
                    "name": "app",
                    "image": f"registry.acme.com/{app}:1.0",
                    "command": ["/bin/server", "--db=postgres://acme"],
                    "env": [{"name": "PASSWORD", "value": "hunter2"}],
                    "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}},
                }
            ],
            "tolerations": [{"key": "acme.com/dedicated", "operator": "Exists"}],
            **spec,
        },
        "status": {"phase": "Running"},
    }


def build_cluster() -> InMemoryApiServer:
    kube = InMemoryApiServer(VirtualClock())
    for ns in ("payments", "search"):
        kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    kube.create(
        {
            "apiVersion": "karpenter.kwok.sh/v1alpha1",
            "kind": "KWOKNodeClass",
            "metadata": {"name": "acme-nodes"},
        }
    )
    kube.create(
        {
            "apiVersion": "karpenter.sh/v1",
            "kind": "NodePool",
            "metadata": {"name": "general"},
            "spec": {
                "template": {
                    "metadata": {"labels": {"acme.com/team": "payments"}},
                    "spec": {
                        "nodeClassRef": {
                            "group": "karpenter.kwok.sh",
                            "kind": "KWOKNodeClass",
                            "name": "acme-nodes",
                        },
                        "requirements": [
                            {
                                "key": "karpenter.sh/capacity-type",
                                "operator": "In",
                                "values": ["spot", "on-demand"],
                            },
                            {"key": "acme.com/team", "operator": "In", "values": ["payments"]},
                            {"key": "acme.com/generation", "operator": "Gt", "values": ["5"]},
                        ],
                    },
                }
            },
        }
    )
    for name, team, zone in (
        ("ip-10-0-0-1", "payments", "us-west-2a"),
        ("ip-10-0-0-2", "search", "us-west-2b"),
        ("ip-10-0-0-3", "payments", "us-west-2b"),
    ):
        create_with_status(kube, _node(name, team, zone))
    ds = kube.create(
        {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": {"name": "log-agent", "namespace": "search"},
            "spec": {
                "selector": {"matchLabels": {"app": "log-agent"}},
                "template": {
                    "metadata": {"labels": {"app": "log-agent"}},
                    "spec": {"containers": [{"name": "agent", "image": "acme/agent"}]},
                },
            },
        }
    )
    owner = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "name": "log-agent",
        "uid": ds["metadata"]["uid"],
        "controller": True,
    }
    kube.create(
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": "ledger-data", "namespace": "payments"},
            "spec": {
                "storageClassName": "fast",
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "10Gi"}},
            },
        }
    )
    kube.create(
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": "fast"},
            "provisioner": "ebs.csi.aws.com",
        }
    )
    affinity_to_payments = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {"key": "acme.com/team", "operator": "In", "values": ["payments"]},
                            {
                                "key": "topology.kubernetes.io/zone",
                                "operator": "In",
                                "values": ["us-west-2b"],
                            },
                        ]
                    }
                ]
            }
        }
    }
    pods = [
        _pod("ledger-0", "payments", "ledger", "ip-10-0-0-3", affinity=affinity_to_payments,
             volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": "ledger-data"}}]),
        _pod("ledger-1", "payments", "ledger", "ip-10-0-0-1",
             nodeSelector={"acme.com/team": "payments"}),
        _pod("checkout-1", "payments", "checkout", "ip-10-0-0-1",
             nodeSelector={"kubernetes.io/hostname": "ip-10-0-0-1"}),
        _pod("indexer-1", "search", "indexer", "ip-10-0-0-2",
             nodeSelector={"acme.com/team": "search"}),
        _pod("log-agent-1", "search", "log-agent", "ip-10-0-0-2"),
        _pod("log-agent-2", "search", "log-agent", "ip-10-0-0-1"),
    ]  # fmt: skip
    owners = {"log-agent": owner, **_workloads(kube)}
    for pod in pods:
        app = pod["metadata"]["labels"]["app"]
        if app in owners:
            pod["metadata"]["ownerReferences"] = [owners[app]]
        if app == "checkout":
            pod["metadata"]["labels"]["pod-template-hash"] = "7d9f5c"
        if app == "indexer":
            pod["metadata"]["labels"]["job-name"] = "indexer"
        create_with_status(kube, pod)
    for name, ns, selector in (
        ("ledger-pdb", "payments", {"matchLabels": {"app": "ledger"}}),
        (
            "backend-pdb",
            "payments",
            {"matchExpressions": [{"key": "app", "operator": "In", "values": ["checkout", "x"]}]},
        ),
        ("search-pdb", "search", {"matchLabels": {"tier": "backend"}}),
    ):
        kube.create(
            {
                "apiVersion": "policy/v1",
                "kind": "PodDisruptionBudget",
                "metadata": {"name": name, "namespace": ns},
                "spec": {"minAvailable": 1, "selector": selector},
            }
        )
    return kube


def _ref(obj: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": obj["apiVersion"],
        "kind": obj["kind"],
        "name": obj["metadata"]["name"],
        "uid": obj["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def _workload(kind: str, name: str, ns: str, labels: dict[str, str], **spec: Any) -> dict[str, Any]:
    api_version = "batch/v1" if kind == "Job" else "apps/v1"
    return {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {"name": name, "namespace": ns, "labels": dict(labels)},
        "spec": {
            "selector": {"matchLabels": dict(labels)},
            "template": {
                "metadata": {"labels": dict(labels)},
                "spec": {"containers": [{"name": "app", "image": f"registry.acme.com/{name}"}]},
            },
            **spec,
        },
        "status": {
            "conditions": [
                {"type": "Progressing", "status": "True", "message": f"{kind} {name} progressed"}
            ]
        },
    }


def _workloads(kube: InMemoryApiServer) -> dict[str, dict[str, Any]]:
    """The workloads owning the pods, by the pods' ``app`` label: their owner references."""
    kube.create(
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "ledger", "namespace": "payments"},
            "spec": {"clusterIP": "None", "selector": {"app": "ledger"}},
        }
    )
    ledger = kube.create(
        _workload("StatefulSet", "ledger", "payments", {"app": "ledger"}, serviceName="ledger")
    )
    deployment = kube.create(_workload("Deployment", "checkout", "payments", {"app": "checkout"}))
    hashed = {"app": "checkout", "pod-template-hash": "7d9f5c"}
    rs = _workload("ReplicaSet", "checkout-7d9f5c", "payments", hashed, replicas=1)
    rs["metadata"]["ownerReferences"] = [_ref(deployment)]
    replicaset = kube.create(rs)
    job = kube.create(_workload("Job", "indexer", "search", {"job-name": "indexer"}))
    template = kube.create(
        {
            "apiVersion": "v1",
            "kind": "PodTemplate",
            "metadata": {"name": "checkout-buffer", "namespace": "payments"},
            "template": {
                "metadata": {"labels": {"app": "checkout"}},
                "spec": {"containers": [{"name": "app", "image": "registry.acme.com/checkout"}]},
            },
        }
    )
    kube.create(
        {
            "apiVersion": "autoscaling.x-k8s.io/v1beta1",
            "kind": "CapacityBuffer",
            "metadata": {"name": "checkout-buffer", "namespace": "payments"},
            "spec": {
                "podTemplateRef": {"name": template["metadata"]["name"]},
                "replicas": 2,
            },
        }
    )
    return {"ledger": _ref(ledger), "checkout": _ref(replicaset), "indexer": _ref(job)}
