"""``karpenter serve`` on a real control plane: provisioning latency and operator memory.

Two measurements against a fresh etcd + kube-apiserver built from the pinned
upstream modules (``tests/integration/controlplane.py``), with ``karpenter serve
--cloud-provider kwok`` as a subprocess exactly as users run it:

The control plane includes kube-scheduler: Karpenter provisions for the pods the scheduler
has marked unschedulable, as upstream does.

1. **Pending pod to NodeClaim latency.** 1,000 pending pods are created at once (16
   client threads, no client-side rate limit). Three figures per pod, each as p50 / p95 /
   max over the pods nominated to new NodeClaims:

   - *creation -> Unschedulable*: from the pod's create call returning to the benchmark's
     pod watch seeing kube-scheduler's ``PodScheduled=False/Unschedulable`` condition
     (the condition's own ``lastTransitionTime`` has one-second resolution, too coarse);
   - *Unschedulable -> NodeClaim*: from there to the creation of the NodeClaim Karpenter
     nominated the pod to (the pod's ``Nominated`` event names it; NodeClaim creation is
     seen on a watch opened before the pods are created). This is Karpenter's own
     latency, the one upstream's target speaks of: p95 within ``batch idle duration +
     1 s``;
   - *creation -> NodeClaim*: the sum, what a user waiting on a burst sees.

   Also ``lastUnschedulableToLastNodeClaim``: from the last pod becoming Unschedulable to
   the last NodeClaim's creation, the burst seen as one batch (its floor is the batch idle
   duration plus the solve and the creates).

   Both watches are read in this process, so each instant carries the watch's delivery
   delay. Checked at 1,000 pods: the instant the pod watch sees the condition minus its
   ``lastTransitionTime`` stayed under 1.02 s (the condition's time is truncated to the
   second), so the delay is tens of milliseconds at most.
   Batching caveat, as upstream: the batch window stays open while pods keep arriving
   (up to ``batch max duration``), so pods marked early in a long burst wait for it to end.

   ``--runs N`` repeats this on N fresh control planes and reports each figure's median
   across the runs (the per-run figures are in ``--json`` under ``runs``).

   kube-scheduler's client limit (``--scheduler-qps``, burst ``--scheduler-burst``,
   default twice the QPS) decides how fast pods become Unschedulable: each costs it a
   status write and an event, so at its own default (50 QPS, burst 100) 1,000 pods take
   it close to 20 s and every later figure queues behind that. The default here, 500 QPS
   with burst 1,000, is what a large production cluster's scheduler is given: well above
   the upstream default, which is sized for small clusters (Kubernetes' own 5,000-node
   scalability runs have raised it since 1.9), yet well below the 5,000 QPS upstream's
   scheduler_perf benchmark hands the scheduler so that the client never limits it.
   ``--scheduler-qps 0`` keeps kube-scheduler's own default, for comparison.
2. **Operator memory with full caches.** 500 Nodes and 5,000 pods bound to them are
   created first; then the operator starts, and its RSS (``/proc/<pid>/status`` VmRSS)
   is read once ``/readyz`` passes (informer caches synced) and cluster state is synced.
   Target: under 300 MB.

3. **Operator memory at scale** (``--scale NODESxPODS``, issue 17's ``5000x150000``; only
   this measurement runs). A real etcd would take far longer to fill than the operator to
   read it, so the operator connects (kubeconfig, plain HTTP) to the stand-in API server of
   ``bench/scaleapi.py``: Nodes and Pods generated on the fly as a real API server returns
   them, ``managedFields`` included (a Deployment's pod is ~9 KB of JSON, a Node ~6.5 KB;
   two DaemonSet pods per node, the rest from 1,000 Deployments in 40 namespaces, spread
   evenly over the nodes), watches that only bookmark (the cluster at rest), and the
   NodePool, KWOKNodeClass, DaemonSets, Lease and Events in an in-memory API server.
   Printed: ``{nodes, pods, syncSeconds, rssMB, peakRssMB}``: ``syncSeconds`` from the
   process start until ``/readyz`` passes, it leads and ``karpenter_cluster_state_synced``
   is 1; ``rssMB`` the median of five ``VmRSS`` readings a second apart after a further
   20 s; ``peakRssMB`` its ``VmHWM``. Target: at most 1.5 GB. ``--rss-cap-mb`` (default
   12,000) stops an operator that grows past it before syncing, so a shared machine is
   not driven out of memory.

Both record ``operatorCommit``: the commit of the operator code that ran, ``+dirty`` when
``karpenter_core`` had uncommitted changes.

    python bench/serve.py                 # both, as a table
    python bench/serve.py --json          # {"latencyP50", "schedulerP95", "karpenterP95",
                                          #  "nodeclaims", "rssMB", "runs", ...}
    python bench/serve.py --pods 200 --cache-pods 1000 --cache-nodes 100   # quicker
    python bench/serve.py --runs 3        # median of three latency runs
    python bench/serve.py --scale 5000x150000 --json   # {"nodes", "pods", "syncSeconds",
                                                       #  "rssMB", "peakRssMB", ...}
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
from karpenter_core.testing import builders as b  # noqa: E402

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


def _wait(
    predicate: Callable[[], Any], what: str, deadline: float = 600.0, every: float = 0.1
) -> Any:
    _progress(f"waiting for {what}")
    end = time.monotonic() + deadline
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > end:
            raise SystemExit(f"bench: gave up waiting for {what}")
        time.sleep(every)


def _get(port: int, path: str, timeout: float = 10.0) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=timeout) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    except OSError:
        return 0, ""


def _install_operator_objects(create: Callable[[dict[str, Any]], Any]) -> None:
    """What the operator needs besides its CRDs: its namespace (the leader Lease's), the
    KWOKNodeClass and a NodePool of instances under 32 CPUs."""
    create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
    create(
        {
            "apiVersion": "karpenter.kwok.sh/v1alpha1",
            "kind": "KWOKNodeClass",
            "metadata": {"name": "default"},
        }
    )
    create(b.nodepool(requirements=[b.requirement("karpenter.kwok.sh/instance-size", "Lt", "32")]))


class ServeProcess:
    """``karpenter serve --cloud-provider kwok`` as a subprocess on ``kubeconfig``, as users
    run it, with its metrics and probe ports and its memory as ``/proc`` reports it."""

    def __init__(self, kubeconfig: Path, log: Path) -> None:
        self.metrics_port, self.health_port = _port(), _port()
        self.log = log
        exe = Path(sys.executable).parent / "karpenter"
        args = [
            str(exe),
            "serve",
            "--cloud-provider=kwok",
            f"--kubeconfig={kubeconfig}",
            f"--leader-election-namespace={NS}",
            f"--metrics-port={self.metrics_port}",
            f"--health-probe-port={self.health_port}",
            f"--batch-idle-duration={BATCH_IDLE:g}s",
            "--log-level=error",
        ]
        with log.open("ab") as out:
            self.proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT)

    def exited(self) -> bool:
        return self.proc.poll() is not None

    def ready(self) -> bool:
        return _get(self.health_port, "/readyz")[0] == 200

    def wait_ready(self) -> None:
        _wait(lambda: self.ready() or self.exited(), "karpenter serve to become ready")
        if self.exited():
            raise SystemExit(f"bench: karpenter serve exited; see {self.log}")

    def leading_and_synced(self, timeout: float = 10.0) -> bool:
        body = _get(self.metrics_port, "/metrics", timeout)[1]
        return (
            'leader_election_master_status{name="karpenter-leader-election"} 1.0' in body
            and "karpenter_cluster_state_synced 1.0" in body
        )

    def _status_mb(self, field: str) -> float:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
        raise SystemExit(f"bench: no {field} for the operator process")

    def rss_mb(self) -> float:
        """Resident memory now (``VmRSS``)."""
        return self._status_mb("VmRSS")

    def peak_rss_mb(self) -> float:
        """The most resident memory the process has had (``VmHWM``)."""
        return self._status_mb("VmHWM")

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(30)
            if self.proc.poll() is None:
                self.proc.kill()


class Env:
    """A control plane with the CRDs, a KWOK NodeClass and a NodePool.

    Not the test kit's Environment: this one is a real etcd and kube-apiserver with
    ``karpenter serve`` as a subprocess, which is what the benchmark measures."""

    def __init__(
        self, scheduler_qps: float | None = None, scheduler_burst: int | None = None
    ) -> None:
        binaries = controlplane.ensure_binaries(log=lambda m: print(m, file=sys.stderr))
        self.cp = controlplane.ControlPlane(
            binaries,
            controller_manager=False,
            scheduler=True,
            scheduler_qps=scheduler_qps,
            scheduler_burst=scheduler_burst,
        ).start()
        controlplane.install_crds(self.cp)
        self.kube = KubernetesClient.from_kubeconfig(str(self.cp.kubeconfig), qps=0)
        crd = yaml.safe_load(KWOK_CRD.read_text())
        self.kube.create(crd)
        _wait(lambda: self._established(crd["metadata"]["name"]), "the KWOKNodeClass CRD")
        _install_operator_objects(self.kube.create)
        self.proc: subprocess.Popen[bytes] | None = None
        self.log = Path(tempfile.mkdtemp(prefix="bench-serve-")) / "serve.log"

    def _established(self, name: str) -> bool:
        got = self.kube.get(("apiextensions.k8s.io/v1", "CustomResourceDefinition"), name)
        return any(
            c.get("type") == "Established" and c.get("status") == "True"
            for c in (got.get("status") or {}).get("conditions") or []
        )

    def start_serve(self) -> None:
        self.serve = ServeProcess(self.cp.kubeconfig, self.log)
        self.serve.wait_ready()
        self.proc = self.serve.proc

    def leading_and_synced(self) -> bool:
        return self.serve.leading_and_synced()

    def rss_mb(self) -> float:
        return self.serve.rss_mb()

    def close(self) -> None:
        if self.proc is not None:
            self.serve.close()
        self.kube.close()
        self.cp.stop()


def _pod(name: str, node: str | None = None, cpu: str = "500m") -> dict[str, Any]:
    return b.pod(
        name,
        labels={"app": "bench"},
        requests={"cpu": cpu, "memory": "512Mi"},
        image="registry.k8s.io/pause:3.10",
        termination_grace_period=0,
        node_name=node,
    )


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


def _unschedulable(pod: dict[str, Any]) -> bool:
    """kube-scheduler's verdict that no node fits: the condition Karpenter acts on."""
    return any(
        c.get("type") == "PodScheduled"
        and c.get("status") == "False"
        and c.get("reason") == "Unschedulable"
        for c in (pod.get("status") or {}).get("conditions") or []
    )


def _spread(values: list[float]) -> tuple[float, float, float]:
    """p50, p95 and max (rounded to ms) of a non-empty sample."""
    ordered = sorted(values)
    if len(ordered) == 1:
        return (round(ordered[0], 3),) * 3
    q = statistics.quantiles(ordered, n=100)
    return round(q[49], 3), round(q[94], 3), round(ordered[-1], 3)


class _Watch:
    """Records the monotonic instant this process first sees ``first(obj)`` hold for
    each object name, on a watch opened now (before the objects of interest exist)."""

    def __init__(
        self,
        kube: KubernetesClient,
        resource: Any,
        namespace: str | None,
        first: Callable[[dict[str, Any]], bool],
    ) -> None:
        self.seen: dict[str, float] = {}
        rv = kube.list(resource, namespace).resource_version
        self._stream = kube.watch(resource, namespace, resource_version=rv)
        self._first = first
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        with contextlib.suppress(Exception):  # the stream ends with stop()
            for event in self._stream:
                if event.type in ("ADDED", "MODIFIED") and self._first(event.object):
                    self.seen.setdefault(event.object["metadata"]["name"], time.monotonic())

    def stop(self) -> None:
        self._stream.stop()


def latency(pods: int, scheduler_qps: float | None, scheduler_burst: int | None) -> dict[str, Any]:
    env = Env(scheduler_qps, scheduler_burst)
    try:
        env.start_serve()
        _wait(env.leading_and_synced, "leadership and synced cluster state")
        nodeclaims = _Watch(env.kube, NODECLAIM, None, lambda _o: True)
        marked = _Watch(env.kube, "pods", "default", _unschedulable)
        seen = nodeclaims.seen
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
        # The wait for the first nomination is bounded only by the deadline: at its
        # default client limit kube-scheduler alone takes over 10 s to mark 1,000 pods.
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
        nodeclaims.stop()
        marked.stop()
        if not nominated:
            raise SystemExit("bench: no pod was nominated to a NodeClaim")
        names = [name for name in created if name in nominated]
        # a pod Karpenter nominated was Unschedulable first; one the watch missed (it
        # cannot, barring a broken stream) is counted, not guessed at
        timed = [name for name in names if name in marked.seen]
        total = _spread([seen[nominated[n]] - created[n] for n in names])
        if not timed:
            raise SystemExit("bench: the pod watch saw no pod marked Unschedulable")
        scheduler = _spread([marked.seen[n] - created[n] for n in timed])
        karpenter = _spread([seen[nominated[n]] - marked.seen[n] for n in timed])
        return {
            "pods": pods,
            "podsNominatedToNewNodeClaims": len(nominated),
            "podsUnschedulableUnseen": len(names) - len(timed),
            "burstSeconds": round(burst, 2),
            "nodeclaims": len(seen),
            "schedulerP50": scheduler[0],
            "schedulerP95": scheduler[1],
            "schedulerMax": scheduler[2],
            "karpenterP50": karpenter[0],
            "karpenterP95": karpenter[1],
            "karpenterMax": karpenter[2],
            "latencyP50": total[0],
            "latencyP95": total[1],
            "latencyMax": total[2],
            "latencyTarget": BATCH_IDLE + 1.0,
            # the burst as one batch: from the last pod becoming Unschedulable to the last
            # NodeClaim (its floor is the batch idle duration plus the solve and creates)
            "lastUnschedulableToLastNodeClaim": round(
                max(seen[nominated[n]] for n in timed) - max(marked.seen[n] for n in timed), 3
            ),
        }
    finally:
        env.close()


def median_of_runs(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Each numeric figure's median across runs; the rest as in the first run."""
    out = dict(runs[0])
    for key, value in runs[0].items():
        if isinstance(value, int | float) and not isinstance(value, bool):
            m = statistics.median(r[key] for r in runs)
            out[key] = int(m) if isinstance(value, int) and m == int(m) else round(m, 3)
    return out


def operator_commit() -> str:
    """The commit the operator code ran from, ``+dirty`` with uncommitted changes under
    ``karpenter_core`` (figures from a tree mid-change are not that commit's)."""
    try:
        head = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(ROOT), "status", "--porcelain", "--", "karpenter_core"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+dirty" if dirty else "")


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


SCALE_RSS_TARGET_MB = 1536.0
"""Issue 17's target: ``karpenter serve`` RSS at most 1.5 GB with 150,000 pods / 5,000 nodes."""
SCALE_SETTLE = 20.0
SCALE_SAMPLES = 5


def memory_at_scale(nodes: int, pods: int, rss_cap_mb: float) -> dict[str, Any]:
    """The operator's memory on the stand-in API server of ``bench/scaleapi.py`` holding
    ``nodes`` Nodes and ``pods`` Pods (see the module docstring, measurement 3)."""
    sys.path.insert(0, str(ROOT / "bench"))
    import scaleapi

    from karpenter_core.plugins import cloud_providers, get_plugin_manager

    cloud_providers(get_plugin_manager({}))  # the KWOKNodeClass resource type
    workdir = Path(tempfile.mkdtemp(prefix="bench-serve-scale-"))
    server = scaleapi.ScaleApiServer(nodes, pods, workdir).start()
    _install_operator_objects(server.api.create)
    serve = ServeProcess(server.kubeconfig(), workdir / "serve.log")
    started = time.monotonic()
    highest = 0.0

    def synced() -> bool:
        nonlocal highest
        if serve.exited():
            raise SystemExit(f"bench: karpenter serve exited; see {serve.log}")
        highest = max(highest, serve.rss_mb())
        if highest > rss_cap_mb:
            raise SystemExit(
                f"bench: operator RSS passed --rss-cap-mb {rss_cap_mb:.0f} MB before its "
                "caches synced; stopped it"
            )
        # /metrics is large with a pod series per pod: read it seldom, and wait for it
        return serve.ready() and serve.leading_and_synced(timeout=120.0)

    try:
        _wait(
            synced,
            f"caches of {nodes} nodes / {pods} pods and synced cluster state",
            3600.0,
            every=5.0,
        )
        sync_seconds = time.monotonic() - started
        _progress(f"synced in {sync_seconds:.1f}s; settling {SCALE_SETTLE:g}s")
        time.sleep(SCALE_SETTLE)
        samples = []
        for _ in range(SCALE_SAMPLES):
            samples.append(serve.rss_mb())
            time.sleep(1.0)
        if serve.exited():
            raise SystemExit(f"bench: karpenter serve exited; see {serve.log}")
        return {
            "nodes": nodes,
            "pods": pods,
            "syncSeconds": round(sync_seconds, 1),
            "rssMB": round(statistics.median(samples), 1),
            "peakRssMB": round(serve.peak_rss_mb(), 1),
            "rssTargetMB": SCALE_RSS_TARGET_MB,
            "apiServer": server.stats(),
        }
    finally:
        serve.close()
        server.stop()


def _scale(text: str) -> tuple[int, int]:
    nodes, sep, pods = text.lower().partition("x")
    if not sep:
        raise argparse.ArgumentTypeError(f"expected NODESxPODS (e.g. 5000x150000), not {text!r}")
    return _positive_int(nodes), _positive_int(pods)


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def _qps(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number of at least 0, not {text}")
    return value


def _row(figures: dict[str, Any], name: str, what: str, target: str = "") -> str:
    return (
        f"  {what:<28} p50 {figures[name + 'P50']:7.3f}s  p95 {figures[name + 'P95']:7.3f}s  "
        f"max {figures[name + 'Max']:7.3f}s{target}"
    )


def _print_scale(figures: dict[str, Any], as_json: bool) -> int:
    figures["operatorCommit"] = operator_commit()
    if as_json:
        print(json.dumps(figures))
        return 0
    print(
        f"operator with {figures['nodes']} nodes / {figures['pods']} pods cached: synced in "
        f"{figures['syncSeconds']:.1f}s, RSS {figures['rssMB']:.1f} MB (peak "
        f"{figures['peakRssMB']:.1f} MB; target <= {SCALE_RSS_TARGET_MB:.0f} MB)"
    )
    refused = figures["apiServer"]["refusedWrites"]
    if refused:
        print(f"  writes the stand-in API server refused: {refused}")
    print(f"operator: {figures['operatorCommit']}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pods", type=_positive_int, default=1000)
    parser.add_argument("--cache-pods", type=_positive_int, default=5000)
    parser.add_argument("--cache-nodes", type=_positive_int, default=500)
    parser.add_argument(
        "--scheduler-qps",
        type=_qps,
        default=500.0,
        help="kube-scheduler's client QPS (0: its own default, 50 QPS / burst 100)",
    )
    parser.add_argument(
        "--scheduler-burst",
        type=_positive_int,
        default=None,
        help="kube-scheduler's client burst (default: twice --scheduler-qps)",
    )
    parser.add_argument(
        "--runs",
        type=_positive_int,
        default=1,
        help="latency runs, each on a fresh control plane; the median of each figure",
    )
    parser.add_argument(
        "--scale",
        type=_scale,
        default=None,
        metavar="NODESxPODS",
        help="only the memory-at-scale measurement (e.g. 5000x150000), on a stand-in API server",
    )
    parser.add_argument(
        "--rss-cap-mb",
        type=float,
        default=12000.0,
        help="with --scale: stop the operator if its RSS passes this (a shared machine)",
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if args.scale is not None:
        os.environ.pop("KUBECONFIG", None)
        return _print_scale(memory_at_scale(*args.scale, args.rss_cap_mb), args.json)
    if controlplane.skip_requested():
        print(f"bench: {controlplane.SKIP_ENV} is set; nothing to do", file=sys.stderr)
        return 0
    os.environ.pop("KUBECONFIG", None)
    qps: float | None = args.scheduler_qps or None
    burst: int | None = args.scheduler_burst
    if qps is None and burst is not None:
        parser.error("--scheduler-burst needs a --scheduler-qps above 0")
    if qps is not None and burst is None:
        burst = max(1, round(2 * qps))
    commit = operator_commit()
    try:
        runs = []
        for i in range(args.runs):
            if args.runs > 1:
                _progress(f"latency run {i + 1} of {args.runs}")
            runs.append(latency(args.pods, qps, burst))
        figures = {
            **median_of_runs(runs),
            "runs": runs,
            "schedulerQPS": qps,
            "schedulerBurst": burst,
            **memory(args.cache_pods, args.cache_nodes),
            "operatorCommit": commit,
        }
    except controlplane.ControlPlaneError as e:
        print(f"bench: {e}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(figures))
        return 0
    limit = f"{qps:g} QPS, burst {burst}" if qps is not None else "its default client limit"
    over = f", median of {args.runs} runs" if args.runs > 1 else ""
    print(
        f"pending pods, {figures['pods']} created in {figures['burstSeconds']}s "
        f"({figures['nodeclaims']} NodeClaims; kube-scheduler at {limit}{over})"
    )
    print(_row(figures, "scheduler", "creation -> Unschedulable"))
    print(
        _row(
            figures,
            "karpenter",
            "Unschedulable -> NodeClaim",
            f"  (target p95 <= {figures['latencyTarget']:.1f}s)",
        )
    )
    print(_row(figures, "latency", "creation -> NodeClaim"))
    print(
        f"  last Unschedulable -> last NodeClaim {figures['lastUnschedulableToLastNodeClaim']:.3f}s"
    )
    if figures["podsUnschedulableUnseen"]:
        print(f"  ({figures['podsUnschedulableUnseen']} pods never seen Unschedulable: left out)")
    print(
        f"operator RSS with {figures['cachePods']} pods / {figures['cacheNodes']} nodes cached: "
        f"{figures['rssMB']:.1f} MB (target < {RSS_TARGET_MB:.0f} MB)"
    )
    print(f"operator: {commit}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
