"""Disruption benchmark: one pass of the ``disruption`` controller over clusters of 100, 500
and 1000 nodes built with the test kit (prints figures, asserts nothing).

The cluster: the kit's fake catalogue (``fake-it-0`` .. ``fake-it-7``), one NodePool
(``WhenEmptyOrUnderutilized``, ``consolidateAfter: 0s``, budget ``100%``), N initialised
``fake-it-3`` nodes (4 CPU) spread over three zones, each running two ReplicaSet pods of
500m, and one PodDisruptionBudget per app (ten apps) that allows disruptions. Cluster state
is fed by the real state informers on an in-memory API server (virtual clock); the
disruption controller is registered on a Manager of its own that never runs, so each pass
is one direct ``reconcile()`` of a freshly registered controller.

Two passes per size:

* ``idle`` — no NodeClaim is ``Consolidatable`` yet: every method builds its candidates and
  keeps none, so the pass is candidate building and filtering. ``candidates/s`` is N
  divided by that pass's time (nodes through one whole pass per second).
* ``consolidation`` — every NodeClaim is ``Consolidatable``: emptiness and drift find
  nothing, multi-node consolidation searches its batch of 100 with the scheduling
  simulation and holds the command it found (the ``command`` column, to check that two
  versions decide the same).

Each figure is the median of ``--repeat`` runs (default 3).

    python bench/disruption.py
    python bench/disruption.py --sizes 100,500 --repeat 5 --json
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from karpenter_core.controllers import disruption
from karpenter_core.runtime.manager import Manager
from karpenter_core.testing import Environment, FakeCloudProvider
from karpenter_core.testing import builders as b
from karpenter_core.testing.fakecatalog import instance_types

DEFAULT_SIZES = (100, 500, 1000)
INSTANCE_TYPE = "fake-it-3"
CAPACITY = {"cpu": "4", "memory": "8Gi", "pods": "40"}
ZONES = ("test-zone-1", "test-zone-2", "test-zone-3")
PODS_PER_NODE = 2
APPS = 10


def build(size: int) -> Environment:
    """An environment with ``size`` nodes, their pods and PDBs, cluster state synced."""
    env = Environment(
        FakeCloudProvider(instance_types(8)),
        controllers=["state"],
        kube_scheduler=False,
        kubelet=False,
    )
    env.apply(
        b.nodepool(
            consolidation_policy="WhenEmptyOrUnderutilized",
            consolidate_after="0s",
            budgets=[{"nodes": "100%"}],
            ready=True,
        )
    )
    for app in range(APPS):
        env.apply(b.pdb(f"app-{app}", labels={"app": f"app-{app}"}, max_unavailable="50%"))
    owner = b.owner_reference("ReplicaSet", "web", uid="rs-web")
    for i in range(size):
        name = f"node-{i:04d}"
        labels = {
            "karpenter.sh/nodepool": "default",
            "node.kubernetes.io/instance-type": INSTANCE_TYPE,
            "topology.kubernetes.io/zone": ZONES[i % len(ZONES)],
            "karpenter.sh/capacity-type": "on-demand",
            "kubernetes.io/hostname": name,
            "kubernetes.io/os": "linux",
            "kubernetes.io/arch": "amd64",
        }
        claim = env.create(
            b.nodeclaim(
                name,
                labels=labels,
                expire_after="Never",
                provider_id=f"fake://{name}",
                node_name=name,
                capacity=CAPACITY,
                conditions=["Launched", "Registered", "Initialized"],
            )
        )
        env.create(b.node_for(claim, registered=True, initialized=True))
        for j in range(PODS_PER_NODE):
            app = f"app-{(i * PODS_PER_NODE + j) % APPS}"
            env.create(
                b.pod(
                    f"{name}-pod-{j}",
                    labels={"app": app},
                    owner=owner,
                    cpu="500m",
                    memory="256Mi",
                    node_name=name,
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
                "disruptionsAllowed": 5,
                "currentHealthy": 10,
                "desiredHealthy": 5,
                "expectedPods": 10,
            },
        )
    env.settle()
    return env


def make_consolidatable(env: Environment) -> None:
    for claim in env.nodeclaims():
        status = dict(claim.get("status") or {})
        status["conditions"] = [*status.get("conditions", ()), b.condition("Consolidatable")]
        env.set_status(claim, status)
    env.settle()


def fresh_controller(env: Environment) -> Any:
    """A newly registered disruption controller (a Manager that never runs holds it)."""
    disruption.register(Manager(env.clock, env.kube), env.ctx)
    return env.ctx.disruption


def timed(run: Callable[[], Any]) -> tuple[float, Any]:
    gc.collect()
    start = time.perf_counter()
    out = run()
    return time.perf_counter() - start, out


def one_pass(env: Environment, repeat: int) -> tuple[float, str]:
    """Median seconds of one pass, and what the last pass decided."""
    seconds: list[float] = []
    decided = "nothing"
    for _ in range(repeat):
        controller = fresh_controller(env)
        elapsed, _ = timed(controller.reconcile)
        seconds.append(elapsed)
        held = getattr(controller, "_held", None)
        if held is not None and held.commands:
            decided = "; ".join(c.decision + f" {len(c.candidates)}" for c in held.commands)
    return statistics.median(seconds), decided


def measure(size: int, repeat: int) -> dict[str, Any]:
    start = time.perf_counter()
    env = build(size)
    built = time.perf_counter() - start
    idle, idle_decided = one_pass(env, repeat)
    make_consolidatable(env)
    consolidation, decided = one_pass(env, repeat)
    env.close()
    return {
        "nodes": size,
        "pods": size * PODS_PER_NODE,
        "build_s": round(built, 2),
        "idle_pass_s": round(idle, 4),
        "candidates_per_s": round(size / idle, 1) if idle > 0 else None,
        "idle_decided": idle_decided,
        "consolidation_pass_s": round(consolidation, 4),
        "command": decided,
    }


def table(rows: Sequence[dict[str, Any]]) -> str:
    head = (
        f"{'nodes':>6} {'pods':>6} {'idle pass':>10} {'candidates/s':>13} "
        f"{'consolidation pass':>19}  command"
    )
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(
            f"{r['nodes']:>6} {r['pods']:>6} {r['idle_pass_s']:>9.3f}s "
            f"{r['candidates_per_s']:>13.0f} {r['consolidation_pass_s']:>18.3f}s  {r['command']}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument(
        "--sizes",
        default=",".join(str(s) for s in DEFAULT_SIZES),
        help="comma-separated node counts (default 100,500,1000)",
    )
    parser.add_argument("--repeat", type=int, default=3, help="runs per figure (median)")
    parser.add_argument("--json", action="store_true", help="print JSON rows")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    rows = [measure(size, args.repeat) for size in sizes]
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        print(f"disruption pass, median of {args.repeat}")
        print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
