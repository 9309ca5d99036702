"""The loader's limits, the API server's label and annotation rules, and the type checks of
core kinds (issue 18): what each refuses and what it still accepts."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest
from apis_fixtures import MINIMAL_NODEPOOL, fresh

from karpenter_core.apis.limits import (
    MAX_ALIAS_NODES,
    TOTAL_ANNOTATION_SIZE_LIMIT,
    elide,
    one_line,
    shown,
    shown_repr,
)
from karpenter_core.apis.manifests import ManifestError, parse_json, parse_yaml, read_text
from karpenter_core.apis.shapes import manifest_errors, shape_errors
from karpenter_core.apis.validation import validate, validate_labels_and_annotations

# --- the loader -------------------------------------------------------------------------------


def test_nesting_up_to_the_limit_loads() -> None:
    [doc] = parse_yaml("a: " + "[" * 99 + "]" * 99 + "\n", "s")
    depth = 0
    value: Any = doc["a"]
    while value:
        value = value[0]
        depth += 1
    assert depth == 98  # 99 lists, the innermost empty


def test_nesting_past_the_limit_is_refused() -> None:
    with pytest.raises(ManifestError, match="nested more than 100 levels deep"):
        parse_yaml("a: " + "[" * 100 + "]" * 100 + "\n", "s")


def test_aliases_cannot_nest_past_the_limit_either() -> None:
    text = "a: &a " + "[" * 60 + "]" * 60 + "\nb: " + "[" * 60 + "*a" + "]" * 60 + "\n"
    with pytest.raises(ManifestError, match="aliases expand to values nested more than 100"):
        parse_yaml(text, "s")


def test_alias_expansion_is_counted_over_the_whole_file() -> None:
    """Many documents, each within the limit, cannot add up to a bomb."""
    per_doc = "a: &a [" + ", ".join(["x"] * 100) + "]\nb: [" + ", ".join(["*a"] * 100) + "]\n"
    docs_needed = MAX_ALIAS_NODES // (100 * 100) + 1
    with pytest.raises(ManifestError, match="aliases expand to more than 100,000 values"):
        parse_yaml("---\n".join([per_doc] * docs_needed), "s")
    assert len(parse_yaml(per_doc, "s")) == 1


def test_aliases_become_separate_copies() -> None:
    [doc] = parse_yaml("a: &a {b: [1]}\nc: *a\nd: {<<: *a, e: 2}\n", "s")
    assert doc == {"a": {"b": [1]}, "c": {"b": [1]}, "d": {"b": [1], "e": 2}}
    doc["a"]["b"].append(2)
    assert doc["c"] == {"b": [1]}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a: " + "9" * 100 + "\n", {"a": int("9" * 100)}),
        ("a: '" + "9" * 5000 + "'\n", {"a": "9" * 5000}),
        ("1: a\ntrue: b\n~: c\n1.5: d\n", {"1": "a", "true": "b", "null": "c", "1.5": "d"}),
        ("t: 2026-01-01T00:00:00Z\n", {"t": "2026-01-01T00:00:00Z"}),
        ("a: !!str 12\n", {"a": "12"}),
    ],
    ids=[
        "integer-at-the-limit",
        "digits-in-a-string",
        "keys-become-strings",
        "timestamp",
        "str-tag",
    ],
)
def test_json_values_load(text: str, expected: dict[str, Any]) -> None:
    assert parse_yaml(text, "s") == [expected]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a: " + "9" * 101 + "\n", "an integer of 101 digits (at most 100 are read)"),
        ("a: !!binary aGk=\n", "unsupported tag !!binary"),
        ("a: !!set {x}\n", "unsupported tag !!set"),
        ("a: !!python/name:os.system x\n", "unsupported tag !!python/name:os.system"),
        ("a: !!timestamp 2001-12-14\n", "unsupported tag !!timestamp"),
        ("? [a]\n: b\n", "a mapping key must be a string"),
        ("1: a\n'1': b\n", "duplicate key '1'"),
        ("a: &a [*a]\n", "an alias refers to itself"),
    ],
)
def test_what_is_not_json_is_refused(text: str, message: str) -> None:
    with pytest.raises(ManifestError) as info:
        parse_yaml(text, "s")
    assert message in str(info.value)


def test_json_has_the_same_limits() -> None:
    assert parse_json('{"a": [1, 2]}', "s") == {"a": [1, 2]}
    with pytest.raises(ManifestError, match="s: not valid JSON: nested more than 100"):
        parse_json("[" * 101 + "]" * 101, "s")
    with pytest.raises(ManifestError, match="s: not valid JSON: nested more than 100"):
        parse_json("[" * 50_000 + "]" * 50_000, "s")
    with pytest.raises(ManifestError, match="an integer of 101 digits"):
        parse_json("[" + "1" * 101 + "]", "s")
    with pytest.raises(ManifestError, match=r"s: not valid JSON: .*\(line 1, column 2\)"):
        parse_json("[", "s")


def test_read_text_reads_regular_files_and_symlinks_to_them(tmp_path: Path) -> None:
    f = tmp_path / "a.yaml"
    f.write_text("x: 1\n")
    (tmp_path / "link.yaml").symlink_to(f)
    assert read_text(str(tmp_path / "link.yaml")) == "x: 1\n"


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: p.mkdir(), "is a directory, expected a file"),
        (lambda p: os.mkfifo(p), "a FIFO (named pipe), not a regular file"),
        (lambda p: None, "no such file or directory"),
    ],
    ids=["directory", "fifo", "missing"],
)
def test_read_text_refuses_what_is_not_a_regular_file(
    tmp_path: Path, make: Any, message: str
) -> None:
    path = tmp_path / "in.yaml"
    make(path)
    with pytest.raises(ManifestError) as info:
        read_text(str(path))
    assert str(info.value).startswith(f"{path}: {message}")


@pytest.mark.skipif(not Path("/dev/null").exists(), reason="needs /dev/null")
def test_read_text_refuses_a_device() -> None:
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
    with pytest.raises(ManifestError, match="/dev/null: a character device, not a regular file"):
        read_text("/dev/null")


# --- how values are shown in errors ----------------------------------------------------------


def test_long_values_are_elided_with_their_size() -> None:
    assert elide("x" * 10) == "x" * 10
    assert elide("x" * 5000) == "x" * 200 + "... (4,800 more characters)"
    assert shown("q" * 300) == '"' + "q" * 199 + "... (102 more characters)"
    assert shown_repr("in") == "'in'"
    assert shown_repr(10**5000).startswith("<an integer of about 5,0")
    assert shown(10**5000).startswith("<an integer of about 5,0")
    assert one_line("a\nb   c") == "a b c"
    assert len(one_line("y" * 5000)) < 1100


# --- labels and annotations ------------------------------------------------------------------


def _annotated(size: int) -> dict[str, Any]:
    return {"annotations": {"a": "x" * (size - 1)}}


def test_annotations_of_256_kib_are_accepted_and_one_byte_more_refused() -> None:
    assert validate_labels_and_annotations(_annotated(TOTAL_ANNOTATION_SIZE_LIMIT), "m") == []
    [error] = validate_labels_and_annotations(_annotated(TOTAL_ANNOTATION_SIZE_LIMIT + 1), "m")
    assert str(error) == (
        "m.annotations: Too long: may not be more than 262144 bytes (these are 262,145)"
    )


def test_annotation_size_counts_utf8_bytes() -> None:
    meta = {"annotations": {"a": "\u00e9" * (TOTAL_ANNOTATION_SIZE_LIMIT // 2)}}
    assert validate_labels_and_annotations(meta, "m")  # 2 bytes each, plus the key


def test_annotation_keys_are_checked_in_lower_case_as_the_api_server_does() -> None:
    meta = {"annotations": {"Example.COM/Key": "v"}, "labels": {"Example.COM/Key": "v"}}
    errors = [str(e) for e in validate_labels_and_annotations(meta, "m")]
    assert len(errors) == 1 and errors[0].startswith("m.labels[Example.COM/Key]: Invalid value")


def test_the_nodepool_validation_the_operator_runs_applies_the_annotation_limit() -> None:
    pool = fresh(MINIMAL_NODEPOOL)
    pool["metadata"]["annotations"] = {"big": "x" * TOTAL_ANNOTATION_SIZE_LIMIT}
    assert any(str(e).startswith("metadata.annotations: Too long") for e in validate(pool))
    pool = fresh(MINIMAL_NODEPOOL)
    pool["spec"]["template"].setdefault("metadata", {})["annotations"] = {
        "big": "x" * TOTAL_ANNOTATION_SIZE_LIMIT
    }
    assert [str(e).split(":")[0] for e in validate(pool)] == ["spec.template.metadata.annotations"]


def test_huge_keys_are_elided_in_the_error_path() -> None:
    meta = {"labels": {"k" * 5000: "v"}}
    for error in validate_labels_and_annotations(meta, "m"):
        assert len(str(error)) < 1500


# --- types of core kinds ---------------------------------------------------------------------


def test_a_valid_pod_has_no_shape_errors() -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "labels": {"a": "b"}},
        "spec": {
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "1", "memory": 1e9}}}],
            "tolerations": [{"operator": "Exists", "tolerationSeconds": 30}],
            "unknownField": {"anything": [1, "x"]},
        },
    }
    assert manifest_errors(pod) == []


@pytest.mark.parametrize(
    ("obj", "error"),
    [
        (
            {"kind": "StorageClass", "allowedTopologies": [{"matchLabelExpressions": "abc"}]},
            "allowedTopologies[0].matchLabelExpressions: expected a list, got a string",
        ),
        (
            {"kind": "Pod", "spec": {"containers": [{"resources": {"requests": {"cpu": True}}}]}},
            "spec.containers[0].resources.requests[cpu]: expected a quantity (a string like "
            "500m, or a number), got a boolean",
        ),
        (
            {"kind": "PodDisruptionBudget", "spec": {"minAvailable": 1.5}},
            "spec.minAvailable: expected an integer or a string, got a number",
        ),
        (
            {"kind": "Deployment", "spec": {"template": {"spec": {"nodeSelector": {"a": None}}}}},
            "spec.template.spec.nodeSelector[a]: expected a string, got null",
        ),
        ({"kind": "ConfigMap", "metadata": []}, "metadata: expected an object, got a list"),
        (
            {"kind": "Node", "spec": {"taints": "NoSchedule"}},
            "spec.taints: expected a list, got a string",
        ),
    ],
    ids=["storageclass", "quantity", "int-or-string", "null-map-value", "other-kind", "node"],
)
def test_a_field_of_the_wrong_type_is_named_with_its_path(obj: dict[str, Any], error: str) -> None:
    assert shape_errors(obj) == [error]


def test_a_null_field_is_unset_as_to_the_api_server() -> None:
    assert shape_errors({"kind": "Pod", "spec": {"containers": None, "affinity": None}}) == []
