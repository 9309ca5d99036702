"""schedule() end to end: --scheduler-config default spreads and snapshot namespaces."""

from __future__ import annotations

from typing import Any

import pytest
from scheduler_helpers import fake_labels as fake_labels  # autouse fixture
from scheduler_helpers import nodepool, pod, solve

from karpenter_core.apis.labels import CAPACITY_TYPE_LABEL_KEY, LABEL_TOPOLOGY_ZONE
from karpenter_core.apis.objects import Controller, Namespace, Pod, Service
from karpenter_core.provisioning.scheduler import SchedulerOptions
from karpenter_core.provisioning.scheduler.results import Results
from karpenter_core.state.snapshot import ClusterSnapshot

ZONE = LABEL_TOPOLOGY_ZONE
ANY_CAPACITY = [{"key": CAPACITY_TYPE_LABEL_KEY, "operator": "Exists"}]


def config(key: str = ZONE, when: str = "DoNotSchedule") -> str:
    return f"""
podTopologySpread:
  defaultConstraints:
  - {{maxSkew: 1, topologyKey: {key}, whenUnsatisfiable: {when}}}
"""


RS = Controller.from_dict(
    {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": "web", "namespace": "default", "uid": "web-uid"},
        "spec": {"selector": {"matchLabels": {"app": "web"}}},
    }
)


def owned(p: Pod, owner: str = "web", kind: str = "ReplicaSet") -> Pod:
    raw: dict[str, Any] = dict(p.raw)
    raw["metadata"] = {
        **raw["metadata"],
        "ownerReferences": [
            {
                "apiVersion": "apps/v1" if kind != "Job" else "batch/v1",
                "kind": kind,
                "name": owner,
                "uid": f"{owner}-uid",
                "controller": True,
            }
        ],
    }
    return Pod.from_dict(raw)


def zone_counts(results: Results) -> list[int]:
    per_zone: dict[str, int] = {}
    for nc in results.new_nodeclaims:
        (zone,) = nc.requirements.get(ZONE).values
        per_zone[zone] = per_zone.get(zone, 0) + len(nc.pods)
    return sorted(per_zone.values())


def run(pods: list[Pod], options: SchedulerOptions, **snapshot: Any) -> Results:
    snap = ClusterSnapshot(pods=pods, **snapshot)
    return solve(pods, [nodepool(requirements=ANY_CAPACITY)], options=options, snapshot=snap)


# --- default topology spreads (spec §10.7, scenario 42) -----------------------------------------


def test_default_zone_spread_applies_to_replicaset_pods() -> None:
    pods = [owned(pod(labels={"app": "web"})) for _ in range(4)]
    results = run(pods, SchedulerOptions(scheduler_config=config()), controllers=[RS])
    assert zone_counts(results) == [1, 1, 2]


def test_default_hostname_spread_gives_each_pod_a_node() -> None:
    pods = [owned(pod(labels={"app": "web"})) for _ in range(3)]
    options = SchedulerOptions(scheduler_config=config("kubernetes.io/hostname"))
    results = run(pods, options, controllers=[RS])
    assert [len(nc.pods) for nc in results.new_nodeclaims] == [1, 1, 1]


def test_without_a_config_owned_pods_share_one_node() -> None:
    pods = [owned(pod(labels={"app": "web"})) for _ in range(3)]
    results = run(pods, SchedulerOptions(), controllers=[RS])
    assert [len(nc.pods) for nc in results.new_nodeclaims] == [3]


def test_pod_with_its_own_spread_ignores_the_default() -> None:
    own = [
        {
            "maxSkew": 3,
            "topologyKey": "kubernetes.io/hostname",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "web"}},
        }
    ]
    pods = [owned(pod(labels={"app": "web"}, tsc=own)) for _ in range(3)]
    options = SchedulerOptions(scheduler_config=config("kubernetes.io/hostname"))
    results = run(pods, options, controllers=[RS])
    assert [len(nc.pods) for nc in results.new_nodeclaims] == [3]


def test_unowned_pod_without_a_service_gets_no_default() -> None:
    pods = [pod(labels={"app": "web"}) for _ in range(3)]
    options = SchedulerOptions(scheduler_config=config("kubernetes.io/hostname"))
    results = run(pods, options, controllers=[RS])
    assert [len(nc.pods) for nc in results.new_nodeclaims] == [3]


def test_job_pods_selected_by_a_service_get_the_default() -> None:
    svc = Service.from_dict(
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "batch", "namespace": "default"},
            "spec": {"selector": {"app": "batch"}},
        }
    )
    pods = [owned(pod(labels={"app": "batch"}), "etl", "Job") for _ in range(4)]
    results = run(pods, SchedulerOptions(scheduler_config=config()), services=[svc])
    assert zone_counts(results) == [1, 1, 2]


def test_bad_scheduler_config_fails_when_the_options_are_built() -> None:
    with pytest.raises(ValueError, match="maxSkew must be greater than 0"):
        SchedulerOptions(scheduler_config=config().replace("maxSkew: 1", "maxSkew: 0"))


def test_options_with_a_decoded_config_stay_hashable() -> None:
    decoded = {"podTopologySpread": {"defaultConstraints": []}}
    assert hash(SchedulerOptions(scheduler_config=decoded)) == hash(SchedulerOptions())


# --- namespaceSelector reads the snapshot's Namespaces ------------------------------------------


def _anti_affinity_to_db_in_team_data() -> dict[str, Any]:
    term = {
        "labelSelector": {"matchLabels": {"app": "db"}},
        "namespaceSelector": {"matchLabels": {"team": "data"}},
        "topologyKey": "kubernetes.io/hostname",
    }
    return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}


@pytest.mark.parametrize(("team", "nodes"), [("data", 2), ("web", 1)])
def test_namespace_selector_uses_namespace_labels_from_the_snapshot(team: str, nodes: int) -> None:
    db = pod(namespace="storage", labels={"app": "db"})
    client = pod(affinity=_anti_affinity_to_db_in_team_data())
    ns = Namespace.from_dict({"metadata": {"name": "storage", "labels": {"team": team}}})
    results = run([db, client], SchedulerOptions(), namespaces=[ns])
    assert results.pod_errors == {}
    assert len(results.new_nodeclaims) == nodes
