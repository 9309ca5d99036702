"""The CapacityBuffer replica count (spec apis §5): max of replicas and the percentage of
the scalable (at least 1), capped by limits over non-zero requests; limits alone when
neither replicas nor percentage is set."""

from __future__ import annotations

import pytest

from karpenter_core.apis.resources import parse_resource_list
from karpenter_core.controllers.capacitybuffer.replicas import (
    MAX_INT32,
    compute_replicas,
    limit_replicas,
    percentage_replicas,
)

CPU_1 = {"cpu": "1"}
CPU_1_MEM_2G = {"cpu": "1", "memory": "2Gi"}


@pytest.mark.parametrize(
    ("scalable", "percentage", "expected"),
    [
        (10, 20, 2),  # exact
        (10, 25, 3),  # ceil(2.5)
        (3, 10, 1),  # ceil(0.3) = 1
        (1, 1, 1),  # ceil(0.01) = 1: the minimum of one
        (10, 0, 0),  # no percentage, no pods
        (0, 50, 0),  # an empty workload gets no headroom
        (4, 200, 8),  # percentages above 100 are allowed
    ],
)
def test_percentage_replicas(scalable: int, percentage: int, expected: int) -> None:
    assert percentage_replicas(scalable, percentage) == expected


@pytest.mark.parametrize(
    ("replicas", "percentage", "scalable", "limits", "requests", "expected"),
    [
        # replicas alone
        (3, None, None, None, CPU_1, 3),
        (0, None, None, None, CPU_1, 0),
        # percentage alone (scalableRef)
        (None, 30, 10, None, CPU_1, 3),
        (None, 1, 5, None, CPU_1, 1),  # minimum of one
        # both: the larger wins
        (5, 30, 10, None, CPU_1, 5),
        (2, 50, 10, None, CPU_1, 5),
        # a percentage on a podTemplateRef buffer (no scalable) means nothing
        (2, 50, None, None, CPU_1, 2),
        # limits cap the base: floor(limit / request)
        (10, None, None, {"cpu": "4"}, CPU_1, 4),
        (10, None, None, {"cpu": "4500m"}, CPU_1, 4),
        (2, None, None, {"cpu": "4"}, CPU_1, 2),  # a cap above the base changes nothing
        (None, 50, 20, {"cpu": "3"}, CPU_1, 3),
        # the tightest limited resource decides
        (10, None, None, {"cpu": "8", "memory": "5Gi"}, CPU_1_MEM_2G, 2),
        # only resources the pod requests count: a GPU limit does not cap a CPU pod
        (10, None, None, {"nvidia.com/gpu": "1"}, CPU_1, 10),
        (10, None, None, {"nvidia.com/gpu": "1", "cpu": "6"}, CPU_1, 6),
        # a zero request is not a request
        (10, None, None, {"memory": "1Gi"}, {"cpu": "1", "memory": "0"}, 10),
        # neither replicas nor percentage: the limits alone decide
        (None, None, None, {"cpu": "7"}, CPU_1, 7),
        (None, None, None, {"cpu": "8", "memory": "5Gi"}, CPU_1_MEM_2G, 2),
        # ... and limits that say nothing about the pod leave nothing
        (None, None, None, {"nvidia.com/gpu": "2"}, CPU_1, 0),
        (None, None, None, None, CPU_1, 0),
        # a limit smaller than one pod allows none
        (3, None, None, {"cpu": "500m"}, CPU_1, 0),
    ],
)
def test_compute_replicas(
    replicas: int | None,
    percentage: int | None,
    scalable: int | None,
    limits: dict[str, str] | None,
    requests: dict[str, str],
    expected: int,
) -> None:
    got = compute_replicas(
        replicas=replicas,
        percentage=percentage,
        scalable_replicas=scalable,
        limits=parse_resource_list(limits) if limits is not None else None,
        requests=parse_resource_list(requests),
    )
    assert got == expected


def test_limit_replicas_is_none_when_no_limited_resource_is_requested() -> None:
    assert limit_replicas(parse_resource_list({"cpu": "4"}), {}) is None


def test_limit_replicas_is_clamped_to_int32() -> None:
    huge = parse_resource_list({"memory": "1Ei"})
    assert limit_replicas(huge, parse_resource_list({"memory": "1"})) == MAX_INT32
