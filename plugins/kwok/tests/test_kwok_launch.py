"""KWOK launching: create/delete/get/list on the in-memory API server and a virtual clock,
and the failure injection simulations use."""

from __future__ import annotations

from typing import Any

import pytest
from karpenter_kwok.faults import FaultRule, FaultSettingError, KwokFaults, parse_rules
from karpenter_kwok.provider import ClusterRequiredError, KwokCloudProvider, KwokLaunchError

from karpenter_core.apis import resources as res
from karpenter_core.cloudprovider.errors import (
    InsufficientCapacityError,
    NodeClaimNotFoundError,
    NodeClassNotReadyError,
)
from karpenter_core.hookspecs import ProviderContext
from karpenter_core.kube.client import NotFound
from karpenter_core.runtime.clock import VirtualClock
from karpenter_core.sim.apiserver import InMemoryApiServer

C1 = "c-1x-amd64-linux"
C2 = "c-2x-amd64-linux"
SPOT_PRICE_C1 = 0.019003238553599998


@pytest.fixture
def clock() -> VirtualClock:
    return VirtualClock()


@pytest.fixture
def kube(clock: VirtualClock) -> InMemoryApiServer:
    return InMemoryApiServer(clock)


def make_provider(
    kube: InMemoryApiServer | None, clock: VirtualClock | None, **settings: str
) -> KwokCloudProvider:
    return KwokCloudProvider.from_settings(settings, environ={}, kube=kube, clock=clock)


@pytest.fixture
def provider(kube: InMemoryApiServer, clock: VirtualClock) -> KwokCloudProvider:
    return make_provider(kube, clock)


def nodeclaim(
    name: str = "default-abcde",
    *,
    types: tuple[str, ...] = (C1,),
    zones: tuple[str, ...] = (),
    capacity_types: tuple[str, ...] = (),
    nodeclass: str = "default",
    requests: dict[str, str] | None = None,
) -> dict[str, Any]:
    reqs: list[dict[str, Any]] = [
        {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": list(types)},
        {"key": "karpenter.sh/nodepool", "operator": "In", "values": ["default"]},
    ]
    if zones:
        reqs.append({"key": "topology.kubernetes.io/zone", "operator": "In", "values": list(zones)})
    if capacity_types:
        reqs.append(
            {"key": "karpenter.sh/capacity-type", "operator": "In", "values": list(capacity_types)}
        )
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodeClaim",
        "metadata": {
            "name": name,
            "labels": {"karpenter.sh/nodepool": "default", "team": "a"},
            "annotations": {"note": "x"},
        },
        "spec": {
            "requirements": reqs,
            "nodeClassRef": {
                "group": "karpenter.kwok.sh",
                "kind": "KWOKNodeClass",
                "name": nodeclass,
            },
            "resources": {"requests": requests or {"cpu": "500m", "pods": "3"}},
        },
    }


def nodeclass(kube: InMemoryApiServer, name: str = "default", delay: str | None = None) -> None:
    spec = {"nodeRegistrationDelay": delay} if delay else {}
    kube.create(
        {
            "apiVersion": "karpenter.kwok.sh/v1alpha1",
            "kind": "KWOKNodeClass",
            "metadata": {"name": name},
            "spec": spec,
        }
    )


def nodes(kube: InMemoryApiServer) -> list[dict[str, Any]]:
    return list(kube.list("nodes"))


def launch(provider: KwokCloudProvider, clock: VirtualClock, **kw: Any) -> dict[str, Any]:
    """Create and let the registration timer fire; the Node created."""
    created = provider.create(nodeclaim(**kw))
    clock.advance(0)
    assert provider.kube is not None
    return provider.kube.get("nodes", created.name)


# --- create ------------------------------------------------------------------------------------


def test_create_returns_the_launched_nodeclaim_before_the_node_exists(
    provider: KwokCloudProvider, kube: InMemoryApiServer
) -> None:
    created = provider.create(nodeclaim())
    assert created.provider_id == f"kwok://{created.name}"
    assert created.metadata.labels["node.kubernetes.io/instance-type"] == C1
    assert created.status is not None and created.status.node_name == created.name
    assert nodes(kube) == []


def test_node_appears_when_the_registration_timer_fires(
    provider: KwokCloudProvider, kube: InMemoryApiServer, clock: VirtualClock
) -> None:
    created = provider.create(nodeclaim())
    clock.advance(0)
    assert [n["metadata"]["name"] for n in nodes(kube)] == [created.name]


def test_node_name_embeds_the_nodeclaim_name(
    provider: KwokCloudProvider, clock: VirtualClock
) -> None:
    node = launch(provider, clock)
    assert node["metadata"]["name"].startswith("kwok-default-abcde-")


def test_node_carries_the_upstream_kwok_labels(
    provider: KwokCloudProvider, clock: VirtualClock
) -> None:
    labels = launch(provider, clock)["metadata"]["labels"]
    assert labels["karpenter.sh/nodepool"] == "default"
    assert labels["team"] == "a"
    assert labels["node.kubernetes.io/instance-type"] == C1
    assert labels["kubernetes.io/arch"] == "amd64"
    assert labels["kubernetes.io/os"] == "linux"
    assert labels["karpenter.kwok.sh/instance-family"] == "c"
    assert labels["karpenter.kwok.sh/instance-cpu"] == "1"
    assert labels["karpenter.sh/capacity-type"] == "spot"
    assert labels["topology.kubernetes.io/zone"].startswith("test-zone-")
    assert labels["kubernetes.io/hostname"] == "default-abcde"
    assert labels["kwok.x-k8s.io/node"] == "fake"
    assert labels["kwok-partition"] == "a"
    assert labels["eks-node-viewer/instance-price"] == f"{SPOT_PRICE_C1:f}"


def test_node_is_annotated_as_a_kwok_node(provider: KwokCloudProvider, clock: VirtualClock) -> None:
    annotations = launch(provider, clock)["metadata"]["annotations"]
    assert annotations == {"note": "x", "kwok.x-k8s.io/node": "fake"}


def test_node_has_the_unregistered_taint_and_a_kwok_provider_id(
    provider: KwokCloudProvider, clock: VirtualClock
) -> None:
    node = launch(provider, clock)
    assert node["spec"]["taints"] == [{"key": "karpenter.sh/unregistered", "effect": "NoExecute"}]
    assert node["spec"]["providerID"] == "kwok://" + node["metadata"]["name"]


def test_node_capacity_is_the_requests_and_allocatable_adds_the_instance_type(
    provider: KwokCloudProvider, clock: VirtualClock
) -> None:
    node = launch(provider, clock, requests={"cpu": "500m", "pods": "3", "example.com/gpu": "1"})
    status = node["status"]
    assert status["phase"] == "Pending"
    assert res.parse_resource_list(status["capacity"]) == {
        "cpu": 500,
        "pods": 3000,
        "example.com/gpu": 1000,
    }
    allocatable = res.parse_resource_list(status["allocatable"])
    assert allocatable["cpu"] == 900  # the instance type's, overlaid on the requests
    assert allocatable["pods"] == 16000
    assert allocatable["example.com/gpu"] == 1000


def test_cheapest_type_and_capacity_type_are_chosen(
    provider: KwokCloudProvider, clock: VirtualClock
) -> None:
    labels = launch(provider, clock, types=(C2, C1))["metadata"]["labels"]
    assert labels["node.kubernetes.io/instance-type"] == C1
    assert labels["karpenter.sh/capacity-type"] == "spot"


def test_requirements_restrict_the_offering(
    provider: KwokCloudProvider, clock: VirtualClock
) -> None:
    labels = launch(provider, clock, zones=("test-zone-c",), capacity_types=("on-demand",))[
        "metadata"
    ]["labels"]
    assert labels["topology.kubernetes.io/zone"] == "test-zone-c"
    assert labels["karpenter.sh/capacity-type"] == "on-demand"


def test_same_seed_gives_the_same_nodes(kube: InMemoryApiServer, clock: VirtualClock) -> None:
    def run() -> list[tuple[str, str]]:
        p = make_provider(kube, clock, seed="7")
        out = []
        for i in range(5):
            nc = p.create(nodeclaim(f"nc-{i}"))
            out.append((nc.name, nc.metadata.labels["topology.kubernetes.io/zone"]))
        return out

    assert run() == run()


def test_different_seeds_give_different_names(kube: InMemoryApiServer, clock: VirtualClock) -> None:
    a = make_provider(kube, clock, seed="1").create(nodeclaim()).name
    b = make_provider(kube, clock, seed="2").create(nodeclaim()).name
    assert a != b


def test_unknown_instance_type_is_a_launch_error(provider: KwokCloudProvider) -> None:
    with pytest.raises(KwokLaunchError, match="'x-1x' is not in the kwok catalogue"):
        provider.create(nodeclaim(types=("x-1x",)))


def test_no_compatible_offering_is_insufficient_capacity(provider: KwokCloudProvider) -> None:
    with pytest.raises(InsufficientCapacityError, match="no available offering"):
        provider.create(nodeclaim(zones=("mars-1a",)))


def test_missing_instance_type_requirement_is_a_launch_error(provider: KwokCloudProvider) -> None:
    nc = nodeclaim()
    nc["spec"]["requirements"] = nc["spec"]["requirements"][1:]
    with pytest.raises(KwokLaunchError, match=r"no node\.kubernetes\.io/instance-type requirement"):
        provider.create(nc)


def test_instance_type_requirement_must_list_the_candidates(provider: KwokCloudProvider) -> None:
    nc = nodeclaim()
    nc["spec"]["requirements"][0]["operator"] = "NotIn"
    with pytest.raises(KwokLaunchError, match="must use operator In"):
        provider.create(nc)


# --- KWOKNodeClass -------------------------------------------------------------------------------


def test_no_nodeclass_at_all_launches_with_the_default(
    provider: KwokCloudProvider, kube: InMemoryApiServer, clock: VirtualClock
) -> None:
    provider.create(nodeclaim(nodeclass="absent"))
    clock.advance(0)
    assert len(nodes(kube)) == 1


def test_missing_nodeclass_is_insufficient_capacity_once_any_exists(
    provider: KwokCloudProvider, kube: InMemoryApiServer
) -> None:
    nodeclass(kube, "other")
    with pytest.raises(InsufficientCapacityError, match="'absent' not found"):
        provider.create(nodeclaim(nodeclass="absent"))


def test_not_ready_nodeclass_is_node_class_not_ready(
    provider: KwokCloudProvider, kube: InMemoryApiServer
) -> None:
    nodeclass(kube)
    obj = kube.get(("karpenter.kwok.sh/v1alpha1", "KWOKNodeClass"), "default")
    obj["status"] = {
        "conditions": [
            {"type": "Ready", "status": "False", "reason": "Broken", "message": "no AMI"}
        ]
    }
    kube.update_status(obj)
    with pytest.raises(NodeClassNotReadyError, match="no AMI"):
        provider.create(nodeclaim())


def test_registration_waits_for_the_nodeclass_delay(
    provider: KwokCloudProvider, kube: InMemoryApiServer, clock: VirtualClock
) -> None:
    nodeclass(kube, delay="30s")
    provider.create(nodeclaim())
    clock.advance(29)
    assert nodes(kube) == []
    clock.advance(1)
    assert len(nodes(kube)) == 1


# --- failure injection ---------------------------------------------------------------------------


def test_injected_insufficient_capacity_raises(
    kube: InMemoryApiServer, clock: VirtualClock
) -> None:
    p = make_provider(kube, clock, **{"insufficient-capacity": f'[{{"instanceTypes": ["{C1}"]}}]'})
    with pytest.raises(InsufficientCapacityError, match=r"no spot capacity for c-1x-amd64-linux"):
        p.create(nodeclaim())
    clock.advance(3600)
    assert nodes(kube) == []


def test_injection_only_hits_matching_offerings(
    kube: InMemoryApiServer, clock: VirtualClock
) -> None:
    p = make_provider(
        kube, clock, **{"insufficient-capacity": '[{"capacityTypes": ["on-demand"]}]'}
    )
    created = p.create(nodeclaim(capacity_types=("spot",)))
    assert created.metadata.labels["karpenter.sh/capacity-type"] == "spot"


def test_insufficient_offering_is_reported_unavailable_until_the_ttl(
    kube: InMemoryApiServer, clock: VirtualClock
) -> None:
    p = make_provider(
        kube, clock, **{"insufficient-capacity": '[{"zones": ["test-zone-a"], "attempts": 1}]'}
    )
    with pytest.raises(InsufficientCapacityError):
        p.create(nodeclaim(zones=("test-zone-a",), capacity_types=("spot",)))

    def available() -> bool:
        (it,) = [t for t in p.get_instance_types(None) if t.name == C1]
        (o,) = [o for o in it.offerings if o.zone == "test-zone-a" and o.capacity_type == "spot"]
        return o.available

    assert available() is False
    clock.advance(179)
    assert available() is False
    clock.advance(1)
    assert available() is True


def test_create_avoids_an_offering_that_just_ran_out(
    kube: InMemoryApiServer, clock: VirtualClock
) -> None:
    p = make_provider(
        kube, clock, **{"insufficient-capacity": '[{"capacityTypes": ["spot"], "attempts": 1}]'}
    )
    with pytest.raises(InsufficientCapacityError) as first:
        p.create(nodeclaim(capacity_types=("spot",)))
    zone = str(first.value).rsplit(" in ", 1)[1].split(" ")[0]
    created = p.create(nodeclaim(capacity_types=("spot",)))
    assert created.metadata.labels["topology.kubernetes.io/zone"] != zone


def test_attempts_limit_the_injection(kube: InMemoryApiServer, clock: VirtualClock) -> None:
    p = make_provider(
        kube,
        clock,
        **{"insufficient-capacity": '[{"attempts": 2}]', "unavailable-offerings-ttl": "0s"},
    )
    for _ in range(2):
        with pytest.raises(InsufficientCapacityError):
            p.create(nodeclaim())
    assert p.create(nodeclaim()).provider_id.startswith("kwok://")


def test_time_window_limits_the_injection(kube: InMemoryApiServer, clock: VirtualClock) -> None:
    p = make_provider(
        kube,
        clock,
        **{"insufficient-capacity": "- {after: 1m, until: 2m}", "unavailable-offerings-ttl": "0s"},
    )
    p.create(nodeclaim("before"))
    clock.advance(60)
    with pytest.raises(InsufficientCapacityError):
        p.create(nodeclaim("during"))
    clock.advance(60)
    p.create(nodeclaim("after"))


def test_never_register_creates_the_instance_but_no_node(
    kube: InMemoryApiServer, clock: VirtualClock
) -> None:
    p = make_provider(kube, clock, **{"never-register": "[{}]"})
    created = p.create(nodeclaim())
    assert created.provider_id.startswith("kwok://")
    clock.advance(24 * 3600)
    assert nodes(kube) == []


def test_launch_latency_delays_the_node(kube: InMemoryApiServer, clock: VirtualClock) -> None:
    nodeclass(kube, delay="10s")
    p = make_provider(kube, clock, **{"launch-latency": "45s"})
    p.create(nodeclaim())
    clock.advance(54)
    assert nodes(kube) == []
    clock.advance(1)
    assert len(nodes(kube)) == 1


def test_latency_jitter_stays_within_its_bound(
    kube: InMemoryApiServer, clock: VirtualClock
) -> None:
    p = make_provider(kube, clock, **{"launch-latency": "10s", "launch-latency-jitter": "5s"})
    for i in range(5):
        p.create(nodeclaim(f"nc-{i}"))
    clock.advance(9.999)
    assert nodes(kube) == []
    clock.advance(5.001)
    assert len(nodes(kube)) == 5


def test_faults_can_be_replaced_at_run_time(provider: KwokCloudProvider) -> None:
    provider.set_faults(KwokFaults(insufficient_capacity=[FaultRule(instance_types={C1})]))
    with pytest.raises(InsufficientCapacityError):
        provider.create(nodeclaim())


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"insufficient-capacity": "[{zone: [a]}]"}, r"unknown field\(s\) zone"),
        ({"insufficient-capacity": "[{attempts: -1}]"}, r"attempts: expected a non-negative"),
        ({"never-register": "[{after: soon}]"}, r"after: 'soon' is not a duration"),
        ({"never-register": "[{after: 2m, until: 1m}]"}, r"until \(60.0s\) is before after"),
        ({"launch-latency": "-5s"}, r"launch-latency: must be a non-negative"),
        ({"seed": "abc"}, r"seed: expected an integer"),
        ({"insufficient-capacity": "{"}, r"not valid JSON or YAML"),
        ({"insufficient-capacity": "42"}, r"expected a list of rules"),
    ],
)
def test_bad_settings_name_the_setting(settings: dict[str, str], message: str) -> None:
    with pytest.raises(FaultSettingError, match=message):
        KwokCloudProvider.from_settings(settings, environ={})


def test_a_single_rule_mapping_is_accepted() -> None:
    assert parse_rules('{"zones": "test-zone-a"}', "x") == (FaultRule(zones={"test-zone-a"}),)


# --- delete, get, list ---------------------------------------------------------------------------


def test_delete_deletes_the_nodeclaim_and_reports_the_instance_gone(
    provider: KwokCloudProvider, kube: InMemoryApiServer
) -> None:
    kube.create(nodeclaim())
    with pytest.raises(NodeClaimNotFoundError, match="instance terminated"):
        provider.delete(nodeclaim())
    with pytest.raises(NotFound):
        kube.get("nodeclaims", "default-abcde")


def test_delete_of_a_missing_nodeclaim_is_not_found(provider: KwokCloudProvider) -> None:
    with pytest.raises(NodeClaimNotFoundError, match="not found"):
        provider.delete(nodeclaim())


def test_delete_cancels_a_pending_registration(
    provider: KwokCloudProvider, kube: InMemoryApiServer, clock: VirtualClock
) -> None:
    nodeclass(kube, delay="1m")
    provider.create(nodeclaim())
    assert provider.pending_registrations() == ["default-abcde"]
    with pytest.raises(NodeClaimNotFoundError):
        provider.delete(nodeclaim())
    clock.advance(120)
    assert nodes(kube) == []
    assert provider.pending_registrations() == []


def test_get_returns_the_registered_node(provider: KwokCloudProvider, clock: VirtualClock) -> None:
    node = launch(provider, clock)
    got = provider.get(node["spec"]["providerID"])
    assert got.provider_id == node["spec"]["providerID"]
    assert got.metadata.labels["node.kubernetes.io/instance-type"] == C1
    assert got.status is not None and got.status.allocatable == node["status"]["allocatable"]


def test_get_of_an_unknown_provider_id_is_not_found(provider: KwokCloudProvider) -> None:
    with pytest.raises(NodeClaimNotFoundError):
        provider.get("kwok://nope")


def test_get_of_a_deleting_node_is_not_found(
    provider: KwokCloudProvider, kube: InMemoryApiServer, clock: VirtualClock
) -> None:
    node = launch(provider, clock)
    kube.patch("nodes", node["metadata"]["name"], {"metadata": {"finalizers": ["example.com/x"]}})
    kube.delete("nodes", node["metadata"]["name"])
    with pytest.raises(NodeClaimNotFoundError, match="being deleted"):
        provider.get(node["spec"]["providerID"])


def test_list_returns_only_kwok_nodes(
    provider: KwokCloudProvider, kube: InMemoryApiServer, clock: VirtualClock
) -> None:
    a = launch(provider, clock, name="a")
    b = launch(provider, clock, name="b")
    kube.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "real"},
                 "spec": {"providerID": "aws:///us-east-1a/i-1"}})  # fmt: skip
    listed = sorted(nc.provider_id for nc in provider.list())
    assert listed == sorted([a["spec"]["providerID"], b["spec"]["providerID"]])


# --- without a cluster -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "args"),
    [("create", (nodeclaim(),)), ("delete", (nodeclaim(),)), ("get", ("kwok://n",)), ("list", ())],
)
def test_launch_operations_need_a_cluster_client(method: str, args: tuple[object, ...]) -> None:
    p = make_provider(None, None)
    with pytest.raises(ClusterRequiredError, match=rf"needs a cluster client for {method}\(\)"):
        getattr(p, method)(*args)


def test_without_a_clock_an_immediate_registration_happens_at_once(kube: InMemoryApiServer) -> None:
    p = make_provider(kube, None)
    created = p.create(nodeclaim())
    assert kube.get("nodes", created.name)["spec"]["providerID"] == created.provider_id


def test_factory_context_reaches_the_provider(kube: InMemoryApiServer, clock: VirtualClock) -> None:
    p = KwokCloudProvider.from_context(ProviderContext(settings={}, kube=kube, clock=clock))
    assert p.kube is kube
    assert p.clock is clock


# -- crash safety: a retried launch reuses the instance ----------------------------------


def test_on_a_wall_clock_the_node_exists_when_create_returns() -> None:
    from karpenter_core.runtime.clock import WallClock

    clock = WallClock()
    kube = InMemoryApiServer(clock)
    created = make_provider(kube, clock).create(nodeclaim())  # type: ignore[arg-type]
    assert [n["metadata"]["name"] for n in nodes(kube)] == [created.name]


def test_a_launch_retried_by_a_restarted_operator_reuses_the_instance() -> None:
    from karpenter_core.runtime.clock import WallClock

    clock = WallClock()
    kube = InMemoryApiServer(clock)
    first = make_provider(kube, clock, seed="1").create(nodeclaim())  # type: ignore[arg-type]
    # the operator died before recording the launch; a new process launches again
    again = make_provider(kube, clock, seed="2").create(nodeclaim())  # type: ignore[arg-type]
    assert again.provider_id == first.provider_id
    assert len(nodes(kube)) == 1


def test_a_launch_retried_before_registration_reuses_the_pending_instance(
    provider: KwokCloudProvider, kube: InMemoryApiServer, clock: VirtualClock
) -> None:
    first = provider.create(nodeclaim())
    again = provider.create(nodeclaim())
    assert again.provider_id == first.provider_id
    clock.advance(0)
    assert [n["metadata"]["name"] for n in nodes(kube)] == [first.name]
    # registered: a further retry finds the Node
    assert provider.create(nodeclaim()).provider_id == first.provider_id
    assert len(nodes(kube)) == 1


def test_an_instance_being_deleted_is_not_reused(
    provider: KwokCloudProvider, kube: InMemoryApiServer, clock: VirtualClock
) -> None:
    node = launch(provider, clock)
    kube.patch("nodes", node["metadata"]["name"], {"metadata": {"finalizers": ["test/hold"]}})
    kube.delete("nodes", node["metadata"]["name"])
    fresh = provider.create(nodeclaim())
    assert fresh.name != node["metadata"]["name"]


def test_other_nodeclaims_instances_are_not_reused(
    provider: KwokCloudProvider, clock: VirtualClock
) -> None:
    a = launch(provider, clock, name="default-aaaaa")
    b = provider.create(nodeclaim("default-bbbbb"))
    assert b.name != a["metadata"]["name"]


def test_an_instance_no_nodeclaim_accounts_for_is_terminated_by_deleting_its_node(
    provider: KwokCloudProvider, kube: InMemoryApiServer, clock: VirtualClock
) -> None:
    """Garbage collection deletes a leaked instance as ``list()`` reports it (named after
    its Node): the Node goes, and a real NodeClaim of the same name is never touched."""
    kept = launch(provider, clock, name="default-aaaaa")
    leaked = launch(provider, clock, name="default-bbbbb")
    kube.create(nodeclaim("default-aaaaa"))
    [orphan] = [i for i in provider.list() if i.name == leaked["metadata"]["name"]]
    with pytest.raises(NodeClaimNotFoundError, match="instance terminated"):
        provider.delete(orphan)
    assert [n["metadata"]["name"] for n in nodes(kube)] == [kept["metadata"]["name"]]
    # a NodeClaim's own delete is unchanged: the NodeClaim object, not its Node
    with pytest.raises(NodeClaimNotFoundError, match="instance terminated"):
        provider.delete(nodeclaim("default-aaaaa"))
    assert [n["metadata"]["name"] for n in nodes(kube)] == [kept["metadata"]["name"]]
    assert kube.list("nodeclaims").items == []


# -- an API server that is away -------------------------------------------------------------


class NodesDown:
    """The in-memory server, with Node creates failing while ``down``."""

    def __init__(self, inner: InMemoryApiServer) -> None:
        self.inner = inner
        self.down = True
        self.attempts = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def create(self, obj: dict[str, Any], namespace: str | None = None) -> dict[str, Any]:
        if obj.get("kind") == "Node":
            self.attempts += 1
            if self.down:
                from karpenter_core.kube.client import ApiError

                raise ApiError("cannot reach the API server: connection refused", code=503)
        return self.inner.create(obj, namespace)


def test_on_a_wall_clock_a_node_that_cannot_be_created_fails_the_launch() -> None:
    """Nothing is launched, so nothing can be lost: the core retries the launch."""
    from karpenter_core.runtime.clock import WallClock

    clock = WallClock()
    inner = InMemoryApiServer(clock)
    kube = NodesDown(inner)
    provider = make_provider(kube, clock)  # type: ignore[arg-type]
    with pytest.raises(KwokLaunchError, match="connection refused"):
        provider.create(nodeclaim())
    kube.down = False
    created = provider.create(nodeclaim())
    assert [n["metadata"]["name"] for n in nodes(inner)] == [created.name]


class AnswerLost:
    """The in-memory server, where the first Node create is carried out but its answer
    lost: the API server went away after writing the Node."""

    def __init__(self, inner: InMemoryApiServer) -> None:
        self.inner = inner
        self.lost = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def create(self, obj: dict[str, Any], namespace: str | None = None) -> dict[str, Any]:
        created = self.inner.create(obj, namespace)
        if obj.get("kind") == "Node" and not self.lost:
            from karpenter_core.kube.client import ApiError

            self.lost += 1
            raise ApiError("cannot reach the API server: connection reset by peer", code=503)
        return created


def test_a_node_whose_create_answer_was_lost_is_found_past_a_stale_cache() -> None:
    """The operator reads Nodes from an informer cache whose watch broke when the API
    server went away, so the cache never saw the Node that the lost request created; the
    retried launch must ask the API server, or a second instance is launched and the first
    leaked (a chaos test's kill of the API server mid-provisioning found this)."""
    from karpenter_core.kube.cache import CachedClient, CacheListingClient
    from karpenter_core.kube.informer import SharedInformers
    from karpenter_core.runtime.clock import WallClock

    clock = WallClock()
    inner = InMemoryApiServer(clock)
    server = AnswerLost(inner)
    informers = SharedInformers(server)  # type: ignore[arg-type]
    cached = CachedClient(server, informers, ["nodes"])  # type: ignore[arg-type]
    informers.informer("nodes").pump()  # synced; its watch then delivers nothing more
    # the provider's client as `karpenter serve` wires it: lists from the operator's cache
    listing = CacheListingClient(server)  # type: ignore[arg-type]
    listing.attach(cached)
    provider = make_provider(listing, clock)  # type: ignore[arg-type]
    with pytest.raises(KwokLaunchError, match="connection reset"):
        provider.create(nodeclaim())
    assert cached.list("nodes").items == []  # the cache is stale, the Node exists
    again = provider.create(nodeclaim())
    assert [n["metadata"]["name"] for n in nodes(inner)] == [again.name]


def test_a_delayed_registration_keeps_trying_until_the_api_server_returns(
    kube: InMemoryApiServer, clock: VirtualClock
) -> None:
    """A kubelet never gives up registering: an instance launched during an outage joins
    when the API server is back, however long that takes."""
    down = NodesDown(kube)
    provider = make_provider(down, clock)  # type: ignore[arg-type]
    created = provider.create(nodeclaim())
    clock.advance(600)  # ten minutes of outage
    assert nodes(kube) == []
    assert down.attempts > 50
    down.down = False
    clock.advance(10)
    assert [n["metadata"]["name"] for n in nodes(kube)] == [created.name]


def test_deleting_an_instance_stops_its_registration_retries(
    kube: InMemoryApiServer, clock: VirtualClock
) -> None:
    down = NodesDown(kube)
    provider = make_provider(down, clock)  # type: ignore[arg-type]
    provider.create(nodeclaim())
    clock.advance(30)
    with pytest.raises(NodeClaimNotFoundError):  # upstream's "instance terminated"
        provider.delete(nodeclaim())
    attempts = down.attempts
    down.down = False
    clock.advance(60)
    assert down.attempts == attempts
    assert nodes(kube) == []
