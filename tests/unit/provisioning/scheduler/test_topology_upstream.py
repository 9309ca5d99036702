"""Upstream ``topology_test.go`` scenarios run through the real scheduler (resources, the
fake catalogue and all), complementing the topology-only MiniScheduler tests."""

from __future__ import annotations

from typing import Any

import pytest
from scheduler_helpers import fake_labels as fake_labels  # autouse fixture
from scheduler_helpers import nodepool, pod, solve

from karpenter_core.apis.labels import (
    CAPACITY_TYPE_LABEL_KEY,
    LABEL_ARCH,
    LABEL_HOSTNAME,
    LABEL_TOPOLOGY_ZONE,
)
from karpenter_core.apis.objects import Node, PersistentVolume, PersistentVolumeClaim, Pod
from karpenter_core.provisioning.scheduler.results import Results
from karpenter_core.state.snapshot import ClusterSnapshot
from karpenter_core.testing.fakecatalog import instance_type, offering

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


def test_volume_zone_does_not_distort_spread_counting_with_min_domains() -> None:
    """Upstream issues 1239/2777: a pod whose PV pins it to zone 1 still schedules under a
    minDomains=3 zone spread when the three zones hold one matching pod each."""
    app = {"app": "test"}
    tsc = [
        {
            "maxSkew": 1,
            "topologyKey": ZONE,
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": app},
            "minDomains": 3,
        }
    ]
    zones = ("test-zone-1", "test-zone-2", "test-zone-3")
    nodes = [
        Node.from_dict(
            {
                "metadata": {"name": f"n{i}", "labels": {ZONE: z, LABEL_HOSTNAME: f"n{i}"}},
                "spec": {"providerID": f"fake://n{i}"},
                "status": {"allocatable": {"cpu": "4", "memory": "4Gi", "pods": "5"}},
            }
        )
        for i, z in enumerate(zones)
    ]
    running = []
    for i in range(3):
        p = pod(labels=app, tsc=tsc)
        raw = {**p.raw, "spec": {**p.raw["spec"], "nodeName": f"n{i}"}}
        running.append(Pod.from_dict({**raw, "status": {"phase": "Running"}}))
    pv = PersistentVolume.from_dict(
        {
            "metadata": {"name": "test-pv"},
            "spec": {
                "csi": {"driver": "ebs.csi.aws.com", "volumeHandle": "v"},
                "nodeAffinity": {
                    "required": {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {"key": ZONE, "operator": "In", "values": ["test-zone-1"]}
                                ]
                            }
                        ]
                    }
                },
            },
        }
    )
    pvc = PersistentVolumeClaim.from_dict(
        {
            "metadata": {
                "name": "test-pvc",
                "namespace": "default",
                "annotations": {"pv.kubernetes.io/bind-completed": "yes"},
            },
            "spec": {"volumeName": "test-pv"},
            "status": {"phase": "Bound"},
        }
    )
    new = pod(labels=app, tsc=tsc)
    raw = dict(new.raw)
    raw["spec"] = {
        **raw["spec"],
        "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "test-pvc"}}],
    }
    new = Pod.from_dict(raw)
    snapshot = ClusterSnapshot(nodes=nodes, pods=[*running, new], pvs=[pv], pvcs=[pvc])
    results = solve([new], [pool()], snapshot=snapshot)
    assert results.pod_errors == {}
    # Existing capacity comes first: the zone-1 node takes it, making the counts 2/1/1.
    assert results.new_nodeclaims == []
    assert results.to_json_dict()["existingNodes"] == [{"name": "n0", "pods": [new.key]}]


def zone_spread(labels: dict[str, str], skew: int = 1) -> list[dict[str, Any]]:
    return [
        {
            "maxSkew": skew,
            "topologyKey": ZONE,
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": dict(labels)},
        }
    ]


def _node_with_pod(name: str, zone: str, labels: dict[str, str]) -> tuple[Node, Pod]:
    node = Node.from_dict(
        {
            "metadata": {"name": name, "labels": {ZONE: zone, LABEL_HOSTNAME: name}},
            "spec": {"providerID": f"fake://{name}"},
            "status": {"allocatable": {"cpu": "2", "memory": "2Gi", "pods": "5"}},
        }
    )
    p = pod(cpu="1.1", labels=labels)
    raw = {**p.raw, "spec": {**p.raw["spec"], "nodeName": name}}
    return node, Pod.from_dict({**raw, "status": {"phase": "Running"}})


def _zone_counts(results: Results, running: dict[str, int]) -> list[int]:
    counts = dict(running)
    for nc in results.new_nodeclaims:
        (zone,) = values(nc, ZONE)
        counts[zone] = counts.get(zone, 0) + len(nc.pods)
    return sorted(counts.values())


def test_spread_counts_a_running_pod_in_a_zone_the_pool_cannot_use() -> None:
    """'should respect NodePool zonal constraints (existing pod)': one pod already runs in
    zone 3; the pool offers zones 1 and 2, so at most two pods fit in each."""
    app = {"app": "web"}
    node, running = _node_with_pod("n3", "test-zone-3", app)
    pending = [pod(cpu="1.1", labels=app, tsc=zone_spread(app)) for _ in range(6)]
    pool = nodepool(
        requirements=[
            *ANY_CAPACITY,
            {"key": ZONE, "operator": "In", "values": ["test-zone-1", "test-zone-2"]},
        ]
    )
    snapshot = ClusterSnapshot(nodes=[node], pods=[running, *pending])
    results = solve(pending, [pool], snapshot=snapshot)
    assert _zone_counts(results, {"test-zone-3": 1}) == [1, 2, 2]
    assert len(results.pod_errors) == 2


def test_spread_discovers_the_domain_of_a_running_pod_without_constraints() -> None:
    """'should not violate max-skew when unsat = do not schedule (discover domains)'."""
    app = {"app": "web"}
    node, running = _node_with_pod("n1", "test-zone-1", app)
    pending = [pod(cpu="1.1", labels=app, tsc=zone_spread(app)) for _ in range(10)]
    pool = nodepool(
        requirements=[
            *ANY_CAPACITY,
            {"key": ZONE, "operator": "In", "values": ["test-zone-2", "test-zone-3"]},
        ]
    )
    snapshot = ClusterSnapshot(nodes=[node], pods=[running, *pending])
    results = solve(pending, [pool], snapshot=snapshot)
    assert _zone_counts(results, {"test-zone-1": 1}) == [1, 2, 2]


def test_hostname_spreads_of_two_deployments_on_different_arches_need_four_nodes() -> None:
    pods = []
    for app, arch in (("app1", "amd64"), ("app1", "amd64"), ("app2", "arm64"), ("app2", "arm64")):
        pods.append(
            pod(
                labels={"app": app},
                tsc=hostname_spread({"app": app}),
                affinity={
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {
                                    "matchExpressions": [
                                        {"key": LABEL_ARCH, "operator": "In", "values": [arch]}
                                    ]
                                }
                            ]
                        }
                    }
                },
            )
        )
    results = solve(pods, [pool()])
    assert results.pod_errors == {}
    assert len(results.new_nodeclaims) == 4


@pytest.mark.parametrize("count", [1, 2, 5, 9, 14])
def test_three_spreads_at_once_all_hold(count: int) -> None:
    """'should spread pods while respecting all constraints' (one round per size). Like
    upstream (``fake.InstanceTypesAssorted``) the catalogue offers every zone and capacity
    type pair: the default one has no spot in test-zone-3, which the spreads may need."""
    catalog = [
        instance_type(f"{ct}-{zone}", cpu=4, memory_gi=8, offerings=[offering(ct, zone, 1.0)])
        for zone in ("test-zone-1", "test-zone-2", "test-zone-3")
        for ct in ("spot", "on-demand")
    ]
    app = {"app": "all"}
    tscs = [
        {**hostname_spread(app)[0], "topologyKey": CAPACITY_TYPE_LABEL_KEY, "maxSkew": 1},
        {**zone_spread(app)[0], "maxSkew": 2},
        {**hostname_spread(app)[0], "maxSkew": 3},
    ]
    results = solve([pod(labels=app, tsc=tscs) for _ in range(count)], [pool()], catalog)
    assert results.pod_errors == {}
    for key, skew in ((CAPACITY_TYPE_LABEL_KEY, 1), (ZONE, 2)):
        counts: dict[str, int] = {}
        for nc in results.new_nodeclaims:
            (domain,) = values(nc, key)
            counts[domain] = counts.get(domain, 0) + len(nc.pods)
        assert max(counts.values()) - min(counts.values()) <= skew
    assert max(len(nc.pods) for nc in results.new_nodeclaims) <= 3
