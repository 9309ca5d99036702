"""The shipped CRD manifests: in sync with the Python description, upstream-compatible shape."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from karpenter_core.apis.crds import crd_manifests, crd_yaml_files, render
from karpenter_core.apis.crds.schema import CRD_FILES, all_crds, object_schema
from karpenter_core.apis.validation import CEL_RULES, schema_rules


@pytest.mark.parametrize("name", list(CRD_FILES))
def test_yaml_files_are_rendered_from_the_schema_module(name: str) -> None:
    # Regenerate with `python -m karpenter_core.apis.crds` when this fails.
    assert crd_yaml_files()[name] == render(CRD_FILES[name]())


def test_crd_manifests_equal_the_builders() -> None:
    assert crd_manifests() == all_crds()


def test_crd_manifests_returns_fresh_copies() -> None:
    first = crd_manifests()
    first[0]["spec"]["group"] = "mutated"
    assert crd_manifests()[0]["spec"]["group"] == "karpenter.sh"


def test_every_cel_rule_has_a_python_implementation() -> None:
    rules = {r for crd in all_crds() for r in schema_rules(crd)}
    assert rules, "expected CEL rules in the CRDs"
    assert rules <= set(CEL_RULES), sorted(rules - set(CEL_RULES))


def _by_kind() -> dict[str, dict[str, Any]]:
    return {c["spec"]["names"]["kind"]: c for c in crd_manifests()}


@pytest.mark.parametrize(
    ("kind", "name", "group", "version", "scope", "short"),
    [
        ("NodePool", "nodepools.karpenter.sh", "karpenter.sh", "v1", "Cluster", None),
        ("NodeClaim", "nodeclaims.karpenter.sh", "karpenter.sh", "v1", "Cluster", None),
        (
            "NodeOverlay",
            "nodeoverlays.karpenter.sh",
            "karpenter.sh",
            "v1alpha1",
            "Cluster",
            ["overlays"],
        ),
        (
            "CapacityBuffer",
            "capacitybuffers.autoscaling.x-k8s.io",
            "autoscaling.x-k8s.io",
            "v1beta1",
            "Namespaced",
            ["cb"],
        ),
    ],
)
def test_crd_identity(
    kind: str, name: str, group: str, version: str, scope: str, short: list[str] | None
) -> None:
    crd = _by_kind()[kind]
    assert crd["apiVersion"] == "apiextensions.k8s.io/v1"
    assert crd["metadata"]["name"] == name
    assert crd["spec"]["group"] == group
    assert crd["spec"]["scope"] == scope
    assert crd["spec"]["names"].get("shortNames") == short
    [v] = crd["spec"]["versions"]
    assert (v["name"], v["served"], v["storage"]) == (version, True, True)
    assert "status" in v["subresources"]


def test_nodepool_has_scale_subresource_on_replicas_and_nodes() -> None:
    [v] = _by_kind()["NodePool"]["spec"]["versions"]
    assert v["subresources"]["scale"] == {
        "specReplicasPath": ".spec.replicas",
        "statusReplicasPath": ".status.nodes",
    }


def test_nodepool_printer_columns() -> None:
    [v] = _by_kind()["NodePool"]["spec"]["versions"]
    cols = [(c["name"], c.get("priority", 0)) for c in v["additionalPrinterColumns"]]
    assert cols == [
        ("NodeClass", 0),
        ("Nodes", 0),
        ("Ready", 0),
        ("Age", 0),
        ("Weight", 1),
        ("CPU", 1),
        ("Memory", 1),
    ]


def test_nodeclaim_printer_columns() -> None:
    [v] = _by_kind()["NodeClaim"]["spec"]["versions"]
    names = [c["name"] for c in v["additionalPrinterColumns"]]
    assert names == [
        "Type",
        "Capacity",
        "Zone",
        "Node",
        "Ready",
        "Age",
        "ImageID",
        "ID",
        "NodePool",
        "NodeClass",
        "Drifted",
    ]


def test_nodepool_defaults_in_schema() -> None:
    spec = object_schema("karpenter.sh/v1", "NodePool")
    assert spec is not None
    props = spec["properties"]["spec"]["properties"]
    disruption = props["disruption"]
    assert disruption["default"] == {"consolidateAfter": "0s"}
    assert disruption["properties"]["budgets"]["default"] == [{"nodes": "10%"}]
    assert disruption["properties"]["consolidationPolicy"]["default"] == "WhenEmptyOrUnderutilized"
    tmpl = props["template"]["properties"]["spec"]["properties"]
    assert tmpl["expireAfter"]["default"] == "720h"


def test_nodeclaim_reasons_may_be_empty_but_nodepool_reasons_may_not() -> None:
    def reason(kind: str, version: str) -> dict[str, Any]:
        schema = object_schema(version, kind)
        assert schema is not None
        return schema["properties"]["status"]["properties"]["conditions"]["items"]["properties"][
            "reason"
        ]

    assert "minLength" not in reason("NodeClaim", "karpenter.sh/v1")
    assert reason("NodePool", "karpenter.sh/v1")["minLength"] == 1


def test_yaml_files_parse_as_single_documents() -> None:
    for text in crd_yaml_files().values():
        docs = [d for d in yaml.safe_load_all(text) if d is not None]
        assert len(docs) == 1
        assert docs[0]["kind"] == "CustomResourceDefinition"
