"""End-to-end benchmark: upstream's "basic" performance scale-out, simulated.

Upstream (``test/suites/performance/basic_test.go``): a NodePool on the KWOK catalogue
limited to instance sizes below 32 (no limits, WhenEmptyOrUnderutilized, consolidateAfter
30 s, budget 100 %), and two Deployments — 500 pods of 0.9 CPU / 3100Mi and 500 pods of
3.5 CPU / 28Gi. Upstream requires scale-out within 2 minutes, average reserved CPU
utilisation above 0.53 and memory above 0.65, and controller memory under 260 MB.

Here the whole engine (controllers, simulated kube-scheduler and kubelet, in-memory API
server) runs in this process on a virtual clock, so the figures are: virtual time until
every pod is bound, wall time for the whole run, utilisation when every pod is bound
(upstream's Monitor: per Karpenter node, requests / allocatable, averaged), and this
process's peak RSS (an upper bound on the controller's own memory, since the simulated
cluster shares the process). The table also splits the wall time between Karpenter's
controllers and the simulated cluster (kube-scheduler, kubelet, workload controllers).
KWOK instances register at once here (no ``nodeRegistrationDelay``), so the virtual time
is Karpenter's own latency: batching, solving, launching.

Faithful time is ON here (unlike ``karpenter simulate``, where it is off by default): each
Karpenter reconcile's CPU time is charged to the virtual clock (``chargeComputeTime``,
docs/simulate.md), so the virtual time to all bound includes the time Karpenter computed,
as on a real controller of this machine's speed, and batching and timeouts see it.
``--no-charge-compute-time`` gives the old figure (a reconcile takes no virtual time);
``--compute-time-scale X`` charges X times the CPU time (a controller X times slower).

    python bench/e2e.py            # table
    python bench/e2e.py --json     # {"virtualSecondsToAllBound", "wallSeconds",
                                   #  "cpuUtilization", "memoryUtilization", "peakRssMB"}
    python bench/e2e.py --no-charge-compute-time    # reconciles take no virtual time

Upstream's whole performance suite, each test with its second phase, is
``--scenario NAME`` (scenarios and phase runner in ``bench/perfsuite.py``):

    basic                  500 + 500 pods, then both to 350 (consolidation)
    wide-deployments       30 deployments, 1,000 pods (zone spreads; 3 with hostname
                           anti-affinity, 3 with hostname spreads), then 700
    hostname-spreading     basic with the small pods hostname-spread, then 700
    hostname-spreading-xl  the same at 1,000 + 1,000, then 1,400
    interference           500 pods with self anti-affinity; then 250 of them and 500
                           large ones (a scale-out to 750); then 400 + 200 (to 600)
    do-not-disrupt         basic plus 100 do-not-disrupt pods, then 250 + 250 + 100
    drift                  300 + 300 pods, then a NodePool template annotation changes
    large                  150,000 pods onto ~5,000 nodes, then every deployment -30 %
                           (the issue's cluster-scale run; not upstream's)
    all                    every scenario but large, one process each (so each peak RSS
                           is its own); large is left out because it takes many minutes

Per phase: virtual time as upstream's report measures it (scale-out: until the pod count
is reached; consolidation: the pod count, then node watches every 30 s until 3 minutes
pass without a draining node; drift: watches every 15 s until 2 quiet minutes, then the
pod count), ``settledSeconds`` (when the last draining node or bound pod was seen), pods,
nodes and their net change, NodeClaims launched and removed, rounds, reserved CPU and
memory utilisation, wall and CPU seconds, and peak RSS, each beside upstream's threshold
(``thresholds.go`` defaults; the RSS threshold is for the controller alone, so it is an
upper bound here). Do-not-disrupt also counts the nodes holding protected pods that are
still there. ``--json`` prints one object per scenario (``scenario``, ``phases`` [...],
``wallSeconds``, ``cpuSeconds``, ``peakRssMB``, ``notes``).

The scenarios run with faithful time too (the same two flags apply).

    python bench/e2e.py --scenario basic
    python bench/e2e.py --scenario all --json
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent))
from perfsuite import (
    DEFAULT_SCENARIOS,
    SCENARIOS,
    check_phases,
    run_scenario,
    scaled,
    suite_nodepool,
)

from karpenter_core.runtime.collector import tune_collector
from karpenter_core.sim.engine import Simulation
from karpenter_core.sim.scenario import Scenario, parse_scenario

CPU_UTIL_THRESHOLD = 0.53
MEMORY_UTIL_THRESHOLD = 0.65
RSS_THRESHOLD_MB = 260.0
TIME_THRESHOLD_S = 120.0
MAX_VIRTUAL_SECONDS = 15 * 60.0  # upstream's ReportScaleOut timeout


def basic_scenario(
    small: int = 500, large: int = 500, *, charge: bool = True, scale: float = 1.0
) -> Scenario:
    """upstream's default NodePool (test/pkg/environment/common) as the performance suite
    adjusts it, and the two deployments of the basic test; ``charge`` and ``scale`` are
    the scenario's ``chargeComputeTime`` and ``computeTimeScale``."""
    nodepool = suite_nodepool()
    return parse_scenario(
        {
            "name": "basic-scale-out",
            "seed": 0,
            "chargeComputeTime": charge,
            "computeTimeScale": scale,
            "nodePools": [nodepool],
            "sampleInterval": "5s",
            "workloads": [
                {
                    "deployment": "small-resource-app",
                    "replicas": small,
                    "requests": {"cpu": "900m", "memory": "3100Mi"},
                },
                {
                    "deployment": "large-resource-app",
                    "replicas": large,
                    "requests": {"cpu": "3500m", "memory": "28Gi"},
                },
            ],
        },
        "bench/e2e.py",
    )


def _scale(text: str) -> float:
    value = float(text)
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text}")
    return value


def peak_rss_mb() -> float:
    """Peak resident set size of this process (Linux reports kilobytes, macOS bytes)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


def _time_controllers(sim: Simulation) -> dict[str, float]:
    """Wall seconds spent in each controller's reconciles (filled in as the run goes)."""
    spent: dict[str, float] = {}
    for controller in (*sim.cluster.controllers, *sim.karpenter.controllers):
        inner = controller.run_one

        def timed(key: Any, inner: Any = inner, name: str = controller.name) -> Any:
            t = time.perf_counter()
            try:
                return inner(key)
            finally:
                spent[name] = spent.get(name, 0.0) + time.perf_counter() - t

        controller.run_one = timed  # type: ignore[method-assign]
    return spent


def run(
    small: int = 500, large: int = 500, *, charge: bool = True, scale: float = 1.0
) -> dict[str, Any]:
    started = time.perf_counter()
    sim = Simulation(basic_scenario(small, large, charge=charge, scale=scale))
    spent = _time_controllers(sim)
    total = small + large

    def all_bound() -> bool:
        bound, pending = sim.observer.counts()
        return bound >= total and pending == 0

    sim.run_until(MAX_VIRTUAL_SECONDS, stop_when=all_bound)
    # when the last pod was bound: the run only notices at the next moment time moves
    # (without charged compute, the next timer, up to a sample interval later)
    virtual = max(
        (p.bound for p in sim.observer.pods.values() if p.bound is not None and not p.daemon),
        default=0.0,
    )
    bound, pending = sim.observer.counts()
    cpu, memory = sim.observer.utilization()
    nodes = sum(1 for n in sim.observer.nodes.values() if n.gone is None and n.nodepool)
    return {
        "virtualSecondsToAllBound": round(virtual, 3) if all_bound() else None,
        "wallSeconds": round(time.perf_counter() - started, 3),
        "cpuUtilization": round(cpu, 4),
        "memoryUtilization": round(memory, 4),
        "peakRssMB": round(peak_rss_mb(), 1),
        "podsBound": bound,
        "podsPending": pending,
        "nodes": nodes,
        "nodeClaims": len(sim.observer.nodeclaims),
        "notes": list(sim.observer.notes),
        "karpenterSeconds": round(sum(v for k, v in spent.items() if not k.startswith("sim.")), 3),
        "simulatedClusterSeconds": round(
            sum(v for k, v in spent.items() if k.startswith("sim.")), 3
        ),
        "slowest": sorted(spent.items(), key=lambda kv: -kv[1])[:3],
        "chargedSeconds": None if sim.charge is None else round(sim.charge.total_seconds, 3),
        "computeTimeScale": None if sim.charge is None else sim.charge.scale,
    }


# ---------------------------------------------------------------- upstream's suite, phased


def _cell(value: Any, unit: str = "") -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3f}{unit}" if value < 10 else f"{value:.1f}{unit}"
    return f"{value}{unit}"


def print_perf(result: dict[str, Any]) -> None:
    """One scenario's phases as a table, upstream's threshold beside each figure."""
    print(f"== {result['scenario']}  ({result['upstream']})")
    print(f"{'measure':<28} {'value':>14}   upstream")
    for ph in result["phases"]:
        t = ph["thresholds"]
        print(f"-- {ph['phase']} ({ph['type']}, {ph['pods']} pods)")
        rows = [
            ("virtual time (upstream's)", _cell(ph["virtualSeconds"], "s"),
             t["virtualSeconds"], "<"),
            ("  settled after", _cell(ph["settledSeconds"], "s"), None, ""),
            ("pods bound / pending", f"{ph['podsBound']} / {ph['podsPending']}", None, ""),
            ("nodes (net change)", f"{ph['nodes']} ({ph['nodesNetChange']:+d})", None, ""),
            (
                "NodeClaims launched / removed",
                f"{ph['nodeClaimsLaunched']} / {ph['nodeClaimsRemoved']}",
                None,
                "",
            ),
            ("rounds", str(ph["rounds"]), None, ""),
            ("reserved CPU utilisation", _cell(ph["cpuUtilization"]), t["cpuUtilization"], ">"),
            ("reserved memory utilisation", _cell(ph["memoryUtilization"]),
             t["memoryUtilization"], ">"),
            ("wall time", _cell(ph["wallSeconds"], "s"), None, ""),
            ("  CPU time", _cell(ph["cpuSeconds"], "s"), None, ""),
            ("peak RSS", f"{ph['peakRssMB']:.0f} MB", t["peakRssMB"], "<"),
        ]  # fmt: skip
        if "protectedNodesRemaining" in ph:
            rows.append(
                (
                    "protected nodes kept",
                    f"{ph['protectedNodesRemaining']} of {ph['protectedNodesBefore']}",
                    0,
                    ">",
                )
            )
        for name, value, limit, sign in rows:
            print(f"{name:<28} {value:>14}   {'' if limit is None else f'{sign} {limit:g}'}")
    print(
        f"wall time {result['wallSeconds']:.1f}s (CPU {result['cpuSeconds']:.1f}s), peak RSS {result['peakRssMB']:.0f} MB"
    )
    for miss in check_phases(result["phases"]):
        print(f"below upstream's threshold: {miss}")
    for note in result["notes"]:
        print(f"note: {note}")


def run_perf(
    names: list[str],
    as_json: bool,
    *,
    charge: bool = True,
    scale: float = 1.0,
    pods_scale: float = 1.0,
    hold: list[object] | None = None,
) -> int:
    """Run the named scenarios of bench/perfsuite.py (faithful time as for the basic run:
    ``charge`` and ``scale``; every replica count times ``pods_scale``); several run one
    process each, so each one's peak RSS and wall time are its own. ``hold``: as for
    :func:`run_scenario`."""
    if len(names) == 1:
        extra = {"chargeComputeTime": charge, "computeTimeScale": scale}
        scenario = SCENARIOS[names[0]]()
        if pods_scale != 1.0:
            scenario = scaled(scenario, pods_scale)
        result = run_scenario(scenario, extra, hold=hold)
        if as_json:
            print(json.dumps(result))
        else:
            print_perf(result)
        return 0
    for name in names:
        cmd = [sys.executable, str(Path(__file__).resolve()), "--scenario", name]
        cmd += ["--compute-time-scale", f"{scale!r}"] if charge else ["--no-charge-compute-time"]
        cmd += ["--pods-scale", f"{pods_scale!r}"]
        out = subprocess.run([*cmd, "--json"], check=True, capture_output=True, text=True)
        result = json.loads(out.stdout.strip().splitlines()[-1])
        if as_json:
            print(json.dumps(result), flush=True)
        else:
            print_perf(result)
            print(flush=True)
    return 0


def main(argv: list[str] | None = None, hold: list[object] | None = None) -> int:
    """The command line; ``hold`` keeps a scenario's simulation alive past the return (see
    :func:`run_scenario`)."""
    tune_collector()  # as `karpenter simulate` runs (karpenter_core.runtime.collector)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument(
        "--scenario",
        choices=[*SCENARIOS, "all"],
        help="run an upstream performance-suite scenario with its scale-in/drift phase "
        "(all: every one but large, one process each)",
    )
    parser.add_argument("--small", type=int, default=500, help="small pods (default 500)")
    parser.add_argument("--large", type=int, default=500, help="large pods (default 500)")
    parser.add_argument(
        "--no-charge-compute-time",
        dest="charge",
        action="store_false",
        help="reconciles take no virtual time (default: each is charged its CPU time)",
    )
    parser.add_argument(
        "--compute-time-scale",
        type=_scale,
        default=1.0,
        metavar="X",
        help="charge X times the CPU time (default 1)",
    )
    parser.add_argument(
        "--pods-scale",
        type=_scale,
        default=1.0,
        metavar="F",
        help="with --scenario: every replica count times F (e.g. 0.1 for a tenth of large)",
    )
    args = parser.parse_args(argv)
    if not args.charge and args.compute_time_scale != 1.0:
        parser.error("--compute-time-scale has no effect with --no-charge-compute-time")
    logging.basicConfig(level=logging.CRITICAL)
    if args.scenario is not None:
        names = list(DEFAULT_SCENARIOS) if args.scenario == "all" else [args.scenario]
        return run_perf(
            names,
            args.json,
            charge=args.charge,
            scale=args.compute_time_scale,
            pods_scale=args.pods_scale,
            hold=hold,
        )
    result = run(args.small, args.large, charge=args.charge, scale=args.compute_time_scale)
    if args.json:
        keys = (
            "virtualSecondsToAllBound",
            "wallSeconds",
            "cpuUtilization",
            "memoryUtilization",
            "peakRssMB",
        )
        print(json.dumps({k: result[k] for k in keys}))
        return 0
    t = result["virtualSecondsToAllBound"]
    rows = [
        (
            "virtual time to all bound",
            "never (within 15m)" if t is None else f"{t:.1f}s",
            f"< {TIME_THRESHOLD_S:.0f}s",
        ),
        ("wall time", f"{result['wallSeconds']:.1f}s", ""),
        (
            "compute charged to the clock",
            "off"
            if result["chargedSeconds"] is None
            else f"{result['chargedSeconds']:.1f}s (x{result['computeTimeScale']:g})",
            "",
        ),
        ("  in Karpenter's controllers", f"{result['karpenterSeconds']:.1f}s", ""),
        ("  in the simulated cluster", f"{result['simulatedClusterSeconds']:.1f}s", ""),
        ("reserved CPU utilisation", f"{result['cpuUtilization']:.3f}", f"> {CPU_UTIL_THRESHOLD}"),
        (
            "reserved memory utilisation",
            f"{result['memoryUtilization']:.3f}",
            f"> {MEMORY_UTIL_THRESHOLD}",
        ),
        ("peak RSS", f"{result['peakRssMB']:.0f} MB", f"< {RSS_THRESHOLD_MB:.0f} MB"),
        ("pods bound / pending", f"{result['podsBound']} / {result['podsPending']}", ""),
        ("nodes / NodeClaims", f"{result['nodes']} / {result['nodeClaims']}", ""),
    ]
    print(f"{'measure':<30} {'value':>20}   upstream")
    for name, value, threshold in rows:
        print(f"{name:<30} {value:>20}   {threshold}")
    slowest = ", ".join(f"{name} {secs:.1f}s" for name, secs in result["slowest"])
    print(f"slowest controllers: {slowest}")
    for note in result["notes"]:
        print(f"note: {note}")
    return 0


if __name__ == "__main__":
    # The figures are printed; exit without tearing the simulated cluster down object by
    # object (that took ~20 s of a full `large` run and measures nothing).
    held: list[object] = []
    code = main(hold=held)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
