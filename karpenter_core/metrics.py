"""Every Prometheus metric upstream Karpenter exports, with upstream's names, types,
labels and buckets, so dashboards and alerts written for the Go operator keep working.

Why a dedicated :data:`REGISTRY` rather than prometheus_client's global one: tests and
``karpenter simulate`` must be able to read and reset exactly Karpenter's series without
touching whatever else a process registered. One process holds one registry; when
several Managers run in one process one after another (tests, a simulation report per
scenario), call :func:`reset` between runs so each starts from zero. Managers running at
the *same* time share the series, like two controllers of one operator do.

Usage from a controller::

    from karpenter_core import metrics
    metrics.NODECLAIMS_CREATED_TOTAL.labels(
        reason=metrics.REASON_PROVISIONED, nodepool="default", min_values_relaxed="false"
    ).inc()

Known difference: prometheus_client summaries expose only ``_sum`` and ``_count`` (no
quantiles), so upstream's summary objectives (0, 0.5, 0.9, 0.99, 1) are not reported.
"""

from __future__ import annotations

import platform
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import TypeVar

import prometheus_client
from attrs import frozen
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, Summary
from prometheus_client.metrics import MetricWrapperBase

from karpenter_core import __version__ as _VERSION

# Go's client does not emit ``<name>_created`` series; leaving them on would add a series
# per counter/histogram child that upstream's dashboards do not know about.
prometheus_client.disable_created_metrics()  # type: ignore[no-untyped-call]

REGISTRY = CollectorRegistry(auto_describe=True)
"""The registry holding every Karpenter metric, plus the process and runtime collectors a
metrics endpoint is expected to serve (``process_resident_memory_bytes``,
``process_cpu_seconds_total``, ``python_gc_*``, ``python_info``: what controller-runtime's
registry gives the Go operator, and what upstream's performance tests scrape)."""

prometheus_client.ProcessCollector(registry=REGISTRY)
prometheus_client.PlatformCollector(registry=REGISTRY)
prometheus_client.GCCollector(registry=REGISTRY)

NAMESPACE = "karpenter"

# ---------------------------------------------------------------------------------------
# Label names
# ---------------------------------------------------------------------------------------
LABEL_NODEPOOL = "nodepool"
LABEL_REASON = "reason"
LABEL_RESOURCE_TYPE = "resource_type"
LABEL_CAPACITY_TYPE = "capacity_type"
LABEL_ZONE = "zone"
LABEL_MIN_VALUES_RELAXED = "min_values_relaxed"
LABEL_CONSOLIDATION_POLICY = "consolidation_policy"
LABEL_TERMINATION_MODE = "termination_mode"
LABEL_CONTROLLER = "controller"
LABEL_METHOD = "method"
LABEL_PROVIDER = "provider"
LABEL_ERROR = "error"
LABEL_SCHEDULING_ID = "scheduling_id"
LABEL_DECISION = "decision"
LABEL_CONSOLIDATION_TYPE = "consolidation_type"
LABEL_POLICY = "policy"
LABEL_CONDITION = "condition"
LABEL_IMAGE_ID = "image_id"
LABEL_CODE = "code"

# ---------------------------------------------------------------------------------------
# Label values
# ---------------------------------------------------------------------------------------
# reason on nodeclaims_created_total / nodeclaims_disrupted_total
REASON_PROVISIONED = "provisioned"
REASON_EXPIRED = "expired"
REASON_UNHEALTHY = "unhealthy"
REASON_INSUFFICIENT_CAPACITY = "insufficient_capacity"
REASON_NODECLASS_NOT_READY = "nodeclass_not_ready"
REASON_LAUNCH_TIMEOUT = "launch_timeout"
REASON_REGISTRATION_TIMEOUT = "registration_timeout"
REASON_GARBAGE_COLLECTED = "garbage_collected"
REASON_UNDERUTILIZED = "underutilized"
REASON_EMPTY = "empty"
REASON_DRIFTED = "drifted"

TERMINATION_MODE_GRACEFUL = "graceful"
TERMINATION_MODE_EVENTUAL = "eventual"
TERMINATION_MODE_FORCEFUL = "forceful"

# error on cloudprovider_errors_total ("" when the error is of no well-known type)
ERROR_NODECLAIM_NOT_FOUND = "NodeClaimNotFoundError"
ERROR_NODECLASS_NOT_READY = "NodeClassNotReadyError"
ERROR_INSUFFICIENT_CAPACITY = "InsufficientCapacityError"
ERROR_UNKNOWN = ""

# consolidation_type on the voluntary_disruption_* series
CONSOLIDATION_TYPE_SINGLE = "single"
CONSOLIDATION_TYPE_MULTI = "multi"

# zone on scheduler_pending_pods_by_effective_zone_count besides a concrete zone
EFFECTIVE_ZONE_FLEXIBLE = "flexible"
EFFECTIVE_ZONE_NONE = "none"

# ---------------------------------------------------------------------------------------
# Buckets
# ---------------------------------------------------------------------------------------
DURATION_BUCKETS: tuple[float, ...] = (
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7,
    0.8, 0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 7.0, 8.0, 9.0,
    10.0, 15.0, 20.0, 25.0, 30.0, 40.0, 50.0, 60.0, 120.0, 150.0, 300.0, 450.0, 600.0,
)  # fmt: skip
"""controller-runtime's duration buckets plus the long tail singletons need."""

DEFAULT_BUCKETS: tuple[float, ...] = (
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
)  # fmt: skip
"""Prometheus' default buckets (Go's ``prometheus.DefBuckets``)."""


def exponential_buckets(start: float, factor: float, count: int) -> tuple[float, ...]:
    """Go's ``prometheus.ExponentialBuckets``: ``count`` bounds from ``start``."""
    if count < 1 or start <= 0 or factor <= 1:
        raise ValueError("exponential_buckets needs count >= 1, start > 0 and factor > 1")
    return tuple(start * factor**i for i in range(count))


STATUS_BUCKETS = exponential_buckets(0.5, 2, 15)
"""Buckets of the per-kind status-condition histograms (0.5 s doubling, 15 bounds)."""

_HOUR = 3600.0
_DAY = 24 * _HOUR
LIFETIME_BUCKETS: tuple[float, ...] = (
    15 * 60.0, 30 * 60.0, 45 * 60.0,
    _HOUR, 2 * _HOUR, 4 * _HOUR, 6 * _HOUR, 8 * _HOUR, 10 * _HOUR, 12 * _HOUR,
    16 * _HOUR, 20 * _HOUR,
    _DAY, 2 * _DAY, 3 * _DAY, 5 * _DAY, 10 * _DAY, 15 * _DAY, 20 * _DAY, 25 * _DAY, 30 * _DAY,
)  # fmt: skip
CONSOLIDATION_SCORE_BUCKETS: tuple[float, ...] = (0.1, 0.25, 0.33, 0.5, 1.0, 2.0, 5.0, 10.0)


_ALL: list[MetricWrapperBase] = []
_ALL_LOCK = threading.Lock()


_M = TypeVar("_M", bound=MetricWrapperBase)


def _track(metric: _M) -> _M:
    with _ALL_LOCK:
        _ALL.append(metric)
    return metric


def _counter(name: str, doc: str, labels: Sequence[str] = ()) -> Counter:
    return _track(Counter(name, doc, labelnames=tuple(labels), registry=REGISTRY))


def _gauge(name: str, doc: str, labels: Sequence[str] = ()) -> Gauge:
    return _track(Gauge(name, doc, labelnames=tuple(labels), registry=REGISTRY))


def _histogram(
    name: str, doc: str, labels: Sequence[str] = (), buckets: Sequence[float] = DURATION_BUCKETS
) -> Histogram:
    return _track(
        Histogram(name, doc, labelnames=tuple(labels), buckets=tuple(buckets), registry=REGISTRY)
    )


def _summary(name: str, doc: str, labels: Sequence[str] = ()) -> Summary:
    return _track(Summary(name, doc, labelnames=tuple(labels), registry=REGISTRY))


# --- for plugins ---------------------------------------------------------------------------
# A plugin's own metrics (an interruption queue's, say) must live on the same registry as
# the core's, so ``/metrics`` exposes them and ``reset()``/``snapshot()`` cover them in
# tests. Define them once, at import time, with these. Their names are remembered apart
# (``plugin_metric_names``) so the core's own table can be checked whatever is loaded.

_PLUGIN_NAMES: set[str] = set()


def _plugin(name: str) -> str:
    with _ALL_LOCK:
        _PLUGIN_NAMES.add(name)
    return name


def plugin_metric_names() -> frozenset[str]:
    """Names of the metrics plugins defined with :func:`counter`, :func:`gauge` and
    :func:`histogram` (as declared: a counter's without ``_total``)."""
    with _ALL_LOCK:
        return frozenset(_PLUGIN_NAMES)


def counter(name: str, doc: str, labels: Sequence[str] = ()) -> Counter:
    """A counter on Karpenter's registry, included in ``reset()`` and ``snapshot()``."""
    return _counter(_plugin(name.removesuffix("_total")), doc, labels)


def gauge(name: str, doc: str, labels: Sequence[str] = ()) -> Gauge:
    """A gauge on Karpenter's registry, included in ``reset()`` and ``snapshot()``."""
    return _gauge(_plugin(name), doc, labels)


def histogram(
    name: str, doc: str, labels: Sequence[str] = (), buckets: Sequence[float] = DURATION_BUCKETS
) -> Histogram:
    """A histogram on Karpenter's registry (default buckets: upstream's duration buckets)."""
    return _histogram(_plugin(name), doc, labels, buckets)


_DISRUPTED_LABELS = (
    LABEL_REASON,
    LABEL_NODEPOOL,
    LABEL_CAPACITY_TYPE,
    LABEL_CONSOLIDATION_POLICY,
    LABEL_TERMINATION_MODE,
)

# ---------------------------------------------------------------------------------------
# NodeClaims and nodes (pkg/metrics)
# ---------------------------------------------------------------------------------------
NODECLAIMS_CREATED_TOTAL = _counter(
    "karpenter_nodeclaims_created_total",
    "NodeClaims created by Karpenter, by reason, owning nodepool and whether minValues "
    "was relaxed.",
    (LABEL_REASON, LABEL_NODEPOOL, LABEL_MIN_VALUES_RELAXED),
)
NODECLAIMS_TERMINATED_TOTAL = _counter(
    "karpenter_nodeclaims_terminated_total",
    "NodeClaims terminated by Karpenter, by owning nodepool, capacity type and zone.",
    (LABEL_NODEPOOL, LABEL_CAPACITY_TYPE, LABEL_ZONE),
)
NODECLAIMS_DISRUPTED_TOTAL = _counter(
    "karpenter_nodeclaims_disrupted_total",
    "NodeClaims disrupted by Karpenter, by reason, nodepool, capacity type, consolidation "
    "policy and termination mode.",
    _DISRUPTED_LABELS,
)
PODS_DISRUPTION_INITIATED_TOTAL = _counter(
    "karpenter_pods_disruption_initiated_total",
    "Reschedulable pods (no DaemonSet or mirror pods) on nodeclaims Karpenter disrupted, "
    "by the nodeclaim's disruption labels.",
    _DISRUPTED_LABELS,
)
NODES_CREATED_TOTAL = _counter(
    "karpenter_nodes_created_total",
    "Nodes created by Karpenter, by owning nodepool and zone.",
    (LABEL_NODEPOOL, LABEL_ZONE),
)
NODES_TERMINATED_TOTAL = _counter(
    "karpenter_nodes_terminated_total",
    "Nodes terminated by Karpenter, by owning nodepool and zone.",
    (LABEL_NODEPOOL, LABEL_ZONE),
)
NODECLAIMS_INSTANCE_TERMINATION_DURATION_SECONDS = _histogram(
    "karpenter_nodeclaims_instance_termination_duration_seconds",
    "Seconds the cloud provider took to terminate a NodeClaim's instance.",
    (LABEL_NODEPOOL,),
    exponential_buckets(1, 2, 11),
)
NODECLAIMS_TERMINATION_DURATION_SECONDS = _histogram(
    "karpenter_nodeclaims_termination_duration_seconds",
    "Seconds from a NodeClaim's deletion to the removal of its finalizer.",
    (LABEL_NODEPOOL,),
    exponential_buckets(1, 2, 12),
)
NODECLAIMS_UNHEALTHY_DISRUPTED_TOTAL = _counter(
    "karpenter_nodeclaims_unhealthy_disrupted_total",
    "Unhealthy NodeClaims repaired by Karpenter, by node condition, nodepool, capacity type "
    "and image ID.",
    (LABEL_CONDITION, LABEL_NODEPOOL, LABEL_CAPACITY_TYPE, LABEL_IMAGE_ID),
)

# ---------------------------------------------------------------------------------------
# Node termination (pkg/controllers/node/termination)
# ---------------------------------------------------------------------------------------
NODES_TERMINATION_DURATION_SECONDS = _summary(
    "karpenter_nodes_termination_duration_seconds",
    "Seconds from a node's deletion request to the removal of its finalizer.",
    (LABEL_NODEPOOL,),
)
NODES_DRAINED_TOTAL = _counter(
    "karpenter_nodes_drained_total", "Nodes drained by Karpenter.", (LABEL_NODEPOOL,)
)
NODES_LIFETIME_DURATION_SECONDS = _histogram(
    "karpenter_nodes_lifetime_duration_seconds",
    "Node lifetime from creation to termination, in seconds.",
    (LABEL_NODEPOOL,),
    LIFETIME_BUCKETS,
)
PODS_EVICTION_REQUESTS_TOTAL = _counter(
    "karpenter_pods_eviction_requests_total",
    "Pod eviction requests Karpenter made, by HTTP response code.",
    (LABEL_CODE,),
)
PODS_DRAINED_TOTAL = _counter(
    "karpenter_pods_drained_total",
    "Pods drained during node termination, by reason.",
    (LABEL_REASON,),
)

# ---------------------------------------------------------------------------------------
# Disruption (pkg/controllers/disruption)
# ---------------------------------------------------------------------------------------
VOLUNTARY_DISRUPTION_DECISION_EVALUATION_DURATION_SECONDS = _histogram(
    "karpenter_voluntary_disruption_decision_evaluation_duration_seconds",
    "Seconds spent evaluating a disruption decision, by method and consolidation type.",
    (LABEL_REASON, LABEL_CONSOLIDATION_TYPE),
)
VOLUNTARY_DISRUPTION_DECISIONS_TOTAL = _counter(
    "karpenter_voluntary_disruption_decisions_total",
    "Disruption decisions performed, by decision, reason and consolidation type.",
    (LABEL_DECISION, LABEL_REASON, LABEL_CONSOLIDATION_TYPE),
)
VOLUNTARY_DISRUPTION_DECISIONS_BY_NODEPOOL_TOTAL = _counter(
    "karpenter_voluntary_disruption_decisions_by_nodepool_total",
    "Disruption decisions performed, by nodepool, decision, reason and consolidation type.",
    (LABEL_NODEPOOL, LABEL_DECISION, LABEL_REASON, LABEL_CONSOLIDATION_TYPE),
)
VOLUNTARY_DISRUPTION_ELIGIBLE_NODES = _gauge(
    "karpenter_voluntary_disruption_eligible_nodes",
    "Nodes eligible for disruption, by disruption reason.",
    (LABEL_REASON,),
)
VOLUNTARY_DISRUPTION_CONSOLIDATION_TIMEOUTS_TOTAL = _counter(
    "karpenter_voluntary_disruption_consolidation_timeouts_total",
    "Times consolidation hit its timeout, by consolidation type.",
    (LABEL_CONSOLIDATION_TYPE,),
)
VOLUNTARY_DISRUPTION_FAILED_VALIDATIONS_TOTAL = _counter(
    "karpenter_voluntary_disruption_failed_validations_total",
    "Disruption candidates that failed validation, by consolidation type.",
    (LABEL_CONSOLIDATION_TYPE,),
)
VOLUNTARY_DISRUPTION_QUEUE_FAILURES_TOTAL = _counter(
    "karpenter_voluntary_disruption_queue_failures_total",
    "Enqueued disruption decisions that failed, by decision, reason and consolidation type.",
    (LABEL_DECISION, LABEL_REASON, LABEL_CONSOLIDATION_TYPE),
)
NODEPOOLS_ALLOWED_DISRUPTIONS = _gauge(
    "karpenter_nodepools_allowed_disruptions",
    "Nodes of a nodepool that may be disrupting at the same time, by nodepool and reason.",
    (LABEL_NODEPOOL, LABEL_REASON),
)
NODEPOOLS_NODES_CONSUMING_BUDGETS = _gauge(
    "karpenter_nodepools_nodes_consuming_budgets",
    "Nodes currently consuming a nodepool's disruption budget, by nodepool and reason.",
    (LABEL_NODEPOOL, LABEL_REASON),
)
CONSOLIDATION_SCORE = _histogram(
    "karpenter_consolidation_score",
    "Score of balanced consolidation moves, by decision, nodepool and policy.",
    (LABEL_DECISION, LABEL_NODEPOOL, LABEL_POLICY),
    CONSOLIDATION_SCORE_BUCKETS,
)
CONSOLIDATION_MOVES_TOTAL = _counter(
    "karpenter_consolidation_moves_total",
    "Balanced consolidation moves, by decision, nodepool and policy.",
    (LABEL_DECISION, LABEL_NODEPOOL, LABEL_POLICY),
)

# ---------------------------------------------------------------------------------------
# Cluster, nodepool and pod observability (pkg/controllers/metrics)
# ---------------------------------------------------------------------------------------
CLUSTER_UTILIZATION_PERCENT = _gauge(
    "karpenter_cluster_utilization_percent",
    "Utilisation of allocatable resources by pod requests.",
    (LABEL_RESOURCE_TYPE,),
)
NODEPOOLS_LIMIT = _gauge(
    "karpenter_nodepools_limit",
    "A nodepool's resource limits, by resource type and nodepool.",
    (LABEL_RESOURCE_TYPE, LABEL_NODEPOOL),
)
NODEPOOLS_USAGE = _gauge(
    "karpenter_nodepools_usage",
    "Resources provisioned for a nodepool, by resource type and nodepool.",
    (LABEL_RESOURCE_TYPE, LABEL_NODEPOOL),
)
NODEPOOLS_COST_TOTAL = _gauge(
    "karpenter_nodepools_cost_total",
    "A nodepool's total price from Karpenter's view (provider units; not billing).",
    (LABEL_NODEPOOL,),
)
NODEPOOLS_COST_TRACKER_ERRORS_TOTAL = _counter(
    "karpenter_nodepools_cost_tracker_errors_total",
    "Errors while tracking nodepool cost, by nodepool.",
    (LABEL_NODEPOOL,),
)
POD_STATE_LABELS = (
    "name", "namespace", "owner", "node", "scheduled", LABEL_NODEPOOL, LABEL_ZONE, "arch",
    LABEL_CAPACITY_TYPE, "instance_type", "phase", "ready", "managed",
)  # fmt: skip
PODS_STATE = _gauge(
    "karpenter_pods_state",
    "Current state of each pod, labelled by pod, owner, node and the node's placement.",
    POD_STATE_LABELS,
)
PODS_STARTUP_DURATION_SECONDS = _summary(
    "karpenter_pods_startup_duration_seconds", "Seconds from pod creation until running."
)
PODS_BOUND_DURATION_SECONDS = _histogram(
    "karpenter_pods_bound_duration_seconds", "Seconds from pod creation until bound."
)
PODS_PROVISIONING_BOUND_DURATION_SECONDS = _histogram(
    "karpenter_pods_provisioning_bound_duration_seconds",
    "Seconds from when Karpenter first thought a pod could schedule until it bound.",
)
PODS_PROVISIONING_STARTUP_DURATION_SECONDS = _histogram(
    "karpenter_pods_provisioning_startup_duration_seconds",
    "Seconds from when Karpenter first thought a pod could schedule until it ran.",
)
_POD_NAME_LABELS = ("name", "namespace")
PODS_UNSTARTED_TIME_SECONDS = _gauge(
    "karpenter_pods_unstarted_time_seconds",
    "Seconds a pod has existed without running.",
    _POD_NAME_LABELS,
)
PODS_UNBOUND_TIME_SECONDS = _gauge(
    "karpenter_pods_unbound_time_seconds",
    "Seconds a pod has existed without being bound.",
    _POD_NAME_LABELS,
)
PODS_PROVISIONING_UNBOUND_TIME_SECONDS = _gauge(
    "karpenter_pods_provisioning_unbound_time_seconds",
    "Seconds since Karpenter first thought a pod could schedule, while still unbound.",
    _POD_NAME_LABELS,
)
PODS_PROVISIONING_UNSTARTED_TIME_SECONDS = _gauge(
    "karpenter_pods_provisioning_unstarted_time_seconds",
    "Seconds since Karpenter first thought a pod could schedule, while not yet running.",
    _POD_NAME_LABELS,
)
PODS_PROVISIONING_SCHEDULING_UNDECIDED_TIME_SECONDS = _gauge(
    "karpenter_pods_provisioning_scheduling_undecided_time_seconds",
    "Seconds since Karpenter saw a pod without reaching a scheduling decision for it.",
    _POD_NAME_LABELS,
)

# ---------------------------------------------------------------------------------------
# Scheduler (pkg/controllers/provisioning/scheduling)
# ---------------------------------------------------------------------------------------
SCHEDULER_SCHEDULING_DURATION_SECONDS = _histogram(
    "karpenter_scheduler_scheduling_duration_seconds",
    "Seconds per scheduling simulation (provisioning and disruption), by controller.",
    (LABEL_CONTROLLER,),
)
SCHEDULER_QUEUE_DEPTH = _gauge(
    "karpenter_scheduler_queue_depth",
    "Pods waiting in the scheduling queue of a running simulation.",
    (LABEL_CONTROLLER, LABEL_SCHEDULING_ID),
)
SCHEDULER_UNFINISHED_WORK_SECONDS = _gauge(
    "karpenter_scheduler_unfinished_work_seconds",
    "Seconds of an in-progress simulation not yet observed by the duration histogram.",
    (LABEL_CONTROLLER, LABEL_SCHEDULING_ID),
)
SCHEDULER_IGNORED_PODS_COUNT = _gauge(
    "karpenter_scheduler_ignored_pods_count", "Pods the scheduler ignored."
)
SCHEDULER_UNSCHEDULABLE_PODS_COUNT = _gauge(
    "karpenter_scheduler_unschedulable_pods_count",
    "Pods the last simulation could not schedule, by controller.",
    (LABEL_CONTROLLER,),
)
SCHEDULER_PENDING_PODS_BY_EFFECTIVE_ZONE_COUNT = _gauge(
    "karpenter_scheduler_pending_pods_by_effective_zone_count",
    "Pending pods by the zone their constraints leave them: a zone name, 'flexible' "
    "(several zones) or 'none' (no zone satisfies them).",
    (LABEL_CONTROLLER, LABEL_ZONE),
)

# ---------------------------------------------------------------------------------------
# Cluster state (pkg/controllers/state)
# ---------------------------------------------------------------------------------------
CLUSTER_STATE_NODE_COUNT = _gauge(
    "karpenter_cluster_state_node_count", "Nodes in Karpenter's cluster state."
)
CLUSTER_STATE_SYNCED = _gauge(
    "karpenter_cluster_state_synced",
    "1 when cluster state holds every NodeClaim and Node of the API server, else 0.",
)
CLUSTER_STATE_UNSYNCED_TIME_SECONDS = _gauge(
    "karpenter_cluster_state_unsynced_time_seconds",
    "Seconds cluster state has been out of sync.",
)
PODS_SCHEDULING_DECISION_DURATION_SECONDS = _histogram(
    "karpenter_pods_scheduling_decision_duration_seconds",
    "Seconds from first seeing a pod to first trying to schedule it.",
)

# ---------------------------------------------------------------------------------------
# Cloud provider (pkg/cloudprovider/metrics): default Prometheus buckets, as upstream
# ---------------------------------------------------------------------------------------
CLOUDPROVIDER_DURATION_SECONDS = _histogram(
    "karpenter_cloudprovider_duration_seconds",
    "Seconds per cloud provider call, by controller, method and provider.",
    (LABEL_CONTROLLER, LABEL_METHOD, LABEL_PROVIDER),
    DEFAULT_BUCKETS,
)
CLOUDPROVIDER_ERRORS_TOTAL = _counter(
    "karpenter_cloudprovider_errors_total",
    "Errors returned by cloud provider calls, by controller, method, provider and error type.",
    (LABEL_CONTROLLER, LABEL_METHOD, LABEL_PROVIDER, LABEL_ERROR),
)

# ---------------------------------------------------------------------------------------
# Build info (label names kept from the Go operator so queries carry over)
# ---------------------------------------------------------------------------------------
BUILD_INFO = _gauge(
    "karpenter_build_info",
    "Constant 1, labelled by the version Karpenter was built from.",
    ("version", "goversion", "goarch", "commit"),
)

# ---------------------------------------------------------------------------------------
# operatorpkg status controllers: the generic ("deprecated") names, no karpenter_ prefix
# ---------------------------------------------------------------------------------------
LABEL_GROUP = "group"
LABEL_KIND = "kind"
LABEL_TYPE = "type"
LABEL_STATUS = "status"
_CONDITION_GAUGE_LABELS = (
    "namespace", "name", LABEL_TYPE, LABEL_STATUS, LABEL_REASON, LABEL_GROUP, LABEL_KIND,
)  # fmt: skip
OPERATOR_STATUS_CONDITION_COUNT = _gauge(
    "operator_status_condition_count",
    "Conditions of an object by type and status (1 per present condition).",
    _CONDITION_GAUGE_LABELS,
)
OPERATOR_STATUS_CONDITION_CURRENT_STATUS_SECONDS = _gauge(
    "operator_status_condition_current_status_seconds",
    "Seconds a status condition has held its current status.",
    _CONDITION_GAUGE_LABELS,
)
OPERATOR_STATUS_CONDITION_TRANSITIONS_TOTAL = _counter(
    "operator_status_condition_transitions_total",
    "Transitions of a condition, by type, status and reason.",
    (LABEL_TYPE, LABEL_STATUS, LABEL_REASON, LABEL_GROUP, LABEL_KIND),
)
OPERATOR_STATUS_CONDITION_TRANSITION_SECONDS = _histogram(
    "operator_status_condition_transition_seconds",
    "Seconds a condition held a status before transitioning.",
    (LABEL_TYPE, LABEL_STATUS, LABEL_GROUP, LABEL_KIND),
    DEFAULT_BUCKETS,
)
OPERATOR_TERMINATION_CURRENT_TIME_SECONDS = _gauge(
    "operator_termination_current_time_seconds",
    "Seconds an object has been terminating.",
    ("namespace", "name", LABEL_GROUP, LABEL_KIND),
)
OPERATOR_TERMINATION_DURATION_SECONDS = _histogram(
    "operator_termination_duration_seconds",
    "Seconds an object took to terminate completely.",
    (LABEL_GROUP, LABEL_KIND),
    DEFAULT_BUCKETS,
)


def to_prometheus_label(key: str) -> str:
    """A Kubernetes label key as a Prometheus label name, as operatorpkg does
    (``karpenter.sh/nodepool`` -> ``karpenter_sh_nodepool``)."""
    for char in "/.-":
        key = key.replace(char, "_")
    return key


# ---------------------------------------------------------------------------------------
# Node gauges: their label names depend on the well-known labels plugins register, so
# they are built on first use (upstream builds them when the controller is constructed).
# ---------------------------------------------------------------------------------------
NODE_RESOURCE_GAUGES = (
    "karpenter_nodes_allocatable",
    "karpenter_nodes_total_pod_requests",
    "karpenter_nodes_total_pod_limits",
    "karpenter_nodes_total_daemon_requests",
    "karpenter_nodes_total_daemon_limits",
    "karpenter_nodes_system_overhead",
)
NODE_LIFETIME_GAUGE = "karpenter_nodes_current_lifetime_seconds"
_NODE_DOCS = {
    "karpenter_nodes_allocatable": "Resources allocatable on each node.",
    "karpenter_nodes_total_pod_requests": "Requests of the pods bound to each node, "
    "DaemonSet pods included.",
    "karpenter_nodes_total_pod_limits": "Limits of the pods bound to each node, DaemonSet "
    "pods included.",
    "karpenter_nodes_total_daemon_requests": "Requests of the DaemonSet pods on each node.",
    "karpenter_nodes_total_daemon_limits": "Limits of the DaemonSet pods on each node.",
    "karpenter_nodes_system_overhead": "Capacity minus allocatable on each node.",
    NODE_LIFETIME_GAUGE: "Node age in seconds.",
}
_node_lock = threading.Lock()
_node_gauges: dict[str, Gauge] = {}
_node_label_map: dict[str, str] = {}


def node_label_map(well_known_labels: Iterable[str] | None = None) -> dict[str, str]:
    """Well-known label key -> metric label name (the part after ``/``, lower snake
    case). Keys without exactly one ``/`` are skipped, as upstream does."""
    if well_known_labels is None:
        from karpenter_core.apis.labels import WELL_KNOWN_LABELS

        well_known_labels = WELL_KNOWN_LABELS
    out: dict[str, str] = {}
    for key in sorted(well_known_labels):
        parts = key.split("/")
        if len(parts) == 2:
            out[key] = parts[1].lower().replace("-", "_")
    return out


def node_gauges() -> tuple[dict[str, Gauge], dict[str, str]]:
    """The node gauges (by full metric name) and the well-known label map they use.

    Built from the well-known labels registered at the first call after a change: if a
    plugin registered more labels since, the gauges are rebuilt (their old series go).
    """
    with _node_lock:
        current = node_label_map()
        if not _node_gauges or current != _node_label_map:
            for gauge in _node_gauges.values():
                REGISTRY.unregister(gauge)
                with _ALL_LOCK:
                    _ALL.remove(gauge)
            _node_gauges.clear()
            _node_label_map.clear()
            _node_label_map.update(current)
            base = [*sorted(set(current.values())), "node_name", "phase", "managed"]
            for name in NODE_RESOURCE_GAUGES:
                _node_gauges[name] = _gauge(name, _NODE_DOCS[name], [*base, LABEL_RESOURCE_TYPE])
            _node_gauges[NODE_LIFETIME_GAUGE] = _gauge(
                NODE_LIFETIME_GAUGE, _NODE_DOCS[NODE_LIFETIME_GAUGE], base
            )
        return dict(_node_gauges), dict(_node_label_map)


def resource_type_label(resource_name: str) -> str:
    """A resource name as the ``resource_type`` label (``ephemeral-storage`` ->
    ``ephemeral_storage``)."""
    return resource_name.lower().replace("-", "_")


# ---------------------------------------------------------------------------------------
# Reading, resetting, exposing
# ---------------------------------------------------------------------------------------
def _initial_series() -> None:
    """Series upstream creates at start-up so they exist before the first event."""
    for kind in (CONSOLIDATION_TYPE_MULTI, CONSOLIDATION_TYPE_SINGLE):
        VOLUNTARY_DISRUPTION_CONSOLIDATION_TIMEOUTS_TOTAL.labels(consolidation_type=kind).inc(0)
    BUILD_INFO.labels(
        version=_VERSION,
        goversion=f"python{platform.python_version()}",
        goarch=platform.machine() or "unknown",
        commit="",
    ).set(1)


def _collectors() -> list[MetricWrapperBase]:
    with _ALL_LOCK:
        return list(_ALL)


def reset() -> None:
    """Zero every Karpenter series: labelled children are dropped, unlabelled metrics go
    back to their initial value. Use between simulations or tests in one process."""
    for collector in _collectors():
        if collector._labelnames:
            collector.clear()
        else:
            collector._metric_init()  # type: ignore[no-untyped-call]
    _initial_series()


reset_for_tests = reset


def exposition(registry: CollectorRegistry = REGISTRY) -> bytes:
    """The registry in the Prometheus text exposition format (what ``/metrics`` serves)."""
    return prometheus_client.generate_latest(registry)


EXPOSITION_CHUNK = 2000
"""Samples per chunk when a gauge family is written in pieces (:func:`iter_exposition`)."""


class _Family:
    """A one-family collector, so ``generate_latest`` formats just it."""

    def __init__(self, family: prometheus_client.Metric) -> None:
        self.family = family

    def collect(self) -> list[prometheus_client.Metric]:
        return [self.family]


def _without_header(text: bytes) -> bytes:
    """A gauge family's text without its ``# HELP`` and ``# TYPE`` lines: the second and
    later chunks of a family continue the first one's."""
    lines = text.split(b"\n")
    return b"\n".join(line for line in lines if not line.startswith((b"# HELP ", b"# TYPE ")))


def iter_exposition(registry: CollectorRegistry = REGISTRY) -> Iterable[bytes]:
    """:func:`exposition` in pieces, byte for byte the same text once joined.

    With a pod series per pod (``karpenter_pods_state`` and the pod timing gauges, as
    upstream), 150,000 pods make ``generate_latest`` build ~40 MB of text from some 150 MB
    of sample objects at once, on every scrape: the operator's peak memory. Gauge families
    are therefore formatted ``EXPOSITION_CHUNK`` samples at a time, straight from the
    metric's children (prometheus_client's own sample iteration, which copies only the
    child map), and every other family as ``generate_latest`` formats it. Anything this
    cannot take apart is formatted whole."""
    lock = getattr(registry, "_lock", None)
    names = getattr(registry, "_collector_to_names", None)
    if lock is None or names is None or getattr(registry, "_target_info", None):
        yield prometheus_client.generate_latest(registry)
        return
    with lock:
        collectors = list(names)
    for collector in collectors:
        if (
            isinstance(collector, MetricWrapperBase)
            and getattr(collector, "_type", "") == "gauge"
            and hasattr(collector, "_samples")
            and hasattr(collector, "_get_metric")
        ):
            yield from _gauge_chunks(collector)
        else:
            yield prometheus_client.generate_latest(collector)


def _gauge_chunks(gauge: MetricWrapperBase) -> Iterable[bytes]:
    first = True
    family = gauge._get_metric()  # type: ignore[no-untyped-call]
    for sample in gauge._samples():
        family.add_sample(gauge._name + sample[0], *sample[1:])
        if len(family.samples) >= EXPOSITION_CHUNK:
            text = prometheus_client.generate_latest(_Family(family))
            yield text if first else _without_header(text)
            first = False
            family = gauge._get_metric()  # type: ignore[no-untyped-call]
    if family.samples or first:
        text = prometheus_client.generate_latest(_Family(family))
        yield text if first else _without_header(text)


def sample(name: str, labels: Mapping[str, str] | None = None) -> float | None:
    """The value of one sample (``name`` as exposed, e.g. ``..._total`` or
    ``..._bucket``), or None when the series does not exist."""
    return REGISTRY.get_sample_value(name, dict(labels or {}))


def samples(name: str) -> list[tuple[dict[str, str], float]]:
    """Every sample named ``name`` with its labels — for reports that sum or group."""
    out: list[tuple[dict[str, str], float]] = []
    for family in REGISTRY.collect():
        for s in family.samples:
            if s.name == name:
                out.append((dict(s.labels), float(s.value)))
    return out


@frozen
class MetricInfo:
    """One metric as exposed: for docs and a ``metrics`` listing."""

    name: str
    type: str
    labels: tuple[str, ...]
    help: str
    buckets: tuple[float, ...] = ()


def catalog() -> list[MetricInfo]:
    """Every metric this module defines (node gauges with the current well-known labels),
    sorted by exposed name."""
    node_gauges()
    out = []
    for collector in _collectors():
        kind = collector._type
        name = collector._name
        if kind == "counter":
            name += "_total"
        raw_buckets = getattr(collector, "_upper_bounds", None) if kind == "histogram" else None
        buckets = tuple(b for b in raw_buckets or () if b != float("inf"))
        out.append(
            MetricInfo(
                name, str(kind), tuple(collector._labelnames), collector._documentation, buckets
            )
        )
    return sorted(out, key=lambda m: m.name)


SampleKey = tuple[str, tuple[tuple[str, str], ...]]


def snapshot() -> dict[SampleKey, float]:
    """Every Karpenter sample now (not the process/runtime collectors, whose values are
    not deterministic), keyed by (exposed name, sorted labels). A report taken as
    ``delta(before, snapshot())`` counts only what happened between two points, even when
    other runs in the same process share the registry."""
    out: dict[SampleKey, float] = {}
    for collector in _collectors():  # Karpenter's own series: no process/runtime noise
        for family in collector.collect():
            for s in family.samples:
                out[(s.name, tuple(sorted(s.labels.items())))] = float(s.value)
    return out


def delta(
    before: Mapping[SampleKey, float], after: Mapping[SampleKey, float]
) -> dict[SampleKey, float]:
    """``after - before`` per sample (series absent before count from 0); for counters and
    histogram buckets/sums/counts this is what happened in between. Unchanged samples are
    left out."""
    out: dict[SampleKey, float] = {}
    for key, value in after.items():
        change = value - before.get(key, 0.0)
        if change:
            out[key] = change
    return out


_initial_series()
