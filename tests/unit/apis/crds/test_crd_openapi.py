"""The generic CRD validator (karpenter_core.apis.crds.openapi + celrules): a test CRD using
the OpenAPI keywords and CEL features CRDs commonly use, against the errors and defaults a
real kube-apiserver gave for the same manifests (data/widget_cases.yaml), plus what the
recording cannot show (a rule that does not compile is reported once, as the CRD's problem).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from karpenter_core.apis.crds.celrules import compile_rule
from karpenter_core.apis.crds.openapi import CRDSchema, apply_defaults, validate_object

DATA = Path(__file__).resolve().parent / "data"
CRD: dict[str, Any] = yaml.safe_load((DATA / "widget_crd.yaml").read_text())
CASES: dict[str, Any] = yaml.safe_load((DATA / "widget_cases.yaml").read_text())
API_VERSION = "test.karpenter.sh/v1"


def manifest(name: str) -> dict[str, Any]:
    spec = copy.deepcopy(CASES["base"])
    for key, value in CASES["cases"][name]["spec"].items():
        if value is None:
            spec.pop(key, None)
        else:
            spec[key] = value
    return {"apiVersion": API_VERSION, "kind": "Widget", "metadata": {"name": name}, "spec": spec}


@pytest.mark.parametrize("name", list(CASES["cases"]))
def test_errors_are_the_api_servers(name: str) -> None:
    crd = CRDSchema(CRD)
    assert sorted(str(e) for e in crd.validate(manifest(name))) == CASES["cases"][name]["errors"]
    assert crd.problems == []


@pytest.mark.parametrize("name", [n for n, c in CASES["cases"].items() if "created_spec" in c])
def test_defaults_are_the_api_servers(name: str) -> None:
    defaulted = apply_defaults(copy.deepcopy(manifest(name)), CRDSchema(CRD).schemas[API_VERSION])
    assert defaulted["spec"] == CASES["cases"][name]["created_spec"]


def test_the_input_is_not_modified() -> None:
    obj = manifest("valid")
    before = copy.deepcopy(obj)
    CRDSchema(CRD).validate(obj)
    assert obj == before


def test_serves_only_its_kind_and_served_versions() -> None:
    crd = CRDSchema(CRD)
    assert crd.serves(API_VERSION, "Widget")
    assert not crd.serves("test.karpenter.sh/v2", "Widget")
    assert not crd.serves(API_VERSION, "Gadget")


def _schema(rules: list[dict[str, str]]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {"a": {"type": "integer"}},
                "x-kubernetes-validations": rules,
            }
        },
    }


def test_a_rule_that_does_not_compile_is_the_crds_problem_reported_once() -> None:
    crd_doc = copy.deepcopy(CRD)
    schema = crd_doc["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    schema["properties"]["spec"]["x-kubernetes-validations"].append(
        {"rule": "self.name ==", "message": "broken"}
    )
    crd = CRDSchema(crd_doc)
    for _ in range(3):
        assert crd.validate(manifest("valid")) == []
    [problem] = crd.problems
    assert problem.schema_path == "spec"
    assert problem.rule == "self.name =="
    assert "does not compile" in str(problem)


def test_undeclared_function_does_not_compile() -> None:
    assert isinstance(compile_rule("self.frobnicate()"), str)
    assert not isinstance(compile_rule("self.x.lowerAscii() == 'a'"), str)


def test_transition_rules_are_skipped_on_create() -> None:
    assert validate_object({"spec": {"a": 1}}, _schema([{"rule": "self.a == oldSelf.a"}])) == []


def test_a_rule_without_message_reports_the_rule() -> None:
    [err] = validate_object({"spec": {"a": 1}}, _schema([{"rule": "self.a > 1"}]))
    assert str(err) == 'spec: Invalid value: "object": failed rule: self.a > 1'


def test_an_evaluation_error_is_reported_at_the_node() -> None:
    """In the API server's wording: ``<error> evaluating rule: <message, else the rule>``."""
    [err] = validate_object({"spec": {"a": 1}}, _schema([{"rule": "self.b > 1"}]))
    assert err.path == "spec"
    assert err.message == 'Invalid value: "object": no such key: b evaluating rule: self.b > 1'
    rule = {"rule": "self.b > 1", "message": " b must exceed 1 "}
    [err] = validate_object({"spec": {"a": 1}}, _schema([rule]))
    assert err.message == 'Invalid value: "object": no such key: b evaluating rule: b must exceed 1'


def test_message_expression_failing_falls_back_to_message() -> None:
    rule = {"rule": "self.a > 1", "message": "too small", "messageExpression": "self.nope"}
    [err] = validate_object({"spec": {"a": 1}}, _schema([rule]))
    assert str(err) == 'spec: Invalid value: "object": too small'


def test_the_core_crds_compile_and_accept_the_examples() -> None:
    """The core kinds keep their own validator (it points at the offending element, where the
    API server names the list), but the generic one must handle their CRDs too."""
    from karpenter_core.apis.crds import crd_manifests
    from karpenter_core.apis.manifests import load_file, manifest_files

    examples = Path(__file__).resolve().parents[4] / "examples"
    schemas = [CRDSchema(c) for c in crd_manifests()]
    checked = 0
    for f in manifest_files((str(examples),), True):
        for loaded in load_file(f):
            for crd in schemas:
                if crd.serves(loaded.api_version, loaded.kind):
                    assert crd.validate(loaded.obj) == [], loaded.display
                    checked += 1
    assert checked >= 8
    assert [p for crd in schemas for p in crd.problems] == []


def test_check_spec_validates_a_spec_as_its_objects_and_defaults_it() -> None:
    """One call for a provider's NodeClass model: the errors :meth:`CRDSchema.validate` gives
    for an object carrying the spec, and the spec after structural defaulting."""
    crd = CRDSchema(CRD)
    spec = copy.deepcopy(CASES["base"])
    obj = {"apiVersion": API_VERSION, "kind": "Widget", "metadata": {"name": "w"}, "spec": spec}
    check = crd.check_spec("v1", spec)
    assert check.errors == ()
    assert check.spec == apply_defaults(copy.deepcopy(obj), crd.schemas[API_VERSION])["spec"]
    assert spec == CASES["base"]  # the input is not modified
    for name in CASES["cases"]:
        bad = manifest(name)
        assert [str(e) for e in crd.check_spec("v1", bad["spec"]).errors] == [
            str(e) for e in crd.validate(bad)
        ], name
    not_object = crd.check_spec("v1", [])
    assert not_object.spec == [] and str(not_object.errors[0]).startswith("spec: Invalid value")
    with pytest.raises(LookupError, match="no version 'v9'"):
        crd.check_spec("v9", {})


def test_a_pattern_matches_as_re2_does_with_ascii_classes() -> None:
    """``\\d`` is ``[0-9]`` in RE2: other Unicode digits do not match (Python's default would)."""
    schema = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {"ports": {"type": "string", "pattern": r"^\d+ \d+$"}},
            }
        },
    }
    assert validate_object({"spec": {"ports": "1024 65535"}}, schema) == []
    [err] = validate_object({"spec": {"ports": "\u0661\u0660\u0662\u0664 65535"}}, schema)
    assert err.path == "spec.ports" and "should match" in err.message
