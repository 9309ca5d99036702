"""Every reconcile runs inside ``controller_scope(<controller name>)``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from karpenter_core import metrics
from karpenter_core.cloudprovider.metrics import MetricsDecorator
from karpenter_core.runtime.clock import VirtualClock
from karpenter_core.runtime.manager import Manager
from karpenter_core.runtime.reconciler import Result
from karpenter_core.runtime.scope import current_controller


@pytest.fixture(autouse=True)
def _clean() -> Iterator[None]:
    metrics.reset()
    yield
    metrics.reset()


class ListingProvider:
    """The smallest provider the decorator measures: only ``list`` is called."""

    name = "stub"

    def list(self) -> list[Any]:
        return []


class CallsProvider:
    def __init__(self, provider: Any) -> None:
        self.provider = provider
        self.seen: list[str] = []

    def reconcile(self, key: Any = None) -> Result:
        self.seen.append(current_controller())
        self.provider.list()
        return Result()


def manager() -> Manager:
    return Manager(VirtualClock())


def test_a_provider_call_from_a_reconcile_is_labelled_with_the_controller_name() -> None:
    mgr = manager()
    provider = MetricsDecorator(ListingProvider())  # type: ignore[arg-type]
    mgr.add_controller("nodeclaim.lifecycle", CallsProvider(provider))
    mgr.add_singleton("provisioner", CallsProvider(provider))
    mgr.enqueue("nodeclaim.lifecycle", "a")
    mgr.controller("provisioner").trigger()
    mgr.settle()
    for name in ("nodeclaim.lifecycle", "provisioner"):
        count = metrics.sample(
            "karpenter_cloudprovider_duration_seconds_count",
            {"controller": name, "method": "List", "provider": "stub"},
        )
        assert count == 1.0, name
    assert metrics.sample(
        "karpenter_cloudprovider_duration_seconds_count",
        {"controller": "", "method": "List", "provider": "stub"},
    ) in (None, 0.0)


def test_the_scope_ends_with_the_reconcile() -> None:
    mgr = manager()
    reconciler = CallsProvider(MetricsDecorator(ListingProvider()))  # type: ignore[arg-type]
    mgr.add_controller("nodepool.counter", reconciler)
    mgr.enqueue("nodepool.counter", "a")
    mgr.settle()
    assert reconciler.seen == ["nodepool.counter"]
    assert current_controller() == ""


def test_a_failing_reconcile_still_restores_the_outer_name() -> None:
    class Failing:
        def reconcile(self, key: Any) -> Result:
            raise RuntimeError("boom")

    mgr = manager()
    mgr.add_controller("failing", Failing())
    ctl = mgr.controller("failing")
    assert ctl.run_one("a") is None
    assert ctl.errors == 1
    assert current_controller() == ""
