"""Classified cloud-provider errors: messages, wrapping and the is_* helpers."""

from __future__ import annotations

import pytest

from karpenter_core.cloudprovider.errors import (
    CloudProviderError,
    CreateError,
    InsufficientCapacityError,
    NodeClaimNotFoundError,
    NodeClassNotReadyError,
    UnevaluatedNodePoolError,
    find_error,
    ignore_nodeclaim_not_found,
    is_create_error,
    is_insufficient_capacity,
    is_node_class_not_ready,
    is_nodeclaim_not_found,
    is_unevaluated_nodepool,
)


class _BaseError(Exception):
    pass


@pytest.mark.parametrize(
    ("error", "message"),
    [
        (NodeClaimNotFoundError("instance terminated"), "nodeclaim not found, instance terminated"),
        (
            InsufficientCapacityError("no spot in zone-a"),
            "insufficient capacity, no spot in zone-a",
        ),
        (NodeClassNotReadyError("ami not resolved"), "NodeClassRef not ready, ami not resolved"),
        (CreateError("quota", "QuotaExceeded", "too many"), "creating nodeclaim, quota"),
        (UnevaluatedNodePoolError("default"), 'nodepool "default" is awaiting evaluation'),
    ],
)
def test_message_carries_upstream_prefix(error: CloudProviderError, message: str) -> None:
    assert str(error) == message


@pytest.mark.parametrize(
    "kind", [NodeClaimNotFoundError, InsufficientCapacityError, NodeClassNotReadyError, CreateError]
)
def test_wrapped_cause_is_reachable(kind: type[CloudProviderError]) -> None:
    cause = _BaseError("boom")
    err = kind(cause)
    assert err.unwrap() is cause
    assert err.__cause__ is cause
    assert find_error(err, _BaseError) is cause
    assert str(err).endswith("boom")


def test_message_cause_has_nothing_to_unwrap() -> None:
    assert InsufficientCapacityError("plain text").unwrap() is None


def test_create_error_keeps_condition_reason_and_message() -> None:
    err = CreateError(_BaseError("x"), "SubnetMissing", "no subnet in zone")
    assert (err.condition_reason, err.condition_message) == ("SubnetMissing", "no subnet in zone")


@pytest.mark.parametrize(
    ("check", "error"),
    [
        (is_nodeclaim_not_found, NodeClaimNotFoundError("gone")),
        (is_insufficient_capacity, InsufficientCapacityError("ice")),
        (is_node_class_not_ready, NodeClassNotReadyError("not ready")),
        (is_create_error, CreateError("failed")),
        (is_unevaluated_nodepool, UnevaluatedNodePoolError("np")),
    ],
)
def test_helpers_see_error_through_raise_from(check, error) -> None:
    try:
        try:
            raise error
        except CloudProviderError as inner:
            raise RuntimeError("deleting node") from inner
    except RuntimeError as outer:
        assert check(outer)
        assert check(error)


@pytest.mark.parametrize(
    "check",
    [
        is_nodeclaim_not_found,
        is_insufficient_capacity,
        is_node_class_not_ready,
        is_create_error,
        is_unevaluated_nodepool,
    ],
)
def test_helpers_reject_none_and_unrelated_errors(check) -> None:
    assert not check(None)
    assert not check(ValueError("other"))


def test_helpers_do_not_confuse_kinds() -> None:
    err = InsufficientCapacityError("ice")
    assert not is_nodeclaim_not_found(err)
    assert not is_node_class_not_ready(err)


def test_classified_error_wrapped_inside_another_classified_error_is_found() -> None:
    err = CreateError(NodeClaimNotFoundError("gone"), "r", "m")
    assert is_nodeclaim_not_found(err)
    assert is_create_error(err)


def test_ignore_nodeclaim_not_found_drops_only_not_found() -> None:
    other = ValueError("boom")
    assert ignore_nodeclaim_not_found(NodeClaimNotFoundError("gone")) is None
    assert ignore_nodeclaim_not_found(other) is other
    assert ignore_nodeclaim_not_found(None) is None


def test_cause_cycle_does_not_loop_forever() -> None:
    a = ValueError("a")
    b = ValueError("b")
    a.__cause__ = b
    b.__cause__ = a
    assert find_error(a, KeyError) is None
