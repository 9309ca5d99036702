"""An instance-type scorer: launch the smallest type that leaves the NodePool's CPU headroom.

A NodePool opts in with ``karpenter.sh/instance-type-scorer: headroom`` and says how much
CPU to keep free for the pods' growth with ``plugin.example.com/cpu-headroom`` (a percent
of the type's allocatable CPU, default 20). Among the types that fit the NodeClaim's pods,
those leaving at least that much free come first, the snuggest of them first; the ones too
tight come after, the least short first. The core breaks ties by price.

An unreadable annotation raises :class:`~karpenter_example_plugin.policy.PolicyError`:
the core then launches that NodeClaim by price and puts a Warning event on the NodePool.
"""

from __future__ import annotations

from karpenter_core.plugin_api import ScoringRequest
from karpenter_example_plugin.policy import cpu_headroom

__all__ = ["NAME", "score_headroom"]

NAME = "headroom"


def score_headroom(request: ScoringRequest) -> list[float]:
    """Lower is better: ``free - target`` for types with enough free CPU (0 is exactly the
    headroom asked), ``1 + (target - free)`` for the others."""
    target = cpu_headroom(request.nodepool.metadata.annotations)
    used = request.requests.get("cpu", 0)
    scores: list[float] = []
    for it in request.instance_types:
        allocatable = it.allocatable().get("cpu", 0)
        free = (allocatable - used) / allocatable if allocatable > 0 else 0.0
        scores.append(free - target if free >= target else 1.0 + (target - free))
    return scores
