"""The scheduling simulation behind every disruption decision (upstream ``helpers.go``
``SimulateScheduling``; spec disruption §5).

"If these candidates went away, where would their pods go, and what would have to launch?"
"""

from __future__ import annotations

from collections.abc import Sequence

from karpenter_core.controllers.disruption.types import Candidate, DisruptionContext
from karpenter_core.provisioning.scheduler import Results

__all__ = ["CandidateDeletingError", "SimulationError", "simulate_scheduling"]


class SimulationError(Exception):
    """The simulation could not be run (the message says why)."""


class CandidateDeletingError(SimulationError):
    """A candidate started deleting since candidates were computed (upstream
    ``errCandidateDeleting``): the decision is moot, try again next pass."""


def simulate_scheduling(
    dctx: DisruptionContext,
    candidates: Sequence[Candidate],
    *,
    consolidation: bool = False,
) -> Results:
    """Simulate removing ``candidates``: their currently reschedulable pods, the pending
    pods and the pods of nodes already deleting are scheduled onto the remaining active
    nodes and new NodeClaims.

    Returns the scheduler's :class:`Results`: ``new_nodeclaims`` (the replacements a
    command would launch), ``existing_nodes`` (placements on remaining nodes) and
    ``pod_errors``; ``results.all_non_pending_pods_scheduled()`` says whether every pod
    that runs today found a place (pods already pending may stay pending).

    ``consolidation`` is upstream's ``IsConsolidationSimulation``: pods that run today are
    not placed on nodes still inside their NodePool's ``consolidateAfter`` window (except
    pods leaving deleting nodes). Drift passes False.

    Raises :class:`CandidateDeletingError` when a candidate is deleting now, and
    :class:`SimulationError` when the simulation cannot run.
    """
    raise NotImplementedError("simulate_scheduling is being built")
