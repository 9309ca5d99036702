"""MetricStore: a key's series are replaced as a whole; a series already at its value is
not written again, a changed value is, and series the key no longer has are removed."""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry, Gauge

from karpenter_core.controllers.metrics.store import MetricStore, StoreMetric


class CountingGauge(Gauge):
    """A gauge that counts its ``labels`` lookups (each is a dict lookup under a lock)."""

    lookups = 0

    def labels(self, *args: Any, **kwargs: Any) -> Any:
        CountingGauge.lookups += 1
        return super().labels(*args, **kwargs)


def _value(registry: CollectorRegistry, **labels: str) -> float | None:
    return registry.get_sample_value("test_pod_state", labels)


def test_unchanged_series_are_not_written_again_and_stale_ones_go() -> None:
    registry = CollectorRegistry()
    gauge = CountingGauge("test_pod_state", "doc", ["name", "node"], registry=registry)
    store = MetricStore()
    CountingGauge.lookups = 0

    def state(node: str, value: float = 1.0) -> list[StoreMetric]:
        return [StoreMetric(gauge, {"name": "p", "node": node}, value)]

    store.update("p", state("a"))
    store.update("p", state("a"))
    assert CountingGauge.lookups == 1  # the same series at the same value: not written
    assert _value(registry, name="p", node="a") == 1.0
    store.update("p", state("a", 2.0))
    assert CountingGauge.lookups == 2 and _value(registry, name="p", node="a") == 2.0
    store.update("p", state("b"))  # moved: the old series goes
    assert _value(registry, name="p", node="a") is None
    assert _value(registry, name="p", node="b") == 1.0
    store.delete("p")
    assert _value(registry, name="p", node="b") is None
    store.update("p", state("b"))  # after a delete it is written again
    assert _value(registry, name="p", node="b") == 1.0
