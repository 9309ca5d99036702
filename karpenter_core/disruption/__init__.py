"""Voluntary disruption's decisions, as functions of a snapshot (spec disruption §3-§11).

The disruption controller (:mod:`karpenter_core.controllers.disruption`) takes one
:class:`~karpenter_core.disruption.snapshot.DisruptionSnapshot` per pass — the only time it
lists from the API server — and everything here is computed from it, without a client, a
recorder or cluster state:

* :mod:`.candidates` — which nodes may be disrupted, and why the others may not;
* :mod:`.budgets` — how many nodes each NodePool may still disrupt per reason;
* :mod:`.simulation` — where the candidates' pods would go, and what would launch;
* :mod:`.methods` — emptiness, static drift, drift, multi- and single-node consolidation
  (Balanced scoring, spot-to-spot);
* :mod:`.validation` — whether a held command still holds, against a later snapshot;
* :mod:`.types` — Candidate, Command, Decision and the Method contract plugins implement;
* :mod:`.notices` — the blocked reasons and other notes a decision returns for the
  controller to publish as events;
* :mod:`.replacements` — NodePool-template replacements and the node counts they hold.

The controller publishes the notices, reserves node counts and hands the commands to the
orchestration queue, which carries them out.
"""
