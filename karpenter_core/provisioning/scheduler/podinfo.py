"""Per-pod data computed once per (re)try (upstream ``PodData``, spec scheduling.md §8.3)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from karpenter_core.scheduling.requirements import (
    Requirements,
    has_preferred_node_affinity,
    pod_requirements,
    strict_pod_requirements,
)

_NO_VOLUME_ALTERNATIVES: tuple[Requirements | None, ...] = (None,)


class PodData:
    __slots__ = ("requests", "requirements", "strict_requirements", "volume_requirements")

    def __init__(
        self,
        requests: dict[str, int],
        requirements: Requirements,
        strict_requirements: Requirements,
        volume_requirements: Sequence[Requirements] = (),
    ) -> None:
        self.requests = requests
        self.requirements = requirements
        self.strict_requirements = strict_requirements
        self.volume_requirements = tuple(volume_requirements)

    def volume_alternatives(self) -> Sequence[Requirements | None]:
        return self.volume_requirements or _NO_VOLUME_ALTERNATIVES


def pod_data(
    pod: Any, ignore_preferences: bool, volume_requirements: Sequence[Requirements] = ()
) -> PodData:
    """Requirements (strict under PreferencePolicy=Ignore) and the pod's scheduling requests."""
    if ignore_preferences:
        reqs = strict_pod_requirements(pod.node_selector, pod.affinity)
        strict = reqs
    else:
        reqs = pod_requirements(pod.node_selector, pod.affinity)
        strict = (
            strict_pod_requirements(pod.node_selector, pod.affinity)
            if has_preferred_node_affinity(pod.affinity)
            else reqs
        )
    return PodData(dict(pod.scheduling_requests), reqs, strict, volume_requirements)
