"""The provisioner with CapacityBuffers: virtual pods launch capacity like pending pods but
are never bound, nominated, evented or counted as real pending pods; each pass sets the
buffers' Provisioning condition; the gate off changes nothing."""

from __future__ import annotations

from capacitybuffer_harness import buffer, condition, launch, make_env, podtemplate

from karpenter_core import metrics
from karpenter_core.controllers.capacitybuffer import (
    REASON_BUFFER_EMPTY,
    REASON_FITS_EXISTING_CAPACITY,
    REASON_NOT_READY_FOR_PROVISIONING,
    REASON_REQUIRES_NEW_CAPACITY,
)
from karpenter_core.testing import Environment
from karpenter_core.testing import builders as b

PROVISIONING = "Provisioning"
UNSCHEDULABLE = "karpenter_scheduler_unschedulable_pods_count"


def provisioning(env: Environment, name: str = "buf") -> tuple[str, str, str]:
    cond = condition(env, PROVISIONING, name)
    assert cond is not None, f"buffer {name} has no {PROVISIONING} condition"
    return cond["status"], cond["reason"], cond["message"]


def buffered_env(replicas: int = 3, cpu: str = "1", **kw: object) -> Environment:
    env = make_env(**kw)  # type: ignore[arg-type]
    env.apply(b.nodepool(ready=True))
    env.create(podtemplate(requests={"cpu": cpu}))
    env.create(buffer(podTemplateRef={"name": "tmpl"}, replicas=replicas))
    return env


def test_buffer_pods_launch_capacity_and_require_new_capacity() -> None:
    env = buffered_env(replicas=3)
    env.run_for(3)
    [nc] = env.nodeclaims()
    assert nc["spec"]["resources"]["requests"]["cpu"] == "3"
    assert provisioning(env) == (
        "False",
        REASON_REQUIRES_NEW_CAPACITY,
        "3/3 virtual pods required new capacity, 0 failed",
    )


def test_launched_buffer_capacity_fits_existing_capacity_and_is_not_relaunched() -> None:
    env = buffered_env(replicas=3)
    env.run_for(3)
    [nc] = env.nodeclaims()
    launch(env, nc, "fake://buffer-node")
    env.run_for(35)  # the buffer's 30 s requeue triggers another pass
    assert [c["metadata"]["name"] for c in env.nodeclaims()] == [nc["metadata"]["name"]]
    assert provisioning(env) == (
        "True",
        REASON_FITS_EXISTING_CAPACITY,
        "All 3 virtual pods fit on existing capacity",
    )
    assert env.ctx.cluster.buffer_pod_count("fake://buffer-node") == 3


def test_buffer_pods_are_never_bound_nominated_or_evented() -> None:
    env = buffered_env(replicas=2)
    env.run_for(3)
    [nc] = env.nodeclaims()
    launch(env, nc, "fake://buffer-node")
    env.run_for(35)
    assert list(env.kube.list("pods").items) == []  # nothing was written, nothing bound
    # no Nominated, no FailedScheduling (the buffer's own condition transitions are evented)
    assert [e for e in env.recorder.events if e.regarding.get("kind") == "Pod"] == []
    assert {e.reason for e in env.recorder.events} <= {"ReadyForProvisioning", "Provisioning"}
    assert not env.ctx.cluster.is_node_nominated("fake://buffer-node")
    assert env.ctx.cluster.pod_scheduling_decision("default/capacity-buffer-buf-1") is None


def test_a_real_pod_beside_buffer_pods_is_nominated_and_buffer_pods_are_not() -> None:
    env = buffered_env(replicas=2)
    env.create(b.unschedulable_pod("real", cpu="1"))
    env.run_for(3)
    [nc] = env.nodeclaims()
    assert nc["spec"]["resources"]["requests"]["cpu"] == "3"  # one real + two virtual
    nominated = [e.regarding["name"] for e in env.recorder.events if e.reason == "Nominated"]
    assert nominated == ["real"]
    assert env.ctx.cluster.pod_scheduling_decision("default/real") is not None
    assert env.ctx.cluster.pod_scheduling_decision("default/capacity-buffer-buf-1") is None


def test_a_buffer_pod_that_fits_nowhere_is_not_an_unschedulable_pod() -> None:
    env = buffered_env(replicas=1, cpu="1000")  # larger than any fake instance type
    env.run_for(3)
    assert env.nodeclaims() == []
    assert provisioning(env) == (
        "False",
        REASON_REQUIRES_NEW_CAPACITY,
        "0/1 virtual pods required new capacity, 1 failed",
    )
    assert metrics.sample(UNSCHEDULABLE, {"controller": "provisioner"}) == 0.0
    assert [e for e in env.recorder.events if e.reason == "FailedScheduling"] == []


def test_a_buffer_that_is_not_ready_is_notreadyforprovisioning() -> None:
    env = make_env()
    env.apply(b.nodepool(ready=True))
    env.create(buffer(podTemplateRef={"name": "absent"}, replicas=2))
    env.create(b.unschedulable_pod("real", cpu="1"))  # a pass happens for the real pod
    env.run_for(3)
    status, reason, _ = provisioning(env)
    assert (status, reason) == ("False", REASON_NOT_READY_FOR_PROVISIONING)
    [nc] = env.nodeclaims()
    assert nc["spec"]["resources"]["requests"]["cpu"] == "1"  # only the real pod


def test_a_buffer_of_zero_replicas_is_bufferempty() -> None:
    env = buffered_env(replicas=0)
    env.run_for(3)
    status, reason, _ = provisioning(env)
    assert (status, reason) == ("False", REASON_BUFFER_EMPTY)
    assert env.nodeclaims() == []


def test_gate_off_buffers_do_nothing() -> None:
    env = buffered_env(replicas=3, gate_on=False)
    env.create(b.unschedulable_pod("real", cpu="1"))
    env.run_for(40)
    [nc] = env.nodeclaims()
    assert nc["spec"]["resources"]["requests"]["cpu"] == "1"  # the real pod only
    assert "status" not in env.get(buffer()) or not env.get(buffer())["status"]
    assert env.ctx.cluster.buffer_pod_count("") == 0
