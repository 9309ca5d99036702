"""Disruption is crash-safe: Karpenter restarted in the middle of a disruption command, on
the virtual clock (spec disruption §3 and §8; upstream's controller removes, on start, the
disrupted taint and the ``DisruptionReason`` condition from nodes that are not being
deleted and that no queued command owns).

A restart throws away the queue, cluster state and every in-memory command. What is left in
the API — a tainted candidate, a replacement NodeClaim, a condition — must be cleaned up or
picked up again, and the disruption must still happen: the drifted or underused nodes go,
every pod runs, and nothing is launched twice. Each test stops at an observable moment of
the command (a stop condition, not a fixed time) so it restarts exactly there.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from engine_helpers import make_scenario, nodepool, web  # noqa: F401

from karpenter_core import metrics
from karpenter_core.controllers.disruption.controller import POLLING_PERIOD
from karpenter_core.sim.engine import Simulation

DISRUPTED = "karpenter.sh/disrupted"
DISRUPTION_REASON = "DisruptionReason"
INITIALIZED = "Initialized"
INSTANCE_TYPE = "node.kubernetes.io/instance-type"
FILLER_GONE = 600  # seconds: when the consolidation scenarios' filler pods are deleted
END = 40 * 60
BOOT: dict[str, Any] = {
    # instances take a while to join, so a replacement is launching for a moment the
    # tests can stop at (KWOK instances otherwise join at once)
    "apiVersion": "karpenter.kwok.sh/v1alpha1",
    "kind": "KWOKNodeClass",
    "metadata": {"name": "default"},
    "spec": {"nodeRegistrationDelay": "45s"},
}


@pytest.fixture(autouse=True)
def fresh_metrics() -> Iterator[None]:
    metrics.reset()
    yield


# ---------------------------------------------------------------------- cluster views


def nodes(sim: Simulation) -> list[dict[str, Any]]:
    return list(sim.server.list("nodes").items)


def nodeclaims(sim: Simulation) -> list[dict[str, Any]]:
    return list(sim.server.list("nodeclaims").items)


def tainted(node: dict[str, Any]) -> bool:
    return any(t.get("key") == DISRUPTED for t in node["spec"].get("taints") or [])


def deleting(obj: dict[str, Any]) -> bool:
    return bool(obj["metadata"].get("deletionTimestamp"))


def condition(nc: dict[str, Any], kind: str) -> dict[str, Any] | None:
    for c in (nc.get("status") or {}).get("conditions") or []:
        if c.get("type") == kind:
            return dict(c)
    return None


def initialized(nc: dict[str, Any]) -> bool:
    c = condition(nc, INITIALIZED)
    return c is not None and c.get("status") == "True"


def tainted_names(sim: Simulation) -> set[str]:
    return {n["metadata"]["name"] for n in nodes(sim) if tainted(n)}


def claim_of_node(sim: Simulation, node_name: str) -> dict[str, Any] | None:
    for nc in nodeclaims(sim):
        if (nc.get("status") or {}).get("nodeName") == node_name:
            return nc
    return None


def created(sim: Simulation) -> int:
    """NodeClaims created over the whole run (the observer sees every one, gone or not)."""
    return len(sim.observer.nodeclaims)


def pods_of(sim: Simulation) -> list[dict[str, Any]]:
    return [p for p in sim.server.list("pods", "default").items if not deleting(p)]


# ---------------------------------------------------------------------- invariants


def assert_no_stray_marks(sim: Simulation) -> None:
    """No live node keeps the disrupted taint without being deleted, and no NodeClaim
    keeps ``DisruptionReason`` while its node lives on untainted (what a command that no
    longer exists would leave behind)."""
    by_name = {n["metadata"]["name"]: n for n in nodes(sim)}
    for n in by_name.values():
        if tainted(n) and not deleting(n):
            nc = claim_of_node(sim, n["metadata"]["name"])
            assert nc is not None and deleting(nc), f"{n['metadata']['name']} stays tainted"
    for nc in nodeclaims(sim):
        if condition(nc, DISRUPTION_REASON) is None or deleting(nc):
            continue
        node = by_name.get((nc.get("status") or {}).get("nodeName") or "")
        assert node is not None and tainted(node), (
            f"{nc['metadata']['name']} keeps DisruptionReason on an untainted live node"
        )


def assert_no_leaks(sim: Simulation) -> None:
    """Every KWOK node belongs to a NodeClaim and every launched NodeClaim has its node."""
    node_pids = {n["spec"].get("providerID") for n in nodes(sim)}
    claim_pids = {(nc.get("status") or {}).get("providerID") for nc in nodeclaims(sim)}
    assert None not in claim_pids, "a NodeClaim never launched"
    assert node_pids == claim_pids


def assert_settled(sim: Simulation, *, created_at_most: int) -> None:
    assert sim.halted is None, sim.halted
    assert_no_stray_marks(sim)
    assert_no_leaks(sim)
    assert not tainted_names(sim)  # the disruption is over: nothing left mid-command
    assert all(condition(nc, DISRUPTION_REASON) is None for nc in nodeclaims(sim))
    assert created(sim) <= created_at_most
    pods = pods_of(sim)
    assert pods and all(p["spec"].get("nodeName") for p in pods)
    assert all(p.get("status", {}).get("phase") == "Running" for p in pods)


def run_checking(sim: Simulation, until: float, done: Callable[[], bool]) -> None:
    """Run on after the restart, checking the invariants whenever time moves, until the
    disruption is ``done`` and the cluster has settled (no taint, no pending pod)."""

    restarted = sim.clock.monotonic()

    def check() -> bool:
        assert_no_leaks_in_flight(sim)
        # the new Karpenter cleans up in its first disruption pass, within one polling
        # period; from then on every mark must belong to one of its commands
        if sim.clock.monotonic() > restarted + POLLING_PERIOD:
            assert_owned_by_a_command(sim)
        return (
            done()
            and not tainted_names(sim)
            and all(p["spec"].get("nodeName") for p in pods_of(sim))
        )

    sim.run_until(until, stop_when=check)
    assert done(), "the disruption never completed after the restart"
    sim.run_until(sim.clock.monotonic() - sim.observer.t0 + 60)  # let it settle a minute


def assert_no_leaks_in_flight(sim: Simulation) -> None:
    """While running: no node without a NodeClaim (a leaked instance). NodeClaims may be
    launching, so only the node side is strict here."""
    claim_pids = {(nc.get("status") or {}).get("providerID") for nc in nodeclaims(sim)}
    for n in nodes(sim):
        assert n["spec"].get("providerID") in claim_pids, f"{n['metadata']['name']} leaked"


def assert_owned_by_a_command(sim: Simulation) -> None:
    """While running: a live node that is tainted, or whose NodeClaim carries
    ``DisruptionReason``, belongs to a command of the running Karpenter's queue (the
    queue from before the restart is gone, so whatever it left must have been cleaned up
    or taken over by a new command)."""
    queue = sim.ctx.extras["disruption.queue"]
    claims = {(nc.get("status") or {}).get("nodeName"): nc for nc in nodeclaims(sim)}
    for n in nodes(sim):
        name = n["metadata"]["name"]
        nc = claims.get(name)
        if deleting(n) or (nc is not None and deleting(nc)):
            continue
        marked = tainted(n) or (nc is not None and condition(nc, DISRUPTION_REASON) is not None)
        if marked:
            assert queue.has_any(n["spec"].get("providerID")), f"{name}: marked, no command"


def restart_at(sim: Simulation, until: float, moment: Callable[[], bool]) -> None:
    sim.run_until(until, stop_when=moment)
    assert moment(), "the intended moment of the command was never reached"
    sim.restart_karpenter()


# ---------------------------------------------------------------------- drift


def drift_the_pool(sim: Simulation) -> None:
    np = sim.server.get("nodepools", "default")
    np["spec"]["template"].setdefault("metadata", {}).setdefault("labels", {})["team"] = "blue"
    sim.server.update(np)


def drift_sim() -> tuple[Simulation, str]:
    sim = Simulation(make_scenario(objects=[BOOT], workloads=[web(3, cpu="500m")]))
    sim.run_until(5 * 60)
    (old,) = nodeclaims(sim)
    drift_the_pool(sim)
    return sim, old["metadata"]["name"]


def replacements(sim: Simulation, originals: set[str]) -> list[dict[str, Any]]:
    return [nc for nc in nodeclaims(sim) if nc["metadata"]["name"] not in originals]


def drift_baseline() -> int:
    sim, old = drift_sim()
    sim.run_until(
        END, stop_when=lambda: old not in {n["metadata"]["name"] for n in nodeclaims(sim)}
    )
    return created(sim)


@pytest.mark.parametrize("moment", ["replacement launching", "replacement initialized"])
def test_drift_replace_survives_a_restart(moment: str) -> None:
    expected = drift_baseline()
    sim, old = drift_sim()

    def old_node_tainted() -> bool:
        nc = next((c for c in nodeclaims(sim) if c["metadata"]["name"] == old), None)
        node = (nc or {}).get("status", {}).get("nodeName")
        return node in tainted_names(sim) and nc is not None and not deleting(nc)

    def at_moment() -> bool:
        new = replacements(sim, {old})
        if len(new) != 1 or not old_node_tainted():
            return False
        return initialized(new[0]) == (moment == "replacement initialized")

    restart_at(sim, END, at_moment)

    def done() -> bool:
        return old not in {nc["metadata"]["name"] for nc in nodeclaims(sim)}

    run_checking(sim, END, done)
    assert_settled(sim, created_at_most=expected)
    assert len(nodeclaims(sim)) == 1  # the one replacement, no second one
