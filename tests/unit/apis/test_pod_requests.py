"""Pod request arithmetic: kube-scheduler's rules (KEP-753 sidecars), in milli-units."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from karpenter_core.apis.objects import Pod, pod_limits, pod_requests, requests_for_pods

GI = 1024**3 * 1000


def c(
    name: str = "c",
    *,
    requests: dict[str, str] | None = None,
    limits: dict[str, str] | None = None,
    sidecar: bool = False,
) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "resources": {}}
    if requests is not None:
        out["resources"]["requests"] = requests
    if limits is not None:
        out["resources"]["limits"] = limits
    if sidecar:
        out["restartPolicy"] = "Always"
    return out


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        pytest.param({"containers": [c()]}, {}, id="no-requests"),
        pytest.param(
            {
                "containers": [
                    c("a", requests={"cpu": "1"}),
                    c("b", requests={"cpu": "500m", "memory": "1Gi"}),
                ]
            },
            {"cpu": 1500, "memory": GI},
            id="containers-summed",
        ),
        pytest.param(
            {
                "containers": [c(requests={"cpu": "1"})],
                "initContainers": [c("i", requests={"cpu": "2"})],
            },
            {"cpu": 2000},
            id="init-peak-wins",
        ),
        pytest.param(
            {
                "containers": [c(requests={"cpu": "3"})],
                "initContainers": [c("i", requests={"cpu": "2"})],
            },
            {"cpu": 3000},
            id="containers-win-over-init",
        ),
        pytest.param(
            {
                "containers": [c(requests={"cpu": "1"})],
                "initContainers": [
                    c("i1", requests={"cpu": "2"}),
                    c("i2", requests={"cpu": "1500m"}),
                ],
            },
            {"cpu": 2000},
            id="init-containers-maxed-not-summed",
        ),
        pytest.param(
            {
                "containers": [c(requests={"cpu": "1"})],
                "initContainers": [c("side", requests={"cpu": "500m"}, sidecar=True)],
            },
            {"cpu": 1500},
            id="sidecar-joins-the-sum",
        ),
        pytest.param(
            {
                "containers": [c(requests={"cpu": "1"})],
                "initContainers": [
                    c("side", requests={"cpu": "500m"}, sidecar=True),
                    c("init", requests={"cpu": "2"}),
                ],
            },
            {"cpu": 2500},
            id="init-after-sidecar-stacks-on-it",
        ),
        pytest.param(
            {
                "containers": [c(requests={"cpu": "1"})],
                "initContainers": [
                    c("init", requests={"cpu": "2"}),
                    c("side", requests={"cpu": "500m"}, sidecar=True),
                ],
            },
            {"cpu": 2000},
            id="init-before-sidecar-does-not",
        ),
        pytest.param(
            {"containers": [c(limits={"cpu": "2", "memory": "1Gi"}, requests={"cpu": "1"})]},
            {"cpu": 1000, "memory": GI},
            id="missing-request-defaults-to-limit",
        ),
        pytest.param(
            {
                "containers": [c(requests={"cpu": "1"})],
                "overhead": {"cpu": "250m", "memory": "1Gi"},
            },
            {"cpu": 1250, "memory": GI},
            id="overhead-added",
        ),
        pytest.param(
            {
                "containers": [c(requests={"cpu": "1", "memory": "1Gi"})],
                "resources": {"requests": {"cpu": "3"}},
            },
            {"cpu": 3000, "memory": GI},
            id="pod-level-cpu-replaces-aggregate",
        ),
        pytest.param(
            {"containers": [c(requests={"nvidia.com/gpu": "1"})]},
            {"nvidia.com/gpu": 1000},
            id="extended-resource",
        ),
    ],
)
def test_pod_requests(spec: dict[str, Any], expected: dict[str, int]) -> None:
    assert pod_requests(spec) == expected


def test_in_place_resize_status_raises_requests_to_what_the_kubelet_holds() -> None:
    spec = {"containers": [c("app", requests={"cpu": "1"})]}
    status = {"containerStatuses": [{"name": "app", "resources": {"requests": {"cpu": "2"}}}]}
    assert pod_requests(spec, status) == {"cpu": 2000}


def test_infeasible_resize_uses_status_only() -> None:
    spec = {"containers": [c("app", requests={"cpu": "4"})]}
    status = {
        "conditions": [{"type": "PodResizePending", "reason": "Infeasible"}],
        "containerStatuses": [{"name": "app", "resources": {"requests": {"cpu": "1"}}}],
    }
    assert pod_requests(spec, status) == {"cpu": 1000}


def test_limits_aggregate_like_requests() -> None:
    spec = {
        "containers": [c(limits={"cpu": "1"}), c("b", limits={"cpu": "1"})],
        "initContainers": [c("i", limits={"cpu": "3"})],
    }
    assert pod_limits(spec) == {"cpu": 3000}


def _pod(name: str, cpu: str) -> Pod:
    return Pod.from_dict(
        {"metadata": {"name": name}, "spec": {"containers": [c(requests={"cpu": cpu})]}}
    )


def test_requests_for_pods_sums_and_counts_pods() -> None:
    assert requests_for_pods(_pod("a", "1"), _pod("b", "250m")) == {"cpu": 1250, "pods": 2000}


def test_scheduling_requests_carry_one_pod() -> None:
    p = _pod("a", "1")
    assert p.requests == {"cpu": 1000}
    assert p.scheduling_requests == {"cpu": 1000, "pods": 1000}


_milli = st.integers(min_value=0, max_value=64_000)


@given(
    containers=st.lists(_milli, min_size=1, max_size=4),
    inits=st.lists(st.tuples(_milli, st.booleans()), max_size=4),
)
def test_requests_bound_every_phase_of_the_pod(
    containers: list[int], inits: list[tuple[int, bool]]
) -> None:
    """The pod's CPU request covers the running phase (containers + sidecars) and every init
    step (the init container plus sidecars started before it), and equals the largest."""
    spec = {
        "containers": [c(f"c{i}", requests={"cpu": f"{m}m"}) for i, m in enumerate(containers)],
        "initContainers": [
            c(f"i{i}", requests={"cpu": f"{m}m"}, sidecar=side) for i, (m, side) in enumerate(inits)
        ],
    }
    phases = [sum(containers) + sum(m for m, side in inits if side)]
    started = 0
    for m, side in inits:
        if side:
            started += m
            phases.append(started)
        else:
            phases.append(started + m)
    assert pod_requests(spec).get("cpu", 0) == max(phases)
