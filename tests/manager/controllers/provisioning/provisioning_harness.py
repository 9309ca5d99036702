"""The provisioning tests' operator: the kit's Environment running the state informers and
the provisioning controllers on the fake provider, with no simulated kube-scheduler or
kubelet (tests bind and launch by hand)."""

from __future__ import annotations

from collections.abc import Iterable
from functools import partial
from typing import Any

from karpenter_core.runtime.options import Options
from karpenter_core.testing import Environment, FakeCloudProvider
from karpenter_core.testing import builders as b

pod = partial(b.pod, cpu="1", unschedulable=True)
"""A pending pod the kube-scheduler marked Unschedulable, asking for one CPU unless told."""


def make_env(
    *,
    options: Options | None = None,
    provider: FakeCloudProvider | None = None,
    packages: Iterable[str] = (),
    with_provisioning: bool = True,
) -> Environment:
    """State informers, provisioning (unless ``with_provisioning`` is False) and any other
    ``packages`` of the registry."""
    wanted = ["state", *(["provisioning"] if with_provisioning else []), *packages]
    return Environment(
        provider, options=options, controllers=wanted, kube_scheduler=False, kubelet=False
    )


def ready_nodepool(env: Environment, name: str = "default", **options: Any) -> dict[str, Any]:
    """A NodePool whose status already says Ready (no nodepool controllers needed)."""
    return env.apply(b.nodepool(name, ready=True, **options))
