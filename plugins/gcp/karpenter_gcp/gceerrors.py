"""Compute Engine error classification: which launch errors mean "no capacity here".

GCE reports a failed ``instances.insert`` two ways: synchronously, as an HTTP error whose
``errors[].reason`` carries the GCE code, or (more often) in the zone operation, which ends
``DONE`` with ``error.errors[].code``. Upstream (``pkg/providers/instance/instance.go``)
treats the same codes as insufficient capacity in both places, marks the attempted
offering (machine type, zone, capacity type) unavailable and returns an
``InsufficientCapacityError``, so the next scheduling pass picks another zone or type:

==========================================  ==============================================
GCE code                                    offerings marked
==========================================  ==============================================
``ZONE_RESOURCE_POOL_EXHAUSTED``            the machine type in the zone, for the capacity
``ZONE_RESOURCE_POOL_EXHAUSTED_WITH_...``   type (a stockout)
``IP_SPACE_EXHAUSTED``                      the same (upstream uses a 30 s TTL there; the
``IP_SPACE_EXHAUSTED_WITH_DETAILS``         core cache has one TTL)
``QUOTA_EXCEEDED``                          the machine type in the zone, for the capacity
                                            type (ours: upstream leaves quota to its
                                            generic retry of the next type, which the core
                                            does only after an insufficient-capacity error)
==========================================  ==============================================

Anything else becomes a one-line ``CreateError`` whose condition reason is the GCE code.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, Protocol

from karpenter_core.plugin_api import CreateError, InsufficientCapacityError

__all__ = [
    "CAPACITY_CODES",
    "IP_SPACE_CODES",
    "QUOTA_CODES",
    "ZONE_EXHAUSTED_CODES",
    "GCECapacityError",
    "Marker",
    "capacity_error",
    "classify",
    "create_error",
    "describe",
    "error_reasons",
    "is_not_found",
    "is_retryable",
    "one_line",
    "operation_errors",
]

ZONE_EXHAUSTED_CODES = frozenset(
    {"ZONE_RESOURCE_POOL_EXHAUSTED", "ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS"}
)
IP_SPACE_CODES = frozenset({"IP_SPACE_EXHAUSTED", "IP_SPACE_EXHAUSTED_WITH_DETAILS"})
QUOTA_CODES = frozenset({"QUOTA_EXCEEDED"})
CAPACITY_CODES = ZONE_EXHAUSTED_CODES | IP_SPACE_CODES | QUOTA_CODES
"""The GCE codes a launch turns into an insufficient-capacity mark."""

_REASONS = {
    **dict.fromkeys(ZONE_EXHAUSTED_CODES, "ZoneResourcePoolExhausted"),
    **dict.fromkeys(IP_SPACE_CODES, "IPSpaceExhausted"),
    **dict.fromkeys(QUOTA_CODES, "QuotaExceeded"),
}


class Marker(Protocol):
    """The part of ``UnavailableOfferings`` a failed launch writes to."""

    def mark(self, instance_type: str, zone: str, capacity_type: str, reason: str = "") -> None: ...


class GCECapacityError(InsufficientCapacityError):
    """An ``InsufficientCapacityError`` carrying the GCE code and our condition reason."""

    def __init__(self, cause: BaseException | str, reason: str, gce_code: str = "") -> None:
        self.reason = reason
        self.gce_code = gce_code
        super().__init__(cause)


def one_line(text: str, limit: int = 600) -> str:
    """``text`` with whitespace collapsed, cut at ``limit`` characters."""
    flat = re.sub(r"\s+", " ", text).strip()
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def error_reasons(err: BaseException) -> list[tuple[str, str]]:
    """(reason, message) of each ``errors[]`` entry of a ``GoogleAPICallError``."""
    out = []
    for entry in getattr(err, "errors", None) or ():
        if isinstance(entry, Mapping):
            out.append((str(entry.get("reason") or ""), str(entry.get("message") or "")))
    return out


def operation_errors(operation: Any) -> list[tuple[str, str]]:
    """(code, message) of each ``error.errors`` entry of a finished ``compute_v1.Operation``
    (empty when it succeeded)."""
    error = getattr(operation, "error", None)
    entries = getattr(error, "errors", None) or ()
    return [(str(e.code or ""), str(e.message or "")) for e in entries]


def _status(err: BaseException) -> int | None:
    code = getattr(err, "code", None)
    return code if isinstance(code, int) else None


def is_not_found(err: BaseException) -> bool:
    """True for a 404 from a Google API."""
    return _status(err) == 404


def is_retryable(err: BaseException) -> bool:
    """Worth retrying the same call: throttled (429) or a server error (5xx) that does not
    name a capacity code (a stockout answered 503 will not clear by retrying)."""
    status = _status(err)
    if status == 429:
        return True
    if status is None or status < 500:
        return False
    return not any(reason in CAPACITY_CODES for reason, _ in error_reasons(err))


def capacity_error(
    errors: Iterable[tuple[str, str]],
    instance_type: str,
    zone: str,
    capacity_type: str,
    marker: Marker,
) -> GCECapacityError | None:
    """When one of ``errors`` (code, message) is a capacity code: mark the offering and
    return the error to raise (its text as upstream's ``zone Z insufficient capacity:
    <message>``); else None."""
    for code, message in errors:
        if code in CAPACITY_CODES:
            reason = _REASONS[code]
            marker.mark(instance_type, zone, capacity_type, reason)
            detail = one_line(message or code, 400)
            return GCECapacityError(
                f"zone {zone}, {instance_type} ({capacity_type}): {detail}",
                reason,
                code,
            )
    return None


def classify(
    err: BaseException, instance_type: str, zone: str, capacity_type: str, marker: Marker
) -> InsufficientCapacityError | None:
    """Mark what a synchronous API error rules out and return the capacity error to
    raise, or None when it is not about capacity."""
    return capacity_error(error_reasons(err), instance_type, zone, capacity_type, marker)


def describe(err: BaseException) -> str:
    """``(reason) message`` of a Google API error in one line, for logs and conditions."""
    reasons = error_reasons(err)
    message = getattr(err, "message", None) or str(err)
    code = reasons[0][0] if reasons else ""
    # api_core's message starts with "<METHOD> <url>: "; keep what the API said.
    message = re.sub(r"^[A-Z]+ https?://\S+: ", "", str(message))
    return one_line(f"({code}) {message}" if code else message)


def create_error(what: str, err: BaseException | str, code: str = "") -> CreateError:
    """A one-line ``CreateError`` for a non-capacity failure; its condition reason is the
    GCE code (``LaunchFailed`` when there is none)."""
    if isinstance(err, BaseException):
        reasons = error_reasons(err)
        code = code or (reasons[0][0] if reasons else "")
        detail = describe(err)
    else:
        detail = one_line(err)
    message = one_line(f"{what}: {detail}")
    return CreateError(message, code or "LaunchFailed", one_line(message, 300))
