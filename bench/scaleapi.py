"""A stand-in API server for ``bench/serve.py --scale``: a large cluster's list/watch stream.

Creating 150,000 pods in a real etcd takes far longer than the measurement itself, and the
operator's memory depends only on what its informers receive. This HTTP server answers the
REST paths the operator uses, in the API server's JSON, with:

* **Nodes and Pods generated on the fly**, never stored: object ``i`` is a pure function
  of ``i``, so a LIST page (``limit``/``continue``) or a GET is built when asked for. They
  look like what a real API server returns for a Deployment's or a DaemonSet's pod on a
  kubelet-registered node: labels, ``ownerReferences``, containers with env, ports,
  probes, resources and the defaults the API server fills in, the service-account token
  volume, the default tolerations, status with conditions and container statuses, and
  **``managedFields`` as the API server sends them** (kube-controller-manager's and the
  kubelet's entries; nothing strips them unless the client does). A WATCH on them only
  sends bookmarks: the cluster is at rest. Writes to them are refused (405), and counted.
* **Everything else** (NodePools, the KWOKNodeClass, DaemonSets, Namespaces, the leader
  Lease, Events, NodeClaims the operator might create) in an in-memory API server
  (:class:`~karpenter_core.sim.apiserver.InMemoryApiServer`) with real watches.

Discovery (``/version``, ``/api/v1``, ``/apis/<group>/<version>``) lists the registered
resource types. Plain HTTP on 127.0.0.1; the kubeconfig carries a dummy token.
"""

from __future__ import annotations

import http.server
import json
import threading
import time
import urllib.parse
import uuid
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from karpenter_core.kube.client import (
    JSON_PATCH,
    MERGE_PATCH,
    ApiError,
    BadRequest,
    NotFound,
    Obj,
    ResourceType,
    resource_types,
)
from karpenter_core.sim.apiserver import InMemoryApiServer

CREATED = "2026-11-30T08:15:42Z"
STARTED = "2026-11-30T08:16:03Z"
_EPOCH = datetime(2026, 11, 28, 6, 0, 0, tzinfo=UTC)


def _pod_times(i: int) -> tuple[str, str, str, str]:
    """Pod ``i``'s creation, scheduling, start and readiness times: each pod its own, one
    created every 1.1 s over two days (as a real cluster's pods are, so no two pods' status
    conditions are alike), scheduled a second later, started after 21 s, Ready 6 s on."""
    created = _EPOCH + timedelta(seconds=round(i * 1.1))

    def at(seconds: int) -> str:
        return (created + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")

    return at(0), at(1), at(21), at(27)


ZONES = ("us-west-2a", "us-west-2b", "us-west-2c")
INSTANCE_TYPES = (("m6i.8xlarge", "32", "128Gi"), ("c6i.8xlarge", "32", "64Gi"))
DAEMONSETS = (("kube-system", "kube-proxy"), ("kube-system", "aws-node"))
"""Two DaemonSet pods on every node, as on a typical cluster; the rest are Deployments'."""
APP_NAMESPACES = 40
DEPLOYMENTS_PER_NAMESPACE = 25
BOOKMARK_EVERY = 20.0


def _uid(kind: str, i: int) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"bench/{kind}/{i}"))


def _fields_v1(value: Any) -> Any:
    """The ``fieldsV1`` tree the API server records for ``value`` (``f:`` keys, list items
    keyed by name as for containers, ports and env)."""
    if isinstance(value, dict):
        return {f"f:{k}": _fields_v1(v) for k, v in value.items()}
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        out: dict[str, Any] = {}
        for item in value:
            key = {k: item[k] for k in ("name", "containerPort", "type", "key") if k in item}
            out[f"k:{json.dumps(key, separators=(',', ':'), sort_keys=True)}"] = {
                ".": {},
                **_fields_v1(item),
            }
        return out
    return {}


def _managed(manager: str, time: str, fields: dict[str, Any], status: bool = False) -> Obj:
    """One ``managedFields`` entry of an ``Update`` by ``manager``."""
    entry: Obj = {
        "manager": manager,
        "operation": "Update",
        "apiVersion": "v1",
        "time": time,
        "fieldsType": "FieldsV1",
        "fieldsV1": fields,
    }
    if status:
        entry["subresource"] = "status"
    return entry


class ScaleCluster:
    """The generated part: ``nodes`` Nodes and ``pods`` Pods spread evenly over them."""

    def __init__(self, nodes: int, pods: int, resource_version: str) -> None:
        if pods < len(DAEMONSETS) * nodes:
            raise ValueError(f"{pods} pods cannot cover {len(DAEMONSETS)} DaemonSet pods/node")
        self.nodes = nodes
        self.pods = pods
        self.rv = resource_version
        self.ds_pods = len(DAEMONSETS) * nodes

    # ------------------------------------------------------------------ names

    def node_name(self, i: int) -> str:
        return f"ip-10-{i // 250 % 256}-{i % 250}-{i // 64000}.us-west-2.compute.internal"

    def _pod_place(self, i: int) -> tuple[str, str, str, int]:
        """(namespace, name, owner kind, owner index) of pod ``i``: the DaemonSet pods
        first (node by node), then the Deployments' replicas."""
        if i < self.ds_pods:
            ds = i % len(DAEMONSETS)
            ns, name = DAEMONSETS[ds]
            return ns, f"{name}-{_uid('dspod', i)[:5]}", "DaemonSet", ds
        j = i - self.ds_pods
        deployments = APP_NAMESPACES * DEPLOYMENTS_PER_NAMESPACE
        d = j % deployments
        ns = f"team-{d // DEPLOYMENTS_PER_NAMESPACE:02d}"
        rs_hash = _uid("rs", d)[:10].replace("-", "")
        return ns, f"svc-{d:04d}-{rs_hash}-{_uid('pod', i)[:5]}", "ReplicaSet", d

    def pod_index(self, namespace: str, name: str) -> int | None:
        """Inverse of the naming (GETs of one pod)."""
        if not hasattr(self, "_index"):
            self._index = {self._pod_place(i)[:2]: i for i in range(self.pods)}
        return self._index.get((namespace, name))

    def node_index(self, name: str) -> int | None:
        if not hasattr(self, "_node_index"):
            self._node_index = {self.node_name(i): i for i in range(self.nodes)}
        return self._node_index.get(name)

    def pods_on(self, node: int) -> list[int]:
        """Indexes of the pods bound to node ``node``."""
        daemons = [node * len(DAEMONSETS) + d for d in range(len(DAEMONSETS))]
        return daemons + list(range(self.ds_pods + node, self.pods, self.nodes))

    def namespaces(self) -> list[str]:
        return sorted(
            {ns for ns, _ in DAEMONSETS} | {f"team-{n:02d}" for n in range(APP_NAMESPACES)}
        )

    # ------------------------------------------------------------------ objects

    def node(self, i: int) -> dict[str, Any]:
        name = self.node_name(i)
        itype, cpu, mem = INSTANCE_TYPES[i % len(INSTANCE_TYPES)]
        zone = ZONES[i % len(ZONES)]
        ip = f"10.{i // 250 % 256}.{i % 250}.{10 + i // 64000}"
        metadata = {
            "name": name,
            "uid": _uid("node", i),
            "resourceVersion": self.rv,
            "creationTimestamp": CREATED,
            "labels": {
                "beta.kubernetes.io/arch": "amd64",
                "beta.kubernetes.io/instance-type": itype,
                "beta.kubernetes.io/os": "linux",
                "eks.amazonaws.com/nodegroup": "workers",
                "failure-domain.beta.kubernetes.io/region": "us-west-2",
                "failure-domain.beta.kubernetes.io/zone": zone,
                "kubernetes.io/arch": "amd64",
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "node.kubernetes.io/instance-type": itype,
                "topology.kubernetes.io/region": "us-west-2",
                "topology.kubernetes.io/zone": zone,
            },
            "annotations": {
                "alpha.kubernetes.io/provided-node-ip": ip,
                "node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
            },
        }
        resources = {
            "cpu": cpu,
            "ephemeral-storage": "104845292Ki",
            "hugepages-1Gi": "0",
            "hugepages-2Mi": "0",
            "memory": mem,
            "pods": "110",
        }
        conditions = [
            {
                "type": t,
                "status": "False" if t != "Ready" else "True",
                "lastHeartbeatTime": STARTED,
                "lastTransitionTime": CREATED,
                "reason": reason,
                "message": message,
            }
            for t, reason, message in (
                (
                    "MemoryPressure",
                    "KubeletHasSufficientMemory",
                    "kubelet has sufficient memory available",
                ),
                ("DiskPressure", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
                ("PIDPressure", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
                ("Ready", "KubeletReady", "kubelet is posting ready status"),
            )
        ]
        images = [
            {
                "names": [
                    f"registry.example.com/team/app-{k:02d}@sha256:{_uid('img', k).replace('-', '')}",
                    f"registry.example.com/team/app-{k:02d}:v1.{k}.0",
                ],
                "sizeBytes": 20_000_000 + 1_000_000 * k,
            }
            for k in range((i % 12) + 8)
        ]
        status = {
            "capacity": resources,
            "allocatable": dict(resources, cpu=f"{int(cpu) * 1000 - 90}m"),
            "conditions": conditions,
            "addresses": [
                {"type": "InternalIP", "address": ip},
                {"type": "InternalDNS", "address": name},
                {"type": "Hostname", "address": name},
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {
                "machineID": _uid("machine", i).replace("-", ""),
                "systemUUID": _uid("system", i),
                "bootID": _uid("boot", i),
                "kernelVersion": "6.1.112-124.190.amzn2023.x86_64",
                "osImage": "Amazon Linux 2023.6.20241031",
                "containerRuntimeVersion": "containerd://1.7.23",
                "kubeletVersion": "v1.34.1",
                "kubeProxyVersion": "v1.34.1",
                "operatingSystem": "linux",
                "architecture": "amd64",
            },
            "images": images,
        }
        spec = {
            "providerID": f"aws:///{zone}/i-{_uid('instance', i)[:17].replace('-', '')}",
            "podCIDR": f"100.{64 + i // 256 % 64}.{i % 256}.0/24",
            "podCIDRs": [f"100.{64 + i // 256 % 64}.{i % 256}.0/24"],
        }
        metadata["managedFields"] = [
            _managed(
                "kubelet",
                CREATED,
                {
                    "f:metadata": _fields_v1(
                        {"annotations": metadata["annotations"], "labels": metadata["labels"]}
                    ),
                    "f:spec": {"f:providerID": {}},
                },
            ),
            _managed(
                "kube-controller-manager",
                CREATED,
                {"f:spec": {"f:podCIDR": {}, "f:podCIDRs": {".": {}, 'v:"x"': {}}}},
            ),
            _managed(
                "kubelet",
                STARTED,
                {
                    "f:status": _fields_v1(
                        {k: status[k] for k in ("conditions", "images", "nodeInfo")}
                    )
                },
                status=True,
            ),
        ]
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": metadata,
            "spec": spec,
            "status": status,
        }

    def pod(self, i: int) -> dict[str, Any]:
        ns, name, owner_kind, owner = self._pod_place(i)
        if owner_kind == "DaemonSet":
            node = i // len(DAEMONSETS)
            app = DAEMONSETS[owner][1]
            labels = {
                "controller-revision-hash": "6d4b8c7f9",
                "k8s-app": app,
                "pod-template-generation": "3",
            }
            owner_ref = {
                "apiVersion": "apps/v1",
                "kind": "DaemonSet",
                "name": app,
                "uid": _uid("ds", owner),
                "controller": True,
                "blockOwnerDeletion": True,
            }
            requests = {"cpu": "100m", "memory": "128Mi"}
            priority = ("system-node-critical", 2000001000)
            generate = f"{app}-"
        else:
            node = (i - self.ds_pods) % self.nodes
            app = f"svc-{owner:04d}"
            rs = name.rsplit("-", 1)[0]
            labels = {
                "app": app,
                "app.kubernetes.io/name": app,
                "app.kubernetes.io/part-of": ns,
                "pod-template-hash": rs.rsplit("-", 1)[1],
                "version": "v1",
            }
            owner_ref = {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "name": rs,
                "uid": _uid("rs", owner),
                "controller": True,
                "blockOwnerDeletion": True,
            }
            requests = {"cpu": f"{100 + 50 * (owner % 6)}m", "memory": f"{256 * (1 + owner % 4)}Mi"}
            priority = None
            generate = f"{rs}-"
        node_name = self.node_name(node)
        token = f"kube-api-access-{_uid('tok', i)[:5]}"
        container = {
            "name": "app" if owner_kind != "DaemonSet" else app,
            "image": f"registry.example.com/{ns}/{app}:v1.{owner % 20}.{owner % 7}",
            "imagePullPolicy": "IfNotPresent",
            "ports": [
                {"name": "http", "containerPort": 8080, "protocol": "TCP"},
                {"name": "metrics", "containerPort": 9090, "protocol": "TCP"},
            ],
            "env": [
                {
                    "name": "POD_NAME",
                    "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}},
                },
                {
                    "name": "POD_NAMESPACE",
                    "valueFrom": {
                        "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}
                    },
                },
                {"name": "LOG_LEVEL", "value": "info"},
                {
                    "name": "OTEL_EXPORTER_OTLP_ENDPOINT",
                    "value": "http://otel-collector.observability:4317",
                },
            ],
            "resources": {"requests": requests, "limits": {"memory": requests["memory"]}},
            "livenessProbe": {
                "httpGet": {"path": "/healthz", "port": 8080, "scheme": "HTTP"},
                "initialDelaySeconds": 10,
                "timeoutSeconds": 1,
                "periodSeconds": 10,
                "successThreshold": 1,
                "failureThreshold": 3,
            },
            "readinessProbe": {
                "httpGet": {"path": "/readyz", "port": 8080, "scheme": "HTTP"},
                "timeoutSeconds": 1,
                "periodSeconds": 5,
                "successThreshold": 1,
                "failureThreshold": 3,
            },
            "volumeMounts": [
                {
                    "name": token,
                    "readOnly": True,
                    "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                }
            ],
            "terminationMessagePath": "/dev/termination-log",
            "terminationMessagePolicy": "File",
        }
        spec: dict[str, Any] = {
            "volumes": [
                {
                    "name": token,
                    "projected": {
                        "sources": [
                            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                            {
                                "configMap": {
                                    "name": "kube-root-ca.crt",
                                    "items": [{"key": "ca.crt", "path": "ca.crt"}],
                                }
                            },
                            {
                                "downwardAPI": {
                                    "items": [
                                        {
                                            "path": "namespace",
                                            "fieldRef": {
                                                "apiVersion": "v1",
                                                "fieldPath": "metadata.namespace",
                                            },
                                        }
                                    ]
                                }
                            },
                        ],
                        "defaultMode": 420,
                    },
                }
            ],
            "containers": [container],
            "restartPolicy": "Always",
            "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst",
            "serviceAccountName": "default",
            "serviceAccount": "default",
            "nodeName": node_name,
            "securityContext": {},
            "schedulerName": "default-scheduler",
            "tolerations": [
                {
                    "key": "node.kubernetes.io/not-ready",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 300,
                },
                {
                    "key": "node.kubernetes.io/unreachable",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 300,
                },
            ],
            "priority": priority[1] if priority else 0,
            "enableServiceLinks": True,
            "preemptionPolicy": "PreemptLowerPriority",
        }
        if priority:
            spec["priorityClassName"] = priority[0]
        if owner_kind != "DaemonSet":
            spec["topologySpreadConstraints"] = [
                {
                    "maxSkew": 1,
                    "topologyKey": "topology.kubernetes.io/zone",
                    "whenUnsatisfiable": "ScheduleAnyway",
                    "labelSelector": {"matchLabels": {"app": app}},
                }
            ]
        host_ip = f"10.{node // 250 % 256}.{node % 250}.{10 + node // 64000}"
        pod_ip = f"100.{64 + node // 256 % 64}.{node % 256}.{2 + i % 250}"
        created, scheduled, started, ready = _pod_times(i)
        status = {
            "phase": "Running",
            "conditions": [
                {"type": t, "status": "True", "lastProbeTime": None, "lastTransitionTime": when}
                for t, when in (
                    ("PodReadyToStartContainers", started),
                    ("Initialized", started),
                    ("Ready", ready),
                    ("ContainersReady", ready),
                    ("PodScheduled", scheduled),
                )
            ],
            "hostIP": host_ip,
            "hostIPs": [{"ip": host_ip}],
            "podIP": pod_ip,
            "podIPs": [{"ip": pod_ip}],
            "startTime": started,
            "containerStatuses": [
                {
                    "name": container["name"],
                    "state": {"running": {"startedAt": started}},
                    "lastState": {},
                    "ready": True,
                    "restartCount": 0,
                    "image": container["image"],
                    "imageID": f"{container['image'].split(':')[0]}@sha256:{_uid('img', owner).replace('-', '')}",
                    "containerID": f"containerd://{_uid('ctr', i).replace('-', '')}",
                    "started": True,
                    "volumeMounts": [
                        {
                            "name": token,
                            "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                            "readOnly": True,
                            "recursiveReadOnly": "Disabled",
                        }
                    ],
                }
            ],
            "qosClass": "Burstable",
        }
        metadata: dict[str, Any] = {
            "name": name,
            "generateName": generate,
            "namespace": ns,
            "uid": _uid("pod", i),
            "resourceVersion": self.rv,
            "creationTimestamp": created,
            "labels": labels,
            "annotations": {"prometheus.io/scrape": "true", "prometheus.io/port": "9090"},
            "ownerReferences": [owner_ref],
        }
        owned = ("annotations", "generateName", "labels", "ownerReferences")
        metadata["managedFields"] = [
            _managed(
                "kube-controller-manager",
                created,
                {
                    "f:metadata": _fields_v1({k: metadata[k] for k in owned}),
                    "f:spec": _fields_v1({k: v for k, v in spec.items() if k != "nodeName"}),
                },
            ),
            _managed("kubelet", ready, {"f:status": _fields_v1(status)}, status=True),
        ]
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": metadata,
            "spec": spec,
            "status": status,
        }

    def objects(self, kind: str) -> tuple[int, Any]:
        if kind == "Node":
            return self.nodes, self.node
        return self.pods, self.pod


GENERATED = {("v1", "Node"), ("v1", "Pod")}


class _Handler(http.server.BaseHTTPRequestHandler):
    server: _HttpServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    # ------------------------------------------------------------------ plumbing

    def _send(self, code: int, body: Any) -> None:
        data = json.dumps(body, separators=(",", ":")).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _error(self, e: ApiError) -> None:
        self._send(e.code, e.to_status())

    def _body(self) -> Any:
        n = int(self.headers.get("Content-Length") or 0)
        return json.loads(self.rfile.read(n)) if n else None

    def _route(
        self,
    ) -> tuple[ResourceType | None, str | None, str | None, str | None, dict[str, str]]:
        """(resource type, namespace, name, subresource, query) of a resource path."""
        url = urllib.parse.urlsplit(self.path)
        query = dict(urllib.parse.parse_qsl(url.query))
        parts = [p for p in url.path.split("/") if p]
        if parts[:1] == ["api"]:
            group, version, rest = "", parts[1] if len(parts) > 1 else "", parts[2:]
        elif parts[:1] == ["apis"] and len(parts) >= 3:
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            return None, None, None, None, query
        namespace = None
        if len(rest) >= 2 and rest[0] == "namespaces" and len(rest) != 2:
            namespace, rest = rest[1], rest[2:]
        if not rest:
            return None, None, None, None, query
        for rt in resource_types():
            if rt.group == group and rt.version == version and rt.plural == rest[0]:
                name = rest[1] if len(rest) > 1 else None
                sub = rest[2] if len(rest) > 2 else None
                return rt, namespace, name, sub, query
        raise NotFound(f"the server could not find the requested resource ({self.path})")

    def _discovery(self) -> bool:
        path = urllib.parse.urlsplit(self.path).path.rstrip("/")
        if path == "/version":
            self._send(200, {"major": "1", "minor": "34", "gitVersion": "v1.34.1-bench"})
            return True
        parts = [p for p in path.split("/") if p]
        if parts and parts[0] == "api" and len(parts) == 2:
            group, version = "", parts[1]
        elif parts and parts[0] == "apis" and len(parts) == 3:
            group, version = parts[1], parts[2]
        else:
            return False
        kinds = [rt for rt in resource_types() if rt.group == group and rt.version == version]
        if not kinds:
            self._error(NotFound(f"{path} not found"))
            return True
        self._send(
            200,
            {
                "kind": "APIResourceList",
                "groupVersion": f"{group}/{version}" if group else version,
                "resources": [
                    {"name": rt.plural, "kind": rt.kind, "namespaced": rt.namespaced}
                    for rt in kinds
                ],
            },
        )
        return True

    # ------------------------------------------------------------------ verbs

    def _handle(self, method: str) -> None:
        self.server.requests[method] += 1
        try:
            if method == "GET" and self._discovery():
                return
            rt, ns, name, sub, query = self._route()
            if rt is None:
                raise NotFound(f"the server could not find the requested resource ({self.path})")
            if rt.key in GENERATED:
                self._generated(method, rt, ns, name, query)
            else:
                self._stored(method, rt, ns, name, sub, query)
        except ApiError as e:
            self._error(e)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _generated(
        self, method: str, rt: ResourceType, ns: str | None, name: str | None, query: dict[str, str]
    ) -> None:
        gen = self.server.cluster
        if method != "GET":
            self.server.refused[f"{method} {rt.plural}"] += 1
            self._error(
                ApiError(
                    f"{method} {rt.plural}: read-only in this benchmark",
                    code=405,
                    reason="MethodNotAllowed",
                )
            )
            return
        count, make = gen.objects(rt.kind)
        if name is not None:
            i = gen.node_index(name) if rt.kind == "Node" else gen.pod_index(ns or "default", name)
            if i is None:
                raise NotFound(f'{rt.plural} "{name}" not found')
            self._send(200, make(i))
            return
        if query.get("watch") in ("true", "1"):
            self._watch_quiet(rt, query)
            return
        on_node = self._node_selector(rt, query)
        if on_node is not None:
            node = gen.node_index(on_node)
            items = [] if node is None else [make(i) for i in gen.pods_on(node)]
            self.server.listed[f"{rt.plural} on a node"] += 1
            self._send(
                200,
                {
                    "apiVersion": "v1",
                    "kind": rt.list_kind,
                    "metadata": {"resourceVersion": gen.rv},
                    "items": items,
                },
            )
            return
        if query.get("labelSelector") or query.get("fieldSelector") or ns:
            self.server.refused[f"selected list of {rt.plural}: {query}"] += 1
            raise BadRequest("this benchmark serves unfiltered, cluster-wide lists only")
        start = int(query.get("continue") or 0)
        limit = int(query.get("limit") or 0) or count
        end = min(count, start + limit)
        meta: dict[str, Any] = {"resourceVersion": gen.rv}
        if end < count:
            meta["continue"] = str(end)
            meta["remainingItemCount"] = count - end
        self.server.listed[rt.plural] += end - start
        self._send(
            200,
            {
                "apiVersion": "v1",
                "kind": rt.list_kind,
                "metadata": meta,
                "items": [make(i) for i in range(start, end)],
            },
        )

    @staticmethod
    def _node_selector(rt: ResourceType, query: dict[str, str]) -> str | None:
        """The node of a ``spec.nodeName=<node>`` pod listing (state's per-node reads)."""
        fields = query.get("fieldSelector") or ""
        if rt.kind != "Pod" or query.get("labelSelector") or "," in fields:
            return None
        name, sep, value = fields.partition("=")
        return value.lstrip("=") if sep and name == "spec.nodeName" else None

    def _stream_start(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def _chunk(self, event: Any) -> None:
        data = json.dumps(event, separators=(",", ":")).encode() + b"\n"
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _watch_quiet(self, rt: ResourceType, query: dict[str, str]) -> None:
        """A watch on a cluster at rest: bookmarks until the requested timeout."""
        self._stream_start()
        end = time.monotonic() + float(query.get("timeoutSeconds") or 300)
        bookmark = {
            "type": "BOOKMARK",
            "object": {
                "apiVersion": rt.api_version,
                "kind": rt.kind,
                "metadata": {"resourceVersion": self.server.cluster.rv},
            },
        }
        while time.monotonic() < end and not self.server.stopping.is_set():
            self.server.stopping.wait(min(BOOKMARK_EVERY, max(0.0, end - time.monotonic())))
            self._chunk(bookmark)
        self.wfile.write(b"0\r\n\r\n")
        self.close_connection = True

    def _stored(
        self,
        method: str,
        rt: ResourceType,
        ns: str | None,
        name: str | None,
        sub: str | None,
        query: dict[str, str],
    ) -> None:
        api = self.server.api
        if method == "GET" and name is None and query.get("watch") in ("true", "1"):
            stream = api.watch(
                rt,
                ns,
                resource_version=query.get("resourceVersion") or None,
                label_selector=query.get("labelSelector"),
                field_selector=query.get("fieldSelector"),
                allow_watch_bookmarks=query.get("allowWatchBookmarks") == "true",
            )
            self._stream_start()
            end = time.monotonic() + float(query.get("timeoutSeconds") or 300)
            try:
                while time.monotonic() < end and not self.server.stopping.is_set():
                    for event in stream.poll(1.0):
                        self._chunk({"type": event.type, "object": event.object})
                self.wfile.write(b"0\r\n\r\n")
            finally:
                stream.stop()
            self.close_connection = True
            return
        if method == "GET" and name is None:
            listed = api.list(
                rt,
                ns,
                label_selector=query.get("labelSelector"),
                field_selector=query.get("fieldSelector"),
            )
            self._send(
                200,
                {
                    "apiVersion": rt.api_version,
                    "kind": rt.list_kind,
                    "metadata": {"resourceVersion": listed.resource_version},
                    "items": listed.items,
                },
            )
            return
        if method == "GET":
            assert name is not None
            self._send(200, api.get(rt, name, ns))
            return
        body = self._body()
        if method == "POST":
            if sub is not None:  # evictions and bindings of stored pods: none here
                raise BadRequest(f"POST {sub} is not served by this benchmark")
            self._send(201, api.create(body, ns))
        elif method == "PUT":
            self._send(200, api.update_status(body) if sub == "status" else api.update(body))
        elif method == "PATCH":
            kind = self.headers.get("Content-Type") or ""
            patch_type = JSON_PATCH if "json-patch" in kind else MERGE_PATCH
            assert name is not None
            self._send(200, api.patch(rt, name, body, ns, patch_type=patch_type, subresource=sub))
        elif method == "DELETE":
            assert name is not None
            opts = body or {}
            gone = api.delete(
                rt,
                name,
                ns,
                propagation_policy=opts.get("propagationPolicy"),
                grace_period_seconds=opts.get("gracePeriodSeconds"),
                preconditions=opts.get("preconditions"),
            )
            self._send(200, gone or {"kind": "Status", "apiVersion": "v1", "status": "Success"})
        else:
            raise BadRequest(f"method {method} not allowed")

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def do_PUT(self) -> None:
        self._handle("PUT")

    def do_PATCH(self) -> None:
        self._handle("PATCH")

    def do_DELETE(self) -> None:
        self._handle("DELETE")


class _HttpServer(http.server.ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # the operator opens dozens of connections at once
    cluster: ScaleCluster
    api: InMemoryApiServer
    stopping: threading.Event
    requests: Counter[str]
    refused: Counter[str]
    listed: Counter[str]


class ScaleApiServer:
    """The stand-in API server (module docstring); ``setup(api)`` adds the stored objects
    the operator needs (NodePool, NodeClass...) before the generated ones are fixed."""

    def __init__(self, nodes: int, pods: int, workdir: Path) -> None:
        self.api = InMemoryApiServer(kube_controller_manager=False)
        self.workdir = workdir
        self._nodes, self._pods = nodes, pods
        self.http: _HttpServer | None = None

    def start(self) -> ScaleApiServer:
        api = self.api
        cluster = ScaleCluster(self._nodes, self._pods, api.resource_version)
        for ns in cluster.namespaces():
            if ns not in ("default", "kube-system"):
                api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        for ns, name in DAEMONSETS:
            api.create(
                {
                    "apiVersion": "apps/v1",
                    "kind": "DaemonSet",
                    "metadata": {"name": name, "namespace": ns},
                    "spec": {
                        "selector": {"matchLabels": {"k8s-app": name}},
                        "template": {
                            "metadata": {"labels": {"k8s-app": name}},
                            "spec": {
                                "priorityClassName": "system-node-critical",
                                "tolerations": [{"operator": "Exists"}],
                                "containers": [
                                    {
                                        "name": name,
                                        "image": f"registry.example.com/kube-system/{name}:v1",
                                        "resources": {
                                            "requests": {"cpu": "100m", "memory": "128Mi"}
                                        },
                                    }
                                ],
                            },
                        },
                    },
                }
            )
        http_server = _HttpServer(("127.0.0.1", 0), _Handler)
        http_server.cluster = cluster
        http_server.api = api
        http_server.stopping = threading.Event()
        http_server.requests = Counter()
        http_server.refused = Counter()
        http_server.listed = Counter()
        self.http = http_server
        threading.Thread(target=http_server.serve_forever, name="scale-api", daemon=True).start()
        threading.Thread(target=self._bookmarks, name="scale-api bookmarks", daemon=True).start()
        return self

    def _bookmarks(self) -> None:
        assert self.http is not None
        while not self.http.stopping.wait(BOOKMARK_EVERY):
            self.api.send_bookmarks()

    @property
    def port(self) -> int:
        assert self.http is not None
        return int(self.http.server_address[1])

    def kubeconfig(self) -> Path:
        path = self.workdir / "kubeconfig"
        path.write_text(
            json.dumps(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "clusters": [
                        {"name": "scale", "cluster": {"server": f"http://127.0.0.1:{self.port}"}}
                    ],
                    "users": [{"name": "bench", "user": {"token": "bench"}}],
                    "contexts": [
                        {"name": "scale", "context": {"cluster": "scale", "user": "bench"}}
                    ],
                    "current-context": "scale",
                }
            )
        )
        return path

    def stats(self) -> dict[str, Any]:
        assert self.http is not None
        return {
            "requests": dict(self.http.requests),
            "refusedWrites": dict(self.http.refused),
            "listed": dict(self.http.listed),
        }

    def stop(self) -> None:
        if self.http is not None:
            self.http.stopping.set()
            self.http.shutdown()
            self.http.server_close()


def sample_sizes(nodes: int = 3, pods: int = 5) -> Iterator[tuple[str, int]]:
    """JSON sizes of a few generated objects (for the docstring's figures)."""
    c = ScaleCluster(max(nodes, 1), max(pods, 2 * nodes + 1), "1")
    for i in range(nodes):
        yield "node", len(json.dumps(c.node(i)))
    yield "ds-pod", len(json.dumps(c.pod(0)))
    yield "deploy-pod", len(json.dumps(c.pod(c.ds_pods)))
