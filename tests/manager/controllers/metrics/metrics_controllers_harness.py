"""The metrics controllers' tests: the kit's Environment running the state informers and
the metrics package (no simulated kube-scheduler or kubelet), and the suite's Node shape."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from functools import partial
from typing import Any

from karpenter_core.runtime.clock import format_time
from karpenter_core.runtime.options import Options
from karpenter_core.testing import Environment
from karpenter_core.testing import builders as b

MANAGED_LABELS = {
    "karpenter.sh/nodepool": "default",
    "karpenter.sh/capacity-type": "spot",
    "topology.kubernetes.io/zone": "zone-a",
    "kubernetes.io/arch": "amd64",
    "node.kubernetes.io/instance-type": "m.large",
}

pod = partial(b.pod, cpu="1")
"""A pod asking for one CPU unless told."""


def stamp(seconds: float) -> str:
    return format_time(b.START + timedelta(seconds=seconds))


def make_env(options: Options | None = None) -> Environment:
    return Environment(
        options=options, controllers=["state", "metrics"], kube_scheduler=False, kubelet=False
    )


def node(
    name: str,
    *,
    cpu: str = "4",
    allocatable_cpu: str = "3800m",
    labels: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """A Ready cloud node whose allocatable CPU is less than its capacity (the overhead the
    node gauges report)."""
    return b.node(
        name,
        labels=labels,
        provider_id=f"fake://{name}",
        capacity={"cpu": cpu, "memory": "16Gi", "pods": "110"},
        allocatable={"cpu": allocatable_cpu, "memory": "16Gi", "pods": "110"},
        phase="Running",
    )
