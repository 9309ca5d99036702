"""A simulated kubelet, KWOK style: nodes become Ready and pods run, on the clock.

KWOK Nodes have no kubelet; the KWOK controller fakes one. In ``karpenter simulate`` this
module plays that part for every node (or only nodes carrying an annotation, like
KWOK's ``--manage-nodes-with-annotation-selector``):

- **Nodes**: ``node_ready_delay`` seconds after the kubelet first sees a Node, it reports
  ``Ready=True`` (reason ``KubeletReady``) with the pressure conditions False, phase
  ``Running``, ``nodeInfo``, and ``allocatable`` (its capacity when the Node had none).
  It never touches what Karpenter owns: labels, the ``karpenter.sh/unregistered`` taint,
  startup taints, finalizers.
- **Startup taints**: left alone, unless a :class:`StartupTaintRemover` names one; it then
  removes that taint ``delay`` seconds after first seeing it on a Ready node, as a CNI or
  a node daemon would.
- **Pods**: ``pod_start_delay`` seconds after a pod is bound to a Ready node, it is
  ``Running`` and Ready (containers started, ``startTime`` set). A pod annotated with
  ``sim.karpenter.sh/run-seconds`` (seconds or a duration such as ``90s``) finishes that
  long after it started: phase ``Succeeded``, containers terminated with exit code 0 —
  how a Job's pods end.
- **Deletion**: a bound pod with a ``deletionTimestamp`` (the API server stamps
  now + ``terminationGracePeriodSeconds``) is removed when that moment comes, or
  ``termination_seconds`` after the deletion was seen if that is sooner (a process that
  exits promptly on SIGTERM); a pod that never started goes at once.
- **Orphans**: a pod bound to a Node that no longer exists is deleted after
  ``orphan_pod_gc_delay`` seconds (kube-controller-manager's pod GC, 40 s quarantine).

- **Failure**: :meth:`Kubelet.fail_node` silences one node's kubelet. Its status then
  reads as the node lifecycle controller leaves a node whose kubelet stopped posting:
  every kubelet condition ``Unknown``, reason ``NodeStatusUnknown``, "Kubelet stopped
  posting node status.". From then on nothing makes that node Ready or removes its
  taints, and its pods are no longer started, finished or removed when deleted (they
  stay Terminating, as on a real dead node); pods left bound after the Node object is
  deleted are still collected as orphans, which is kube-controller-manager's work. A
  Node created later under the same name is a new machine and is managed again.

Everything waits with ``Result(requeue_after=...)`` on the controller clock; nothing
sleeps. Not simulated: heartbeats (``lastHeartbeatTime`` is written once), node
pressure, probes and restarts, NoExecute taint eviction, images, volumes.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Hashable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from attrs import field, frozen

from karpenter_core.apis.durations import DurationError, parse_go_duration
from karpenter_core.kube.client import ApiError, KubeClient, NotFound, shared_get, shared_patch
from karpenter_core.runtime.clock import Clock, format_time, parse_time
from karpenter_core.runtime.reconciler import ObjectKey, Result, Watch, key_of

if TYPE_CHECKING:
    from karpenter_core.runtime.context import ControllerContext
    from karpenter_core.runtime.manager import Manager

__all__ = [
    "NODE_CONTROLLER_NAME",
    "POD_CONTROLLER_NAME",
    "RUN_SECONDS_ANNOTATION",
    "Kubelet",
    "KubeletOptions",
    "StartupTaintRemover",
    "register",
]

log = logging.getLogger("karpenter.sim.kubelet")

NODE_CONTROLLER_NAME = "sim.kubelet.node"
POD_CONTROLLER_NAME = "sim.kubelet.pod"
RUN_SECONDS_ANNOTATION = "sim.karpenter.sh/run-seconds"
DEFAULT_KUBELET_VERSION = "v1.33.0"
_PRESSURE_CONDITIONS = (
    ("MemoryPressure", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
    ("DiskPressure", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
    ("PIDPressure", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
)


def _non_negative(_instance: object, attribute: Any, value: float | None) -> None:
    if value is not None and (not math.isfinite(value) or value < 0):
        raise ValueError(f"{attribute.name} must be a non-negative number of seconds, got {value}")


@frozen
class StartupTaintRemover:
    """Removes taint ``key`` (of ``effect``, any when None) ``delay`` seconds after first
    seeing it on a Ready node."""

    key: str
    delay: float = field(default=0.0, validator=_non_negative)
    effect: str | None = None


def _removers(value: Iterable[StartupTaintRemover]) -> tuple[StartupTaintRemover, ...]:
    return tuple(value)


@frozen
class KubeletOptions:
    """Timings of the simulated kubelet (seconds). ``manage_annotation``: only nodes with
    this annotation ``(key, value)`` are managed; None manages every node."""

    node_ready_delay: float = field(default=0.0, validator=_non_negative)
    pod_start_delay: float = field(default=0.0, validator=_non_negative)
    termination_seconds: float | None = field(default=None, validator=_non_negative)
    orphan_pod_gc_delay: float = field(default=40.0, validator=_non_negative)
    startup_taint_removers: tuple[StartupTaintRemover, ...] = field(default=(), converter=_removers)
    manage_annotation: tuple[str, str] | None = None
    kubelet_version: str = DEFAULT_KUBELET_VERSION


def run_seconds(pod: Mapping[str, Any]) -> float | None:
    """The pod's ``sim.karpenter.sh/run-seconds``, or None (absent or malformed; a
    malformed value is logged and ignored so a typo cannot stall the simulation)."""
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    raw = annotations.get(RUN_SECONDS_ANNOTATION)
    if raw is None:
        return None
    text = str(raw).strip()
    try:
        value = float(text)
    except ValueError:
        try:
            value = parse_go_duration(text) / 1e9
        except DurationError:
            value = -1.0
    if not math.isfinite(value) or value < 0:
        log.warning(
            "kubelet: pod %s: annotation %s=%r is not a duration; ignored",
            _pod_name(pod),
            RUN_SECONDS_ANNOTATION,
            raw,
        )
        return None
    return value


def _pod_name(pod: Mapping[str, Any]) -> str:
    meta = pod.get("metadata") or {}
    return f"{meta.get('namespace', 'default')}/{meta.get('name', '')}"


def _is_ready(node: Mapping[str, Any]) -> bool:
    return any(
        isinstance(c, Mapping) and c.get("type") == "Ready" and c.get("status") == "True"
        for c in (node.get("status") or {}).get("conditions") or []
    )


def _heartbeat(conditions: Iterable[Any], kind: str) -> str | None:
    """The last heartbeat a condition recorded: a silent kubelet posts no newer one."""
    for c in conditions:
        if isinstance(c, Mapping) and c.get("type") == kind and c.get("lastHeartbeatTime"):
            return str(c["lastHeartbeatTime"])
    return None


def _replace_conditions(
    existing: Iterable[Any], updates: Iterable[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    new = {str(u["type"]): dict(u) for u in updates}
    out = []
    for c in existing:
        if not isinstance(c, Mapping):
            continue
        kind = str(c.get("type"))
        if kind in new:
            update = new.pop(kind)
            if c.get("status") == update.get("status") and c.get("lastTransitionTime"):
                update["lastTransitionTime"] = c["lastTransitionTime"]
            out.append(update)
        else:
            out.append(dict(c))
    out.extend(new.values())
    return out


class Kubelet:
    """Both reconcilers (nodes keyed by name, pods by namespace/name) and their memory of
    when things were first seen."""

    def __init__(
        self, kube: KubeClient, clock: Clock, options: KubeletOptions | None = None
    ) -> None:
        self.kube = kube
        self.clock = clock
        self.options = options or KubeletOptions()
        self._node_seen: dict[str, float] = {}
        self._taint_seen: dict[tuple[str, str, str], float] = {}
        # Per pod (namespace/name): when first seen bound to a Ready node, made Running,
        # seen deleting, seen orphaned.
        self._pod_seen: dict[str, float] = {}
        self._started: dict[str, float] = {}
        self._deleting_seen: dict[str, float] = {}
        self._orphan_seen: dict[str, float] = {}
        # Nodes whose kubelet fail_node() silenced: name -> uid, so that a later Node of
        # the same name (a new machine) is managed again.
        self._failed: dict[str, str] = {}
        self.node_reconciler = _NodeReconciler(self)
        self.pod_reconciler = _PodReconciler(self)

    def fail_node(self, name: str) -> None:
        """Silence node ``name``'s kubelet (see the module docstring): report its
        conditions Unknown now and leave the node and its pods alone from here on."""
        try:
            node = self.kube.get("nodes", name)
        except NotFound:
            return  # no node, no kubelet to silence
        meta = node.get("metadata") or {}
        self._failed[name] = str(meta.get("uid") or "")
        self._node_seen.pop(name, None)
        for k in [k for k in self._taint_seen if k[0] == name]:
            del self._taint_seen[k]
        stamp = format_time(self.clock.now())
        conditions = (node.get("status") or {}).get("conditions") or []
        kinds = {"Ready", *(k for k, _, _ in _PRESSURE_CONDITIONS)}
        kinds.update(str(c.get("type")) for c in conditions if isinstance(c, Mapping))
        updates = [
            {
                "type": kind,
                "status": "Unknown",
                "reason": "NodeStatusUnknown",
                "message": "Kubelet stopped posting node status.",
                "lastHeartbeatTime": _heartbeat(conditions, kind) or stamp,
                "lastTransitionTime": stamp,
            }
            for kind in sorted(kinds)
        ]
        try:
            self.kube.patch(
                "nodes",
                name,
                {"status": {"conditions": _replace_conditions(conditions, updates)}},
                subresource="status",
            )
        except ApiError as e:
            log.info("kubelet: marking node %s unknown failed: %s", name, e)

    def failed(self, node: Mapping[str, Any]) -> bool:
        """The node's kubelet was silenced by :meth:`fail_node`."""
        meta = node.get("metadata") or {}
        uid = self._failed.get(str(meta.get("name") or ""))
        return uid is not None and uid in ("", str(meta.get("uid") or ""))

    def manages(self, node: Mapping[str, Any]) -> bool:
        if self._failed and self.failed(node):
            return False
        wanted = self.options.manage_annotation
        if wanted is None:
            return True
        annotations = (node.get("metadata") or {}).get("annotations") or {}
        return bool(annotations.get(wanted[0]) == wanted[1])

    def _now(self) -> float:
        return self.clock.monotonic()

    @staticmethod
    def _wait(since: float, delay: float, now: float) -> float:
        """Seconds still to wait (0 when due)."""
        return max(0.0, since + delay - now)

    # ------------------------------------------------------------------ nodes

    def reconcile_node(self, key: ObjectKey) -> Result:
        try:
            node = self.kube.get("nodes", key.name)
        except NotFound:
            self._node_seen.pop(key.name, None)
            self._failed.pop(key.name, None)  # that machine is gone for good
            for k in [k for k in self._taint_seen if k[0] == key.name]:
                del self._taint_seen[k]
            return Result()
        if not self.manages(node) or (node.get("metadata") or {}).get("deletionTimestamp"):
            return Result()
        now = self._now()
        if not _is_ready(node):
            seen = self._node_seen.setdefault(key.name, now)
            wait = self._wait(seen, self.options.node_ready_delay, now)
            if wait > 0:
                return Result.after(wait)
            self._make_ready(node)
            return Result()
        return self._remove_startup_taints(node, now)

    def _make_ready(self, node: Mapping[str, Any]) -> None:
        status = node.get("status") or {}
        labels = (node.get("metadata") or {}).get("labels") or {}
        stamp = format_time(self.clock.now())

        def condition(kind: str, value: str, reason: str, message: str) -> dict[str, Any]:
            return {
                "type": kind,
                "status": value,
                "reason": reason,
                "message": message,
                "lastHeartbeatTime": stamp,
                "lastTransitionTime": stamp,
            }

        updates = [condition(k, "False", r, m) for k, r, m in _PRESSURE_CONDITIONS]
        updates.append(
            condition("Ready", "True", "KubeletReady", "kubelet is posting ready status")
        )
        patch: dict[str, Any] = {
            "conditions": _replace_conditions(status.get("conditions") or [], updates),
            "phase": "Running",
            "nodeInfo": {
                **(status.get("nodeInfo") or {}),
                "architecture": labels.get("kubernetes.io/arch", "amd64"),
                "operatingSystem": labels.get("kubernetes.io/os", "linux"),
                "kubeletVersion": self.options.kubelet_version,
                "kubeProxyVersion": self.options.kubelet_version,
            },
        }
        if not status.get("allocatable") and status.get("capacity"):
            patch["allocatable"] = dict(status["capacity"])
        name = str(node["metadata"]["name"])
        try:
            self.kube.patch("nodes", name, {"status": patch}, subresource="status")
        except NotFound:
            return
        self._node_seen.pop(name, None)

    def _remove_startup_taints(self, node: Mapping[str, Any], now: float) -> Result:
        removers = self.options.startup_taint_removers
        if not removers:
            return Result()
        name = str(node["metadata"]["name"])
        taints = [t for t in (node.get("spec") or {}).get("taints") or [] if isinstance(t, Mapping)]
        keep: list[Mapping[str, Any]] = []
        soonest: float | None = None
        removed = False
        for taint in taints:
            remover = next(
                (
                    r
                    for r in removers
                    if r.key == taint.get("key") and r.effect in (None, taint.get("effect"))
                ),
                None,
            )
            if remover is None:
                keep.append(taint)
                continue
            slot = (name, str(taint.get("key")), str(taint.get("effect")))
            seen = self._taint_seen.setdefault(slot, now)
            wait = self._wait(seen, remover.delay, now)
            if wait > 0:
                keep.append(taint)
                soonest = wait if soonest is None else min(soonest, wait)
            else:
                removed = True
                self._taint_seen.pop(slot, None)
        if removed:
            try:
                self.kube.patch("nodes", name, {"spec": {"taints": keep}})
            except NotFound:
                return Result()
        return Result.after(soonest) if soonest is not None else Result()

    # ------------------------------------------------------------------ pods

    def reconcile_pod(self, key: ObjectKey) -> Result:
        # the pod and its node are only read (every change is a patch): uncopied, as this
        # runs for every event of every pod and a Node copy each time was most of its cost
        get = shared_get(self.kube)
        try:
            pod = get("pods", key.name, key.namespace)
        except NotFound:
            self._forget(str(key))
            return Result()
        meta = pod.get("metadata") or {}
        uid = str(key)
        node_name = (pod.get("spec") or {}).get("nodeName")
        if not node_name:
            return Result()
        now = self._now()
        try:
            node = get("nodes", str(node_name))
        except NotFound:
            return self._collect_orphan(pod, uid, now)
        self._orphan_seen.pop(uid, None)
        if not self.manages(node):
            return Result()
        phase = (pod.get("status") or {}).get("phase") or "Pending"
        if meta.get("deletionTimestamp"):
            return self._terminate(pod, uid, phase, now)
        if phase in ("Succeeded", "Failed"):
            return Result()
        if phase == "Pending":
            if not _is_ready(node):
                return Result()  # the node's Ready event re-queues its pods
            seen = self._pod_seen.setdefault(uid, now)
            wait = self._wait(seen, self.options.pod_start_delay, now)
            if wait > 0:
                return Result.after(wait)
            if not self._start(pod):
                return Result()
            self._pod_seen.pop(uid, None)
            self._started[uid] = now
            duration = run_seconds(pod)
            if duration is None:
                return Result()
            if duration > 0:
                return Result.after(duration)
            try:
                self._finish(get("pods", key.name, key.namespace), uid)
            except NotFound:
                self._forget(uid)
            return Result()
        if phase == "Running":
            duration = run_seconds(pod)
            if duration is None:
                return Result()
            started = self._started.get(uid)
            if started is None:
                start_time = (pod.get("status") or {}).get("startTime")
                started = now - self._age(start_time) if start_time else now
                self._started[uid] = started
            wait = self._wait(started, duration, now)
            if wait > 0:
                return Result.after(wait)
            self._finish(pod, uid)
        return Result()

    def _forget(self, uid: str) -> None:
        for m in (self._pod_seen, self._started, self._deleting_seen, self._orphan_seen):
            m.pop(uid, None)

    def _age(self, stamp: str) -> float:
        try:
            return max(0.0, (self.clock.now() - parse_time(stamp)).total_seconds())
        except ValueError:
            return 0.0

    def _container_statuses(
        self, pod: Mapping[str, Any], state: dict[str, Any], ready: bool
    ) -> list[dict[str, Any]]:
        spec = pod.get("spec") or {}
        return [
            {
                "name": c.get("name", ""),
                "image": c.get("image", ""),
                "imageID": "",
                "ready": ready,
                "started": ready,
                "restartCount": 0,
                "state": state,
            }
            for c in spec.get("containers") or []
            if isinstance(c, Mapping)
        ]

    def _start(self, pod: Mapping[str, Any]) -> bool:
        stamp = format_time(self.clock.now())
        status = pod.get("status") or {}

        def cond(kind: str) -> dict[str, Any]:
            return {
                "type": kind,
                "status": "True",
                "lastProbeTime": None,
                "lastTransitionTime": stamp,
            }

        conditions = _replace_conditions(
            status.get("conditions") or [],
            [
                cond("PodReadyToStartContainers"),
                cond("Initialized"),
                cond("ContainersReady"),
                cond("Ready"),
            ],
        )
        patch = {
            "phase": "Running",
            "startTime": stamp,
            "conditions": conditions,
            "containerStatuses": self._container_statuses(
                pod, {"running": {"startedAt": stamp}}, True
            ),
        }
        return self._patch_pod_status(pod, patch)

    def _finish(self, pod: Mapping[str, Any], uid: str) -> None:
        stamp = format_time(self.clock.now())
        status = pod.get("status") or {}

        def cond(kind: str) -> dict[str, Any]:
            return {
                "type": kind,
                "status": "False",
                "reason": "PodCompleted",
                "lastProbeTime": None,
                "lastTransitionTime": stamp,
            }

        state = {
            "terminated": {
                "exitCode": 0,
                "reason": "Completed",
                "startedAt": status.get("startTime") or stamp,
                "finishedAt": stamp,
            }
        }
        patch = {
            "phase": "Succeeded",
            "conditions": _replace_conditions(
                status.get("conditions") or [], [cond("ContainersReady"), cond("Ready")]
            ),
            "containerStatuses": self._container_statuses(pod, state, False),
        }
        if self._patch_pod_status(pod, patch):
            self._started.pop(uid, None)

    def _patch_pod_status(self, pod: Mapping[str, Any], status: Mapping[str, Any]) -> bool:
        meta = pod.get("metadata") or {}
        try:
            shared_patch(self.kube)(
                "pods",
                str(meta.get("name")),
                {"status": dict(status)},
                str(meta.get("namespace") or "default"),
                subresource="status",
            )
        except ApiError as e:
            log.info("kubelet: updating pod %s failed: %s", _pod_name(pod), e)
            return False
        return True

    def _terminate(self, pod: Mapping[str, Any], uid: str, phase: str, now: float) -> Result:
        meta = pod.get("metadata") or {}
        seen = self._deleting_seen.setdefault(uid, now)
        if phase == "Running":
            try:
                deadline = parse_time(str(meta["deletionTimestamp"]))
            except ValueError:
                deadline = self.clock.now()
            wait = max(0.0, (deadline - self.clock.now()).total_seconds())
            if self.options.termination_seconds is not None:
                wait = min(wait, self._wait(seen, self.options.termination_seconds, now))
            if wait > 0:
                return Result.after(wait)
        self._delete_now(pod)
        self._forget(uid)
        return Result()

    def _collect_orphan(self, pod: Mapping[str, Any], uid: str, now: float) -> Result:
        seen = self._orphan_seen.setdefault(uid, now)
        wait = self._wait(seen, self.options.orphan_pod_gc_delay, now)
        if wait > 0:
            return Result.after(wait)
        self._delete_now(pod)
        self._forget(uid)
        return Result()

    def _delete_now(self, pod: Mapping[str, Any]) -> None:
        meta = pod.get("metadata") or {}
        try:
            self.kube.delete(
                "pods",
                str(meta.get("name")),
                str(meta.get("namespace") or "default"),
                grace_period_seconds=0,
                preconditions={"uid": str(meta.get("uid"))} if meta.get("uid") else None,
            )
        except ApiError as e:
            log.info("kubelet: deleting pod %s failed: %s", _pod_name(pod), e)


class _NodeReconciler:
    def __init__(self, kubelet: Kubelet) -> None:
        self.kubelet = kubelet

    def reconcile(self, key: ObjectKey) -> Result:
        return self.kubelet.reconcile_node(key)


class _PodReconciler:
    def __init__(self, kubelet: Kubelet) -> None:
        self.kubelet = kubelet

    def reconcile(self, key: ObjectKey) -> Result:
        return self.kubelet.reconcile_pod(key)


def _pods_on_node(kube: KubeClient) -> Any:
    """Map a node event to the keys of the pods bound to it (a node turning Ready starts
    them; a node going away orphans them)."""

    def mapper(event_type: str, obj: dict[str, Any]) -> Iterable[Hashable]:
        name = (obj.get("metadata") or {}).get("name")
        if not name:
            return ()
        try:
            pods = kube.list("pods", field_selector=f"spec.nodeName={name}")
        except ApiError:
            return ()
        return [key_of(p) for p in pods]

    return mapper


def _node_event_starts_pods(event_type: str, obj: dict[str, Any]) -> bool:
    return event_type == "DELETED" or _is_ready(obj)


def register(
    manager: Manager, ctx: ControllerContext, options: KubeletOptions | None = None
) -> Kubelet:
    """Add the simulated kubelet's controllers (``sim.kubelet.node``, ``sim.kubelet.pod``)."""
    kubelet = Kubelet(ctx.kube, ctx.clock, options)
    manager.add_controller(NODE_CONTROLLER_NAME, kubelet.node_reconciler, watches=[Watch("nodes")])
    manager.add_controller(
        POD_CONTROLLER_NAME,
        kubelet.pod_reconciler,
        watches=[
            Watch("pods"),
            Watch("nodes", mapper=_pods_on_node(ctx.kube), predicate=_node_event_starts_pods),
        ],
    )
    return kubelet
