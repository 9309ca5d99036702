"""The GCENodeClass model: validated by karpenter-core's CRD validator over the shipped CRD
(``karpenter.k8s.gcp_gcenodeclasses.yaml``: its schema and ``x-kubernetes-validations``
rules), it must accept and reject exactly what the API server would, with the API server's
field paths and wording. Every case is also run on the whole object through the validator
``karpenter validate`` uses; and the accessors follow upstream ``gcenodeclass_test.go``
(``ImageFamily()``, ``Alias()``, ``GetMaxPods()``)."""

from __future__ import annotations

import functools
from typing import Any

import pytest
from karpenter_gcp.nodeclass import (
    CRD_FILE,
    DEFAULT_MAX_PODS,
    NODECLASS_RESOURCE,
    RESERVED_METADATA_KEYS,
    Alias,
    GCENodeClass,
    NodeClassError,
    apply_defaults,
    crd_document,
    get_nodeclass,
    validate_spec,
)

from karpenter_core.apis.crds.openapi import CRDSchema
from karpenter_core.runtime.clock import VirtualClock
from karpenter_core.sim.apiserver import InMemoryApiServer

COS = {"alias": "ContainerOptimizedOS@latest"}
NOT_CHECKED = (
    "<nil>: Invalid value: null: some validation rules were not checked because the object was "
    "invalid; correct the existing errors to complete validation"
)
"""What the API server adds when a blocking error (wrong type, missing required field,
unsupported value, too long or too many) kept it from running the CEL rules."""


@functools.cache
def _crd() -> CRDSchema:
    return CRDSchema(crd_document())


def crd_errors(spec: dict[str, Any]) -> list[str]:
    """What the shipped CRD's schema and CEL rules say (karpenter-core's evaluator)."""
    obj = {
        "apiVersion": "karpenter.k8s.gcp/v1alpha1",
        "kind": "GCENodeClass",
        "metadata": {"name": "x"},
        "spec": spec,
    }
    return [str(e) for e in _crd().validate(obj)]


def spec(**fields: Any) -> dict[str, Any]:
    return {"imageSelectorTerms": [COS], **fields}


# (spec, the API server's "path: Invalid value: \"<type>\": message" lines; [] = valid)
CEL_CASES: list[tuple[str, dict[str, Any], list[str]]] = [
    ("minimal", spec(), []),
    # disks
    ("disk size 10", spec(disks=[{"sizeGiB": 10, "boot": True}]), []),
    (
        "disk size 9",
        spec(disks=[{"sizeGiB": 9, "boot": True}]),
        ['spec.disks[0].sizeGiB: Invalid value: "integer": size invalid'],
    ),
    (
        "iops on pd-extreme",
        spec(disks=[{"sizeGiB": 100, "category": "pd-extreme", "provisionedIOPS": 3000}]),
        [],
    ),
    (
        "iops on pd-balanced",
        spec(disks=[{"sizeGiB": 100, "category": "pd-balanced", "provisionedIOPS": 3000}]),
        [
            'spec.disks[0]: Invalid value: "object": provisionedIOPS is only applicable for pd-extreme, '
            "hyperdisk-balanced, hyperdisk-balanced-high-availability, and hyperdisk-extreme"
        ],
    ),
    (
        "throughput on hyperdisk-throughput",
        spec(
            disks=[
                {"sizeGiB": 100, "category": "hyperdisk-throughput", "provisionedThroughput": 200}
            ]
        ),
        [],
    ),
    (
        "throughput on pd-ssd",
        spec(disks=[{"sizeGiB": 100, "category": "pd-ssd", "provisionedThroughput": 200}]),
        [
            'spec.disks[0]: Invalid value: "object": provisionedThroughput is only applicable for '
            "hyperdisk-balanced, hyperdisk-balanced-high-availability, hyperdisk-throughput, "
            "and hyperdisk-ml"
        ],
    ),
    (
        "hyperdisk-balanced with both",
        spec(
            disks=[
                {
                    "sizeGiB": 100,
                    "category": "hyperdisk-balanced",
                    "provisionedIOPS": 3000,
                    "provisionedThroughput": 140,
                }
            ]
        ),
        [],
    ),
    (
        "hyperdisk-balanced-high-availability with iops only",
        spec(
            disks=[
                {
                    "sizeGiB": 100,
                    "category": "hyperdisk-balanced-high-availability",
                    "provisionedIOPS": 3000,
                }
            ]
        ),
        [
            'spec.disks[0]: Invalid value: "object": provisionedIOPS and provisionedThroughput must both '
            "be set or both be unset for hyperdisk-balanced and "
            "hyperdisk-balanced-high-availability"
        ],
    ),
    # aliases
    (
        "alias COS pinned",
        spec(imageSelectorTerms=[{"alias": "ContainerOptimizedOS@125.19216.104.126"}]),
        [],
    ),
    ("alias Ubuntu pinned", spec(imageSelectorTerms=[{"alias": "Ubuntu@v20260416"}]), []),
    (
        "alias without @",
        spec(imageSelectorTerms=[{"alias": "Ubuntu"}]),
        [
            "spec.imageSelectorTerms[0].alias: Invalid value: \"string\": 'alias' is improperly formatted, "
            "must match the format 'family@version'"
        ],
    ),
    (
        "alias of another family",
        spec(imageSelectorTerms=[{"alias": "Windows@latest"}]),
        [
            'spec.imageSelectorTerms[0].alias: Invalid value: "string": family is not supported, must be '
            "one of the following: 'ContainerOptimizedOS,Ubuntu'"
        ],
    ),
    (
        "alias COS bad version",
        spec(imageSelectorTerms=[{"alias": "ContainerOptimizedOS@125.1"}]),
        [
            'spec.imageSelectorTerms[0].alias: Invalid value: "string": ContainerOptimizedOS version must '
            "be 'latest' or 'milestone.build.build.build' (e.g. '125.19216.104.126')"
        ],
    ),
    (
        "alias Ubuntu bad version",
        spec(imageSelectorTerms=[{"alias": "Ubuntu@2026-04-16"}]),
        [
            "spec.imageSelectorTerms[0].alias: Invalid value: \"string\": Ubuntu version must be 'latest' "
            "or 'vYYYYMMDD' (e.g. 'v20260416')"
        ],
    ),
    # family / channel / version terms
    (
        "family COS channel",
        spec(imageSelectorTerms=[{"family": "ContainerOptimizedOS", "channel": "stable"}]),
        [],
    ),
    (
        "family Ubuntu2204 pinned",
        spec(imageSelectorTerms=[{"family": "Ubuntu2204", "version": "v20260101"}]),
        [],
    ),
    ("id term", spec(imageSelectorTerms=[{"id": "projects/p/global/images/i"}]), []),
    (
        "family alone",
        spec(imageSelectorTerms=[{"family": "Ubuntu2404"}]),
        [
            'spec.imageSelectorTerms[0]: Invalid value: "object": family requires either channel or '
            "version to be set"
        ],
    ),
    (
        "version without family",
        spec(imageSelectorTerms=[{"id": "projects/p/global/images/i", "version": "latest"}]),
        [
            'spec.imageSelectorTerms[0]: Invalid value: "object": channel and version require family to be set'
        ],
    ),
    (
        "channel and version",
        spec(
            imageSelectorTerms=[
                {"family": "ContainerOptimizedOS", "channel": "stable", "version": "latest"}
            ]
        ),
        [
            'spec.imageSelectorTerms[0]: Invalid value: "object": channel and version cannot both be set',
            'spec.imageSelectorTerms: Invalid value: "array": channel: and version: latest cannot both '
            "appear in the same imageSelectorTerms",
        ],
    ),
    (
        "channel for Ubuntu",
        spec(imageSelectorTerms=[{"family": "Ubuntu2404", "channel": "regular"}]),
        [
            'spec.imageSelectorTerms[0]: Invalid value: "object": channel is only supported for family '
            "ContainerOptimizedOS"
        ],
    ),
    (
        "alias and id",
        spec(imageSelectorTerms=[{"alias": "Ubuntu@latest", "id": "projects/p/global/images/i"}]),
        [
            'spec.imageSelectorTerms[0]: Invalid value: "object": exactly one of alias, id, or family must be set'
        ],
    ),
    (
        "empty term",
        spec(imageSelectorTerms=[{}]),
        [
            'spec.imageSelectorTerms[0]: Invalid value: "object": exactly one of alias, id, or family '
            "must be set",
            'spec.imageSelectorTerms: Invalid value: "array": each term must set exactly one of: alias, '
            "id, or family (with channel or version)",
        ],
    ),
    (
        "COS family bad version",
        spec(imageSelectorTerms=[{"family": "ContainerOptimizedOS", "version": "v1"}]),
        [
            'spec.imageSelectorTerms[0]: Invalid value: "object": ContainerOptimizedOS version must be '
            "'latest' or 'milestone.build.build.build' (e.g. '125.19216.104.126')"
        ],
    ),
    (
        "Ubuntu2404 family bad version",
        spec(imageSelectorTerms=[{"family": "Ubuntu2404", "version": "20260416"}]),
        [
            "spec.imageSelectorTerms[0]: Invalid value: \"object\": Ubuntu2404 version must be 'latest' or "
            "'vYYYYMMDD' (e.g. 'v20260416')"
        ],
    ),
    (
        "Ubuntu2204 family bad version",
        spec(imageSelectorTerms=[{"family": "Ubuntu2204", "version": "v2026"}]),
        [
            "spec.imageSelectorTerms[0]: Invalid value: \"object\": Ubuntu2204 version must be 'latest' or "
            "'vYYYYMMDD' (e.g. 'v20260416')"
        ],
    ),
    (
        "channel beside COS latest",
        spec(
            imageSelectorTerms=[
                {"family": "ContainerOptimizedOS", "channel": "stable"},
                {"family": "ContainerOptimizedOS", "version": "latest"},
            ]
        ),
        [
            'spec.imageSelectorTerms: Invalid value: "array": channel: and version: latest cannot both '
            "appear in the same imageSelectorTerms"
        ],
    ),
    # kubelet
    (
        "kubelet full",
        spec(
            kubeletConfiguration={
                "maxPods": 64,
                "systemReserved": {"cpu": "100m", "memory": "1Gi"},
                "kubeReserved": {"ephemeral-storage": "1Gi", "pid": "100"},
                "evictionHard": {"memory.available": "5%", "nodefs.available": "10Gi"},
                "evictionSoft": {"memory.available": "10%"},
                "evictionSoftGracePeriod": {"memory.available": "1m"},
                "imageGCHighThresholdPercent": 85,
                "imageGCLowThresholdPercent": 80,
            }
        ),
        [],
    ),
    (
        "gc thresholds",
        spec(
            kubeletConfiguration={
                "imageGCHighThresholdPercent": 50,
                "imageGCLowThresholdPercent": 50,
            }
        ),
        [
            'spec.kubeletConfiguration: Invalid value: "object": imageGCHighThresholdPercent must be '
            "greater than imageGCLowThresholdPercent"
        ],
    ),
    (
        "evictionSoft without grace periods",
        spec(kubeletConfiguration={"evictionSoft": {"memory.available": "10%"}}),
        [
            # the rule reads the absent map: CEL fails with "no such key", which rejects it
            'spec.kubeletConfiguration: Invalid value: "object": no such key: '
            "evictionSoftGracePeriod evaluating rule: evictionSoft OwnerKey does not have a "
            "matching evictionSoftGracePeriod"
        ],
    ),
    (
        "grace period without evictionSoft key",
        spec(
            kubeletConfiguration={
                "evictionSoft": {"memory.available": "10%"},
                "evictionSoftGracePeriod": {"memory.available": "1m", "pid.available": "1m"},
            }
        ),
        [
            'spec.kubeletConfiguration: Invalid value: "object": evictionSoftGracePeriod OwnerKey does not '
            "have a matching evictionSoft"
        ],
    ),
    (
        "evictionHard bad key and value",
        spec(kubeletConfiguration={"evictionHard": {"memory": "lots"}}),
        [
            'spec.kubeletConfiguration.evictionHard: Invalid value: "object": valid keys for evictionHard '
            "are ['memory.available','nodefs.available','nodefs.inodesFree',"
            "'imagefs.available','imagefs.inodesFree','pid.available']",
            'spec.kubeletConfiguration.evictionHard: Invalid value: "object": evictionHard values must be '
            "a percentage or a resource.Quantity",
        ],
    ),
    (
        "evictionHard 101%",
        spec(kubeletConfiguration={"evictionHard": {"memory.available": "101%"}}),
        [
            'spec.kubeletConfiguration.evictionHard: Invalid value: "object": evictionHard values must be '
            "a percentage or a resource.Quantity"
        ],
    ),
    (
        "kubeReserved bad key",
        spec(kubeletConfiguration={"kubeReserved": {"gpu": "1"}}),
        [
            'spec.kubeletConfiguration.kubeReserved: Invalid value: "object": valid keys for kubeReserved '
            "are ['cpu','memory','ephemeral-storage','pid']"
        ],
    ),
    (
        "systemReserved negative",
        spec(kubeletConfiguration={"systemReserved": {"cpu": "-1"}}),
        [
            'spec.kubeletConfiguration.systemReserved: Invalid value: "object": systemReserved value '
            "cannot be a negative resource quantity"
        ],
    ),
    (
        "systemReserved not a quantity",
        spec(kubeletConfiguration={"systemReserved": {"memory": "1 GB"}}),
        [
            'spec.kubeletConfiguration.systemReserved: Invalid value: "object": systemReserved values must '
            "be a resource.Quantity"
        ],
    ),
    # labels and metadata
    ("labels", spec(labels={"team": "a"}, metadata={"serial-port-logging-enable": "true"}), []),
    (
        "empty label key",
        spec(labels={"": "a"}),
        ['spec.labels: Invalid value: "object": empty tag keys aren\'t supported'],
    ),
    (
        "cluster-name label",
        spec(labels={"gce:gce-cluster-name": "a"}),
        [
            'spec.labels: Invalid value: "object": tag contains a restricted tag matching gce:gce-cluster-name'
        ],
    ),
    (
        "kubernetes.io/cluster label",
        spec(labels={"kubernetes.io/cluster/x": "owned"}),
        [
            'spec.labels: Invalid value: "object": tag contains a restricted tag matching '
            "kubernetes.io/cluster/"
        ],
    ),
    (
        "nodepool label",
        spec(labels={"karpenter.sh/nodepool": "a"}),
        [
            'spec.labels: Invalid value: "object": tag contains a restricted tag matching karpenter.sh/nodepool'
        ],
    ),
    (
        "nodeclaim label",
        spec(labels={"karpenter.sh/nodeclaim": "a"}),
        [
            'spec.labels: Invalid value: "object": tag contains a restricted tag matching '
            "karpenter.sh/nodeclaim"
        ],
    ),
    (
        "nodeclass label",
        spec(labels={"karpenter.k8s.gcp/gcenodeclass": "a"}),
        [
            'spec.labels: Invalid value: "object": tag contains a restricted tag matching '
            "karpenter.k8s.gcp/gcenodeclass"
        ],
    ),
]


@pytest.mark.parametrize(
    ("spec_", "expected"), [c[1:] for c in CEL_CASES], ids=[c[0] for c in CEL_CASES]
)
def test_the_crds_rules_accept_and_reject_as_upstream(
    spec_: dict[str, Any], expected: list[str]
) -> None:
    assert validate_spec(spec_) == expected
    # the whole object through the CRD validator ``karpenter validate`` uses says the same
    assert crd_errors(spec_) == expected


@pytest.mark.parametrize("key", sorted(RESERVED_METADATA_KEYS))
def test_every_reserved_gke_metadata_key_is_rejected(key: str) -> None:
    """upstream gcenodeclass_crd_test.go: each key the GKE bootstrap owns is denied."""
    expected = [
        'spec.metadata: Invalid value: "object": spec.metadata contains a reserved GKE metadata key'
    ]
    assert validate_spec(spec(metadata={key: "x"})) == expected
    assert f"'{key}'" in str(crd_document())
    assert crd_errors(spec(metadata={key: "x"}))


@pytest.mark.parametrize(
    ("spec_", "error"),
    [
        ({}, "spec.imageSelectorTerms: Required value"),
        (
            {"imageSelectorTerms": []},
            "spec.imageSelectorTerms: Invalid value: 0: spec.imageSelectorTerms in body should "
            "have at least 1 items",
        ),
        (
            {"imageSelectorTerms": [COS] * 31},
            "spec.imageSelectorTerms: Too many: 31: must have at most 30 items",
        ),
        (
            spec(imageFamily="Windows"),
            'spec.imageFamily: Unsupported value: "Windows": supported values: "Ubuntu", '
            '"ContainerOptimizedOS"',
        ),
        (
            spec(networkTags=["Bad_Tag"]),
            'spec.networkTags[0]: Invalid value: "Bad_Tag": spec.networkTags[0] in body should '
            "match '^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$'",
        ),
        (
            spec(networkTags=[f"t{i}" for i in range(21)]),
            "spec.networkTags: Too many: 21: must have at most 20 items",
        ),
        (
            spec(serviceAccount="me@gmail.com"),
            'spec.serviceAccount: Invalid value: "me@gmail.com": spec.serviceAccount in body '
            "should match",
        ),
        (
            spec(subnetRangeName=""),
            'spec.subnetRangeName: Invalid value: "": spec.subnetRangeName in body should be at '
            "least 1 chars long",
        ),
        (
            spec(labels={f"k{i}": "v" for i in range(21)}),
            "spec.labels: Too many: 21: must have at most 20 items",
        ),
        (
            spec(disks=[{"sizeGiB": 10, "category": "pd-fast"}]),
            'spec.disks[0].category: Unsupported value: "pd-fast"',
        ),
        (
            spec(disks=[{"sizeGiB": 10, "kmsKeyName": "key"}]),
            'spec.disks[0].kmsKeyName: Invalid value: "key": spec.disks[0].kmsKeyName in body '
            "should match",
        ),
        (
            spec(disks=[{"sizeGiB": 10}] * 11),
            "spec.disks: Too many: 11: must have at most 10 items",
        ),
        (
            spec(confidentialInstanceType="SGX"),
            'spec.confidentialInstanceType: Unsupported value: "SGX"',
        ),
        (spec(gpuDriverVersion="newest"), 'spec.gpuDriverVersion: Unsupported value: "newest"'),
        (
            spec(kubeletConfiguration={"maxPods": -1}),
            "spec.kubeletConfiguration.maxPods: Invalid value: -1: "
            "spec.kubeletConfiguration.maxPods in body should be greater than or equal to 0",
        ),
        (
            spec(kubeletConfiguration={"imageGCHighThresholdPercent": 101}),
            "spec.kubeletConfiguration.imageGCHighThresholdPercent: Invalid value: 101: "
            "spec.kubeletConfiguration.imageGCHighThresholdPercent in body should be less than "
            "or equal to 100",
        ),
        (
            spec(networkConfig={"additionalNetworkInterfaces": [{"network": "n"}]}),
            "spec.networkConfig.additionalNetworkInterfaces[0].subnetwork: Required value",
        ),
        (
            spec(autoGPUTaint="yes"),
            'spec.autoGPUTaint: Invalid value: "string": spec.autoGPUTaint in body must be of '
            'type boolean: "string"',
        ),
        # kubectl apply's strict field validation refuses an undeclared field
        (spec(zone="us-central1-a"), 'strict decoding error: unknown field "spec.zone"'),
    ],
)
def test_the_structural_schema_comes_from_the_shipped_crd(
    spec_: dict[str, Any], error: str
) -> None:
    errors = validate_spec(spec_)
    assert any(e.startswith(error) for e in errors), errors
    assert crd_errors(spec_), "the CRD rejects it too"


def test_a_full_upstream_example_is_valid_and_defaults_apply_first() -> None:
    full = {
        "imageSelectorTerms": [{"alias": "ContainerOptimizedOS@latest"}],
        "imageFamily": "ContainerOptimizedOS",
        "serviceAccount": "nodes@my-project.iam.gserviceaccount.com",
        "disks": [{"category": "pd-balanced", "sizeGiB": 60, "boot": True}],
        "subnetRangeName": "pods-range",
        "networkTags": ["gke-node", "allow-ssh"],
        "labels": {"team": "infra"},
        "metadata": {"serial-port-logging-enable": "true"},
        "shieldedInstanceConfig": {"enableSecureBoot": True, "enableVtpm": True},
        "confidentialInstanceType": "SEV",
        "networkConfig": {
            "enablePrivateNodes": True,
            "subnetwork": "projects/p/regions/us-central1/subnetworks/nodes",
            "additionalNetworkInterfaces": [{"subnetwork": "second"}],
        },
        "autoGPUTaint": True,
    }
    assert validate_spec(full) == []
    assert crd_errors(full) == []
    assert apply_defaults(full)["gpuDriverVersion"] == "default"
    assert apply_defaults({"gpuDriverVersion": "latest"})["gpuDriverVersion"] == "latest"
    assert validate_spec(5) == [  # type: ignore[arg-type]
        'spec: Invalid value: "integer": spec in body must be of type object: "integer"',
        NOT_CHECKED,
    ]


def obj(spec_: dict[str, Any], **meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.k8s.gcp/v1alpha1",
        "kind": "GCENodeClass",
        "metadata": {"name": "default", "generation": 2, **meta},
        "spec": spec_,
    }


def test_from_dict_lists_every_problem_with_its_path() -> None:
    """As the API server: a missing required field is a blocking error, which keeps the CEL
    rules from running (it says so); with the required field present, every rule violation
    is listed."""
    with pytest.raises(NodeClassError) as info:
        GCENodeClass.from_dict(obj({"disks": [{"sizeGiB": 5}], "metadata": {"kube-env": "x"}}))
    assert info.value.errors == ("spec.imageSelectorTerms: Required value", NOT_CHECKED)
    assert str(info.value).startswith("spec.imageSelectorTerms: Required value; ")
    with pytest.raises(NodeClassError) as info:
        GCENodeClass.from_dict(obj(spec(disks=[{"sizeGiB": 5}], metadata={"kube-env": "x"})))
    assert info.value.errors == (
        'spec.disks[0].sizeGiB: Invalid value: "integer": size invalid',
        'spec.metadata: Invalid value: "object": spec.metadata contains a reserved GKE '
        "metadata key",
    )


@pytest.mark.parametrize(
    ("spec_", "family", "alias"),
    [
        (
            spec(imageFamily="ContainerOptimizedOS"),
            "ContainerOptimizedOS",
            Alias("ContainerOptimizedOS", "latest"),
        ),
        (
            {"imageSelectorTerms": [{"alias": "Ubuntu@v20260416"}]},
            "Ubuntu",
            Alias("Ubuntu", "v20260416"),
        ),
        (
            {"imageSelectorTerms": [{"family": "ContainerOptimizedOS", "channel": "stable"}]},
            "ContainerOptimizedOS",
            None,
        ),
        ({"imageSelectorTerms": [{"family": "Ubuntu2404", "version": "latest"}]}, "Ubuntu", None),
        ({"imageSelectorTerms": [{"family": "Ubuntu2204", "version": "latest"}]}, "Ubuntu", None),
        ({"imageSelectorTerms": [{"id": "projects/p/global/images/some-image"}]}, "Custom", None),
        (
            {"imageFamily": "Ubuntu", "imageSelectorTerms": [{"id": "projects/p/global/images/i"}]},
            "Ubuntu",
            None,
        ),
    ],
)
def test_image_family_follows_upstream(
    spec_: dict[str, Any], family: str, alias: Alias | None
) -> None:
    """upstream gcenodeclass_test.go TestImageFamily_*: spec.imageFamily, then the alias,
    then a family term (both Ubuntu releases read as Ubuntu), else Custom."""
    nc = GCENodeClass.from_dict(obj(spec_))
    assert nc.image_family == family
    assert nc.alias() == alias


def test_the_accessors_read_the_defaulted_spec_and_status() -> None:
    nc = GCENodeClass.from_dict(
        obj(
            spec(
                serviceAccount="sa@p.iam.gserviceaccount.com",
                disks=[{"sizeGiB": 20, "category": "pd-ssd"}, {"sizeGiB": 50, "boot": True}],
                networkTags=["a", "b"],
                metadata={"k": "v"},
                labels={"l": "v"},
                kubeletConfiguration={"maxPods": 32, "clusterDNS": ["10.0.0.10"]},
                subnetRangeName="pods",
                networkConfig={"subnetwork": "sub", "enablePrivateNodes": False},
                shieldedInstanceConfig={"enableSecureBoot": True},
                confidentialInstanceType="TDX",
                autoGPUTaint=True,
            ),
            annotations={"a": "b"},
        )
        | {
            "status": {
                "images": [{"sourceImage": "projects/p/global/images/i", "requirements": []}]
            }
        }
    )
    assert nc.name == "default" and nc.generation == 2 and nc.annotations == {"a": "b"}
    assert nc.service_account == "sa@p.iam.gserviceaccount.com"
    assert nc.boot_disk == {"sizeGiB": 50, "boot": True}
    assert len(nc.disks) == 2
    assert nc.network_tags == ("a", "b")
    assert nc.metadata == {"k": "v"} and nc.labels == {"l": "v"}
    assert nc.kubelet["clusterDNS"] == ["10.0.0.10"] and nc.max_pods == 32
    assert nc.subnet_range_name == "pods"
    assert nc.subnetwork == "sub" and nc.enable_private_nodes is False
    assert nc.additional_network_interfaces == ()
    assert nc.shielded_instance_config == {"enableSecureBoot": True}
    assert nc.confidential_instance_type == "TDX"
    assert nc.auto_gpu_taint is True
    assert nc.gpu_driver_version == "default"
    assert nc.images[0]["sourceImage"] == "projects/p/global/images/i"
    bare = GCENodeClass.from_dict(obj(spec()))
    assert bare.max_pods == DEFAULT_MAX_PODS == 110  # upstream KubeletMaxPods
    assert bare.service_account is None and bare.boot_disk is None
    assert bare.enable_private_nodes is None and bare.network_tags == ()


def _ready(status: str, generation: int, message: str = "") -> dict[str, Any]:
    return {
        "conditions": [
            {
                "type": "Ready",
                "status": status,
                "observedGeneration": generation,
                "message": message,
            }
        ]
    }


def test_ready_is_unknown_until_the_current_generation_is_reconciled() -> None:
    base = obj(spec())
    assert GCENodeClass.from_dict(base).ready() is None
    assert "no Ready condition" in GCENodeClass.from_dict(base).ready_message()
    assert GCENodeClass.from_dict(base | {"status": _ready("True", 2)}).ready() is True
    assert GCENodeClass.from_dict(base | {"status": _ready("True", 1)}).ready() is None
    not_ready = GCENodeClass.from_dict(base | {"status": _ready("False", 2, "ImagesNotFound")})
    assert not_ready.ready() is False
    assert not_ready.ready_message() == "ImagesNotFound"
    assert not_ready.condition("Ready") is not None and not_ready.condition("ImagesReady") is None


def test_get_nodeclass_reads_validates_and_returns_none_when_missing() -> None:
    server = InMemoryApiServer(VirtualClock())
    assert get_nodeclass(server, "default") is None
    server.create(obj(spec(networkTags=["a"])))
    nc = get_nodeclass(server, "default")
    assert nc is not None and nc.network_tags == ("a",) and nc.generation == 1
    server.create(obj({}, name="broken"))
    with pytest.raises(NodeClassError, match="imageSelectorTerms: Required value"):
        get_nodeclass(server, "broken")
    assert NODECLASS_RESOURCE.plural == "gcenodeclasses"
    assert CRD_FILE == "karpenter.k8s.gcp_gcenodeclasses.yaml"


def test_the_shipped_crd_is_upstreams_api() -> None:
    """Group, kind, scope, version, status subresource, required terms and the one default."""
    crd = crd_document()
    assert crd["metadata"]["name"] == "gcenodeclasses.karpenter.k8s.gcp"
    assert crd["spec"]["group"] == "karpenter.k8s.gcp"
    assert crd["spec"]["scope"] == "Cluster"
    assert crd["spec"]["names"]["kind"] == "GCENodeClass"
    assert crd["spec"]["names"]["shortNames"] == ["gcenc", "gcencs"]
    (version,) = crd["spec"]["versions"]
    assert (version["name"], version["served"], version["storage"]) == ("v1alpha1", True, True)
    assert version["subresources"] == {"status": {}}
    s = version["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert s["required"] == ["imageSelectorTerms"]
    assert s["properties"]["gpuDriverVersion"]["default"] == "default"
    # every CEL rule compiles in karpenter-core's evaluator (problems are found while
    # evaluating, so evaluate every case first)
    for _, case, _ in CEL_CASES:
        crd_errors(case)
    assert _crd().problems == []
