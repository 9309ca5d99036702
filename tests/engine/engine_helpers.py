"""Helpers for engine tests (imported by name: pytest puts this directory on sys.path): small scenarios run on the in-memory cluster."""

from __future__ import annotations

import copy
from typing import Any

from karpenter_core.sim.scenario import Scenario, parse_scenario

NODEPOOL: dict[str, Any] = {
    "apiVersion": "karpenter.sh/v1",
    "kind": "NodePool",
    "metadata": {"name": "default"},
    "spec": {
        "template": {
            "spec": {
                "nodeClassRef": {
                    "group": "karpenter.kwok.sh",
                    "kind": "KWOKNodeClass",
                    "name": "default",
                },
                "requirements": [
                    {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]},
                    {
                        "key": "karpenter.sh/capacity-type",
                        "operator": "In",
                        "values": ["on-demand"],
                    },
                    {"key": "karpenter.kwok.sh/instance-size", "operator": "Lt", "values": ["32"]},
                ],
                "expireAfter": "Never",
            }
        },
        "disruption": {
            "consolidationPolicy": "WhenEmptyOrUnderutilized",
            "consolidateAfter": "Never",
        },
    },
}


def nodepool(capacity_types: tuple[str, ...] = ("on-demand",)) -> dict[str, Any]:
    pool = copy.deepcopy(NODEPOOL)
    pool["spec"]["template"]["spec"]["requirements"][1]["values"] = list(capacity_types)
    return pool


def make_scenario(**fields: Any) -> Scenario:
    data: dict[str, Any] = {"name": "test", "seed": 0, "nodePools": [nodepool()]}
    data.update(fields)
    return parse_scenario(data, "test.yaml")


def web(replicas: int, cpu: str = "1", memory: str = "1Gi", **extra: Any) -> dict[str, Any]:
    return {
        "deployment": "web",
        "replicas": replicas,
        "requests": {"cpu": cpu, "memory": memory},
        **extra,
    }
