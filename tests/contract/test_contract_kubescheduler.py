"""The simulated kube-scheduler against the real one: the same nodes and pods, placed by
``karpenter_core/sim/kubescheduler.py`` on the in-memory API server and by kube-scheduler
v1.34.4 on the test control plane, must give the same verdicts.

How a case runs (cases: ``kubescheduler_cases.py``). Namespaces and nodes are created on
the real cluster, then on a fresh :class:`InMemoryApiServer` *as the real API server stored
them* (after its defaulting and admission), so both schedulers read identical objects. A
canary pod waits until kube-scheduler's caches hold the case's nodes as written. Then the
pods go one at a time, in order; for each, kube-scheduler decides first (bound, or
``PodScheduled=False``), and then the simulation on the same state:

* kube-scheduler bound it to node N: the simulation's filters must pass N. Where N is the
  only node they pass, the simulation must bind the pod there itself; where several pass,
  the real choice is replayed on the in-memory server (scoring is not modelled, below);
* kube-scheduler found it Unschedulable: the simulation must not bind it, and must write
  the same message (which counts every node's first failing filter), up to the PostFilter
  text below; the pod is then deleted on both sides;
* the pod is gated: both must say ``SchedulingGated`` with the same message; a later step
  lifts the gates and the pod is compared again.

Between pods a case may change a node (labels, taints, cordon) or delete an earlier pod (at
once, or gracefully: a bound pod then stays, terminating, as no kubelet ends it), on both
sides alike; a node change carries a sync label, and a pod selecting it shows when
kube-scheduler's cache has the change.

Both clusters therefore hold the same bound pods at every step, and every verdict is
compared on identical inputs.

**Known approximations, declared here and excluded exactly:**

1. *No preemption.* kube-scheduler appends its PostFilter plugins' text to the message
   (DynamicResources' ``no new claims to deallocate``, DefaultPreemption's ``preemption:
   0/N nodes are available: ...``); the simulation stops after the filters' part. Every pod
   here has the same priority, so preemption never has a victim to evict; the test checks
   that what follows the filters' part is exactly that PostFilter text and compares the rest.
2. *Scoring.* The simulation scores by NodeResourcesFit alone; kube-scheduler adds
   balanced allocation, image locality and the preferred taint, node-affinity, pod-affinity
   and spread scores. Where several nodes pass the filters the choice is not compared (it
   is replayed); where one does, it is.
3. *No volumes, no DRA.* The cases declare no volumes and no resource claims (the
   simulation has no volume binding, zone, limit or restriction filters and no
   DynamicResources).
4. *Queueing.* The simulation retries every pending pod on every pass; kube-scheduler
   backs pods off and requeues them on cluster events. The test settles each pod before
   the next and deletes pods that stay unschedulable, so retry timing is not compared,
   nor queue order (no two pods are pending at once).
5. *NotReady nodes.* The simulation counts a NotReady node as tainted
   ``node.kubernetes.io/not-ready`` (the node lifecycle controller's work, which this
   control plane does not run); the cases' nodes are Ready.

One control plane for the module (etcd, kube-apiserver and kube-scheduler, no
kube-controller-manager: nothing here needs it, and its node lifecycle loop would act on
the kubelet-less nodes). The cases run one after another, each with its own namespaces
and node names, cleaned up after. The default run takes the hand-written cases and a
first range of seeds (about a minute); ``-m slow`` runs a larger range.
"""

from __future__ import annotations

import contextlib
import re
import sys
import time
import uuid
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from kubescheduler_cases import (
    Case,
    DeleteStep,
    NodeStep,
    PodStep,
    UngateStep,
    focused_cases,
    generated_case,
)

from karpenter_core.kube.adapter import KubernetesClient
from karpenter_core.kube.client import ApiError, NotFound, Obj
from karpenter_core.runtime.clock import VirtualClock
from karpenter_core.sim.apiserver import InMemoryApiServer
from karpenter_core.sim.kubescheduler import KubeScheduler

_INTEGRATION = str(Path(__file__).resolve().parents[1] / "integration")
if _INTEGRATION not in sys.path:
    sys.path.insert(0, _INTEGRATION)
import controlplane  # noqa: E402  (tests/integration/controlplane.py)

pytestmark = pytest.mark.controlplane

DEFAULT_SEEDS = range(0, 60)
SLOW_SEEDS = range(60, 360)
SETTLE_TIMEOUT = 30.0

# What kube-scheduler appends after the filters' part of the message (approximation 1):
# DynamicResources' and DefaultPreemption's PostFilter texts; after a PreFilter rejection,
# DynamicResources' error for its missing PreFilter state ("not found") instead.
_POSTFILTER = re.compile(
    r"(?:no new claims to deallocate, )?preemption: 0/\d+ nodes are available: [^.]+\."
    r"|not found"
)
_REASON = re.compile(r"(\d+) ([^,]+)")
_HANDLED = re.compile(r'scheduler_event_handling_duration_seconds_count\{event="(\w+)"\} (\S+)')
_CANARY_LABEL = "contract.karpenter.sh/canary"
_SYNC_LABEL = "contract.karpenter.sh/sync"
_AFFINITY = "node(s) didn't match Pod's node affinity/selector"


# --------------------------------------------------------------------------- the real side


class RealCluster:
    """The test control plane with kube-scheduler, and the waits the lockstep needs."""

    def __init__(self, cp: controlplane.ControlPlane) -> None:
        self.cp = cp
        self.kube = KubernetesClient.from_kubeconfig(str(cp.kubeconfig), qps=0)
        # Deletions of bound pods and of nodes so far: kube-scheduler has handled them all
        # once its counts of those events reach these (nothing else deletes either here).
        self.deleted: Counter[str] = Counter()

    def create_node(self, manifest: Mapping[str, Any]) -> Obj:
        """Create a node as a kubelet registers one (status included), then write its
        taints: the API server adds ``node.kubernetes.io/not-ready`` to every new node,
        which only the node lifecycle controller would lift."""
        self.kube.create(manifest)
        taints = (manifest.get("spec") or {}).get("taints") or None
        return self.kube.patch("nodes", manifest["metadata"]["name"], {"spec": {"taints": taints}})

    def wait_for_nodes(self, namespace: str, nodes: list[Obj]) -> None:
        """Wait until kube-scheduler's cache holds ``nodes`` as written: a pod that fits
        nowhere must get the message these nodes give, computed here from their spec (a
        stale cache shows another count or the not-ready taint)."""
        counts: Counter[str] = Counter()
        for n in nodes:
            spec = n.get("spec") or {}
            if spec.get("unschedulable"):
                counts["node(s) were unschedulable"] += 1
            elif any(t.get("effect") != "PreferNoSchedule" for t in spec.get("taints") or []):
                counts["node(s) had untolerated taint(s)"] += 1
            else:
                counts["node(s) didn't match Pod's node affinity/selector"] += 1
        reasons = ", ".join(sorted(f"{c} {r}" for r, c in counts.items()))
        expected = f"0/{len(nodes)} nodes are available: {reasons}."
        seen = ""
        deadline = time.monotonic() + SETTLE_TIMEOUT
        for attempt in range(10_000):
            name = f"canary-{attempt}"
            self.kube.create(
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {"name": name, "namespace": namespace},
                    "spec": {
                        "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}],
                        "nodeSelector": {_CANARY_LABEL: "nowhere"},
                    },
                }
            )
            settled = self.settle(namespace, name)
            self.remove_pod(namespace, name, bound=verdict(settled)[0] == "bound")
            seen = filters_part(verdict(settled)[1])[0]
            if seen == expected:
                return
            if time.monotonic() > deadline:
                break
            time.sleep(0.05)
        raise AssertionError(
            f"kube-scheduler did not see the case's nodes: expected {expected!r}, last {seen!r}"
        )

    def wait_for_node_change(self, namespace: str, node_name: str, sync: str, nodes: int) -> None:
        """Wait until kube-scheduler's cache holds a node change that came with
        ``_SYNC_LABEL: sync``: a pod selecting that label and tolerating everything is
        then bound to the node, or fails there for want of room, not on its selector."""
        deadline = time.monotonic() + SETTLE_TIMEOUT
        seen = ""
        for attempt in range(10_000):
            name = f"sync-{sync}-{attempt}"
            self.kube.create(
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {"name": name, "namespace": namespace},
                    "spec": {
                        "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}],
                        "nodeSelector": {_SYNC_LABEL: sync},
                        "tolerations": [{"operator": "Exists"}],
                        "terminationGracePeriodSeconds": 0,
                    },
                }
            )
            kind, seen = verdict(self.settle(namespace, name))
            self.remove_pod(namespace, name, bound=kind == "bound")
            if kind == "bound":
                assert seen == node_name, f"the sync pod went to {seen}, not {node_name}"
                return
            if reason_counts(seen).get(_AFFINITY, 0) == nodes - 1:
                return
            if time.monotonic() > deadline:
                break
            time.sleep(0.05)
        raise AssertionError(f"kube-scheduler did not see the change of {node_name}: {seen!r}")

    def get_pod(self, namespace: str, name: str) -> Obj | None:
        try:
            return self.kube.get("pods", name, namespace)
        except NotFound:
            return None

    def settle(self, namespace: str, name: str, *, gated: bool = False) -> Obj:
        """The pod once kube-scheduler has decided: bound, or ``PodScheduled=False`` with
        reason Unschedulable (or SchedulingGated, the API server's, when ``gated``)."""
        deadline = time.monotonic() + SETTLE_TIMEOUT
        while True:
            obj = self.kube.get("pods", name, namespace)
            if (obj.get("spec") or {}).get("nodeName"):
                return obj
            condition = pod_scheduled(obj)
            if condition is not None and condition.get("status") == "False":
                reason = condition.get("reason")
                if reason == "Unschedulable" or (gated and reason == "SchedulingGated"):
                    return obj
            if time.monotonic() > deadline:
                log = next(p for p in self.cp.processes if p.name == "kube-scheduler")
                raise AssertionError(
                    f"kube-scheduler did not decide on {namespace}/{name} within "
                    f"{SETTLE_TIMEOUT:.0f}s: {obj.get('status')}; its log ends:\n{log.log_tail()}"
                )
            time.sleep(0.005)

    def handled(self) -> Counter[str]:
        """How many events of each kind kube-scheduler's handlers have finished (its
        ``scheduler_event_handling_duration_seconds`` counts)."""
        return Counter(
            {
                event: int(float(count))
                for event, count in _HANDLED.findall(self.cp.scheduler_metrics())
            }
        )

    def wait_handled(self, event: str, count: int) -> None:
        """Wait until kube-scheduler has handled ``count`` ``event`` events in all. A
        deleted (or now terminating) bound pod reaches its cache through another handler
        than a new pending pod does, so without this the next pod may be scheduled against
        the old state."""
        deadline = time.monotonic() + SETTLE_TIMEOUT
        while (handled := self.handled()[event]) < count:
            if time.monotonic() > deadline:
                raise AssertionError(f"kube-scheduler handled {handled} {event}, not {count}")
            time.sleep(0.005)

    def delete_pod(self, namespace: str, name: str, grace: int, *, bound: bool) -> None:
        """Delete a pod; when it was bound, wait until kube-scheduler's cache has the
        change (gone, or terminating after a graceful delete)."""
        if bound and grace:
            before = self.handled()["AssignedPodUpdate"]
            self.kube.delete("pods", name, namespace, grace_period_seconds=grace)
            self.wait_handled("AssignedPodUpdate", before + 1)
            return
        with contextlib.suppress(NotFound):
            self.kube.delete("pods", name, namespace, grace_period_seconds=0)
        if bound:
            self.deleted["AssignedPodDelete"] += 1
            self.wait_handled("AssignedPodDelete", self.deleted["AssignedPodDelete"])

    def remove_pod(self, namespace: str, name: str, *, bound: bool = False) -> None:
        self.delete_pod(namespace, name, 0, bound=bound)

    def clean(self, case: Case) -> None:
        """Delete the case's pods, nodes and namespaces, and wait until kube-scheduler has
        seen the pods and nodes go (the namespaces stay Terminating: no namespace
        controller runs; nothing is left in them)."""
        for ns in case.namespaces:
            name = ns["metadata"]["name"]
            with contextlib.suppress(NotFound):
                for obj in self.kube.list("pods", namespace=name):
                    with contextlib.suppress(NotFound):
                        self.kube.delete(
                            "pods", obj["metadata"]["name"], name, grace_period_seconds=0
                        )
                        if (obj.get("spec") or {}).get("nodeName"):
                            self.deleted["AssignedPodDelete"] += 1
        for n in case.nodes:
            with contextlib.suppress(NotFound):
                self.kube.delete("nodes", n["metadata"]["name"])
                self.deleted["NodeDelete"] += 1
        for event in ("AssignedPodDelete", "NodeDelete"):
            self.wait_handled(event, self.deleted[event])
        for ns in case.namespaces:
            with contextlib.suppress(NotFound):
                self.kube.delete("namespaces", ns["metadata"]["name"])


@pytest.fixture(scope="module")
def real() -> Iterator[RealCluster]:
    if controlplane.skip_requested():
        pytest.skip(f"{controlplane.SKIP_ENV} is set: real-control-plane tests skipped")
    try:
        binaries = controlplane.ensure_binaries(log=lambda m: print(m, file=sys.stderr))
        cp = controlplane.ControlPlane(binaries, controller_manager=False, scheduler=True)
        cp.start()
    except controlplane.ControlPlaneError as e:
        controlplane.unavailable(e)
    try:
        yield RealCluster(cp)
    finally:
        cp.stop()


# --------------------------------------------------------------------------- verdicts


def pod_scheduled(obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    conditions: list[Mapping[str, Any]] = (obj.get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c.get("type") == "PodScheduled"), None)


def verdict(obj: Mapping[str, Any]) -> tuple[str, str]:
    """("bound", node), ("Unschedulable", message), ("SchedulingGated", message) or
    ("pending", "")."""
    node_name = (obj.get("spec") or {}).get("nodeName")
    if node_name:
        return "bound", str(node_name)
    condition = pod_scheduled(obj)
    if condition is None or condition.get("status") != "False":
        return "pending", ""
    return str(condition.get("reason")), str(condition.get("message") or "")


def filters_part(message: str) -> tuple[str, str]:
    """kube-scheduler's message split after the filters' part: ``0/N nodes are available:
    <counts>.`` and what the PostFilter plugins appended. No reason contains ". "."""
    head, sep, tail = message.partition(". ")
    return (head + ".", tail) if sep else (message, "")


def reason_counts(message: str) -> dict[str, int]:
    """The per-reason node counts of a ``0/N nodes are available: ...`` message."""
    counts = filters_part(message)[0].partition(": ")[2].removesuffix(".")
    return {reason: int(count) for count, reason in _REASON.findall(counts)}


def as_stored(obj: Mapping[str, Any], *, status: bool) -> dict[str, Any]:
    """``obj`` as the real API server stored it, without what a server assigns on create
    (uid, resourceVersion, timestamps, managed fields) and, for pods, without the status
    kube-scheduler (or the API server) wrote: the simulation must write its own."""
    meta = obj.get("metadata") or {}
    out: dict[str, Any] = {
        "apiVersion": obj["apiVersion"],
        "kind": obj["kind"],
        "metadata": {
            k: meta[k] for k in ("name", "namespace", "labels", "annotations") if k in meta
        },
    }
    if "spec" in obj:
        out["spec"] = obj["spec"]
    if status and "status" in obj:
        out["status"] = obj["status"]
    return out


# --------------------------------------------------------------------------- lockstep


@dataclass
class Tally:
    """What a run compared, so a generator that lost its reach shows up."""

    forced: int = 0  # one node passed the filters: the simulation bound it there itself
    replayed: int = 0  # several passed; kube-scheduler's choice was among them
    unschedulable: int = 0
    gated: int = 0
    deleted: int = 0
    node_changes: int = 0
    reasons: Counter[str] = field(default_factory=Counter)

    def add(self, other: Tally) -> None:
        self.forced += other.forced
        self.replayed += other.replayed
        self.unschedulable += other.unschedulable
        self.gated += other.gated
        self.deleted += other.deleted
        self.node_changes += other.node_changes
        self.reasons.update(other.reasons)


class Lockstep:
    """One case on both sides; ``disagreements`` says what differed."""

    def __init__(self, real: RealCluster, case: Case) -> None:
        self.real = real
        self.case = case
        self.clock = VirtualClock()
        self.memory = InMemoryApiServer(self.clock, seed=1)
        self.sim = KubeScheduler(self.memory, self.clock)
        self.disagreements: list[str] = []
        self.tally = Tally()

    def run(self) -> None:
        for ns in self.case.namespaces:
            self.memory.create(as_stored(self.real.kube.create(ns), status=False))
        nodes = [self.real.create_node(n) for n in self.case.nodes]
        for n in nodes:
            self.memory.create(as_stored(n, status=True))
        first_namespace = self.case.namespaces[0]["metadata"]["name"]
        self.real.wait_for_nodes(first_namespace, nodes)
        for index, step in enumerate(self.case.steps):
            if isinstance(step, NodeStep):
                sync = str(index)
                patch = {**step.patch}
                patch["metadata"] = {
                    **(patch.get("metadata") or {}),
                    "labels": {
                        **(patch.get("metadata") or {}).get("labels", {}),
                        _SYNC_LABEL: sync,
                    },
                }
                self.real.kube.patch("nodes", step.name, patch)
                self.memory.patch("nodes", step.name, patch)
                self.real.wait_for_node_change(first_namespace, step.name, sync, len(nodes))
                self.tally.node_changes += 1
                continue
            if isinstance(step, PodStep):
                namespace, name = step.key
                created = self.real.kube.create(step.pod)
                self.memory.create(as_stored(created, status=False))
                gated = bool((created.get("spec") or {}).get("schedulingGates"))
                settled = self.real.settle(namespace, name, gated=gated)
            else:
                namespace, name = step.namespace, step.name
                current = self.real.get_pod(namespace, name)
                if current is None:
                    continue  # it stayed unschedulable and was removed
                if isinstance(step, DeleteStep):
                    if current["metadata"].get("deletionTimestamp"):
                        continue  # already terminating: a second delete changes nothing
                    bound = verdict(current)[0] == "bound"
                    self.real.delete_pod(namespace, name, step.grace, bound=bound)
                    self.memory.delete("pods", name, namespace, grace_period_seconds=step.grace)
                    self.tally.deleted += 1
                    continue
                assert isinstance(step, UngateStep), step
                lift = {"spec": {"schedulingGates": None}}
                self.real.kube.patch("pods", name, lift, namespace)
                self.memory.patch("pods", name, lift, namespace)
                settled = self.real.settle(namespace, name)
            if not self.compare(namespace, name, settled):
                return  # the two clusters now differ: later steps would compare nothing

    def _differ(self, namespace: str, name: str, what: str) -> None:
        self.disagreements.append(f"{self.case.name}: pod {namespace}/{name}: {what}")

    def compare(self, namespace: str, name: str, settled: Obj) -> bool:
        """Compare one pod's verdicts; False when the clusters no longer match."""
        real_kind, real_value = verdict(settled)
        if real_kind == "SchedulingGated":
            self.sim.reconcile()
            sim_kind, sim_value = verdict(self.memory.get("pods", name, namespace))
            self.tally.gated += 1
            if (sim_kind, sim_value) != (real_kind, real_value):
                self._differ(
                    namespace,
                    name,
                    f"kube-scheduler: {real_kind} {real_value!r}; "
                    f"simulation: {sim_kind} {sim_value!r}",
                )
            return sim_kind != "bound"
        pending = self.memory.get("pods", name, namespace)
        reasons = self.sim.feasibility(pending)
        feasible = sorted(n for n, r in reasons.items() if not r)
        if real_kind == "bound":
            return self._compare_bound(namespace, name, real_value, feasible, reasons)
        assert real_kind == "Unschedulable", settled
        return self._compare_unschedulable(namespace, name, real_value, feasible)

    def _compare_bound(
        self,
        namespace: str,
        name: str,
        node_name: str,
        feasible: list[str],
        reasons: Mapping[str, tuple[str, ...]],
    ) -> bool:
        if node_name not in feasible:
            self._differ(
                namespace,
                name,
                f"kube-scheduler bound it to {node_name}; the simulation's filters reject "
                f"that node ({', '.join(reasons.get(node_name, ('unknown node',)))}); they "
                f"pass {feasible or 'no node'}",
            )
            return False
        if feasible == [node_name]:
            self.sim.reconcile()
            sim_kind, sim_value = verdict(self.memory.get("pods", name, namespace))
            if (sim_kind, sim_value) != ("bound", node_name):
                self._differ(
                    namespace,
                    name,
                    f"kube-scheduler bound it to {node_name}, the one node the simulation's "
                    f"filters pass; the simulation's pass left it {sim_kind} {sim_value!r}",
                )
                return False
            self.tally.forced += 1
        else:
            self.memory.bind(name, namespace, node_name)  # scoring: approximation 2
            self.tally.replayed += 1
        return True

    def _compare_unschedulable(
        self, namespace: str, name: str, message: str, feasible: list[str]
    ) -> bool:
        expected, postfilter = filters_part(message)
        if postfilter and _POSTFILTER.fullmatch(postfilter) is None:
            self._differ(namespace, name, f"unexpected text after the filters: {message!r}")
        self.sim.reconcile()
        sim_kind, sim_value = verdict(self.memory.get("pods", name, namespace))
        self.tally.unschedulable += 1
        # the reasons counted per node, or a PreFilter's verdict on the whole pod
        self.tally.reasons.update(reason_counts(expected) or [expected.partition(": ")[2]])
        in_step = True
        if sim_kind != "Unschedulable" or sim_value != expected or feasible:
            self._differ(
                namespace,
                name,
                f"kube-scheduler: Unschedulable {expected!r}; simulation: {sim_kind} "
                f"{sim_value!r} (its filters pass {feasible or 'no node'})",
            )
            in_step = sim_kind != "bound"
        # Unschedulable pods leave both clusters (approximation 4).
        self.real.remove_pod(namespace, name)
        self.memory.delete("pods", name, namespace, grace_period_seconds=0)
        return in_step


def run_cases(real: RealCluster, cases: list[Case]) -> tuple[list[str], Tally]:
    disagreements: list[str] = []
    tally = Tally()
    for case in cases:
        lockstep = Lockstep(real, case)
        try:
            lockstep.run()
        finally:
            with contextlib.suppress(ApiError):
                real.clean(case)
        disagreements += lockstep.disagreements
        tally.add(lockstep.tally)
    return disagreements, tally


def _prefix() -> str:
    return f"ks{uuid.uuid4().hex[:5]}"


def _check(disagreements: list[str], tally: Tally, cases: int, started: float) -> None:
    print(
        f"kube-scheduler contract: {cases} cases in {time.monotonic() - started:.1f}s; "
        f"{tally.forced} forced bindings, {tally.replayed} replayed, {tally.unschedulable} "
        f"unschedulable messages, {tally.gated} gated, {tally.deleted} deletions, "
        f"{tally.node_changes} node changes; reasons {dict(tally.reasons)}"
    )
    assert not disagreements, (
        f"{len(disagreements)} disagreements with kube-scheduler:\n" + "\n".join(disagreements)
    )


# The filters' reasons the generated cases must reach for the comparison to mean something.
EXPECTED_REASONS = {
    "Insufficient cpu",
    "Insufficient memory",
    "Too many pods",
    "node(s) had untolerated taint(s)",
    "node(s) didn't match Pod's node affinity/selector",
    "node(s) were unschedulable",
    "node(s) didn't match pod topology spread constraints",
    "node(s) didn't match pod affinity rules",
    "node(s) didn't match pod anti-affinity rules",
    "node(s) didn't satisfy existing pods anti-affinity rules",
    "node(s) didn't match pod topology spread constraints (missing required label)",
    "node(s) didn't satisfy plugin(s) [NodeAffinity]",
    "node(s) didn't have free ports for the requested pod ports",
    "Insufficient example.com/dongle",
    "Insufficient ephemeral-storage",
    "pod affinity terms conflict.",
}


def test_the_simulated_kube_scheduler_decides_as_the_real_one(real: RealCluster) -> None:
    started = time.monotonic()
    prefix = _prefix()
    cases = focused_cases(f"{prefix}f") + [
        generated_case(seed, f"{prefix}s{seed}") for seed in DEFAULT_SEEDS
    ]
    disagreements, tally = run_cases(real, cases)
    _check(disagreements, tally, len(cases), started)
    assert tally.forced and tally.replayed and tally.unschedulable and tally.gated, tally
    assert tally.deleted and tally.node_changes, tally
    missing = EXPECTED_REASONS - set(tally.reasons)
    assert not missing, f"the cases never reached {sorted(missing)}"


@pytest.mark.slow
def test_many_more_generated_cases(real: RealCluster) -> None:
    started = time.monotonic()
    prefix = _prefix()
    cases = [generated_case(seed, f"{prefix}s{seed}") for seed in SLOW_SEEDS]
    disagreements, tally = run_cases(real, cases)
    _check(disagreements, tally, len(cases), started)
