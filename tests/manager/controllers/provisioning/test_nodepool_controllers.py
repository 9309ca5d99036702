"""NodePool controllers (validation, readiness, counter, hash, registration health) on the
in-memory API server, together with the provisioner where it matters."""

from __future__ import annotations

from typing import Any

from provisioning_harness import make_env, pod

from karpenter_core.controllers.nodeclaim.nodepoolhealth import Status, shared
from karpenter_core.testing import Environment
from karpenter_core.testing import builders as b


def env_with_nodepools(**kwargs: Any) -> Environment:
    return make_env(packages=["nodepool"], **kwargs)


def condition(obj: dict[str, Any], type_: str) -> dict[str, Any] | None:
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c["type"] == type_:
            return dict(c)
    return None


def get_pool(env: Environment, name: str = "default") -> dict[str, Any]:
    return env.kube.get("nodepools", name)


def kwok_nodeclass(name: str, ready: str | None = "True", reason: str = "Ready") -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": "karpenter.kwok.sh/v1alpha1",
        "kind": "KWOKNodeClass",
        "metadata": {"name": name},
    }
    if ready is not None:
        obj["status"] = {
            "conditions": [
                {
                    "type": "Ready",
                    "status": ready,
                    "reason": reason,
                    "message": f"{reason} message",
                    "lastTransitionTime": "2026-01-01T00:00:00Z",
                }
            ]
        }
    return obj


INVALID_REQUIREMENT = [{"key": "karpenter.sh/nodepool", "operator": "In", "values": ["x"]}]


# ------------------------------------------------------------------ validation


def test_valid_nodepool_becomes_ready_and_provisions() -> None:
    env = env_with_nodepools()
    env.create(b.nodepool())
    env.create(pod("p"))
    env.run_for(1.5)
    np = get_pool(env)
    assert condition(np, "ValidationSucceeded")["status"] == "True"  # type: ignore[index]
    assert condition(np, "Ready")["status"] == "True"  # type: ignore[index]
    assert len(env.nodeclaims()) == 1


def test_invalid_nodepool_gets_the_condition_and_an_event_while_a_valid_one_provisions() -> None:
    env = env_with_nodepools()
    env.create(b.nodepool("bad", requirements=INVALID_REQUIREMENT, weight=100))
    env.create(b.nodepool("good"))
    env.create(pod("p"))
    env.run_for(1.5)
    bad = get_pool(env, "bad")
    validation = condition(bad, "ValidationSucceeded")
    assert validation is not None
    assert (validation["status"], validation["reason"]) == ("False", "NodePoolValidationFailed")
    assert "karpenter.sh/nodepool" in validation["message"]
    ready = condition(bad, "Ready")
    assert ready is not None
    assert (ready["status"], ready["reason"]) == ("False", "UnhealthyDependents")
    [event] = env.events("NodePoolValidationFailed")
    assert event.type == "Warning"
    assert event.regarding["name"] == "bad"
    [nc] = env.nodeclaims()
    assert nc["metadata"]["labels"]["karpenter.sh/nodepool"] == "good"


def test_fixing_an_invalid_nodepool_makes_it_valid() -> None:
    env = env_with_nodepools()
    env.create(b.nodepool("bad", requirements=INVALID_REQUIREMENT))
    env.run_for(1)
    env.kube.patch("nodepools", "bad", {"spec": {"template": {"spec": {"requirements": []}}}})
    env.run_for(1)
    assert condition(get_pool(env, "bad"), "ValidationSucceeded")["status"] == "True"  # type: ignore[index]


def test_repeated_validation_does_not_repeat_the_event() -> None:
    env = env_with_nodepools()
    env.create(b.nodepool("bad", requirements=INVALID_REQUIREMENT))
    env.run_for(1)
    env.kube.patch("nodepools", "bad", {"metadata": {"labels": {"touched": "yes"}}})
    env.run_for(1)
    assert len(env.events("NodePoolValidationFailed")) == 1


def test_nodepool_of_another_provider_is_left_alone() -> None:
    env = env_with_nodepools()
    np = b.nodepool("foreign")
    np["spec"]["template"]["spec"]["nodeClassRef"] = {
        "group": "example.com",
        "kind": "OtherNodeClass",
        "name": "x",
    }
    env.create(np)
    env.run_for(1)
    assert (get_pool(env, "foreign").get("status") or {}).get("conditions") is None


# ------------------------------------------------------------------ readiness


def test_no_kwok_nodeclass_at_all_counts_as_ready() -> None:
    env = env_with_nodepools()
    env.create(b.nodepool())
    env.run_for(1)
    ready = condition(get_pool(env), "NodeClassReady")
    assert ready is not None and ready["status"] == "True"


def test_missing_nodeclass_when_others_exist_is_not_found() -> None:
    env = env_with_nodepools()
    env.create(kwok_nodeclass("other"))
    env.create(b.nodepool())
    env.create(pod("p"))
    env.run_for(1.5)
    ready = condition(get_pool(env), "NodeClassReady")
    assert ready is not None
    assert (ready["status"], ready["reason"]) == ("False", "NodeClassNotFound")
    assert env.nodeclaims() == []


def test_creating_the_nodeclass_later_makes_the_pool_ready() -> None:
    env = env_with_nodepools()
    env.create(kwok_nodeclass("other"))
    env.create(b.nodepool())
    env.run_for(1)
    env.create(kwok_nodeclass("default"))
    env.run_for(1)
    assert condition(get_pool(env), "NodeClassReady")["status"] == "True"  # type: ignore[index]
    assert condition(get_pool(env), "Ready")["status"] == "True"  # type: ignore[index]


def test_nodeclass_not_ready_is_copied() -> None:
    env = env_with_nodepools()
    env.create(kwok_nodeclass("default", ready="False", reason="SubnetsNotFound"))
    env.create(b.nodepool())
    env.run_for(1)
    ready = condition(get_pool(env), "NodeClassReady")
    assert ready is not None
    assert (ready["status"], ready["reason"], ready["message"]) == (
        "False",
        "SubnetsNotFound",
        "SubnetsNotFound message",
    )


def test_kwok_nodeclass_without_status_gets_its_crd_default_and_is_ready() -> None:
    env = env_with_nodepools()
    env.create(kwok_nodeclass("default", ready=None))
    env.create(b.nodepool())
    env.create(pod("p"))
    env.run_for(1.5)
    assert condition(get_pool(env), "NodeClassReady")["status"] == "True"  # type: ignore[index]
    assert len(env.nodeclaims()) == 1


def test_nodeclass_without_a_ready_condition_is_readiness_unknown() -> None:
    env = env_with_nodepools()
    env.create(kwok_nodeclass("default", ready=None))
    env.kube.patch(
        "kwoknodeclasses", "default", {"status": {"conditions": []}}, subresource="status"
    )
    env.create(b.nodepool())
    env.run_for(1)
    ready = condition(get_pool(env), "NodeClassReady")
    assert ready is not None
    assert (ready["status"], ready["reason"]) == ("False", "NodeClassReadinessUnknown")


def test_terminating_nodeclass() -> None:
    env = env_with_nodepools()
    nc = kwok_nodeclass("default")
    nc["metadata"]["finalizers"] = ["example.com/hold"]
    env.create(nc)
    env.create(b.nodepool())
    env.run_for(1)
    env.kube.delete("kwoknodeclasses", "default")
    env.run_for(1)
    ready = condition(get_pool(env), "NodeClassReady")
    assert ready is not None
    assert (ready["status"], ready["reason"]) == ("False", "NodeClassTerminating")


# ------------------------------------------------------------------ counter


def test_counter_zeroes_an_empty_pool() -> None:
    env = env_with_nodepools()
    env.create(b.nodepool())
    env.run_for(1)
    status = get_pool(env)["status"]
    assert status["resources"] == {
        "cpu": "0",
        "ephemeral-storage": "0",
        "memory": "0",
        "nodes": "0",
        "pods": "0",
    }
    assert status["nodes"] == 0


def test_counter_sums_the_pools_nodes() -> None:
    env = env_with_nodepools()
    env.create(b.nodepool())
    for name in ("n1", "n2"):
        env.create(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {
                    "name": name,
                    "labels": {
                        "karpenter.sh/nodepool": "default",
                        "node.kubernetes.io/instance-type": "fake-it-1",
                    },
                },
                "spec": {"providerID": f"fake://{name}"},
                "status": {
                    "capacity": {"cpu": "2", "memory": "4Gi", "pods": "10"},
                    "allocatable": {"cpu": "2", "memory": "4Gi", "pods": "10"},
                },
            }
        )
    env.run_for(6)
    status = get_pool(env)["status"]
    assert status["nodes"] == 2
    assert status["resources"]["cpu"] == "4"
    assert status["resources"]["memory"] == "8Gi"


# ------------------------------------------------------------------ hash


def test_hash_annotations_are_stamped_and_follow_the_template() -> None:
    env = env_with_nodepools()
    env.create(b.nodepool())
    env.run_for(1)
    first = get_pool(env)["metadata"]["annotations"]
    assert first["karpenter.sh/nodepool-hash-version"] == "v3"
    env.kube.patch(
        "nodepools",
        "default",
        {"spec": {"template": {"metadata": {"labels": {"team": "a"}}}}},
    )
    env.run_for(1)
    second = get_pool(env)["metadata"]["annotations"]
    assert second["karpenter.sh/nodepool-hash"] != first["karpenter.sh/nodepool-hash"]


def test_provisioned_nodeclaims_carry_the_pool_hash() -> None:
    env = env_with_nodepools()
    env.create(b.nodepool())
    env.create(pod("p"))
    env.run_for(1.5)
    [nc] = env.nodeclaims()
    pool = get_pool(env)["metadata"]["annotations"]
    assert (
        nc["metadata"]["annotations"]["karpenter.sh/nodepool-hash"]
        == (pool["karpenter.sh/nodepool-hash"])
    )


def _nodeclaim(name: str, drifted: bool) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodeClaim",
        "metadata": {
            "name": name,
            "labels": {"karpenter.sh/nodepool": "default"},
            "annotations": {
                "karpenter.sh/nodepool-hash": "old",
                "karpenter.sh/nodepool-hash-version": "v2",
            },
        },
        "spec": {
            "nodeClassRef": {
                "group": "karpenter.kwok.sh",
                "kind": "KWOKNodeClass",
                "name": "default",
            },
            "requirements": [],
        },
    }
    if drifted:
        obj["status"] = {
            "conditions": [
                {
                    "type": "Drifted",
                    "status": "True",
                    "reason": "NodePoolDrifted",
                    "message": "",
                    "lastTransitionTime": "2026-01-01T00:00:00Z",
                }
            ]
        }
    return obj


def test_hash_version_change_migrates_nodeclaims_except_drifted_hashes() -> None:
    env = env_with_nodepools(with_provisioning=False)
    np = b.nodepool()
    np["metadata"]["annotations"] = {"karpenter.sh/nodepool-hash-version": "v2"}
    env.create(_nodeclaim("plain", drifted=False))
    env.create(_nodeclaim("drifted", drifted=True))
    env.create(np)
    env.run_for(1)
    pool_hash = get_pool(env)["metadata"]["annotations"]["karpenter.sh/nodepool-hash"]
    plain = env.kube.get("nodeclaims", "plain")["metadata"]["annotations"]
    drifted = env.kube.get("nodeclaims", "drifted")["metadata"]["annotations"]
    assert plain == {
        "karpenter.sh/nodepool-hash": pool_hash,
        "karpenter.sh/nodepool-hash-version": "v3",
    }
    assert drifted == {
        "karpenter.sh/nodepool-hash": "old",
        "karpenter.sh/nodepool-hash-version": "v3",
    }


# ------------------------------------------------------------------ registration health


def test_registration_health_starts_unknown_and_records_the_nodeclass_generation() -> None:
    env = env_with_nodepools()
    env.create(kwok_nodeclass("default"))
    env.create(b.nodepool())
    env.run_for(1)
    np = get_pool(env)
    healthy = condition(np, "NodeRegistrationHealthy")
    assert healthy is not None
    assert (healthy["status"], healthy["reason"]) == ("Unknown", "AwaitingReconciliation")
    assert np["status"]["nodeClassObservedGeneration"] == 1


def test_registration_health_is_seeded_from_the_condition_after_a_restart() -> None:
    env = env_with_nodepools()
    np = b.nodepool()
    np["status"] = {
        "nodeClassObservedGeneration": 1,
        "conditions": [
            {
                "type": "NodeRegistrationHealthy",
                "status": "False",
                "reason": "Unhealthy",
                "message": "",
                "observedGeneration": 1,
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            }
        ],
    }
    env.create(kwok_nodeclass("default"))
    created = env.create(np)
    env.run_for(1)
    uid = created["metadata"]["uid"]
    assert shared(env.ctx).status(uid) is Status.UNHEALTHY
    assert condition(get_pool(env), "NodeRegistrationHealthy")["status"] == "False"  # type: ignore[index]


def test_a_spec_change_resets_registration_health() -> None:
    env = env_with_nodepools()
    env.create(kwok_nodeclass("default"))
    created = env.create(b.nodepool())
    env.run_for(1)
    uid = created["metadata"]["uid"]
    shared(env.ctx).set_status(uid, Status.HEALTHY)
    env.kube.patch("nodepools", "default", {"spec": {"weight": 5}})
    env.run_for(1)
    assert shared(env.ctx).status(uid) is Status.UNKNOWN


def test_a_garbage_nodepool_breaks_no_controller() -> None:
    env = env_with_nodepools()
    weird = b.nodepool("weird", weight="heavy", limits={"cpu": "lots"})
    weird["spec"]["template"]["spec"]["requirements"] = "nope"
    env.create(weird)
    env.create(b.nodepool("good"))
    env.create(pod("p"))
    env.run_for(2)
    assert [c.name for c in env.manager.controllers if c.errors] == []
    validation = condition(get_pool(env, "weird"), "ValidationSucceeded")
    assert validation is not None and validation["status"] == "False"
    assert "spec.weight" in validation["message"]
    [nc] = env.nodeclaims()
    assert nc["metadata"]["labels"]["karpenter.sh/nodepool"] == "good"


# ------------------------------------------------------------------ what the provider declares


def _undeclared_kwok_kind() -> Any:
    """KWOK's NodeClass kind declared without KWOK's ``implicit`` and ``default_status``."""
    from karpenter_core.cloudprovider.protocol import NodeClassKind

    return NodeClassKind(group="karpenter.kwok.sh", kind="KWOKNodeClass", version="v1alpha1")


def test_a_kind_its_provider_does_not_declare_implicit_must_exist() -> None:
    from karpenter_core.testing import FakeCloudProvider

    env = env_with_nodepools(provider=FakeCloudProvider(node_classes=(_undeclared_kwok_kind(),)))
    env.create(b.nodepool())  # no KWOKNodeClass exists at all
    env.run_for(1)
    ready = condition(get_pool(env), "NodeClassReady")
    assert ready is not None
    assert (ready["status"], ready["reason"]) == ("False", "NodeClassNotFound")


def test_a_kind_without_a_declared_default_status_gets_none() -> None:
    from karpenter_core.testing import FakeCloudProvider

    env = env_with_nodepools(provider=FakeCloudProvider(node_classes=(_undeclared_kwok_kind(),)))
    env.create(kwok_nodeclass("default", ready=None))  # stored without a status
    env.create(b.nodepool())
    env.run_for(1)
    ready = condition(get_pool(env), "NodeClassReady")
    assert ready is not None
    assert (ready["status"], ready["reason"]) == ("False", "NodeClassReadinessUnknown")
