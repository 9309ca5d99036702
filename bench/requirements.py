"""Micro-benchmark of the requirements algebra (the scheduler's inner loop).

Run: ``python bench/requirements.py [--seconds 0.5]``. Prints operations per second; it asserts
nothing (timings vary by machine), it is for spotting regressions by eye.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from karpenter_core.apis import labels
from karpenter_core.scheduling.requirements import (
    ALLOW_UNDEFINED_WELL_KNOWN_LABELS,
    EXISTS,
    GT,
    IN,
    NOT_IN,
    Requirement,
    Requirements,
)


def _rate(fn: Callable[[], object], seconds: float) -> float:
    """Calls per second of ``fn``, measured in batches until ``seconds`` have passed."""
    batch = 1000
    calls = 0
    start = time.perf_counter()
    while True:
        for _ in range(batch):
            fn()
        calls += batch
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return calls / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=0.5, help="time per case")
    args = parser.parse_args()

    # upstream TestRequirementsProfile: two single-key sets with disjoint values
    a = Requirements(Requirement.new("foo", IN, ["a", "b", "c"]))
    b = Requirements(Requirement.new("foo", IN, ["d", "e", "f"]))

    # a NodeClaim-like receiver vs a pod: many keys, a few of them shared
    zones = [f"zone-{i}" for i in range(6)]
    instance_types = [f"m5.{s}" for s in ("large", "xlarge", "2xlarge", "4xlarge", "8xlarge")] * 40
    nodeclaim = Requirements(
        Requirement.new(labels.NODEPOOL_LABEL_KEY, IN, ["default"]),
        Requirement.new(labels.LABEL_TOPOLOGY_ZONE, IN, zones),
        Requirement.new(labels.CAPACITY_TYPE_LABEL_KEY, IN, ["spot", "on-demand"]),
        Requirement.new(labels.LABEL_ARCH, IN, ["amd64", "arm64"]),
        Requirement.new(labels.LABEL_OS, IN, ["linux"]),
        Requirement.new(
            labels.LABEL_INSTANCE_TYPE, IN, [f"{t}-{i}" for i, t in enumerate(instance_types)]
        ),
        Requirement.new("example.com/team", IN, ["blue"]),
        Requirement.new("karpenter.k8s.aws/instance-cpu", GT, ["3"]),
    )
    pod = Requirements(
        Requirement.new(labels.LABEL_TOPOLOGY_ZONE, IN, ["zone-3", "zone-9"]),
        Requirement.new(labels.LABEL_ARCH, IN, ["arm64"]),
        Requirement.new("example.com/team", NOT_IN, ["red"]),
    )
    big_in = Requirement.new(labels.LABEL_INSTANCE_TYPE, IN, [f"t-{i}" for i in range(500)])
    small_in = Requirement.new(labels.LABEL_INSTANCE_TYPE, IN, ["t-499", "x"])
    not_in = Requirement.new(labels.LABEL_INSTANCE_TYPE, NOT_IN, [f"t-{i}" for i in range(400)])
    exists = Requirement.new(labels.LABEL_INSTANCE_TYPE, EXISTS)

    cases: list[tuple[str, Callable[[], object]]] = [
        ("intersects (upstream profile, disjoint)", lambda: a.intersects(b)),
        ("compatible (upstream profile, disjoint)", lambda: a.compatible(b)),
        ("intersects nodeclaim<-pod", lambda: nodeclaim.intersects(pod)),
        (
            "compatible nodeclaim<-pod (allow well-known)",
            lambda: nodeclaim.compatible(pod, ALLOW_UNDEFINED_WELL_KNOWN_LABELS),
        ),
        ("copy (8 keys)", nodeclaim.copy),
        ("copy + add pod (8 keys)", lambda: nodeclaim.copy().add(*pod.values())),
        ("has_intersection In(500) vs In(2)", lambda: big_in.has_intersection(small_in)),
        ("has_intersection NotIn(400) vs In(500)", lambda: not_in.has_intersection(big_in)),
        ("intersection In(500) vs Exists", lambda: big_in.intersection(exists)),
        ("Requirement.new In(3)", lambda: Requirement.new("foo", IN, ["a", "b", "c"])),
        ("to_node_selector_requirements (8 keys)", nodeclaim.to_node_selector_requirements),
    ]
    width = max(len(name) for name, _ in cases)
    for name, fn in cases:
        print(f"{name:<{width}}  {_rate(fn, args.seconds):>14,.0f} ops/s")


if __name__ == "__main__":
    main()
