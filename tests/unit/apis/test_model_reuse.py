"""``Model.from_dict_reusing``: a later version of an object parses to exactly what
``from_dict`` gives (the same model, the same JSON back, the same error for bad input),
keeping the parsed parts that did not change; ``VersionedParser`` uses it for a new
version of an object it parsed before."""

from __future__ import annotations

from typing import Any

import pytest
from apis_fixtures import FULL_NODECLAIM, FULL_NODEPOOL, fresh
from hypothesis import given, settings
from hypothesis import strategies as st
from test_apis_properties import json_values, nodepool, paths

from karpenter_core.apis.parsecache import VersionedParser
from karpenter_core.apis.v1 import APIError, NodeClaim, NodePool


def _outcome(parse: Any) -> Any:
    try:
        model = parse()
    except APIError as e:
        return ("error", str(e))
    return ("ok", model, model.to_dict())


@given(nodepool, nodepool, st.lists(st.sampled_from(["metadata", "spec"]), max_size=2))
def test_a_nodepool_reparsed_from_another_version_is_its_full_parse(
    earlier: dict[str, Any], later: dict[str, Any], shared: list[str]
) -> None:
    for part in shared:  # some parts unchanged between the versions
        later[part] = fresh(earlier[part])
    previous = NodePool.from_dict(fresh(earlier))
    assert _outcome(lambda: NodePool.from_dict_reusing(later, previous, earlier)) == _outcome(
        lambda: NodePool.from_dict(later)
    )


@settings(max_examples=300)
@given(paths, json_values)
def test_bad_input_fails_as_a_full_parse_does(path: tuple[str, ...], value: Any) -> None:
    earlier = fresh(FULL_NODEPOOL)
    later = fresh(FULL_NODEPOOL)
    node = later
    for p in path[:-1]:
        node = node[p]
    node[path[-1]] = value
    previous = NodePool.from_dict(earlier)
    assert _outcome(lambda: NodePool.from_dict_reusing(later, previous, earlier)) == _outcome(
        lambda: NodePool.from_dict(later)
    )


def _status_patched(nc: dict[str, Any]) -> dict[str, Any]:
    later = fresh(nc)
    later["metadata"]["resourceVersion"] = "8"
    later["status"]["lastPodEventTime"] = "2026-01-01T00:20:00Z"
    later["status"]["conditions"][2]["status"] = "True"
    return later


def test_a_nodeclaim_status_patch_keeps_the_parsed_spec_and_unchanged_conditions() -> None:
    earlier = fresh(FULL_NODECLAIM)
    later = _status_patched(earlier)
    previous = NodeClaim.from_dict(earlier)
    model = NodeClaim.from_dict_reusing(later, previous, earlier)
    assert model == NodeClaim.from_dict(later)
    assert model.to_dict() == later
    assert model.spec is previous.spec
    assert previous.status is not None and model.status is not None
    assert model.status.conditions[0] is previous.status.conditions[0]
    assert model.status.conditions[2] is not previous.status.conditions[2]
    assert model.status.conditions[2].status == "True"


def test_explicitly_empty_lists_survive_the_reuse() -> None:
    earlier = fresh(FULL_NODECLAIM)
    earlier["spec"]["taints"] = []
    later = _status_patched(earlier)
    model = NodeClaim.from_dict_reusing(later, NodeClaim.from_dict(earlier), earlier)
    assert model.to_dict() == later  # "taints: []" written back, not dropped


def test_the_versioned_parser_reparses_a_new_version_from_the_earlier_one() -> None:
    calls: list[str] = []

    def parse(d: Any) -> NodeClaim:
        calls.append("parse")
        return NodeClaim.from_dict(d)

    def reparse(d: Any, model: NodeClaim, parsed: Any) -> NodeClaim:
        calls.append("reparse")
        return NodeClaim.from_dict_reusing(d, model, parsed)

    parser = VersionedParser(parse, reparse=reparse)
    earlier = fresh(FULL_NODECLAIM)
    earlier["metadata"].update(uid="u-9", resourceVersion="7")
    first = parser(earlier)
    later = _status_patched(earlier)
    second = parser(later)
    assert calls == ["parse", "reparse"]
    assert second == NodeClaim.from_dict(later)
    assert second.spec is first.spec
    assert parser(fresh(later)) is second  # the same version again: the same model
    bad = fresh(later)
    bad["metadata"]["resourceVersion"] = "9"
    bad["status"]["conditions"] = "Ready"
    with pytest.raises(APIError, match=r"status\.conditions"):
        parser(bad)
