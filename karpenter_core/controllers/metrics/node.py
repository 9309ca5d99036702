"""``metrics.node``: per-node resource gauges and ``cluster_utilization_percent``.

Every 5 s (a singleton, as upstream) each node in cluster state gets
``nodes_allocatable``, ``nodes_total_pod_requests`` / ``_limits``,
``nodes_total_daemon_requests`` / ``_limits`` and ``nodes_system_overhead`` (capacity minus
allocatable) per resource, plus ``nodes_current_lifetime_seconds``; the label set is one
label per well-known node label (:func:`karpenter_core.metrics.node_gauges`) plus
``node_name``, ``phase`` and ``managed``. Values are in whole units (cpu in cores, with
fractions). Cluster utilisation is the summed pod requests over the summed allocatable,
per resource, in percent. Nodes that are gone lose their series at the next pass.

The lifetime gauge is computed when it is collected (now minus the node's creation), so a
pass has nothing to write for a node whose object and pods did not change, and cluster
utilisation is summed again only when some node did.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import Any

from karpenter_core import metrics
from karpenter_core.apis.resources import CPU
from karpenter_core.controllers.metrics.store import MetricStore, StoreMetric
from karpenter_core.runtime.context import ControllerContext
from karpenter_core.runtime.reconciler import Result
from karpenter_core.state.cluster import cluster_of
from karpenter_core.state.statenode import StateNode

__all__ = ["CLUSTER_UTILIZATION_KEY", "NAME", "REQUEUE_SECONDS", "NodeMetrics", "unit_value"]

NAME = "metrics.node"
REQUEUE_SECONDS = 5.0
CLUSTER_UTILIZATION_KEY = "clusterUtilization"


def unit_value(resource: str, milli: int) -> float:
    """A quantity as the gauges report it: cores (fractional) for cpu, otherwise the
    integer value rounded up, like Kubernetes' ``Quantity.Value()``."""
    if resource == CPU:
        return milli / 1000
    return float(-(-milli // 1000))


def _sum(lists: Iterable[Mapping[str, int]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for r in lists:
        for k, v in r.items():
            out[k] = out.get(k, 0) + v
    return out


_PODS_TOKEN = "metrics.node.pods"


def _token(_pods: object) -> object:
    """A new object per change of a node's pods (kept by :meth:`StateNode.from_pods`),
    equal only to itself."""
    return object()


class NodeMetrics:
    def __init__(self, ctx: ControllerContext) -> None:
        self.ctx = ctx
        self.cluster = cluster_of(ctx)
        self.store = MetricStore()
        # per node: what its series were built from
        self._series: dict[str, tuple[Any, ...]] = {}
        self._summed = False  # cluster utilisation written once at least

    def reconcile(self) -> Result:
        gauges, label_map = metrics.node_gauges()
        lifetime_gauge = gauges[metrics.NODE_LIFETIME_GAUGE]
        # read in place under the state lock: this only reads, and copying every node
        # each 5 s was most of this controller's cost at thousands of nodes
        with self.cluster.state_nodes_view() as all_nodes:
            nodes = [sn for sn in all_nodes if sn.node is not None]
            self._update(nodes, gauges, label_map, lifetime_gauge)
        return Result.after(REQUEUE_SECONDS)

    def _update(
        self,
        nodes: list[StateNode],
        gauges: Mapping[str, Any],
        label_map: Mapping[str, str],
        lifetime_gauge: Any,
    ) -> None:
        seen: set[Hashable] = set()
        changed = False
        for sn in nodes:
            node = sn.node
            assert node is not None
            seen.add(node.name)
            # what the series show changes with the node object (replaced, never changed,
            # on update), its pods and the gauges; with thousands of nodes, rebuilding
            # every unchanged node's series each 5 s was most of this controller's cost.
            # The pods are represented by a token the node keeps until they change (a
            # tuple of them, built for every node each 5 s, cost more than the check)
            fingerprint = (node, sn.from_pods(_PODS_TOKEN, _token), sn.managed(), lifetime_gauge)
            if self._series.get(node.name) == fingerprint:
                continue
            changed = True
            series = self._node_metrics(sn, gauges, label_map)
            self.store.update(node.name, series)
            lifetime_gauge.labels(*MetricStore.label_values(series[-1])).set_function(
                self._lifetime(node.creation_timestamp or 0.0)
            )
            self._series[node.name] = fingerprint
        for name in [k for k in self._series if k not in seen]:
            del self._series[name]
            changed = True
        for key in set(self.store.keys()) - seen - {CLUSTER_UTILIZATION_KEY}:
            self.store.delete(key)
        if changed or not self._summed:
            self._summed = True
            self.store.update(CLUSTER_UTILIZATION_KEY, utilization_metrics(nodes))

    def _lifetime(self, created: float) -> Callable[[], float]:
        clock = self.ctx.clock
        return lambda: max(0.0, clock.now().timestamp() - created)

    def _node_metrics(
        self,
        sn: StateNode,
        gauges: Mapping[str, Any],
        label_map: Mapping[str, str],
    ) -> list[StoreMetric]:
        """The node's series, its lifetime last (its value is read at collection)."""
        node = sn.node
        assert node is not None
        base = node_labels(sn, label_map)
        daemon_keys = {p.key for p in sn.pods if p.is_owned_by_daemonset()}
        lists: dict[str, Mapping[str, int]] = {
            "karpenter_nodes_system_overhead": {
                k: v - node.allocatable.get(k, 0) for k, v in node.capacity.items()
            },
            "karpenter_nodes_total_pod_requests": sn.pod_requests(),
            "karpenter_nodes_total_pod_limits": _sum(p.limits for p in sn.pods),
            "karpenter_nodes_total_daemon_requests": sn.daemonset_requests(),
            "karpenter_nodes_total_daemon_limits": _sum(
                p.limits for p in sn.pods if p.key in daemon_keys
            ),
            "karpenter_nodes_allocatable": node.allocatable,
        }
        out = []
        for gauge_name, resources in lists.items():
            gauge = gauges[gauge_name]
            for resource, milli in sorted(resources.items()):
                labels = {
                    **base,
                    metrics.LABEL_RESOURCE_TYPE: metrics.resource_type_label(resource),
                }
                out.append(StoreMetric(gauge, labels, unit_value(resource, milli)))
        out.append(StoreMetric(gauges[metrics.NODE_LIFETIME_GAUGE], base, 0.0))
        return out


def node_labels(sn: StateNode, label_map: Mapping[str, str]) -> dict[str, str]:
    """The node's label values for every well-known label (``""`` when unset), its name,
    phase and whether Karpenter manages it."""
    node = sn.node
    assert node is not None
    status = (node.raw.get("status") or {}) if isinstance(node.raw, Mapping) else {}
    labels = {prom: str(node.labels.get(key, "")) for key, prom in label_map.items()}
    labels.update(
        node_name=node.name,
        phase=str(status.get("phase") or ""),
        managed="true" if sn.managed() else "false",
    )
    return labels


def utilization_metrics(nodes: Iterable[StateNode]) -> list[StoreMetric]:
    """``cluster_utilization_percent`` per resource: 100 x requested / allocatable over all
    nodes (resources no node can allocate are left out)."""
    nodes = list(nodes)
    allocatable = _sum(sn.node.allocatable for sn in nodes if sn.node is not None)
    requested = _sum(sn.pod_requests() for sn in nodes)
    out = []
    for resource, total in sorted(allocatable.items()):
        alloc = unit_value(resource, total)
        if alloc == 0:
            continue
        used = unit_value(resource, requested.get(resource, 0))
        out.append(
            StoreMetric(
                metrics.CLUSTER_UTILIZATION_PERCENT,
                {metrics.LABEL_RESOURCE_TYPE: metrics.resource_type_label(resource)},
                100 * used / alloc,
            )
        )
    return out
