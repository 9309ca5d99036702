"""Default topology-spread awareness (--scheduler-config) and NodePool input shapes."""

from __future__ import annotations

import re
from typing import Any

import pytest
from test_topology import MiniScheduler, instance_type, node, nodepool, zone_counts, zone_req

from karpenter_core.apis.labels import LABEL_HOSTNAME, LABEL_TOPOLOGY_ZONE
from karpenter_core.apis.objects import Pod
from karpenter_core.apis.v1 import NodePool
from karpenter_core.provisioning.scheduler.preferences import PodSchedulingView, Preferences
from karpenter_core.provisioning.scheduler.topology import (
    DefaultTopologySpreadInjector,
    SchedulerConfigError,
    Topology,
    parse_scheduler_config,
)

ZONE = LABEL_TOPOLOGY_ZONE
HOST = LABEL_HOSTNAME

ZONE_DEFAULT = """
podTopologySpread:
  defaultConstraints:
  - maxSkew: 1
    topologyKey: topology.kubernetes.io/zone
    whenUnsatisfiable: DoNotSchedule
"""

RS = {
    "apiVersion": "apps/v1",
    "kind": "ReplicaSet",
    "metadata": {"name": "web-rs", "namespace": "default", "uid": "rs-uid"},
    "spec": {"selector": {"matchLabels": {"test": "test"}}},
}

_n = 0


def owned_pod(
    labels: dict[str, str] | None = None,
    owner: str = "web-rs",
    kind: str = "ReplicaSet",
    api_version: str = "apps/v1",
    **spec: Any,
) -> Pod:
    global _n
    _n += 1
    meta: dict[str, Any] = {
        "name": f"p{_n}",
        "namespace": "default",
        "uid": f"default-uid-{_n}",
        "labels": labels if labels is not None else {"test": "test"},
    }
    if owner:
        meta["ownerReferences"] = [
            {
                "apiVersion": api_version,
                "kind": kind,
                "name": owner,
                "uid": f"{owner}-uid",
                "controller": True,
            }
        ]
    return Pod.from_dict({"metadata": meta, "spec": {"containers": [{"name": "c"}], **spec}})


def inject(config: str, pods: list[Pod], **kw: Any) -> list[Any]:
    kw.setdefault("controllers", [RS])
    return DefaultTopologySpreadInjector(parse_scheduler_config(config), **kw).inject(pods)


# --- config parsing -------------------------------------------------------------------------------


def test_empty_config_means_no_defaults() -> None:
    assert parse_scheduler_config("") == ()
    assert parse_scheduler_config(None) == ()
    assert parse_scheduler_config("podTopologySpread: {}") == ()


def test_config_parses_default_constraints() -> None:
    (tsc,) = parse_scheduler_config(ZONE_DEFAULT)
    assert tsc == {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"}


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (
            "podTopologySpread: {defaultConstraints: [{maxSkew: 0, topologyKey: a, "
            "whenUnsatisfiable: DoNotSchedule}]}",
            "defaultConstraints[0].maxSkew must be greater than 0",
        ),
        (
            "podTopologySpread: {defaultConstraints: [{maxSkew: 1, "
            "whenUnsatisfiable: DoNotSchedule}]}",
            "defaultConstraints[0].topologyKey must be set",
        ),
        (
            "podTopologySpread: {defaultConstraints: [{maxSkew: 1, topologyKey: 'bad key', "
            "whenUnsatisfiable: DoNotSchedule}]}",
            "is not a valid label name",
        ),
        (
            "podTopologySpread: {defaultConstraints: [{maxSkew: 1, topologyKey: a, "
            "whenUnsatisfiable: Sometimes}]}",
            "whenUnsatisfiable 'Sometimes' must be one of",
        ),
        (
            "podTopologySpread: {defaultConstraints: [{maxSkew: 1, topologyKey: a, "
            "whenUnsatisfiable: DoNotSchedule, labelSelector: {}}]}",
            "labelSelector must not be set",
        ),
        (
            "podTopologySpread: {defaultConstraints: [{maxSkew: 1, topologyKey: a, "
            "whenUnsatisfiable: DoNotSchedule, matchLabelKeys: [x]}]}",
            "matchLabelKeys must not be set",
        ),
        (
            "podTopologySpread: {defaultConstraints: [{maxSkew: 1, topologyKey: a, whenUnsatisfiable: "
            "DoNotSchedule}, {maxSkew: 2, topologyKey: a, whenUnsatisfiable: DoNotSchedule}]}",
            "defaultConstraints[1] is a duplicate of [0]",
        ),
        (
            "podTopologySpread: {defaultConstraints: [{maxSkew: 1, topologyKey: a, "
            "whenUnsatisfiable: DoNotSchedule, bogus: 1}]}",
            'unknown field "bogus"',
        ),
        ("nodeAffinity: {}", 'unknown field "nodeAffinity"'),
        ("podTopologySpread: [", "decoding scheduler config"),
    ],
)
def test_invalid_config_is_a_clear_error(config: str, message: str) -> None:
    with pytest.raises(SchedulerConfigError, match=re.escape(message)):
        parse_scheduler_config(config)


# --- selector deduction ---------------------------------------------------------------------------


def test_replicaset_selector_becomes_expressions() -> None:
    (p,) = inject(ZONE_DEFAULT, [owned_pod()])
    (tsc,) = p.topology_spread_constraints
    assert tsc["labelSelector"] == {
        "matchExpressions": [{"key": "test", "operator": "In", "values": ["test"]}]
    }
    assert tsc["topologyKey"] == ZONE


def test_pod_with_its_own_constraints_keeps_them() -> None:
    own = {
        "maxSkew": 3,
        "topologyKey": HOST,
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"test": "test"}},
    }
    original = owned_pod(topologySpreadConstraints=[own])
    (p,) = inject(ZONE_DEFAULT, [original])
    assert p is original


def test_no_owner_and_no_service_means_no_default() -> None:
    original = owned_pod(owner="")
    (p,) = inject(ZONE_DEFAULT, [original])
    assert p.topology_spread_constraints == ()


def test_job_owned_pod_selected_by_a_service_gets_the_service_selector() -> None:
    svc = {
        "metadata": {"name": "s", "namespace": "default"},
        "spec": {"selector": {"test": "test"}},
    }
    (p,) = inject(
        ZONE_DEFAULT, [owned_pod(owner="job", kind="Job", api_version="batch/v1")], services=[svc]
    )
    assert p.topology_spread_constraints[0]["labelSelector"] == {"matchLabels": {"test": "test"}}


def test_services_merge_and_replication_controller_overwrites() -> None:
    services = [
        {"metadata": {"namespace": "default"}, "spec": {"selector": {"test": "test"}}},
        {"metadata": {"namespace": "default"}, "spec": {"selector": {"tier": "a"}}},
        {"metadata": {"namespace": "default"}, "spec": {"selector": {"tier": "other"}}},
        {"metadata": {"namespace": "default"}, "spec": {}},  # nil selector: selects nothing
        {"metadata": {"namespace": "elsewhere"}, "spec": {"selector": {"test": "test"}}},
    ]
    rc = {
        "apiVersion": "v1",
        "kind": "ReplicationController",
        "metadata": {"name": "rc", "namespace": "default"},
        "spec": {"selector": {"tier": "a", "rc": "x"}},
    }
    pod = owned_pod(
        {"test": "test", "tier": "a", "rc": "x"},
        owner="rc",
        kind="ReplicationController",
        api_version="v1",
    )
    injector = DefaultTopologySpreadInjector(
        parse_scheduler_config(ZONE_DEFAULT), services=services, controllers=[rc]
    )
    assert injector.default_selector(pod) == {
        "matchLabels": {"test": "test", "tier": "a", "rc": "x"}
    }


def test_missing_controller_contributes_nothing() -> None:
    (p,) = inject(ZONE_DEFAULT, [owned_pod(owner="gone")], controllers=[])
    assert p.topology_spread_constraints == ()


def test_injection_never_touches_the_raw_pod() -> None:
    original = owned_pod()
    (p,) = inject(ZONE_DEFAULT, [original])
    assert "topologySpreadConstraints" not in original.raw["spec"]
    assert original.topology_spread_constraints == ()
    assert p.key == original.key and p.uid == original.uid


def test_no_defaults_is_a_no_op() -> None:
    original = owned_pod()
    assert DefaultTopologySpreadInjector(()).inject([original]) == [original]


# --- scheduling with defaults ---------------------------------------------------------------------


def test_default_zone_spread_balances_owned_pods() -> None:
    batch = inject(ZONE_DEFAULT, [owned_pod() for _ in range(4)])
    assert zone_counts(MiniScheduler().solve(batch)) == [1, 1, 2]


def test_default_hostname_spread_gives_each_pod_a_node() -> None:
    config = ZONE_DEFAULT.replace(ZONE, HOST)
    result = MiniScheduler().solve(inject(config, [owned_pod() for _ in range(3)]))
    assert len({p.name for p in result.values() if p}) == 3


def test_default_counts_existing_pods_through_the_deduced_selector() -> None:
    existing = [node("n1", {ZONE: "z1"})]
    running = [
        Pod.from_dict(
            {**p.raw, "spec": {**p.raw["spec"], "nodeName": "n1"}, "status": {"phase": "Running"}}
        )
        for p in (owned_pod(), owned_pod())
    ]
    np = nodepool(requirements=[zone_req("z1", "z2")])
    sched = MiniScheduler([np], nodes=existing, cluster_pods=running, max_pods=0)
    result = sched.solve(inject(ZONE_DEFAULT, [owned_pod(), owned_pod()]))
    assert {p.domain(ZONE) for p in result.values() if p} == {"z2"}


def test_each_replicaset_spreads_independently() -> None:
    rs2 = {
        **RS,
        "metadata": {**RS["metadata"], "name": "rs2", "uid": "rs2-uid"},
        "spec": {"selector": {"matchLabels": {"test": "other"}}},
    }
    batch = [owned_pod() for _ in range(2)] + [
        owned_pod({"test": "other"}, owner="rs2") for _ in range(2)
    ]
    result = MiniScheduler().solve(inject(ZONE_DEFAULT, batch, controllers=[RS, rs2]))
    # Each ReplicaSet balances on its own (z1, z2 twice); one shared spread would give 2/1/1.
    assert zone_counts(result) == [2, 2]


@pytest.mark.parametrize(("when", "expected"), [("DoNotSchedule", 1), ("ScheduleAnyway", 3)])
def test_default_with_min_domains_on_a_single_zone_pool(when: str, expected: int) -> None:
    config = f"""
podTopologySpread:
  defaultConstraints:
  - {{maxSkew: 1, topologyKey: {ZONE}, whenUnsatisfiable: {when}, minDomains: 3}}
"""
    np = nodepool(requirements=[zone_req("z1")])
    result = MiniScheduler([np]).solve(inject(config, [owned_pod() for _ in range(3)]))
    assert sum(1 for p in result.values() if p) == expected


def test_injected_schedule_anyway_default_is_relaxable() -> None:
    config = ZONE_DEFAULT.replace("DoNotSchedule", "ScheduleAnyway")
    (p,) = inject(config, [owned_pod()])
    view = PodSchedulingView.of(p)
    assert Preferences().relax(view)
    assert view.topology_spread_constraints == ()


# --- NodePool shapes ------------------------------------------------------------------------------


def test_bad_nodepool_requirement_names_the_nodepool() -> None:
    bad = {
        "metadata": {"name": "broken"},
        "spec": {
            "template": {
                "spec": {"requirements": [{"key": ZONE, "operator": "Near", "values": ["z1"]}]}
            }
        },
    }
    with pytest.raises(ValueError, match="nodepool 'broken'"):
        Topology(None, [], [NodePool.from_dict(bad)], {"broken": [instance_type()]}, [])
