"""Scheduling benchmark: upstream's ``scheduling_benchmark_test.go`` in Python (spec §13).

400 fake instance types (``fake.InstanceTypes(400)``), one NodePool with huge limits, no
existing nodes or DaemonSets. Diverse pods (generic, zone spread, hostname spread, zone
self-affinity, hostname self anti-affinity; a fifth each) from a fixed seed, and 4000
preference pods under PreferencePolicy Respect and Ignore. Each size gets a fresh scheduler.

    python bench/scheduling.py                 # table
    python bench/scheduling.py --json          # machine-readable
    python bench/scheduling.py --sizes 5000,20000
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import resource
import sys
import time
from collections.abc import Sequence
from typing import Any

from karpenter_core.apis.objects import Pod
from karpenter_core.apis.v1 import NodePool
from karpenter_core.provisioning.scheduler import (
    PREFERENCE_POLICY_IGNORE,
    PREFERENCE_POLICY_RESPECT,
    SchedulerOptions,
    schedule,
)
from karpenter_core.provisioning.scheduler.fakecatalog import instance_types, register_labels
from karpenter_core.state.snapshot import ClusterSnapshot

DEFAULT_SIZES = (1, 50, 100, 500, 1000, 2000, 5000, 10000, 20000)
LABEL_VALUES = ("a", "b", "c", "d", "e", "f", "g")
CPU_CHOICES = (100, 250, 500, 1000, 1500)
MEMORY_CHOICES = (100, 256, 512, 1024, 2048, 4096)
ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"


class PodFactory:
    def __init__(self, seed: int = 42) -> None:
        self.rng = random.Random(seed)
        self.n = 0

    def _value(self) -> str:
        return self.rng.choice(LABEL_VALUES)

    def _requests(self) -> dict[str, str]:
        return {
            "cpu": f"{self.rng.choice(CPU_CHOICES)}m",
            "memory": f"{self.rng.choice(MEMORY_CHOICES)}Mi",
        }

    def pod(
        self,
        labels: dict[str, str],
        requests: dict[str, str],
        affinity: dict[str, Any] | None = None,
        tsc: list[dict[str, Any]] | None = None,
    ) -> Pod:
        self.n += 1
        spec: dict[str, Any] = {
            "containers": [{"name": "app", "image": "app", "resources": {"requests": requests}}]
        }
        if affinity:
            spec["affinity"] = affinity
        if tsc:
            spec["topologySpreadConstraints"] = tsc
        return Pod.from_dict(
            {
                "metadata": {
                    "name": f"pod-{self.n:06d}",
                    "namespace": "default",
                    "uid": f"00000000-0000-0000-0000-{self.n:012d}",
                    "labels": labels,
                },
                "spec": spec,
                "status": {"phase": "Pending"},
            }
        )

    def generic(self, count: int) -> list[Pod]:
        return [self.pod({"my-label": self._value()}, self._requests()) for _ in range(count)]

    def spread(self, count: int, key: str) -> list[Pod]:
        out = []
        for _ in range(count):
            labels = {"my-label": self._value()}
            tsc = [
                {
                    "maxSkew": 1,
                    "topologyKey": key,
                    "whenUnsatisfiable": "DoNotSchedule",
                    "labelSelector": {"matchLabels": {"my-label": self._value()}},
                }
            ]
            out.append(self.pod(labels, self._requests(), tsc=tsc))
        return out

    def affinity(self, count: int, key: str) -> list[Pod]:
        out = []
        for _ in range(count):
            labels = {"my-affininity": self._value()}
            term = {"labelSelector": {"matchLabels": dict(labels)}, "topologyKey": key}
            aff = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
            out.append(self.pod(labels, self._requests(), affinity=aff))
        return out

    def anti_affinity(self, count: int, key: str) -> list[Pod]:
        labels = {"app": "nginx"}
        term = {"labelSelector": {"matchLabels": dict(labels)}, "topologyKey": key}
        aff = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
        return [self.pod(dict(labels), self._requests(), affinity=aff) for _ in range(count)]

    def diverse(self, count: int) -> list[Pod]:
        fifth = count // 5
        pods = self.generic(fifth)
        pods += self.spread(fifth, ZONE)
        pods += self.spread(fifth, HOSTNAME)
        pods += self.affinity(fifth, ZONE)
        pods += self.anti_affinity(fifth, HOSTNAME)
        pods += self.generic(count - len(pods))
        return pods

    def preference(self, count: int) -> list[Pod]:
        requests = self._requests()
        aff = {
            "nodeAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 1,
                        "preference": {
                            "matchExpressions": [
                                {"key": ZONE, "operator": "In", "values": ["test-zone-1"]}
                            ]
                        },
                    }
                ]
            },
            "podAntiAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 10,
                        "podAffinityTerm": {
                            "labelSelector": {"matchLabels": {"app": "nginx"}},
                            "topologyKey": ZONE,
                        },
                    },
                    {
                        "weight": 1,
                        "podAffinityTerm": {
                            "labelSelector": {"matchLabels": {"app": "nginx"}},
                            "topologyKey": HOSTNAME,
                        },
                    },
                ]
            },
        }
        return [self.pod({"app": "nginx"}, dict(requests), affinity=aff) for _ in range(count)]


def nodepool() -> NodePool:
    return NodePool.from_dict(
        {
            "apiVersion": "karpenter.sh/v1",
            "kind": "NodePool",
            "metadata": {"name": "default"},
            "spec": {
                "limits": {"cpu": "10000000", "memory": "10000000Gi"},
                "template": {
                    "spec": {
                        "nodeClassRef": {
                            "group": "karpenter.test.sh",
                            "kind": "TestNodeClass",
                            "name": "default",
                        },
                        "requirements": [],
                    }
                },
            },
        }
    )


def peak_rss_mb() -> float:
    # ru_maxrss is KiB on Linux.
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def run_one(name: str, pods: Sequence[Pod], policy: str, its: list[Any]) -> dict[str, Any]:
    pool = nodepool()
    snapshot = ClusterSnapshot(pods=list(pods))
    options = SchedulerOptions(preference_policy=policy)
    gc.collect()
    start = time.perf_counter()
    results = schedule(snapshot, pods, [pool], {"default": its}, options)
    elapsed = time.perf_counter() - start
    if results.pod_errors:
        first = next(iter(results.pod_errors.items()))
        print(
            f"{name}: {len(results.pod_errors)} pods did not schedule, e.g. {first[0]}: {first[1]}",
            file=sys.stderr,
        )
    return {
        "name": name,
        "pods": len(pods),
        "podsPerSecond": round(len(pods) / elapsed, 1) if elapsed > 0 else float("inf"),
        "nodeClaims": len(results.new_nodeclaims),
        "peakRssMB": round(peak_rss_mb(), 1),
        "unscheduled": len(results.pod_errors),
        "seconds": round(elapsed, 3),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--json", action="store_true", help="print a JSON list")
    parser.add_argument(
        "--sizes",
        help="comma-separated diverse-pod counts (default: all); 'none' skips them",
    )
    parser.add_argument(
        "--no-preferences", action="store_true", help="skip the 4000 preference-pod runs"
    )
    args = parser.parse_args(argv)
    if args.sizes is None:
        sizes: tuple[int, ...] = DEFAULT_SIZES
    elif args.sizes == "none":
        sizes = ()
    else:
        try:
            sizes = tuple(int(s) for s in args.sizes.split(",") if s.strip())
        except ValueError:
            parser.error(f"--sizes: expected comma-separated integers, got {args.sizes!r}")
        if any(s < 1 for s in sizes):
            parser.error("--sizes: every size must be at least 1")
    register_labels()
    its = instance_types(400)
    rows = []
    for size in sizes:
        pods = PodFactory(42).diverse(size)
        rows.append(run_one(f"diverse-{size}", pods, PREFERENCE_POLICY_RESPECT, its))
        if not args.json:
            _print_row(rows[-1], header=len(rows) == 1)
    if not args.no_preferences and args.sizes is None:
        for name, policy in (
            ("preferences-respect", PREFERENCE_POLICY_RESPECT),
            ("preferences-ignore", PREFERENCE_POLICY_IGNORE),
        ):
            pods = PodFactory(42).preference(4000)
            rows.append(run_one(name, pods, policy, its))
            if not args.json:
                _print_row(rows[-1], header=len(rows) == 1)
    if args.json:
        print(
            json.dumps(
                [
                    {k: r[k] for k in ("name", "pods", "podsPerSecond", "nodeClaims", "peakRssMB")}
                    for r in rows
                ],
                indent=2,
            )
        )
    return 0


def _print_row(row: dict[str, Any], header: bool) -> None:
    if header:
        print(
            f"{'name':<22}{'pods':>7}{'pods/s':>11}{'nodeclaims':>12}{'peak RSS MB':>13}{'unsched':>9}"
        )
    print(
        f"{row['name']:<22}{row['pods']:>7}{row['podsPerSecond']:>11.1f}{row['nodeClaims']:>12}"
        f"{row['peakRssMB']:>13.1f}{row['unscheduled']:>9}",
        flush=True,
    )


if __name__ == "__main__":
    sys.exit(main())
