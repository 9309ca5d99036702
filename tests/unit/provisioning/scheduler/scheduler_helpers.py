"""Builders for scheduler tests: pods, NodePools and a one-call solve over the fake catalogue."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pytest

from karpenter_core.apis.objects import Pod
from karpenter_core.apis.v1 import NodePool
from karpenter_core.provisioning.scheduler import (
    DEFAULT_OPTIONS,
    Results,
    SchedulerOptions,
    schedule,
)
from karpenter_core.testing import builders as b
from karpenter_core.testing.fakecatalog import default_catalog, registered_labels


@pytest.fixture(autouse=True)
def fake_labels() -> Iterator[None]:
    """The fake provider's labels, registered for one test and removed after (import this
    fixture into a test module to activate it there)."""
    with registered_labels():
        yield


_ids = itertools.count()


def pod(
    name: str | None = None,
    cpu: str | None = None,
    memory: str | None = None,
    namespace: str = "default",
    labels: Mapping[str, str] | None = None,
    node_selector: Mapping[str, str] | None = None,
    affinity: Mapping[str, Any] | None = None,
    tolerations: Sequence[Mapping[str, Any]] = (),
    tsc: Sequence[Mapping[str, Any]] = (),
    host_port: int | None = None,
    extra: Mapping[str, str] | None = None,
    init_cpu: str | None = None,
    init_memory: str | None = None,
    overhead: Mapping[str, str] | None = None,
) -> Pod:
    """The kit's pending pod, parsed, with a numbered name and uid (the scheduler's tie
    order) and the init containers and overhead these tests add."""
    n = next(_ids)
    spec: dict[str, Any] = {}
    if init_cpu or init_memory:
        init_req = {"cpu": init_cpu, "memory": init_memory}
        spec["initContainers"] = [
            {
                "name": "init",
                "image": "i",
                "resources": {"requests": {k: v for k, v in init_req.items() if v}},
            }
        ]
    if overhead:
        spec["overhead"] = dict(overhead)
    raw = b.pod(
        name or f"pod-{n:05d}",
        namespace=namespace,
        labels=labels,
        requests=extra,
        cpu=cpu,
        memory=memory,
        node_selector=node_selector,
        affinity=affinity,
        tolerations=tolerations,
        topology_spread=tsc,
        host_ports=[host_port] if host_port else (),
        spec=spec,
    )
    raw["metadata"].update(uid=f"uid-{n:05d}", creationTimestamp="2024-01-01T00:00:00Z")
    return Pod.from_dict(raw)


def nodepool(
    name: str = "default",
    requirements: Sequence[Mapping[str, Any]] | None = None,
    labels: Mapping[str, str] | None = None,
    taints: Sequence[Mapping[str, Any]] = (),
    limits: Mapping[str, str] | None = None,
    weight: int | None = None,
) -> NodePool:
    reqs = (
        list(requirements)
        if requirements is not None
        else [
            {
                "key": "karpenter.sh/capacity-type",
                "operator": "In",
                "values": ["spot", "on-demand", "reserved"],
            }
        ]
    )
    spec: dict[str, Any] = {
        "template": {
            "metadata": {"labels": dict(labels or {})},
            "spec": {
                "nodeClassRef": {
                    "group": "karpenter.test.sh",
                    "kind": "TestNodeClass",
                    "name": "default",
                },
                "requirements": reqs,
                "taints": list(taints),
            },
        }
    }
    if limits is not None:
        spec["limits"] = dict(limits)
    if weight is not None:
        spec["weight"] = weight
    return NodePool.from_dict(
        {
            "apiVersion": "karpenter.sh/v1",
            "kind": "NodePool",
            "metadata": {"name": name},
            "spec": spec,
        }
    )


def solve(
    pods: Sequence[Pod],
    nodepools: Sequence[NodePool] | None = None,
    instance_types: Sequence[Any] | Mapping[str, Sequence[Any]] | None = None,
    options: SchedulerOptions = DEFAULT_OPTIONS,
    snapshot: Any = None,
) -> Results:
    pools = list(nodepools) if nodepools is not None else [nodepool()]
    if isinstance(instance_types, Mapping):
        its = dict(instance_types)
    else:
        catalog = list(instance_types) if instance_types is not None else default_catalog()
        its = {p.name: catalog for p in pools}
    if snapshot is None:
        from karpenter_core.state.snapshot import ClusterSnapshot

        snapshot = ClusterSnapshot(pods=list(pods))
    return schedule(snapshot, pods, pools, its, options)


def instance_type_names(results: Results) -> list[list[str]]:
    return [[i.name for i in nc.instance_types_by_price()] for nc in results.new_nodeclaims]


def label_of(results: Results, index: int, key: str) -> set[str]:
    """Values the NodeClaim at ``index`` allows for ``key`` (its launch requirements)."""
    r = results.new_nodeclaims[index].launch_requirements().get(key)
    return set(r.values)
