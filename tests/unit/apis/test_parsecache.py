"""VersionedParser: each stored version of an object is parsed once."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import pytest

from karpenter_core.apis.parsecache import VersionedParser
from karpenter_core.apis.v1 import APIError, NodeClaim
from karpenter_core.state.cluster import parse_nodeclaim
from karpenter_core.testing import builders as b


def stored(name: str = "nc", uid: str = "u-1", rv: str = "7") -> dict[str, Any]:
    obj = b.nodeclaim(name, nodepool="default", provider_id=f"fake://{name}", capacity={"cpu": "2"})
    obj["metadata"].update(uid=uid, resourceVersion=rv)
    return obj


class Counting:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, obj: Mapping[str, Any]) -> NodeClaim:
        self.calls += 1
        return NodeClaim.from_dict(obj)


def test_the_same_version_is_parsed_once() -> None:
    parse = Counting()
    parser = VersionedParser(parse)
    first = parser(stored())
    assert parser(stored()) is first
    assert parse.calls == 1


def test_a_new_resource_version_is_parsed_again() -> None:
    parse = Counting()
    parser = VersionedParser(parse)
    first = parser(stored(rv="7"))
    assert parser(stored(rv="8")) is not first
    assert parse.calls == 2


def test_same_uid_and_version_with_other_content_is_parsed_again() -> None:
    """uids are unique per API server only, and a caller may change a dict in place."""
    parser = VersionedParser(NodeClaim.from_dict)
    obj = stored()
    first = parser(obj)
    obj["metadata"]["labels"]["team"] = "a"
    second = parser(obj)
    assert second is not first
    assert second.metadata.labels["team"] == "a"
    assert "team" not in first.metadata.labels


@pytest.mark.parametrize("missing", ["uid", "resourceVersion"])
def test_objects_that_were_never_stored_are_parsed_every_time(missing: str) -> None:
    parse = Counting()
    parser = VersionedParser(parse)
    obj = stored()
    del obj["metadata"][missing]
    parser(obj)
    parser(obj)
    assert parse.calls == 2
    assert len(parser) == 0


def test_only_the_most_recently_seen_objects_are_remembered() -> None:
    parse = Counting()
    parser = VersionedParser(parse, max_entries=2)
    for uid in ("u-1", "u-2", "u-3"):
        parser(stored(uid=uid))
    assert len(parser) == 2
    parser(stored(uid="u-1"))  # forgotten: parsed again
    assert parse.calls == 4


def test_only_the_newest_version_of_an_object_is_kept() -> None:
    parse = Counting()
    parser = VersionedParser(parse)
    parser(stored(rv="7"))
    newer = parser(stored(rv="8"))
    assert len(parser) == 1
    assert parser(stored(rv="8")) is newer
    assert parse.calls == 2


def test_an_object_whose_round_trip_differs_is_parsed_once_and_read_right() -> None:
    """A null field is "unset" to the model (its to_dict() leaves it out): the object is
    confirmed against the copy kept, not the model, so it still parses once."""
    parse = Counting()
    parser = VersionedParser(parse)
    obj = stored()
    obj["status"]["imageID"] = None
    first, second = parser(obj), parser(copy.deepcopy(obj))
    assert parse.calls == 1
    assert second is first and first == NodeClaim.from_dict(obj)


def test_a_parse_error_is_raised_and_not_remembered() -> None:
    parser = VersionedParser(NodeClaim.from_dict)
    obj = stored()
    obj["spec"]["taints"] = "not a list"
    for _ in range(2):
        with pytest.raises(APIError, match=r"spec\.taints"):
            parser(obj)
    assert len(parser) == 0


def test_the_remembered_copy_is_independent_of_the_callers_dict() -> None:
    parser = VersionedParser(NodeClaim.from_dict)
    obj = stored()
    original = copy.deepcopy(obj)
    first = parser(obj)
    obj["metadata"]["labels"]["team"] = "a"  # changed after the parse
    assert parser(original) is first


def test_parse_nodeclaim_hands_out_one_model_per_stored_version() -> None:
    assert parse_nodeclaim(stored("pnc", uid="pnc-1")) is parse_nodeclaim(
        stored("pnc", uid="pnc-1")
    )


def test_a_forgotten_object_is_parsed_again() -> None:
    parse = Counting()
    parser = VersionedParser(parse)
    first = parser(stored())
    parser.forget("u-1")
    assert len(parser) == 0
    assert parser(stored()) is not first
    parser.forget("never-seen")  # nothing to drop: no error
    assert parse.calls == 2


def test_cluster_state_forgets_the_parse_of_a_deleted_nodeclaim() -> None:
    """A NodeClaim cluster state drops is dropped from the parse cache too: with
    thousands of NodeClaims replaced over a day the cache holds the live ones, not
    every one ever seen."""
    from karpenter_core.runtime.clock import VirtualClock
    from karpenter_core.sim.apiserver import InMemoryApiServer
    from karpenter_core.state.cluster import Cluster

    clock = VirtualClock()
    cluster = Cluster(InMemoryApiServer(clock, seed=1), clock)
    model = parse_nodeclaim(stored("gone", uid="gone-1"))
    cluster.update_nodeclaim(model)
    assert parse_nodeclaim(stored("gone", uid="gone-1")) is model  # remembered
    cluster.delete_nodeclaim("gone")
    assert parse_nodeclaim(stored("gone", uid="gone-1")) is not model
