"""Disruption benchmark: consolidation, emptiness and multi-node passes over clusters of
100 to 5,000 nodes built with the test kit (prints figures, asserts nothing).

The cluster (per size N): the kit's fake catalogue and three NodePools —

* ``general``: ``fake-it-3`` (4 vCPU, 8 GiB), on-demand, three zones;
* ``large``: ``fake-it-7`` (8 vCPU, 16 GiB), on-demand, three zones;
* ``spot``: ``fake-it-3``, spot, two zones;

every one ``WhenEmptyOrUnderutilized`` with ``consolidateAfter: 0s`` and a 100% budget.
Nodes are spread round-robin over the pools and zones, every NodeClaim ``Consolidatable``.
Utilisation is mixed by resource: a *cpu* node runs pods of 1.9 CPU / 2 GiB (CPU ~97%,
memory ~50%), a *memory* node pods of 1.5 CPU / 7.5 GiB (CPU ~38%, memory ~94%). Twelve apps
(ReplicaSet pods) share the pods; half spread over zones (``DoNotSchedule``), half over
hosts (``ScheduleAnyway``), and each has a PodDisruptionBudget that allows evictions.

No pod fits in another node's free room and every node is already the cheapest type that
holds its pods, so every consolidation simulation runs to the end and finds nothing: the
single-node pass tries every candidate, which is what makes it the worst case.

Figures per size (medians of ``--repeat`` runs, each size in a process of its own so
``peakRssMB`` is that size's):

* ``msPerCandidateSingle`` — single-node consolidation, milliseconds of one candidate's
  scheduling simulation and verdict: the median over the candidates tried (the first one
  also builds what the pass's simulations share; ``msPerCandidateMean`` includes that);
* ``singlePassSeconds`` — the whole single-node pass (snapshot, candidates, every
  candidate's simulation) when N ≤ ``--full-pass-max`` (default 5,000; null above, where
  only ``--sample`` candidates are tried for the per-candidate figure);
* ``multiPassSeconds`` — the multi-node pass (its binary search over up to 100
  candidates);
* ``emptinessPassMs`` — the emptiness pass (no node is empty: candidate building and
  filtering);
* ``peakRssMB`` — the process's peak resident memory after the runs.

    python bench/disruption.py
    python bench/disruption.py --sizes 100,1000 --repeat 5 --json
"""

from __future__ import annotations

import argparse
import gc
import json
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from karpenter_core.controllers import disruption
from karpenter_core.controllers.disruption.controller import DisruptionController, _Pass
from karpenter_core.controllers.disruption.snapshot import take_snapshot
from karpenter_core.disruption.methods.emptiness import Emptiness
from karpenter_core.disruption.methods.multinode import MultiNodeConsolidation
from karpenter_core.disruption.methods.singlenode import SingleNodeConsolidation
from karpenter_core.runtime.manager import Manager
from karpenter_core.testing import Environment, FakeCloudProvider
from karpenter_core.testing import builders as b
from karpenter_core.testing.fakecatalog import instance_types

DEFAULT_SIZES = (100, 500, 1000, 2000, 5000)
ZONES = ("test-zone-1", "test-zone-2", "test-zone-3")
APPS = 12
GI = "Gi"

# pool -> (instance type, capacity, capacity type, zones, pods per cpu node, per memory node)
POOLS: dict[str, tuple[str, dict[str, str], str, tuple[str, ...], int, int]] = {
    "general": ("fake-it-3", {"cpu": "4", "memory": "8Gi", "pods": "40"}, "on-demand", ZONES, 2, 1),
    "large": ("fake-it-7", {"cpu": "8", "memory": "16Gi", "pods": "80"}, "on-demand", ZONES, 4, 2),
    "spot": ("fake-it-3", {"cpu": "4", "memory": "8Gi", "pods": "40"}, "spot", ZONES[:2], 2, 1),
}
CPU_POD = ("1900m", "2Gi")
MEMORY_POD = ("1500m", "7680Mi")


def _spread(app: int) -> list[dict[str, Any]]:
    if app % 2 == 0:
        return [
            {
                "maxSkew": 1,
                "topologyKey": "topology.kubernetes.io/zone",
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": f"app-{app}"}},
            }
        ]
    return [
        {
            "maxSkew": 1,
            "topologyKey": "kubernetes.io/hostname",
            "whenUnsatisfiable": "ScheduleAnyway",
            "labelSelector": {"matchLabels": {"app": f"app-{app}"}},
        }
    ]


def build(size: int) -> Environment:
    """An environment with ``size`` nodes, their pods and PDBs, cluster state synced."""
    env = Environment(
        FakeCloudProvider(instance_types(8)),
        controllers=["state"],
        kube_scheduler=False,
        kubelet=False,
    )
    for pool, (itype, _, ctype, zones, _, _) in POOLS.items():
        env.apply(
            b.nodepool(
                pool,
                requirements=[
                    b.requirement("node.kubernetes.io/instance-type", "In", itype),
                    b.requirement("karpenter.sh/capacity-type", "In", ctype),
                    b.requirement("topology.kubernetes.io/zone", "In", *zones),
                ],
                consolidation_policy="WhenEmptyOrUnderutilized",
                consolidate_after="0s",
                budgets=[{"nodes": "100%"}],
                ready=True,
            )
        )
    for app in range(APPS):
        env.apply(b.pdb(f"app-{app}", labels={"app": f"app-{app}"}, max_unavailable="50%"))
    owners = [b.owner_reference("ReplicaSet", f"app-{a}", uid=f"rs-app-{a}") for a in range(APPS)]
    names = list(POOLS)
    pod_index = 0
    for i in range(size):
        pool = names[i % len(names)]
        itype, capacity, ctype, zones, per_cpu, per_mem = POOLS[pool]
        name = f"node-{i:05d}"
        labels = {
            "karpenter.sh/nodepool": pool,
            "node.kubernetes.io/instance-type": itype,
            "topology.kubernetes.io/zone": zones[(i // len(names)) % len(zones)],
            "karpenter.sh/capacity-type": ctype,
            "kubernetes.io/hostname": name,
            "kubernetes.io/os": "linux",
            "kubernetes.io/arch": "amd64",
        }
        claim = env.create(
            b.nodeclaim(
                name,
                nodepool=pool,
                labels=labels,
                expire_after="Never",
                provider_id=f"fake://{name}",
                node_name=name,
                capacity=capacity,
                conditions=["Launched", "Registered", "Initialized", "Consolidatable"],
            )
        )
        env.create(b.node_for(claim, registered=True, initialized=True))
        memory_node = (i // (len(names) * 2)) % 2 == 1
        cpu, memory = MEMORY_POD if memory_node else CPU_POD
        for j in range(per_mem if memory_node else per_cpu):
            app = pod_index % APPS
            pod_index += 1
            env.create(
                b.pod(
                    f"{name}-pod-{j}",
                    labels={"app": f"app-{app}"},
                    owner=owners[app],
                    cpu=cpu,
                    memory=memory,
                    node_name=name,
                    topology_spread=_spread(app),
                    ready=True,
                    start_time=b.START,
                )
            )
    # the PDBs' status, as kube-controller-manager's disruption controller writes it
    for app in range(APPS):
        pdb = env.get("poddisruptionbudgets", f"app-{app}", "default")
        env.set_status(
            pdb,
            {
                "disruptionsAllowed": size,
                "currentHealthy": size,
                "desiredHealthy": 0,
                "expectedPods": size,
            },
        )
    env.settle()
    env.pods_built = pod_index  # type: ignore[attr-defined]
    return env


def controller_with(env: Environment, kind: type) -> tuple[DisruptionController, Any]:
    """A freshly registered disruption controller (on a Manager that never runs) and its
    method of ``kind`` — fresh, so no memo from an earlier run skips the work."""
    disruption.register(Manager(env.clock, env.kube), env.ctx)
    controller: DisruptionController = env.ctx.disruption
    for method in controller.methods:
        if type(method) is kind:
            return controller, method
    raise SystemExit(f"no {kind.__name__} among the disruption methods")


def timed(run: Callable[[], Any]) -> tuple[float, Any]:
    gc.collect()
    start = time.perf_counter()
    out = run()
    return time.perf_counter() - start, out


class _Counting:
    """Counts the candidates a single-node pass simulates, and can stop it after ``limit``."""

    def __init__(self, method: SingleNodeConsolidation, limit: int | None) -> None:
        self.tried = 0
        self.seconds = 0.0
        self.each: list[float] = []
        inner = method.compute_consolidation

        def counted(snapshot: Any, candidates: Any, notices: Any = None) -> Any:
            if limit is not None and self.tried >= limit:
                return None
            self.tried += 1
            start = time.perf_counter()
            try:
                return inner(snapshot, candidates, notices)
            finally:
                took = time.perf_counter() - start
                self.seconds += took
                self.each.append(took)

        method.compute_consolidation = counted  # type: ignore[method-assign]


def method_pass(env: Environment, kind: type, limit: int | None = None) -> dict[str, Any]:
    """One pass of the method ``kind``: seconds, commands found and candidates tried."""
    controller, method = controller_with(env, kind)
    counter = _Counting(method, limit) if kind is SingleNodeConsolidation else None
    seconds, commands = timed(
        lambda: controller._decide(method, _Pass(controller.dctx, take_snapshot(controller.dctx)))
    )
    return {
        "seconds": seconds,
        "commands": [f"{c.decision} {len(c.candidates)}" for c in commands],
        "tried": counter.tried if counter else None,
        "simulating": counter.seconds if counter else None,
        "median": statistics.median(counter.each) if counter and counter.each else None,
    }


def measure(size: int, repeat: int, full_pass_max: int, sample: int) -> dict[str, Any]:
    start = time.perf_counter()
    env = build(size)
    built = time.perf_counter() - start
    full = size <= full_pass_max
    singles = [
        method_pass(env, SingleNodeConsolidation, None if full else sample) for _ in range(repeat)
    ]
    multis = [method_pass(env, MultiNodeConsolidation) for _ in range(repeat)]
    empties = [method_pass(env, Emptiness) for _ in range(repeat)]
    pods = env.pods_built  # type: ignore[attr-defined]
    env.close()
    per_candidate = statistics.median(r["median"] * 1000 for r in singles if r["tried"])
    mean = statistics.median(r["simulating"] / r["tried"] * 1000 for r in singles if r["tried"])
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {
        "name": f"mixed-{size}",
        "nodes": size,
        "pods": pods,
        "buildSeconds": round(built, 2),
        "candidatesTried": singles[-1]["tried"],
        "msPerCandidateSingle": round(per_candidate, 2),
        "msPerCandidateMean": round(mean, 2),
        "singlePassSeconds": (
            round(statistics.median(r["seconds"] for r in singles), 3) if full else None
        ),
        "multiPassSeconds": round(statistics.median(r["seconds"] for r in multis), 3),
        "emptinessPassMs": round(statistics.median(r["seconds"] for r in empties) * 1000, 1),
        "peakRssMB": round(peak_kb / 1024, 1),
        "decided": sorted({c for r in singles + multis + empties for c in r["commands"]}),
    }


def table(rows: Sequence[dict[str, Any]]) -> str:
    head = (
        f"{'nodes':>6} {'ms/candidate':>13} {'single pass':>12} {'multi pass':>11} "
        f"{'emptiness':>10} {'peak RSS':>9}  decided"
    )
    lines = [head, "-" * len(head)]
    for r in rows:
        single = (
            f"{r['singlePassSeconds']:>11.2f}s"
            if r["singlePassSeconds"] is not None
            else " " * 11 + "-"
        )
        lines.append(
            f"{r['nodes']:>6} {r['msPerCandidateSingle']:>13.1f} {single} "
            f"{r['multiPassSeconds']:>10.3f}s {r['emptinessPassMs']:>8.1f}ms "
            f"{r['peakRssMB']:>7.0f}MB  {', '.join(r['decided']) or 'nothing'}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument(
        "--sizes",
        default=",".join(str(s) for s in DEFAULT_SIZES),
        help="comma-separated node counts (default 100,500,1000,2000,5000)",
    )
    parser.add_argument("--repeat", type=int, default=3, help="runs per figure (median)")
    parser.add_argument(
        "--full-pass-max",
        type=int,
        default=5000,
        help="largest size whose single-node pass tries every candidate (default 5000; "
        "lower it for code whose candidates cost hundreds of milliseconds)",
    )
    parser.add_argument(
        "--sample",
        type=int,
        default=60,
        help="candidates a single-node pass tries above --full-pass-max (default 60)",
    )
    parser.add_argument("--json", action="store_true", help="print JSON rows")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one is not None:
        print(json.dumps(measure(args.one, args.repeat, args.full_pass_max, args.sample)))
        return 0
    rows = []
    for size in (int(s) for s in args.sizes.split(",") if s.strip()):
        out = subprocess.run(
            [
                sys.executable,
                __file__,
                "--one",
                str(size),
                "--repeat",
                str(args.repeat),
                "--full-pass-max",
                str(args.full_pass_max),
                "--sample",
                str(args.sample),
            ],
            check=True,
            capture_output=True,
            text=True,
        )
        rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
        if not args.json:
            print(table(rows[-1:]).splitlines()[-1] if len(rows) > 1 else table(rows), flush=True)
    if args.json:
        print(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
