"""Memory and time of a large snapshot: writing, reading, and taking one.

A generated cluster of ``--nodes`` nodes (default 5,000) and ``--pods`` pods (default
150,000; about 3.3 KB of JSON each, as the API server lists a Deployment's pod less
``managedFields``: labels, owner reference, a container with env, probe and resources, the
service-account volume, a full status), plus namespaces and PDBs. Each phase runs in its own process, so its peak RSS is its own:

* ``write``: build the snapshot object by object (as ``take_snapshot`` does) and write it,
  to ``.json`` and to ``.json.gz``;
* ``read``: ``read_snapshot`` of each file;
* ``take``: load the cluster into the in-memory API server, then ``take_snapshot`` from it
  (its peak includes the server's own copy of the cluster, so the increase over the loaded
  server is printed too).

Run: ``python bench/snapshot.py [--repeat 3] [--nodes N] [--pods N] [--phases write,read,take]``.
Prints the median of the runs for each figure; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

NAMESPACES = 50
PODS_PER_DEPLOYMENT = 30


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def node(i: int) -> dict[str, Any]:
    name = f"ip-10-{i // 250}-{i % 250}-1.us-west-2.compute.internal"
    zone = "us-west-2" + "abc"[i % 3]
    labels = {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "topology.kubernetes.io/zone": zone,
        "node.kubernetes.io/instance-type": "m5.2xlarge",
        "karpenter.sh/nodepool": f"pool-{i % 4}",
        "karpenter.sh/capacity-type": "spot" if i % 2 else "on-demand",
    }
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "uid": f"{i:08x}-0000-4000-8000-000000000000", "labels": labels},
        "spec": {"providerID": f"aws:///{zone}/i-{i:017x}"},
        "status": {
            "capacity": {"cpu": "8", "memory": "32Gi", "pods": "58"},
            "allocatable": {"cpu": "7910m", "memory": "30Gi", "pods": "58"},
            "conditions": [{"type": "Ready", "status": "True"}],
            "addresses": [{"type": "InternalIP", "address": f"10.{i // 250}.{i % 250}.1"}],
        },
    }


def _container(app: str, d: int) -> dict[str, Any]:
    return {
        "name": "app",
        "image": f"registry.example.com/team/{app}:v1.2.3",
        "ports": [{"containerPort": 8080, "protocol": "TCP", "name": "http"}],
        "env": [
            {"name": "LOG_LEVEL", "value": "info"},
            {
                "name": "POD_NAME",
                "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}},
            },
            {"name": "DB_URL", "value": f"postgres://db-{d % 7}.svc:5432/app"},
        ],
        "resources": {"requests": {"cpu": "250m", "memory": "512Mi"}, "limits": {"memory": "1Gi"}},
        "volumeMounts": [
            {
                "name": "kube-api-access-abcde",
                "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                "readOnly": True,
            }
        ],
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
        "imagePullPolicy": "IfNotPresent",
        "readinessProbe": {
            "httpGet": {"path": "/healthz", "port": 8080, "scheme": "HTTP"},
            "periodSeconds": 10,
            "failureThreshold": 3,
        },
    }


def pod(i: int, node_name: str) -> dict[str, Any]:
    """Pod ``i`` of Deployment ``i // 30``: about 3.3 KB of JSON, as the API server lists it
    less managedFields."""
    d = i // PODS_PER_DEPLOYMENT
    app = f"web-{d}"
    ip = f"10.{100 + i % 150}.{(i // 150) % 250}.{i % 250}"
    owner = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": f"{app}-7d9f8c6b5"}
    owner.update(uid=f"{d:08x}-aaaa-4bbb-8ccc-ddddeeeeffff", controller=True)
    metadata = {
        "name": f"{app}-7d9f8c6b5-{i:05x}",
        "generateName": f"{app}-7d9f8c6b5-",
        "namespace": f"team-{d % NAMESPACES}",
        "uid": f"{i:08x}-1111-4222-8333-444455556666",
        "creationTimestamp": "2025-05-01T10:00:00Z",
        "labels": {"app": app, "pod-template-hash": "7d9f8c6b5", "app.kubernetes.io/name": app},
        "annotations": {"prometheus.io/scrape": "true", "prometheus.io/port": "9090"},
        "ownerReferences": [owner],
    }
    tolerations = [
        {"key": k, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
        for k in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")
    ]
    spread = {"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone"}
    spread.update(whenUnsatisfiable="ScheduleAnyway", labelSelector={"matchLabels": {"app": app}})
    token = {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}}
    ca = {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}}
    spec = {
        "containers": [_container(app, d)],
        "restartPolicy": "Always",
        "terminationGracePeriodSeconds": 30,
        "dnsPolicy": "ClusterFirst",
        "serviceAccountName": "default",
        "nodeName": node_name,
        "schedulerName": "default-scheduler",
        "tolerations": tolerations,
        "priority": 0,
        "preemptionPolicy": "PreemptLowerPriority",
        "topologySpreadConstraints": [spread],
        "volumes": [
            {
                "name": "kube-api-access-abcde",
                "projected": {"sources": [token, ca], "defaultMode": 420},
            }
        ],
    }
    conditions = [
        {"type": t, "status": "True", "lastTransitionTime": "2025-05-01T10:00:05Z"}
        for t in ("Initialized", "Ready", "ContainersReady", "PodScheduled")
    ]
    container_status = {
        "name": "app",
        "state": {"running": {"startedAt": "2025-05-01T10:00:04Z"}},
        "ready": True,
        "restartCount": 0,
        "image": f"registry.example.com/team/{app}:v1.2.3",
        "imageID": f"registry.example.com/team/{app}@sha256:{d:064x}",
        "containerID": f"containerd://{i:064x}",
        "started": True,
    }
    status = {
        "phase": "Running",
        "conditions": conditions,
        "hostIP": "10.0.0.1",
        "podIP": ip,
        "podIPs": [{"ip": ip}],
        "startTime": "2025-05-01T10:00:01Z",
        "containerStatuses": [container_status],
        "qosClass": "Burstable",
    }
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec, "status": status}


def cluster(nodes: int, pods: int) -> Iterator[dict[str, Any]]:
    """The generated cluster's objects, one at a time, in snapshot order."""
    for n in range(NAMESPACES):
        yield {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": f"team-{n}"}}
    names = []
    for i in range(nodes):
        obj = node(i)
        names.append(obj["metadata"]["name"])
        yield obj
    for n in range(NAMESPACES):
        yield {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "web", "namespace": f"team-{n}"},
            "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"tier": "web"}}},
        }
    for i in range(pods):
        yield pod(i, names[i % nodes])


# ------------------------------------------------------------------------------- phases


def phase_write(args: argparse.Namespace) -> dict[str, float]:
    from karpenter_core.snapshot import SnapshotBuilder, write_snapshot
    from karpenter_core.snapshot.take import strip

    start = time.perf_counter()
    builder = SnapshotBuilder()
    for obj in cluster(args.nodes, args.pods):
        builder.add(strip(obj))  # as take_snapshot does (nothing to drop here)
    snap = builder.build(taken_at="2025-05-01T10:00:00Z")
    built = time.perf_counter()
    held = _rss_mb()
    write_snapshot(snap, args.dir / "s.json")
    written = time.perf_counter()
    write_snapshot(snap, args.dir / "s.json.gz")
    zipped = time.perf_counter()
    return {
        "build s": built - start,
        "RSS holding the snapshot MB": held,
        "write .json s": written - built,
        "write .json.gz s": zipped - written,
        ".json MB": (args.dir / "s.json").stat().st_size / 2**20,
        ".json.gz MB": (args.dir / "s.json.gz").stat().st_size / 2**20,
        "peak RSS MB": _peak_mb(),
    }


def phase_read(args: argparse.Namespace) -> dict[str, float]:
    from karpenter_core.snapshot import read_snapshot

    out = {}
    for name in ("s.json", "s.json.gz"):
        start = time.perf_counter()
        snap = read_snapshot(args.dir / name)
        out[f"read {name} s"] = time.perf_counter() - start
        assert snap.counts()["Pod"] == args.pods
        del snap
    out["peak RSS MB"] = _peak_mb()
    return out


def phase_take(args: argparse.Namespace) -> dict[str, float]:
    from karpenter_core.runtime.clock import VirtualClock
    from karpenter_core.sim.apiserver import InMemoryApiServer
    from karpenter_core.snapshot import take_snapshot

    start = time.perf_counter()
    kube = InMemoryApiServer(VirtualClock(), kube_controller_manager=False, watch_history=1)
    for obj in cluster(args.nodes, args.pods):
        obj["metadata"].pop("resourceVersion", None)  # a create must not carry one
        kube.create(obj)
    loaded = time.perf_counter()
    before = _rss_mb()
    snap = take_snapshot(kube)
    taken = time.perf_counter()
    assert snap.counts()["Pod"] == args.pods
    return {
        "load server s": loaded - start,
        "RSS of the loaded server MB": before,
        "take s": taken - loaded,
        "peak RSS MB": _peak_mb(),
        "peak over the loaded server MB": _peak_mb() - before,
    }


PHASES = {"write": phase_write, "read": phase_read, "take": phase_take}


def _child(phase: str, args: argparse.Namespace) -> dict[str, float]:
    cmd = [
        sys.executable,
        __file__,
        "--run-phase",
        phase,
        "--nodes",
        str(args.nodes),
        "--pods",
        str(args.pods),
        "--dir",
        str(args.dir),
    ]
    done = subprocess.run(cmd, check=False, capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"{phase} failed:\n{done.stderr}")
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--nodes", type=int, default=5_000)
    parser.add_argument("--pods", type=int, default=150_000)
    parser.add_argument("--phases", default="write,read,take")
    parser.add_argument("--dir", type=Path, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--run-phase", choices=sorted(PHASES), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.run_phase:
        print(json.dumps(PHASES[args.run_phase](args)))
        return
    phases = [p.strip() for p in args.phases.split(",") if p.strip()]
    if "read" in phases and "write" not in phases:
        phases.insert(0, "write")
    print(f"{args.nodes:,} nodes, {args.pods:,} pods; median of {args.repeat} runs per phase")
    with tempfile.TemporaryDirectory() as tmp:
        args.dir = Path(tmp)
        for phase in phases:
            runs = [_child(phase, args) for _ in range(args.repeat)]
            print(f"{phase}:")
            for key in runs[0]:
                values = sorted(r[key] for r in runs)
                shown = ", ".join(f"{v:.1f}" for v in values)
                print(f"  {key:32} {statistics.median(values):9.1f}   ({shown})")


if __name__ == "__main__":
    main()
