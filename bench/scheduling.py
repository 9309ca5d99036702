"""Scheduling benchmark: upstream's ``scheduling_benchmark_test.go`` in Python (spec §13).

400 fake instance types (``fake.InstanceTypes(400)``), one NodePool with huge limits, no
existing nodes or DaemonSets. Diverse pods (generic, zone spread, hostname spread, zone
self-affinity, hostname self anti-affinity; a fifth each) from a fixed seed, and 4000
preference pods under PreferencePolicy Respect and Ignore. Each size gets a fresh scheduler.

The table also shows, per diverse size, how many nodes a first-fit-decreasing packing under
the same constraints needs (``ffd``), so "no more NodeClaims than FFD" can be checked at a
glance; the ``--json`` rows keep exactly the issue's keys.

    python bench/scheduling.py                 # table
    python bench/scheduling.py --json          # machine-readable
    python bench/scheduling.py --sizes 5000,20000
    python bench/scheduling.py --dra           # DRA cases (issue 11), median of 3

The DRA cases (``--dra``) run the same diverse pods on the same catalogue, where a quarter
of the types carry GPU template devices (2, 4 or 8, ``a100`` or ``h100``), three ways:
without claims and DRA requests ignored (upstream's default), without claims and DRA
simulated (the cost of the templates alone), and with 20% of the pods claiming 1-4 GPUs of
one model through a CEL selector (``--dra-fraction``). Each is the median of
``--repeat`` runs (default 3), the cases taking turns; pods per CPU second are printed too,
as wall time on a shared machine says more about the neighbours than about the solve.
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import resource
import sys
import time
from collections import Counter
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

from karpenter_core.apis.objects import Pod
from karpenter_core.apis.resource import Device, DeviceAttribute, DeviceClass, ResourceClaim
from karpenter_core.apis.v1 import NodePool
from karpenter_core.provisioning.scheduler import (
    PREFERENCE_POLICY_IGNORE,
    PREFERENCE_POLICY_RESPECT,
    DRAInputs,
    SchedulerOptions,
    schedule,
)
from karpenter_core.scheduling.dynamicresources import DynamicResources, ResourceSliceTemplate
from karpenter_core.state.snapshot import ClusterSnapshot
from karpenter_core.testing import builders as b
from karpenter_core.testing.fakecatalog import instance_types, register_labels

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
        raw = b.pod(
            f"pod-{self.n:06d}",
            labels=labels,
            requests=requests,
            affinity=affinity,
            topology_spread=tsc or (),
        )
        raw["metadata"]["uid"] = f"00000000-0000-0000-0000-{self.n:012d}"
        return Pod.from_dict(raw)

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


# --- first-fit-decreasing reference -----------------------------------------------------------

ZONES = ("test-zone-1", "test-zone-2", "test-zone-3")
Item = tuple[str, str]


class _Bin:
    """One node of the FFD packing: room left, its labels, and its zone once decided."""

    __slots__ = ("anti", "cpu", "labels", "memory", "pods", "zone")

    def __init__(self, allocatable: Mapping[str, int]) -> None:
        self.cpu = allocatable.get("cpu", 0)
        self.memory = allocatable.get("memory", 0)
        self.pods = allocatable.get("pods", 0) // 1000
        self.labels: Counter[Item] = Counter()
        self.anti: set[Item] = set()
        self.zone: str | None = None


def _selector_item(term: Mapping[str, Any]) -> Item:
    ((key, value),) = (term.get("labelSelector") or {}).get("matchLabels", {}).items()
    return str(key), str(value)


class _Constraints:
    """The bench pods' required constraints, in the forms the bench generates."""

    def __init__(self, pod: Pod) -> None:
        self.host_spread: list[tuple[Item, int]] = []
        self.zone_spread: list[tuple[Item, int]] = []
        self.host_anti: list[Item] = []
        self.zone_affinity: list[Item] = []
        for tsc in pod.topology_spread_constraints:
            target = self.host_spread if tsc["topologyKey"] == HOSTNAME else self.zone_spread
            target.append((_selector_item(tsc), int(tsc["maxSkew"])))
        affinity = pod.affinity or {}
        for term in (affinity.get("podAntiAffinity") or {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution", ()
        ):
            if term["topologyKey"] != HOSTNAME:
                raise ValueError("the FFD reference only models hostname anti-affinity")
            self.host_anti.append(_selector_item(term))
        for term in (affinity.get("podAffinity") or {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution", ()
        ):
            if term["topologyKey"] != ZONE:
                raise ValueError("the FFD reference only models zone affinity")
            self.zone_affinity.append(_selector_item(term))


def ffd_node_count(pods: Sequence[Pod], its: Sequence[Any]) -> int:
    """Nodes a first-fit-decreasing packing needs for ``pods``, each node as large as the
    largest instance type, under the same required constraints the scheduler honours:
    hostname anti-affinity and hostname spread per node, zone spread (maxSkew against the
    least-loaded zone) and zone self-affinity across nodes. A node's zone is decided by the
    first zone-constrained pod it takes, as a NodeClaim's zone requirement narrows.

    Pods are taken largest first (cpu, then memory); each goes to the first node it fits.
    For speed, per pod shape (requests and hostname constraints) the nodes that already
    refused that shape for room or hostname reasons are skipped: both only get stricter as
    nodes fill."""
    largest = max((it.allocatable() for it in its), key=lambda a: (a.get("cpu", 0), a))
    zone_counts: dict[str, Counter[Item]] = {z: Counter() for z in ZONES}
    affinity_zone: dict[Item, str] = {}
    bins: list[_Bin] = []
    first_candidate: dict[Hashable, int] = {}

    def labels_of(pod: Pod) -> list[Item]:
        return list(pod.labels.items())

    def zone_ok(c: _Constraints, items: list[Item], zone: str) -> bool:
        for sel, skew in c.zone_spread:
            counts = [zone_counts[z][sel] for z in ZONES]
            own = 1 if sel in items else 0
            if zone_counts[zone][sel] + own - min(counts) > skew:
                return False
        return all(affinity_zone.get(sel, zone) == zone for sel in c.zone_affinity)

    def pick_zone(c: _Constraints, items: list[Item]) -> str | None:
        allowed = [z for z in ZONES if zone_ok(c, items, z)]
        if not allowed:
            return None
        if c.zone_spread:
            sel = c.zone_spread[0][0]
            return min(allowed, key=lambda z: (zone_counts[z][sel], z))
        return allowed[0]

    def host_ok(b: _Bin, c: _Constraints, items: list[Item]) -> bool:
        if any(b.labels[sel] for sel in c.host_anti) or any(i in b.anti for i in items):
            return False
        for sel, skew in c.host_spread:
            if b.labels[sel] + (1 if sel in items else 0) > skew:
                return False
        return True

    def place(b: _Bin, pod: Pod, c: _Constraints, items: list[Item], zone: str | None) -> None:
        b.cpu -= pod.requests.get("cpu", 0)
        b.memory -= pod.requests.get("memory", 0)
        b.pods -= 1
        b.anti.update(c.host_anti)
        if b.zone is None and zone is not None:
            b.zone = zone
            for item, n in b.labels.items():
                zone_counts[zone][item] += n
        b.labels.update(items)
        if b.zone is not None:
            zone_counts[b.zone].update(items)
            for sel in c.zone_affinity:
                affinity_zone.setdefault(sel, b.zone)

    ordered = sorted(pods, key=lambda p: (-p.requests.get("cpu", 0), -p.requests.get("memory", 0)))
    for pod in ordered:
        c = _Constraints(pod)
        items = labels_of(pod)
        cpu, memory = pod.requests.get("cpu", 0), pod.requests.get("memory", 0)
        zoned = bool(c.zone_spread or c.zone_affinity)
        shape: Hashable = (cpu, memory, tuple(c.host_spread), tuple(c.host_anti), tuple(items))
        start = first_candidate.get(shape, 0)
        placed = False
        for i in range(start, len(bins)):
            b = bins[i]
            if b.cpu < cpu or b.memory < memory or b.pods < 1 or not host_ok(b, c, items):
                if i == start:
                    start += 1
                continue
            zone = b.zone
            if zoned:
                if zone is None:
                    zone = pick_zone(c, items)
                    if zone is None:
                        continue
                elif not zone_ok(c, items, zone):
                    continue
            place(b, pod, c, items, zone)
            placed = True
            break
        first_candidate[shape] = start
        if not placed:
            zone = pick_zone(c, items) if zoned else None
            if zoned and zone is None:
                continue  # unschedulable under the constraints, as for the scheduler
            b = _Bin(largest)
            if b.cpu < cpu or b.memory < memory:
                continue
            bins.append(b)
            place(b, pod, c, items, zone)
    return len(bins)


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


# --- DRA cases ------------------------------------------------------------------------------------

GPU_DRIVER = "gpu.example.com"
GPU_MODELS = ("a100", "h100")
GPU_CLASS = DeviceClass.from_dict(
    {
        "metadata": {"name": "gpu"},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{GPU_DRIVER}"'}}]},
    }
)


def dra_catalogue(its: Sequence[Any]) -> list[Any]:
    """``its`` with GPU template devices on every fourth type: 2, 4 or 8 GPUs of one
    model, each with an ``index`` and a ``memory`` attribute."""
    import attrs

    out = []
    for i, it in enumerate(its):
        if i % 4 != 3:
            out.append(it)
            continue
        count = (2, 4, 8)[(i // 4) % 3]
        model = GPU_MODELS[(i // 4) % 2]
        devices = tuple(
            Device(
                name=f"gpu-{d}",
                attributes={
                    "model": DeviceAttribute.of(model),
                    "index": DeviceAttribute.of(d),
                    "memory": DeviceAttribute.of(80 if model == "h100" else 40),
                },
            )
            for d in range(count)
        )
        templates = (ResourceSliceTemplate(GPU_DRIVER, f"{it.name}-gpus", devices),)
        out.append(attrs.evolve(it, dynamic_resources=DynamicResources(templates)))
    return out


def with_claims(
    pods: Sequence[Pod], fraction: float, seed: int = 7
) -> tuple[list[Pod], list[ResourceClaim]]:
    """``pods`` with every ``1/fraction``-th pod claiming 1-4 GPUs of one model (a CEL
    selector on the ``model`` attribute), through a ResourceClaim of its own."""
    rng = random.Random(seed)
    step = max(1, round(1 / fraction)) if fraction > 0 else 0
    out: list[Pod] = []
    claims: list[ResourceClaim] = []
    for i, pod in enumerate(pods):
        if not step or i % step != step - 1:
            out.append(pod)
            continue
        name = f"claim-{pod.name}"
        model = rng.choice(GPU_MODELS)
        selector = f'device.attributes["{GPU_DRIVER}"].model == "{model}"'
        claims.append(
            ResourceClaim.from_dict(
                {
                    "metadata": {"name": name, "namespace": pod.namespace},
                    "spec": {
                        "devices": {
                            "requests": [
                                {
                                    "name": "gpus",
                                    "exactly": {
                                        "deviceClassName": "gpu",
                                        "count": rng.randint(1, 4),
                                        "selectors": [{"cel": {"expression": selector}}],
                                    },
                                }
                            ]
                        }
                    },
                }
            )
        )
        raw = json.loads(json.dumps(pod.raw))
        spec = raw["spec"]
        spec["resourceClaims"] = [{"name": "gpu", "resourceClaimName": name}]
        spec["containers"][0].setdefault("resources", {})["claims"] = [{"name": "gpu"}]
        out.append(Pod.from_dict(raw))
    return out, claims


def run_dra(
    name: str,
    pods: Sequence[Pod],
    its: list[Any],
    *,
    ignore_dra_requests: bool,
    claims: Sequence[ResourceClaim] = (),
) -> tuple[float, float, Any]:
    """One solve of ``pods`` (a fresh scheduler): wall and CPU seconds, and the results."""
    pool = nodepool()
    options = SchedulerOptions(
        preference_policy=PREFERENCE_POLICY_RESPECT, ignore_dra_requests=ignore_dra_requests
    )
    dra = None if ignore_dra_requests else DRAInputs.of([GPU_CLASS], claims)
    gc.collect()
    wall, cpu = time.perf_counter(), time.process_time()
    results = schedule(
        ClusterSnapshot(pods=list(pods)), pods, [pool], {"default": its}, options, dra=dra
    )
    return time.perf_counter() - wall, time.process_time() - cpu, results


def dra_rows(size: int, fraction: float, repeat: int) -> list[dict[str, Any]]:
    """The three DRA cases at ``size`` diverse pods (see the module docstring), each the
    median of ``repeat`` runs; the cases take turns, so a busy machine slows them alike."""
    its = dra_catalogue(instance_types(400))
    plain = PodFactory(42).diverse(size)
    claiming, claims = with_claims(plain, fraction)
    cases: list[tuple[str, Sequence[Pod], bool, Sequence[ResourceClaim]]] = [
        (f"dra-off-{size}", plain, True, ()),
        (f"dra-on-noclaims-{size}", plain, False, ()),
        (f"dra-claims-{size}", claiming, False, claims),
    ]
    walls: dict[str, list[float]] = {name: [] for name, *_ in cases}
    cpus: dict[str, list[float]] = {name: [] for name, *_ in cases}
    last: dict[str, Any] = {}
    for _ in range(repeat):
        for name, pods, ignore, case_claims in cases:
            wall, cpu, last[name] = run_dra(
                name, pods, its, ignore_dra_requests=ignore, claims=case_claims
            )
            walls[name].append(wall)
            cpus[name].append(cpu)
    rows = []
    for name, pods, _, case_claims in cases:
        results = last[name]
        if results.pod_errors:
            first = next(iter(results.pod_errors.items()))
            print(
                f"{name}: {len(results.pod_errors)} pods did not schedule, e.g. "
                f"{first[0]}: {first[1]}",
                file=sys.stderr,
            )
        wall = sorted(walls[name])[len(walls[name]) // 2]
        cpu = sorted(cpus[name])[len(cpus[name]) // 2]
        rows.append(
            {
                "name": name,
                "pods": len(pods),
                "podsPerSecond": round(len(pods) / wall, 1) if wall > 0 else float("inf"),
                "podsPerCPUSecond": round(len(pods) / cpu, 1) if cpu > 0 else float("inf"),
                "nodeClaims": len(results.new_nodeclaims),
                "peakRssMB": round(peak_rss_mb(), 1),
                "unscheduled": len(results.pod_errors),
                "seconds": round(wall, 3),
                "claims": len(case_claims),
            }
        )
    return rows


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
    parser.add_argument(
        "--dra",
        action="store_true",
        help="run the DRA cases instead (default size 2000; --sizes to change)",
    )
    parser.add_argument(
        "--dra-fraction", type=float, default=0.2, help="share of pods with claims (DRA cases)"
    )
    parser.add_argument("--repeat", type=int, default=3, help="runs per DRA case (median)")
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
    if args.dra:
        rows = []
        for size in sizes if args.sizes is not None else (2000,):
            for row in dra_rows(size, args.dra_fraction, max(1, args.repeat)):
                rows.append(row)
                if not args.json:
                    _print_dra_row(row, header=len(rows) == 1)
        if args.json:
            keys = (
                "name",
                "pods",
                "podsPerSecond",
                "podsPerCPUSecond",
                "nodeClaims",
                "peakRssMB",
                "claims",
            )
            print(json.dumps([{k: r[k] for k in keys} for r in rows], indent=2))
        return 0
    its = instance_types(400)
    rows = []
    for size in sizes:
        pods = PodFactory(42).diverse(size)
        rows.append(run_one(f"diverse-{size}", pods, PREFERENCE_POLICY_RESPECT, its))
        if not args.json:
            rows[-1]["ffd"] = ffd_node_count(pods, its)
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


def _print_dra_row(row: dict[str, Any], header: bool) -> None:
    if header:
        print(
            f"{'name':<24}{'pods':>7}{'claims':>8}{'pods/s':>10}{'pods/cpu-s':>12}"
            f"{'nodeclaims':>12}{'peak RSS MB':>13}{'unsched':>9}"
        )
    print(
        f"{row['name']:<24}{row['pods']:>7}{row['claims']:>8}{row['podsPerSecond']:>10.1f}"
        f"{row['podsPerCPUSecond']:>12.1f}{row['nodeClaims']:>12}{row['peakRssMB']:>13.1f}"
        f"{row['unscheduled']:>9}",
        flush=True,
    )


def _print_row(row: dict[str, Any], header: bool) -> None:
    if header:
        print(
            f"{'name':<22}{'pods':>7}{'pods/s':>11}{'nodeclaims':>12}{'ffd':>7}"
            f"{'peak RSS MB':>13}{'unsched':>9}"
        )
    ffd = row.get("ffd")
    print(
        f"{row['name']:<22}{row['pods']:>7}{row['podsPerSecond']:>11.1f}{row['nodeClaims']:>12}"
        f"{'-' if ffd is None else ffd:>7}{row['peakRssMB']:>13.1f}{row['unscheduled']:>9}",
        flush=True,
    )


if __name__ == "__main__":
    sys.exit(main())
