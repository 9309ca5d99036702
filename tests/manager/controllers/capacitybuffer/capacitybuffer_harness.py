"""The CapacityBuffer tests' operator: the kit's Environment running the state informers,
the provisioning controllers and (gate on) the capacitybuffer package, as the operator's
registry does, with no simulated kube-scheduler or kubelet; and the suite's objects."""

from __future__ import annotations

from functools import partial
from typing import Any

from karpenter_core.apis.conditions import condition_of
from karpenter_core.runtime.options import Options
from karpenter_core.testing import Environment, FakeCloudProvider
from karpenter_core.testing import builders as b

podtemplate = partial(b.pod_template, "tmpl", labels={"app": "web"}, requests={"cpu": "1"})
deployment = partial(b.deployment, "web", replicas=10, labels={"app": "web"}, requests={"cpu": "1"})
buffer = partial(b.capacity_buffer, "buf")


def gate(on: bool = True) -> Options:
    return Options.from_env({"FEATURE_GATES": f"CapacityBuffer={'true' if on else 'false'}"})


def make_env(*, gate_on: bool = True, provider: FakeCloudProvider | None = None) -> Environment:
    """One operator on a virtual clock; the capacitybuffer package runs only with the gate
    on (the registry skips it otherwise)."""
    packages = ["state", "provisioning", *(["capacitybuffer"] if gate_on else [])]
    env = Environment(
        provider, options=gate(gate_on), controllers=packages, kube_scheduler=False, kubelet=False
    )
    return env


def condition(env: Environment, type_: str, name: str = "buf") -> dict[str, Any] | None:
    """Condition ``type_`` of CapacityBuffer ``name``, None when it has none."""
    found = condition_of(env.get("capacitybuffers", name, "default"), type_)
    return dict(found) if found is not None else None


def launch(env: Environment, nc: dict[str, Any], provider_id: str) -> None:
    """Pretend the NodeClaim launched: a provider id and capacity make it existing capacity."""
    resources = {"cpu": "16", "memory": "64Gi", "pods": "110"}
    env.set_status(nc, {"providerID": provider_id, "capacity": resources, "allocatable": resources})
