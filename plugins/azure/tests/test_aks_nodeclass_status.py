"""The Azure ``nodeclass.status`` controller on the in-memory API server (as the AWS status
tests run theirs): validation, Kubernetes version, images from the bundled table, subnet
id, conditions, events and the hash annotations (upstream
``pkg/controllers/nodeclass/status/*_test.go`` and ``.../hash/suite_test.go``)."""

from __future__ import annotations

from typing import Any

import pytest
from karpenter_azure.drift import HASH_ANNOTATION, HASH_VERSION, HASH_VERSION_ANNOTATION
from karpenter_azure.images import AZURE_LINUX_GALLERY, UBUNTU_GALLERY
from karpenter_azure.nodeclass import NODECLASS_RESOURCE
from karpenter_azure.nodeclass_status import (
    CONTROLLER_NAME,
    REQUEUE,
    NodeClassStatusReconciler,
    parse_version,
)

from karpenter_core.runtime.clock import VirtualClock
from karpenter_core.runtime.events import EventRecorder
from karpenter_core.runtime.reconciler import ObjectKey, Result
from karpenter_core.sim.apiserver import InMemoryApiServer

SUBNET = (
    "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg/providers/"
    "Microsoft.Network/virtualNetworks/vnet/subnets/nodes"
)
SETTINGS = {"vnet-subnet-id": SUBNET, "cluster-name": "c"}


class Env:
    def __init__(self, settings: dict[str, str] | None = None, **options: Any) -> None:
        self.clock = VirtualClock()
        self.server = InMemoryApiServer(self.clock)
        self.recorder = EventRecorder(self.clock)
        options.setdefault("kubernetes_version", "1.31.2")
        self.reconciler = NodeClassStatusReconciler(
            self.server, self.clock, self.recorder, settings or SETTINGS, **options
        )

    def create(self, name: str = "default", **spec: Any) -> dict[str, Any]:
        return self.server.create(
            {
                "apiVersion": "karpenter.azure.com/v1beta1",
                "kind": "AKSNodeClass",
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


def test_a_default_nodeclass_becomes_ready_with_images_and_version() -> None:
    """upstream: status suite "should resolve images", kubernetesversion "should resolve
    KubernetesVersion", and Ready once every condition is True."""
    env = Env()
    env.create()
    assert env.reconcile() == Result.after(REQUEUE)
    obj = env.get()
    assert obj["status"]["kubernetesVersion"] == "1.31.2"
    ids = [i["id"] for i in obj["status"]["images"]]
    assert ids == [
        f"/CommunityGalleries/{UBUNTU_GALLERY}/images/2204gen2containerd/versions/latest",
        f"/CommunityGalleries/{UBUNTU_GALLERY}/images/2204containerd/versions/latest",
        f"/CommunityGalleries/{UBUNTU_GALLERY}/images/2204gen2arm64containerd/versions/latest",
    ]
    assert obj["status"]["images"][2]["requirements"] == [
        {"key": "kubernetes.io/arch", "operator": "In", "values": ["arm64"]},
        {"key": "karpenter.azure.com/sku-hyperv-generation", "operator": "In", "values": ["2"]},
    ]
    for type_ in (
        "ImagesReady",
        "KubernetesVersionReady",
        "SubnetsReady",
        "ValidationSucceeded",
        "Ready",
    ):
        assert env.condition(type_)["status"] == "True", type_
        assert env.condition(type_)["observedGeneration"] == 1
    assert env.warnings() == []
    # a second pass changes nothing
    rv = env.get()["metadata"]["resourceVersion"]
    env.reconcile()
    assert env.get()["metadata"]["resourceVersion"] == rv


@pytest.mark.parametrize(
    ("version", "family", "first"),
    [
        ("1.33.0", "Ubuntu", "2204gen2containerd"),
        ("1.34.1", "Ubuntu", "2404gen2containerd"),
        ("1.31.0", "Ubuntu2404", "2404gen2containerd"),
        ("1.31.0", "AzureLinux", "V2gen2"),
        ("1.32.0", "AzureLinux", "V3gen2"),
    ],
)
def test_the_image_family_and_kubernetes_version_pick_the_images(
    version: str, family: str, first: str
) -> None:
    """upstream ``GetImageFamily``: Ubuntu is 24.04 from 1.34, Azure Linux 3 from 1.32."""
    env = Env(kubernetes_version=version)
    env.create(imageFamily=family)
    env.reconcile()
    assert env.get()["status"]["images"][0]["id"].split("/")[4] == first
    if family == "AzureLinux":
        assert AZURE_LINUX_GALLERY in env.get()["status"]["images"][0]["id"]


def test_trusted_launch_selects_the_tl_image_and_the_version_setting_applies() -> None:
    env = Env({**SETTINGS, "node-image-version": "202501.01.0"})
    env.create(security={"trustedLaunch": {"secureBoot": True}})
    env.reconcile()
    assert [i["id"] for i in env.get()["status"]["images"]] == [
        f"/CommunityGalleries/{UBUNTU_GALLERY}/images/2204gen2TLcontainerd/versions/202501.01.0"
    ]


def test_fips_needs_the_managed_gallery_so_images_are_not_ready() -> None:
    """upstream images.go: FIPS without UseSIG -> ImagesReady False SIGRequiredForFIPS."""
    env = Env()
    env.create(imageFamily="AzureLinux", fipsMode="FIPS")
    env.reconcile()
    assert env.condition("ImagesReady")["reason"] == "SIGRequiredForFIPS"
    assert env.condition("Ready")["status"] == "False"
    assert env.get()["status"]["images"] == []


def test_an_invalid_nodeclass_gets_validation_succeeded_false_with_the_field_and_an_event() -> None:
    env = Env()
    env.create(osDiskSizeGB=10, imageFamily="Ubuntu2404", fipsMode="FIPS")
    assert env.reconcile() == Result()
    cond = env.condition("ValidationSucceeded")
    assert (cond["status"], cond["reason"]) == ("False", "InvalidSpec")
    assert (
        "spec.osDiskSizeGB: Invalid value: 10: spec.osDiskSizeGB in body should be greater than "
        "or equal to 30" in cond["message"]
    )
    assert env.condition("Ready")["status"] == "False"
    assert env.warnings() == [("InvalidSpec", cond["message"])]
    assert HASH_ANNOTATION not in (env.get()["metadata"].get("annotations") or {})
    # fixed: it becomes Ready
    obj = env.get()
    obj["spec"] = {"osDiskSizeGB": 64}
    env.server.update(obj)
    env.reconcile()
    assert env.condition("Ready")["status"] == "True"


def test_a_cel_rule_violation_is_reported_with_its_path() -> None:
    env = Env()
    env.create(kubelet={"imageGCHighThresholdPercent": 50, "imageGCLowThresholdPercent": 60})
    env.reconcile()
    assert env.condition("ValidationSucceeded")["message"] == (
        'spec.kubelet: Invalid value: "object": imageGCHighThresholdPercent must be greater '
        "than imageGCLowThresholdPercent"
    )


def test_without_a_kubernetes_version_images_and_version_are_not_ready() -> None:
    env = Env(kubernetes_version="")
    env.create()
    env.reconcile()
    assert env.condition("KubernetesVersionReady")["reason"] == "KubernetesVersionNotFound"
    assert env.condition("ImagesReady")["status"] == "False"


def test_the_version_comes_from_the_api_server_then_the_setting() -> None:
    env = Env({**SETTINGS, "kubernetes-version": "v1.30"}, kubernetes_version=None)
    env.create()
    env.reconcile()
    assert env.get()["status"]["kubernetesVersion"] == "1.30"

    class WithVersion(InMemoryApiServer):
        def server_version(self) -> dict[str, str]:
            return {"gitVersion": "v1.34.2+k3s1"}

    clock = VirtualClock()
    server = WithVersion(clock)
    r = NodeClassStatusReconciler(server, clock, EventRecorder(clock), SETTINGS)
    server.create(
        {
            "apiVersion": "karpenter.azure.com/v1beta1",
            "kind": "AKSNodeClass",
            "metadata": {"name": "a"},
        }
    )
    r.reconcile(ObjectKey("", "a"))
    status = server.get(NODECLASS_RESOURCE, "a")["status"]
    assert status["kubernetesVersion"] == "1.34.2"
    assert "2404gen2containerd" in status["images"][0]["id"]
    assert parse_version("garbage") == ""


def test_an_invalid_subnet_id_makes_subnets_not_ready() -> None:
    """upstream subnet.go: SubnetIDInvalid."""
    env = Env({"vnet-subnet-id": "not-a-subnet"})
    env.create()
    env.reconcile()
    cond = env.condition("SubnetsReady")
    assert (cond["status"], cond["reason"]) == ("False", "SubnetIDInvalid")
    assert cond["message"].startswith("the vnet-subnet-id setting: 'not-a-subnet'")
    env2 = Env({"vnet-subnet-id": "not-a-subnet"})
    env2.create(vnetSubnetID=SUBNET)
    env2.reconcile()
    assert env2.condition("SubnetsReady")["status"] == "True"


def test_hash_annotations_are_kept_and_nodeclaims_migrate_on_a_version_change() -> None:
    """upstream hash suite: the NodeClass carries hash and hash version; on a version
    change, NodeClaims not drifted get the new hash, drifted ones only the version."""
    env = Env()
    env.create(maxPods=30)
    for name, drifted in (("a", False), ("b", True)):
        nc: dict[str, Any] = {
            "apiVersion": "karpenter.sh/v1",
            "kind": "NodeClaim",
            "metadata": {
                "name": name,
                "annotations": {HASH_ANNOTATION: "old", HASH_VERSION_ANNOTATION: "v1"},
            },
            "spec": {
                "nodeClassRef": {
                    "group": "karpenter.azure.com",
                    "kind": "AKSNodeClass",
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
    a = env.server.get(("karpenter.sh/v1", "NodeClaim"), "a")["metadata"]["annotations"]
    b = env.server.get(("karpenter.sh/v1", "NodeClaim"), "b")["metadata"]["annotations"]
    assert a == {HASH_ANNOTATION: ann[HASH_ANNOTATION], HASH_VERSION_ANNOTATION: HASH_VERSION}
    assert b == {HASH_ANNOTATION: "old", HASH_VERSION_ANNOTATION: HASH_VERSION}
    before = ann[HASH_ANNOTATION]
    obj = env.get()
    obj["spec"]["maxPods"] = 40
    env.server.update(obj)
    env.reconcile()
    assert env.get()["metadata"]["annotations"][HASH_ANNOTATION] != before


def test_a_missing_nodeclass_is_ignored_and_the_controller_is_registered() -> None:
    env = Env()
    assert env.reconcile("nope") == Result()
    from karpenter_azure import plugin

    specs = plugin.karpenter_controllers()
    assert [(s.name, s.cloud_provider) for s in specs] == [
        (CONTROLLER_NAME, "azure"),
        ("azure.catalogue.refresh", "azure"),
        ("azure.nic.gc", "azure"),
    ]


def test_on_the_kits_environment_through_the_controllers_hook(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The plugin's hook registers nodeclass.status with the azure provider selected; on
    the kit's Environment a valid class becomes Ready and an invalid one gets
    ValidationSucceeded=False and a Warning event, and the controller keeps running."""
    from karpenter_core.plugins import get_plugin_manager
    from karpenter_core.testing.environment import Environment

    monkeypatch.setenv("KARPENTER_PLUGINS", "azure")
    settings = {
        "cluster-name": "c",
        "cluster-endpoint": "https://api",
        "node-resource-group": "MC_rg",
        "vnet-subnet-id": SUBNET,
        "kubernetes-version": "1.32.0",
        # what serving needs besides (no ARM call is made: no core controller runs)
        "region": "southcentralus",
        "subscription-id": "00000000-0000-0000-0000-000000000000",
        "kubelet-bootstrap-token": "abcdef.0123456789abcdef",
        "ssh-public-key": "ssh-ed25519 AAAA test",
    }
    with Environment(
        "azure",
        provider_settings=settings,
        plugin_manager=get_plugin_manager(),
        controllers=(),
        kube_scheduler=False,
        kubelet=False,
    ) as env:
        assert (CONTROLLER_NAME, (CONTROLLER_NAME,)) in env.registration.registered
        for name, spec in (("good", {"imageFamily": "AzureLinux"}), ("bad", {"maxPods": 5})):
            env.create(
                {
                    "apiVersion": "karpenter.azure.com/v1beta1",
                    "kind": "AKSNodeClass",
                    "metadata": {"name": name},
                    "spec": spec,
                }
            )
        env.settle()
        good = env.get(NODECLASS_RESOURCE, "good")
        assert {c["type"]: c["status"] for c in good["status"]["conditions"]}["Ready"] == "True"
        assert "V3gen2" in good["status"]["images"][0]["id"]
        bad = env.get(NODECLASS_RESOURCE, "bad")
        cond = {c["type"]: c for c in bad["status"]["conditions"]}["ValidationSucceeded"]
        assert (cond["status"], cond["message"]) == (
            "False",
            "spec.maxPods: Invalid value: 5: spec.maxPods in body should be greater than or "
            "equal to 10",
        )
        assert [e.message for e in env.events("InvalidSpec")] == [cond["message"]]
