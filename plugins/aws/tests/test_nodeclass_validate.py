"""`karpenter validate` on EC2NodeClass manifests: the shipped CRD's schema and CEL rules,
evaluated by the core's generic NodeClass validator (karpenter_core.apis.crds.openapi).

The expected errors in data/ec2nodeclass_cases.yaml are what a real kube-apiserver (v1.34)
with the CRD installed answered when each manifest was created with strict field validation
(tests/integration/test_crd_validation_differential.py checks they still are): the field
paths and the wording, the "some validation rules were not checked" line when a blocking
schema error stops the CEL rules, strict decoding's unknown fields, and the defaults the
server applied to a valid manifest.
"""

from __future__ import annotations

import copy
from importlib.resources import files
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from karpenter_core.apis.crds.openapi import CRDSchema, apply_defaults
from karpenter_core.cli import main

DATA = Path(__file__).resolve().parent / "data" / "ec2nodeclass_cases.yaml"
CASES: dict[str, Any] = yaml.safe_load(DATA.read_text())
CRD = yaml.safe_load(
    (files("karpenter_aws") / "crds" / "karpenter.k8s.aws_ec2nodeclasses.yaml").read_text()
)


def manifest(name: str) -> dict[str, Any]:
    spec = copy.deepcopy(CASES["base"])
    for key, value in CASES["cases"][name]["spec"].items():
        if value is None:
            spec.pop(key, None)
        else:
            spec[key] = value
    return {
        "apiVersion": "karpenter.k8s.aws/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": name},
        "spec": spec,
    }


@pytest.mark.parametrize("name", list(CASES["cases"]))
def test_errors_are_the_api_servers(name: str) -> None:
    crd = CRDSchema(CRD)
    got = sorted(str(e) for e in crd.validate(manifest(name)))
    assert got == CASES["cases"][name]["errors"]
    assert crd.problems == []  # every rule of the shipped CRD compiles


@pytest.mark.parametrize("name", [n for n, c in CASES["cases"].items() if "created_spec" in c])
def test_defaults_are_the_api_servers(name: str) -> None:
    schema = CRDSchema(CRD).schemas["karpenter.k8s.aws/v1"]
    defaulted = apply_defaults(copy.deepcopy(manifest(name)), schema)
    assert defaulted["spec"] == CASES["cases"][name]["created_spec"]


def test_validate_command_checks_ec2nodeclasses(tmp_path: Path) -> None:
    names = ["valid-minimal", "role-and-instance-profile", "alias-unknown-family", "unknown-field"]
    f = tmp_path / "classes.yaml"
    f.write_text(yaml.safe_dump_all([manifest(n) for n in names]))
    result = CliRunner().invoke(main, ["validate", "-f", str(f)])
    assert result.exit_code == 1, result.output
    assert result.stdout.splitlines() == [
        f'{f}: EC2NodeClass/role-and-instance-profile: spec: Invalid value: "object": '
        "must specify exactly one of ['role', 'instanceProfile']",
        f"{f}: EC2NodeClass/alias-unknown-family: spec.amiSelectorTerms[0].alias: Invalid "
        "value: \"string\": family is not supported, must be one of the following: 'al2', "
        "'al2023', 'bottlerocket', 'windows2019', 'windows2022', 'windows2025'",
        f'{f}: EC2NodeClass/unknown-field: strict decoding error: unknown field "spec.userDataa"',
    ]
    assert "FAILED: 3 of 4 object(s) invalid (4 EC2NodeClass)" in result.stderr


def test_validate_command_passes_the_example() -> None:
    example = Path(__file__).resolve().parents[1] / "examples" / "ec2nodeclass.yaml"
    result = CliRunner().invoke(main, ["validate", "-f", str(example)])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("OK: 1 object(s) valid (1 EC2NodeClass)")


def test_validate_command_checks_metadata_name(tmp_path: Path) -> None:
    obj = manifest("valid-minimal")
    del obj["metadata"]["name"]
    obj["metadata"]["labels"] = {"team": "x"}
    f = tmp_path / "c.yaml"
    f.write_text(yaml.safe_dump(obj))
    result = CliRunner().invoke(main, ["validate", "-f", str(f)])
    assert result.exit_code == 1
    assert "metadata.name: Required value: name or generateName is required" in result.stdout


def test_a_rule_that_does_not_compile_is_reported_once_as_the_crds_problem(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import karpenter_core.plugins as plugins

    real = plugins.cloud_provider_crds

    def broken(spec: Any) -> list[plugins.ProviderCRD]:
        out = []
        for crd in real(spec):
            manifest = copy.deepcopy(dict(crd.manifest))
            if manifest["spec"]["names"]["kind"] == "EC2NodeClass":
                schema = manifest["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
                schema["properties"]["spec"]["x-kubernetes-validations"].append(
                    {"rule": "self.role ==", "message": "broken"}
                )
            out.append(plugins.ProviderCRD(crd.provider, crd.file, crd.text, manifest))
        return out

    monkeypatch.setattr(plugins, "cloud_provider_crds", broken)
    f = tmp_path / "classes.yaml"
    f.write_text(yaml.safe_dump_all([manifest("valid-minimal"), manifest("alias-malformed")]))
    result = CliRunner().invoke(main, ["validate", "-f", str(f)])
    assert result.exit_code == 1  # the invalid manifest, not the CRD
    assert len(result.stdout.splitlines()) == 1
    problems = [line for line in result.stderr.splitlines() if "does not compile" in line]
    assert len(problems) == 1
    assert "CRD ec2nodeclasses.karpenter.k8s.aws: x-kubernetes-validations rule" in problems[0]
    assert "'self.role =='" in problems[0]
