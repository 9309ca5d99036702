"""The workload controllers a simulated cluster needs: Deployment, ReplicaSet, StatefulSet,
Job and DaemonSet.

kube-controller-manager keeps workloads at their replica counts; without it a simulation
would lose every pod a drain evicts. These controllers do the part that matters for
capacity: a Deployment owns a ReplicaSet per pod template (old ones scaled to zero, a
simplified rolling update), a ReplicaSet keeps ``spec.replicas`` live pods (a pod that is
terminating, evicted or deleted is replaced at once, as upstream's ReplicaSet controller
does), a StatefulSet keeps one pod per ordinal (see :meth:`_statefulset`), and a Job runs
``parallelism`` pods until ``completions`` succeeded. Pods finish
when the simulated kubelet says so (``sim.karpenter.sh/run-seconds`` on the pod). A
DaemonSet runs one pod on every node it selects and tolerates (see :meth:`_daemonset`).

Pods are indexed from the pod watch by their controlling owner's uid, so a reconcile costs
what its own pods cost rather than a list of the namespace.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Hashable, Iterable, Mapping
from typing import Any

from attrs import define

from karpenter_core.apis.conditions import is_true
from karpenter_core.apis.copying import deep_copy
from karpenter_core.apis.taints import Taint, Toleration, tolerates
from karpenter_core.apis.workloads import (
    POD_INDEX_LABEL,
    runs_template,
    statefulset_ordinal,
    template_hash,
)
from karpenter_core.kube.client import (
    AlreadyExists,
    ApiError,
    Conflict,
    KubeClient,
    NotFound,
    shared_create,
)
from karpenter_core.runtime.clock import Clock, format_time
from karpenter_core.runtime.manager import Manager
from karpenter_core.runtime.reconciler import Result, Watch

__all__ = ["SIMULATED_OWNER_KINDS", "WorkloadController", "register"]

WorkloadKey = tuple[str, str, str]
"""(kind, namespace, name)"""

_TERMINAL = ("Succeeded", "Failed")
POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"
_OWNER_KINDS = ("ReplicaSet", "StatefulSet", "Job", "DaemonSet")
SIMULATED_OWNER_KINDS = frozenset(_OWNER_KINDS)
"""Kinds whose pods the simulated controllers own, and replace once evicted or deleted."""
_RESOURCES = {
    "Deployment": "deployments",
    "ReplicaSet": "replicasets",
    "StatefulSet": "statefulsets",
    "Job": "jobs",
    "DaemonSet": "daemonsets",
}

# What the DaemonSet controller adds to every daemon pod, so daemons stay on sick nodes.
_DAEMON_TOLERATIONS: tuple[dict[str, str], ...] = (
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/pid-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
)


@define(slots=True)
class _PodState:
    name: str
    created_seq: int
    deleting: bool = False
    phase: str = "Pending"
    bound: bool = False
    node: str = ""
    ordinal: int | None = None  # a StatefulSet's pod

    @property
    def active(self) -> bool:
        return not self.deleting and self.phase not in _TERMINAL


def _controller_of(meta: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for ref in meta.get("ownerReferences") or ():
        if isinstance(ref, Mapping) and ref.get("controller") and ref.get("kind") in _OWNER_KINDS:
            return ref
    return None


def _ordinal(meta: Mapping[str, Any], owner_name: str) -> int | None:
    return statefulset_ordinal(str(meta.get("name") or ""), meta.get("labels") or {}, owner_name)


def _owner_ref(obj: Mapping[str, Any]) -> dict[str, Any]:
    meta = obj["metadata"]
    return {
        "apiVersion": obj["apiVersion"],
        "kind": obj["kind"],
        "name": meta["name"],
        "uid": meta["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def _replicas(spec: Mapping[str, Any], key: str, default: int) -> int:
    value = spec.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return default
    return value


class WorkloadController:
    """One reconciler for Deployments, ReplicaSets, StatefulSets, Jobs and DaemonSets (keys
    ``(kind, ns, name)``)."""

    def __init__(self, kube: KubeClient, clock: Clock) -> None:
        self.kube = kube
        self.clock = clock
        self._pods: dict[str, dict[str, _PodState]] = {}  # owner uid -> pod name -> state
        # owner uid -> how many of its pods are active, kept as states change: a ReplicaSet
        # of 75,000 pods is reconciled on every eviction, and counting its pods each time
        # made a scale-in quadratic in the pods
        self._active: dict[str, int] = {}
        self._owner_of_pod: dict[tuple[str, str], tuple[str, WorkloadKey]] = {}
        self._daemonsets: set[WorkloadKey] = set()
        # StatefulSet uid -> ordinal -> (pod name, claim volumes) of the pods it had: a pod
        # comes back with its name and claims (a snapshot's may not be <set>-<ordinal>)
        self._identities: dict[str, dict[int, tuple[str, list[dict[str, Any]]]]] = {}
        self._seq = 0
        self.pods_created = 0
        self.pods_replaced = 0

    # -- watch mappers

    def on_owner(self, event_type: str, obj: dict[str, Any]) -> Iterable[Hashable]:
        meta = obj.get("metadata") or {}
        key = (str(obj.get("kind")), str(meta.get("namespace") or ""), str(meta.get("name")))
        if event_type == "DELETED":
            self._pods.pop(str(meta.get("uid") or ""), None)
            self._active.pop(str(meta.get("uid") or ""), None)
            self._identities.pop(str(meta.get("uid") or ""), None)
            self._daemonsets.discard(key)
            return ()
        if key[0] == "DaemonSet":
            self._daemonsets.add(key)
        return (key,)

    def on_node(self, event_type: str, obj: dict[str, Any]) -> Iterable[Hashable]:
        """A node that appears or changes may need daemons (its taints or labels moved)."""
        return sorted(self._daemonsets)

    def on_pod(self, event_type: str, obj: dict[str, Any]) -> Iterable[Hashable]:
        """Index the pod under its owner; enqueue the owner when the pod stops counting
        (terminating, finished, gone)."""
        meta = obj.get("metadata") or {}
        ns = str(meta.get("namespace") or "")
        name = str(meta.get("name") or "")
        ref = _controller_of(meta)
        if ref is None:
            return ()
        owner_uid = str(ref.get("uid") or "")
        owner_key: WorkloadKey = (str(ref.get("kind")), ns, str(ref.get("name")))
        pods = self._pods.setdefault(owner_uid, {})
        if event_type == "DELETED":
            state = pods.pop(name, None)
            self._owner_of_pod.pop((ns, name), None)
            if state is not None and state.active:
                self._count(owner_uid, -1)
            # a StatefulSet waits for the pod to be gone before it makes it again
            again = state is None or state.active or owner_key[0] == "StatefulSet"
            return (owner_key,) if again else ()
        state = pods.get(name)
        if state is None:
            self._seq += 1
            state = _PodState(name, self._seq)
            pods[name] = state
            self._count(owner_uid, +1)
            self._owner_of_pod[(ns, name)] = (owner_uid, owner_key)
            if owner_key[0] == "StatefulSet":
                self._remember(owner_uid, owner_key[2], state, obj)
        was_active = state.active
        state.deleting = bool(meta.get("deletionTimestamp"))
        state.phase = str((obj.get("status") or {}).get("phase") or "Pending")
        if (obj.get("spec") or {}).get("nodeName"):
            state.bound = True
            state.node = str(obj["spec"]["nodeName"])
        if was_active != state.active:
            self._count(owner_uid, +1 if state.active else -1)
            return (owner_key,)
        return ()

    def _count(self, owner_uid: str, change: int) -> None:
        self._active[owner_uid] = self._active.get(owner_uid, 0) + change

    # -- reconcile

    def reconcile(self, key: WorkloadKey) -> Result:
        kind, ns, name = key
        resource = _RESOURCES.get(kind)
        if resource is None:
            return Result()
        try:
            obj = self.kube.get(resource, name, ns)
        except NotFound:
            return Result()
        if (obj.get("metadata") or {}).get("deletionTimestamp"):
            return Result()
        try:
            if kind == "Deployment":
                return self._deployment(obj)
            if kind == "ReplicaSet":
                return self._replicaset(obj)
            if kind == "DaemonSet":
                return self._daemonset(obj)
            if kind == "StatefulSet":
                return self._statefulset(obj)
            return self._job(obj)
        except Conflict:
            return Result(requeue=True)

    def _deployment(self, dep: dict[str, Any]) -> Result:
        meta, spec = dep["metadata"], dep.get("spec") or {}
        ns, name, uid = meta.get("namespace") or "default", meta["name"], meta["uid"]
        template = spec.get("template") or {}
        phash = template_hash(template)
        rs_name = f"{name}-{phash}"
        replicas = _replicas(spec, "replicas", 1)
        owned = [
            rs
            for rs in self.kube.list("replicasets", ns).items
            if any(
                r.get("uid") == uid for r in (rs.get("metadata") or {}).get("ownerReferences") or ()
            )
        ]
        current = next((rs for rs in owned if rs["metadata"]["name"] == rs_name), None)
        if current is None:
            # a ReplicaSet made elsewhere (a real cluster's, seeded from a snapshot) is
            # named by another hash: it is the current one when its template is this one
            current = next((rs for rs in owned if runs_template(rs, template)), None)
            if current is not None:
                rs_name = current["metadata"]["name"]
        if current is None:
            labels = {**((template.get("metadata") or {}).get("labels") or {})}
            labels["pod-template-hash"] = phash
            tmpl = copy.deepcopy(template)
            tmpl.setdefault("metadata", {})["labels"] = dict(labels)
            selector = copy.deepcopy(spec.get("selector") or {"matchLabels": {}})
            selector.setdefault("matchLabels", {})["pod-template-hash"] = phash
            rs = {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "metadata": {
                    "name": rs_name,
                    "namespace": ns,
                    "labels": labels,
                    "ownerReferences": [_owner_ref(dep)],
                },
                "spec": {"replicas": replicas, "selector": selector, "template": tmpl},
            }
            try:
                self.kube.create(rs)
            except AlreadyExists:
                return Result(requeue=True)
        elif _replicas(current.get("spec") or {}, "replicas", 0) != replicas:
            self.kube.patch("replicasets", rs_name, {"spec": {"replicas": replicas}}, ns)
        for old in owned:
            if old["metadata"]["name"] != rs_name and (old.get("spec") or {}).get("replicas"):
                self.kube.patch(
                    "replicasets", old["metadata"]["name"], {"spec": {"replicas": 0}}, ns
                )
        return Result()

    def _replicaset(self, rs: dict[str, Any]) -> Result:
        meta, spec = rs["metadata"], rs.get("spec") or {}
        ns, uid = meta.get("namespace") or "default", meta["uid"]
        want = _replicas(spec, "replicas", 1)
        pods = self._pods.setdefault(uid, {})
        n_active = self._active.get(uid, 0)
        if n_active < want:
            self._create_pods(rs, want - n_active, replaced=len(pods) > n_active)
        elif n_active > want:
            # upstream's ranking, simplified: unbound before bound, pending before running,
            # newer before older
            active = [p for p in pods.values() if p.active]
            victims = sorted(active, key=lambda p: (p.bound, p.phase == "Running", -p.created_seq))[
                : n_active - want
            ]
            for p in victims:
                self._delete_pod(ns, uid, p)
        self._status(rs, {"replicas": min(want, n_active)})
        return Result()

    def _remember(self, uid: str, owner: str, state: _PodState, pod: Mapping[str, Any]) -> None:
        state.ordinal = _ordinal(pod.get("metadata") or {}, owner)
        if state.ordinal is None:
            return
        claims = [
            dict(v)
            for v in (pod.get("spec") or {}).get("volumes") or ()
            if isinstance(v, Mapping) and "persistentVolumeClaim" in v
        ]
        self._identities.setdefault(uid, {})[state.ordinal] = (state.name, claims)

    def _statefulset(self, sts: dict[str, Any]) -> Result:
        """One pod per ordinal ``start .. start+replicas-1``, as upstream's controller with
        the ``Parallel`` policy: a missing ordinal's pod is made again under the name and
        claims it had (a new ordinal's are ``<set>-<n>`` and ``<template>-<set>-<n>``, the
        claims created from ``volumeClaimTemplates`` when missing), only once the old pod
        is gone; a finished pod is deleted to be made again; ordinals past the replicas go,
        highest first. Rolling updates are not simulated."""
        meta, spec = sts["metadata"], sts.get("spec") or {}
        ns, uid = meta.get("namespace") or "default", meta["uid"]
        start = _replicas(spec.get("ordinals") or {}, "start", 0)
        want = range(start, start + _replicas(spec, "replicas", 1))
        pods = self._pods.setdefault(uid, {})
        held: dict[int, _PodState] = {}
        for p in pods.values():
            if p.ordinal is None or p.deleting:
                if p.ordinal is not None:
                    held[p.ordinal] = p  # terminating: its ordinal waits for it
                continue
            if p.ordinal not in want or p.phase in _TERMINAL:
                self._delete_pod(ns, uid, p)
            held[p.ordinal] = p
        for ordinal in want:
            if ordinal not in held:
                self._create_member(sts, ordinal)
        ready = sum(1 for p in pods.values() if p.active and p.ordinal in want)
        self._status(sts, {"replicas": ready})
        return Result()

    def _create_member(self, sts: dict[str, Any], ordinal: int) -> None:
        meta, spec = sts["metadata"], sts.get("spec") or {}
        ns = str(meta.get("namespace") or "default")
        name, claims = self._identities.get(meta["uid"], {}).get(ordinal, ("", []))
        replaced = bool(name)
        if not name:
            name = f"{meta['name']}-{ordinal}"
            for ct in spec.get("volumeClaimTemplates") or ():
                ct_name = str((ct.get("metadata") or {}).get("name") or "")
                claim = f"{ct_name}-{name}"
                claims.append({"name": ct_name, "persistentVolumeClaim": {"claimName": claim}})
                pvc = {
                    "apiVersion": "v1",
                    "kind": "PersistentVolumeClaim",
                    "metadata": {
                        "name": claim,
                        "namespace": ns,
                        "labels": dict((ct.get("metadata") or {}).get("labels") or {}),
                    },
                    "spec": copy.deepcopy(ct.get("spec") or {}),
                }
                with contextlib.suppress(AlreadyExists):
                    self.kube.create(pvc)
        identity = {POD_NAME_LABEL: name, POD_INDEX_LABEL: str(ordinal)}
        # AlreadyExists: the old pod is still there; its DELETED event brings the set back
        with contextlib.suppress(AlreadyExists):
            self._create_pods(sts, 1, replaced=replaced, name=name, labels=identity, volumes=claims)

    def _daemonset(self, ds: dict[str, Any]) -> Result:
        """One pod per node that the template selects (``nodeSelector``) and whose
        NoSchedule/NoExecute taints it tolerates, bound there directly. Daemons are never
        evicted for a taint added later, and a daemon on a node that went away is the pod
        garbage collector's (the kubelet's orphan GC)."""
        meta, spec = ds["metadata"], ds.get("spec") or {}
        template = spec.get("template") or {}
        pod_spec = template.get("spec") or {}
        selector = pod_spec.get("nodeSelector") or {}
        tolerations = [
            Toleration.from_dict(t)
            for t in (*(pod_spec.get("tolerations") or ()), *_DAEMON_TOLERATIONS)
        ]
        covered = {p.node for p in self._pods.setdefault(meta["uid"], {}).values() if p.active}
        for node in self.kube.list("nodes").items:
            node_meta = node.get("metadata") or {}
            name = str(node_meta.get("name"))
            if name in covered or node_meta.get("deletionTimestamp"):
                continue
            labels = node_meta.get("labels") or {}
            if any(labels.get(k) != v for k, v in selector.items()):
                continue
            taints = [
                Taint.from_dict(t)
                for t in (node.get("spec") or {}).get("taints") or ()
                if t.get("effect") in ("NoSchedule", "NoExecute")
            ]
            if tolerates(taints, tolerations) is not None:
                continue
            self._create_pods(ds, 1, replaced=False, node=name)
        return Result()

    def _job(self, job: dict[str, Any]) -> Result:
        meta, spec = job["metadata"], job.get("spec") or {}
        ns, uid = meta.get("namespace") or "default", meta["uid"]
        status = job.get("status") or {}
        if is_true(job, "Complete") or is_true(job, "Failed"):
            return Result()
        parallelism = _replicas(spec, "parallelism", 1)
        completions = _replicas(spec, "completions", parallelism)
        pods = self._pods.setdefault(uid, {})
        succeeded = sum(1 for p in pods.values() if p.phase == "Succeeded")
        failed = sum(1 for p in pods.values() if p.phase == "Failed")
        active = [p for p in pods.values() if p.active]
        want = max(0, min(parallelism, completions - succeeded))
        if len(active) < want:
            self._create_pods(job, want - len(active), replaced=failed > 0)
        elif len(active) > want:
            for p in sorted(active, key=lambda p: (p.bound, -p.created_seq))[: len(active) - want]:
                self._delete_pod(ns, uid, p)
        new_status: dict[str, Any] = {
            "active": min(want, max(len(active), want)),
            "succeeded": succeeded,
            "failed": failed,
        }
        if status.get("startTime") is None:
            new_status["startTime"] = format_time(self.clock.now())
        if succeeded >= completions:
            new_status["active"] = 0
            new_status["completionTime"] = format_time(self.clock.now())
            new_status["conditions"] = [
                {
                    "type": "Complete",
                    "status": "True",
                    "lastTransitionTime": format_time(self.clock.now()),
                }
            ]
        self._status(job, new_status)
        return Result()

    # -- writes

    def _create_pods(
        self,
        owner: dict[str, Any],
        count: int,
        *,
        replaced: bool,
        node: str = "",
        name: str = "",
        labels: Mapping[str, str] | None = None,
        volumes: Iterable[dict[str, Any]] = (),
    ) -> None:
        """``count`` pods from ``owner``'s template; a StatefulSet's one pod is ``name``,
        with its identity ``labels`` and claim ``volumes`` (replacing the template's
        volumes of the same names)."""
        meta, spec = owner["metadata"], owner.get("spec") or {}
        template = spec.get("template") or {}
        tmeta = template.get("metadata") or {}
        pod_labels = {**(tmeta.get("labels") or {}), **(labels or {})}
        if owner["kind"] == "Job":
            pod_labels.setdefault("job-name", meta["name"])
            pod_labels.setdefault("batch.kubernetes.io/job-name", meta["name"])
        claims = list(volumes)
        pods = self._pods.setdefault(meta["uid"], {})
        ns = str(meta.get("namespace") or "default")
        create = shared_create(self.kube)
        for _ in range(count):
            pod: dict[str, Any] = {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    **({"name": name} if name else {"generateName": f"{meta['name']}-"}),
                    "namespace": ns,
                    "labels": pod_labels,
                    "annotations": dict(tmeta.get("annotations") or {}),
                    "ownerReferences": [_owner_ref(owner)],
                },
                "spec": deep_copy(template.get("spec") or {}),
            }
            if claims:
                names = {v.get("name") for v in claims}
                pod["spec"]["volumes"] = [
                    *(v for v in pod["spec"].get("volumes") or () if v.get("name") not in names),
                    *copy.deepcopy(claims),
                ]
            if node:  # a daemon: bound where it must run, with the daemon tolerations
                pod["spec"]["nodeName"] = node
                pod["spec"]["tolerations"] = [
                    *(pod["spec"].get("tolerations") or ()),
                    *(dict(t) for t in _DAEMON_TOLERATIONS),
                ]
            created = create(pod)  # read, never changed
            made = created["metadata"]["name"]
            self._seq += 1
            state = _PodState(made, self._seq, bound=bool(node), node=node)
            pods[made] = state
            self._count(meta["uid"], +1)
            self._owner_of_pod[(ns, made)] = (
                meta["uid"],
                (owner["kind"], ns, meta["name"]),
            )
            if owner["kind"] == "StatefulSet":
                self._remember(meta["uid"], meta["name"], state, created)
            self.pods_created += 1
            if replaced:
                self.pods_replaced += 1

    def _delete_pod(self, ns: str, owner_uid: str, p: _PodState) -> None:
        if p.active:  # before the delete, whose event may already report the pod gone
            self._count(owner_uid, -1)
        p.deleting = True
        with contextlib.suppress(NotFound):
            self.kube.delete("pods", p.name, ns)

    def _status(self, obj: dict[str, Any], status: Mapping[str, Any]) -> None:
        current = obj.get("status") or {}
        if all(current.get(k) == v for k, v in status.items()):
            return
        obj["status"] = {**current, **status}
        try:
            self.kube.update_status(obj)
        except (Conflict, NotFound):
            pass
        except ApiError:
            pass


def register(manager: Manager, kube: KubeClient, clock: Clock) -> WorkloadController:
    """Add the ``sim.workloads`` controller (Deployments, ReplicaSets, StatefulSets, Jobs,
    DaemonSets)."""
    controller = WorkloadController(kube, clock)
    manager.add_controller(
        "sim.workloads",
        controller,
        watches=[
            Watch("deployments", mapper=controller.on_owner),
            Watch("replicasets", mapper=controller.on_owner),
            Watch("statefulsets", mapper=controller.on_owner),
            Watch("jobs", mapper=controller.on_owner),
            Watch("daemonsets", mapper=controller.on_owner),
            Watch("nodes", mapper=controller.on_node),
            Watch("pods", mapper=controller.on_pod),
        ],
    )
    return controller
