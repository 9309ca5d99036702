"""resource.k8s.io/v1 models: typed parsing, path-carrying errors, round trips, pod claims."""

from __future__ import annotations

from typing import Any

import pytest

from karpenter_core.apis.resource import (
    CLAIM_GENERATED,
    CLAIM_NAMED,
    CLAIM_NOT_CREATED,
    CLAIM_NOT_NEEDED,
    APIError,
    DeviceClass,
    ResourceClaim,
    ResourceClaimTemplate,
    ResourceSlice,
    claim_owned_by,
    pod_claim_names,
)

SLICE: dict[str, Any] = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "ResourceSlice",
    "metadata": {"name": "node-a-gpu"},
    "spec": {
        "driver": "gpu.example.com",
        "pool": {"name": "node-a", "generation": 2, "resourceSliceCount": 1},
        "nodeName": "node-a",
        "devices": [
            {
                "name": "gpu-0",
                "attributes": {
                    "model": {"string": "a100"},
                    "index": {"int": 0},
                    "gpu.example.com/mig": {"bool": False},
                    "driverVersion": {"version": "1.2.3"},
                },
                "capacity": {"memory": {"value": "40Gi"}},
            }
        ],
    },
}

CLAIM: dict[str, Any] = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "ResourceClaim",
    "metadata": {"name": "gpus", "namespace": "ml"},
    "spec": {
        "devices": {
            "requests": [
                {
                    "name": "gpu",
                    "exactly": {
                        "deviceClassName": "gpu",
                        "selectors": [{"cel": {"expression": "device.driver == 'x'"}}],
                        "allocationMode": "ExactCount",
                        "count": 2,
                    },
                },
                {
                    "name": "nic",
                    "firstAvailable": [
                        {"name": "fast", "deviceClassName": "nic", "count": 1},
                        {"name": "any", "deviceClassName": "nic", "allocationMode": "All"},
                    ],
                },
            ],
            "constraints": [{"requests": ["gpu"], "matchAttribute": "gpu.example.com/numa"}],
            "config": [{"requests": ["gpu"], "opaque": {"driver": "x", "parameters": {"a": 1}}}],
        }
    },
    "status": {
        "allocation": {
            "devices": {
                "results": [
                    {"request": "gpu", "driver": "gpu.example.com", "pool": "p", "device": "d"}
                ]
            },
            "nodeSelector": {
                "nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n"]}]}
                ]
            },
        },
        "reservedFor": [{"resource": "pods", "name": "p", "uid": "u1"}],
    },
}


def test_resource_slice_reads_typed_devices() -> None:
    s = ResourceSlice.from_dict(SLICE)
    d = s.spec.devices[0]
    assert s.spec.pool.generation == 2 and s.spec.node_name == "node-a"
    assert d.attributes["model"].value == "a100" and d.attributes["model"].type_name == "string"
    assert d.attributes["index"].value == 0 and d.attributes["gpu.example.com/mig"].value is False
    assert d.attributes["driverVersion"].type_name == "version"
    assert d.capacity["memory"].milli == 40 * 2**30 * 1000
    assert s.to_dict() == SLICE


def test_resource_claim_reads_requests_constraints_and_status() -> None:
    c = ResourceClaim.from_dict(CLAIM)
    gpu, nic = c.spec.devices.requests
    assert c.key == ("ml", "gpus")
    assert gpu.exactly is not None and gpu.exactly.device_count == 2
    assert [s.mode for s in nic.first_available] == ["ExactCount", "All"]
    assert c.spec.devices.constraints[0].match_attribute == "gpu.example.com/numa"
    assert c.allocation is not None and c.allocation.devices.results[0].device == "d"
    assert c.reserved_for[0].is_pod
    assert c.to_dict() == CLAIM


def test_device_class_and_template() -> None:
    dc = DeviceClass.from_dict(
        {"metadata": {"name": "gpu"}, "spec": {"selectors": [{"cel": {"expression": "true"}}]}}
    )
    assert dc.name == "gpu" and dc.spec.selectors[0].cel is not None
    t = ResourceClaimTemplate.from_dict(
        {"metadata": {"name": "t", "namespace": "ml"}, "spec": {"spec": CLAIM["spec"]}}
    )
    assert t.spec.spec.devices.requests[0].name == "gpu"


@pytest.mark.parametrize(
    ("patch", "path"),
    [
        ({"attributes": {"a": {"int": 1, "bool": True}}}, "spec.devices[0].attributes[a]"),
        ({"attributes": {"a": {}}}, "spec.devices[0].attributes[a]"),
        ({"capacity": {"m": {"value": "lots"}}}, "spec.devices[0].capacity[m].value"),
        ({"name": 7}, "spec.devices[0].name"),
        ({"attributes": []}, "spec.devices[0].attributes"),
    ],
)
def test_malformed_devices_name_the_field(patch: dict[str, Any], path: str) -> None:
    body = {"spec": {"driver": "d", "devices": [{"name": "x", **patch}]}}
    with pytest.raises(APIError) as raised:
        ResourceSlice.from_dict(body)
    assert str(raised.value).startswith(path)


def test_malformed_requests_name_the_field() -> None:
    bad_mode = {
        "spec": {"devices": {"requests": [{"name": "r", "exactly": {"allocationMode": "Most"}}]}}
    }
    with pytest.raises(APIError, match=r"spec.devices.requests\[0\].exactly.allocationMode"):
        ResourceClaim.from_dict(bad_mode)
    both = {
        "spec": {
            "devices": {
                "requests": [{"name": "r", "exactly": {}, "firstAvailable": [{"name": "a"}]}]
            }
        }
    }
    with pytest.raises(APIError, match="exclusive"):
        ResourceClaim.from_dict(both)


def _pod(
    claims: list[dict[str, Any]], statuses: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    pod: dict[str, Any] = {
        "metadata": {"name": "p", "uid": "u1"},
        "spec": {"resourceClaims": claims},
    }
    if statuses is not None:
        pod["status"] = {"resourceClaimStatuses": statuses}
    return pod


def test_pod_claim_names_follow_the_resourceclaim_controller() -> None:
    pod = _pod(
        [
            {"name": "shared", "resourceClaimName": "team-gpus"},
            {"name": "mine", "resourceClaimTemplateName": "gpu-template"},
            {"name": "later", "resourceClaimTemplateName": "gpu-template"},
            {"name": "skip", "resourceClaimTemplateName": "gpu-template"},
        ],
        [{"name": "mine", "resourceClaimName": "p-mine-x7k2q"}, {"name": "skip"}],
    )
    shared, mine, later, skip = pod_claim_names(pod)
    assert (shared.state, shared.claim_name, shared.owned) == (CLAIM_NAMED, "team-gpus", False)
    assert (mine.state, mine.claim_name, mine.owned) == (CLAIM_GENERATED, "p-mine-x7k2q", True)
    assert (later.state, later.claim_name) == (CLAIM_NOT_CREATED, None)
    assert (skip.state, skip.claim_name) == (CLAIM_NOT_NEEDED, None)


def test_pod_claim_without_a_source_is_an_error() -> None:
    with pytest.raises(APIError, match=r"spec.resourceClaims\[0\]"):
        pod_claim_names(_pod([{"name": "x"}]))


def test_generated_claim_must_be_owned_by_the_pod() -> None:
    claim = ResourceClaim.from_dict(
        {"metadata": {"name": "c", "ownerReferences": [{"kind": "Pod", "name": "p", "uid": "u1"}]}}
    )
    assert claim_owned_by(claim, "u1") and not claim_owned_by(claim, "u2")
