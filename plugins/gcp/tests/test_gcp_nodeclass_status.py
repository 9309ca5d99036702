"""The GCP ``nodeclass.status`` controller on the in-memory API server (as the AWS and Azure
status tests run theirs): validation, images from the selector terms, conditions, events,
requeues and the hash annotations (upstream ``pkg/controllers/nodeclass/status`` image
reconciler and ``.../hash`` controller)."""

from __future__ import annotations

from typing import Any

from karpenter_gcp.drift import HASH_ANNOTATION, HASH_VERSION, HASH_VERSION_ANNOTATION
from karpenter_gcp.images import COS_PROJECT, GKEChannels, ImageRecord, ReleaseChannel
from karpenter_gcp.nodeclass import NODECLASS_RESOURCE, GCENodeClass
from karpenter_gcp.nodeclass_status import (
    CONTROLLER_NAME,
    REQUEUE,
    REQUEUE_RESOLUTION_FAILED,
    WATCHES,
    NodeClassStatusReconciler,
    parse_version,
)

from karpenter_core.runtime.clock import VirtualClock
from karpenter_core.runtime.events import EventRecorder
from karpenter_core.runtime.reconciler import ObjectKey, Result
from karpenter_core.sim.apiserver import InMemoryApiServer

COS_IMAGE = "gke-1351-gke1396004-cos-125-19216-104-126-c-pre"
PINNED = {"family": "Ubuntu2404", "version": "v20260416"}
NODECLAIMS = ("karpenter.sh/v1", "NodeClaim")


class Lister:
    """Compute's image list for one COS image and its siblings (prefix filters)."""

    def __init__(self) -> None:
        self.names = [
            COS_IMAGE,
            COS_IMAGE.replace("-cos-", "-cos-arm64-"),
            COS_IMAGE.replace("-pre", "-nvda"),
        ]

    def __call__(self, project: str, filter_: str) -> list[ImageRecord]:
        prefix = filter_.removeprefix("name=").rstrip("*")
        if project != COS_PROJECT:
            return []
        return [ImageRecord(n, "2025-04-01T00:00:00Z") for n in self.names if n.startswith(prefix)]


class Env:
    def __init__(self, settings: dict[str, str] | None = None, **options: Any) -> None:
        self.clock = VirtualClock()
        self.server = InMemoryApiServer(self.clock)
        self.recorder = EventRecorder(self.clock)
        options.setdefault("kubernetes_version", "1.35.1")
        self.reconciler = NodeClassStatusReconciler(
            self.server, self.clock, self.recorder, settings or {"cluster-name": "c"}, **options
        )

    def create(self, name: str = "default", **spec: Any) -> dict[str, Any]:
        spec.setdefault("imageSelectorTerms", [PINNED])
        return self.server.create(
            {
                "apiVersion": "karpenter.k8s.gcp/v1alpha1",
                "kind": "GCENodeClass",
                "metadata": {"name": name},
                "spec": spec,
            }
        )

    def reconcile(self, name: str = "default") -> Result:
        return self.reconciler.reconcile(ObjectKey("", name))

    def get(self, name: str = "default") -> dict[str, Any]:
        return self.server.get(NODECLASS_RESOURCE, name)

    def condition(self, type_: str, name: str = "default") -> dict[str, Any]:
        for c in self.get(name)["status"]["conditions"]:
            if c["type"] == type_:
                return dict(c)
        raise AssertionError(f"no {type_} condition")

    def warnings(self) -> list[tuple[str, str]]:
        return [(e.reason, e.message) for e in self.recorder.events if e.type == "Warning"]


def test_a_pinned_nodeclass_becomes_ready_offline_with_its_images() -> None:
    """upstream image reconciler: images resolved -> status.images, ImagesReady True,
    requeue after five minutes; Ready once every condition is True."""
    env = Env()
    env.create()
    assert env.reconcile() == Result.after(REQUEUE)
    images = env.get()["status"]["images"]
    assert [i["sourceImage"] for i in images] == [
        "projects/ubuntu-os-gke-cloud/global/images/ubuntu-gke-2404-1-35-amd64-v20260416",
        "projects/ubuntu-os-gke-cloud/global/images/ubuntu-gke-2404-1-35-arm64-v20260416",
    ]
    for type_ in ("ImagesReady", "ValidationSucceeded", "Ready"):
        assert env.condition(type_)["status"] == "True", type_
        assert env.condition(type_)["observedGeneration"] == 1
    nc = GCENodeClass.from_dict(env.get())
    assert nc.ready() is True and len(nc.images) == 2
    assert env.warnings() == []
    # a second pass changes nothing
    rv = env.get()["metadata"]["resourceVersion"]
    assert env.reconcile() == Result.after(REQUEUE)
    assert env.get()["metadata"]["resourceVersion"] == rv


def test_with_a_compute_lister_latest_resolves_as_upstream() -> None:
    env = Env(image_lister=Lister())
    env.create(imageSelectorTerms=[{"alias": "ContainerOptimizedOS@latest"}])
    env.reconcile()
    images = env.get()["status"]["images"]
    assert [i["sourceImage"].rsplit("/", 1)[1] for i in images] == Lister().names
    assert env.condition("Ready")["status"] == "True"


def test_an_unresolvable_term_is_image_resolution_failed_and_retried_in_a_minute() -> None:
    """upstream: an imageResolutionError -> ImagesReady False ImageResolutionFailed (message
    at most 256 characters), RequeueAfter one minute; offline, latest cannot resolve."""
    env = Env()
    env.create(imageSelectorTerms=[{"alias": "ContainerOptimizedOS@latest"}])
    assert env.reconcile() == Result.after(REQUEUE_RESOLUTION_FAILED)
    cond = env.condition("ImagesReady")
    assert (cond["status"], cond["reason"]) == ("False", "ImageResolutionFailed")
    assert "needs the Compute Engine image list" in cond["message"]
    assert len(cond["message"]) <= 256
    assert env.condition("Ready")["status"] == "False"
    assert "images" not in env.get()["status"]


def test_no_matching_image_is_images_not_found_and_clears_the_images() -> None:
    """upstream: no images -> Status.Images cleared, ImagesReady False ImagesNotFound."""
    env = Env(image_lister=Lister())
    env.create(imageSelectorTerms=[{"id": "projects/p/global/images/gone"}])
    assert env.reconcile() == Result()
    cond = env.condition("ImagesReady")
    assert (cond["status"], cond["reason"], cond["message"]) == (
        "False",
        "ImagesNotFound",
        "ImageSelector did not match any Images",
    )
    assert env.get()["status"]["images"] == []


def test_an_invalid_nodeclass_gets_validation_succeeded_false_with_the_field_and_an_event() -> None:
    env = Env()
    env.create(disks=[{"sizeGiB": 5, "boot": True}], metadata={"kube-env": "x"})
    assert env.reconcile() == Result()
    cond = env.condition("ValidationSucceeded")
    assert (cond["status"], cond["reason"]) == ("False", "InvalidSpec")
    assert cond["message"] == (
        'spec.disks[0].sizeGiB: Invalid value: "integer": size invalid; spec.metadata: Invalid '
        'value: "object": spec.metadata contains a reserved GKE metadata key'
    )
    assert env.condition("Ready")["status"] == "False"
    assert env.warnings() == [("InvalidSpec", cond["message"])]
    assert HASH_ANNOTATION not in (env.get()["metadata"].get("annotations") or {})
    # fixed: it becomes Ready
    obj = env.get()
    obj["spec"] = {"imageSelectorTerms": [PINNED], "disks": [{"sizeGiB": 50, "boot": True}]}
    env.server.update(obj)
    env.reconcile()
    assert env.condition("Ready")["status"] == "True"
    assert env.condition("Ready")["observedGeneration"] == 2


def test_the_version_comes_from_the_api_server_then_the_setting() -> None:
    env = Env({"kubernetes-version": "v1.33"}, kubernetes_version=None)
    env.create()
    env.reconcile()
    assert "ubuntu-gke-2404-1-33-amd64" in env.get()["status"]["images"][0]["sourceImage"]

    class WithVersion(InMemoryApiServer):
        def server_version(self) -> dict[str, str]:
            return {"gitVersion": "v1.34.2-gke.1000"}

    clock = VirtualClock()
    server = WithVersion(clock)
    r = NodeClassStatusReconciler(
        server, clock, EventRecorder(clock), {"kubernetes-version": "1.30"}
    )
    server.create(
        {
            "apiVersion": "karpenter.k8s.gcp/v1alpha1",
            "kind": "GCENodeClass",
            "metadata": {"name": "a"},
            "spec": {"imageSelectorTerms": [PINNED]},
        }
    )
    r.reconcile(ObjectKey("", "a"))
    images = server.get(NODECLASS_RESOURCE, "a")["status"]["images"]
    assert "ubuntu-gke-2404-1-34-amd64" in images[0]["sourceImage"]
    assert parse_version("garbage") == ""
    # no version anywhere: a pinned Ubuntu term cannot be named
    env2 = Env(kubernetes_version="")
    env2.create()
    env2.reconcile()
    assert env2.condition("ImagesReady")["reason"] == "ImageResolutionFailed"


def test_hash_annotations_are_kept_and_nodeclaims_migrate_on_a_version_change() -> None:
    """upstream hash controller: the NodeClass carries hash and hash version; on a version
    change, NodeClaims not drifted get the new hash, drifted ones only the version."""
    env = Env()
    env.create(networkTags=["a"])
    for name, drifted in (("a", False), ("b", True)):
        nc: dict[str, Any] = {
            "apiVersion": "karpenter.sh/v1",
            "kind": "NodeClaim",
            "metadata": {
                "name": name,
                "annotations": {HASH_ANNOTATION: "old", HASH_VERSION_ANNOTATION: "v4"},
            },
            "spec": {
                "nodeClassRef": {
                    "group": "karpenter.k8s.gcp",
                    "kind": "GCENodeClass",
                    "name": "default",
                },
                "requirements": [],
            },
        }
        created = env.server.create(nc)
        if drifted:
            created["status"] = {
                "conditions": [
                    {
                        "type": "Drifted",
                        "status": "True",
                        "reason": "NodeClassDrift",
                        "message": "",
                        "lastTransitionTime": "2026-01-01T00:00:00Z",
                    }
                ]
            }
            env.server.update_status(created)
    env.reconcile()
    ann = env.get()["metadata"]["annotations"]
    assert ann[HASH_VERSION_ANNOTATION] == HASH_VERSION
    a = env.server.get(NODECLAIMS, "a")["metadata"]["annotations"]
    b = env.server.get(NODECLAIMS, "b")["metadata"]["annotations"]
    assert a == {HASH_ANNOTATION: ann[HASH_ANNOTATION], HASH_VERSION_ANNOTATION: HASH_VERSION}
    assert b == {HASH_ANNOTATION: "old", HASH_VERSION_ANNOTATION: HASH_VERSION}
    before = ann[HASH_ANNOTATION]
    obj = env.get()
    obj["spec"]["networkTags"] = ["b"]
    env.server.update(obj)
    env.reconcile()
    assert env.get()["metadata"]["annotations"][HASH_ANNOTATION] != before
    # a same-version hash change leaves NodeClaims alone (their hash is launch-time)
    assert (
        env.server.get(NODECLAIMS, "a")["metadata"]["annotations"][HASH_ANNOTATION]
        == ann[HASH_ANNOTATION]
    )


def test_missing_and_deleting_nodeclasses_are_ignored() -> None:
    env = Env()
    assert env.reconcile("nope") == Result()
    env.create()
    obj = env.get()
    obj["metadata"]["finalizers"] = ["test/keep"]
    env.server.update(obj)
    env.server.delete(NODECLASS_RESOURCE, "default")
    assert env.reconcile() == Result()
    assert "status" not in env.get() or not env.get()["status"].get("conditions")
    assert CONTROLLER_NAME == "nodeclass.status"
    assert [w.resource for w in WATCHES] == [NODECLASS_RESOURCE]


def test_a_channel_term_resolves_through_the_gke_channel_source() -> None:
    build = "gke-1351-gke1396004-cos-125-19216-104-126-c-pre"
    source = GKEChannels({"REGULAR": ReleaseChannel("1.35.1-gke.1396004", ())}, "REGULAR")
    env = Env(image_lister=Lister(), channel_source=lambda: source)
    env.create(imageSelectorTerms=[{"family": "ContainerOptimizedOS", "channel": "cluster"}])
    assert env.reconcile() == Result.after(REQUEUE)
    assert env.get()["status"]["images"][0]["sourceImage"].endswith(build)
    # without the source, the channel cannot be resolved
    env2 = Env(image_lister=Lister())
    env2.create(imageSelectorTerms=[{"family": "ContainerOptimizedOS", "channel": "stable"}])
    env2.reconcile()
    assert "GKE server config" in env2.condition("ImagesReady")["message"]
