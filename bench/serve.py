"""``karpenter serve`` on a real control plane: provisioning latency and operator memory.

Two measurements, each against a fresh etcd + kube-apiserver built from the pinned
upstream modules (``tests/integration/controlplane.py``), with ``karpenter serve
--cloud-provider kwok`` as a subprocess exactly as users run it:

The control plane includes kube-scheduler: Karpenter provisions for the pods the scheduler
has marked unschedulable, as upstream does.

1. **Pending pod to NodeClaim latency.** 1,000 pending pods are created at once (16
   client threads, no client-side rate limit); for each pod, the time from its create
   call returning to the creation of the NodeClaim Karpenter nominated it to (the pod's
   ``Nominated`` event names it; NodeClaim creation is observed on a watch opened before
   the pods are created). Target: p95 within ``batch idle duration + 1 s``. Batching
   caveat, as upstream: the batch window stays open while pods keep arriving (up to
   ``batch max duration``), so pods created early in a long burst wait for the burst to
   end.
2. **Operator memory with full caches.** 500 Nodes and 5,000 pods bound to them are
   created first; then the operator starts, and its RSS (``/proc/<pid>/status`` VmRSS)
   is read once ``/readyz`` passes (informer caches synced) and cluster state is synced.
   Target: under 300 MB.

    python bench/serve.py                 # both, as a table
    python bench/serve.py --json          # {"latencyP50", "latencyP95", "latencyMax",
                                          #  "nodeclaims", "rssMB", ...}
    python bench/serve.py --pods 200 --cache-pods 1000 --cache-nodes 100   # quicker
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "integration"))

import controlplane  # noqa: E402
from karpenter_core.kube.adapter import KubernetesClient  # noqa: E402
from karpenter_core.kube.client import AlreadyExists  # noqa: E402

KWOK_CRD = ROOT / "charts" / "karpenter-core" / "files" / "karpenter.kwok.sh_kwoknodeclasses.yaml"
NS = "karpenter"
BATCH_IDLE = 1.0
RSS_TARGET_MB = 300.0
NODECLAIM = ("karpenter.sh/v1", "NodeClaim")
NOMINATED = re.compile(r"nodeclaim/(\S+)")


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _progress(message: str) -> None:
    print(f"bench: {message}", file=sys.stderr, flush=True)


def _wait(predicate: Callable[[], Any], what: str, deadline: float = 600.0) -> Any:
    _progress(f"waiting for {what}")
    end = time.monotonic() + deadline
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > end:
            raise SystemExit(f"bench: gave up waiting for {what}")
        time.sleep(0.1)


def _get(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    except OSError:
        return 0, ""


class Env:
    """A control plane with the CRDs, a KWOK NodeClass and a NodePool."""

    def __init__(self) -> None:
        binaries = controlplane.ensure_binaries(log=lambda m: print(m, file=sys.stderr))
        self.cp = controlplane.ControlPlane(
            binaries, controller_manager=False, scheduler=True
        ).start()
        controlplane.install_crds(self.cp)
        self.kube = KubernetesClient.from_kubeconfig(str(self.cp.kubeconfig), qps=0)
        crd = yaml.safe_load(KWOK_CRD.read_text())
        self.kube.create(crd)
        _wait(lambda: self._established(crd["metadata"]["name"]), "the KWOKNodeClass CRD")
        self.kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
        self.kube.create(
            {
                "apiVersion": "karpenter.kwok.sh/v1alpha1",
                "kind": "KWOKNodeClass",
                "metadata": {"name": "default"},
            }
        )
        self.kube.create(
            {
                "apiVersion": "karpenter.sh/v1",
                "kind": "NodePool",
                "metadata": {"name": "default"},
                "spec": {
                    "template": {
                        "spec": {
                            "nodeClassRef": {
                                "group": "karpenter.kwok.sh",
                                "kind": "KWOKNodeClass",
                                "name": "default",
                            },
                            "requirements": [
                                {
                                    "key": "karpenter.kwok.sh/instance-size",
                                    "operator": "Lt",
                                    "values": ["32"],
                                }
                            ],
                        }
                    },
                },
            }
        )
        self.proc: subprocess.Popen[bytes] | None = None
        self.log = Path(tempfile.mkdtemp(prefix="bench-serve-")) / "serve.log"

    def _established(self, name: str) -> bool:
        got = self.kube.get(("apiextensions.k8s.io/v1", "CustomResourceDefinition"), name)
        return any(
            c.get("type") == "Established" and c.get("status") == "True"
            for c in (got.get("status") or {}).get("conditions") or []
        )

    def start_serve(self) -> None:
        self.metrics_port, self.health_port = _port(), _port()
        exe = Path(sys.executable).parent / "karpenter"
        args = [
            str(exe),
            "serve",
            "--cloud-provider=kwok",
            f"--kubeconfig={self.cp.kubeconfig}",
            f"--leader-election-namespace={NS}",
            f"--metrics-port={self.metrics_port}",
            f"--health-probe-port={self.health_port}",
            f"--batch-idle-duration={BATCH_IDLE:g}s",
            "--log-level=error",
        ]
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT)
        _wait(
            lambda: _get(self.health_port, "/readyz")[0] == 200 or self.proc.poll() is not None,  # type: ignore[union-attr]
            "karpenter serve to become ready",
        )
        if self.proc.poll() is not None:
            raise SystemExit(f"bench: karpenter serve exited; see {self.log}")

    def leading_and_synced(self) -> bool:
        body = _get(self.metrics_port, "/metrics")[1]
        return (
            'leader_election_master_status{name="karpenter-leader-election"} 1.0' in body
            and "karpenter_cluster_state_synced 1.0" in body
        )

    def rss_mb(self) -> float:
        assert self.proc is not None
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        raise SystemExit("bench: no VmRSS for the operator process")

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(30)
            if self.proc.poll() is None:
                self.proc.kill()
        self.kube.close()
        self.cp.stop()


def _pod(name: str, node: str | None = None, cpu: str = "500m") -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [
            {
                "name": "app",
                "image": "registry.k8s.io/pause:3.10",
                "resources": {"requests": {"cpu": cpu, "memory": "512Mi"}},
            }
        ],
        "terminationGracePeriodSeconds": 0,
    }
    if node is not None:
        spec["nodeName"] = node
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": {"app": "bench"}},
        "spec": spec,
    }


def _create_all(
    kube: KubernetesClient, objs: list[dict[str, Any]], threads: int = 16
) -> dict[str, float]:
    """Create ``objs`` concurrently; returns name -> monotonic time its create returned."""
    done: dict[str, float] = {}
    lock = threading.Lock()

    def create(obj: dict[str, Any]) -> None:
        with contextlib.suppress(AlreadyExists):
            kube.create(obj)
        with lock:
            done[obj["metadata"]["name"]] = time.monotonic()

    with concurrent.futures.ThreadPoolExecutor(threads) as pool:
        list(pool.map(create, objs))
    return done


def latency(pods: int) -> dict[str, Any]:
    env = Env()
    try:
        env.start_serve()
        _wait(env.leading_and_synced, "leadership and synced cluster state")
        seen: dict[str, float] = {}
        stream = env.kube.watch(
            NODECLAIM, resource_version=env.kube.list(NODECLAIM).resource_version
        )
        stop = threading.Event()

        def watch() -> None:
            for event in stream:
                if event.type == "ADDED":
                    seen.setdefault(event.object["metadata"]["name"], time.monotonic())
                if stop.is_set():
                    break

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        started = time.monotonic()
        created = _create_all(env.kube, [_pod(f"p-{i:05d}") for i in range(pods)])
        burst = time.monotonic() - started

        def nominations() -> dict[str, str]:
            out: dict[str, str] = {}
            for e in env.kube.list(("events.k8s.io/v1", "Event"), "default").items:
                if e.get("reason") != "Nominated":
                    continue
                m = NOMINATED.search(str(e.get("note") or ""))
                if m:
                    out[str((e.get("regarding") or {}).get("name"))] = m.group(1)
            return out

        # Every pod is nominated once (events are deduplicated per pod); wait until all
        # are, or until nominations stop arriving for 10 s after the first one (pods first
        # nominated to an existing node name no NodeClaim, and are left out of the figures).
        # The wait for the first nomination is bounded only by the deadline: with 1,000
        # pods, kube-scheduler alone takes over 10 s to mark them unschedulable.
        last: dict[str, str] = {}
        last_change = time.monotonic()
        deadline = time.monotonic() + 600.0
        while time.monotonic() < deadline:
            n = {p: c for p, c in nominations().items() if c in seen}
            if len(n) != len(last):
                last, last_change = n, time.monotonic()
            if len(n) >= pods or (n and time.monotonic() - last_change > 10.0):
                break
            time.sleep(0.5)
        nominated = last
        if not nominated:
            raise SystemExit("bench: no pod was nominated to a NodeClaim")
        stop.set()
        stream.stop()
        lat = sorted(
            seen[nominated[name]] - at for name, at in created.items() if name in nominated
        )
        q = statistics.quantiles(lat, n=100)
        return {
            "pods": pods,
            "podsNominatedToNewNodeClaims": len(nominated),
            "burstSeconds": round(burst, 2),
            "nodeclaims": len(seen),
            "latencyP50": round(q[49], 3),
            "latencyP95": round(q[94], 3),
            "latencyMax": round(lat[-1], 3),
            "latencyTarget": BATCH_IDLE + 1.0,
        }
    finally:
        env.close()


def memory(cache_pods: int, cache_nodes: int) -> dict[str, Any]:
    env = Env()
    try:
        nodes = [
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {
                    "name": f"n-{i:04d}",
                    "labels": {
                        "kubernetes.io/hostname": f"n-{i:04d}",
                        "kubernetes.io/os": "linux",
                        "topology.kubernetes.io/zone": f"zone-{i % 3}",
                    },
                },
                "status": {
                    "capacity": {"cpu": "16", "memory": "64Gi", "pods": "110"},
                    "allocatable": {"cpu": "16", "memory": "64Gi", "pods": "110"},
                },
            }
            for i in range(cache_nodes)
        ]
        _create_all(env.kube, nodes)
        _create_all(
            env.kube,
            [
                _pod(f"c-{i:05d}", node=f"n-{i % cache_nodes:04d}", cpu="100m")
                for i in range(cache_pods)
            ],
        )
        env.start_serve()
        _wait(env.leading_and_synced, "leadership and synced cluster state")
        time.sleep(5.0)  # let the state informers finish replaying the caches
        return {
            "cachePods": cache_pods,
            "cacheNodes": cache_nodes,
            "rssMB": round(env.rss_mb(), 1),
            "rssTargetMB": RSS_TARGET_MB,
        }
    finally:
        env.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--cache-pods", type=int, default=5000)
    parser.add_argument("--cache-nodes", type=int, default=500)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if controlplane.skip_requested():
        print(f"bench: {controlplane.SKIP_ENV} is set; nothing to do", file=sys.stderr)
        return 0
    os.environ.pop("KUBECONFIG", None)
    figures = {**latency(args.pods), **memory(args.cache_pods, args.cache_nodes)}
    if args.json:
        print(json.dumps(figures))
        return 0
    print(
        f"pending pod -> NodeClaim, {figures['pods']} pods created in {figures['burstSeconds']}s "
        f"({figures['nodeclaims']} NodeClaims)"
    )
    print(
        f"  p50 {figures['latencyP50']:.3f}s  p95 {figures['latencyP95']:.3f}s  "
        f"max {figures['latencyMax']:.3f}s  (target p95 <= {figures['latencyTarget']:.1f}s)"
    )
    print(
        f"operator RSS with {figures['cachePods']} pods / {figures['cacheNodes']} nodes cached: "
        f"{figures['rssMB']:.1f} MB (target < {RSS_TARGET_MB:.0f} MB)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
