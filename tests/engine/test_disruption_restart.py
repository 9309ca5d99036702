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
from engine_helpers import make_scenario, nodepool, web

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
    # tests can stop at (KWOK instances otherwise join at once); off the whole second, so
    # a replacement never initialises at the very instant the queue looks at it (it looks
    # every second), which would leave no moment between initialising and deleting
    "apiVersion": "karpenter.kwok.sh/v1alpha1",
    "kind": "KWOKNodeClass",
    "metadata": {"name": "default"},
    "spec": {"nodeRegistrationDelay": "45500ms"},
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
    assert all(p["spec"].get("nodeName") for p in pods)
    assert all(p.get("status", {}).get("phase") == "Running" for p in pods)


def run_checking(sim: Simulation, until: float, done: Callable[[], bool]) -> None:
    """Run on after the restart to ``until``, checking the invariants whenever time
    moves; the disruption must be ``done`` at some point (and the caller checks the end)."""
    restarted = sim.clock.monotonic()
    seen_done = False

    def check() -> bool:
        nonlocal seen_done
        assert_no_leaks_in_flight(sim)
        # the new Karpenter cleans up in its first disruption pass, within one polling
        # period; from then on every mark must belong to one of its commands
        if sim.clock.monotonic() > restarted + POLLING_PERIOD:
            assert_owned_by_a_command(sim)
        seen_done = seen_done or done()
        return False

    sim.run_until(until, stop_when=check)
    assert seen_done or done(), "the disruption never completed after the restart"


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
    queue = sim.ctx.disruption_queue
    assert queue is not None
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


# ---------------------------------------------------------------------- scenarios

Setup = Callable[[], tuple[Simulation, set[str]]]
"""A simulation run up to just before a disruption, and the NodeClaims it is to remove."""


def names(sim: Simulation) -> set[str]:
    return {nc["metadata"]["name"] for nc in nodeclaims(sim)}


def node_types(sim: Simulation) -> list[str]:
    return sorted(n["metadata"]["labels"][INSTANCE_TYPE] for n in nodes(sim))


def marked_candidates(sim: Simulation, originals: set[str]) -> int:
    """How many of ``originals`` a command has tainted and not yet deleted."""
    taints = tainted_names(sim)
    count = 0
    for nc in nodeclaims(sim):
        if nc["metadata"]["name"] in originals and not deleting(nc):
            count += (nc.get("status") or {}).get("nodeName") in taints
    return count


def replacement_moment(
    sim: Simulation, originals: set[str], *, candidates: int, replacements_made: int, ready: bool
) -> Callable[[], bool]:
    """The candidates are tainted, not deleted, and the command's replacements exist:
    still launching (``ready`` False) or all initialized (``ready`` True)."""
    known = names(sim)

    def at() -> bool:
        new = [nc for nc in nodeclaims(sim) if nc["metadata"]["name"] not in known]
        if len(new) != replacements_made or marked_candidates(sim, originals) != candidates:
            return False
        return all(initialized(nc) == ready for nc in new)

    return at


def tainted_moment(sim: Simulation, originals: set[str]) -> Callable[[], bool]:
    """A delete-only command has tainted its candidate and not yet deleted it."""
    return lambda: marked_candidates(sim, originals) > 0


def removed(sim: Simulation, originals: set[str], count: int) -> Callable[[], bool]:
    """The disruption is over: ``count`` of ``originals`` are gone and no node is tainted."""
    return lambda: len(originals - names(sim)) >= count and not tainted_names(sim)


def baseline(setup: Setup, count: int) -> tuple[int, list[str], int]:
    """What the same disruption does without a restart, run as long: NodeClaims created
    over the run, the instance types left and the pods running."""
    sim, originals = setup()
    done = removed(sim, originals, count)
    sim.run_until(END, stop_when=done)
    assert done(), "the disruption never happened without a restart"
    sim.run_until(END)
    return created(sim), node_types(sim), len(pods_of(sim))


def restart_during(
    setup: Setup,
    moment: Callable[[Simulation, set[str]], Callable[[], bool]],
    *,
    count: int,
    freeze_queue: bool = False,
    relaunched: int = 0,
) -> Simulation:
    """Restart Karpenter at ``moment`` of the disruption ``setup`` leads to (which removes
    ``count`` of its NodeClaims), run on checking the invariants, and check the end: the
    disruption completed, nothing was launched beyond what the run without a restart
    launched, and the same capacity is left.

    ``freeze_queue``: the first Karpenter never gets past tainting. A delete-only command
    taints and deletes at one instant of the virtual clock, so a crash between the two
    is modelled by unbinding the queue from its reconciler: the command is started (the
    candidates tainted, ``DisruptionReason`` set) and then nothing processes it, as if
    the process died there.

    ``relaunched``: how many NodeClaims beyond the run without a restart are allowed —
    the lost command's replacements, when the retried command cannot use them (see
    the consolidation replace test); never more than one command's worth."""
    expected_created, expected_types, expected_pods = baseline(setup, count)
    sim, originals = setup()
    if freeze_queue:
        assert sim.ctx.disruption_queue is not None
        sim.ctx.disruption_queue.bind(lambda key: None)
    restart_at(sim, END, moment(sim, originals))
    run_checking(sim, END, removed(sim, originals, count))
    assert_settled(sim, created_at_most=expected_created + relaunched)
    assert node_types(sim) == expected_types
    assert len(pods_of(sim)) == expected_pods
    return sim


# ---------------------------------------------------------------------- drift


def drift_the_pool(sim: Simulation) -> None:
    np = sim.server.get("nodepools", "default")
    np["spec"]["template"].setdefault("metadata", {}).setdefault("labels", {})["team"] = "blue"
    sim.server.update(np)


def drift_setup() -> tuple[Simulation, set[str]]:
    sim = Simulation(make_scenario(objects=[BOOT], workloads=[web(3, cpu="500m")]))
    sim.run_until(5 * 60)
    originals = names(sim)
    assert len(originals) == 1
    drift_the_pool(sim)
    return sim, originals


@pytest.mark.parametrize(
    "ready", [False, True], ids=["replacement launching", "replacement initialized"]
)
def test_drift_replace_survives_a_restart(ready: bool) -> None:
    sim = restart_during(
        drift_setup,
        lambda sim, originals: replacement_moment(
            sim, originals, candidates=1, replacements_made=1, ready=ready
        ),
        count=1,
    )
    assert len(nodeclaims(sim)) == 1  # the one replacement, no second one


# ---------------------------------------------------------------------- consolidation


def consolidation_pool(policy: str = "WhenEmptyOrUnderutilized") -> dict[str, Any]:
    p = nodepool()
    p["spec"]["disruption"] = {
        "consolidationPolicy": policy,
        # not 0s: with 0s, emptiness deletes a lost command's replacement the moment it
        # initialises, before anything can use it; a minute is a realistic setting
        "consolidateAfter": "1m",
        "budgets": [{"nodes": "100%"}],
    }
    p["spec"]["template"]["spec"]["requirements"].append(
        {
            "key": INSTANCE_TYPE,
            "operator": "In",
            "values": [f"c-{n}x-amd64-linux" for n in (1, 2, 4, 8)],
        }
    )
    return p


def deployment(name: str, cpu: str, *, at: int = 0, delete_at: int | None = None) -> dict[str, Any]:
    d: dict[str, Any] = {
        "deployment": name,
        "replicas": 1,
        "requests": {"cpu": cpu, "memory": "100Mi"},
        "at": at,
    }
    if delete_at is not None:
        d["deleteAt"] = delete_at
    return d


def consolidation_replace_setup() -> tuple[Simulation, set[str]]:
    """Two c-4x nodes each keep a 0.8 CPU pod once their fillers go: one c-2x holds both
    and costs less (test_consolidation's multi-node replace)."""
    sim = Simulation(
        make_scenario(
            objects=[BOOT],
            nodePools=[consolidation_pool()],
            workloads=[
                deployment("filler1", "3", delete_at=FILLER_GONE),
                deployment("s1", "800m"),
                deployment("filler2", "3", at=120, delete_at=FILLER_GONE),
                deployment("s2", "800m", at=120),
            ],
        )
    )
    sim.run_until(FILLER_GONE - 10)
    assert node_types(sim) == ["c-4x-amd64-linux", "c-4x-amd64-linux"]
    return sim, names(sim)


@pytest.mark.parametrize(
    "ready", [False, True], ids=["replacement launching", "replacement initialized"]
)
def test_consolidation_replace_survives_a_restart(ready: bool) -> None:
    restart_during(
        consolidation_replace_setup,
        lambda sim, originals: replacement_moment(
            sim, originals, candidates=2, replacements_made=1, ready=ready
        ),
        count=2,
        # The lost command's replacement cannot be reused: consolidation does not place
        # pods on a node still inside its consolidateAfter window (upstream's
        # IsConsolidationSimulation), so the retried command launches its own and the
        # orphan, empty, is consolidated later. Upstream does the same: a command is not
        # persisted, so a restart costs at most that one command's replacements again.
        relaunched=1,
    )


def consolidation_delete_setup() -> tuple[Simulation, set[str]]:
    """A holds a filler and c (0.5 CPU), B holds b (1 CPU); with the filler gone either
    node's pod fits on the other, so one node is deleted without a replacement."""
    sim = Simulation(
        make_scenario(
            objects=[BOOT],
            nodePools=[consolidation_pool()],
            workloads=[
                deployment("filler", "3", delete_at=FILLER_GONE),
                deployment("c", "500m"),
                deployment("b", "1", at=120),
            ],
        )
    )
    sim.run_until(FILLER_GONE - 10)
    assert len(nodes(sim)) == 2
    return sim, set()


def test_consolidation_delete_survives_a_restart_right_after_the_taint() -> None: ...


# ---------------------------------------------------------------------- emptiness


def emptiness_setup() -> tuple[Simulation, set[str]]:
    workload = web(3, cpu="500m", scale=[{"at": "5m", "replicas": 0}])
    sim = Simulation(
        make_scenario(
            objects=[BOOT],
            nodePools=[consolidation_pool("WhenEmpty")],
            workloads=[workload],
        )
    )
    sim.run_until(5 * 60 - 10)
    originals = names(sim)
    assert len(originals) == 1
    return sim, originals


def test_emptiness_survives_a_restart_right_after_the_taint() -> None:
    sim = restart_during(emptiness_setup, tainted_moment, count=1, freeze_queue=True)
    assert not nodes(sim)
