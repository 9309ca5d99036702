"""Differential test: striking existing nodes found full out of later scans
(``scheduler.SKIP_FULL_NODES``) never changes a decision.

The generated clusters of the pass-reuse differential test are packed further with pods of
every size, so that moving the pods of several candidates fills the nodes left and later
pods meet full nodes. For single candidates and for runs of candidates as multi-node
consolidation tries them, on both simulation paths (pass-shared and rebuilt), the results
with the shortcut and without must be identical: the same NodeClaims, the same placements
on existing nodes (the same node for every pod), the same pod errors.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import pytest
from test_simulation_reuse_differential import APPS, generated_world, summary

from karpenter_core.disruption.simulation import SimulationError, simulate_scheduling
from karpenter_core.disruption.types import CLASS_GRACEFUL
from karpenter_core.provisioning.scheduler import scheduler as scheduler_module
from karpenter_core.provisioning.scheduler.existingnode import ExistingNode
from karpenter_core.testing import builders as b

SEEDS = range(10)


def packed_world(seed: int) -> Any:
    world = generated_world(seed)
    rng = random.Random(1000 + seed)
    nodes = sorted(n.name() for n in world.snapshot().state_nodes if n.node is not None)
    for j in range(rng.randint(40, 90)):
        app = rng.choice(APPS)
        options: dict[str, Any] = {}
        if rng.random() < 0.3:
            options["tolerations"] = [{"key": "team", "operator": "Equal", "value": "ml"}]
        pod = world.create(
            b.pod(
                f"fill{seed}-{j:03d}",
                labels={"app": app},
                owner=b.owner_reference("ReplicaSet", f"rs-{app}", uid=f"rs-{app}"),
                cpu=rng.choice(["100m", "250m", "500m", "900m", "1500m"]),
                memory=rng.choice(["128Mi", "512Mi", "1Gi", "2Gi"]),
                node_name=rng.choice(nodes),
                ready=True,
                start_time=b.START,
                **options,
            )
        )
        world.cluster.update_pod(pod)
    return world


def outcome(snapshot: Any, run: Any, reuse: bool) -> Any:
    try:
        return summary(simulate_scheduling(snapshot, run, consolidation=True, reuse=reuse))
    except SimulationError as e:
        return ("error", str(e))


class CountCanAdd:
    """Counts ExistingNode.can_add calls (to show the shortcut had work to skip)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls = 0
        original = ExistingNode.can_add

        def counted(node: ExistingNode, *args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            return original(node, *args, **kwargs)

        monkeypatch.setattr(ExistingNode, "can_add", counted)


def runs_of(candidates: list[Any]) -> Iterator[list[Any]]:
    for c in candidates:
        yield [c]
    for k in range(2, len(candidates) + 1, 2):
        yield candidates[:k]


@pytest.mark.parametrize("seed", SEEDS)
def test_skipping_full_nodes_decides_as_asking_every_node(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    world = packed_world(seed)
    snapshot = world.snapshot()
    candidates = world.candidates(CLASS_GRACEFUL, snapshot=snapshot)
    counter = CountCanAdd(monkeypatch)
    calls = {True: 0, False: 0}
    compared = 0
    for run in runs_of(candidates):
        for reuse in (True, False):
            answers = {}
            for skip in (True, False):
                monkeypatch.setattr(scheduler_module, "SKIP_FULL_NODES", skip)
                before = counter.calls
                answers[skip] = outcome(snapshot, run, reuse)
                calls[skip] += counter.calls - before
            assert answers[True] == answers[False], ([c.name() for c in run], reuse)
            compared += 1
    assert compared >= 8  # the generator produced candidates to compare on
    # Nodes were found full and asked again without the shortcut, never more with it.
    assert calls[True] < calls[False]
