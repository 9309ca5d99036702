"""Upstream ``topology_test.go`` scenarios run through the real scheduler (resources, the
fake catalogue and all), complementing the topology-only MiniScheduler tests."""

from __future__ import annotations

from typing import Any

from scheduler_helpers import fake_labels as fake_labels  # autouse fixture
from scheduler_helpers import nodepool, pod, solve

from karpenter_core.apis.labels import (
    CAPACITY_TYPE_LABEL_KEY,
    LABEL_ARCH,
    LABEL_HOSTNAME,
    LABEL_TOPOLOGY_ZONE,
)
from karpenter_core.provisioning.scheduler.results import Results

ZONE = LABEL_TOPOLOGY_ZONE
S2 = {"security": "s2"}
ANY_CAPACITY = [{"key": CAPACITY_TYPE_LABEL_KEY, "operator": "Exists"}]


def pool() -> Any:
    return nodepool(requirements=ANY_CAPACITY)


def hostname_spread(labels: dict[str, str]) -> list[dict[str, Any]]:
    return [
        {
            "maxSkew": 1,
            "topologyKey": LABEL_HOSTNAME,
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": dict(labels)},
        }
    ]


def term(labels: dict[str, str], key: str) -> dict[str, Any]:
    return {"labelSelector": {"matchLabels": dict(labels)}, "topologyKey": key}


def required(kind: str, *terms: dict[str, Any]) -> dict[str, Any]:
    return {kind: {"requiredDuringSchedulingIgnoredDuringExecution": list(terms)}}


def claim_of(results: Results, pod_key: str) -> Any:
    (nc,) = [nc for nc in results.new_nodeclaims if any(p.key == pod_key for p in nc.pods)]
    return nc


def values(nc: Any, key: str) -> set[str]:
    return set(nc.launch_requirements().get(key).values)


def test_two_deployments_with_hostname_spread_share_two_nodes() -> None:
    pods = [
        pod(labels={"app": app}, tsc=hostname_spread({"app": app}))
        for app in ("app1", "app1", "app2", "app2")
    ]
    results = solve(pods, [pool()])
    assert results.pod_errors == {}
    assert len(results.new_nodeclaims) == 2


def test_pod_affinity_on_arch_follows_the_target_to_another_node() -> None:
    target = pod(cpu="2", labels=S2, tsc=hostname_spread(S2), node_selector={LABEL_ARCH: "arm64"})
    follower = pod(
        cpu="1",
        labels=S2,
        tsc=hostname_spread(S2),
        affinity=required("podAffinity", term(S2, LABEL_ARCH)),
    )
    results = solve([target, follower], [pool()])
    assert results.pod_errors == {}
    a, b = claim_of(results, target.key), claim_of(results, follower.key)
    assert a is not b
    assert values(a, LABEL_ARCH) == values(b, LABEL_ARCH) == {"arm64"}


def test_pod_anti_affinity_on_arch_takes_the_other_arch() -> None:
    target = pod(cpu="2", labels=S2, tsc=hostname_spread(S2), node_selector={LABEL_ARCH: "arm64"})
    other = pod(
        cpu="1",
        labels=S2,
        tsc=hostname_spread(S2),
        affinity=required("podAntiAffinity", term(S2, LABEL_ARCH)),
    )
    results = solve([target, other], [pool()])
    assert results.pod_errors == {}
    assert values(claim_of(results, target.key), LABEL_ARCH) == {"arm64"}
    assert values(claim_of(results, other.key), LABEL_ARCH) == {"amd64"}


def test_preferred_affinity_yields_to_a_required_hostname_spread() -> None:
    app = {"app": "spread"}
    preferred = {
        "podAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 50, "podAffinityTerm": term(S2, LABEL_HOSTNAME)}
            ]
        }
    }
    spread_pods = [pod(labels=app, tsc=hostname_spread(app), affinity=preferred) for _ in range(3)]
    results = solve([*spread_pods, pod(labels=S2)], [pool()])
    assert results.pod_errors == {}
    per_node = sorted(sum(1 for p in nc.pods if p.labels == app) for nc in results.new_nodeclaims)
    assert per_node == [1, 1, 1]


def test_zone_affinity_to_a_pinned_target_puts_every_follower_in_its_zone() -> None:
    target = pod(labels=S2, node_selector={ZONE: "test-zone-1"})
    followers = [pod(affinity=required("podAffinity", term(S2, ZONE))) for _ in range(10)]
    results = solve([*followers, target], [pool()])
    assert results.pod_errors == {}
    assert {frozenset(values(nc, ZONE)) for nc in results.new_nodeclaims} == {
        frozenset({"test-zone-1"})
    }


def test_zone_anti_affinity_with_undecided_zones_schedules_one_pod_per_round() -> None:
    """Late committal: the first pod may land in any zone, so it blocks them all this round."""
    anti = required("podAntiAffinity", term(S2, ZONE))
    pods = [pod(labels=S2, affinity=anti) for _ in range(3)]
    results = solve(pods, [pool()])
    assert [len(nc.pods) for nc in results.new_nodeclaims] == [1]
    assert len(values(results.new_nodeclaims[0], ZONE)) == 3
    assert len(results.pod_errors) == 2
