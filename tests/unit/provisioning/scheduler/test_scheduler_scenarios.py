"""Scheduler behaviour scenarios from upstream's suite (spec scheduling.md §15), one per test."""

from __future__ import annotations

from typing import Any

import pytest
from scheduler_helpers import fake_labels as fake_labels  # autouse fixture
from scheduler_helpers import instance_type_names, label_of, nodepool, pod, solve

from karpenter_core.apis.objects import DaemonSet, Node
from karpenter_core.apis.v1 import NodeClaim
from karpenter_core.provisioning.scheduler import SchedulerOptions
from karpenter_core.state.snapshot import ClusterSnapshot
from karpenter_core.testing.fakecatalog import (
    RESOURCE_GPU_VENDOR_A,
    RESOURCE_GPU_VENDOR_B,
    instance_type,
    instance_types,
    offering,
)

ZONE = "topology.kubernetes.io/zone"
INSTANCE_TYPE = "node.kubernetes.io/instance-type"
CAPACITY_TYPE = "karpenter.sh/capacity-type"


def req(key: str, op: str, *values: str, min_values: int | None = None) -> dict[str, Any]:
    r: dict[str, Any] = {"key": key, "operator": op, "values": list(values)}
    if min_values is not None:
        r["minValues"] = min_values
    return r


def required_affinity(*terms: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": t} for t in terms]
            }
        }
    }


def preferred_affinity(*weighted: tuple[int, list[dict[str, Any]]]) -> dict[str, Any]:
    return {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": w, "preference": {"matchExpressions": t}} for w, t in weighted
            ]
        }
    }


def both_affinities(required: dict[str, Any], preferred: dict[str, Any]) -> dict[str, Any]:
    """One nodeAffinity holding the required terms of ``required`` and the preferences of
    ``preferred`` (a plain dict merge would keep only one of them)."""
    return {"nodeAffinity": {**required["nodeAffinity"], **preferred["nodeAffinity"]}}


# --- requirements and labels ---------------------------------------------------------------


def test_pool_label_is_materialised_on_the_nodeclaim() -> None:
    results = solve([pod()], [nodepool(labels={"test-key": "test-value"})])
    assert results.pod_errors == {}
    assert results.new_nodeclaims[0].custom_labels()["test-key"] == "test-value"


def test_pod_selecting_a_different_pool_label_value_is_not_scheduled() -> None:
    p = pod(node_selector={"test-key": "different-value"})
    results = solve([p], [nodepool(labels={"test-key": "test-value"})])
    assert p.key in results.pod_errors
    assert "incompatible requirements" in str(results.pod_errors[p.key])


def test_custom_key_the_pool_does_not_define_is_not_schedulable() -> None:
    p = pod(node_selector={"test-key": "test-value"})
    results = solve([p])
    assert results.new_nodeclaims == []
    assert 'label "test-key" does not have known values' in str(results.pod_errors[p.key])


@pytest.mark.parametrize(
    ("operator", "values", "schedules"),
    [
        ("NotIn", ["x"], True),
        ("DoesNotExist", [], True),
        ("Exists", [], False),
        ("In", ["test-value"], False),
    ],
)
def test_undefined_custom_key_only_allows_negative_operators(
    operator: str, values: list[str], schedules: bool
) -> None:
    p = pod(affinity=required_affinity([req("test-key", operator, *values)]))
    results = solve([p])
    assert (p.key not in results.pod_errors) is schedules


def test_pod_zone_outside_pool_zones_is_not_scheduled() -> None:
    p = pod(node_selector={ZONE: "test-zone-2"})
    results = solve([p], [nodepool(requirements=[req(ZONE, "In", "test-zone-1")])])
    assert p.key in results.pod_errors


def test_pod_zone_inside_pool_zones_pins_the_nodeclaim() -> None:
    p = pod(node_selector={ZONE: "test-zone-2"})
    pool = nodepool(requirements=[req(ZONE, "In", "test-zone-1", "test-zone-2")])
    results = solve([p], [pool])
    assert label_of(results, 0, ZONE) == {"test-zone-2"}


def test_custom_pool_requirement_becomes_a_label() -> None:
    pool = nodepool(requirements=[req("kubernetes.io/test", "In", "test-value")])
    results = solve([pod()], [pool])
    assert results.new_nodeclaims[0].custom_labels()["kubernetes.io/test"] == "test-value"


@pytest.mark.parametrize(
    ("selector", "value"),
    [
        (ZONE, "test-zone-1"),
        (INSTANCE_TYPE, "default-instance-type"),
        ("kubernetes.io/arch", "arm64"),
        ("kubernetes.io/os", "linux"),
        (CAPACITY_TYPE, "spot"),
    ],
)
def test_well_known_selectors_schedule_without_pool_support(selector: str, value: str) -> None:
    results = solve([pod(node_selector={selector: value})])
    assert results.pod_errors == {}
    assert label_of(results, 0, selector) == {value}


@pytest.mark.parametrize(
    ("operator", "value", "expected"),
    [("Gt", "8", "16"), ("Lt", "8", "2"), ("Gte", "16", "16"), ("Lte", "2", "2")],
)
def test_numeric_pool_requirements_pick_matching_types(
    operator: str, value: str, expected: str
) -> None:
    results = solve([pod()], [nodepool(requirements=[req("integer", operator, value)])])
    cheapest = results.new_nodeclaims[0].instance_types_by_price()[0]
    assert cheapest.requirements.get("integer").values == frozenset({expected})


# --- relaxation ----------------------------------------------------------------------------


def test_last_required_term_is_never_relaxed() -> None:
    pool = nodepool(
        requirements=[
            req(ZONE, "In", "test-zone-1"),
            req(INSTANCE_TYPE, "In", "default-instance-type"),
        ]
    )
    p = pod(affinity=required_affinity([req(ZONE, "In", "invalid")]))
    results = solve([p], [pool])
    assert p.key in results.pod_errors


def test_required_or_terms_are_tried_in_order() -> None:
    p = pod(
        affinity=required_affinity(
            [req(ZONE, "In", "invalid")],
            [req(ZONE, "In", "invalid")],
            [req(ZONE, "In", "test-zone-1")],
            [req(ZONE, "In", "test-zone-2")],
        )
    )
    results = solve([p])
    assert label_of(results, 0, ZONE) == {"test-zone-1"}


def test_heaviest_satisfiable_preference_wins() -> None:
    pool = nodepool(requirements=[req(ZONE, "In", "test-zone-1", "test-zone-2")])
    p = pod(
        affinity=preferred_affinity(
            (100, [req(INSTANCE_TYPE, "In", "test-zone-3")]),
            (50, [req(ZONE, "In", "test-zone-2")]),
            (1, [req(ZONE, "In", "test-zone-1")]),
        )
    )
    results = solve([p], [pool])
    assert label_of(results, 0, ZONE) == {"test-zone-2"}


def test_unsatisfiable_preference_is_relaxed() -> None:
    p = pod(
        affinity=both_affinities(
            required_affinity(
                [req(ZONE, "In", "test-zone-1", "test-zone-2", "test-zone-3", "unknown")]
            ),
            preferred_affinity((1, [req(ZONE, "In", "unknown")])),
        )
    )
    results = solve([p])
    assert results.pod_errors == {}


def test_prefer_no_schedule_taint_is_tolerated_after_other_relaxations() -> None:
    taint = {"key": "foo", "value": "bar", "effect": "PreferNoSchedule"}
    p = pod(
        affinity=preferred_affinity(
            (1, [req(ZONE, "In", "invalid")]), (2, [req(ZONE, "In", "invalid-2")])
        )
    )
    results = solve([p], [nodepool(taints=[taint])])
    assert results.pod_errors == {}
    assert results.new_nodeclaims[0].template.taints[0].key == "foo"


def test_plain_pod_prefers_the_untainted_pool() -> None:
    tainted = nodepool(
        "tainted", taints=[{"key": "foo", "value": "bar", "effect": "PreferNoSchedule"}]
    )
    plain = nodepool("plain")
    results = solve([pod()], [tainted, plain])
    assert results.to_json_dict()["nodeClaims"][0]["nodePool"] == "plain"


# --- instance selection and bin-packing ----------------------------------------------------


@pytest.mark.parametrize(("cpu", "memory"), [("512", None), (None, "2Ti")])
def test_pod_larger_than_every_type_is_not_scheduled(cpu: str | None, memory: str | None) -> None:
    p = pod(cpu=cpu, memory=memory)
    results = solve([p])
    assert results.new_nodeclaims == []
    assert "no instance type" in str(results.pod_errors[p.key])


def test_error_for_oversized_pod_names_pool_and_resources() -> None:
    p = pod(cpu="512")
    message = str(solve([p]).pod_errors[p.key])
    assert message.startswith('incompatible with nodepool "default", ')
    assert '"cpu":"512"' in message
    assert "no instance type has enough resources" in message


def test_resources_error_says_what_the_largest_compatible_type_offers() -> None:
    p = pod(cpu="70", memory="10Gi")
    message = str(solve([p]).pod_errors[p.key])
    # arm-instance-type: 16 CPU minus 100m overhead; its 128Gi memory is enough.
    assert message.endswith("(largest compatible instance type offers cpu 15900m)")


def test_unmet_min_values_error_names_the_labels() -> None:
    p = pod()
    pool = nodepool(requirements=[req(INSTANCE_TYPE, "Exists", min_values=11)])
    results = solve([p], [pool], instance_types=instance_types(10))
    message = str(results.pod_errors[p.key])
    assert message.startswith("nodepool requirements filtered out all available instance types")
    assert (
        'nodepool "default": minValues requirement is not met for label(s) '
        "(label(s)=[node.kubernetes.io/instance-type])" in message
    )


def test_small_pods_share_one_small_node() -> None:
    results = solve([pod(memory="10M") for _ in range(5)])
    assert len(results.new_nodeclaims) == 1
    assert instance_type_names(results)[0][0] == "small-instance-type"


def test_pod_overhead_counts_toward_the_instance_choice() -> None:
    results = solve([pod(cpu="1", overhead={"cpu": "2"})])
    assert instance_type_names(results)[0][0] == "default-instance-type"


def test_pods_pack_by_memory() -> None:
    pods = [pod(memory="1.8G", node_selector={"kubernetes.io/arch": "amd64"}) for _ in range(40)]
    results = solve(pods)
    assert len(results.new_nodeclaims) == 20
    assert {names[0] for names in instance_type_names(results)} == {"default-instance-type"}


def test_smaller_pods_fill_gaps_without_new_nodes() -> None:
    big = [pod(memory="1.8G", node_selector={"kubernetes.io/arch": "amd64"}) for _ in range(40)]
    small = [pod(memory="400M", node_selector={"kubernetes.io/arch": "amd64"}) for _ in range(20)]
    results = solve(big + small)
    assert len(results.new_nodeclaims) == 20


def test_pod_count_limits_packing() -> None:
    results = solve([pod(cpu="1m", memory="1m") for _ in range(25)])
    assert len(results.new_nodeclaims) == 5


def test_init_container_request_sizes_the_node() -> None:
    results = solve([pod(cpu="1", init_cpu="2")])
    assert instance_type_names(results)[0][0] == "default-instance-type"


def test_init_container_larger_than_every_type_is_not_scheduled() -> None:
    p = pod(cpu="1", init_memory="1Ti")
    assert p.key in solve([p]).pod_errors


def test_cheapest_type_first_and_all_fitting_types_listed() -> None:
    catalog = [
        instance_type("medium", cpu=2, offerings=[offering("on-demand", "test-zone-1", 3.0)]),
        instance_type("small", cpu=1, offerings=[offering("on-demand", "test-zone-1", 2.0)]),
        instance_type("large", cpu=4, offerings=[offering("on-demand", "test-zone-1", 1.0)]),
    ]
    results = solve([pod()], instance_types=catalog)
    assert instance_type_names(results) == [["large", "small", "medium"]]
    assert results.to_json_dict()["nodeClaims"][0]["instanceTypes"] == ["large", "small", "medium"]


def _gpu_catalog() -> list[Any]:
    catalog = instance_types(5)
    catalog[0] = instance_type(
        "fake-it-0", cpu=1, memory_gi=2, pods=10, extra={RESOURCE_GPU_VENDOR_A: 1}
    )
    catalog[1] = instance_type(
        "fake-it-1", cpu=2, memory_gi=4, pods=20, extra={RESOURCE_GPU_VENDOR_B: 1}
    )
    return catalog


def test_different_extended_resources_need_different_nodes() -> None:
    pods = [pod(extra={RESOURCE_GPU_VENDOR_A: "1"}), pod(extra={RESOURCE_GPU_VENDOR_B: "1"})]
    results = solve(pods, instance_types=_gpu_catalog())
    assert results.pod_errors == {}
    assert sorted(names[0] for names in instance_type_names(results)) == ["fake-it-0", "fake-it-1"]


def test_pod_needing_two_vendors_is_not_scheduled() -> None:
    p = pod(extra={RESOURCE_GPU_VENDOR_A: "1", RESOURCE_GPU_VENDOR_B: "1"})
    assert p.key in solve([p], instance_types=_gpu_catalog()).pod_errors


@pytest.mark.parametrize(
    ("selector", "expected"),
    [({"size": "large"}, "fake-it-4"), ({"size": "small"}, "fake-it-0")],
)
def test_size_label_selects_types(selector: dict[str, str], expected: str) -> None:
    results = solve([pod(node_selector=selector)], instance_types=instance_types(5))
    assert instance_type_names(results)[0][0] == expected


def test_contradictory_size_and_type_is_not_scheduled() -> None:
    p = pod(node_selector={"size": "large", INSTANCE_TYPE: "fake-it-0"})
    assert p.key in solve([p], instance_types=instance_types(5)).pod_errors


def test_price_ordering_only_counts_compatible_offerings() -> None:
    it1 = instance_type(
        "it1",
        offerings=[offering("on-demand", "test-zone-1", 1.0), offering("spot", "test-zone-1", 0.2)],
    )
    it2 = instance_type(
        "it2",
        offerings=[offering("on-demand", "test-zone-1", 1.3), offering("spot", "test-zone-1", 0.1)],
    )
    pool = nodepool(requirements=[req(CAPACITY_TYPE, "In", "on-demand")])
    results = solve([pod()], [pool], instance_types=[it1, it2])
    assert instance_type_names(results)[0][0] == "it1"
    assert label_of(results, 0, CAPACITY_TYPE) == {"on-demand"}


# --- limits --------------------------------------------------------------------------------


def test_pod_within_cpu_limit_schedules_on_a_type_within_it() -> None:
    results = solve([pod(cpu="1.75")], [nodepool(limits={"cpu": "2"})])
    assert results.pod_errors == {}
    assert instance_type_names(results) == [["small-instance-type"]]


def test_pod_beyond_cpu_limit_is_not_scheduled() -> None:
    p = pod(cpu="2.1")
    results = solve([p], [nodepool(limits={"cpu": "2"})])
    assert results.new_nodeclaims == []
    assert "no instance type has enough resources" in str(results.pod_errors[p.key])


def test_pool_whose_every_type_exceeds_the_limit_says_so() -> None:
    p = pod(cpu="100m")
    results = solve([p], [nodepool(limits={"cpu": "1"})])
    assert "all available instance types exceed limits for nodepool" in str(
        results.pod_errors[p.key]
    )


def test_limit_is_charged_pessimistically_per_nodeclaim() -> None:
    anti = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {"matchLabels": {"app": "a"}},
                    "topologyKey": "kubernetes.io/hostname",
                }
            ]
        }
    }
    pods = [pod(cpu="1.5", labels={"app": "a"}, affinity=anti) for _ in range(2)]
    results = solve(pods, [nodepool(limits={"cpu": "3"})])
    assert len(results.new_nodeclaims) == 1
    assert len(results.pod_errors) == 1


# --- daemonsets and host ports -------------------------------------------------------------


def _daemonset(cpu: str, memory: str = "1Gi", host_port: int | None = None) -> DaemonSet:
    container: dict[str, Any] = {
        "name": "d",
        "image": "d",
        "resources": {"requests": {"cpu": cpu, "memory": memory}},
    }
    if host_port:
        container["ports"] = [{"containerPort": host_port, "hostPort": host_port}]
    return DaemonSet.from_dict(
        {
            "metadata": {"name": "ds", "namespace": "kube-system"},
            "spec": {"template": {"spec": {"containers": [container]}}},
        }
    )


def test_daemon_overhead_sizes_the_node() -> None:
    p = pod(cpu="1", memory="1Gi")
    snapshot = ClusterSnapshot(pods=[p], daemonsets=[_daemonset("2", "2Gi")])
    results = solve([p], snapshot=snapshot)
    assert results.pod_errors == {}
    names = instance_type_names(results)[0]
    assert "small-instance-type" not in names
    assert results.new_nodeclaims[0].requests["cpu"] == 3000


def test_huge_daemon_prevents_scheduling() -> None:
    p = pod()
    snapshot = ClusterSnapshot(pods=[p], daemonsets=[_daemonset("10000")])
    assert p.key in solve([p], snapshot=snapshot).pod_errors


def test_pod_host_port_conflicting_with_a_daemon_is_not_scheduled() -> None:
    p = pod(host_port=8080)
    snapshot = ClusterSnapshot(pods=[p], daemonsets=[_daemonset("100m", "10Mi", host_port=8080)])
    results = solve([p], snapshot=snapshot)
    assert results.new_nodeclaims == []
    assert p.key in results.pod_errors


def test_pods_sharing_a_host_port_get_separate_nodes() -> None:
    results = solve([pod(host_port=8080), pod(host_port=8080)])
    assert len(results.new_nodeclaims) == 2


# --- existing nodes ------------------------------------------------------------------------


def _node(name: str, cpu: str = "4", taints: list[dict[str, Any]] | None = None) -> Node:
    return Node.from_dict(
        {
            "metadata": {
                "name": name,
                "labels": {
                    "kubernetes.io/hostname": name,
                    ZONE: "test-zone-1",
                    "kubernetes.io/arch": "amd64",
                    "kubernetes.io/os": "linux",
                },
            },
            "spec": {"taints": taints or [], "providerID": f"fake://{name}"},
            "status": {
                "capacity": {"cpu": cpu, "memory": "4Gi", "pods": "10"},
                "allocatable": {"cpu": cpu, "memory": "4Gi", "pods": "10"},
                "conditions": [{"type": "Ready", "status": "True"}],
            },
        }
    )


def test_pod_lands_on_existing_node_with_room() -> None:
    p = pod(cpu="1")
    snapshot = ClusterSnapshot(nodes=[_node("node-a")], pods=[p])
    out = solve([p], snapshot=snapshot).to_json_dict()
    assert out["nodeClaims"] == []
    assert out["existingNodes"] == [{"name": "node-a", "pods": [p.key]}]


def test_existing_node_with_untolerated_taint_is_skipped() -> None:
    p = pod(cpu="1")
    node = _node("node-a", taints=[{"key": "custom", "value": "x", "effect": "NoSchedule"}])
    out = solve([p], snapshot=ClusterSnapshot(nodes=[node], pods=[p])).to_json_dict()
    assert out["existingNodes"] == []
    assert len(out["nodeClaims"]) == 1


def test_existing_node_without_room_is_skipped() -> None:
    p = pod(cpu="3")
    out = solve(
        [p], snapshot=ClusterSnapshot(nodes=[_node("node-a", cpu="2")], pods=[p])
    ).to_json_dict()
    assert out["existingNodes"] == []
    assert len(out["nodeClaims"]) == 1


# --- minValues -----------------------------------------------------------------------------


def _three_types_pool(min_values: int) -> Any:
    return nodepool(
        requirements=[req(INSTANCE_TYPE, "In", "t1", "t2", "t3", min_values=min_values)]
    )


def _two_types() -> list[Any]:
    return [instance_type("t1"), instance_type("t2", cpu=8, memory_gi=8)]


def test_unmet_min_values_blocks_scheduling_under_strict() -> None:
    p = pod()
    results = solve([p], [_three_types_pool(3)], instance_types=_two_types())
    assert results.new_nodeclaims == []
    assert p.key in results.pod_errors
    assert results.skipped_nodepools


def test_unmet_min_values_is_relaxed_under_best_effort() -> None:
    results = solve(
        [pod()],
        [_three_types_pool(3)],
        instance_types=_two_types(),
        options=SchedulerOptions(min_values_policy="BestEffort"),
    )
    assert results.pod_errors == {}
    nc = results.new_nodeclaims[0]
    assert nc.min_values_relaxed()
    emitted = [
        r
        for r in results.to_json_dict()["nodeClaims"][0]["requirements"]
        if r["key"] == INSTANCE_TYPE
    ]
    assert emitted == [
        {"key": INSTANCE_TYPE, "operator": "In", "values": ["t1", "t2"], "minValues": 2}
    ]


def test_min_values_beyond_catalogue_size_blocks_scheduling() -> None:
    pool = nodepool(requirements=[req(INSTANCE_TYPE, "Exists", min_values=11)])
    p = pod()
    assert p.key in solve([p], [pool], instance_types=instance_types(10)).pod_errors


# --- errors and pools ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "requirements",
    [
        [req(INSTANCE_TYPE, "In", "unknown")],
        [req("kubernetes.io/arch", "In", "amd64"), req("kubernetes.io/arch", "In", "arm64")],
        [req(ZONE, "In", "unknown-zone")],
    ],
)
def test_pool_matching_no_type_reports_filtered_out(requirements: list[dict[str, Any]]) -> None:
    p = pod()
    results = solve([p], [nodepool(requirements=requirements)])
    assert "nodepool requirements filtered out all available instance types" in str(
        results.pod_errors[p.key]
    )


def test_heaviest_pool_wins() -> None:
    pools = [nodepool("none"), nodepool("twenty", weight=20), nodepool("hundred", weight=100)]
    results = solve([pod() for _ in range(3)], pools)
    assert {c["nodePool"] for c in results.to_json_dict()["nodeClaims"]} == {"hundred"}


def test_nodepool_selector_overrides_weight() -> None:
    pools = [nodepool("light", weight=1), nodepool("heavy", weight=100)]
    results = solve([pod(node_selector={"karpenter.sh/nodepool": "light"})], pools)
    assert results.to_json_dict()["nodeClaims"][0]["nodePool"] == "light"


def test_errors_from_every_pool_are_reported() -> None:
    pools = [
        nodepool("a", requirements=[req(ZONE, "In", "test-zone-1")]),
        nodepool("b", requirements=[req(ZONE, "In", "test-zone-2")]),
    ]
    p = pod(node_selector={ZONE: "test-zone-3"})
    message = str(solve([p], pools).pod_errors[p.key])
    assert 'nodepool "a"' in message and 'nodepool "b"' in message


# --- reserved capacity ---------------------------------------------------------------------


def _reserved_catalog() -> list[Any]:
    def offerings(price: float, rid: str) -> list[Any]:
        return [
            offering(
                "reserved", "test-zone-1", price / 10, reservation_id=rid, reservation_capacity=1
            ),
            offering("on-demand", "test-zone-1", price),
        ]

    return [
        instance_type("small", cpu=2, memory_gi=2, offerings=offerings(1.0, "r-small")),
        instance_type("medium", cpu=4, memory_gi=4, offerings=offerings(2.0, "r-medium")),
    ]


def test_reserved_capacity_is_used_first_and_waits_when_exhausted() -> None:
    pods = [pod(cpu="3") for _ in range(3)]
    results = solve(pods, instance_types=_reserved_catalog())
    assert len(results.new_nodeclaims) == 1
    assert label_of(results, 0, CAPACITY_TYPE) == {"reserved"}
    assert len(results.pod_errors) == 2
    assert len(results.reserved_offering_errors()) == 2


def test_without_reserved_capacity_gate_pods_fall_back() -> None:
    pods = [pod(cpu="3") for _ in range(3)]
    results = solve(
        pods, instance_types=_reserved_catalog(), options=SchedulerOptions(reserved_capacity=False)
    )
    assert results.pod_errors == {}
    assert len(results.new_nodeclaims) == 3


# --- output shape --------------------------------------------------------------------------


def test_json_shape_is_exactly_the_documented_one() -> None:
    p = pod(cpu="1")
    out = solve([p]).to_json_dict()
    assert set(out) == {"nodeClaims", "existingNodes", "podErrors"}
    claim = out["nodeClaims"][0]
    assert set(claim) == {"nodePool", "instanceTypes", "requirements", "pods"}
    assert claim["pods"] == [p.key]
    assert all({"key", "operator", "values"} <= set(r) for r in claim["requirements"])
    keys = {r["key"] for r in claim["requirements"]}
    assert "kubernetes.io/hostname" not in keys
    assert "karpenter.sh/registered" not in keys
    assert INSTANCE_TYPE in keys


def test_options_reject_unknown_policies() -> None:
    with pytest.raises(ValueError, match="preference policy"):
        SchedulerOptions(preference_policy="Sometimes")


# --- launched NodeClaims and pool usage ----------------------------------------------------


def _nodeclaim(name: str, pool: str = "default", cpu: str = "4") -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodeClaim",
        "metadata": {
            "name": name,
            "labels": {
                "karpenter.sh/nodepool": pool,
                INSTANCE_TYPE: "default-instance-type",
                ZONE: "test-zone-1",
                "kubernetes.io/arch": "amd64",
                "kubernetes.io/os": "linux",
                CAPACITY_TYPE: "on-demand",
            },
        },
        "spec": {
            "nodeClassRef": {
                "group": "karpenter.test.sh",
                "kind": "TestNodeClass",
                "name": "default",
            },
            "requirements": [],
        },
        "status": {
            "providerID": f"fake://{name}",
            "capacity": {"cpu": cpu, "memory": "4Gi", "pods": "5"},
            "allocatable": {"cpu": cpu, "memory": "4Gi", "pods": "5"},
        },
    }


def test_pod_reuses_a_launched_but_unregistered_nodeclaim() -> None:
    p = pod(cpu="10m")
    snapshot = ClusterSnapshot(nodeclaims=[NodeClaim.from_dict(_nodeclaim("nc-1"))], pods=[p])
    out = solve([p], snapshot=snapshot).to_json_dict()
    assert out["nodeClaims"] == []
    assert out["existingNodes"] == [{"name": "nc-1", "pods": [p.key]}]


def test_existing_pool_capacity_counts_against_limits() -> None:
    p = pod(cpu="100m", node_selector={ZONE: "test-zone-2"})  # not where "big" runs
    snapshot = ClusterSnapshot(
        nodeclaims=[NodeClaim.from_dict(_nodeclaim("big", cpu="100"))], pods=[p]
    )
    results = solve([p], [nodepool(limits={"cpu": "20"})], snapshot=snapshot)
    assert results.new_nodeclaims == []
    assert "exceed limits" in str(results.pod_errors[p.key])


def test_node_limit_of_existing_nodes_blocks_new_nodeclaims() -> None:
    p = pod(cpu="2")  # does not fit the 1-CPU node already in the pool
    snapshot = ClusterSnapshot(
        nodeclaims=[NodeClaim.from_dict(_nodeclaim("nc-1", cpu="1"))], pods=[p]
    )
    results = solve([p], [nodepool(limits={"nodes": "1"})], snapshot=snapshot)
    assert results.new_nodeclaims == []
    assert "node limits have been exhausted" in str(next(iter(results.pod_errors.values())))


def test_daemon_selecting_another_arch_adds_no_overhead() -> None:
    ds = DaemonSet.from_dict(
        {
            "metadata": {"name": "arm-only", "namespace": "kube-system"},
            "spec": {
                "template": {
                    "spec": {
                        "nodeSelector": {"kubernetes.io/arch": "arm64"},
                        "containers": [
                            {"name": "d", "image": "d", "resources": {"requests": {"cpu": "3"}}}
                        ],
                    }
                }
            },
        }
    )
    p = pod(cpu="1", node_selector={"kubernetes.io/arch": "amd64"})
    results = solve([p], snapshot=ClusterSnapshot(pods=[p], daemonsets=[ds]))
    assert results.pod_errors == {}
    assert results.new_nodeclaims[0].requests["cpu"] == 1000


def test_second_pod_joins_the_nodeclaim_planned_for_the_first() -> None:
    results = solve([pod(cpu="1"), pod(cpu="1")])
    assert len(results.new_nodeclaims) == 1
    assert len(results.new_nodeclaims[0].pods) == 2


# --- volumes and ephemeral taints ----------------------------------------------------------


def _pvc_pod(index: int) -> tuple[Any, list[Any]]:
    from karpenter_core.apis.objects import PersistentVolumeClaim, Pod

    claims = [f"claim-{index}-a", f"claim-{index}-b"]
    p = Pod.from_dict(
        {
            "metadata": {"name": f"vol-{index}", "namespace": "default", "uid": f"vol-uid-{index}"},
            "spec": {
                "containers": [
                    {"name": "c", "image": "i", "resources": {"requests": {"cpu": "10m"}}}
                ],
                "volumes": [{"name": c, "persistentVolumeClaim": {"claimName": c}} for c in claims],
            },
            "status": {"phase": "Pending"},
        }
    )
    pvcs = [
        PersistentVolumeClaim.from_dict(
            {
                "metadata": {"name": c, "namespace": "default"},
                "spec": {"storageClassName": "ebs"},
                "status": {"phase": "Pending"},
            }
        )
        for c in claims
    ]
    return p, pvcs


def test_existing_node_volume_limit_sends_extra_pods_to_a_new_node() -> None:
    from karpenter_core.apis.objects import CSINode, StorageClass

    pods, pvcs = [], []
    for i in range(6):
        p, claims = _pvc_pod(i)
        pods.append(p)
        pvcs.extend(claims)
    storage = StorageClass.from_dict(
        {
            "metadata": {"name": "ebs"},
            "provisioner": "ebs.csi.aws.com",
            "volumeBindingMode": "WaitForFirstConsumer",
        }
    )
    csinode = CSINode.from_dict(
        {
            "metadata": {"name": "node-a"},
            "spec": {"drivers": [{"name": "ebs.csi.aws.com", "allocatable": {"count": 10}}]},
        }
    )
    snapshot = ClusterSnapshot(
        nodes=[_node("node-a", cpu="8")],
        pods=pods,
        pvcs=pvcs,
        storage_classes=[storage],
        csinodes=[csinode],
    )
    out = solve(pods, snapshot=snapshot).to_json_dict()
    assert out["podErrors"] == {}
    assert len(out["existingNodes"]) == 1
    assert len(out["existingNodes"][0]["pods"]) == 5
    assert len(out["nodeClaims"]) == 1


def _managed_node(name: str, initialized: bool, taints: list[dict[str, Any]]) -> Node:
    labels = {
        "kubernetes.io/hostname": name,
        ZONE: "test-zone-1",
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/os": "linux",
        "karpenter.sh/nodepool": "default",
        INSTANCE_TYPE: "default-instance-type",
        CAPACITY_TYPE: "on-demand",
        "karpenter.sh/registered": "true",
    }
    if initialized:
        labels["karpenter.sh/initialized"] = "true"
    return Node.from_dict(
        {
            "metadata": {"name": name, "labels": labels},
            "spec": {"taints": taints, "providerID": f"fake://{name}"},
            "status": {
                "capacity": {"cpu": "4", "memory": "4Gi", "pods": "10"},
                "allocatable": {"cpu": "4", "memory": "4Gi", "pods": "10"},
            },
        }
    )


@pytest.mark.parametrize(("initialized", "reused"), [(False, True), (True, False)])
def test_not_ready_taint_only_blocks_initialised_nodes(initialized: bool, reused: bool) -> None:
    name = "node-a"
    taints = [{"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"}]
    claim = _nodeclaim(name)
    claim["status"]["providerID"] = f"fake://{name}"
    p = pod(cpu="10m")
    snapshot = ClusterSnapshot(
        nodes=[_managed_node(name, initialized, taints)],
        nodeclaims=[NodeClaim.from_dict(claim)],
        pods=[p],
    )
    out = solve([p], snapshot=snapshot).to_json_dict()
    assert (out["existingNodes"] == [{"name": name, "pods": [p.key]}]) is reused
    assert (len(out["nodeClaims"]) == 1) is not reused


def test_pod_with_resource_claims_is_reported_not_relaxed() -> None:
    from karpenter_core.apis.objects import Pod

    p = Pod.from_dict(
        {
            "metadata": {"name": "dra", "namespace": "default"},
            "spec": {
                "containers": [{"name": "c", "image": "i"}],
                "resourceClaims": [{"name": "gpu", "resourceClaimName": "gpu-claim"}],
            },
        }
    )
    results = solve([p])
    assert results.new_nodeclaims == []
    assert "Dynamic Resource Allocation" in str(results.pod_errors[p.key])


def test_malformed_node_affinity_is_a_pod_error_not_a_crash() -> None:
    bad = pod(affinity=required_affinity([req("integer", "Gt", "not-a-number")]))
    good = pod()
    results = solve([bad, good])
    assert "invalid pod requirements" in str(results.pod_errors[bad.key])
    assert good.key not in results.pod_errors


def test_malformed_later_preference_is_a_pod_error_not_a_crash() -> None:
    bad = pod(
        affinity=preferred_affinity(
            (10, [req(ZONE, "In", "nowhere")]), (1, [req("integer", "Lt", "x")])
        )
    )
    results = solve([bad])
    assert "invalid pod requirements" in str(results.pod_errors[bad.key])


def test_selector_required_terms_and_preferences_combine() -> None:
    p = pod(
        node_selector={ZONE: "test-zone-3", INSTANCE_TYPE: "arm-instance-type"},
        affinity=both_affinities(
            required_affinity(
                [
                    req(ZONE, "In", "test-zone-1", "test-zone-3"),
                    req(INSTANCE_TYPE, "In", "default-instance-type", "arm-instance-type"),
                ]
            ),
            preferred_affinity(
                (1, [req(ZONE, "NotIn", "unknown"), req(INSTANCE_TYPE, "NotIn", "unknown")])
            ),
        ),
    )
    results = solve([p])
    assert label_of(results, 0, ZONE) == {"test-zone-3"}
    assert instance_type_names(results) == [["arm-instance-type"]]


def test_preference_against_the_only_required_zone_is_relaxed() -> None:
    p = pod(
        affinity=both_affinities(
            required_affinity([req(ZONE, "In", "test-zone-3")]),
            preferred_affinity((1, [req(ZONE, "NotIn", "test-zone-3")])),
        )
    )
    results = solve([p])
    assert label_of(results, 0, ZONE) == {"test-zone-3"}


def test_preferred_zone_not_in_steers_the_choice() -> None:
    p = pod(
        affinity=both_affinities(
            required_affinity(
                [req(ZONE, "In", "test-zone-1", "test-zone-2", "test-zone-3", "unknown")]
            ),
            preferred_affinity((1, [req(ZONE, "NotIn", "test-zone-1", "test-zone-3")])),
        )
    )
    results = solve([p])
    real_zones = {"test-zone-1", "test-zone-2", "test-zone-3"}
    assert label_of(results, 0, ZONE) & real_zones == {"test-zone-2"}


# --- with topology -------------------------------------------------------------------------

_ANY_CAPACITY = [req(CAPACITY_TYPE, "Exists")]


def test_zone_spread_balances_new_nodeclaims() -> None:
    tsc = [
        {
            "maxSkew": 1,
            "topologyKey": ZONE,
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "x"}},
        }
    ]
    pods = [pod(labels={"app": "x"}, tsc=tsc) for _ in range(4)]
    results = solve(pods, [nodepool(requirements=_ANY_CAPACITY)])
    per_zone: dict[str, int] = {}
    for nc in results.new_nodeclaims:
        (zone,) = nc.requirements.get(ZONE).values
        per_zone[zone] = per_zone.get(zone, 0) + len(nc.pods)
    assert sorted(per_zone.values()) == [1, 1, 2]


def test_hostname_self_affinity_fills_one_node_then_fails() -> None:
    term = {"labelSelector": {"matchLabels": {"app": "y"}}, "topologyKey": "kubernetes.io/hostname"}
    aff = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    pods = [pod(labels={"app": "y"}, affinity=aff) for _ in range(10)]
    results = solve(pods, [nodepool(requirements=_ANY_CAPACITY)])
    assert [len(nc.pods) for nc in results.new_nodeclaims] == [5]
    assert len(results.pod_errors) == 5


def test_hostname_anti_affinity_gives_each_pod_its_own_node() -> None:
    term = {"labelSelector": {"matchLabels": {"app": "z"}}, "topologyKey": "kubernetes.io/hostname"}
    aff = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    pods = [pod(labels={"app": "z"}, affinity=aff) for _ in range(4)] + [pod() for _ in range(4)]
    results = solve(pods, [nodepool(requirements=_ANY_CAPACITY)])
    assert results.pod_errors == {}
    anti_per_node = [
        sum(1 for p in nc.pods if p.labels.get("app") == "z") for nc in results.new_nodeclaims
    ]
    assert sorted(anti_per_node) == [1, 1, 1, 1]


def test_truncation_that_breaks_min_values_drops_the_nodeclaim() -> None:
    pool = nodepool(requirements=[req(INSTANCE_TYPE, "In", "t1", "t2", min_values=2)])
    pods = [pod(), pod()]
    results = solve(
        pods, [pool], instance_types=_two_types(), options=SchedulerOptions(max_instance_types=1)
    )
    assert results.new_nodeclaims == []
    message = str(results.pod_errors[pods[0].key])
    assert message.startswith(
        "pod didn\u2019t schedule because NodePool couldn\u2019t meet minValues requirements, "
        "validating minValues, minValues requirement is not met for label(s)"
    )
    assert set(results.pod_errors) == {p.key for p in pods}


def test_best_effort_min_values_pool_is_preferred_by_weight() -> None:
    heavy = nodepool(
        "heavy", requirements=[req(INSTANCE_TYPE, "In", "t1", "t2", "t3", min_values=3)], weight=10
    )
    light = nodepool("light", weight=1)
    results = solve(
        [pod()],
        [heavy, light],
        instance_types=_two_types(),
        options=SchedulerOptions(min_values_policy="BestEffort"),
    )
    assert results.to_json_dict()["nodeClaims"][0]["nodePool"] == "heavy"


def test_nodeclaim_manifest_carries_template_requests_and_owner() -> None:
    pool = nodepool(
        labels={"team": "a"},
        taints=[{"key": "dedicated", "value": "a", "effect": "NoSchedule"}],
    )
    p = pod(cpu="1", tolerations=[{"key": "dedicated", "operator": "Exists"}])
    results = solve([p], [pool])
    manifest = results.new_nodeclaims[0].to_nodeclaim_dict()
    assert manifest["kind"] == "NodeClaim"
    assert manifest["metadata"]["generateName"] == "default-"
    assert manifest["metadata"]["labels"]["team"] == "a"
    assert manifest["metadata"]["labels"]["karpenter.sh/nodepool"] == "default"
    assert manifest["metadata"]["ownerReferences"][0]["name"] == "default"
    assert manifest["spec"]["taints"] == [
        {"key": "dedicated", "value": "a", "effect": "NoSchedule"}
    ]
    assert manifest["spec"]["nodeClassRef"]["name"] == "default"
    assert manifest["spec"]["resources"]["requests"] == {"cpu": "1", "pods": "1"}
    keys = {r["key"] for r in manifest["spec"]["requirements"]}
    assert INSTANCE_TYPE in keys and "karpenter.sh/registered" not in keys


def _override_catalog(available: bool) -> list[Any]:
    from karpenter_core.cloudprovider.types import Offering

    base = offering("on-demand", "test-zone-1", 1.0)
    slots = Offering(
        requirements=offering("spot", "test-zone-1", 0.5).requirements,
        price=0.5,
        available=available,
        capacity_override={"test.com/extended-slots": 4000},
    )
    return [
        instance_type("with-slots", offerings=[base, slots]),
        instance_type("plain", offerings=[offering("on-demand", "test-zone-1", 0.1)]),
    ]


def test_offering_capacity_override_makes_a_type_eligible() -> None:
    p = pod(extra={"test.com/extended-slots": "1"})
    results = solve([p], instance_types=_override_catalog(available=True))
    assert results.pod_errors == {}
    assert instance_type_names(results) == [["with-slots"]]


def test_unavailable_override_offering_gives_no_nodeclaim() -> None:
    p = pod(extra={"test.com/extended-slots": "1"})
    results = solve([p], instance_types=_override_catalog(available=False))
    assert results.new_nodeclaims == []
    assert p.key in results.pod_errors


def _daemon_pod_on(node: str, cpu: str) -> Any:
    from karpenter_core.apis.objects import Pod

    return Pod.from_dict(
        {
            "metadata": {
                "name": "ds-pod",
                "namespace": "kube-system",
                "ownerReferences": [
                    {
                        "apiVersion": "apps/v1",
                        "kind": "DaemonSet",
                        "name": "ds",
                        "uid": "u",
                        "controller": True,
                    }
                ],
            },
            "spec": {
                "nodeName": node,
                "containers": [
                    {"name": "d", "image": "d", "resources": {"requests": {"cpu": cpu}}}
                ],
            },
            "status": {"phase": "Running"},
        }
    )


@pytest.mark.parametrize(
    ("daemon_bound", "pod_cpu", "fits_existing"),
    [(False, "2.9", True), (False, "3.1", False), (True, "2.9", True), (True, "3.1", False)],
)
def test_existing_node_reserves_room_for_daemons_not_yet_running(
    daemon_bound: bool, pod_cpu: str, fits_existing: bool
) -> None:
    p = pod(cpu=pod_cpu)
    pods = [p, _daemon_pod_on("node-a", "1")] if daemon_bound else [p]
    snapshot = ClusterSnapshot(
        nodes=[_node("node-a", cpu="4")], pods=pods, daemonsets=[_daemonset("1", "10Mi")]
    )
    out = solve([p], snapshot=snapshot).to_json_dict()
    assert (out["existingNodes"] == [{"name": "node-a", "pods": [p.key]}]) is fits_existing
