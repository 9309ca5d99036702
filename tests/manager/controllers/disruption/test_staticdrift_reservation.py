"""Static drift's node-count reservation (spec operator-and-lifecycle §3 and §3.9,
disruption §8 and scenario 40): the count static drift reserves for a replacement is held
until the provisioner has attempted that replacement, so ``static.provisioning`` cannot
take the same headroom in between; every outcome gives each count back exactly once."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from disruption_harness import World

from karpenter_core.controllers.provisioning.provisioner import ProvisioningError
from karpenter_core.controllers.static import StaticProvisioner
from karpenter_core.disruption.methods.staticdrift import StaticDrift
from karpenter_core.disruption.replacements import TemplateReplacement
from karpenter_core.disruption.snapshot import DisruptionSnapshot
from karpenter_core.disruption.types import BudgetMap, Candidate, Command, Decision
from karpenter_core.disruption.types import ValidationError as VError
from karpenter_core.kube.client import Conflict
from karpenter_core.provisioning.nodepools import parse_nodepool
from karpenter_core.runtime.reconciler import ObjectKey

POOL = "static"


def _world(
    *,
    replicas: int,
    nodes: int,
    drifted: int,
    limits: dict[str, str] | None = None,
) -> World:
    world = World()
    world.nodepool(POOL, replicas=replicas, limits=limits)
    for i in range(nodes):
        world.node(f"s{i}", nodepool=POOL, drifted=i < drifted)
    return world


def _pool_nodeclaims(world: World) -> list[str]:
    return [
        nc["metadata"]["name"]
        for nc in world.kube.list("nodeclaims").items
        if (nc["metadata"].get("labels") or {}).get("karpenter.sh/nodepool") == POOL
    ]


def _reserved(world: World) -> int:
    return world.cluster.nodepool_state.reserved(POOL)


# --------------------------------------------------------------------------- the race


def _race(world: World, c: Any) -> list[int]:
    """Run one static.provisioning reconcile between static drift's decision and the
    queue creating its replacements (what a worker thread can do under ``serve``);
    returns the reserved count seen at that moment."""
    static = StaticProvisioner(world.ctx)
    start = world.queue.start_command
    seen: list[int] = []

    def interleaved(cmd: Command) -> Command:
        seen.append(_reserved(world))
        static.reconcile(ObjectKey("", POOL))
        return start(cmd)

    world.queue.start_command = interleaved  # type: ignore[method-assign]
    c.reconcile()
    return seen


def test_static_provisioning_between_decision_and_launch_cannot_overshoot_the_limit() -> None:
    # replicas 3, limit 3, one node missing and one drifted: static drift reserves the one
    # free slot for its replacement; static.provisioning wants the same slot for the
    # missing replica and must find it taken.
    world = _world(replicas=3, nodes=2, drifted=1, limits={"nodes": "3"})
    c = world.controller(StaticDrift)
    seen = _race(world, c)
    assert seen == [1]  # the reservation is still held when the other worker runs
    assert len(c.started) == 1
    assert len(_pool_nodeclaims(world)) == 3  # limits.nodes, not 4
    assert _reserved(world) == 0


def test_the_missing_replica_is_launched_once_the_replacement_counts() -> None:
    world = _world(replicas=3, nodes=2, drifted=1, limits={"nodes": "4"})
    c = world.controller(StaticDrift)
    _race(world, c)
    # limit 4: one slot for the replacement, one for the missing replica
    assert len(_pool_nodeclaims(world)) == 4
    assert _reserved(world) == 0


# --------------------------------------------------------------------------- accounting


def test_reservation_is_given_back_after_a_successful_launch() -> None:
    world = _world(replicas=3, nodes=3, drifted=2, limits={"nodes": "5"})
    c = world.controller(StaticDrift)
    c.reconcile()
    assert len(c.started) == 2
    assert len(_pool_nodeclaims(world)) == 5
    assert _reserved(world) == 0


def test_reservation_is_given_back_after_a_failed_launch() -> None:
    # the NodePool's cpu limit is already used up, so the provisioner refuses the create
    world = _world(replicas=2, nodes=2, drifted=1, limits={"nodes": "3", "cpu": "1"})
    c = world.controller(StaticDrift)
    c.reconcile()
    assert not c.started
    assert len(_pool_nodeclaims(world)) == 2
    assert _reserved(world) == 0


def test_reservation_is_given_back_when_the_queue_fails_before_launching() -> None:
    world = _world(replicas=2, nodes=2, drifted=1, limits={"nodes": "3"})
    c = world.controller(StaticDrift)
    update = world.kube.update

    def conflicting(obj: Any, *args: Any, **kwargs: Any) -> Any:
        if obj.get("kind") == "Node":
            raise Conflict("node changed")
        return update(obj, *args, **kwargs)

    world.kube.update = conflicting  # type: ignore[method-assign]
    c.reconcile()  # tainting the candidate keeps conflicting: the command is not started
    assert not c.started
    assert len(_pool_nodeclaims(world)) == 2
    assert _reserved(world) == 0


def test_reservations_are_given_back_when_starting_raises_unexpectedly() -> None:
    world = _world(replicas=3, nodes=3, drifted=2, limits={"nodes": "5"})
    c = world.controller(StaticDrift)

    def broken(cmd: Command) -> Any:
        raise RuntimeError("boom")

    world.queue._mark_disrupted = broken  # type: ignore[method-assign]
    with pytest.raises(RuntimeError):
        c.reconcile()
    # the first command failed inside the queue, the second never reached it
    assert _reserved(world) == 0
    assert len(_pool_nodeclaims(world)) == 3


class _NoopStaticDrift(StaticDrift):
    """Static drift whose commands lose their candidates (decision ``no-op``)."""

    def compute_commands(
        self, snapshot: DisruptionSnapshot, budgets: BudgetMap, candidates: Sequence[Candidate]
    ) -> Decision:
        decided = super().compute_commands(snapshot, budgets, candidates)
        return Decision(tuple(Command([], cmd.replacements) for cmd in decided.commands))


class _RejectedStaticDrift(StaticDrift):
    """Static drift as a validating method whose commands never validate."""

    def validate(self, snapshot: DisruptionSnapshot, cmd: Command) -> Decision:
        raise VError(VError.CHURN, "candidate went away")


@pytest.mark.parametrize("method", [_NoopStaticDrift, _RejectedStaticDrift])
def test_reservation_is_given_back_when_the_controller_drops_the_command(method: Any) -> None:
    world = _world(replicas=2, nodes=2, drifted=2, limits={"nodes": "4"})
    c = world.controller(method)
    c.reconcile()
    assert not c.started
    assert len(_pool_nodeclaims(world)) == 2
    assert _reserved(world) == 0


def test_held_command_that_fails_validation_gives_its_reservation_back() -> None:
    world = _world(replicas=2, nodes=2, drifted=1, limits={"nodes": "3"})
    c = world.controller(_RejectedStaticDrift, validation_period=5.0)
    c.reconcile()
    assert _reserved(world) == 1  # held through the validation period
    world.clock.advance(5.0)
    c.reconcile()
    assert not c.started
    assert _reserved(world) == 0


# --------------------------------------------------------------------------- provisioner


@pytest.mark.parametrize("parallel", [True, False])
def test_create_nodeclaims_releases_one_count_per_static_claim(parallel: bool) -> None:
    world = _world(replicas=3, nodes=0, drifted=0)
    np = parse_nodepool(world.kube.get("nodepools", POOL))
    state = world.cluster.nodepool_state
    assert state.reserve_node_count(POOL, 10, 4) == 4
    world.provisioner.parallel_creates = parallel
    names = world.provisioner.create_nodeclaims([TemplateReplacement(np) for _ in range(3)])
    assert len(names) == 3
    assert _reserved(world) == 1  # the fourth count was not handed over


def test_create_nodeclaims_releases_failed_static_claims_too() -> None:
    world = _world(replicas=3, nodes=0, drifted=0)
    np = parse_nodepool(world.kube.get("nodepools", POOL))
    good = TemplateReplacement(np)
    world.kube.delete("nodepools", POOL)  # the create finds no NodePool and fails
    state = world.cluster.nodepool_state
    assert state.reserve_node_count(POOL, 10, 2) == 2
    with pytest.raises(ProvisioningError, match="not found"):
        world.provisioner.create_nodeclaims([good, TemplateReplacement(np)])
    assert _reserved(world) == 0


def test_create_does_not_release_so_static_provisioning_releases_once() -> None:
    world = _world(replicas=2, nodes=0, drifted=0)
    state = world.cluster.nodepool_state
    # another holder (static drift) keeps one count reserved throughout
    assert state.reserve_node_count(POOL, 10, 1) == 1
    StaticProvisioner(world.ctx).reconcile(ObjectKey("", POOL))
    assert len(_pool_nodeclaims(world)) == 2
    assert _reserved(world) == 1
    np = parse_nodepool(world.kube.get("nodepools", POOL))
    world.provisioner.create(TemplateReplacement(np))
    assert _reserved(world) == 1


def test_template_replacement_of_a_dynamic_pool_holds_nothing() -> None:
    world = World()
    np = parse_nodepool(world.nodepool("dynamic"))
    state = world.cluster.nodepool_state
    assert state.reserve_node_count("dynamic", 10, 1) == 1
    r = TemplateReplacement(np)
    assert r.is_static_nodeclaim is False
    world.provisioner.create_nodeclaims([r])
    assert state.reserved("dynamic") == 1
