"""The disruption controller loop (spec disruption §3)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from disruption_harness import World

from karpenter_core.controllers.disruption import DisruptionContext, build_methods
from karpenter_core.controllers.disruption import controller as controller_module
from karpenter_core.controllers.disruption import snapshot as snapshot_module
from karpenter_core.controllers.disruption.controller import POLLING_PERIOD
from karpenter_core.controllers.disruption.legacy import method_name
from karpenter_core.disruption.methods.drift import Drift
from karpenter_core.disruption.methods.emptiness import Emptiness
from karpenter_core.disruption.types import (
    CLASS_GRACEFUL,
    BudgetMap,
    Candidate,
    Command,
    ValidationError,
)
from karpenter_core.hookspecs import DisruptionMethodSpec
from karpenter_core.plugins import builtin_contributions


class Rejecting:
    """A validating method whose commands never survive validation (written before
    snapshots, as a plugin may be: the controller adapts it)."""

    reason = "Empty"
    disruption_class = CLASS_GRACEFUL
    consolidation_type = "empty"

    def __init__(self, dctx: DisruptionContext) -> None:
        self.validated = 0

    def should_disrupt(self, candidate: Candidate) -> bool:
        return True

    def compute_commands(
        self, budgets: BudgetMap, candidates: Sequence[Candidate]
    ) -> list[Command]:
        return [Command(candidates[:1])]

    def validate(self, command: Command) -> Command:
        self.validated += 1
        raise ValidationError(ValidationError.CHURN, "changed")


class Broken:
    reason = "Empty"
    disruption_class = CLASS_GRACEFUL
    consolidation_type = ""

    def __init__(self, dctx: DisruptionContext) -> None:
        pass

    def should_disrupt(self, candidate: Candidate) -> bool:
        raise RuntimeError("bug in a plugin method")

    def compute_commands(
        self, budgets: BudgetMap, candidates: Sequence[Candidate]
    ) -> list[Command]:
        return []


def test_nothing_to_do_polls_every_ten_seconds() -> None:
    world = World()
    world.nodepool()
    world.node("a", consolidatable=False)
    c = world.controller(Emptiness, Drift)
    assert c.reconcile().requeue_after == POLLING_PERIOD


def test_unsynced_cluster_state_waits_a_second() -> None:
    world = World()
    world.nodepool()
    world.node("a")
    world.cluster.set_synced(False)
    world.kube.create(
        {
            "apiVersion": "karpenter.sh/v1",
            "kind": "NodeClaim",
            "metadata": {"name": "unknown"},
            "spec": {
                "nodeClassRef": {
                    "group": "karpenter.kwok.sh",
                    "kind": "KWOKNodeClass",
                    "name": "default",
                },
                "requirements": [],
            },
        }
    )
    c = world.controller(Emptiness)
    assert c.reconcile().requeue_after == 1.0
    assert not c.started


def test_a_started_command_ends_the_pass_and_comes_back_at_once() -> None:
    world = World()
    world.nodepool()
    world.node("a")
    world.node("b", drifted=True)
    world.pod(node="b", cpu="3")
    c = world.controller(Emptiness, Drift)
    assert c.reconcile().requeue_after < 0.01
    assert [cmd.reason for cmd in c.started] == ["Empty"]
    world.execute()
    c.reconcile()
    assert [cmd.reason for cmd in c.started] == ["Empty", "Drifted"]


def test_a_failed_validation_moves_on_to_the_next_method() -> None:
    world = World()
    world.nodepool()
    world.node("b", drifted=True)
    world.pod(node="b", cpu="3")
    c = world.controller(Rejecting, Drift, validation_period=15.0)
    assert c.reconcile().requeue_after == 15.0
    world.clock.advance(15)
    c.reconcile()
    assert c.methods[0].validated == 1
    assert [cmd.reason for cmd in c.started] == ["Drifted"]


def test_the_methods_after_a_failed_validation_decide_on_its_snapshot(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Nothing runs between the validation and the next method, so the pass goes on with
    the snapshot just taken instead of listing and copying the cluster again."""
    world = World()
    world.nodepool()
    world.node("b", drifted=True)
    world.pod(node="b", cpu="3")
    c = world.controller(Rejecting, Drift, validation_period=15.0)
    c.reconcile()
    world.clock.advance(15)
    taken: list[object] = []

    def counting(*args: Any, **kwargs: Any) -> Any:
        taken.append(snapshot_module.take_snapshot(*args, **kwargs))
        return taken[-1]

    monkeypatch.setattr(controller_module, "take_snapshot", counting)
    c.reconcile()
    assert len(taken) == 1
    assert [cmd.reason for cmd in c.started] == ["Drifted"]


def test_a_method_that_raises_does_not_stop_the_others() -> None:
    world = World()
    world.nodepool()
    world.node("a")
    c = world.controller(Broken, Emptiness)
    c.reconcile()
    assert [cmd.reason for cmd in c.started] == ["Empty"]


def test_a_stray_taint_and_disruption_reason_are_removed() -> None:
    world = World()
    world.nodepool()
    world.node("a", consolidatable=False)
    node = world.kube.get("nodes", "a")
    node["spec"]["taints"] = [{"key": "karpenter.sh/disrupted", "effect": "NoSchedule"}]
    world.kube.update(node)
    nc = world.kube.get("nodeclaims", "a")
    nc["status"]["conditions"].append(
        {
            "type": "DisruptionReason",
            "status": "True",
            "reason": "Drifted",
            "message": "",
            "lastTransitionTime": "2026-01-01T00:00:00Z",
        }
    )
    world.kube.update_status(nc)
    world.refresh("a")
    c = world.controller(Emptiness)
    c.reconcile()
    assert world.tainted() == []
    conds = world.kube.get("nodeclaims", "a")["status"]["conditions"]
    assert all(x["type"] != "DisruptionReason" for x in conds)


def test_queued_nodes_keep_their_taint() -> None:
    world = World()
    world.nodepool()
    world.node("a")
    c = world.controller(Emptiness)
    c.reconcile()
    world.refresh("a")
    c.reconcile()
    assert world.tainted() == ["a"]


def test_builtin_methods_run_in_upstream_order() -> None:
    specs = builtin_contributions().disruption_methods
    assert [s.name for s in specs] == [
        "emptiness",
        "static-drift",
        "drift",
        "multi-node-consolidation",
        "single-node-consolidation",
    ]
    orders = [s.order for s in specs]
    assert orders == sorted(orders)


def test_every_builtin_method_is_built_by_its_factory() -> None:
    world = World()
    methods = build_methods(world.dctx, builtin_contributions().disruption_methods)
    assert [method_name(m) for m in methods] == [
        "Emptiness",
        "StaticDrift",
        "Drift",
        "MultiNodeConsolidation",
        "SingleNodeConsolidation",
    ]


def test_extra_methods_take_their_place_by_order() -> None:
    world = World()
    extra = DisruptionMethodSpec("plugin", 250, Rejecting)
    methods = build_methods(world.dctx, [*builtin_contributions().disruption_methods, extra])
    kinds = [method_name(m) for m in methods]
    assert kinds.index("Rejecting") == kinds.index("StaticDrift") + 1
    assert kinds.index("Rejecting") == kinds.index("Drift") - 1
