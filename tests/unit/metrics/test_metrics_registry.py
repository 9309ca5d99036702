"""The metrics module exposes upstream's series: checked by parsing the real text
exposition, not by looking at Python objects."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from prometheus_client.parser import text_string_to_metric_families

from karpenter_core import metrics


@pytest.fixture(autouse=True)
def _clean() -> Iterator[None]:
    metrics.reset()
    yield
    metrics.reset()


def families() -> dict[str, object]:
    return {f.name: f for f in text_string_to_metric_families(metrics.exposition().decode())}


def family(name: str) -> object:
    # The parser strips _total from counter family names.
    fams = families()
    return fams[name] if name in fams else fams[name.removesuffix("_total")]


# (exposed name, type, label names)
EXPECTED: list[tuple[str, str, tuple[str, ...]]] = [
    ("karpenter_nodeclaims_created_total", "counter", ("reason", "nodepool", "min_values_relaxed")),
    ("karpenter_nodeclaims_terminated_total", "counter", ("nodepool", "capacity_type", "zone")),
    (
        "karpenter_nodeclaims_disrupted_total",
        "counter",
        ("reason", "nodepool", "capacity_type", "consolidation_policy", "termination_mode"),
    ),
    (
        "karpenter_pods_disruption_initiated_total",
        "counter",
        ("reason", "nodepool", "capacity_type", "consolidation_policy", "termination_mode"),
    ),
    ("karpenter_nodes_created_total", "counter", ("nodepool", "zone")),
    ("karpenter_nodes_terminated_total", "counter", ("nodepool", "zone")),
    ("karpenter_nodeclaims_instance_termination_duration_seconds", "histogram", ("nodepool",)),
    ("karpenter_nodeclaims_termination_duration_seconds", "histogram", ("nodepool",)),
    (
        "karpenter_nodeclaims_unhealthy_disrupted_total",
        "counter",
        ("condition", "nodepool", "capacity_type", "image_id"),
    ),
    ("karpenter_nodes_termination_duration_seconds", "summary", ("nodepool",)),
    ("karpenter_nodes_drained_total", "counter", ("nodepool",)),
    ("karpenter_nodes_lifetime_duration_seconds", "histogram", ("nodepool",)),
    ("karpenter_pods_eviction_requests_total", "counter", ("code",)),
    ("karpenter_pods_drained_total", "counter", ("reason",)),
    (
        "karpenter_voluntary_disruption_decision_evaluation_duration_seconds",
        "histogram",
        ("reason", "consolidation_type"),
    ),
    (
        "karpenter_voluntary_disruption_decisions_total",
        "counter",
        ("decision", "reason", "consolidation_type"),
    ),
    (
        "karpenter_voluntary_disruption_queue_failures_total",
        "counter",
        ("decision", "reason", "consolidation_type"),
    ),
    (
        "karpenter_voluntary_disruption_decisions_by_nodepool_total",
        "counter",
        ("nodepool", "decision", "reason", "consolidation_type"),
    ),
    ("karpenter_voluntary_disruption_eligible_nodes", "gauge", ("reason",)),
    ("karpenter_voluntary_disruption_consolidation_timeouts_total", "counter", ("consolidation_type",)),
    ("karpenter_voluntary_disruption_failed_validations_total", "counter", ("consolidation_type",)),
    ("karpenter_nodepools_allowed_disruptions", "gauge", ("nodepool", "reason")),
    ("karpenter_nodepools_nodes_consuming_budgets", "gauge", ("nodepool", "reason")),
    ("karpenter_consolidation_score", "histogram", ("decision", "nodepool", "policy")),
    ("karpenter_consolidation_moves_total", "counter", ("decision", "nodepool", "policy")),
    ("karpenter_cluster_utilization_percent", "gauge", ("resource_type",)),
    ("karpenter_nodepools_limit", "gauge", ("resource_type", "nodepool")),
    ("karpenter_nodepools_usage", "gauge", ("resource_type", "nodepool")),
    ("karpenter_nodepools_cost_total", "gauge", ("nodepool",)),
    ("karpenter_nodepools_cost_tracker_errors_total", "counter", ("nodepool",)),
    (
        "karpenter_pods_state",
        "gauge",
        (
            "name", "namespace", "owner", "node", "scheduled", "nodepool", "zone", "arch",
            "capacity_type", "instance_type", "phase", "ready", "managed",
        ),
    ),
    ("karpenter_pods_startup_duration_seconds", "summary", ()),
    ("karpenter_pods_bound_duration_seconds", "histogram", ()),
    ("karpenter_pods_provisioning_bound_duration_seconds", "histogram", ()),
    ("karpenter_pods_provisioning_startup_duration_seconds", "histogram", ()),
    ("karpenter_pods_unstarted_time_seconds", "gauge", ("name", "namespace")),
    ("karpenter_pods_unbound_time_seconds", "gauge", ("name", "namespace")),
    ("karpenter_pods_provisioning_unbound_time_seconds", "gauge", ("name", "namespace")),
    ("karpenter_pods_provisioning_unstarted_time_seconds", "gauge", ("name", "namespace")),
    ("karpenter_pods_provisioning_scheduling_undecided_time_seconds", "gauge", ("name", "namespace")),
    ("karpenter_scheduler_scheduling_duration_seconds", "histogram", ("controller",)),
    ("karpenter_scheduler_queue_depth", "gauge", ("controller", "scheduling_id")),
    ("karpenter_scheduler_unfinished_work_seconds", "gauge", ("controller", "scheduling_id")),
    ("karpenter_scheduler_ignored_pods_count", "gauge", ()),
    ("karpenter_scheduler_unschedulable_pods_count", "gauge", ("controller",)),
    ("karpenter_scheduler_pending_pods_by_effective_zone_count", "gauge", ("controller", "zone")),
    ("karpenter_cluster_state_node_count", "gauge", ()),
    ("karpenter_cluster_state_synced", "gauge", ()),
    ("karpenter_cluster_state_unsynced_time_seconds", "gauge", ()),
    ("karpenter_pods_scheduling_decision_duration_seconds", "histogram", ()),
    ("karpenter_cloudprovider_duration_seconds", "histogram", ("controller", "method", "provider")),
    (
        "karpenter_cloudprovider_errors_total",
        "counter",
        ("controller", "method", "provider", "error"),
    ),
    ("karpenter_build_info", "gauge", ("version", "goversion", "goarch", "commit")),
    (
        "operator_status_condition_count",
        "gauge",
        ("namespace", "name", "type", "status", "reason", "group", "kind"),
    ),
    (
        "operator_status_condition_current_status_seconds",
        "gauge",
        ("namespace", "name", "type", "status", "reason", "group", "kind"),
    ),
    (
        "operator_status_condition_transitions_total",
        "counter",
        ("type", "status", "reason", "group", "kind"),
    ),
    ("operator_status_condition_transition_seconds", "histogram", ("type", "status", "group", "kind")),
    ("operator_termination_current_time_seconds", "gauge", ("namespace", "name", "group", "kind")),
    ("operator_termination_duration_seconds", "histogram", ("group", "kind")),
]  # fmt: skip


def _collector(name: str):  # type: ignore[no-untyped-def]
    for value in vars(metrics).values():
        described = getattr(value, "_name", None)
        if (
            described is not None
            and name.startswith(described)
            and (name == described or name == described + "_total")
        ):
            return value
    raise AssertionError(f"no collector exposes {name}")


def _observe(collector, labels: tuple[str, ...]) -> None:  # type: ignore[no-untyped-def]
    child = collector.labels(**{k: f"v-{k}" for k in labels}) if labels else collector
    if hasattr(child, "inc"):
        child.inc()
    elif hasattr(child, "observe"):
        child.observe(0.3)
    else:
        child.set(1)


@pytest.mark.parametrize(("name", "kind", "labels"), EXPECTED, ids=[e[0] for e in EXPECTED])
def test_metric_is_exposed_with_upstream_name_type_and_labels(
    name: str, kind: str, labels: tuple[str, ...]
) -> None:
    _observe(_collector(name), labels)
    fam = family(name)
    assert fam.type == kind  # type: ignore[attr-defined]
    samples = fam.samples  # type: ignore[attr-defined]
    assert samples, f"{name} has no sample after an observation"
    for s in samples:
        assert set(s.labels) - {"le", "quantile"} == set(labels)


def test_every_defined_metric_is_in_the_expected_table() -> None:
    expected = {e[0].removesuffix("_total") if e[1] == "counter" else e[0] for e in EXPECTED}
    node_gauges = set(metrics.NODE_RESOURCE_GAUGES) | {metrics.NODE_LIFETIME_GAUGE}
    exposed = {
        f.name
        for f in text_string_to_metric_families(metrics.exposition().decode())
        if not f.name.startswith(("process_", "python_"))
    }
    # a plugin's metrics (AWS interruption, say) are on the same registry when its tests
    # ran in this process; they are the plugin's to check, not this table's
    assert exposed - node_gauges - metrics.plugin_metric_names() == expected


def test_plugin_metrics_are_served_and_remembered_apart() -> None:
    c = metrics.counter("karpenter_test_plugin_events_total", "Events a test plugin saw.")
    c.inc()
    assert "karpenter_test_plugin_events" in metrics.plugin_metric_names()
    assert "karpenter_test_plugin_events_total 1.0" in metrics.exposition().decode()
    assert "karpenter_nodeclaims_created" not in metrics.plugin_metric_names()


def test_process_and_runtime_metrics_are_served() -> None:
    names = {f.name for f in text_string_to_metric_families(metrics.exposition().decode())}
    assert "python_info" in names
    assert any(n.startswith("python_gc_") for n in names)


def test_no_created_series_are_exposed() -> None:
    metrics.NODECLAIMS_CREATED_TOTAL.labels(
        reason="provisioned", nodepool="a", min_values_relaxed="false"
    ).inc()
    names = {
        s.name
        for f in text_string_to_metric_families(metrics.exposition().decode())
        for s in f.samples
    }
    assert "karpenter_nodeclaims_created_total" in names
    assert not any(n.endswith("_created") for n in names)


def test_duration_histograms_use_controller_runtime_buckets_plus_long_tail() -> None:
    metrics.SCHEDULER_SCHEDULING_DURATION_SECONDS.labels(controller="provisioner").observe(0.2)
    bounds = [
        s.labels["le"]
        for s in family("karpenter_scheduler_scheduling_duration_seconds").samples  # type: ignore[attr-defined]
        if s.name.endswith("_bucket")
    ]
    assert bounds[:3] == ["0.005", "0.01", "0.025"]
    assert bounds[-6:] == ["60.0", "120.0", "150.0", "300.0", "450.0", "600.0", "+Inf"][-6:]
    assert len(bounds) == 46  # 45 upstream bounds and +Inf


def test_cloudprovider_duration_uses_prometheus_default_buckets() -> None:
    metrics.CLOUDPROVIDER_DURATION_SECONDS.labels(
        controller="c", method="Get", provider="p"
    ).observe(1)
    bounds = [
        float(s.labels["le"])
        for s in family("karpenter_cloudprovider_duration_seconds").samples  # type: ignore[attr-defined]
        if s.name.endswith("_bucket")
    ]
    assert bounds == [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, float("inf")]


@pytest.mark.parametrize(
    ("collector", "first", "last", "count"),
    [
        (metrics.NODECLAIMS_INSTANCE_TERMINATION_DURATION_SECONDS, 1.0, 1024.0, 11),
        (metrics.NODECLAIMS_TERMINATION_DURATION_SECONDS, 1.0, 2048.0, 12),
        (metrics.NODES_LIFETIME_DURATION_SECONDS, 900.0, 30 * 86400.0, 21),
    ],
)
def test_termination_and_lifetime_buckets(collector, first: float, last: float, count: int) -> None:  # type: ignore[no-untyped-def]
    collector.labels(nodepool="a").observe(5)
    bounds = [
        float(s.labels["le"])
        for s in family(collector._name).samples  # type: ignore[attr-defined]
        if s.name.endswith("_bucket") and s.labels["le"] != "+Inf"
    ]
    assert (bounds[0], bounds[-1], len(bounds)) == (first, last, count)


def test_exponential_buckets_match_go() -> None:
    assert metrics.STATUS_BUCKETS[:4] == (0.5, 1.0, 2.0, 4.0)
    assert len(metrics.STATUS_BUCKETS) == 15
    assert metrics.STATUS_BUCKETS[-1] == 8192.0


def test_exponential_buckets_reject_nonsense() -> None:
    with pytest.raises(ValueError, match="exponential_buckets"):
        metrics.exponential_buckets(0, 2, 3)


def test_consolidation_timeouts_exist_at_zero_from_the_start() -> None:
    for kind in ("single", "multi"):
        assert (
            metrics.sample(
                "karpenter_voluntary_disruption_consolidation_timeouts_total",
                {"consolidation_type": kind},
            )
            == 0.0
        )


def test_build_info_is_one() -> None:
    [(labels, value)] = metrics.samples("karpenter_build_info")
    assert value == 1.0
    assert labels["version"]


def test_reset_drops_labelled_series_and_zeroes_unlabelled_ones() -> None:
    labels = {"reason": "provisioned", "nodepool": "a", "min_values_relaxed": "false"}
    metrics.NODECLAIMS_CREATED_TOTAL.labels(**labels).inc(3)
    metrics.CLUSTER_STATE_SYNCED.set(1)
    metrics.PODS_BOUND_DURATION_SECONDS.observe(2)
    assert metrics.sample("karpenter_nodeclaims_created_total", labels) == 3.0
    metrics.reset()
    assert metrics.sample("karpenter_nodeclaims_created_total", labels) is None
    assert metrics.sample("karpenter_cluster_state_synced") == 0.0
    assert metrics.sample("karpenter_pods_bound_duration_seconds_count") == 0.0


def test_samples_lists_every_labelled_child() -> None:
    for pool in ("a", "b"):
        metrics.NODES_CREATED_TOTAL.labels(nodepool=pool, zone="z").inc()
    got = sorted(lbl["nodepool"] for lbl, _ in metrics.samples("karpenter_nodes_created_total"))
    assert got == ["a", "b"]


def test_node_gauges_have_a_label_per_well_known_label() -> None:
    gauges, label_map = metrics.node_gauges()
    metrics.node_gauges()[0]["karpenter_nodes_allocatable"].labels(
        **{
            name: "x"
            for name in [
                *sorted(set(label_map.values())),
                "node_name",
                "phase",
                "managed",
                "resource_type",
            ]
        }
    ).set(4)
    fam = family("karpenter_nodes_allocatable")
    [s] = fam.samples  # type: ignore[attr-defined]
    assert {"zone", "instance_type", "nodepool", "capacity_type", "arch"} <= set(s.labels)
    assert {"node_name", "phase", "managed", "resource_type"} <= set(s.labels)
    assert "resource_type" not in gauges[metrics.NODE_LIFETIME_GAUGE]._labelnames
    assert label_map["topology.kubernetes.io/zone"] == "zone"


def test_node_label_map_snake_cases_the_suffix_and_skips_unprefixed_keys() -> None:
    got = metrics.node_label_map(["example.com/Some-Key", "plain", "a/b/c"])
    assert got == {"example.com/Some-Key": "some_key"}


@pytest.mark.parametrize(
    ("key", "label"),
    [
        ("karpenter.sh/nodepool", "karpenter_sh_nodepool"),
        ("karpenter.k8s.aws/ec2nodeclass", "karpenter_k8s_aws_ec2nodeclass"),
    ],
)
def test_to_prometheus_label(key: str, label: str) -> None:
    assert metrics.to_prometheus_label(key) == label


def test_resource_type_label() -> None:
    assert metrics.resource_type_label("ephemeral-storage") == "ephemeral_storage"


def test_delta_counts_only_what_happened_between_snapshots() -> None:
    labels = {"nodepool": "a", "zone": "z"}
    metrics.NODES_CREATED_TOTAL.labels(**labels).inc(2)
    before = metrics.snapshot()
    metrics.NODES_CREATED_TOTAL.labels(**labels).inc(3)
    metrics.NODES_CREATED_TOTAL.labels(nodepool="b", zone="z").inc()
    changes = metrics.delta(before, metrics.snapshot())
    assert changes == {
        ("karpenter_nodes_created_total", (("nodepool", "a"), ("zone", "z"))): 3.0,
        ("karpenter_nodes_created_total", (("nodepool", "b"), ("zone", "z"))): 1.0,
    }


def test_catalog_lists_every_metric_with_its_type_labels_and_buckets() -> None:
    by_name = {m.name: m for m in metrics.catalog()}
    for name, kind, labels in EXPECTED:
        assert by_name[name].type == kind
        assert by_name[name].labels == labels
    assert set(metrics.NODE_RESOURCE_GAUGES) <= set(by_name)
    assert by_name["karpenter_scheduler_scheduling_duration_seconds"].buckets == (
        metrics.DURATION_BUCKETS
    )
    assert by_name["karpenter_consolidation_score"].buckets == (
        0.1, 0.25, 0.33, 0.5, 1.0, 2.0, 5.0, 10.0,
    )  # fmt: skip
    assert all(m.help for m in by_name.values())


def test_snapshot_holds_only_karpenter_series() -> None:
    names = {name for name, _ in metrics.snapshot()}
    assert "karpenter_build_info" in names
    assert not any(n.startswith(("process_", "python_")) for n in names)


def test_the_exposition_in_pieces_is_byte_for_byte_the_whole_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``/metrics`` is written in pieces (gauge families a chunk of samples at a time) so a
    150,000-pod exposition is never held whole; joined, the pieces are exactly what
    ``generate_latest`` gives, for every kind of family and chunk boundary."""
    from prometheus_client import (
        CollectorRegistry,
        Counter,
        Gauge,
        Histogram,
        Info,
        Summary,
        generate_latest,
    )

    from karpenter_core import metrics as m

    reg = CollectorRegistry()
    pods = Gauge("pods_state", "Per pod.", ["name", "namespace"], registry=reg)
    for i in range(7):
        pods.labels(f"p{i}", "ns").set(i)
    Gauge("empty_labelled", "No children yet.", ["pool"], registry=reg)
    Gauge("plain", "Unlabelled.", registry=reg).set(2.5)
    c = Counter("launches", "Counter with created.", ["pool"], registry=reg)
    c.labels("a").inc()
    h = Histogram("solve_seconds", "Histogram.", buckets=(0.1, 1.0), registry=reg)
    h.observe(0.5)
    Summary("pending_seconds", "Summary.", registry=reg).observe(3)
    Info("build", "Info.", registry=reg).info({"version": "1"})
    whole = generate_latest(reg)
    for chunk in (1, 3, 7, 100):
        monkeypatch.setattr(m, "EXPOSITION_CHUNK", chunk)
        pieces = list(m.iter_exposition(reg))
        assert b"".join(pieces) == whole, chunk
    monkeypatch.setattr(m, "EXPOSITION_CHUNK", 3)
    assert len(list(m.iter_exposition(reg))) > 7  # the 7 pod samples came in 3 pieces

    def steady(text: bytes) -> list[bytes]:
        # the process and GC collectors read the live process: they move between two reads
        moving = (b"process_", b"python_gc_")
        return [
            line for line in text.splitlines() if not line.lstrip(b"# HELPTYPE").startswith(moving)
        ]

    assert steady(b"".join(m.iter_exposition(m.REGISTRY))) == steady(generate_latest(m.REGISTRY))
