"""The simulated kube-scheduler's NodeAffinity filter and PreFilter read a pod's node
constraints as kube-scheduler v1.34 does (found by ``tests/contract/
test_contract_kubescheduler.py``, which compares the two), and a feasibility read between
passes does not make the next pass skip its work."""

from __future__ import annotations

from typing import Any

import pytest

from karpenter_core.runtime.clock import VirtualClock
from karpenter_core.sim.apiserver import InMemoryApiServer
from karpenter_core.sim.kubescheduler import KubeScheduler

AFFINITY = "node(s) didn't match Pod's node affinity/selector"
LEFT_OUT = "node(s) didn't satisfy plugin(s) [NodeAffinity]"


def _node(name: str, **labels: str) -> dict[str, Any]:
    allocatable = {"cpu": "4", "memory": "8Gi", "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **labels}},
        "status": {
            "allocatable": allocatable,
            "capacity": allocatable,
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def _pod(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": "i"}], **spec},
    }


def _required(*terms: dict[str, Any]) -> dict[str, Any]:
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}
        }
    }


def _expr(key: str, operator: str, *values: str) -> dict[str, Any]:
    out: dict[str, Any] = {"key": key, "operator": operator}
    if values:
        out["values"] = list(values)
    return out


def _cluster() -> tuple[InMemoryApiServer, KubeScheduler]:
    clock = VirtualClock()
    kube = InMemoryApiServer(clock, seed=1)
    for node in (
        _node("tier-a", tier="a", gen="2"),
        _node("tier-b", tier="b", gen="04"),
        _node("tier-c", tier="c", gen="x1"),
        _node("bare"),
    ):
        kube.create(node)
    return kube, KubeScheduler(kube, clock)


def _scheduled(kube: InMemoryApiServer, name: str) -> tuple[str | None, str | None]:
    pod = kube.get("pods", name, "default")
    message = next(
        (
            c.get("message")
            for c in (pod.get("status") or {}).get("conditions") or []
            if c.get("type") == "PodScheduled" and c.get("status") == "False"
        ),
        None,
    )
    return pod["spec"].get("nodeName"), message


@pytest.mark.parametrize(
    ("spec", "fits"),
    [
        # nodeSelector and an expression on the same key are two tests, not one
        # merged requirement: tier=a and tier In [b] together fit no node, not the node
        # without the label.
        (
            {
                "nodeSelector": {"tier": "a"},
                "affinity": _required({"matchExpressions": [_expr("tier", "In", "b")]}),
            },
            set(),
        ),
        (
            {
                "affinity": _required(
                    {"matchExpressions": [_expr("tier", "Exists"), _expr("tier", "NotIn", "a")]}
                )
            },
            {"tier-b", "tier-c"},
        ),
        (
            {
                "affinity": _required(
                    {
                        "matchExpressions": [
                            _expr("tier", "In", "a", "b"),
                            _expr("tier", "In", "b", "c"),
                        ]
                    }
                )
            },
            {"tier-b"},
        ),
        (
            {"affinity": _required({"matchExpressions": [_expr("tier", "NotIn", "a", "b")]})},
            {"tier-c", "bare"},
        ),
        ({"affinity": _required({"matchExpressions": [_expr("tier", "DoesNotExist")]})}, {"bare"}),
        # Gt/Lt read the label as a base-10 integer (leading zeros allowed); a label that
        # is not one, or a missing label, fails
        ({"affinity": _required({"matchExpressions": [_expr("gen", "Gt", "2")]})}, {"tier-b"}),
        ({"affinity": _required({"matchExpressions": [_expr("gen", "Lt", "4")]})}, {"tier-a"}),
        (
            {
                "affinity": _required(
                    {"matchExpressions": [_expr("gen", "Gt", "2"), _expr("gen", "Lt", "4")]}
                )
            },
            set(),
        ),
        # terms are ORed; an empty term matches nothing
        ({"affinity": _required({}, {"matchExpressions": [_expr("tier", "In", "c")]})}, {"tier-c"}),
        (
            {
                "affinity": _required(
                    {"matchExpressions": [_expr("tier", "In", "a")]},
                    {"matchExpressions": [_expr("tier", "DoesNotExist")]},
                )
            },
            {"tier-a", "bare"},
        ),
        # matchFields NotIn excludes a node by name, labels still apply
        (
            {
                "nodeSelector": {"tier": "a"},
                "affinity": _required(
                    {
                        "matchFields": [
                            {"key": "metadata.name", "operator": "NotIn", "values": ["tier-b"]}
                        ]
                    }
                ),
            },
            {"tier-a"},
        ),
    ],
)
def test_node_affinity_reads_each_expression_against_the_labels(
    spec: dict[str, Any], fits: set[str]
) -> None:
    kube, scheduler = _cluster()
    pod = kube.create(_pod("p", **spec))
    reasons = scheduler.feasibility(pod)
    assert {name for name, why in reasons.items() if not why} == fits
    assert all(why == (AFFINITY,) for name, why in reasons.items() if name not in fits)


def test_nodes_a_pod_does_not_name_are_left_out_before_any_filter() -> None:
    """When every term names nodes, kube-scheduler's PreFilter tries only those: the
    others fail as left out by NodeAffinity, whatever else they would fail on."""
    kube, scheduler = _cluster()
    kube.patch("nodes", "tier-c", {"spec": {"unschedulable": True}})
    name_is = {"key": "metadata.name", "operator": "In", "values": ["tier-a"]}
    kube.create(
        _pod("p", nodeSelector={"tier": "b"}, affinity=_required({"matchFields": [name_is]}))
    )
    scheduler.reconcile()
    assert _scheduled(kube, "p") == (
        None,
        f"0/4 nodes are available: 1 {AFFINITY}, 3 {LEFT_OUT}.",
    )
    kube.create(_pod("q", affinity=_required({"matchFields": [name_is]})))
    scheduler.reconcile()
    assert _scheduled(kube, "q") == ("tier-a", None)


def test_a_term_naming_no_node_leaves_every_node_in() -> None:
    kube, scheduler = _cluster()
    pod = kube.create(
        _pod(
            "p",
            affinity=_required(
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["tier-a"]}]},
                {"matchExpressions": [_expr("tier", "In", "c")]},
            ),
        )
    )
    reasons = scheduler.feasibility(pod)
    assert reasons == {"tier-a": (), "tier-c": (), "tier-b": (AFFINITY,), "bare": (AFFINITY,)}


def test_terms_naming_contradicting_nodes_fit_nowhere_with_the_prefilter_message() -> None:
    kube, scheduler = _cluster()
    names = [
        {"key": "metadata.name", "operator": "In", "values": ["tier-a"]},
        {"key": "metadata.name", "operator": "In", "values": ["tier-b"]},
    ]
    kube.create(_pod("p", affinity=_required({"matchFields": names})))
    scheduler.reconcile()
    assert _scheduled(kube, "p") == (None, "0/4 nodes are available: pod affinity terms conflict.")


def test_a_feasibility_read_between_passes_does_not_skip_the_next_pass() -> None:
    """``feasibility`` brings the caches up to date too; the pass after it must still see
    that something changed since the last pass and place the new pod."""
    kube, scheduler = _cluster()
    scheduler.reconcile()
    pod = kube.create(_pod("p", nodeSelector={"tier": "c"}))
    assert scheduler.feasibility(pod)["tier-c"] == ()
    scheduler.reconcile()
    assert _scheduled(kube, "p") == ("tier-c", None)
