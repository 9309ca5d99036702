"""GCE error classification: capacity codes (from an API error or a finished zone
operation) → unavailable marks and ``InsufficientCapacityError``; others → one-line
``CreateError``; what is retried."""

from __future__ import annotations

import pytest
from google.api_core import exceptions as gexc
from google.cloud import compute_v1
from karpenter_gcp.gceerrors import (
    CAPACITY_CODES,
    GCECapacityError,
    capacity_error,
    classify,
    create_error,
    describe,
    is_not_found,
    is_retryable,
    operation_errors,
)

from karpenter_core.plugin_api import (
    CreateError,
    InsufficientCapacityError,
    UnavailableOfferings,
    VirtualClock,
)

ZONE = "us-central1-a"


def api_error(
    cls: type[gexc.GoogleAPICallError], reason: str, message: str = "m"
) -> gexc.GoogleAPICallError:
    return cls(
        f"POST http://x/compute/v1/projects/p/zones/{ZONE}/instances: {message}",
        errors=[{"reason": reason, "message": message, "domain": "global"}],
    )


@pytest.fixture
def unavailable() -> UnavailableOfferings:
    return UnavailableOfferings(VirtualClock())


@pytest.mark.parametrize("code", sorted(CAPACITY_CODES))
def test_capacity_codes_in_an_api_error_mark_the_offering(
    unavailable: UnavailableOfferings, code: str
) -> None:
    err = classify(
        api_error(gexc.ServiceUnavailable, code, "no room"),
        "n2-standard-8",
        ZONE,
        "spot",
        unavailable,
    )
    assert isinstance(err, GCECapacityError) and isinstance(err, InsufficientCapacityError)
    assert err.gce_code == code
    assert str(err).endswith(f"zone {ZONE}, n2-standard-8 (spot): no room")
    assert unavailable.is_unavailable("n2-standard-8", ZONE, "spot")
    assert not unavailable.is_unavailable("n2-standard-8", ZONE, "on-demand")
    assert not unavailable.is_unavailable("n2-standard-4", ZONE, "spot")


def test_non_capacity_api_error_marks_nothing(unavailable: UnavailableOfferings) -> None:
    err = api_error(gexc.BadRequest, "invalid", "Invalid value for field 'resource.machineType'")
    assert classify(err, "n2-standard-8", ZONE, "spot", unavailable) is None
    assert len(unavailable) == 0


def test_operation_errors_are_read_from_a_finished_operation(
    unavailable: UnavailableOfferings,
) -> None:
    op = compute_v1.Operation(
        status=compute_v1.Operation.Status.DONE,
        error=compute_v1.Error(
            errors=[
                compute_v1.Errors(code="UNSUPPORTED_OPERATION", message="first"),
                compute_v1.Errors(code="ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS", message=""),
            ]
        ),
    )
    errors = operation_errors(op)
    assert errors == [
        ("UNSUPPORTED_OPERATION", "first"),
        ("ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS", ""),
    ]
    err = capacity_error(errors, "e2-medium", ZONE, "on-demand", unavailable)
    assert err is not None and err.reason == "ZoneResourcePoolExhausted"
    # An empty message falls back to the code, as upstream does.
    assert str(err).endswith(": ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS")
    assert operation_errors(compute_v1.Operation(status=compute_v1.Operation.Status.DONE)) == []


def test_create_error_is_one_line_with_the_gce_reason() -> None:
    err = create_error(
        "inserting instance x", api_error(gexc.BadRequest, "invalid", "bad\n  field")
    )
    assert isinstance(err, CreateError)
    assert str(err).endswith("inserting instance x: (invalid) bad field")
    assert err.condition_reason == "invalid"
    plain = create_error("instance x: operation failed", "line one\nline two", "SOME_CODE")
    assert str(plain).endswith("instance x: operation failed: line one line two")
    assert plain.condition_reason == "SOME_CODE"


@pytest.mark.parametrize(
    ("err", "retry"),
    [
        (api_error(gexc.TooManyRequests, "rateLimitExceeded"), True),
        (api_error(gexc.InternalServerError, "backendError"), True),
        (api_error(gexc.ServiceUnavailable, "ZONE_RESOURCE_POOL_EXHAUSTED"), False),
        (api_error(gexc.Forbidden, "forbidden"), False),
        (api_error(gexc.NotFound, "notFound"), False),
        (ValueError("not an API error"), False),
    ],
)
def test_is_retryable(err: BaseException, retry: bool) -> None:
    assert is_retryable(err) is retry


def test_not_found_and_describe() -> None:
    err = api_error(gexc.NotFound, "notFound", "The resource 'x' was not found")
    assert is_not_found(err)
    assert not is_not_found(api_error(gexc.Forbidden, "forbidden"))
    assert describe(err) == "(notFound) The resource 'x' was not found"
