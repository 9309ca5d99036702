"""apis.accessors: the common parts of an object's JSON, read without raising."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

import pytest

from karpenter_core.apis.accessors import (
    EMPTY,
    annotations_of,
    labels_of,
    meta_of,
    name_of,
    namespace_of,
    spec_of,
    status_of,
)

OBJ: dict[str, Any] = {
    "metadata": {
        "name": "web",
        "namespace": "shop",
        "labels": {"app": "web"},
        "annotations": {"note": "x"},
    },
    "spec": {"replicas": 2},
    "status": {"phase": "Running"},
}

MAPPINGS: list[tuple[Callable[[Mapping[str, Any]], Mapping[str, Any]], Any]] = [
    (meta_of, OBJ["metadata"]),
    (spec_of, OBJ["spec"]),
    (status_of, OBJ["status"]),
    (labels_of, {"app": "web"}),
    (annotations_of, {"note": "x"}),
]


@pytest.mark.parametrize(("read", "want"), MAPPINGS, ids=lambda v: getattr(v, "__name__", ""))
def test_a_present_part_is_the_objects_own(read: Any, want: Any) -> None:
    got = read(OBJ)
    assert got == want
    assert got is not EMPTY


def test_parts_are_not_copied() -> None:
    assert meta_of(OBJ) is OBJ["metadata"]
    assert labels_of(OBJ) is OBJ["metadata"]["labels"]


MALFORMED: list[dict[str, Any]] = [
    {},
    {"metadata": None, "spec": None, "status": None},
    {"metadata": "name", "spec": [1], "status": 3},
    {"metadata": {"labels": None, "annotations": ["a"], "name": None, "namespace": ""}},
    {"metadata": {"labels": "app=web", "annotations": 7}},
]


@pytest.mark.parametrize("obj", MALFORMED)
@pytest.mark.parametrize("read", [meta_of, spec_of, status_of, labels_of, annotations_of])
def test_a_missing_or_malformed_part_reads_as_the_empty_read_only_mapping(
    read: Callable[[Mapping[str, Any]], Mapping[str, Any]], obj: dict[str, Any]
) -> None:
    got = read(obj)
    if read is meta_of and isinstance(obj.get("metadata"), dict):
        return  # metadata itself is fine here
    assert got is EMPTY
    assert isinstance(got, MappingProxyType)
    with pytest.raises(TypeError):
        got["x"] = "y"  # type: ignore[index]


@pytest.mark.parametrize("obj", MALFORMED)
def test_name_and_namespace_of_malformed_objects_are_empty(obj: dict[str, Any]) -> None:
    assert name_of(obj) == ""
    assert namespace_of(obj) == ""


def test_name_and_namespace() -> None:
    assert (name_of(OBJ), namespace_of(OBJ)) == ("web", "shop")
    assert namespace_of({"metadata": {"name": "n1"}}) == ""


def test_other_mappings_are_read_too() -> None:
    obj = MappingProxyType({"metadata": MappingProxyType({"labels": {"a": "b"}})})
    assert labels_of(obj) == {"a": "b"}
