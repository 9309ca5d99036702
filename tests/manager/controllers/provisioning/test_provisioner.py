"""The provisioner end to end on an in-memory API server and a virtual clock: state
informers feed cluster state, triggers open batch windows, the provisioner creates
NodeClaims."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from provisioning_harness import make_env, pod

from karpenter_core import metrics
from karpenter_core.apis.v1 import NodePool
from karpenter_core.controllers.provisioning import limits_exceeded
from karpenter_core.testing import Environment, fakecatalog
from karpenter_core.testing import builders as b


def launch(env: Environment, nc: dict[str, Any], provider_id: str = "fake://node-1") -> None:
    """Pretend the NodeClaim launched: a provider id and capacity make it existing capacity."""
    env.kube.patch(
        "nodeclaims",
        nc["metadata"]["name"],
        {
            "status": {
                "providerID": provider_id,
                "capacity": {"cpu": "16", "memory": "64Gi", "pods": "110"},
                "allocatable": {"cpu": "16", "memory": "64Gi", "pods": "110"},
            }
        },
        subresource="status",
    )


def test_pending_pods_get_one_nodeclaim_when_the_idle_window_closes() -> None:
    env = make_env()
    env.apply(b.nodepool(ready=True))
    for i in range(3):
        env.create(pod(f"p{i}"))
    env.run_for(0.9)
    assert env.nodeclaims() == []
    env.run_for(0.2)
    [nc] = env.nodeclaims()
    assert nc["spec"]["resources"]["requests"]["cpu"] == "3"


def test_pods_arriving_steadily_are_batched_until_the_max_window() -> None:
    env = make_env()
    env.apply(b.nodepool(ready=True))
    for i in range(40):
        env.clock.call_later(0.3 * i, lambda i=i: env.create(pod(f"p{i}", cpu="100m")))
    env.run_for(9.95)
    assert env.nodeclaims() == []
    env.run_for(0.1)
    claims = env.nodeclaims()
    assert len(claims) == 1
    # Arrivals every 0.3 s keep the idle timer from firing; the window closes 10 s after it
    # opened, holding the 34 pods that arrived by then (t = 0 .. 9.9 s).
    assert claims[0]["spec"]["resources"]["requests"]["cpu"] == "3400m"


def test_nodeclaim_has_the_nodepool_template_shape() -> None:
    env = make_env()
    np = env.apply(
        b.nodepool(
            "team",
            requirements=[{"key": "example.com/team", "operator": "In", "values": ["a"]}],
            ready=True,
        )
    )
    env.create(pod("p"))
    env.run_for(1.5)
    [nc] = env.nodeclaims()
    meta = nc["metadata"]
    assert meta["name"].startswith("team-")
    assert meta["generateName"] == "team-"
    assert meta["ownerReferences"] == [
        {
            "apiVersion": "karpenter.sh/v1",
            "kind": "NodePool",
            "name": "team",
            "uid": np["metadata"]["uid"],
            "blockOwnerDeletion": True,
        }
    ]
    assert meta["labels"]["karpenter.sh/nodepool"] == "team"
    assert meta["labels"]["karpenter.kwok.sh/kwoknodeclass"] == "default"
    assert meta["labels"]["example.com/team"] == "a"
    # The hash is computed from the pool, not copied from an annotation it may not have yet.
    assert meta["annotations"]["karpenter.sh/nodepool-hash"] == (NodePool.from_dict(np).hash())
    assert meta["annotations"]["karpenter.sh/nodepool-hash-version"] == "v3"
    keys = {r["key"] for r in nc["spec"]["requirements"]}
    assert {"node.kubernetes.io/instance-type", "karpenter.sh/capacity-type"} <= keys
    assert "karpenter.sh/registered" not in keys
    assert nc["spec"]["nodeClassRef"]["name"] == "default"


def test_created_nodeclaims_are_counted_and_pods_nominated() -> None:
    env = make_env()
    env.apply(b.nodepool(ready=True))
    env.create(pod("p"))
    env.run_for(1.5)
    [nc] = env.nodeclaims()
    labels = {"reason": "provisioned", "nodepool": "default", "min_values_relaxed": "false"}
    assert metrics.sample("karpenter_nodeclaims_created_total", labels) == 1.0
    [event] = env.events("Nominated")
    assert event.message == f"Pod should schedule on: nodeclaim/{nc['metadata']['name']}"
    assert event.regarding["name"] == "p"


def test_no_duplicate_nodeclaims_when_pods_retrigger() -> None:
    env = make_env()
    env.apply(b.nodepool(ready=True))
    env.create(pod("a"))
    env.create(pod("b"))
    env.run_for(1.5)
    [nc] = env.nodeclaims()
    launch(env, nc)
    # The pods stay pending (nothing binds them) and re-trigger every 10 s; the launched
    # NodeClaim is existing capacity, so they are nominated onto it instead.
    env.run_for(60)
    assert [c["metadata"]["name"] for c in env.nodeclaims()] == [nc["metadata"]["name"]]
    passes = metrics.sample(
        "karpenter_scheduler_scheduling_duration_seconds_count", {"controller": "provisioner"}
    )
    assert passes is not None and passes >= 2  # the pods really were scheduled again
    assert env.ctx.cluster.is_node_nominated("fake://node-1")


def test_pods_of_a_deleting_node_are_provisioned_before_it_drains() -> None:
    env = make_env()
    env.apply(b.nodepool(ready=True))
    env.create(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "old", "finalizers": ["example.com/hold"]},
            "spec": {
                "providerID": "fake://old",
                "taints": [{"key": "karpenter.sh/disrupted", "effect": "NoSchedule"}],
            },
            "status": {
                "capacity": {"cpu": "4", "memory": "16Gi", "pods": "110"},
                "allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"},
            },
        }
    )
    env.create(pod("web", cpu="2", unschedulable=False, node_name="old"))
    env.create(
        pod(
            "pinned",
            cpu="1",
            unschedulable=False,
            node_name="old",
        )
        | {
            "metadata": {
                "name": "pinned",
                "namespace": "default",
                "annotations": {"karpenter.sh/do-not-disrupt": "true"},
            }
        }
    )
    env.run_for(1)
    env.kube.delete("nodes", "old")  # held by the finalizer: deleting, still draining
    env.run_for(12)
    [nc] = env.nodeclaims()
    # Only the pod that would move now is provisioned for (do-not-disrupt keeps "pinned").
    assert nc["spec"]["resources"]["requests"]["cpu"] == "2"


def test_pod_that_cannot_fit_gets_failed_scheduling() -> None:
    env = make_env(provider=None)
    env.apply(b.nodepool(ready=True))
    env.create(pod("huge", cpu="1000"))
    env.run_for(1.5)
    assert env.nodeclaims() == []
    [event] = env.events("FailedScheduling")
    assert event.type == "Warning"
    assert event.message.startswith("Failed to schedule pod, ")
    labels = {"controller": "provisioner"}
    assert metrics.sample("karpenter_scheduler_unschedulable_pods_count", labels) == 1.0


def test_without_ready_nodepools_pods_get_a_failed_decision_and_no_nodeclaim(
    caplog: pytest.LogCaptureFixture,
) -> None:
    env = make_env()
    env.create(b.nodepool())  # never marked Ready: no nodepool controllers here
    env.create(pod("p"))
    with caplog.at_level("INFO", logger="karpenter.provisioner"):
        env.run_for(1.5)
    assert env.nodeclaims() == []
    assert env.ctx.cluster.pod_scheduling_decision("default/p") == env.clock.start + timedelta(
        seconds=1
    )
    assert env.ctx.cluster.pod_scheduling_success("default/p") is None
    assert any(r.getMessage() == "no dynamic nodepools found" for r in caplog.records)
    assert env.events("FailedScheduling") == []  # upstream publishes no event here


def test_pod_opting_out_of_karpenter_nodes_is_ignored_silently() -> None:
    env = make_env()
    env.apply(b.nodepool(ready=True))
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {"key": "karpenter.sh/nodepool", "operator": "DoesNotExist"}
                        ]
                    }
                ]
            }
        }
    }
    env.create(pod("byo", affinity=affinity))
    env.run_for(1.5)
    assert env.nodeclaims() == []
    assert env.events("FailedScheduling") == []
    assert metrics.sample("karpenter_scheduler_ignored_pods_count") == 1.0


def test_pod_with_a_restricted_selector_is_rejected_with_an_event() -> None:
    env = make_env()
    env.apply(b.nodepool(ready=True))
    env.create(pod("bad", node_selector={"karpenter.sh/registered": "true"}))
    env.create(pod("good"))
    env.run_for(1.5)
    [nc] = env.nodeclaims()
    assert nc["spec"]["resources"]["requests"]["cpu"] == "1"
    [event] = env.events("FailedScheduling")
    assert event.regarding["name"] == "bad"


def test_pod_kube_scheduler_has_not_given_up_on_does_not_trigger() -> None:
    env = make_env()
    env.apply(b.nodepool(ready=True))
    env.create(pod("fresh", unschedulable=False))
    env.run_for(30)
    assert env.nodeclaims() == []


def test_daemonset_pods_never_trigger() -> None:
    env = make_env()
    env.apply(b.nodepool(ready=True))
    ds_pod = pod("ds-x")
    ds_pod["metadata"]["ownerReferences"] = [
        {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "ds", "uid": "u", "controller": True}
    ]
    env.create(ds_pod)
    env.run_for(30)
    assert env.nodeclaims() == []


def test_nodepool_whose_requirements_match_no_instance_type_gets_an_event() -> None:
    env = make_env()
    env.apply(
        b.nodepool(
            "none",
            requirements=[
                {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["nope"]}
            ],
            ready=True,
        )
    )
    env.apply(b.nodepool("default", ready=True))
    env.create(pod("p"))
    env.run_for(1.5)
    [nc] = env.nodeclaims()
    assert nc["metadata"]["labels"]["karpenter.sh/nodepool"] == "default"
    [event] = env.events("NoCompatibleInstanceTypes")
    assert event.regarding["name"] == "none"
    assert event.message == (
        "NodePool requirements filtered out all compatible available instance types"
    )


def test_a_pool_whose_provider_call_fails_is_skipped() -> None:
    env = make_env()
    env.provider.fail_for.add("heavy")
    env.apply(b.nodepool("heavy", weight=100, ready=True))
    env.apply(b.nodepool("light", ready=True))
    env.create(pod("p"))
    env.run_for(1.5)
    [nc] = env.nodeclaims()
    assert nc["metadata"]["labels"]["karpenter.sh/nodepool"] == "light"


def test_heavier_pool_wins() -> None:
    env = make_env()
    env.apply(b.nodepool("heavy", weight=100, ready=True))
    env.apply(b.nodepool("light", ready=True))
    env.create(pod("p"))
    env.run_for(1.5)
    [nc] = env.nodeclaims()
    assert nc["metadata"]["labels"]["karpenter.sh/nodepool"] == "heavy"


def test_batch_durations_come_from_options() -> None:
    from karpenter_core.runtime.options import Options

    env = make_env(options=Options(batch_idle_duration=3.0, batch_max_duration=5.0))
    env.apply(b.nodepool(ready=True))
    env.create(pod("p"))
    env.run_for(2.9)
    assert env.nodeclaims() == []
    env.run_for(0.2)
    assert len(env.nodeclaims()) == 1


def test_nodeclaim_is_in_cluster_state_before_its_watch_event() -> None:
    env = make_env()
    env.apply(b.nodepool(ready=True))
    env.create(pod("p"))
    env.run_for(1.0)
    [nc] = env.nodeclaims()
    assert env.ctx.cluster.nodeclaim_exists(nc["metadata"]["name"])
    assert env.ctx.cluster.pod_nodeclaim("default/p") == nc["metadata"]["name"]


def test_static_and_deleting_pools_are_not_provisioned_from() -> None:
    env = make_env()
    env.apply(b.nodepool("static", replicas=2, weight=50, ready=True))
    env.apply(b.nodepool("default", ready=True))
    env.create(pod("p"))
    env.run_for(1.5)
    [nc] = env.nodeclaims()
    assert nc["metadata"]["labels"]["karpenter.sh/nodepool"] == "default"


@pytest.mark.parametrize(
    ("limits", "usage", "expected"),
    [
        (None, {"cpu": 5000}, None),
        ({"cpu": "4"}, {"cpu": 4000}, None),
        ({"cpu": "4"}, {"cpu": 4001}, "cpu resource usage of 4001m exceeds limit of 4"),
        ({"memory": "1Gi", "cpu": "10"}, {"memory": 2 * 1024**3 * 1000}, "memory resource usage"),
        ({"nodes": "2"}, {"nodes": 3000}, "nodes resource usage of 3 exceeds limit of 2"),
        ({"cpu": "lots"}, {}, "invalid limits"),
    ],
)
def test_limits_exceeded(limits: Any, usage: dict[str, int], expected: str | None) -> None:
    got = limits_exceeded(limits, usage)
    if expected is None:
        assert got is None
    else:
        assert got is not None and got.startswith(expected)


def test_fake_catalogue_is_what_the_env_serves() -> None:
    # Guards the other tests' arithmetic: the largest fake type has 5 vCPU.
    env = make_env()
    assert max(it.capacity["cpu"] for it in env.provider.its) == 5000
    assert len(fakecatalog.instance_types(5)) == 5


def test_a_ready_but_unreadable_nodepool_is_skipped() -> None:
    env = make_env()
    env.apply(b.nodepool("weird", weight="heavy", ready=True))
    env.apply(b.nodepool("good", ready=True))
    env.create(pod("p"))
    env.run_for(1.5)
    assert env.manager.controller("provisioner").errors == 0
    [nc] = env.nodeclaims()
    assert nc["metadata"]["labels"]["karpenter.sh/nodepool"] == "good"


def test_a_ready_nodepool_with_unreadable_limits_is_skipped() -> None:
    env = make_env()
    env.apply(b.nodepool("weird", weight=10, limits={"cpu": "lots"}, ready=True))
    env.apply(b.nodepool("good", ready=True))
    env.create(pod("p"))
    env.run_for(1.5)
    assert env.manager.controller("provisioner").errors == 0
    [nc] = env.nodeclaims()
    assert nc["metadata"]["labels"]["karpenter.sh/nodepool"] == "good"


def test_provider_calls_are_measured_under_the_provisioner_controller() -> None:
    env = make_env()  # the provider wrapped with metrics, as the operator wraps it
    env.apply(b.nodepool(ready=True))
    env.create(pod("p"))
    env.run_for(1.5)
    labels = {"controller": "provisioner", "method": "GetInstanceTypes", "provider": "fake"}
    assert metrics.sample("karpenter_cloudprovider_duration_seconds_count", labels) == 1.0
    assert (
        metrics.sample(
            "karpenter_scheduler_scheduling_duration_seconds_count", {"controller": "provisioner"}
        )
        == 1.0
    )


def test_preferences_that_can_block_consolidation_are_logged_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    env = make_env()
    env.apply(b.nodepool(ready=True))
    spread = [
        {
            "maxSkew": 1,
            "topologyKey": "topology.kubernetes.io/zone",
            "whenUnsatisfiable": "ScheduleAnyway",
            "labelSelector": {"matchLabels": {"app": "w"}},
        }
    ]
    # Too big for any type: no NodeClaim, so the pod is scheduled again at 10 s and 20 s.
    env.create(pod("w", cpu="1000", topology_spread=spread))
    with caplog.at_level("INFO", logger="karpenter.provisioner"):
        env.run_for(25)
    passes = metrics.sample(
        "karpenter_scheduler_scheduling_duration_seconds_count", {"controller": "provisioner"}
    )
    assert passes == 3
    warnings = [r for r in caplog.records if "TopologySpreadConstraint" in r.getMessage()]
    assert len(warnings) == 1
    assert "default/w" in warnings[0].getMessage()


def _three_claims(env: Environment) -> tuple[Any, list[Any]]:
    """A provisioner and three planned NodeClaims (pods sharing a host port cannot share a node)."""
    from karpenter_core.controllers.provisioning import provisioner_of

    env.apply(b.nodepool(ready=True))
    port = [{"name": "c", "image": "i", "ports": [{"containerPort": 80, "hostPort": 80}]}]
    for name in ("a", "b", "c"):
        env.create(pod(name, spec={"containers": port}))
    env.settle()
    prov = provisioner_of(env.ctx)
    results = prov.schedule()
    assert results is not None and len(results.new_nodeclaims) == 3
    return prov, list(results.new_nodeclaims)


def test_on_a_wall_clock_a_batchs_nodeclaims_are_created_concurrently() -> None:
    import threading

    env = make_env()
    prov, claims = _three_claims(env)
    prov.parallel_creates = True
    create = env.kube.create
    lock = threading.Lock()
    in_flight = [0, 0]  # now, peak
    second = threading.Event()

    def slow_create(obj: Any, namespace: str | None = None) -> Any:
        if obj.get("kind") != "NodeClaim":
            return create(obj, namespace)
        with lock:
            in_flight[0] += 1
            in_flight[1] = max(in_flight[1], in_flight[0])
            if in_flight[0] >= 2:
                second.set()
        second.wait(10)  # sequential creates never get a second one in flight
        try:
            return create(obj, namespace)
        finally:
            with lock:
                in_flight[0] -= 1

    env.kube.create = slow_create  # type: ignore[method-assign]
    names = prov.create_nodeclaims(claims)
    assert in_flight[1] >= 2
    assert len(set(names)) == 3
    assert sorted(names) == sorted(c["metadata"]["name"] for c in env.nodeclaims())


def test_concurrent_creates_report_every_failure_and_keep_the_rest() -> None:
    from karpenter_core.controllers.provisioning import ProvisioningError

    env = make_env()
    prov, claims = _three_claims(env)
    prov.parallel_creates = True
    claims[1].nodepool_name = "gone"
    with pytest.raises(ProvisioningError, match="nodepool 'gone'"):
        prov.create_nodeclaims(claims)
    assert len(env.nodeclaims()) == 2


def test_creates_failing_only_because_the_api_server_is_down_are_one_api_error() -> None:
    from karpenter_core.kube.client import ApiError

    env = make_env()
    prov, claims = _three_claims(env)

    def down(obj: Any, namespace: Any = None) -> Any:
        raise ApiError("cannot reach the API server: connection refused", code=503)

    env.kube.create = down  # type: ignore[method-assign]
    with pytest.raises(ApiError) as err:
        prov.create_nodeclaims(claims)
    assert err.value.code == 503
    assert str(err.value).count("connection refused") == 1
    assert "3 of 3 node claims could not be created" in str(err.value)


def test_a_create_whose_answer_was_lost_holds_provisioning_until_state_has_it() -> None:
    """The API server wrote the NodeClaim but the answer never came: the pods are not
    provisioned again until cluster state has every NodeClaim the API server lists."""
    from karpenter_core.kube.client import ApiError

    env = make_env()
    prov, claims = _three_claims(env)
    assert env.ctx.cluster.synced()
    real_create = env.kube.create

    def answer_lost(obj: Any, namespace: Any = None) -> Any:
        real_create(obj, namespace)
        raise ApiError("cannot reach the API server: connection reset by peer", code=503)

    env.kube.create = answer_lost  # type: ignore[method-assign]
    with pytest.raises(ApiError):
        prov.create_nodeclaims(claims[:1])
    env.kube.create = real_create  # type: ignore[method-assign]
    [created] = env.nodeclaims()
    assert not env.ctx.cluster.nodeclaim_exists(created["metadata"]["name"])
    assert not env.ctx.cluster.synced()  # the watch has not told state of it yet
    env.settle()
    assert env.ctx.cluster.nodeclaim_exists(created["metadata"]["name"])
    launch(env, created)
    env.settle()
    assert env.ctx.cluster.synced()
