"""Scheduling errors as values (spec scheduling.md §12).

Each error renders upstream Karpenter's message text, so users searching for a message find
the same explanation. They are plain objects, not raised: the solver tries many placements
per pod and most attempts fail, so failures must be cheap and only rendered when reported.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence

from karpenter_core.provisioning.scheduler import resourcelist as rl


class SchedulingError:
    """A reason a pod could not be placed somewhere; ``str()`` is the user-facing message."""

    __slots__ = ()

    def message(self) -> str:
        raise NotImplementedError

    def __str__(self) -> str:
        return self.message()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message()!r})"


class PodError(SchedulingError):
    """A fixed message, optionally wrapping another error: ``"<prefix>, <cause>"``."""

    __slots__ = ("cause", "text")

    def __init__(self, text: str, cause: object | None = None) -> None:
        self.text = text
        self.cause = cause

    def message(self) -> str:
        if self.cause is None:
            return self.text
        return f"{self.text}, {self.cause}"


class ReservedOfferingError(PodError):
    """Reserved capacity is compatible but exhausted: not relaxed, blocks lower-weight pools."""

    __slots__ = ()


class DRAError(PodError):
    """The pod uses Dynamic Resource Allocation, which this solve ignores: never relaxed."""

    __slots__ = ()


class NodePoolError(SchedulingError):
    """An error from trying one NodePool, named so users know which pool said no."""

    __slots__ = ("cause", "nodepool")

    def __init__(self, nodepool: str, cause: object) -> None:
        self.nodepool = nodepool
        self.cause = cause

    def message(self) -> str:
        return f"incompatible with nodepool {json.dumps(self.nodepool)}, {self.cause}"


class CombinedError(SchedulingError):
    """Several errors (one per NodePool tried), joined as upstream's multierr does."""

    __slots__ = ("errors",)

    def __init__(self, errors: Sequence[object]) -> None:
        self.errors = tuple(errors)

    def message(self) -> str:
        return "; ".join(str(e) for e in self.errors)


def is_reserved_offering_error(err: object) -> bool:
    if isinstance(err, ReservedOfferingError):
        return True
    if isinstance(err, NodePoolError):
        return is_reserved_offering_error(err.cause)
    if isinstance(err, CombinedError):
        return any(is_reserved_offering_error(e) for e in err.errors)
    return False


def resources_string(r: Mapping[str, int]) -> str:
    """Resource list as compact JSON with Kubernetes quantities, as upstream prints them."""
    return json.dumps(rl.format_list(r), sort_keys=True, separators=(",", ":"))


ONE_MILLION_CPU_MILLI = 1_000_000 * 1000


class InstanceTypeFilterError(SchedulingError):
    """Why no instance type survived filtering, naming the criteria no type met (most specific)."""

    __slots__ = (
        "fits",
        "fits_and_offering",
        "has_offering",
        "hint",
        "largest",
        "max_daemon",
        "min_daemon",
        "min_values_error",
        "pod_requests",
        "requirements",
        "requirements_and_fits",
        "requirements_and_offering",
        "requirements_met",
    )

    def __init__(self, requirements: object, pod_requests: Mapping[str, int]) -> None:
        self.requirements = requirements
        self.pod_requests = pod_requests
        self.requirements_met = False
        self.fits = False
        self.has_offering = False
        self.requirements_and_fits = False
        self.requirements_and_offering = False
        self.fits_and_offering = False
        self.min_values_error: str | None = None
        self.min_daemon: dict[str, int] | None = None
        self.max_daemon: dict[str, int] | None = None
        self.hint = ""
        # Largest allocatable among types that meet the requirements and have an offering.
        self.largest: dict[str, int] = {}

    def track_largest(self, allocatable: Mapping[str, int]) -> None:
        for k, v in allocatable.items():
            if v > self.largest.get(k, 0):
                self.largest[k] = v

    def largest_hint(self) -> str:
        """Which requested resources no compatible type has, and the most one offers."""
        wanted = rl.add(self.min_daemon or {}, self.pod_requests)
        short = {k: self.largest.get(k, 0) for k, v in wanted.items() if v > self.largest.get(k, 0)}
        if not short or not self.largest:
            return ""
        offers = ", ".join(f"{k} {v}" for k, v in sorted(rl.format_list(short).items()))
        return f" (largest compatible instance type offers {offers})"

    def track_daemon_overhead(self, overhead: Mapping[str, int]) -> None:
        if self.max_daemon is None or self.min_daemon is None:
            self.min_daemon = dict(overhead)
            self.max_daemon = dict(overhead)
            return
        self.min_daemon = rl.min_of(self.min_daemon, overhead)
        self.max_daemon = rl.max_of(self.max_daemon, overhead)

    def resources_text(self) -> str:
        if not self.min_daemon or self.max_daemon is None:
            return resources_string(self.pod_requests)
        lo = resources_string(rl.add(self.min_daemon, self.pod_requests))
        hi = resources_string(rl.add(self.max_daemon, self.pod_requests))
        return lo if lo == hi else f"min={lo}, max={hi}"

    def message(self) -> str:
        tail = f"requirements={self.requirements}, resources={self.resources_text()}{self.hint}"
        if self.min_values_error is not None:
            return f"{self.min_values_error}, {tail}"
        req, fit, off = self.requirements_met, self.fits, self.has_offering
        if not req and not fit and not off:
            return (
                "no instance type met the scheduling requirements or had enough resources or "
                f"had a required offering, {tail}"
            )
        if not req and not fit:
            return (
                f"no instance type met the scheduling requirements or had enough resources, {tail}"
            )
        if not req and not off:
            return (
                "no instance type met the scheduling requirements or had a required offering, "
                f"{tail}"
            )
        if not fit and not off:
            return f"no instance type had enough resources or had a required offering, {tail}"
        if not req:
            return f"no instance type met all requirements, {tail}"
        if not fit:
            msg = f"no instance type has enough resources, {tail}{self.largest_hint()}"
            if self.pod_requests.get("cpu", 0) >= ONE_MILLION_CPU_MILLI:
                msg += " (CPU request >= 1 Million, m vs M typo?)"
            return msg
        if not off:
            return f"no instance type has the required offering, {tail}"
        if self.requirements_and_fits:
            return (
                "no instance type which met the scheduling requirements and had enough resources, "
                f"had a required offering, {tail}"
            )
        if self.fits_and_offering:
            return (
                "no instance type which had enough resources and the required offering met the "
                f"scheduling requirements, {tail}"
            )
        if self.requirements_and_offering:
            return (
                "no instance type which met the scheduling requirements and the required offering "
                f"had the required resources, {tail}"
            )
        return f"no instance type met the requirements/resources/offering tuple, {tail}"


def min_values_message(deficient: Mapping[str, int]) -> str:
    labels = " ".join(sorted(deficient))
    return f"minValues requirement is not met for label(s) (label(s)=[{labels}])"


def first_error(errors: Iterable[object | None]) -> object | None:
    for e in errors:
        if e is not None:
            return e
    return None
