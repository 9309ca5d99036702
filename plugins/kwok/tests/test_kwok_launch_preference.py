"""KWOK launches the NodeClaim's preferred instance type when the core wrote a launch
order (an instance-type scorer other than price), and the cheapest one otherwise."""

from __future__ import annotations

from typing import Any

import pytest
from karpenter_kwok.provider import KwokCloudProvider

from karpenter_core.runtime.clock import VirtualClock
from karpenter_core.scoring import PREFERENCE_ANNOTATION_KEY
from karpenter_core.sim.apiserver import InMemoryApiServer

C1 = "c-1x-amd64-linux"
C2 = "c-2x-amd64-linux"
M2 = "m-2x-amd64-linux"


@pytest.fixture
def provider() -> KwokCloudProvider:
    clock = VirtualClock()
    return KwokCloudProvider.from_settings(
        {}, environ={}, kube=InMemoryApiServer(clock), clock=clock
    )


def nodeclaim(types: tuple[str, ...], preference: str | None) -> dict[str, Any]:
    annotations = {PREFERENCE_ANNOTATION_KEY: preference} if preference is not None else {}
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodeClaim",
        "metadata": {
            "name": "default-abcde",
            "labels": {"karpenter.sh/nodepool": "default"},
            "annotations": annotations,
        },
        "spec": {
            "requirements": [
                {
                    "key": "node.kubernetes.io/instance-type",
                    "operator": "In",
                    "values": list(types),
                },
                {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
            ],
            "nodeClassRef": {
                "group": "karpenter.kwok.sh",
                "kind": "KWOKNodeClass",
                "name": "default",
            },
            "resources": {"requests": {"cpu": "500m"}},
        },
    }


def launched_type(provider: KwokCloudProvider, types: tuple[str, ...], pref: str | None) -> str:
    nc = provider.create(nodeclaim(types, pref))
    return nc.metadata.labels["node.kubernetes.io/instance-type"]


def test_without_a_preference_the_cheapest_type_launches(provider: KwokCloudProvider) -> None:
    assert launched_type(provider, (M2, C2, C1), None) == C1


def test_the_best_ranked_type_launches_even_when_dearer(provider: KwokCloudProvider) -> None:
    assert launched_type(provider, (M2, C2, C1), f"{M2},{C1},{C2}") == M2


def test_types_the_preference_does_not_list_come_after_it_cheapest_first(
    provider: KwokCloudProvider,
) -> None:
    # the only listed type is not among the NodeClaim's: price decides among the rest
    assert launched_type(provider, (M2, C2), "r-1x-amd64-linux") == C2
