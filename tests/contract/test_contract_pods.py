"""KubeClient contract: pods — binding, graceful deletion, eviction and PodDisruptionBudgets."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from contract_builders import pdb, pod, replicaset, running_pod
from contract_support import DISRUPTION_CONTROLLER, Backend

from karpenter_core.kube.client import (
    ApiError,
    Conflict,
    Invalid,
    KubeClient,
    NotFound,
    TooManyRequests,
)


def _exists(client: KubeClient, name: str, namespace: str) -> bool:
    try:
        client.get("pods", name, namespace)
    except NotFound:
        return False
    return True


def _terminating(client: KubeClient, name: str, namespace: str) -> bool:
    return bool(client.get("pods", name, namespace)["metadata"].get("deletionTimestamp"))


# ---------------------------------------------------------------- create and bind


def test_a_new_pod_is_pending(kube_client: KubeClient, namespace: str) -> None:
    created = kube_client.create(pod("p", namespace))
    assert created["status"]["phase"] == "Pending"


def test_bind_sets_the_node_name_and_pod_scheduled(
    kube_client: KubeClient, namespace: str, unique: Callable[[str], str]
) -> None:
    kube_client.create(pod("p", namespace))
    node = unique("node")
    kube_client.bind("p", namespace, node)
    got = kube_client.get("pods", "p", namespace)
    assert got["spec"]["nodeName"] == node
    scheduled = [c for c in got["status"].get("conditions", []) if c["type"] == "PodScheduled"]
    assert [c["status"] for c in scheduled] == ["True"]


def test_binding_a_bound_pod_conflicts(
    kube_client: KubeClient, namespace: str, unique: Callable[[str], str]
) -> None:
    kube_client.create(pod("p", namespace))
    first = unique("node")
    kube_client.bind("p", namespace, first)
    with pytest.raises(Conflict):
        kube_client.bind("p", namespace, unique("node"))
    assert kube_client.get("pods", "p", namespace)["spec"]["nodeName"] == first


def test_binding_a_missing_pod_is_not_found(
    kube_client: KubeClient, namespace: str, unique: Callable[[str], str]
) -> None:
    with pytest.raises(NotFound):
        kube_client.bind("nope", namespace, unique("node"))


def test_update_cannot_change_a_pods_node_name(
    kube_client: KubeClient, namespace: str, unique: Callable[[str], str]
) -> None:
    created = kube_client.create(pod("p", namespace))
    created["spec"]["nodeName"] = unique("node")
    with pytest.raises(Invalid):
        kube_client.update(created)


def test_field_selector_on_node_name(
    kube_client: KubeClient, namespace: str, unique: Callable[[str], str]
) -> None:
    node_a, node_b = unique("node"), unique("node")
    kube_client.create(pod("a1", namespace, node_name=node_a))
    kube_client.create(pod("a2", namespace, node_name=node_a))
    kube_client.create(pod("b1", namespace, node_name=node_b))
    kube_client.create(pod("pending", namespace))

    def names(selector: str) -> list[str]:
        return sorted(
            o["metadata"]["name"]
            for o in kube_client.list("pods", namespace, field_selector=selector)
        )

    assert names(f"spec.nodeName={node_a}") == ["a1", "a2"]
    assert names("spec.nodeName=") == ["pending"]
    assert names(f"spec.nodeName!={node_a}") == ["b1", "pending"]
    assert names(f"spec.nodeName={node_b},metadata.name=b1") == ["b1"]


def test_field_selector_on_phase(
    kube_client: KubeClient, namespace: str, unique: Callable[[str], str]
) -> None:
    running_pod(kube_client, "run", namespace, unique("node"))
    kube_client.create(pod("wait", namespace))
    items = kube_client.list("pods", namespace, field_selector="status.phase=Running").items
    assert [o["metadata"]["name"] for o in items] == ["run"]


# ---------------------------------------------------------------- deletion


def test_deleting_an_unbound_pod_removes_it_at_once(
    kube_client: KubeClient, namespace: str
) -> None:
    kube_client.create(pod("p", namespace))
    kube_client.delete("pods", "p", namespace)
    assert not _exists(kube_client, "p", namespace)


def test_deleting_a_bound_pod_is_graceful(
    kube_client: KubeClient, namespace: str, unique: Callable[[str], str]
) -> None:
    running_pod(kube_client, "p", namespace, unique("node"))
    kube_client.delete("pods", "p", namespace)
    got = kube_client.get("pods", "p", namespace)
    assert got["metadata"]["deletionTimestamp"]
    assert got["metadata"]["deletionGracePeriodSeconds"] == 30


def test_deleting_a_bound_pod_with_zero_grace_removes_it(
    kube_client: KubeClient, namespace: str, unique: Callable[[str], str]
) -> None:
    running_pod(kube_client, "p", namespace, unique("node"))
    kube_client.delete("pods", "p", namespace)
    kube_client.delete("pods", "p", namespace, grace_period_seconds=0)
    assert not _exists(kube_client, "p", namespace)


# ---------------------------------------------------------------- eviction


def test_evicting_a_pending_pod_deletes_it(kube_client: KubeClient, namespace: str) -> None:
    kube_client.create(pod("p", namespace, labels={"app": "x"}))
    kube_client.evict("p", namespace)
    assert not _exists(kube_client, "p", namespace)


def test_evicting_a_running_pod_without_a_budget_starts_its_termination(
    kube_client: KubeClient, namespace: str, unique: Callable[[str], str]
) -> None:
    running_pod(kube_client, "p", namespace, unique("node"), labels={"app": "x"})
    kube_client.evict("p", namespace)
    assert _terminating(kube_client, "p", namespace)


def test_evicting_a_missing_pod_is_not_found(kube_client: KubeClient, namespace: str) -> None:
    with pytest.raises(NotFound):
        kube_client.evict("nope", namespace)


def _two_ready_pods(client: KubeClient, namespace: str, node: str) -> None:
    """Two ready pods of a two-replica ReplicaSet (a real disruption controller needs the
    pods' controller to scale percentages and maxUnavailable)."""
    owner = client.create(replicaset("web", namespace, {"app": "web"}, replicas=2))
    running_pod(client, "a", namespace, node, labels={"app": "web"}, owner=owner)
    running_pod(client, "b", namespace, node, labels={"app": "web"}, owner=owner)


def _wait_budget(
    backend: Backend, namespace: str, name: str, allowed: int, *, healthy: int | None = None
) -> None:
    """Wait until the budget's status says ``allowed`` (and ``healthy`` current, when given:
    a real disruption controller may first count before it has seen a pod become ready)."""

    def check() -> None:
        status = backend.client.get("poddisruptionbudgets", name, namespace).get("status") or {}
        assert status.get("disruptionsAllowed") == allowed, status
        if healthy is not None:
            assert status.get("currentHealthy") == healthy, status

    backend.eventually(check)


def test_eviction_blocked_by_min_available_is_too_many_requests(
    backend: Backend, namespace: str, unique: Callable[[str], str]
) -> None:
    backend.require(DISRUPTION_CONTROLLER)
    client = backend.client
    _two_ready_pods(client, namespace, unique("node"))
    client.create(pdb("web", namespace, {"app": "web"}, min_available=2))
    _wait_budget(backend, namespace, "web", 0)
    with pytest.raises(TooManyRequests) as err:
        client.evict("a", namespace)
    assert err.value.code == 429
    assert not _terminating(client, "a", namespace)


def test_eviction_allowed_by_min_available_then_budget_is_spent(
    backend: Backend, namespace: str, unique: Callable[[str], str]
) -> None:
    backend.require(DISRUPTION_CONTROLLER)
    client = backend.client
    _two_ready_pods(client, namespace, unique("node"))
    client.create(pdb("web", namespace, {"app": "web"}, min_available=1))
    _wait_budget(backend, namespace, "web", 1)
    client.evict("a", namespace)
    assert _terminating(client, "a", namespace)
    _wait_budget(backend, namespace, "web", 0)
    with pytest.raises(TooManyRequests):
        client.evict("b", namespace)


@pytest.mark.parametrize(
    ("budget", "allowed"),
    [
        ({"max_unavailable": 1}, 1),
        ({"max_unavailable": 0}, 0),
        ({"max_unavailable": "50%"}, 1),
        ({"min_available": "50%"}, 1),
        ({"min_available": "100%"}, 0),
        ({"min_available": 0}, 2),
    ],
)
def test_budget_forms_allow_the_expected_disruptions(
    backend: Backend,
    namespace: str,
    unique: Callable[[str], str],
    budget: dict[str, int | str],
    allowed: int,
) -> None:
    backend.require(DISRUPTION_CONTROLLER)
    client = backend.client
    _two_ready_pods(client, namespace, unique("node"))
    client.create(pdb("web", namespace, {"app": "web"}, **budget))  # type: ignore[arg-type]
    _wait_budget(backend, namespace, "web", allowed)
    if allowed:
        client.evict("a", namespace)
        assert _terminating(client, "a", namespace)
    else:
        with pytest.raises(TooManyRequests):
            client.evict("a", namespace)


def test_budget_only_counts_pods_its_selector_matches(
    backend: Backend, namespace: str, unique: Callable[[str], str]
) -> None:
    backend.require(DISRUPTION_CONTROLLER)
    client = backend.client
    node = unique("node")
    running_pod(client, "web", namespace, node, labels={"app": "web"})
    running_pod(client, "other", namespace, node, labels={"app": "other"})
    client.create(pdb("web", namespace, {"app": "web"}, min_available=1))
    _wait_budget(backend, namespace, "web", 0)
    with pytest.raises(TooManyRequests):
        client.evict("web", namespace)
    client.evict("other", namespace)
    assert _terminating(client, "other", namespace)


def test_unready_pod_is_not_evictable_while_the_budget_is_unmet(
    backend: Backend, namespace: str, unique: Callable[[str], str]
) -> None:
    backend.require(DISRUPTION_CONTROLLER)
    client = backend.client
    node = unique("node")
    running_pod(client, "ready", namespace, node, labels={"app": "web"})
    running_pod(client, "sick", namespace, node, labels={"app": "web"}, ready=False)
    client.create(pdb("web", namespace, {"app": "web"}, min_available=2))
    _wait_budget(backend, namespace, "web", 0)
    with pytest.raises(TooManyRequests):
        client.evict("sick", namespace)


def test_unready_pod_is_evictable_while_the_budget_is_met(
    backend: Backend, namespace: str, unique: Callable[[str], str]
) -> None:
    backend.require(DISRUPTION_CONTROLLER)
    client = backend.client
    node = unique("node")
    running_pod(client, "ready", namespace, node, labels={"app": "web"})
    running_pod(client, "sick", namespace, node, labels={"app": "web"}, ready=False)
    client.create(pdb("web", namespace, {"app": "web"}, min_available=1))
    _wait_budget(backend, namespace, "web", 0, healthy=1)
    client.evict("sick", namespace)
    assert _terminating(client, "sick", namespace)


def test_always_allow_lets_an_unready_pod_go_despite_the_budget(
    backend: Backend, namespace: str, unique: Callable[[str], str]
) -> None:
    backend.require(DISRUPTION_CONTROLLER)
    client = backend.client
    node = unique("node")
    running_pod(client, "ready", namespace, node, labels={"app": "web"})
    running_pod(client, "sick", namespace, node, labels={"app": "web"}, ready=False)
    client.create(
        pdb(
            "web",
            namespace,
            {"app": "web"},
            min_available=2,
            unhealthy_pod_eviction_policy="AlwaysAllow",
        )
    )
    _wait_budget(backend, namespace, "web", 0)
    client.evict("sick", namespace)
    assert _terminating(client, "sick", namespace)


def test_a_pod_under_two_budgets_cannot_be_evicted(
    backend: Backend, namespace: str, unique: Callable[[str], str]
) -> None:
    backend.require(DISRUPTION_CONTROLLER)
    client = backend.client
    _two_ready_pods(client, namespace, unique("node"))
    client.create(pdb("one", namespace, {"app": "web"}, max_unavailable=1))
    client.create(pdb("two", namespace, {"app": "web"}, max_unavailable=1))
    _wait_budget(backend, namespace, "one", 1)
    _wait_budget(backend, namespace, "two", 1)
    with pytest.raises(ApiError) as err:
        client.evict("a", namespace)
    assert err.value.code == 500


def test_budget_status_reports_healthy_and_desired_pods(
    backend: Backend, namespace: str, unique: Callable[[str], str]
) -> None:
    backend.require(DISRUPTION_CONTROLLER)
    client = backend.client
    _two_ready_pods(client, namespace, unique("node"))
    client.create(pdb("web", namespace, {"app": "web"}, min_available=1))

    def check() -> None:
        status = client.get("poddisruptionbudgets", "web", namespace).get("status") or {}
        assert (
            status.get("currentHealthy"),
            status.get("desiredHealthy"),
            status.get("expectedPods"),
        ) == (
            2,
            1,
            2,
        )

    backend.eventually(check)


def test_a_budget_with_an_empty_selector_covers_every_pod_in_its_namespace(
    backend: Backend, namespace: str, unique: Callable[[str], str]
) -> None:
    # policy/v1: an empty selector selects all pods of the namespace (only a missing one
    # selects none), for the budget's status and for the eviction subresource alike.
    backend.require(DISRUPTION_CONTROLLER)
    client = backend.client
    _two_ready_pods(client, namespace, unique("node"))
    client.create(pdb("all", namespace, {}, min_available=2))
    _wait_budget(backend, namespace, "all", 0)
    with pytest.raises(TooManyRequests):
        client.evict("a", namespace)
    assert not _terminating(client, "a", namespace)


def test_unready_pods_under_a_zero_budget_need_a_healthy_pod_to_spare(
    backend: Backend, namespace: str, unique: Callable[[str], str]
) -> None:
    backend.require(DISRUPTION_CONTROLLER)
    client = backend.client
    node = unique("node")
    running_pod(client, "sick", namespace, node, labels={"app": "web"}, ready=False)
    client.create(pdb("web", namespace, {"app": "web"}, min_available=0))
    _wait_budget(backend, namespace, "web", 0)
    with pytest.raises(TooManyRequests):
        client.evict("sick", namespace)


def test_binding_a_gated_pod_conflicts(
    kube_client: KubeClient, namespace: str, unique: Callable[[str], str]
) -> None:
    gated = pod("p", namespace)
    gated["spec"]["schedulingGates"] = [{"name": "example.com/wait"}]
    kube_client.create(gated)
    with pytest.raises(Conflict):
        kube_client.bind("p", namespace, unique("node"))


def test_binding_a_deleting_pod_conflicts(
    kube_client: KubeClient, namespace: str, unique: Callable[[str], str]
) -> None:
    kube_client.create(pod("p", namespace, finalizers=["example.com/hold"]))
    kube_client.delete("pods", "p", namespace)
    with pytest.raises(Conflict):
        kube_client.bind("p", namespace, unique("node"))
    held = kube_client.get("pods", "p", namespace)
    held["metadata"]["finalizers"] = []
    kube_client.update(held)
