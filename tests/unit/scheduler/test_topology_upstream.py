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
from karpenter_core.apis.objects import Node, PersistentVolume, PersistentVolumeClaim, Pod
from karpenter_core.provisioning.scheduler.results import Results
from karpenter_core.state.snapshot import ClusterSnapshot

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
