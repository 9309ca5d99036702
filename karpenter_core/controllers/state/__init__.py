"""The controllers that keep cluster state current (upstream ``pkg/controllers/state``).

:mod:`karpenter_core.state` is the model (:class:`~karpenter_core.state.cluster.Cluster`,
its nodes, snapshots and the cost tracker); these are its reconcilers:

* :mod:`.informers` — ``state.node``, ``state.nodeclaim``, ``state.pod``,
  ``state.daemonset`` and ``state.nodepool`` feed the Cluster from watches;
  ``register`` also adds ``state.pricing``;
* :mod:`.pricing` — ``state.pricing``, the hourly re-pricing of the cost tracker;
* :mod:`.nodeclaimgc` — ``state.nodeclaimgc``, dropping unlaunched NodeClaims that
  vanished before state saw them go.
"""

from __future__ import annotations

from karpenter_core.controllers.state import nodeclaimgc, pricing
from karpenter_core.controllers.state.informers import register

__all__ = ["nodeclaimgc", "pricing", "register"]
