"""The simulation engine: the real controllers on a virtual clock against an in-memory cluster.

What runs, and why it is split in two Managers sharing one :class:`VirtualClock` and one
:class:`InMemoryApiServer`:

- **the cluster** (``self.cluster``): what Kubernetes itself would do — the simulated
  kube-scheduler and kubelet (:mod:`karpenter_core.sim.kubescheduler`,
  :mod:`karpenter_core.sim.kubelet`), kube-controller-manager's PDB, garbage-collection
  and namespace loops (:mod:`karpenter_core.sim.controllermanager`, which run inside the
  API server's writes rather than on the Manager), the workload controllers
  (:mod:`karpenter_core.sim.workloads`) and the :class:`~karpenter_core.sim.report.Observer`
  watching pods, nodes and NodeClaims for the report;
- **Karpenter** (``self.karpenter``): every controller :func:`register_all` registers,
  built from a :class:`ControllerContext` exactly as ``karpenter serve`` builds it. Only
  this Manager is rebuilt by :meth:`Simulation.restart_karpenter`, as a pod restart would:
  the new one has nothing but the API server to rebuild its state from.

The cloud provider (KWOK) is the "cloud": it outlives Karpenter restarts.

Scenario changes (workloads created and scaled, node failures, spot interruptions,
offering outages, objects patched or applied) are clock timers, so they interleave with reconciles deterministically.
Reconciles take no virtual time; the same scenario and seed always give the same report.

With ``chargeComputeTime`` ("faithful time") Karpenter's reconciles take the CPU time they
measure (times ``computeTimeScale``), through a :class:`ComputeCharge` shared by Karpenter's
Managers across restarts. The model: Karpenter is one worker, running one reconcile at a
time; Kubernetes and the scenario are free and never wait for it. So after each Karpenter
reconcile the timers that fell due while it computed fire (late by at most that
reconcile, one at a time, each followed by the cluster's reaction), then Karpenter's next
reconcile runs. Runs are then no longer repeatable to the nanosecond.

Anything a scenario cannot do (a controller package not installed yet, an event with no
node to hit) becomes a note in the report, never a crash.
"""

from __future__ import annotations

import contextlib
import json
import logging
import random
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

import attrs

from karpenter_core.apis.limits import MAX_SHOWN_CHARS, one_line
from karpenter_core.apis.v1 import APIError, NodePool
from karpenter_core.cloudprovider.protocol import (
    InjectsOfferingOutages,
    OfferingOutage,
    SimulatesNodes,
)
from karpenter_core.kube.client import (
    AlreadyExists,
    ApiError,
    NotFound,
    ResourceType,
    UnknownResourceError,
    resource_for,
)
from karpenter_core.operator.controllers import Registration, register_all
from karpenter_core.plugins import PluginContributions
from karpenter_core.runtime.clock import ComputeCharge, VirtualClock, format_time
from karpenter_core.runtime.context import ControllerContext
from karpenter_core.runtime.events import EventRecorder
from karpenter_core.runtime.manager import LivelockError, Manager
from karpenter_core.runtime.options import Options, OptionsError
from karpenter_core.runtime.reconciler import Result, Watch
from karpenter_core.scoring import scorer_problem
from karpenter_core.sim import controllermanager, kubelet, kubescheduler
from karpenter_core.sim import workloads as workload_controllers
from karpenter_core.sim.apiserver import InMemoryApiServer, apply_merge_patch
from karpenter_core.sim.report import (
    CAPACITY_TYPE_LABEL,
    NODEPOOL_LABEL,
    ComputeCharged,
    ControllerFailures,
    Observer,
    Report,
    build_report,
)
from karpenter_core.sim.scenario import (
    APPLY_OBJECT,
    KARPENTER_RESTART,
    NODE_DELETION,
    NODE_FAILURE,
    OFFERING_OUTAGE,
    PATCH_OBJECT,
    SPOT_INTERRUPTION,
    Scenario,
    ScenarioEvent,
    Workload,
)
from karpenter_core.sim.startstate import (
    DEFAULT_START,
    Seeded,
    StartingState,
    seed_from_objects,
)

__all__ = ["DEFAULT_START", "RunStatus", "Simulation", "SimulationError", "simulate"]

log = logging.getLogger("karpenter.sim")


NODE_MONITOR_GRACE = 40.0
"""kube-controller-manager's node-monitor-grace-period: a silent kubelet's node goes Unknown."""
NOT_READY_EVICTION = 300.0
"""DefaultTolerationSeconds: pods tolerate an unreachable node for 5 minutes, then go."""


_UNREACHABLE_TAINT = {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"}


class SimulationError(Exception):
    """The simulation cannot start; the message names what is wrong."""


@attrs.frozen
class RunStatus:
    """A running simulation's state as progress feedback shows it."""

    elapsed: float
    """Virtual seconds since the start."""
    pending: int
    """Pods that exist and wait for a node."""
    nodes: int
    """Nodes that exist."""


class _WatchOnly:
    """A reconciler for controllers that only observe (their mappers do the work)."""

    def reconcile(self, key: Any) -> Result:
        return Result()


def _disruption_reasons() -> dict[tuple[str, ...], float]:
    """``karpenter_nodeclaims_disrupted_total`` by (reason, nodepool, capacity type)."""
    try:
        from karpenter_core import metrics
    except ImportError:
        return {}
    out: dict[tuple[str, ...], float] = {}
    for family in metrics.NODECLAIMS_DISRUPTED_TOTAL.collect():
        for s in family.samples:
            if s.name.endswith("_total"):
                labels = (
                    s.labels.get("reason", ""),
                    s.labels.get("nodepool", ""),
                    s.labels.get("capacity_type", ""),
                )
                out[labels] = out.get(labels, 0.0) + float(s.value)
    return out


REPORTED_COUNTERS = (
    "karpenter_nodeclaims_created_total",
    "karpenter_nodeclaims_terminated_total",
    "karpenter_nodeclaims_disrupted_total",
    "karpenter_nodes_created_total",
    "karpenter_nodes_terminated_total",
    "karpenter_nodes_drained_total",
    "karpenter_pods_eviction_requests_total",
    "karpenter_pods_drained_total",
    "karpenter_cloudprovider_errors_total",
    "karpenter_voluntary_disruption_decisions_total",
)
"""Karpenter's counters the report totals (each summed over its labels)."""


def _metrics_snapshot() -> dict[Any, float]:
    try:
        from karpenter_core import metrics
    except ImportError:
        return {}
    return dict(metrics.snapshot())


def _counter_totals(before: Mapping[Any, float]) -> dict[str, float]:
    """What Karpenter's reported counters counted since ``before`` (summed over labels)."""
    try:
        from karpenter_core import metrics
    except ImportError:
        return {}
    totals: dict[str, float] = {}
    for (name, _labels), change in metrics.delta(before, metrics.snapshot()).items():
        if name in REPORTED_COUNTERS:
            totals[name] = totals.get(name, 0.0) + change
    return dict(sorted(totals.items()))


class Simulation:
    """One run of a :class:`Scenario` (see the module docstring)."""

    def __init__(
        self,
        scenario: Scenario,
        *,
        seed: int | None = None,
        start: datetime | None = None,
        compute_meter: Callable[[], float] | None = None,
        initial: StartingState | None = None,
        what_if: Sequence[ScenarioEvent] = (),
    ) -> None:
        """``compute_meter`` measures compute when the scenario charges it (tests pass a
        meter they advance by hand; None: :class:`ComputeCharge`'s default, the process's
        CPU time through a :class:`~karpenter_core.runtime.clock.CoarseMeter`).

        ``initial``: a cluster's objects to start from (a snapshot); the virtual clock
        then starts when they were read, unless ``start`` says otherwise (default
        :data:`DEFAULT_START`). ``what_if``: object changes (``PatchObject`` /
        ``ApplyObject`` events) made at the start, after the scenario's objects exist and
        before Karpenter starts: the change a what-if run compares with doing nothing."""
        if start is None:
            start = initial.taken_at if initial is not None else DEFAULT_START
        self.scenario = scenario
        self.charge: ComputeCharge | None = (
            ComputeCharge(meter=compute_meter, scale=scenario.compute_time_scale)
            if scenario.charge_compute_time
            else None
        )
        self.seed = seed if seed is not None else (scenario.seed or 0)
        self.wall_started = time.perf_counter()
        self._metrics_before = _metrics_snapshot()
        self.clock = VirtualClock(start)
        self.server = InMemoryApiServer(self.clock, seed=self.seed, kube_controller_manager=False)
        self.recorder = EventRecorder(self.clock, None, max_events=2_000_000)
        self.cluster_recorder = EventRecorder(self.clock, None, component="kubernetes")
        self.options = self._options(scenario.options)
        self.provider = self._provider(initial)
        self._prices: dict[tuple[str, str, str], float] | None = None
        self.observer = Observer(self.clock, self._price_of, _disruption_reasons)
        self._rng = random.Random(self.seed)
        self._kubelet: Any = None
        self.restarts = 0
        self.halted: str | None = None
        self._stopped_controllers: list[Any] = []
        self.cluster = Manager(self.clock, self.server, seed=self.seed)
        self._setup_cluster()
        self.seeded: Seeded | None = None
        if initial is not None:
            self._seed(initial)
        self._create_objects()
        self._apply_what_ifs(what_if)
        self.karpenter: Manager
        self.ctx: ControllerContext
        self.registration: Registration = Registration()
        self._start_karpenter()
        self._schedule_scenario()

    # ------------------------------------------------------------------ construction

    def _options(self, raw: Mapping[str, str]) -> Options:
        names = {f.name.upper() for f in attrs.fields(Options)}
        environ: dict[str, str] = {}
        for key, value in raw.items():
            env = key.upper().replace("-", "_")
            if env not in names:
                raise SimulationError(
                    f"{self.scenario.source}: options.{key}: unknown option (known: "
                    + ", ".join(sorted(names))
                    + ")"
                )
            environ[env] = value
        try:
            return Options.from_env(environ)
        except OptionsError as e:
            raise SimulationError(f"{self.scenario.source}: options: {e}") from None

    def _provider(self, initial: StartingState | None = None) -> Any:
        """The simulated cloud: KWOK. For another ``cloudProvider`` (aws...), KWOK stands in
        for it: that provider's catalogue, built offline from its settings (its region) and
        the NodeClasses of the scenario and the starting snapshot, gives each NodePool's
        instance types, and KWOK launches them — nothing reaches the real cloud."""
        from karpenter_core.plugins import cloud_providers, get_cloud_provider, get_plugin_manager

        name = self.scenario.cloud_provider
        settings = dict(self.scenario.provider_settings)
        node_classes: list[Mapping[str, Any]] = []
        if name != "kwok":
            spec = cloud_providers(get_plugin_manager()).get(name)
            kinds = {(k.group, k.kind) for k in spec.node_classes} if spec is not None else set()
            objects = list(self.scenario.objects)
            if initial is not None:
                objects += [
                    o
                    for o in initial.snapshot.iter_objects()
                    if o.get("kind") in {k for _, k in kinds}
                ]
            node_classes = [
                o
                for o in objects
                if (str(o.get("apiVersion") or "").partition("/")[0], o.get("kind")) in kinds
            ]
            settings = {
                "catalogue-provider": name,
                "catalogue-provider-settings": json.dumps(settings, sort_keys=True),
            }
        settings.setdefault("seed", str(self.seed))
        try:
            return get_cloud_provider(
                "kwok",
                settings,
                kube=self.server,
                clock=self.clock,
                recorder=self.recorder,
                node_classes=node_classes,
            )
        except Exception as e:
            raise SimulationError(
                f"{self.scenario.source}: cloudProvider {self.scenario.cloud_provider!r}: {e}"
            ) from None

    def _plugin_contributions(self) -> PluginContributions:
        """What the installed plugins add (overlays, disruption methods, controllers...),
        as ``karpenter serve`` applies them."""
        from karpenter_core.plugins import (
            builtin_contributions,
            get_plugin_manager,
            plugin_contributions,
        )

        try:
            return plugin_contributions(get_plugin_manager())
        except Exception as e:  # a broken plugin: say so, simulate with the built-ins
            self.observer.note(f"plugin extensions unavailable ({type(e).__name__}: {e})")
            return builtin_contributions()

    def _cluster_ctx(self) -> ControllerContext:
        return ControllerContext(
            kube=self.server,
            clock=self.clock,
            cloud_provider=self.provider,
            recorder=self.cluster_recorder,
            options=self.options,
        )

    def _setup_cluster(self) -> None:
        """The simulated Kubernetes side: controller manager, scheduler, kubelet, workloads,
        observer."""
        ctx = self._cluster_ctx()
        for what in ("kube-controller-manager", "kube-scheduler", "kubelet"):
            try:
                if what == "kube-controller-manager":
                    controllermanager.register(self.server)
                elif what == "kubelet":
                    self._kubelet = kubelet.register(self.cluster, ctx, *self._kubelet_options())
                else:
                    kubescheduler.register(self.cluster, ctx)
            except Exception as e:
                self.observer.note(f"simulated {what} failed to start: {type(e).__name__}: {e}")
        self.workloads = workload_controllers.register(self.cluster, self.server, self.clock)
        obs = self.observer
        self.cluster.add_controller(
            "sim.observer",
            _WatchOnly(),
            watches=[
                Watch("pods", mapper=obs.on_pod),
                Watch("nodes", mapper=obs.on_node),
            ],
        )

    def _kubelet_options(self) -> tuple[kubelet.KubeletOptions, ...]:
        """A provider whose nodes have no kubelet of their own (KWOK) marks them with an
        annotation; the simulated kubelet manages those, as the KWOK controller does."""
        if not isinstance(self.provider, SimulatesNodes):
            return ()
        return (kubelet.KubeletOptions(manage_annotation=self.provider.simulated_node_annotation),)

    def _create(self, obj: Mapping[str, Any], where: str) -> dict[str, Any]:
        try:
            return self.server.create(obj)
        except ApiError as e:
            raise SimulationError(f"{self.scenario.source}: {where}: {e}") from None
        except (KeyError, ValueError, TypeError) as e:
            raise SimulationError(f"{self.scenario.source}: {where}: cannot create: {e}") from None

    def _create_objects(self) -> None:
        sc = self.scenario
        objects = sorted(enumerate(sc.objects), key=lambda p: p[1].get("kind") != "Namespace")
        for i, obj in objects:
            created = self._create(
                obj, f"objects[{i}] ({obj.get('kind')} {obj['metadata']['name']})"
            )
            if obj.get("status") and created.get("status") != obj["status"]:
                with contextlib.suppress(ApiError):
                    self.server.update_status({**created, "status": obj["status"]})
        for i, pool in enumerate(sc.nodepools):
            self._create(pool, f"nodePools[{i}] ({pool['metadata']['name']})")
        self._ensure_node_classes()
        for i, overlay in enumerate(sc.nodeoverlays):
            self._create(overlay, f"nodeOverlays[{i}] ({overlay['metadata']['name']})")
        if not sc.nodepools and not self.server.count("nodepools"):
            self.observer.note("the scenario has no NodePools: Karpenter cannot launch anything")
        namespaces = {n["metadata"]["name"] for n in self.server.list("namespaces").items}
        for i, w in enumerate(sc.workloads):
            if w.namespace not in namespaces:
                raise SimulationError(
                    f"{sc.source}: workloads[{i}] ({w.kind} {w.name}): namespace "
                    f"{w.namespace!r} does not exist; add a Namespace to objects"
                )
        if sc.nodeoverlays and not self.options.gate("NodeOverlay"):
            self.observer.note(
                "nodeOverlays have no effect: the NodeOverlay feature gate is off "
                "(set options.FEATURE_GATES: NodeOverlay=true)"
            )

    def _seed(self, initial: StartingState) -> None:
        """Create the snapshot's objects (see :mod:`karpenter_core.sim.startstate`); its
        NodeClaims are the run's starting nodes, not launches the run made."""
        self.seeded = seed_from_objects(
            self.server, initial.objects(), self.provider, in_order=True
        )
        self.observer.existing_nodeclaims.update(self.seeded.nodeclaims)
        for note in self.seeded.notes:
            self.observer.note(note)

    def _apply_what_ifs(self, changes: Sequence[ScenarioEvent]) -> None:
        """Make each what-if change now, as the scenario's own object events are made
        (a change that cannot be made is a note and a decision, not an error)."""
        for e in changes:
            if e.type == PATCH_OBJECT:
                self._patch_object(e)
            elif e.type == APPLY_OBJECT:
                self._apply_object(e)

    def _ensure_node_classes(self) -> None:
        """Create the NodeClasses the NodePools name, unless the scenario has them, and
        give every NodeClass without conditions a Ready one (what the KWOKNodeClass CRD's
        status default does): a simulation should not need provider boilerplate."""
        supported: dict[tuple[str, str], str] = {}
        try:
            for nck in self.provider.supported_node_classes():
                if getattr(nck, "version", ""):
                    supported[(nck.group, nck.kind)] = nck.api_version
        except Exception:
            return
        wanted: dict[tuple[str, str], str] = {}  # (kind, name) -> apiVersion
        for pool in self.server.list("nodepools").items:
            spec = ((pool.get("spec") or {}).get("template") or {}).get("spec") or {}
            ref = spec.get("nodeClassRef") or {}
            key = (str(ref.get("group", "")), str(ref.get("kind", "")))
            if key in supported and ref.get("name"):
                wanted[(key[1], str(ref["name"]))] = supported[key]
        for (kind, name), api_version in sorted(wanted.items()):
            try:
                self.server.get((api_version, kind), name)
                continue
            except NotFound:
                pass
            except Exception:
                continue
            try:
                self.server.create(
                    {
                        "apiVersion": api_version,
                        "kind": kind,
                        "metadata": {"name": name},
                        "spec": {},
                    }
                )
            except ApiError as e:
                self.observer.note(f"could not create {kind} {name}: {e}")
        for (_, kind), api_version in supported.items():
            try:
                node_classes = self.server.list((api_version, kind)).items
            except Exception:
                continue
            for nc in node_classes:
                if (nc.get("status") or {}).get("conditions"):
                    continue
                nc["status"] = {
                    "conditions": [
                        {
                            "type": "Ready",
                            "status": "True",
                            "reason": "Ready",
                            "message": "",
                            "lastTransitionTime": format_time(self.clock.now()),
                            "observedGeneration": nc["metadata"].get("generation", 1),
                        }
                    ]
                }
                with contextlib.suppress(ApiError):
                    self.server.update_status(nc)

    def _start_karpenter(self) -> None:
        """Build Karpenter's Manager from a fresh context, as the operator's main does."""
        self.karpenter = Manager(self.clock, self.server, seed=self.seed, charge=self.charge)
        try:
            from karpenter_core.state.cluster import Cluster

            cluster: Any = Cluster(self.server, self.clock, self.provider)
        except Exception as e:  # the state package missing or broken: say so, run the rest
            cluster = None
            self.observer.note(f"no cluster state ({type(e).__name__}: {e})")
        self.ctx = ControllerContext(
            kube=self.server,
            clock=self.clock,
            cloud_provider=self._decorated_provider(),
            recorder=self.recorder,
            options=self.options,
            cluster=cluster,
            plugins=self._plugin_contributions(),
            base_cloud_provider=self.provider,
        )
        problem = scorer_problem(self.ctx)
        if problem is not None:
            raise SimulationError(f"{self.scenario.source}: options: {problem}")
        self.registration = register_all(self.karpenter, self.ctx)
        # NodeClaims are observed from Karpenter's own Manager, which delivers events
        # before each of its reconciles: a deletion is seen right after the reconcile that
        # made it, so the disruption counter it bumped names its reason
        self.karpenter.add_controller(
            "sim.observer",
            _WatchOnly(),
            watches=[Watch("nodeclaims", mapper=self.observer.on_nodeclaim)],
            charged=False,  # the report's, not Karpenter's
        )
        for note in self.registration.notes():
            self.observer.note(note)
        if self.ctx.disruption is not None:
            self.ctx.disruption.on_start(self._on_disruption)

    def _on_disruption(self, command: Any) -> None:
        """A disruption command started: one decision saying what goes, for what reason,
        and what replaces it (the queue has just created the replacements; their
        candidates' removals follow as they are drained)."""
        names = [c.nodeclaim_name() for c in command.candidates]
        queue = self.ctx.disruption_queue
        replacements = (
            queue.replacement_names(command.candidates[0].provider_id())
            if queue is not None and command.candidates
            else []
        )
        text = f"{command.reason}: {command.decision}"
        if command.replacements:
            n = len(command.replacements)
            text += f" with {n} replacement{'' if n == 1 else 's'}"
        text += f" (estimated savings ${command.estimated_savings():.4f}/h)"
        self.observer.decide(
            "Disrupt",
            text,
            nodeClaim=", ".join(names),
            decision=command.decision,
            method=command.reason,
            candidates=names,
            replacements=replacements,
        )

    def _decorated_provider(self) -> Any:
        """The provider as the operator's main hands it to controllers: wrapped with the
        cloud-provider metrics (``karpenter_cloudprovider_*``), as upstream does."""
        try:
            from karpenter_core.cloudprovider.metrics import decorate
        except ImportError:
            return self.provider
        return decorate(self.provider)

    def restart_karpenter(self) -> None:
        """Stop Karpenter's Manager and start a new one with empty in-memory state: it
        must rebuild everything from the API server (the cloud and cluster carry on)."""
        self.karpenter.stop()
        self._stopped_controllers.extend(self.karpenter.controllers)
        self.restarts += 1
        self.observer.decide("Restart", "the Karpenter controller restarted", source="scenario")
        self._start_karpenter()

    # ------------------------------------------------------------------ the scenario

    def _at(self, offset: float, fn: Callable[[], None], what: str) -> None:
        def run() -> None:
            try:
                fn()
            except Exception as e:  # a scenario step must never crash the run
                log.warning("scenario step %s failed: %s", what, e, exc_info=True)
                self.observer.note(f"{what} at +{offset:g}s failed: {type(e).__name__}: {e}")

        self.clock.call_at(self.observer.t0 + offset, run)

    def _schedule_scenario(self) -> None:
        for w in self.scenario.workloads:
            self._at(w.at, lambda w=w: self._create_workload(w), f"creating {w.key}")  # type: ignore[misc]
            for step in w.scale:
                self._at(
                    step.at,
                    lambda w=w, n=step.replicas: self._scale(w, n),  # type: ignore[misc]
                    f"scaling {w.key}",
                )
            if w.delete_at is not None:
                self._at(w.delete_at, lambda w=w: self._delete_workload(w), f"deleting {w.key}")  # type: ignore[misc]
        for e in self.scenario.events:
            self._at(e.at, lambda e=e: self._apply(e), f"event {e.type}")  # type: ignore[misc]
            if e.type == OFFERING_OUTAGE and e.duration is not None:
                self._at(e.at + e.duration, lambda e=e: self._outage_end(e), f"end of {e.type}")  # type: ignore[misc]
        self._install_outages()
        self._schedule_sample(0.0)

    def _schedule_sample(self, offset: float) -> None:
        def sample() -> None:
            self.observer.sample()
            self._schedule_sample(offset + self.scenario.sample_interval)

        self.clock.call_at(self.observer.t0 + offset, sample)

    def _create_workload(self, w: Workload) -> None:
        if w.kind == "Pod":
            self._scale_pods(w, w.replicas)
        else:
            self.server.create(w.manifest)
        self.observer.decide(
            "CreateWorkload",
            f"{w.kind} {w.namespace}/{w.name} with {w.replicas} "
            + ("parallel pods" if w.kind == "Job" else "replicas"),
            source="scenario",
            workload=w.key,
        )

    def _scale(self, w: Workload, replicas: int) -> None:
        if w.kind == "Pod":
            self._scale_pods(w, replicas)
        else:
            resource = {"Deployment": "deployments", "ReplicaSet": "replicasets", "Job": "jobs"}[
                w.kind
            ]
            field = "parallelism" if w.kind == "Job" else "replicas"
            self.server.patch(resource, w.name, {"spec": {field: replicas}}, w.namespace)
        self.observer.decide(
            "ScaleWorkload",
            f"{w.kind} {w.namespace}/{w.name} to {replicas}",
            source="scenario",
            workload=w.key,
        )

    def _scale_pods(self, w: Workload, replicas: int) -> None:
        existing = {
            p["metadata"]["name"]
            for p in self.server.list("pods", w.namespace).items
            if p["metadata"]["name"].startswith(f"{w.name}-")
            and (p["metadata"].get("labels") or {}).get("simulate.karpenter.sh/group") == w.name
        }
        for i in range(max(replicas, len(existing) + replicas)):
            name = f"{w.name}-{i}"
            if i < replicas and name not in existing:
                pod = {**w.manifest, "metadata": {**w.manifest["metadata"], "name": name}}
                pod["metadata"]["labels"] = {
                    **(pod["metadata"].get("labels") or {}),
                    "simulate.karpenter.sh/group": w.name,
                }
                with contextlib.suppress(AlreadyExists):
                    self.server.create(pod)
            elif i >= replicas and name in existing:
                with contextlib.suppress(NotFound):
                    self.server.delete("pods", name, w.namespace)

    def _delete_workload(self, w: Workload) -> None:
        if w.kind == "Pod":
            self._scale_pods(w, 0)
        else:
            resource = {"Deployment": "deployments", "ReplicaSet": "replicasets", "Job": "jobs"}[
                w.kind
            ]
            with contextlib.suppress(NotFound):
                self.server.delete(resource, w.name, w.namespace, propagation_policy="Background")
        self.observer.decide(
            "DeleteWorkload", f"{w.kind} {w.namespace}/{w.name}", source="scenario", workload=w.key
        )

    # -- events

    def _apply(self, e: ScenarioEvent) -> None:
        if e.type == OFFERING_OUTAGE:
            self.observer.decide("OfferingOutage", e.describe(), source="scenario")
            return
        if e.type == SPOT_INTERRUPTION:
            self._spot_interruption(e)
        elif e.type == NODE_FAILURE:
            self._node_failure(e)
        elif e.type == NODE_DELETION:
            self._node_deletion(e)
        elif e.type == KARPENTER_RESTART:
            self.restart_karpenter()
        elif e.type == PATCH_OBJECT:
            self._patch_object(e)
        elif e.type == APPLY_OBJECT:
            self._apply_object(e)

    # -- objects changed mid-run (a NodePool rollout, a budget change, a new overlay)

    def _object_miss(self, e: ScenarioEvent, action: str, why: str) -> None:
        """A patch or apply that cannot happen is the scenario's problem, not a crash:
        a note, and a decision saying it was not applied."""
        self.observer.note(f"{e.type} at +{e.at:g}s ({e.describe()}): {why}")
        self.observer.decide(
            action, f"not applied: {why}", source="scenario", object=e.describe(), applied=False
        )

    def _resource_of_event(self, e: ScenarioEvent) -> ResourceType | None:
        try:
            if e.api_version:
                return resource_for((e.api_version, str(e.kind)))
            return resource_for(str(e.kind))
        except UnknownResourceError as err:
            action = "PatchObject" if e.type == PATCH_OBJECT else "ApplyObject"
            self._object_miss(e, action, f"unknown kind: {err}")
            return None

    def _patch_object(self, e: ScenarioEvent) -> None:
        """A JSON merge patch on a live object, checked like the API server would check it
        (a NodePool the CRD refuses is not written)."""
        rt = self._resource_of_event(e)
        if rt is None:
            return
        namespace = (e.namespace or "default") if rt.namespaced else None
        try:
            old = self.server.get(rt, str(e.name), namespace)
        except NotFound:
            where = f" in namespace {namespace}" if namespace else ""
            self._object_miss(e, "PatchObject", f"no {rt.kind} named {e.name!r}{where}")
            return
        problem = _invalid(apply_merge_patch(old, e.patch))
        if problem:
            self._object_miss(e, "PatchObject", f"the patched {rt.kind} is invalid: {problem}")
            return
        try:
            new = self.server.patch(rt, str(e.name), e.patch, namespace)
        except ApiError as err:
            self._object_miss(e, "PatchObject", f"the API server refused the patch: {err}")
            return
        changes = object_changes(old, new)
        self.observer.decide(
            "PatchObject",
            "; ".join(changes) or "no change",
            source="scenario",
            object=f"{rt.kind}/{_name_of(new)}",
            changes=changes,
            applied=True,
        )

    def _apply_object(self, e: ScenarioEvent) -> None:
        """Create the manifest, or replace the object of that name with it (as ``kubectl
        replace``: what the manifest leaves out is gone, except status and the metadata the
        server and controllers own)."""
        rt = self._resource_of_event(e)
        if rt is None or e.manifest is None:
            return
        manifest = dict(e.manifest)
        meta = dict(manifest.get("metadata") or {})
        namespace = str(meta.get("namespace") or "default") if rt.namespaced else None
        try:
            old: dict[str, Any] | None = self.server.get(rt, str(e.name), namespace)
        except NotFound:
            old = None
        try:
            if old is None:
                new = self.server.create(manifest)
                changes = ["created"]
            else:
                old_meta = old["metadata"]
                for key in ("uid", "creationTimestamp", "resourceVersion", "generation"):
                    if key in old_meta:
                        meta[key] = old_meta[key]
                for key in ("finalizers", "ownerReferences"):
                    if key not in meta and key in old_meta:
                        meta[key] = old_meta[key]
                if "status" in old and "status" not in manifest:
                    manifest["status"] = old["status"]
                new = self.server.update({**manifest, "metadata": meta})
                changes = object_changes(old, new) or ["no change"]
        except ApiError as err:
            self._object_miss(e, "ApplyObject", f"the API server refused it: {err}")
            return
        self.observer.decide(
            "ApplyObject",
            "created" if old is None else "replaced: " + "; ".join(changes),
            source="scenario",
            object=f"{rt.kind}/{_name_of(new)}",
            changes=changes,
            applied=True,
        )
        if rt.kind == "NodeOverlay" and not self.options.gate("NodeOverlay"):
            self.observer.note(
                "an applied NodeOverlay has no effect: the NodeOverlay feature gate is off "
                "(set options.FEATURE_GATES: NodeOverlay=true)"
            )

    def _pick_nodes(self, e: ScenarioEvent, *, spot_only: bool = False) -> list[dict[str, Any]]:
        """The Karpenter nodes an event hits: the named one, else ``count`` chosen with
        the seeded generator among live nodes (of ``nodePool``, spot when asked)."""
        nodes = sorted(self.server.list("nodes").items, key=lambda n: n["metadata"]["name"])
        live = [
            n
            for n in nodes
            if not n["metadata"].get("deletionTimestamp")
            and (n["metadata"].get("labels") or {}).get(NODEPOOL_LABEL)
        ]
        if e.node is not None:
            return [n for n in nodes if n["metadata"]["name"] == e.node]
        if e.nodepool is not None:
            live = [n for n in live if n["metadata"]["labels"].get(NODEPOOL_LABEL) == e.nodepool]
        if spot_only:
            live = [n for n in live if n["metadata"]["labels"].get(CAPACITY_TYPE_LABEL) == "spot"]
        if len(live) <= e.count:
            return live
        return self._rng.sample(live, e.count)

    def _nodeclaim_of(self, node: Mapping[str, Any]) -> str | None:
        provider_id = (node.get("spec") or {}).get("providerID")
        for nc in self.server.list("nodeclaims").items:
            if provider_id and (nc.get("status") or {}).get("providerID") == provider_id:
                return str(nc["metadata"]["name"])
        return None

    def _miss(self, e: ScenarioEvent, what: str) -> None:
        self.observer.note(f"{e.type} at +{e.at:g}s ({e.describe()}): no {what} to hit")
        self.observer.decide(e.type, f"nothing to hit: no {what}", source="scenario")

    def _spot_interruption(self, e: ScenarioEvent) -> None:
        """The cloud reclaims spot capacity: the NodeClaim is deleted (as upstream's
        interruption handling does) and Karpenter drains and replaces it."""
        nodes = self._pick_nodes(e, spot_only=e.node is None)
        if not nodes:
            self._miss(e, "spot node")
            return
        for node in nodes:
            name = self._nodeclaim_of(node)
            if name is None:
                continue
            self.observer.removal_hints[name] = "spot interruption"
            self.observer.decide(
                "SpotInterruption",
                "the cloud reclaims the spot instance",
                source="scenario",
                nodeClaim=name,
                node=node["metadata"]["name"],
            )
            with contextlib.suppress(NotFound):
                self.server.delete("nodeclaims", name)

    def _node_deletion(self, e: ScenarioEvent) -> None:
        """``kubectl delete node``: Karpenter's termination finalizer drains it."""
        nodes = self._pick_nodes(e)
        if not nodes:
            self._miss(e, "node")
            return
        for node in nodes:
            name = self._nodeclaim_of(node)
            if name is not None:
                self.observer.removal_hints[name] = "node deleted"
            self.observer.decide(
                "NodeDeletion",
                "the node is deleted",
                source="scenario",
                node=node["metadata"]["name"],
            )
            with contextlib.suppress(NotFound):
                self.server.delete("nodes", node["metadata"]["name"])

    def _stop_kubelet(self, node_name: str) -> None:
        """The node's kubelet goes silent: nothing reports it Ready or runs its pods."""
        if self._kubelet is not None:
            self._kubelet.fail_node(node_name)

    def _node_failure(self, e: ScenarioEvent) -> None:
        """A node stops: its kubelet goes silent, kube-controller-manager marks it
        Unknown and taints it unreachable, and evicts its pods 5 minutes later.
        ``InstanceGone``: the instance vanishes with its Node (and the pods bound there)."""
        nodes = self._pick_nodes(e)
        if not nodes:
            self._miss(e, "node")
            return
        for node in nodes:
            name = node["metadata"]["name"]
            self._stop_kubelet(name)
            self.observer.decide(
                "NodeFailure",
                "the instance vanished"
                if e.mode == "InstanceGone"
                else "the kubelet stopped reporting",
                source="scenario",
                node=name,
            )
            if e.mode == "InstanceGone":
                self._vanish(name)
            else:
                self._mark_unreachable(name)
                self._at(
                    self.observer.now() + NOT_READY_EVICTION,
                    lambda n=name: self._evict_unreachable(n),  # type: ignore[misc]
                    f"evicting pods from failed node {name}",
                )

    def _mark_unreachable(self, name: str) -> None:
        try:
            node = self.server.get("nodes", name)
        except NotFound:
            return
        now = format_time(self.clock.now())
        conditions = [
            c
            for c in (node.get("status") or {}).get("conditions") or ()
            if c.get("type") != "Ready"
        ]
        conditions.append(
            {
                "type": "Ready",
                "status": "Unknown",
                "reason": "NodeStatusUnknown",
                "message": "Kubelet stopped posting node status.",
                "lastHeartbeatTime": now,
                "lastTransitionTime": now,
            }
        )
        node.setdefault("status", {})["conditions"] = conditions
        node = self.server.update_status(node)
        taints = list((node.get("spec") or {}).get("taints") or ())
        if not any(t.get("key") == _UNREACHABLE_TAINT["key"] for t in taints):
            taints.append({**_UNREACHABLE_TAINT, "timeAdded": now})
            self.server.patch("nodes", name, {"spec": {"taints": taints}})

    def _evict_unreachable(self, name: str) -> None:
        try:
            node = self.server.get("nodes", name)
        except NotFound:
            return
        ready = next(
            (
                c
                for c in (node.get("status") or {}).get("conditions") or ()
                if c.get("type") == "Ready"
            ),
            None,
        )
        if ready is not None and ready.get("status") == "True":
            return
        for pod in self.server.pods_on_node(name):
            if any(
                r.get("kind") == "DaemonSet" for r in pod["metadata"].get("ownerReferences") or ()
            ):
                continue
            with contextlib.suppress(NotFound):
                self.server.delete("pods", pod["metadata"]["name"], pod["metadata"]["namespace"])

    def _vanish(self, name: str) -> None:
        """The Node object goes with the instance; the pods bound there are left to the
        pod garbage collector (the simulated kubelet's orphan GC, 40 s later)."""
        with contextlib.suppress(NotFound):
            node = self.server.get("nodes", name)
            if node["metadata"].get("finalizers"):
                self.server.patch("nodes", name, {"metadata": {"finalizers": None}})
            self.server.delete("nodes", name)

    def _install_outages(self) -> None:
        """Offering outages go to a provider that can inject them
        (:class:`~karpenter_core.cloudprovider.protocol.InjectsOfferingOutages`: KWOK)."""
        outages = [e for e in self.scenario.events if e.type == OFFERING_OUTAGE]
        if not outages:
            return
        if not isinstance(self.provider, InjectsOfferingOutages):
            self.observer.note(
                f"cloud provider {self.scenario.cloud_provider!r} cannot inject offering outages; "
                "OfferingOutage events have no effect"
            )
            return
        for e in outages:
            self.provider.add_offering_outage(
                OfferingOutage(
                    instance_type=e.instance_type or None,
                    zone=e.zone or None,
                    capacity_type=e.capacity_type or None,
                    start=e.at,
                    end=None if e.duration is None else e.at + e.duration,
                )
            )

    def _outage_end(self, e: ScenarioEvent) -> None:
        self.observer.decide(
            "OfferingRestored",
            e.describe().replace(" unavailable", " available again").split(" for ")[0],
            source="scenario",
        )

    # ------------------------------------------------------------------ pricing

    def _price_of(self, instance_type: str, zone: str, capacity_type: str) -> float | None:
        if self._prices is None:
            self._prices = {}
            try:
                pools: list[NodePool | None] = [None]
                for manifest in self.scenario.nodepools:
                    with contextlib.suppress(APIError, ValueError, TypeError):
                        pools.append(NodePool.from_dict(manifest))
                for pool in pools:
                    for it in self.provider.get_instance_types(pool):
                        for o in it.offerings:
                            self._prices.setdefault(
                                (it.name, o.zone, o.capacity_type), float(o.price)
                            )
            except Exception as e:
                self.observer.note(f"prices unavailable: {type(e).__name__}: {e}")
        return self._prices.get((instance_type, zone, capacity_type))

    # ------------------------------------------------------------------ running

    def run_until(self, offset: float, stop_when: Callable[[], bool] | None = None) -> None:
        """Run both Managers and the scenario until ``offset`` seconds into the run (or
        until ``stop_when()`` holds, checked each time virtual time moves).

        A livelock (controllers reconciling forever without time moving) or a failing
        timer callback does not escape: the run stops there (livelock) or goes on
        (callback), and the report says what happened."""
        if self.halted is not None:
            return
        # on the clock's own nanosecond grid: a float sum such as 0.1 + 0.2 lies between
        # two readings the clock can show, and "not there yet" would then hold for ever
        target = self.clock.target_monotonic(self.observer.t0 + offset)
        last_t = self.clock.monotonic()
        while True:
            ran = 0
            try:
                if self.charge is None:
                    for m in (self.cluster, self.karpenter):
                        ran += m.settle()
                else:
                    ran += self.cluster.settle()
                    if self._fire_overdue(target):
                        continue
                    ran += self.karpenter.settle(limit=1)
            except LivelockError as e:
                self.halted = str(e)
                self.observer.note(f"the simulation stopped early: {e}")
                return
            if ran and self.charge is None:
                continue  # time has not moved: only timers move it
            now = self.clock.monotonic()
            if stop_when is not None and now != last_t:
                # with charged compute time moves inside a busy stretch too: a phase
                # waiting for a pod count ends when the count is reached, not when the
                # controllers next run out of work (at 5,000 nodes, minutes later)
                last_t = now
                if stop_when():
                    return
            if ran:
                continue
            nxt = self.clock.next_timer()
            if nxt is None or nxt > target:
                if now < target:
                    self.clock.run_until(target)
                    continue
                return
            # one timer at a time, like Manager.run_until: timers due at the same instant
            # still happen one after the other, each followed by what reacts to it (as
            # nodes "registering together" really do, milliseconds apart)
            self._step_timer()

    def _step_timer(self) -> None:
        """Fire the next timer; a failing callback is a note, not the end of the run."""
        try:
            self.clock.step()
        except Exception as e:
            log.warning("a timer failed: %s", e, exc_info=True)
            self.observer.note(f"a timer callback failed: {type(e).__name__}: {e}")

    def _fire_overdue(self, target: float) -> bool:
        """Fire one timer that fell due while a charged reconcile computed (due before now
        and not after ``target``); False when there is none."""
        nxt = self.clock.next_timer()
        if nxt is None or nxt >= self.clock.monotonic() or nxt > target:
            return False
        self._step_timer()
        return True

    def run(self, until: float | None = None, on_time: Callable[[], None] | None = None) -> Report:
        """Run to ``until`` seconds (default: the scenario's) and report.

        ``on_time`` is called each time virtual time moves (progress feedback: it may read
        :meth:`status`); it cannot change the run."""

        def tick() -> bool:
            assert on_time is not None
            on_time()
            return False

        offset = self.scenario.default_until() if until is None else until
        self.run_until(offset, stop_when=None if on_time is None else tick)
        return self.report()

    def status(self) -> RunStatus:
        """Where the run stands now: virtual seconds reached, pods waiting for a node,
        nodes up."""
        _, pending = self.observer.counts()
        nodes = sum(1 for n in self.observer.nodes.values() if n.gone is None)
        return RunStatus(self.observer.now(), pending, nodes)

    def report(self) -> Report:
        return build_report(
            self.observer,
            scenario=self.scenario.name,
            seed=self.seed,
            wall_seconds=time.perf_counter() - self.wall_started,
            recorded_events=self.recorder.events,
            controllers=self.registration.controllers,
            metrics=_counter_totals(self._metrics_before),
            controller_failures=self.controller_failures(),
            compute_charged=self.compute_charged(),
        )

    def compute_charged(self) -> ComputeCharged | None:
        """What charging compute time added to the run (None when it is off)."""
        if self.charge is None:
            return None
        return ComputeCharged(
            scale=self.charge.scale,
            total_seconds=self.charge.total_seconds,
            by_controller=self.charge.by_controller(),
        )

    def controller_failures(self) -> list[ControllerFailures]:
        """Every controller whose reconciles raised, Kubernetes' simulated ones and
        Karpenter's (counted over restarts), in name order."""
        totals: dict[str, ControllerFailures] = {}
        for c in (
            *self.cluster.controllers,
            *self._stopped_controllers,
            *self.karpenter.controllers,
        ):
            before = totals.get(c.name)
            reconciles = c.reconciles + (before.reconciles if before else 0)
            failures = c.errors + (before.failures if before else 0)
            if not failures:
                continue
            last = before.last_error if before else ""
            if c.last_error is not None:
                last = one_line(f"{type(c.last_error).__name__}: {c.last_error}", MAX_SHOWN_CHARS)
            totals[c.name] = ControllerFailures(c.name, reconciles, failures, last)
        return [totals[name] for name in sorted(totals)]


_SERVER_OWNED = frozenset(
    {"resourceVersion", "generation", "managedFields", "uid", "creationTimestamp"}
)
_MAX_VALUE_CHARS = 80
_UNSET = object()


def _name_of(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    name = str(meta.get("name"))
    return f"{meta['namespace']}/{name}" if meta.get("namespace") else name


def _invalid(obj: Any) -> str | None:
    """The first CRD validation error of a Karpenter object, or what the API server and
    the controllers would refuse in any other (None when valid): a patch must not leave an
    object that makes a controller fail on every reconcile."""
    from karpenter_core.apis.validation import is_supported, validate
    from karpenter_core.sim.scenario import manifest_problem

    if not isinstance(obj, Mapping):
        return None
    if not is_supported(obj):
        return manifest_problem(obj)
    errors = validate(obj)
    return str(errors[0]) if errors else None


def _show(value: Any) -> str:
    if value is _UNSET:
        return "(unset)"
    text = json.dumps(value, sort_keys=True, separators=(",", ":"))
    return text if len(text) <= _MAX_VALUE_CHARS else text[: _MAX_VALUE_CHARS - 3] + "..."


def object_changes(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """What a patch or replace changed, one ``path: old -> new`` per changed leaf (lists
    are leaves), leaving out status and the metadata the server maintains: the report
    says what the scenario changed, not the bookkeeping that followed."""
    out: list[str] = []

    def walk(a: Any, b: Any, path: str) -> None:
        # a mapping that appeared or vanished is walked too, so a new label reads as
        # ``...labels.rollout: (unset) -> "2"`` rather than as a whole new subtree
        if (isinstance(a, Mapping) or a is _UNSET) and (isinstance(b, Mapping) or b is _UNSET):
            sa = a if isinstance(a, Mapping) else {}
            sb = b if isinstance(b, Mapping) else {}
            found = len(out)
            for key in sorted(set(sa) | set(sb), key=str):
                here = f"{path}.{key}" if path else str(key)
                if here == "status" or (path == "metadata" and key in _SERVER_OWNED):
                    continue
                walk(sa.get(key, _UNSET), sb.get(key, _UNSET), here)
            if len(out) == found and (a is _UNSET) != (b is _UNSET):
                out.append(f"{path}: {_show(a)} -> {_show(b)}")  # an empty mapping
        elif a != b:
            out.append(f"{path}: {_show(a)} -> {_show(b)}")

    walk(old, new, "")
    return out


def simulate(
    scenario: Scenario,
    *,
    seed: int | None = None,
    until: float | None = None,
) -> Report:
    """Run ``scenario`` and return its report (the whole of ``karpenter simulate``)."""
    return Simulation(scenario, seed=seed).run(until)
