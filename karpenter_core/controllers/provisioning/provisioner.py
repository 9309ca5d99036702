"""The provisioner: turn a batch of pods nobody can place into NodeClaims.

One singleton loop (spec operator-and-lifecycle §3.4-§3.7):

1. wait for the batch window to close (:mod:`.batcher`); 2. do nothing until cluster state
   is synced (acting on a partial view would launch capacity that already exists);
3. schedule: existing nodes are copied *before* pods are listed (capacity seen is never
   less than reality, so a race under- rather than over-provisions), then the pending
   provisionable pods, then the currently reschedulable pods of nodes being deleted (so
   replacements start while those nodes drain); 4. create a NodeClaim per new claim of the
   result, nominating its pods.

Everything that can be wrong with user input — a pod with an unusable selector, a NodePool
that is invalid or not ready, a provider failing for one pool — is reported (events, logs,
pod decisions) and skipped; only API failures surface as reconcile errors (back-off).
"""

from __future__ import annotations

import contextvars
import logging
import time
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import attrs

from karpenter_core import metrics
from karpenter_core.apis.accessors import annotations_of, labels_of, meta_of, name_of, spec_of
from karpenter_core.apis.labels import (
    CAPACITY_BUFFER_FAKE_POD_ANNOTATION_KEY,
    LABEL_INSTANCE_TYPE,
    NODECLAIM_MIN_VALUES_RELAXED_ANNOTATION_KEY,
    NODEPOOL_LABEL_KEY,
)
from karpenter_core.apis.objects import ObjectError, Pod
from karpenter_core.apis.parsedpods import parsed_pod
from karpenter_core.apis.quantity import QuantityError, format_quantity
from karpenter_core.apis.resources import parse_resource_list
from karpenter_core.apis.v1 import CONDITION_NODE_REGISTRATION_HEALTHY, APIError, NodePool
from karpenter_core.cloudprovider.dynamicresources import DeviceTemplates
from karpenter_core.cloudprovider.errors import is_unevaluated_nodepool
from karpenter_core.controllers.provisioning import events
from karpenter_core.controllers.provisioning.batcher import Batcher
from karpenter_core.controllers.provisioning.dra import DRAReader
from karpenter_core.kube.client import ApiError, NotFound, shared_list
from karpenter_core.provisioning import KARPENTER_MANAGED_LABEL_DOES_NOT_EXIST, validate_pod
from karpenter_core.provisioning.nodepools import eligible_nodepools
from karpenter_core.provisioning.scheduler import DRAInputs, Results, SchedulerOptions, schedule
from karpenter_core.provisioning.scheduler.config import load_scheduler_config
from karpenter_core.provisioning.scheduler.solvemetrics import delete_partial_match
from karpenter_core.provisioning.scheduler.topology import SchedulerConfigError
from karpenter_core.runtime.clock import VirtualClock
from karpenter_core.runtime.context import ControllerContext
from karpenter_core.runtime.manager import Controller
from karpenter_core.runtime.reconciler import Result
from karpenter_core.scoring import DEFAULT_SCORER, Scoring, UnknownScorerError
from karpenter_core.state.cluster import Cluster, cluster_of
from karpenter_core.state.snapshot import ClusterSnapshot
from karpenter_core.utils.pod import PdbLimits

__all__ = [
    "NAME",
    "NO_DYNAMIC_NODEPOOLS",
    "CreateError",
    "Provisioner",
    "ProvisioningError",
    "limits_exceeded",
]

log = logging.getLogger("karpenter.provisioner")

NAME = "provisioner"
MAX_PARALLEL_CREATES = 32
SOLVE_TIMEOUT_SECONDS = 60.0
"""A solve gives up after a minute (upstream ``provisioner.go``): what it placed so far is
launched, and the pods it did not reach wait for the next batch."""
"""NodeClaims of one batch created at once, on a wall clock (the main client's connection
pool holds 64)."""
NO_DYNAMIC_NODEPOOLS = "no dynamic nodepools found"


class ProvisioningError(RuntimeError):
    """Some NodeClaims could not be created; the message lists each failure."""


class CreateError(RuntimeError):
    """One NodeClaim could not be created (limits exceeded, API error, ...)."""


# ------------------------------------------------------------------ CapacityBuffer
# Virtual pods (feature gate CapacityBuffer) are scheduled with the pending pods so capacity
# is launched for them, but they exist only in memory: no decisions, events, nominations or
# pending-pod metrics are recorded for them. See karpenter_core.controllers.capacitybuffer.


def _is_virtual(pod: Pod) -> bool:
    return pod.annotations.get(CAPACITY_BUFFER_FAKE_POD_ANNOTATION_KEY) == "true"


def _real(pods: Iterable[Pod]) -> list[Pod]:
    return [p for p in pods if not _is_virtual(p)]


def limits_exceeded(limits: Mapping[str, Any] | None, usage: Mapping[str, int]) -> str | None:
    """Upstream ``Limits.ExceededBy``: the first limit that usage already *strictly* exceeds,
    as a message, or None. A limit that cannot be parsed is reported as such."""
    if not limits:
        return None
    try:
        parsed = parse_resource_list(limits)
    except QuantityError as e:
        return f"invalid limits: {e}"
    for name in sorted(parsed):
        used = usage.get(name, 0)
        if used > parsed[name]:
            return (
                f"{name} resource usage of {format_quantity(used)} exceeds limit of "
                f"{format_quantity(parsed[name])}"
            )
    return None


class Provisioner:
    """The ``provisioner`` singleton; also the shared handle other controllers use
    (``ctx.provisioner``): :meth:`trigger` and :meth:`create_nodeclaims`."""

    def __init__(self, ctx: ControllerContext) -> None:
        self.ctx = ctx
        self.cluster: Cluster = cluster_of(ctx)
        self.controller: Controller | None = None
        self._warned: dict[tuple[str, str], str] = {}
        self._config_error: str | None = None
        self.parallel_creates = not isinstance(ctx.clock, VirtualClock)
        """Create a batch's NodeClaims concurrently (wall clock); a virtual clock keeps
        them in order, so generated names are reproducible."""
        self.device_templates = DeviceTemplates(ctx.plugins.dra_drivers)
        """The DRA drivers' template devices (asked only while DRA requests are simulated)."""
        self.dra_reader = DRAReader(ctx.kube)
        self.scoring = self._scoring()
        self.batcher = Batcher(
            ctx.clock,
            ctx.options.batch_idle_duration,
            ctx.options.batch_max_duration,
            on_token=self._wake,
        )

    # ------------------------------------------------------------------ wiring

    def bind(self, controller: Controller) -> None:
        """Attach the manager's controller so a new batch wakes the singleton at once."""
        self.controller = controller

    def _wake(self) -> None:
        if self.controller is not None:
            self.controller.trigger()

    def trigger(self, uid: str) -> None:
        """A pod (or a draining node) wants provisioning: open or extend a batch window."""
        self.batcher.trigger(uid)

    # ------------------------------------------------------------------ the loop

    def reconcile(self) -> Result:
        waited = self.batcher.wait()
        if not waited.ready:
            if waited.retry_after is not None:
                return Result.after(waited.retry_after)
            return Result()
        if not self.cluster.synced():
            # The window is dropped; provisionable pods re-trigger within 10 s.
            return Result()
        results = self.schedule()
        if self.ctx.options.gate("CapacityBuffer"):
            self._after_schedule_buffers(results)
        if results is None or not results.new_nodeclaims:
            return Result()
        self.create_nodeclaims(
            results.new_nodeclaims,
            reason=metrics.REASON_PROVISIONED,
            record_pod_nomination=True,
        )
        return Result()

    # ------------------------------------------------------------------ CapacityBuffer

    def virtual_pods(self) -> list[Pod]:
        """The CapacityBuffers' virtual pods (empty with the gate off)."""
        if not self.ctx.options.gate("CapacityBuffer"):
            return []
        from karpenter_core.controllers.capacitybuffer.virtualpods import cache_of

        return cache_of(self.ctx).get_all()

    def _after_schedule_buffers(self, results: Results | None) -> None:
        """Report the pass to the buffers (Provisioning conditions, buffer pod counts); a
        failure is logged, never fails provisioning."""
        from karpenter_core.controllers.capacitybuffer.provisioning import after_schedule

        try:
            after_schedule(self.ctx, results)
        except Exception as e:
            log.error("updating CapacityBuffer provisioning status: %s", e)

    # ------------------------------------------------------------------ scheduling

    def scheduler_options(self) -> SchedulerOptions:
        """This pass's scheduler options. The ``SCHEDULER_CONFIG`` document is decoded
        again each pass: a ``@PATH`` file is small, and re-reading it lets a fixed file
        take effect without a restart."""
        opts = self.ctx.options
        base = SchedulerOptions(
            preference_policy=opts.preference_policy,
            min_values_policy=opts.min_values_policy,
            reserved_capacity=opts.gate("ReservedCapacity"),
            strict_reserved_offerings=True,
            ignore_dra_requests=opts.ignore_dra_requests,
            timeout_seconds=SOLVE_TIMEOUT_SECONDS,
            monotonic=self.ctx.clock.monotonic,
            scoring=self.scoring,
        )
        try:
            config = load_scheduler_config(opts.scheduler_config)
        except SchedulerConfigError as e:
            self._config_problem(str(e))
            return base
        self._config_error = None
        return attrs.evolve(base, scheduler_config=config) if config else base

    def _scoring(self) -> Scoring | None:
        """The instance-type scorers, with problems reported as NodePool events; None (the
        price order, without asking any scorer) when only ``price`` could ever apply.

        ``karpenter serve`` and ``simulate`` refuse an unknown ``INSTANCE_TYPE_SCORER``
        before the controllers start; a context built some other way with one falls back
        to price with an error in the log rather than failing every pass."""
        scorers = self.ctx.plugins.instance_type_scorers
        name = self.ctx.options.instance_type_scorer
        try:
            return Scoring(scorers, name, self._scorer_problem)
        except UnknownScorerError as e:
            if name != DEFAULT_SCORER:
                log.error("%s; using %r", e, DEFAULT_SCORER)
        try:
            return Scoring(scorers, DEFAULT_SCORER, self._scorer_problem)
        except UnknownScorerError:  # contributions without the built-ins: price order
            return None

    def _scorer_problem(self, nodepool: NodePool, reason: str, message: str) -> None:
        log.warning("nodepool %s: %s", nodepool.name, message)
        self.ctx.recorder.publish(events.instance_type_scorer_problem(nodepool, reason, message))

    def _config_problem(self, message: str) -> None:
        """A bad scheduler config never stops provisioning: pods are scheduled without
        default spreads, and the problem is logged (once until it changes) (the operator's
        log is where a configuration problem with no object of its own is reported)."""
        if self._config_error == message:
            return
        self._config_error = message
        log.error("ignoring scheduler config (no default topology spreads): %s", message)

    def _parse_pods(self, objs: Iterable[Mapping[str, Any]]) -> list[Pod]:
        """Parsed views of listed pods; a pod cluster state already parsed at the same
        resourceVersion is reused, and one parsed at an older version refreshed (parsing
        thousands of pending pods every pass adds up)."""
        out = []
        for obj in objs:
            meta = meta_of(obj)
            rv = meta.get("resourceVersion")
            if rv:
                cached = self.cluster.pod(
                    f"{meta.get('namespace') or 'default'}/{meta.get('name')}"
                )
                if cached is not None and meta_of(cached.raw).get("resourceVersion") == rv:
                    out.append(cached)
                    continue
            else:
                cached = None
            try:
                out.append(parsed_pod(obj, cached))
            except ObjectError as e:
                meta = meta_of(obj)
                log.warning(
                    "ignoring pod %s/%s: %s", meta.get("namespace", ""), meta.get("name", ""), e
                )
        return out

    def pending_pods(self, snapshot: ClusterSnapshot) -> list[Pod]:
        """Provisionable pods that pass validation; the rest get a decision error and (except
        pods that opted out of Karpenter nodes) a FailedScheduling event."""
        # Unbound pods only (upstream lists through its spec.nodeName index); read, never
        # written, so the in-memory server's stored objects need no copies
        list_pods = shared_list(self.ctx.kube)
        unbound = list_pods("pods", field_selector="spec.nodeName=").items
        pods = [p for p in self._parse_pods(unbound) if p.is_provisionable()]
        kept: list[Pod] = []
        rejected = 0
        for pod in pods:
            why = validate_pod(pod, snapshot)
            if why is None:
                kept.append(pod)
                continue
            rejected += 1
            self.cluster.mark_pod_scheduling_decisions([pod], {})
            log.debug("ignoring pod %s: %s", pod.key, why)
            if why != KARPENTER_MANAGED_LABEL_DOES_NOT_EXIST:
                self.ctx.recorder.publish(events.pod_failed_to_schedule(pod, why))
        metrics.SCHEDULER_IGNORED_PODS_COUNT.set(rejected)
        self._consolidation_warnings(kept)
        # Appended after validation: virtual pods have no claims or events to report.
        return kept + self.virtual_pods()

    def _consolidation_warnings(self, pods: Sequence[Pod]) -> None:
        """Say once per pod (until it changes) when its preferences may keep consolidation
        from packing nodes: preferred anti-affinity, ``ScheduleAnyway`` spreads."""
        if self.ctx.options.preference_policy == "Ignore":
            return
        anti: list[str] = []
        spread: list[str] = []
        for pod in pods:
            prefs = ((pod.affinity or {}).get("podAntiAffinity") or {}).get(
                "preferredDuringSchedulingIgnoredDuringExecution"
            )
            if prefs and self._changed(pod, "pod-antiaffinity"):
                anti.append(pod.key)
            if any(
                c.get("whenUnsatisfiable") == "ScheduleAnyway"
                for c in pod.topology_spread_constraints
            ) and self._changed(pod, "pod-topology-spread"):
                spread.append(pod.key)
        if anti:
            log.info(
                "pod(s) have a preferred Anti-Affinity which can prevent consolidation: %s",
                ", ".join(anti[:10]),
            )
        if spread:
            log.info(
                "pod(s) have a preferred TopologySpreadConstraint which can prevent "
                "consolidation: %s",
                ", ".join(spread[:10]),
            )

    def _changed(self, pod: Pod, what: str) -> bool:
        key = (pod.uid, what)
        version = str((pod.raw.get("metadata") or {}).get("resourceVersion") or "")
        if self._warned.get(key) == version:
            return False
        self._warned[key] = version
        if len(self._warned) > 100_000:  # forget old pods rather than grow without bound
            self._warned.clear()
        return True

    def deleting_node_pods(self, snapshot: ClusterSnapshot) -> list[Pod]:
        """Pods of nodes being deleted that would move now (not held by do-not-disrupt or a
        PDB that never allows an eviction)."""
        limits = PdbLimits(snapshot.pdbs)
        now = self.ctx.clock.now()
        out: list[Pod] = []
        for node in snapshot.deleting_nodes():
            items = self.ctx.kube.list("pods", field_selector=f"spec.nodeName={node.name}")
            for pod in self._parse_pods(items.items):
                if limits.is_currently_reschedulable(pod, now, self.ctx.recorder):
                    out.append(pod)
        return out

    def dynamic_nodepools(self) -> list[NodePool]:
        """Managed, Ready, non-static, non-deleting NodePools the scheduler can read
        (:func:`~karpenter_core.provisioning.nodepools.eligible_nodepools`), parsed once
        per stored version."""
        eligible, left_out = eligible_nodepools(
            self.ctx.kube.list("nodepools").items, self.ctx.cloud_provider
        )
        for pool in left_out:
            if pool.error:
                log.error("ignoring nodepool %s: %s", pool.name, pool.reason)
            else:
                log.debug("ignoring nodepool %s: %s", pool.name, pool.reason)
        return eligible

    def instance_types(self, nodepools: Sequence[NodePool]) -> dict[str, list[Any]]:
        """Instance types per pool; a pool whose provider call fails is left out (the
        scheduler then reports it as having none). While DRA requests are simulated
        (``IGNORE_DRA_REQUESTS=false``) each type carries the devices the installed DRA
        drivers say its nodes would publish (:class:`DeviceTemplates`)."""
        out: dict[str, list[Any]] = {}
        for np in nodepools:
            name = np.name
            try:
                its = list(self.ctx.cloud_provider.get_instance_types(np))
            except Exception as e:
                if is_unevaluated_nodepool(e):
                    log.debug("skipping nodepool %s: awaiting nodeoverlay evaluation", name)
                else:
                    log.error("skipping nodepool %s: unable to resolve instance types: %s", name, e)
                continue
            if not its:
                log.info("skipping nodepool %s: no resolved instance types found", name)
                continue
            if not self.ctx.options.ignore_dra_requests:
                its = self.device_templates.attach(np, its)
            out[name] = its
        return out

    def dra_inputs(self, deleting_pod_uids: Iterable[str] = ()) -> DRAInputs | None:
        """The cluster's DeviceClasses, ResourceClaims, claim templates and ResourceSlices
        for a solve, with the UIDs of the pods leaving nodes that go away (their devices are
        free, their claims allocated again); None while DRA requests are ignored."""
        if self.ctx.options.ignore_dra_requests:
            return None
        return self.dra_reader.read(deleting_pod_uids)

    def schedule(self) -> Results | None:
        """One scheduling pass over pending pods and pods of deleting nodes; records
        decisions, events and metrics. None when there was nothing to schedule. (The
        solve's duration is recorded by the scheduler itself.)"""
        start = time.perf_counter()
        snapshot = self.cluster.snapshot()  # nodes first, then pods (see module docstring)
        pending = self.pending_pods(snapshot)
        deleting = self.deleting_node_pods(snapshot)
        pending_keys = {p.key for p in pending}
        pods = pending + [p for p in deleting if p.key not in pending_keys]
        if not pods:
            return None
        log.debug(
            "computing scheduling decision for %d pending and %d deleting-node pod(s)",
            len(pending),
            len(deleting),
        )
        nodepools = self.dynamic_nodepools()
        if not nodepools:
            # As upstream: a decision (failed) for every pod, a log line, no per-pod events.
            log.info(NO_DYNAMIC_NODEPOOLS)
            self.cluster.mark_pod_scheduling_decisions(pods, {})
            return None
        instance_types = self.instance_types(nodepools)
        results = schedule(
            snapshot,
            pods,
            nodepools,
            instance_types,
            self.scheduler_options(),
            controller=NAME,
            dra=self.dra_inputs(p.uid for p in deleting),
        )
        by_name = {np.name: np for np in nodepools}
        for name, why in sorted(results.skipped_nodepools.items()):
            np = by_name.get(name)
            if np is not None:
                log.info("skipping nodepool %s: %s", name, why)
                self.ctx.recorder.publish(
                    events.no_compatible_instance_types(
                        np, name in results.min_values_skipped_nodepools
                    )
                )
        self._record(results, pods, nodepools, start)
        return results

    def _record(
        self,
        results: Results,
        pods: Sequence[Pod],
        nodepools: Sequence[NodePool],
        start: float,
    ) -> None:
        by_key = {p.key: p for p in pods}
        reserved = results.reserved_offering_errors()
        if reserved:
            log.debug(
                "deferring scheduling decision for %d pod(s) to a future pass: limited "
                "reserved offering capacity",
                len(reserved),
            )
        virtual = {p.key for p in pods if _is_virtual(p)}
        metrics.SCHEDULER_UNSCHEDULABLE_PODS_COUNT.labels(controller=NAME).set(
            len([k for k in results.pod_errors if k not in virtual])
            - len([k for k in reserved if k not in virtual])
        )
        delete_partial_match(
            metrics.SCHEDULER_PENDING_PODS_BY_EFFECTIVE_ZONE_COUNT, controller=NAME
        )
        zones: dict[str, int] = {}
        for key, zone in results.effective_zones.items():
            if key not in virtual:
                zones[zone] = zones.get(zone, 0) + 1
        for zone, count in sorted(zones.items()):
            metrics.SCHEDULER_PENDING_PODS_BY_EFFECTIVE_ZONE_COUNT.labels(
                controller=NAME, zone=zone
            ).set(count)
        if results.new_nodeclaims:
            log.info(
                "found provisionable pod(s): %s (%.3fs)",
                ", ".join(p.key for p in list(pods)[:5]),
                time.perf_counter() - start,
            )
        errored = [by_key[k] for k in results.pod_errors if k in by_key and k not in virtual]
        placed: dict[str, list[Pod]] = {}
        for nc in results.new_nodeclaims:
            placed.setdefault(nc.nodepool_name, []).extend(_real(nc.pods))
        for existing in results.existing_nodes:
            if _real(existing.pods):
                placed.setdefault("", []).extend(_real(existing.pods))
        healthy = [np.name for np in nodepools if np.is_true(CONDITION_NODE_REGISTRATION_HEALTHY)]
        for seconds in self.cluster.mark_pod_scheduling_decisions(errored, placed, None, healthy):
            metrics.PODS_SCHEDULING_DECISION_DURATION_SECONDS.observe(seconds)
        # Upstream Results.Record: failures, then nominations onto existing nodes.
        for key in sorted(results.pod_errors):
            err = results.pod_errors[key]
            pod = by_key.get(key)
            if pod is None or key in reserved or key in virtual:
                continue
            log.info("could not schedule pod %s: %s", key, err)
            self.ctx.recorder.publish(events.pod_failed_to_schedule(pod, err))
        for existing in results.existing_nodes:
            real = _real(existing.pods)
            if not real:  # a node holding only buffer pods is kept by emptiness instead
                continue
            sn = existing.state_node
            self.cluster.nominate_node_for_pod(sn.provider_id())
            node_name = sn.node.name if sn.node is not None else ""
            nc_name = sn.nodeclaim_view.name if sn.nodeclaim_view is not None else ""
            for pod in real:
                self.ctx.recorder.publish(events.nominate_pod(pod, node_name, nc_name))
        if results.new_nodeclaims:
            log.info(
                "computed %d new nodeclaim(s) to fit %d pod(s)",
                len(results.new_nodeclaims),
                sum(len(nc.pods) for nc in results.new_nodeclaims),
            )

    # ------------------------------------------------------------------ creating

    def create_nodeclaims(
        self,
        nodeclaims: Sequence[Any],
        *,
        reason: str = metrics.REASON_PROVISIONED,
        record_pod_nomination: bool = False,
    ) -> list[str]:
        """Create each planned NodeClaim (scheduler ``NodeClaim``s); returns the names
        created. Every claim is attempted; failures are raised together afterwards as
        :class:`ProvisioningError`, or, when every failure was the API server's (5xx, 429),
        as one :class:`ApiError` of that kind.

        A static claim (``is_static_nodeclaim``: a static NodePool's template, e.g. a static
        drift replacement) holds one node count reserved against ``spec.limits.nodes``; it
        is given back after the claim's attempt, whatever the outcome (a created claim
        already counts as active; a failed one frees the slot for a later try), and for a
        claim never attempted because the batch broke off. :meth:`create` itself releases
        nothing: a caller of it owns its reservation.

        Pod nominations are published only after every claim has been created: each event
        is an API write, and writing a large batch's events between the creates delayed
        the later claims by seconds."""
        names: list[str] = []
        errors: list[str] = []
        nominations: list[tuple[Any, str]] = []
        attempted = [False] * len(nodeclaims)
        state = self.cluster.nodepool_state

        def attempt(i: int, nc: Any) -> str | CreateError | ApiError:
            attempted[i] = True
            try:
                return self.create(nc, reason=reason)
            except (CreateError, ApiError) as e:
                return e
            finally:
                if getattr(nc, "is_static_nodeclaim", False):
                    state.release_node_count(nc.nodepool_name, 1)

        workers = min(len(nodeclaims), MAX_PARALLEL_CREATES)
        try:
            if workers > 1 and self.parallel_creates:
                # As upstream: a batch's claims are created concurrently, each an API round
                # trip; one after another, the last of 30 claims waited for 29 round trips.
                # each task runs in a copy of this context: the controller label of metrics
                contexts = [contextvars.copy_context() for _ in nodeclaims]
                with ThreadPoolExecutor(workers, thread_name_prefix="nodeclaim-create") as pool:
                    outcomes = list(
                        pool.map(
                            lambda c, i, nc: c.run(attempt, i, nc),
                            contexts,
                            range(len(nodeclaims)),
                            nodeclaims,
                        )
                    )
            else:
                outcomes = [attempt(i, nc) for i, nc in enumerate(nodeclaims)]
        finally:
            for i, nc in enumerate(nodeclaims):
                if not attempted[i] and getattr(nc, "is_static_nodeclaim", False):
                    state.release_node_count(nc.nodepool_name, 1)
        unreachable: list[ApiError] = []
        for nc, outcome in zip(nodeclaims, outcomes, strict=True):
            if not isinstance(outcome, str):
                errors.append(f"creating node claim for nodepool {nc.nodepool_name!r}, {outcome}")
                if isinstance(outcome, ApiError) and (outcome.code >= 500 or outcome.code == 429):
                    unreachable.append(outcome)
                continue
            names.append(outcome)
            nominations.append((nc, outcome))
        if record_pod_nomination:
            for nc, name in nominations:
                for pod in _real(nc.pods):
                    self.ctx.recorder.publish(events.nominate_pod(pod, nodeclaim_name=name))
        if errors and len(unreachable) == len(errors):
            # the API server failed, not the claims: one retryable error, not a list of
            # the same line (the controller rate-limits warnings of this kind)
            first = unreachable[0]
            raise ApiError(
                f"{len(errors)} of {len(nodeclaims)} node claims could not be created: "
                f"{first.message}",
                code=first.code,
                reason=first.reason,
            )
        if errors:
            raise ProvisioningError("; ".join(errors))
        return names

    def create(
        self,
        nc: Any,
        *,
        reason: str = metrics.REASON_PROVISIONED,
        record_pod_nomination: bool = False,
    ) -> str:
        """Create one NodeClaim unless its NodePool's limits are already exceeded; state is
        updated at once (not when the watch catches up) so the next pass counts it."""
        pool = nc.nodepool_name
        try:
            latest = self.ctx.kube.get("nodepools", pool)
        except NotFound:
            raise CreateError(
                f"getting current resource usage, nodepool {pool!r} not found"
            ) from None
        exceeded = limits_exceeded(
            spec_of(latest).get("limits"), self.cluster.nodepool_resources(pool)
        )
        if exceeded is not None:
            raise CreateError(exceeded)
        manifest = nc.to_nodeclaim_dict()
        try:
            created = self.ctx.kube.create(manifest)
        except ApiError as e:
            if e.code >= 500:
                # the server may have created it and only the answer been lost: state must
                # see the API server's NodeClaims before the pods are provisioned again
                self.cluster.confirm_with_api_server()
            raise
        name = name_of(created)
        self.cluster.mark_pod_scheduling_decisions((), {}, {name: _real(nc.pods)})
        its = [
            v
            for r in (created.get("spec") or {}).get("requirements") or ()
            if r.get("key") == LABEL_INSTANCE_TYPE
            for v in r.get("values") or ()
        ]
        shown = ", ".join(its[:5]) + (f" and {len(its) - 5} other(s)" if len(its) > 5 else "")
        log.info("created nodeclaim %s for nodepool %s (instance types: %s)", name, pool, shown)
        labels = labels_of(created)
        annotations = annotations_of(created)
        metrics.NODECLAIMS_CREATED_TOTAL.labels(
            reason=reason,
            nodepool=str(labels.get(NODEPOOL_LABEL_KEY, pool)),
            min_values_relaxed=str(
                annotations.get(NODECLAIM_MIN_VALUES_RELAXED_ANNOTATION_KEY, "false")
            ),
        ).inc()
        try:
            self.cluster.update_nodeclaim(created)
        except (APIError, ObjectError, ValueError) as e:  # the watch will try again
            log.warning("nodeclaim %s not yet in cluster state: %s", name, e)
        if record_pod_nomination:
            for pod in _real(nc.pods):
                self.ctx.recorder.publish(events.nominate_pod(pod, nodeclaim_name=name))
        return name
