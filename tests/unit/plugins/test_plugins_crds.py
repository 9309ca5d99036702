"""CRDs a cloud provider ships: ``CloudProviderSpec.crds`` and the checks the core makes.

The rules a manifest is checked against are the API server's for a CRD (apiextensions
v1: the name is ``<plural>.<group>``, ``names.kind`` and ``names.plural`` are required,
every version has a ``name`` and a ``served`` flag), plus "one CRD per file" so a
file's text can be printed as one document.
"""

from __future__ import annotations

import copy
from importlib.resources import files
from pathlib import Path
from typing import Any

import pytest
import yaml

from karpenter_core.cloudprovider.protocol import NodeClassKind
from karpenter_core.hookspecs import CloudProviderSpec
from karpenter_core.plugins import (
    PluginError,
    ProviderCRD,
    cloud_provider_crds,
    crd_problem,
    node_classes_without_crd,
    serves,
)

CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "testnodeclasses.karpenter.test.dev"},
    "spec": {
        "group": "karpenter.test.dev",
        "names": {"kind": "TestNodeClass", "plural": "testnodeclasses"},
        "scope": "Cluster",
        "versions": [
            {"name": "v1beta1", "served": False, "storage": False},
            {"name": "v1", "served": True, "storage": True},
        ],
    },
}
NODE_CLASS = NodeClassKind("karpenter.test.dev", "TestNodeClass", "v1")


def spec_with(*crds: Any, node_classes: tuple[NodeClassKind, ...] = ()) -> CloudProviderSpec:
    return CloudProviderSpec(
        name="test",
        factory=lambda _: None,  # type: ignore[arg-type,return-value]
        node_classes=node_classes,
        crds=crds,
    )


def edited(path: str, value: Any) -> dict[str, Any]:
    """CRD with the dotted ``path`` set to ``value`` (deleted when value is ``...``)."""
    crd = copy.deepcopy(CRD)
    *parents, last = path.split(".")
    node: Any = crd
    for key in parents:
        node = node[int(key)] if isinstance(node, list) else node[key]
    if value is ...:
        del node[last]
    elif isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value
    return crd


# --- CloudProviderSpec.crds ---------------------------------------------------------------


def test_crds_default_to_none() -> None:
    assert spec_with().crds == ()


def test_crds_accept_package_files_and_paths(tmp_path: Path) -> None:
    package_file = files("karpenter_core") / "apis" / "crds" / "karpenter.sh_nodepools.yaml"
    spec = spec_with(package_file, tmp_path / "x.yaml")
    assert spec.crds == (package_file, tmp_path / "x.yaml")


def test_crds_refuse_a_string() -> None:
    bare: Any = "crds/x.yaml"  # a path, or a manifest? Neither is guessed at.
    with pytest.raises(TypeError, match="expected a collection of files, got the string"):
        CloudProviderSpec(name="t", factory=lambda _: None, crds=bare)  # type: ignore[arg-type,return-value]


def test_crds_refuse_names_instead_of_files() -> None:
    with pytest.raises(TypeError, match=r"expected files such as importlib.resources.files"):
        spec_with("crds/x.yaml")


# --- crd_problem --------------------------------------------------------------------------


def test_a_complete_crd_has_no_problem() -> None:
    assert crd_problem(CRD) is None


PROBLEMS: list[tuple[str, Any, str]] = [
    ("kind", "ConfigMap", "expected apiVersion apiextensions.k8s.io/v1 kind "),
    ("apiVersion", "apiextensions.k8s.io/v1beta1", "expected apiVersion apiextensions.k8s.io/v1"),
    ("metadata.name", ..., "metadata.name is missing"),
    ("metadata.name", "testnodeclasses", "must be 'testnodeclasses.karpenter.test.dev'"),
    ("spec", ..., "spec is missing"),
    ("spec.group", "", "spec.group is missing"),
    ("spec.names.kind", ..., "spec.names needs a kind and a plural"),
    ("spec.names.plural", 3, "spec.names needs a kind and a plural"),
    ("spec.names.singular", "", "spec.names.singular must be a non-empty string"),
    ("spec.names.shortNames", "tnc", "spec.names.shortNames must be a list of strings"),
    ("spec.versions", [], "spec.versions must be a non-empty list"),
    ("spec.versions.1.name", ..., "spec.versions[1].name is missing"),
    ("spec.versions.0.served", "yes", "spec.versions[0].served must be true or false"),
]


@pytest.mark.parametrize(
    ("path", "value", "problem"), PROBLEMS, ids=[f"{p}={v!r}" for p, v, _ in PROBLEMS]
)
def test_crd_problem_names_what_is_wrong(path: str, value: Any, problem: str) -> None:
    found = crd_problem(edited(path, value))
    assert found is not None
    assert problem in found


def test_a_non_mapping_is_not_a_crd() -> None:
    assert crd_problem(["a"]) == "expected a CustomResourceDefinition object, got a list"


# --- serves / node_classes_without_crd ----------------------------------------------------


@pytest.mark.parametrize(
    ("node_class", "served"),
    [
        (NODE_CLASS, True),
        (NodeClassKind("karpenter.test.dev", "TestNodeClass"), True),  # version unknown
        (NodeClassKind("karpenter.test.dev", "TestNodeClass", "v1beta1"), False),  # not served
        (NodeClassKind("karpenter.test.dev", "TestNodeClass", "v2"), False),
        (NodeClassKind("karpenter.other.dev", "TestNodeClass", "v1"), False),
        (NodeClassKind("karpenter.test.dev", "OtherNodeClass", "v1"), False),
    ],
    ids=["same", "any-version", "not-served", "absent-version", "other-group", "other-kind"],
)
def test_serves(node_class: NodeClassKind, served: bool) -> None:
    assert serves(CRD, node_class) is served


def test_node_classes_without_crd_keeps_declaration_order() -> None:
    a = NodeClassKind("g.dev", "A", "v1")
    b = NodeClassKind("g.dev", "B", "v1")
    spec = spec_with(node_classes=(b, NODE_CLASS, a))
    shipped = ProviderCRD("test", "x.yaml", "", CRD)
    assert node_classes_without_crd(spec, [shipped]) == [b, a]
    assert node_classes_without_crd(spec, []) == [b, NODE_CLASS, a]


# --- cloud_provider_crds --------------------------------------------------------------------


def test_cloud_provider_crds_reads_each_file_in_order(tmp_path: Path) -> None:
    second = edited("metadata.name", "othernodeclasses.karpenter.test.dev")
    second["spec"]["names"] = {"kind": "OtherNodeClass", "plural": "othernodeclasses"}
    (tmp_path / "b.yaml").write_text("---\n" + yaml.safe_dump(second))
    (tmp_path / "a.yaml").write_text("# comment kept\n" + yaml.safe_dump(CRD))
    crds = cloud_provider_crds(spec_with(tmp_path / "b.yaml", tmp_path / "a.yaml"))
    assert [(c.provider, c.file, c.name) for c in crds] == [
        ("test", "b.yaml", "othernodeclasses.karpenter.test.dev"),
        ("test", "a.yaml", "testnodeclasses.karpenter.test.dev"),
    ]
    assert crds[1].text == (tmp_path / "a.yaml").read_text()
    assert crds[1].manifest == CRD


def test_cloud_provider_crds_names_the_provider_and_file_of_a_bad_manifest(
    tmp_path: Path,
) -> None:
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump(edited("spec.group", ...)))
    with pytest.raises(PluginError) as err:
        cloud_provider_crds(spec_with(tmp_path / "bad.yaml"))
    assert str(err.value) == "cloud provider 'test': CRD file bad.yaml: spec.group is missing"
