"""More of upstream's scheduling suite (spec scheduling.md §15) ported one behaviour per test:
instance selection details, limits across rounds, conflicting preferences, pool weights and
reserved capacity across NodePools."""

from __future__ import annotations

from typing import Any

import pytest
from scheduler_helpers import fake_labels as fake_labels  # autouse fixture
from scheduler_helpers import instance_type_names, label_of, nodepool, pod, solve
from test_scheduler_scenarios import (
    CAPACITY_TYPE,
    INSTANCE_TYPE,
    ZONE,
    _nodeclaim,
    both_affinities,
    preferred_affinity,
    req,
    required_affinity,
)

from karpenter_core.apis.objects import (
    DaemonSet,
    Node,
    PersistentVolume,
    PersistentVolumeClaim,
    Pod,
    StorageClass,
)
from karpenter_core.apis.v1 import NodeClaim, NodePool
from karpenter_core.state.snapshot import ClusterSnapshot
from karpenter_core.testing.fakecatalog import (
    RESOURCE_GPU_VENDOR_A,
    instance_type,
    instance_types,
    offering,
    price_from_resources,
)

NODEPOOL_KEY = "karpenter.sh/nodepool"
LABEL_HOST = "kubernetes.io/hostname"


# --- instance selection (scenarios 14, 21) ------------------------------------------------------


def test_small_memory_pod_gets_the_small_instance_type() -> None:
    assert instance_type_names(solve([pod(memory="100M")]))[0][0] == "small-instance-type"


def test_pods_of_different_sizes_get_nodes_of_different_types() -> None:
    results = solve([pod(cpu="4.5"), pod(cpu="1")], instance_types=instance_types(5))
    # fake-it-4 (5 CPU) is the only type for 4.5 CPU; the 1-CPU pod no longer fits beside it.
    cheapest = sorted(names[0] for names in instance_type_names(results))
    assert len(results.new_nodeclaims) == 2
    assert cheapest == ["fake-it-1", "fake-it-4"]


def test_exists_on_an_optional_label_selects_the_types_that_have_it() -> None:
    p = pod(affinity=required_affinity([req("special", "Exists")]))
    results = solve([p], instance_types=instance_types(5))
    assert instance_type_names(results) == [["fake-it-4"]]


# --- preferences (scenario 11) ------------------------------------------------------------------


def test_contradictory_preferences_in_one_term_are_relaxed() -> None:
    term = [req(ZONE, "In", "invalid"), req(ZONE, "NotIn", "invalid")]
    results = solve([pod(affinity=preferred_affinity((1, term)))])
    assert results.pod_errors == {}
    assert len(results.new_nodeclaims) == 1


def test_required_zone_and_preferred_not_in_the_same_zone_still_schedules() -> None:
    affinity = both_affinities(
        required_affinity([req(ZONE, "In", "test-zone-3")]),
        preferred_affinity((1, [req(ZONE, "NotIn", "test-zone-3")])),
    )
    results = solve([pod(affinity=affinity)])
    assert results.pod_errors == {}
    assert label_of(results, 0, ZONE) == {"test-zone-3"}


# --- limits across rounds (scenario 23) ---------------------------------------------------------


def test_cpu_limit_used_by_an_earlier_round_blocks_the_next_pod() -> None:
    first = pod(cpu="1.75")
    round_one = solve([first], [nodepool(limits={"cpu": "2"})])
    assert round_one.pod_errors == {}
    assert instance_type_names(round_one) == [["small-instance-type"]]
    # Round two: that NodeClaim launched as a 2-CPU node and the first pod runs on it.
    launched = _nodeclaim("first", cpu="2")
    node = Node.from_dict(
        {
            "metadata": {"name": "first", "labels": launched["metadata"]["labels"]},
            "spec": {"providerID": "fake://first"},
            "status": {
                "capacity": launched["status"]["capacity"],
                "allocatable": launched["status"]["allocatable"],
            },
        }
    )
    running = Pod.from_dict(
        {**first.raw, "spec": {**first.raw["spec"], "nodeName": "first"}, "status": {}}
    )
    second = pod(cpu="1.75")
    snapshot = ClusterSnapshot(
        nodeclaims=[NodeClaim.from_dict(launched)], nodes=[node], pods=[running, second]
    )
    round_two = solve([second], [nodepool(limits={"cpu": "2"})], snapshot=snapshot)
    assert round_two.new_nodeclaims == []
    assert "exceed limits" in str(round_two.pod_errors[second.key])


def test_pods_limit_below_the_gpu_types_pod_capacity_blocks_the_gpu_pod() -> None:
    p = pod(extra={RESOURCE_GPU_VENDOR_A: "1"})
    assert solve([p]).pod_errors == {}  # schedulable without the limit
    results = solve([p], [nodepool(limits={"pods": "1"})])
    assert results.new_nodeclaims == []
    assert p.key in results.pod_errors


# --- pool weights (scenario 46) -----------------------------------------------------------------


def test_weights_order_pools_regardless_of_listing_order() -> None:
    pools = [nodepool("hundred", weight=100), nodepool("none"), nodepool("twenty", weight=20)]
    results = solve([pod() for _ in range(3)], pools)
    assert {c["nodePool"] for c in results.to_json_dict()["nodeClaims"]} == {"hundred"}


def test_pod_the_heavy_pool_cannot_take_falls_to_the_next_weight() -> None:
    pools = [
        nodepool("heavy", weight=100, requirements=[req(ZONE, "In", "test-zone-1")]),
        nodepool("light", weight=10),
    ]
    results = solve([pod(node_selector={ZONE: "test-zone-2"})], pools)
    assert results.to_json_dict()["nodeClaims"][0]["nodePool"] == "light"


# --- reserved capacity across NodePools (scenario 43) -------------------------------------------


def _small(reservation_id: str) -> Any:
    capacity = {"cpu": 2000, "memory": 2 * (1 << 30) * 1000}
    price = price_from_resources(capacity)
    offerings = [
        offering("spot", "test-zone-1", price),
        offering("on-demand", "test-zone-1", price),
        offering(
            "reserved",
            "test-zone-1",
            price / 100_000,
            reservation_id=reservation_id,
            reservation_capacity=1,
        ),
    ]
    return instance_type("small-instance-type", cpu=2, memory_gi=2, offerings=offerings)


def _anti_pods(count: int, **kw: Any) -> list[Any]:
    anti = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "test"}}, "topologyKey": LABEL_HOST}
            ]
        }
    }
    return [
        pod(labels={"app": "test"}, affinity={**anti, **kw.get("affinity", {})})
        for _ in range(count)
    ]


def test_reservation_shared_by_two_pools_is_used_once() -> None:
    shared = _small("r-small")
    anti = _anti_pods(1)[0].affinity["podAntiAffinity"]
    pods = [
        pod(
            labels={"app": "test"},
            affinity={
                "podAntiAffinity": anti,
                **required_affinity(
                    [
                        req(INSTANCE_TYPE, "In", "small-instance-type"),
                        req(NODEPOOL_KEY, "In", f"np-{i + 1}"),
                    ]
                ),
            },
        )
        for i in range(2)
    ]
    pools = [nodepool("np-1"), nodepool("np-2")]
    results = solve(pods, pools, instance_types={"np-1": [shared], "np-2": [shared]})
    assert len(results.new_nodeclaims) == 1
    assert label_of(results, 0, CAPACITY_TYPE) == {"reserved"}
    assert len(results.reserved_offering_errors()) == 1


def test_available_reservation_in_the_heavier_pool_blocks_fallback_to_a_lighter_one() -> None:
    pods = _anti_pods(
        2, affinity=required_affinity([req(INSTANCE_TYPE, "In", "small-instance-type")])
    )
    pools = [nodepool("np-primary", weight=100), nodepool("np-fallback", weight=50)]
    its = {"np-primary": [_small("r-primary")], "np-fallback": [_small("r-fallback")]}
    results = solve(pods, pools, instance_types=its)
    assert [c["nodePool"] for c in results.to_json_dict()["nodeClaims"]] == ["np-primary"]
    assert label_of(results, 0, CAPACITY_TYPE) == {"reserved"}
    assert len(results.reserved_offering_errors()) == 1


def test_reserved_offering_errors_do_not_relax_preferences() -> None:
    affinity = both_affinities(
        required_affinity([req(INSTANCE_TYPE, "In", "small-instance-type")]),
        preferred_affinity((1, [req(NODEPOOL_KEY, "In", "np-1")])),
    )
    pods = _anti_pods(2, affinity=affinity)
    pools = [nodepool("np-1"), nodepool("np-2")]
    its = {"np-1": [_small("r-small")], "np-2": [_small("r-distinct")]}
    results = solve(pods, pools, instance_types=its)
    # Relaxing the preference would have let the second pod take np-2's reservation.
    assert [c["nodePool"] for c in results.to_json_dict()["nodeClaims"]] == ["np-1"]
    assert len(results.reserved_offering_errors()) == 1


# --- NodePool taints (topology_test.go "Taints") --------------------------------------------------

_TAINT = {"key": "test-key", "value": "test-value", "effect": "NoSchedule"}


@pytest.mark.parametrize(
    ("tolerations", "schedules"),
    [
        pytest.param(
            [{"key": "test-key", "operator": "Exists", "effect": "NoSchedule"}], True, id="exists"
        ),
        pytest.param(
            [
                {
                    "key": "test-key",
                    "operator": "Equal",
                    "value": "test-value",
                    "effect": "NoSchedule",
                }
            ],
            True,
            id="equal",
        ),
        pytest.param([{"operator": "Exists", "effect": "NoSchedule"}], True, id="any-key"),
        pytest.param([], False, id="missing"),
        pytest.param([{"key": "invalid", "operator": "Exists"}], False, id="key-mismatch"),
        pytest.param(
            [{"key": "test-key", "operator": "Equal", "effect": "NoSchedule"}],
            False,
            id="value-mismatch",
        ),
    ],
)
def test_pool_taints_need_a_matching_toleration(
    tolerations: list[dict[str, Any]], schedules: bool
) -> None:
    p = pod(tolerations=tolerations)
    results = solve([p], [nodepool(taints=[_TAINT])])
    assert (p.key not in results.pod_errors) is schedules
    if schedules:
        assert results.new_nodeclaims[0].to_nodeclaim_dict()["spec"]["taints"] == [_TAINT]
    else:
        assert "did not tolerate taint" in str(results.pod_errors[p.key])


def test_startup_taints_do_not_need_tolerations() -> None:
    startup = {"key": "ignore-me", "value": "nothing-to-see-here", "effect": "NoSchedule"}
    pool = nodepool()
    raw = pool.to_dict()
    raw["spec"]["template"]["spec"]["startupTaints"] = [startup]
    results = solve([pod()], [NodePool.from_dict(raw)])
    assert results.pod_errors == {}
    manifest = results.new_nodeclaims[0].to_nodeclaim_dict()
    assert manifest["spec"]["startupTaints"] == [startup]
    assert not manifest["spec"].get("taints")


def test_tolerations_do_not_become_taints() -> None:
    p = pod(tolerations=[{"key": "test-key", "operator": "Exists", "effect": "NoExecute"}])
    results = solve([p])
    assert not results.new_nodeclaims[0].to_nodeclaim_dict()["spec"].get("taints")


# --- the 600-type cap (spec §8.9) ---------------------------------------------------------------


def test_nodeclaims_list_at_most_600_types_cheapest_first() -> None:
    catalog = instance_types(700)
    results = solve([pod(cpu="100m")], instance_types=catalog)
    (claim,) = results.to_json_dict()["nodeClaims"]
    assert len(claim["instanceTypes"]) == 600
    # fake-it-i costs more as i grows, so the cap keeps fake-it-0 .. fake-it-599.
    assert claim["instanceTypes"] == [f"fake-it-{i}" for i in range(600)]
    (it_req,) = [r for r in claim["requirements"] if r["key"] == INSTANCE_TYPE]
    assert len(it_req["values"]) == 600


# --- volume topology and host ports through the solve ---------------------------------------------


def _with_claim(p: Pod, claim: str) -> Pod:
    raw = dict(p.raw)
    raw["spec"] = {
        **raw["spec"],
        "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}],
    }
    return Pod.from_dict(raw)


def test_bound_zonal_volume_pins_the_new_nodeclaim_zone() -> None:
    pv = PersistentVolume.from_dict(
        {
            "metadata": {"name": "pv"},
            "spec": {
                "csi": {"driver": "ebs.csi.aws.com", "volumeHandle": "v"},
                "nodeAffinity": {
                    "required": {
                        "nodeSelectorTerms": [
                            {"matchExpressions": [req(ZONE, "In", "test-zone-2")]}
                        ]
                    }
                },
            },
        }
    )
    pvc = PersistentVolumeClaim.from_dict(
        {
            "metadata": {
                "name": "data",
                "namespace": "default",
                "annotations": {"pv.kubernetes.io/bind-completed": "yes"},
            },
            "spec": {"volumeName": "pv"},
            "status": {"phase": "Bound"},
        }
    )
    p = _with_claim(pod(), "data")
    results = solve([p], snapshot=ClusterSnapshot(pods=[p], pvs=[pv], pvcs=[pvc]))
    assert results.pod_errors == {}
    assert label_of(results, 0, ZONE) == {"test-zone-2"}


def test_wait_for_first_consumer_class_limits_zones_to_its_allowed_topologies() -> None:
    sc = StorageClass.from_dict(
        {
            "metadata": {"name": "zonal"},
            "provisioner": "ebs.csi.aws.com",
            "volumeBindingMode": "WaitForFirstConsumer",
            "allowedTopologies": [
                {"matchLabelExpressions": [{"key": ZONE, "values": ["test-zone-3"]}]}
            ],
        }
    )
    pvc = PersistentVolumeClaim.from_dict(
        {
            "metadata": {"name": "data", "namespace": "default"},
            "spec": {"storageClassName": "zonal"},
            "status": {"phase": "Pending"},
        }
    )
    p = _with_claim(pod(), "data")
    results = solve([p], snapshot=ClusterSnapshot(pods=[p], pvcs=[pvc], storage_classes=[sc]))
    assert results.pod_errors == {}
    assert label_of(results, 0, ZONE) == {"test-zone-3"}


def test_host_port_taken_on_an_existing_node_sends_the_pod_to_a_new_node() -> None:
    node = Node.from_dict(
        {
            "metadata": {"name": "n1", "labels": {ZONE: "test-zone-1"}},
            "spec": {"providerID": "fake://n1"},
            "status": {"allocatable": {"cpu": "4", "memory": "4Gi", "pods": "10"}},
        }
    )
    running = pod(host_port=8080)
    raw = {**running.raw, "spec": {**running.raw["spec"], "nodeName": "n1"}}
    running = Pod.from_dict({**raw, "status": {"phase": "Running"}})
    same_port, other_port = pod(host_port=8080), pod(host_port=9090)
    snapshot = ClusterSnapshot(nodes=[node], pods=[running, same_port, other_port])
    out = solve([same_port, other_port], snapshot=snapshot).to_json_dict()
    assert out["existingNodes"] == [{"name": "n1", "pods": [other_port.key]}]
    assert [c["pods"] for c in out["nodeClaims"]] == [[same_port.key]]


# --- more of suite_test.go ----------------------------------------------------------------------


def test_exists_does_not_widen_an_earlier_in_on_the_same_key() -> None:
    p = pod(affinity=required_affinity([req(ZONE, "In", "non-existent-zone"), req(ZONE, "Exists")]))
    assert p.key in solve([p]).pod_errors


def test_zero_request_of_a_resource_no_type_has_still_schedules() -> None:
    results = solve([pod(extra={"foo.com/weird-resources": "0"})])
    assert results.pod_errors == {}


def test_limits_only_pod_lists_every_valid_type_cheapest_first() -> None:
    def it(name: str, cpu: int, price: float) -> Any:
        return instance_type(
            name, cpu=cpu, memory_gi=cpu, offerings=[offering("on-demand", "test-zone-1", price)]
        )

    catalog = [it("medium", 2, 3.0), it("small", 1, 2.0), it("large", 4, 1.0)]
    raw = dict(pod().raw)
    raw["spec"] = {
        "containers": [{"name": "c", "resources": {"limits": {"cpu": "1m", "memory": "1Mi"}}}]
    }
    results = solve([Pod.from_dict(raw)], instance_types=catalog)
    assert instance_type_names(results) == [["large", "small", "medium"]]


def _launched_gpu_node(zeroed: bool) -> tuple[dict[str, Any], Node]:
    """A launched NodeClaim with one GPU and its not-yet-initialised Node; ``zeroed`` is the
    kubelet reporting the extended resource as 0 while its device plugin starts."""
    claim = _nodeclaim("gpu")
    claim["metadata"]["labels"][INSTANCE_TYPE] = "gpu-vendor-instance-type"
    claim["status"]["capacity"][RESOURCE_GPU_VENDOR_A] = "2"
    claim["status"]["allocatable"][RESOURCE_GPU_VENDOR_A] = "2"
    status: dict[str, Any] = {
        "capacity": {"cpu": "4", "memory": "4Gi", "pods": "5"},
        "allocatable": {"cpu": "4", "memory": "4Gi", "pods": "5"},
    }
    if zeroed:
        status["capacity"][RESOURCE_GPU_VENDOR_A] = "0"
        status["allocatable"]["fake.com/vendor-b"] = "0"
    node = Node.from_dict(
        {
            "metadata": {
                "name": "gpu",
                "labels": {**claim["metadata"]["labels"], "karpenter.sh/registered": "true"},
            },
            "spec": {"providerID": "fake://gpu"},
            "status": status,
        }
    )
    return claim, node


def test_kubelet_zeroing_extended_resources_does_not_launch_a_second_node() -> None:
    claim, node = _launched_gpu_node(zeroed=True)
    p = pod(cpu="10m", extra={RESOURCE_GPU_VENDOR_A: "1"})
    snapshot = ClusterSnapshot(nodeclaims=[NodeClaim.from_dict(claim)], nodes=[node], pods=[p])
    out = solve([p], snapshot=snapshot).to_json_dict()
    assert out["nodeClaims"] == []
    assert out["existingNodes"] == [{"name": "gpu", "pods": [p.key]}]


def test_daemon_incompatible_with_an_existing_node_reserves_nothing_there() -> None:
    ds = DaemonSet.from_dict(
        {
            "metadata": {"name": "zone-1-only", "namespace": "kube-system"},
            "spec": {
                "template": {
                    "spec": {
                        "affinity": required_affinity([req(ZONE, "In", "test-zone-1")]),
                        "containers": [
                            {
                                "name": "d",
                                "resources": {"requests": {"cpu": "100", "memory": "100Gi"}},
                            }
                        ],
                    }
                }
            },
        }
    )
    node = Node.from_dict(
        {
            "metadata": {
                "name": "plain",
                "labels": {"kubernetes.io/hostname": "plain", ZONE: "test-zone-2"},
            },
            "spec": {"providerID": "fake://plain"},
            "status": {"allocatable": {"cpu": "1", "memory": "1Gi", "pods": "110"}},
        }
    )
    first, second = pod(cpu="1", memory="1Gi"), pod(cpu="1", memory="1Gi")
    snapshot = ClusterSnapshot(nodes=[node], pods=[first, second], daemonsets=[ds])
    out = solve([first, second], snapshot=snapshot).to_json_dict()
    # One pod fills the node; the other cannot get a new node, where the daemon would sit.
    assert [n["name"] for n in out["existingNodes"]] == ["plain"]
    assert out["nodeClaims"] == []
    assert len(out["podErrors"]) == 1


def _daemon(name: str, key: str) -> DaemonSet:
    return DaemonSet.from_dict(
        {
            "metadata": {"name": name, "namespace": "kube-system"},
            "spec": {
                "template": {
                    "spec": {
                        "affinity": required_affinity([req(key, "In", "true")]),
                        "containers": [{"name": "d", "resources": {"requests": {"cpu": "1"}}}],
                    }
                }
            },
        }
    )


def test_daemons_selecting_registered_or_initialized_nodes_count_but_the_keys_are_not_emitted() -> (
    None
):
    daemons = [
        _daemon("needs-initialized", "karpenter.sh/initialized"),
        _daemon("needs-registered", "karpenter.sh/registered"),
    ]
    p = pod(cpu="2")
    results = solve([p], snapshot=ClusterSnapshot(pods=[p], daemonsets=daemons))
    assert results.pod_errors == {}
    # 2 CPU for the pod and 1 for each daemon: the 4-CPU types (3.9 allocatable) are too small.
    assert "default-instance-type" not in instance_type_names(results)[0]
    manifest = results.new_nodeclaims[0].to_nodeclaim_dict()
    assert manifest["spec"]["resources"]["requests"]["cpu"] == "4"
    keys = {r["key"] for r in manifest["spec"]["requirements"]}
    assert not keys & {"karpenter.sh/registered", "karpenter.sh/initialized"}
    assert not set(manifest["metadata"]["labels"]) & {
        "karpenter.sh/registered",
        "karpenter.sh/initialized",
    }


def _existing_managed(name: str, initialized: bool) -> Node:
    labels = {
        "kubernetes.io/hostname": name,
        ZONE: "test-zone-1",
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
            "spec": {"providerID": f"fake://{name}"},
            "status": {"allocatable": {"cpu": "4", "memory": "4Gi", "pods": "10"}},
        }
    )


def test_initialized_nodes_are_tried_before_uninitialized_ones() -> None:
    names = [f"a-{i}" for i in range(5)] + ["z-ready"]
    nodes = [_existing_managed(n, initialized=n == "z-ready") for n in names]
    claims = [
        NodeClaim.from_dict(_nodeclaim(n)) for n in names
    ]  # Karpenter's own nodes: initialisation matters
    p = pod()
    snapshot = ClusterSnapshot(nodes=nodes, nodeclaims=claims, pods=[p])
    out = solve([p], snapshot=snapshot).to_json_dict()
    assert out["existingNodes"] == [{"name": "z-ready", "pods": [p.key]}]


def test_nodes_without_a_nodeclaim_count_as_initialized_and_go_by_name() -> None:
    nodes = [_existing_managed("b-ready", True), _existing_managed("a-unlabelled", False)]
    p = pod()
    out = solve([p], snapshot=ClusterSnapshot(nodes=nodes, pods=[p])).to_json_dict()
    assert out["existingNodes"] == [{"name": "a-unlabelled", "pods": [p.key]}]


@pytest.mark.parametrize("with_pool", [False, True])
def test_pod_incompatible_with_the_existing_node_needs_a_nodepool(with_pool: bool) -> None:
    node = Node.from_dict(
        {
            "metadata": {"name": "unlabelled", "labels": {"kubernetes.io/hostname": "unlabelled"}},
            "spec": {"providerID": "fake://unlabelled"},
            "status": {"allocatable": {"cpu": "10", "memory": "10Gi", "pods": "110"}},
        }
    )
    p = pod(affinity=required_affinity([req(ZONE, "In", "test-zone-1")]))
    snapshot = ClusterSnapshot(nodes=[node], pods=[p])
    results = solve([p], [nodepool()] if with_pool else [], snapshot=snapshot)
    assert (p.key in results.pod_errors) is not with_pool
    assert len(results.new_nodeclaims) == int(with_pool)


@pytest.mark.parametrize("deleting", [False, True])
def test_terminating_in_flight_nodeclaim_is_not_used(deleting: bool) -> None:
    claim = _nodeclaim("in-flight")
    if deleting:
        claim["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    p = pod(cpu="10m")
    out = solve(
        [p], snapshot=ClusterSnapshot(nodeclaims=[NodeClaim.from_dict(claim)], pods=[p])
    ).to_json_dict()
    assert len(out["nodeClaims"]) == int(deleting)
    assert len(out["existingNodes"]) == int(not deleting)
