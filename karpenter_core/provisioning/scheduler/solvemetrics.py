"""Scheduler-side metric plumbing: partial-match deletes, live queue gauges, effective zones.

Upstream's solve resets its per-controller series at the start (``DeletePartialMatch``),
keeps ``scheduler_queue_depth`` / ``scheduler_unfinished_work_seconds`` current while it
runs (labelled with a per-solve ``scheduling_id``), and counts pending pods by the zone
their constraints leave them. prometheus_client has no partial-match delete, so
:func:`delete_partial_match` provides one.
"""

from __future__ import annotations

import contextlib
import itertools
import time
from collections.abc import Sequence
from typing import Any

from prometheus_client.metrics import MetricWrapperBase

from karpenter_core import metrics
from karpenter_core.apis.labels import LABEL_TOPOLOGY_ZONE
from karpenter_core.scheduling.requirements import IN, Requirement, Requirements

__all__ = [
    "SolveGauges",
    "delete_partial_match",
    "effective_zone",
    "volume_zone_requirement",
]

_IDS = itertools.count(1)


def delete_partial_match(metric: MetricWrapperBase, **labels: str) -> int:
    """Drop every child of ``metric`` whose labels include all of ``labels``; returns how
    many went. Unknown label names match nothing."""
    names = list(metric._labelnames)
    try:
        wanted = [(names.index(k), v) for k, v in labels.items()]
    except ValueError:
        return 0
    with metric._lock:
        keys = [k for k in metric._metrics if all(k[i] == v for i, v in wanted)]
    for key in keys:
        try:
            metric.remove(*key)
        except KeyError:  # removed concurrently
            continue
    return len(keys)


class SolveGauges:
    """The live gauges of one solve: depth of the queue and seconds since the start.

    The scheduling id is a process-wide counter rather than a UUID so simulations stay
    reproducible; it only has to tell concurrent solves of one controller apart."""

    def __init__(self, controller: str, timer: Any = time.perf_counter) -> None:
        self.controller = controller
        self.scheduling_id = str(next(_IDS))
        self._timer = timer
        self._start = timer()
        labels = {"controller": controller, "scheduling_id": self.scheduling_id}
        delete_partial_match(metrics.SCHEDULER_QUEUE_DEPTH, controller=controller)
        self._depth = metrics.SCHEDULER_QUEUE_DEPTH.labels(**labels)
        self._unfinished = metrics.SCHEDULER_UNFINISHED_WORK_SECONDS.labels(**labels)

    def tick(self, queue_depth: int) -> None:
        self._depth.set(queue_depth)
        self._unfinished.set(max(0.0, self._timer() - self._start))

    def finish(self) -> None:
        """The work is finished: its unfinished-seconds series goes (the depth stays, at
        its last value, until the controller's next solve, as upstream)."""
        with contextlib.suppress(KeyError):
            metrics.SCHEDULER_UNFINISHED_WORK_SECONDS.remove(self.controller, self.scheduling_id)


def volume_zone_requirement(volume_requirements: Sequence[Requirements]) -> Requirement | None:
    """The zones any of the pod's volume alternatives allows, or None when some alternative
    does not pin zones (volumes then do not constrain the zone)."""
    if not volume_requirements:
        return None
    zones: set[str] = set()
    for alt in volume_requirements:
        if alt is None:
            return None
        req = alt.get(LABEL_TOPOLOGY_ZONE)
        if req.operator() != IN:
            return None
        if len(volume_requirements) == 1:
            return req
        zones.update(req.values)
    return Requirement.new(LABEL_TOPOLOGY_ZONE, IN, sorted(zones))


def effective_zone(
    strict_requirements: Requirements,
    volume_requirements: Sequence[Requirements],
    spread_zones: set[str] | None,
    spread_satisfiable: bool = True,
) -> str:
    """The zone a pod's constraints leave it (upstream ``computeEffectiveZoneFromPod``):
    the zone's name when exactly one is allowed, ``flexible`` for several (or no zonal
    constraint at all), ``none`` when the pod's own zones, its volumes' zones and its
    zonal spread domains do not intersect."""
    if not spread_satisfiable:
        return metrics.EFFECTIVE_ZONE_NONE
    zone_req = strict_requirements.get(LABEL_TOPOLOGY_ZONE)
    vol_req = volume_zone_requirement(volume_requirements)
    if zone_req.operator() == IN:
        candidates = sorted(zone_req.values)
    elif vol_req is not None:
        candidates = sorted(vol_req.values)
    elif spread_zones:
        candidates = sorted(spread_zones)
    else:
        return metrics.EFFECTIVE_ZONE_FLEXIBLE
    matched = [
        z
        for z in candidates
        if zone_req.has(z)
        and (vol_req is None or vol_req.has(z))
        and (not spread_zones or z in spread_zones)
    ]
    if len(matched) > 1:
        return metrics.EFFECTIVE_ZONE_FLEXIBLE
    return matched[0] if matched else metrics.EFFECTIVE_ZONE_NONE
