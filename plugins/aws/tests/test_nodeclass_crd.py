"""The EC2NodeClass CRD: package data of karpenter-aws, a valid CustomResourceDefinition whose
schema accepts an upstream-style manifest (the example) without pruning any of its fields.

The in-memory API server does not validate objects against CRD schemas, so the schema is
checked structurally here: a small walker applies the OpenAPI keywords the CRD uses (type,
properties, required, items, enum, pattern, bounds, sizes) and reports fields the API server
would prune. CEL rules cannot run here; ``EC2NodeClass.from_dict`` enforces the same rules
(``test_nodeclass.py``).
"""

from __future__ import annotations

import re
from importlib.resources import files
from pathlib import Path
from typing import Any

import pytest
import yaml
from karpenter_aws.labels import EC2_NODE_CLASS
from karpenter_aws.nodeclass import EC2NodeClass

from karpenter_core.plugins import crd_problem

CRD_FILE = "karpenter.k8s.aws_ec2nodeclasses.yaml"
EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "ec2nodeclass.yaml"


def load_crd() -> dict[str, Any]:
    doc = yaml.safe_load((files("karpenter_aws") / "crds" / CRD_FILE).read_text())
    assert isinstance(doc, dict)
    return doc


def schema() -> dict[str, Any]:
    [version] = [v for v in load_crd()["spec"]["versions"] if v["storage"]]
    return dict(version["schema"]["openAPIV3Schema"])


def example() -> dict[str, Any]:
    doc = yaml.safe_load(EXAMPLE.read_text())
    assert isinstance(doc, dict)
    return doc


_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "boolean": (bool,),
    "integer": (int,),
    "number": (int, float),
}


def problems(value: Any, s: dict[str, Any], path: str = "") -> list[str]:
    """What the API server's structural schema checks would reject or prune."""
    out: list[str] = []
    t = s.get("type")
    if t is not None:
        ok = isinstance(value, _TYPES[t]) and not (
            t in ("integer", "number") and isinstance(value, bool)
        )
        if not ok:
            return [f"{path}: expected {t}, got {type(value).__name__}"]
    if "enum" in s and value not in s["enum"]:
        out.append(f"{path}: {value!r} not in {s['enum']}")
    if "pattern" in s and isinstance(value, str) and not re.search(s["pattern"], value):
        out.append(f"{path}: {value!r} does not match {s['pattern']}")
    if isinstance(value, int | float) and not isinstance(value, bool):
        if "minimum" in s and value < s["minimum"]:
            out.append(f"{path}: {value} < {s['minimum']}")
        if "maximum" in s and value > s["maximum"]:
            out.append(f"{path}: {value} > {s['maximum']}")
    if isinstance(value, str):
        if "maxLength" in s and len(value) > s["maxLength"]:
            out.append(f"{path}: longer than {s['maxLength']}")
        if "minLength" in s and len(value) < s["minLength"]:
            out.append(f"{path}: shorter than {s['minLength']}")
    if isinstance(value, list):
        if "maxItems" in s and len(value) > s["maxItems"]:
            out.append(f"{path}: more than {s['maxItems']} items")
        if "minItems" in s and len(value) < s["minItems"]:
            out.append(f"{path}: fewer than {s['minItems']} items")
        for i, item in enumerate(value):
            out += problems(item, s.get("items", {}), f"{path}[{i}]")
    if isinstance(value, dict):
        if "maxProperties" in s and len(value) > s["maxProperties"]:
            out.append(f"{path}: more than {s['maxProperties']} properties")
        for key in s.get("required", []):
            if key not in value:
                out.append(f"{path}.{key}: required")
        props = s.get("properties")
        extra = s.get("additionalProperties")
        for k, v in value.items():
            if props is not None and k in props:
                out += problems(v, props[k], f"{path}.{k}")
            elif isinstance(extra, dict):
                out += problems(v, extra, f"{path}.{k}")
            elif props is not None and not s.get("x-kubernetes-preserve-unknown-fields"):
                out.append(f"{path}.{k}: unknown field (would be pruned)")
    return out


def rules(s: Any) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    if isinstance(s, dict):
        found += s.get("x-kubernetes-validations", [])
        for v in s.values():
            found += rules(v)
    elif isinstance(s, list):
        for v in s:
            found += rules(v)
    return found


def test_the_crd_is_package_data_and_a_valid_crd_for_the_nodeclass() -> None:
    crd = load_crd()
    assert crd_problem(crd) is None
    assert crd["metadata"]["name"] == "ec2nodeclasses.karpenter.k8s.aws"
    spec = crd["spec"]
    assert (spec["group"], spec["names"]["kind"], spec["scope"]) == (
        EC2_NODE_CLASS.group,
        EC2_NODE_CLASS.kind,
        "Cluster",
    )
    [version] = spec["versions"]
    assert version["name"] == EC2_NODE_CLASS.version
    assert version["served"] and version["storage"] and version["subresources"] == {"status": {}}
    assert spec["names"]["shortNames"] == ["ec2nc", "ec2ncs"]


def test_the_example_fits_the_schema_without_pruning() -> None:
    assert problems(example(), schema()) == []


def test_the_example_parses() -> None:
    obj = example()
    nc = EC2NodeClass.from_dict(obj)
    assert nc.ami_family == "AL2023"
    assert nc.kubelet.max_pods == 110
    assert nc.block_device_mappings[0].volume_size == 100 * 1024**3


def test_resolved_status_fits_the_schema() -> None:
    obj = example()
    obj["status"] = {
        "subnets": [{"id": "subnet-1", "zone": "us-west-2a", "zoneID": "usw2-az1"}],
        "securityGroups": [{"id": "sg-1", "name": "nodes"}],
        "amis": [
            {
                "id": "ami-1",
                "name": "al2023",
                "requirements": [
                    {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
                    {"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "DoesNotExist"},
                ],
            }
        ],
        "instanceProfile": "my-cluster_123",
        "conditions": [
            {
                "type": "SubnetsReady",
                "status": "False",
                "reason": "SubnetsDiscoveryFailed",
                "message": "DescribeSubnets failed: UnauthorizedOperation: no",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
                "observedGeneration": 1,
            }
        ],
    }
    assert problems(obj, schema()) == []


@pytest.mark.parametrize(
    ("path", "value", "expected"),
    [
        (("spec", "amiFamily"), "Ubuntu", "not in"),
        (("spec", "metadataOptions", "httpPutResponseHopLimit"), 65, "> 64"),
        (("spec", "subnetSelectorTerms", 0, "id"), "sg-123", "does not match"),
        (("spec", "blockDeviceMappings", 0, "ebs", "volumeSize"), "100", "does not match"),
        (("spec", "tags"), ["a"], "expected object"),
        (("spec", "bogus"), True, "would be pruned"),
    ],
)
def test_the_schema_rejects_bad_fields(path: tuple[Any, ...], value: Any, expected: str) -> None:
    obj = example()
    target: Any = obj
    for p in path[:-1]:
        target = target[p]
    target[path[-1]] = value
    assert any(expected in p for p in problems(obj, schema()))


def test_every_cel_rule_has_a_message() -> None:
    found = rules(schema())
    assert len(found) > 30
    assert all(r.get("rule") and r.get("message") for r in found)


def test_metadata_options_default_to_the_model_defaults() -> None:
    default = schema()["properties"]["spec"]["properties"]["metadataOptions"]["default"]
    mo = EC2NodeClass.from_dict(
        {
            "metadata": {"name": "x"},
            "spec": {
                "subnetSelectorTerms": [{"id": "subnet-1"}],
                "securityGroupSelectorTerms": [{"id": "sg-1"}],
                "amiSelectorTerms": [{"alias": "al2023@latest"}],
                "role": "r",
            },
        }
    ).metadata_options
    assert default == {
        "httpEndpoint": mo.http_endpoint,
        "httpProtocolIPv6": mo.http_protocol_ipv6,
        "httpPutResponseHopLimit": mo.http_put_response_hop_limit,
        "httpTokens": mo.http_tokens,
    }
