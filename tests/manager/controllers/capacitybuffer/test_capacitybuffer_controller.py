"""The ``capacitybuffer`` controller: ReadyForProvisioning and its reasons, the status it
writes, the PodTemplate watch, the 30 s requeue and the virtual pods it keeps."""

from __future__ import annotations

from typing import Any

from capacitybuffer_harness import buffer, condition, deployment, make_env, podtemplate

from karpenter_core.apis.labels import (
    CAPACITY_BUFFER_FAKE_POD_ANNOTATION_KEY,
    CAPACITY_BUFFER_NAME_ANNOTATION_KEY,
    CAPACITY_BUFFER_NAMESPACE_ANNOTATION_KEY,
)
from karpenter_core.controllers.capacitybuffer import (
    REASON_POD_TEMPLATE_NOT_FOUND,
    REASON_RESOLUTION_FAILED,
    REASON_RESOLVED,
    REASON_SCALABLE_REF_NOT_FOUND,
    cache_of,
)
from karpenter_core.controllers.capacitybuffer.virtualpods import VIRTUAL_POD_PRIORITY
from karpenter_core.testing import Environment

READY = "ReadyForProvisioning"


def ready(env: Environment, name: str = "buf") -> dict[str, Any]:
    cond = condition(env, READY, name)
    assert cond is not None, f"buffer {name} has no {READY} condition"
    return cond


def test_a_podtemplate_buffer_resolves_and_records_the_template() -> None:
    env = make_env()
    pt = env.create(podtemplate())
    env.create(buffer(podTemplateRef={"name": "tmpl"}, replicas=3))
    env.run_for(1)
    status = env.get(buffer())["status"]
    assert ready(env)["status"] == "True"
    assert ready(env)["reason"] == REASON_RESOLVED
    assert status["replicas"] == 3
    assert status["podTemplateRef"] == {"name": "tmpl"}
    assert status["podTemplateGeneration"] == pt["metadata"]["generation"]
    assert status["provisioningStrategy"] == "buffer.x-k8s.io/active-capacity"


def test_a_scalableref_buffer_takes_its_percentage_of_the_workload() -> None:
    env = make_env()
    env.create(deployment(replicas=10))
    env.create(
        buffer(scalableRef={"apiGroup": "apps", "kind": "Deployment", "name": "web"}, percentage=25)
    )
    env.run_for(1)
    status = env.get(buffer())["status"]
    assert ready(env)["reason"] == REASON_RESOLVED
    assert status["replicas"] == 3  # ceil(10 * 25%)
    assert "podTemplateRef" not in status
    assert "podTemplateGeneration" not in status


def test_a_workload_without_replicas_counts_as_one() -> None:
    env = make_env()
    env.create(deployment(replicas=None))
    env.create(buffer(scalableRef={"kind": "Deployment", "name": "web"}, percentage=10))
    env.run_for(1)
    assert env.get(buffer())["status"]["replicas"] == 1


def test_a_missing_podtemplate_is_podtemplatenotfound() -> None:
    env = make_env()
    env.create(buffer(podTemplateRef={"name": "absent"}, replicas=1))
    env.run_for(1)
    cond = ready(env)
    assert (cond["status"], cond["reason"]) == ("False", REASON_POD_TEMPLATE_NOT_FOUND)
    assert "absent" in cond["message"]
    assert cache_of(env.ctx).get_all() == []


def test_a_missing_workload_is_scalablerefnotfound() -> None:
    env = make_env()
    env.create(buffer(scalableRef={"kind": "StatefulSet", "name": "db"}, replicas=1))
    env.run_for(1)
    cond = ready(env)
    assert (cond["status"], cond["reason"]) == ("False", REASON_SCALABLE_REF_NOT_FOUND)
    assert "statefulset" in cond["message"]


def test_a_buffer_with_no_reference_is_resolutionfailed() -> None:
    env = make_env()
    env.create(buffer(replicas=2))
    env.run_for(1)
    cond = ready(env)
    assert (cond["status"], cond["reason"]) == ("False", REASON_RESOLUTION_FAILED)
    assert cond["message"] == "Neither podTemplateRef nor scalableRef is set"


def test_an_unsupported_scalable_kind_is_resolutionfailed() -> None:
    env = make_env()
    env.create(buffer(scalableRef={"apiGroup": "batch", "kind": "Job", "name": "j"}, percentage=5))
    env.run_for(1)
    cond = ready(env)
    assert (cond["status"], cond["reason"]) == ("False", REASON_RESOLUTION_FAILED)
    assert "batch" in cond["message"]


def test_unparseable_limits_are_resolutionfailed_not_a_crash() -> None:
    env = make_env()
    env.create(podtemplate())
    env.create(buffer(podTemplateRef={"name": "tmpl"}, limits={"cpu": "lots"}))
    env.run_for(1)
    cond = ready(env)
    assert (cond["status"], cond["reason"]) == ("False", REASON_RESOLUTION_FAILED)
    assert "spec.limits" in cond["message"]


def test_a_podtemplate_created_later_wakes_the_buffer_through_the_watch() -> None:
    env = make_env()
    env.create(buffer(podTemplateRef={"name": "tmpl"}, replicas=2))
    env.run_for(1)
    assert ready(env)["reason"] == REASON_POD_TEMPLATE_NOT_FOUND
    env.create(podtemplate())
    env.run_for(1)  # well inside the 30 s requeue: the PodTemplate event did it
    assert ready(env)["reason"] == REASON_RESOLVED
    assert len(cache_of(env.ctx).get_all()) == 2


def test_a_percentage_buffer_follows_its_workload_on_the_30s_requeue() -> None:
    env = make_env()
    env.create(deployment(replicas=10))
    env.create(buffer(scalableRef={"kind": "Deployment", "name": "web"}, percentage=50))
    env.run_for(1)
    assert env.get(buffer())["status"]["replicas"] == 5
    env.kube.patch("deployments", "web", {"spec": {"replicas": 20}}, "default")
    env.run_for(10)
    assert env.get(buffer())["status"]["replicas"] == 5  # deployments are not watched
    env.run_for(25)
    assert env.get(buffer())["status"]["replicas"] == 10


def test_an_unchanged_status_is_not_rewritten() -> None:
    env = make_env()
    env.create(podtemplate())
    env.create(buffer(podTemplateRef={"name": "tmpl"}, replicas=0))
    env.run_for(5)  # resolved, then the provisioner's pass says BufferEmpty
    rv = env.get(buffer())["metadata"]["resourceVersion"]
    env.run_for(65)  # two requeues
    assert env.get(buffer())["metadata"]["resourceVersion"] == rv


def test_virtual_pods_copy_the_template_and_are_marked() -> None:
    env = make_env()
    pt = podtemplate()
    pt["template"]["spec"]["volumes"] = [
        {"name": "data", "persistentVolumeClaim": {"claimName": "data"}},
        {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}},
        {"name": "config", "configMap": {"name": "cfg"}},
    ]
    pt["template"]["spec"]["containers"][0]["volumeMounts"] = [
        {"name": "data", "mountPath": "/data"},
        {"name": "config", "mountPath": "/etc/cfg"},
    ]
    env.create(pt)
    created = env.create(buffer(podTemplateRef={"name": "tmpl"}, replicas=2))
    env.run_for(1)
    pods = cache_of(env.ctx).get_all()
    uid = created["metadata"]["uid"]
    assert [p.name for p in pods] == ["capacity-buffer-buf-1", "capacity-buffer-buf-2"]
    assert [p.uid for p in pods] == [f"{uid}-1", f"{uid}-2"]
    for p in pods:
        assert p.namespace == "default"
        assert dict(p.labels) == {"app": "web"}
        assert p.annotations[CAPACITY_BUFFER_FAKE_POD_ANNOTATION_KEY] == "true"
        assert p.annotations[CAPACITY_BUFFER_NAME_ANNOTATION_KEY] == "buf"
        assert p.annotations[CAPACITY_BUFFER_NAMESPACE_ANNOTATION_KEY] == "default"
        assert p.priority == VIRTUAL_POD_PRIORITY
        assert p.node_name == ""
        assert p.is_provisionable()
        assert [v["name"] for v in p.volumes] == ["config"]
        assert p.pvc_names == ()
        mounts = p.raw["spec"]["containers"][0]["volumeMounts"]
        assert [m["name"] for m in mounts] == ["config"]


def test_deleting_a_buffer_drops_its_virtual_pods() -> None:
    env = make_env()
    env.create(podtemplate())
    env.create(buffer(podTemplateRef={"name": "tmpl"}, replicas=2))
    env.run_for(1)
    assert len(cache_of(env.ctx).get_all()) == 2
    env.kube.delete("capacitybuffers", "buf", "default")
    env.run_for(1)
    assert cache_of(env.ctx).get_all() == []


def test_a_restarted_cache_lists_ready_buffers_itself() -> None:
    env = make_env()
    env.create(podtemplate())
    env.create(buffer(podTemplateRef={"name": "tmpl"}, replicas=2))
    env.run_for(1)
    from karpenter_core.controllers.capacitybuffer import VirtualPodCache

    fresh = VirtualPodCache(env.kube, env.clock)
    assert [p.name for p in fresh.get_all()] == ["capacity-buffer-buf-1", "capacity-buffer-buf-2"]


def test_a_changed_podtemplate_updates_the_generation_and_the_virtual_pods() -> None:
    env = make_env()
    pt = env.create(podtemplate(requests={"cpu": "1"}))
    env.create(buffer(podTemplateRef={"name": "tmpl"}, replicas=1))
    env.run_for(1)
    first = env.get(buffer())["status"]["podTemplateGeneration"]
    template = pt["template"]
    template["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "2"
    env.kube.patch("podtemplates", "tmpl", {"template": template}, "default")
    env.run_for(1)
    assert env.get(buffer())["status"]["podTemplateGeneration"] > first
    [virtual] = cache_of(env.ctx).get_all()
    assert virtual.requests["cpu"] == 2000


def test_a_template_that_is_not_a_pod_is_resolutionfailed() -> None:
    env = make_env()
    pt = podtemplate()
    pt["template"]["spec"] = {"containers": []}
    env.create(pt)
    env.create(buffer(podTemplateRef={"name": "tmpl"}, replicas=2))
    env.run_for(1)
    cond = ready(env)
    assert (cond["status"], cond["reason"]) == ("False", REASON_RESOLUTION_FAILED)
    assert "not a valid pod" in cond["message"]
    assert cache_of(env.ctx).get_all() == []
