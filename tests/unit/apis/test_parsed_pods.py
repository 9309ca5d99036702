"""``parsed_pod``: one parse per stored pod object, shared by the components that read
it; an equal but different object, or a new version, is parsed on its own; the cache is
bounded; a bad pod fails every time and is never kept."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest

from karpenter_core.apis import parsedpods
from karpenter_core.apis.objects import ObjectError, Pod
from karpenter_core.apis.parsedpods import parsed_pod


@pytest.fixture(autouse=True)
def _fresh_cache() -> Iterator[None]:
    parsedpods.clear()
    yield
    parsedpods.clear()


def _pod(name: str = "web-1") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "uid": f"u-{name}"},
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
    }


def test_the_same_object_is_parsed_once_and_an_equal_copy_on_its_own() -> None:
    stored = _pod()
    first = parsed_pod(stored)
    assert parsed_pod(stored) is first
    assert first.raw is stored
    other = parsed_pod(copy.deepcopy(stored))
    assert other is not first and other.requests == first.requests


def test_a_new_version_is_refreshed_from_the_earlier_parse() -> None:
    stored = _pod()
    first = parsed_pod(stored)
    bound = {**stored, "spec": {**stored["spec"], "nodeName": "n1"}}
    second = parsed_pod(bound, first)
    assert second.node_name == "n1" and second.raw is bound
    assert second.tolerations is first.tolerations  # the spec parse was kept
    assert parsed_pod(bound) is second  # and shared with the next reader


def test_the_cache_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parsedpods, "MAX_ENTRIES", 3)
    objs = [_pod(f"p{i}") for i in range(5)]
    parsed = [parsed_pod(o) for o in objs]
    assert len(parsedpods._parsed) == 3
    assert parsed_pod(objs[4]) is parsed[4]
    assert parsed_pod(objs[0]) is not parsed[0]  # dropped, parsed again


def test_a_bad_pod_fails_every_time_and_is_not_kept() -> None:
    bad = _pod()
    bad["spec"]["containers"] = []
    for _ in range(2):
        with pytest.raises(ObjectError, match="containers"):
            parsed_pod(bad)
    assert not parsedpods._parsed
    assert isinstance(parsed_pod(_pod()), Pod)
