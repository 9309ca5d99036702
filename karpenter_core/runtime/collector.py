"""Cyclic garbage collection tuned for a process holding a whole cluster.

The operator and the simulator keep every pod, node and NodeClaim of the cluster in
memory, plus a parsed model of each: millions of long-lived objects. With the
interpreter's default thresholds (700, 10, 10) a full collection, which walks every one
of them, ran every few seconds of work — 12 % of a 15,000-pod scale-out and of its
scale-in (``bench/e2e.py --scenario large --pods-scale 0.1``), and each such pause grows
with the cluster. The objects are JSON-like data, freed by reference counting when a newer
version replaces them; little cyclic garbage is made. Young collections are made
rare (every 100,000 net allocations) and full ones need ten times as many middle-aged
collections, so a full collection runs only after hundreds of millions of allocations
(and, as always, only once a quarter of the old objects are new).

Why young collections so rarely: at cluster scale each one costs far more than the
threshold suggests. Solves and disruption pass states are built with collection off, so a
young collection finds everything they made that is still alive (431,000 objects at one
sampled collection of a fifth of ``large``), cluster-wide containers among them, walked
entry by entry; the fewer collections, the more of that has been freed before one runs.
In a full ``large`` run (5,000 nodes) with young collections every 10,000 allocations,
the scale-in made 1,391 of them at 27 ms each, and collection (with one full collection
of 11.5 s) took 65 s of that phase's 578 s. Every 100,000, it made 48 and collection took
23 s of 536 s, for the same work (512 and 513 NodeClaims removed) and the same peak RSS
(2.75 and 2.77 GB).
"""

from __future__ import annotations

import gc

__all__ = ["DEFAULT_THRESHOLDS", "TUNED_THRESHOLDS", "tune_collector"]

DEFAULT_THRESHOLDS = (700, 10, 10)
"""CPython's own thresholds (3.8 to 3.12)."""

TUNED_THRESHOLDS = (100_000, 20, 100)


def tune_collector() -> bool:
    """Set :data:`TUNED_THRESHOLDS` unless something (the embedding program, a test)
    already chose its own; returns whether it set them. For command entry points only:
    a library must not change the process's collector under its caller."""
    if gc.get_threshold() != DEFAULT_THRESHOLDS:
        return False
    gc.set_threshold(*TUNED_THRESHOLDS)
    return True
