"""A per-object set of gauge series, replaced as a whole (upstream ``metrics.Store``).

A controller that describes an object with several series (a pod's ``pods_state``, a
node's gauges per resource) must drop the series whose labels no longer apply when the
object changes — a pod that moved to another node must not be counted on both. The store
remembers which series each key wrote; :meth:`update` sets the new ones and removes the
rest, :meth:`delete` removes them all, :meth:`replace_all` does that for every key at once
(keys absent from the new map go entirely).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Hashable, Iterable, Mapping

from attrs import frozen
from prometheus_client import Gauge

__all__ = ["MetricStore", "StoreMetric"]


@frozen
class StoreMetric:
    """One series: a gauge, its label values by name, and the value to set."""

    gauge: Gauge
    labels: Mapping[str, str]
    value: float


_Series = tuple[Gauge, tuple[str, ...]]


class MetricStore:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        # key -> its series and the value each was last set to
        self._series: dict[Hashable, dict[_Series, float]] = {}

    @staticmethod
    def label_values(metric: StoreMetric) -> tuple[str, ...]:
        """The metric's label values in its gauge's label order (for ``gauge.labels``)."""
        return tuple(str(metric.labels.get(name, "")) for name in metric.gauge._labelnames)

    def update(self, key: Hashable, metrics: Iterable[StoreMetric]) -> None:
        """Make ``metrics`` the series of ``key``: set them, remove its others. A series
        this key already set to the same value is left alone (a pod's reconcile after an
        event that changed none of its labels writes nothing; prometheus_client's
        ``labels`` lookup was most of the pod metrics' cost in a large simulation)."""
        with self._lock:
            old = self._series.get(key, {})
        new: dict[_Series, float] = {}
        for m in metrics:
            values = self.label_values(m)
            series = (m.gauge, values)
            if old.get(series) != m.value:
                m.gauge.labels(*values).set(m.value)
            new[series] = m.value
        with self._lock:
            self._series[key] = new
        _remove(s for s in old if s not in new)

    def delete(self, key: Hashable) -> None:
        """Remove every series of ``key``."""
        with self._lock:
            old = self._series.pop(key, {})
        _remove(old)

    def replace_all(self, by_key: Mapping[Hashable, Iterable[StoreMetric]]) -> None:
        """Every key's series become ``by_key``'s; keys not in it are deleted."""
        with self._lock:
            gone = [k for k in self._series if k not in by_key]
        for key in gone:
            self.delete(key)
        for key, metrics in by_key.items():
            self.update(key, metrics)

    def keys(self) -> list[Hashable]:
        with self._lock:
            return list(self._series)


def _remove(series: Iterable[_Series]) -> None:
    for gauge, values in series:
        # Gone already (a registry reset, or gauges rebuilt for new well-known labels).
        with contextlib.suppress(KeyError):
            gauge.remove(*values)
