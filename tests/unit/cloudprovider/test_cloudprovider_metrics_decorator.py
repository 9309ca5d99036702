"""The metrics decorator times every measured call and labels errors by kind."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from karpenter_core import metrics
from karpenter_core.cloudprovider.errors import (
    CreateError,
    InsufficientCapacityError,
    NodeClaimNotFoundError,
    NodeClassNotReadyError,
)
from karpenter_core.cloudprovider.metrics import (
    CURRENT_CONTROLLER,
    MetricsDecorator,
    controller_scope,
    decorate,
    error_type_label,
)


@pytest.fixture(autouse=True)
def _clean() -> Iterator[None]:
    metrics.reset()
    yield
    metrics.reset()


class StubProvider:
    """Records calls; raises ``fail`` from every measured method when set."""

    name = "stub"

    def __init__(self, fail: BaseException | None = None) -> None:
        self.fail = fail
        self.calls: list[str] = []
        self.extra_value = 42

    def _call(self, method: str, result: Any) -> Any:
        self.calls.append(method)
        if self.fail is not None:
            raise self.fail
        return result

    def create(self, nodeclaim: Any) -> Any:
        return self._call("create", nodeclaim)

    def delete(self, nodeclaim: Any) -> None:
        self._call("delete", None)

    def get(self, provider_id: str) -> Any:
        return self._call("get", provider_id)

    def list(self) -> list[Any]:
        return self._call("list", [])  # type: ignore[no-any-return]

    def get_instance_types(self, nodepool: Any) -> list[Any]:
        return self._call("get_instance_types", [])  # type: ignore[no-any-return]

    def is_drifted(self, nodeclaim: Any) -> str:
        return self._call("is_drifted", "")  # type: ignore[no-any-return]

    def repair_policies(self) -> list[Any]:
        return []

    def supported_node_classes(self) -> list[Any]:
        return []


class FakeTimer:
    def __init__(self, step: float) -> None:
        self.t = 0.0
        self.step = step

    def __call__(self) -> float:
        self.t += self.step
        return self.t


CALLS = [
    ("Create", lambda p: p.create("nc")),
    ("Delete", lambda p: p.delete("nc")),
    ("Get", lambda p: p.get("id")),
    ("List", lambda p: p.list()),
    ("GetInstanceTypes", lambda p: p.get_instance_types(None)),
    ("IsDrifted", lambda p: p.is_drifted("nc")),
]


@pytest.mark.parametrize(("method", "call"), CALLS, ids=[c[0] for c in CALLS])
def test_each_method_is_timed_under_its_upstream_name(method: str, call: Any) -> None:
    provider = MetricsDecorator(StubProvider(), timer=FakeTimer(0.5))  # type: ignore[arg-type]
    with controller_scope("nodeclaim.lifecycle"):
        call(provider)
    labels = {"controller": "nodeclaim.lifecycle", "method": method, "provider": "stub"}
    assert metrics.sample("karpenter_cloudprovider_duration_seconds_count", labels) == 1.0
    assert metrics.sample("karpenter_cloudprovider_duration_seconds_sum", labels) == 0.5
    assert metrics.samples("karpenter_cloudprovider_errors_total") == []


@pytest.mark.parametrize(
    ("error", "label"),
    [
        (InsufficientCapacityError("no capacity"), "InsufficientCapacityError"),
        (NodeClaimNotFoundError("gone"), "NodeClaimNotFoundError"),
        (NodeClassNotReadyError("not ready"), "NodeClassNotReadyError"),
        (CreateError("boom"), ""),
        (RuntimeError("boom"), ""),
    ],
)
def test_errors_are_counted_with_their_kind_and_reraised(error: Exception, label: str) -> None:
    provider = decorate(StubProvider(fail=error))  # type: ignore[arg-type]
    with pytest.raises(type(error)):
        provider.create("nc")  # type: ignore[arg-type]
    errors = {"controller": "", "method": "Create", "provider": "stub", "error": label}
    assert metrics.sample("karpenter_cloudprovider_errors_total", errors) == 1.0
    duration = {"controller": "", "method": "Create", "provider": "stub"}
    assert metrics.sample("karpenter_cloudprovider_duration_seconds_count", duration) == 1.0


def test_error_label_looks_through_wrapping() -> None:
    try:
        try:
            raise InsufficientCapacityError("zone full")
        except InsufficientCapacityError as inner:
            raise RuntimeError("launch failed") from inner
    except RuntimeError as outer:
        assert error_type_label(outer) == "InsufficientCapacityError"


def test_decorating_twice_does_not_double_count() -> None:
    once = decorate(StubProvider())  # type: ignore[arg-type]
    twice = decorate(once)
    assert twice is once
    twice.list()
    labels = {"controller": "", "method": "List", "provider": "stub"}
    assert metrics.sample("karpenter_cloudprovider_duration_seconds_count", labels) == 1.0


def test_unmeasured_and_extra_attributes_pass_through() -> None:
    inner = StubProvider()
    provider = decorate(inner)  # type: ignore[arg-type]
    assert provider.name == "stub"
    assert provider.repair_policies() == []
    assert provider.extra_value == 42  # type: ignore[attr-defined]
    assert provider.create("nc") == "nc"  # type: ignore[arg-type]
    assert inner.calls == ["create"]


def test_controller_scope_restores_the_previous_name() -> None:
    with controller_scope("outer"):
        with controller_scope("inner"):
            assert CURRENT_CONTROLLER.get() == "inner"
        assert CURRENT_CONTROLLER.get() == "outer"
    assert CURRENT_CONTROLLER.get() == ""
