"""The simulated kube-controller-manager: the loops a cluster without them would make a
simulation meaningless, run against :class:`~karpenter_core.sim.apiserver.InMemoryApiServer`.

* the **disruption controller** keeps each PodDisruptionBudget's status (``currentHealthy``,
  ``desiredHealthy``, ``disruptionsAllowed``...) in step with the pods it selects;
* the **garbage collector** deletes (or, with ``Orphan``, releases) the dependents of an
  owner that is gone, following ``ownerReferences``;
* the **namespace controller** deletes a Terminating namespace's contents and removes the
  namespace once nothing in it is left;
* the **resource-claim controller** makes each pod's ResourceClaims from its
  ResourceClaimTemplates and drops reservations that outlived their pods (:class:`ResourceClaims`).

The real control plane of the contract and integration tests runs kube-controller-manager
with exactly these controllers (``docs/testing.md``).

They run **synchronously**, called by the server through a narrow hook
(:class:`KubeControllerManager` is the server's ``ControllerManagerHook``) right after each
change is stored, under the server's lock, and they write through the server's store
(:class:`Store`). A watch-driven controller on the simulation's Manager would see each change
one reconcile later: a pod's eviction would be judged on a PDB status that lags the pod that
just became Ready, a deleted namespace would keep its contents until the Manager ran, and
the in-memory contract tests (which run the server without any Manager and check these
effects once) and every simulation's resourceVersion sequence would change. Running them in
the write that caused them gives, at once, the state the real loops reach a moment later.

:func:`register` attaches the loops to a server (what ``karpenter simulate`` does next to
the simulated kubelet); an :class:`InMemoryApiServer` built with its default
``kube_controller_manager=True`` registers them itself.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from karpenter_core.apis.accessors import labels_of, meta_of, namespace_of
from karpenter_core.apis.conditions import is_true
from karpenter_core.apis.resource import (
    CLAIM_GENERATED,
    CLAIM_NOT_NEEDED,
    APIError,
    pod_claim_names,
)
from karpenter_core.kube.client import (
    ADDED,
    DELETED,
    MODIFIED,
    ApiError,
    Invalid,
    Obj,
    ResourceType,
    deep_copy,
)
from karpenter_core.kube.selectors import LabelSelector, SelectorError, label_selector_from_dict
from karpenter_core.runtime.clock import format_time

if TYPE_CHECKING:
    from karpenter_core.runtime.clock import Clock
    from karpenter_core.sim.apiserver import InMemoryApiServer

__all__ = [
    "GarbageCollector",
    "KubeControllerManager",
    "NamespaceController",
    "PodDisruptionBudgets",
    "ResourceClaims",
    "Store",
    "pdb_selector",
    "pod_ready",
    "register",
]

log = logging.getLogger("karpenter.sim.kube-controller-manager")

POD = ("v1", "Pod")
NAMESPACE = ("v1", "Namespace")
PDB = ("policy/v1", "PodDisruptionBudget")
RESOURCE_CLAIM = ("resource.k8s.io/v1", "ResourceClaim")
RESOURCE_CLAIM_TEMPLATE = ("resource.k8s.io/v1", "ResourceClaimTemplate")
POD_CLAIM_ANNOTATION = "resource.kubernetes.io/pod-claim-name"
"""Set by the resource-claim controller on a claim it generates: the pod's entry name."""
CLAIM_FINALIZER = "resource.kubernetes.io/delete-protection"
"""kube-scheduler's finalizer on a claim it allocated: the claim is deallocated first."""


class Store(Protocol):
    """What the loops may do to the in-memory server's storage (called under its lock).

    Objects handed out are the stored ones, not copies: the loops read them and write
    changed copies through :meth:`commit`."""

    @property
    def clock(self) -> Clock: ...

    def stored(self, key: tuple[str, str], namespace: str) -> Mapping[str, Obj]:
        """The objects of one kind in one namespace ("" for cluster-scoped), by name."""
        ...

    def kinds(self) -> Iterable[tuple[str, str]]:
        """The (apiVersion, kind) keys that have objects stored."""
        ...

    def locate(self, uid: str) -> tuple[ResourceType, str, str] | None:
        """Where the object with ``uid`` is stored: (resource, namespace, name)."""
        ...

    def resource(self, key: tuple[str, str]) -> ResourceType: ...

    def commit(self, rt: ResourceType, etype: str, obj: Obj, old: Obj | None) -> None:
        """Store a change (a new resourceVersion, watch events, the hook again)."""
        ...

    def create(self, obj: Obj) -> Obj:
        """Create as the API does (generated name, uid, validation, the hook again); returns
        a copy of what was stored."""
        ...

    def delete(self, rt: ResourceType, obj: Obj, policy: str, grace: int | None) -> Obj | None:
        """Delete as the API does (finalizers and grace periods mark instead of removing)."""
        ...

    def remove(self, rt: ResourceType, obj: Obj) -> None:
        """Take an object out of storage now (a namespace whose contents are gone)."""
        ...


def pod_ready(pod: Mapping[str, Any]) -> bool:
    """The pod's Ready condition is True."""
    return is_true(pod, "Ready")


def _pod_healthy(pod: Mapping[str, Any]) -> bool:
    return pod_ready(pod) and not meta_of(pod).get("deletionTimestamp")


def _scaled(value: Any, total: int, what: str) -> int:
    """An int-or-percent PDB field as a count (percentages round up, like the controller)."""
    if isinstance(value, bool):
        raise Invalid(f"{what}: must be an integer or a percentage")
    if isinstance(value, int):
        return value
    text = str(value)
    if text.endswith("%"):
        try:
            pct = int(text[:-1])
        except ValueError:
            raise Invalid(f"{what}: {text!r} is not a valid percentage") from None
        return math.ceil(pct * total / 100)
    try:
        return int(text)
    except ValueError:
        raise Invalid(f"{what}: {text!r} is not an integer or a percentage") from None


def pdb_selector(pdb: Mapping[str, Any]) -> LabelSelector:
    """A budget's selector; one that does not parse selects nothing (policy/v1: an empty
    selector selects every pod of the namespace, a missing one none)."""
    try:
        return label_selector_from_dict((pdb.get("spec") or {}).get("selector"))
    except SelectorError:
        return label_selector_from_dict(None)


# --------------------------------------------------------------------------- disruption


class _PdbTrack:
    __slots__ = ("healthy", "matched", "selector")

    def __init__(self, selector: LabelSelector) -> None:
        self.selector = selector
        self.matched: set[str] = set()
        self.healthy: set[str] = set()


class PodDisruptionBudgets:
    """The disruption controller, kept incrementally (which pods each budget selects and
    which of those are healthy) so thousands of pods stay cheap."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._tracks: dict[tuple[str, str], _PdbTrack] = {}
        self._by_ns: dict[str, set[str]] = {}

    def pod_changed(self, ns: str, name: str, pod: Obj | None) -> None:
        for pdb_name in sorted(self._by_ns.get(ns, ())):
            track = self._tracks[(ns, pdb_name)]
            before = (len(track.matched), len(track.healthy))
            track.matched.discard(name)
            track.healthy.discard(name)
            if pod is not None and track.selector.matches(labels_of(pod)):
                track.matched.add(name)
                if _pod_healthy(pod):
                    track.healthy.add(name)
            if (len(track.matched), len(track.healthy)) != before:
                self._write_status(ns, pdb_name)

    def pdb_changed(self, ns: str, name: str, pdb: Obj | None) -> None:
        key = (ns, name)
        if pdb is None:
            self._tracks.pop(key, None)
            names = self._by_ns.get(ns)
            if names is not None:
                names.discard(name)
            return
        selector = pdb_selector(pdb)
        track = self._tracks.get(key)
        if track is not None and track.selector == selector:
            # Only status (ours) or budget numbers changed: recompute if the spec moved.
            self._write_status(ns, name)
            return
        track = _PdbTrack(selector)
        for pod_name, pod in self.store.stored(POD, ns).items():
            if selector.matches(labels_of(pod)):
                track.matched.add(pod_name)
                if _pod_healthy(pod):
                    track.healthy.add(pod_name)
        self._tracks[key] = track
        self._by_ns.setdefault(ns, set()).add(name)
        self._write_status(ns, name)

    def _write_status(self, ns: str, name: str) -> None:
        """Status as the disruption controller computes it. Simplification: expectedPods is
        the number of selected pods (the real controller asks the pods' controllers for their
        scale when the budget is a percentage or maxUnavailable)."""
        pdb = self.store.stored(PDB, ns)[name]
        track = self._tracks[(ns, name)]
        spec = pdb.get("spec") or {}
        expected = len(track.matched)
        healthy = len(track.healthy)
        try:
            if spec.get("maxUnavailable") is not None:
                desired = max(
                    0, expected - _scaled(spec["maxUnavailable"], expected, "spec.maxUnavailable")
                )
            elif spec.get("minAvailable") is not None:
                desired = _scaled(spec["minAvailable"], expected, "spec.minAvailable")
            else:
                desired = 0
        except Invalid:
            desired = expected
        allowed = max(0, healthy - desired)
        generation = meta_of(pdb).get("generation")
        old_status = pdb.get("status") or {}
        conditions = [
            {
                "type": "DisruptionAllowed",
                "status": "True" if allowed > 0 else "False",
                "reason": "SufficientPods" if allowed > 0 else "InsufficientPods",
                "message": "",
                "observedGeneration": generation,
                "lastTransitionTime": format_time(self.store.clock.now()),
            }
        ]
        for c in old_status.get("conditions") or []:
            if (
                isinstance(c, Mapping)
                and c.get("type") == "DisruptionAllowed"
                and c.get("status") == conditions[0]["status"]
            ):
                conditions[0]["lastTransitionTime"] = c.get("lastTransitionTime")
        status = {
            "observedGeneration": generation,
            "disruptionsAllowed": allowed,
            "currentHealthy": healthy,
            "desiredHealthy": desired,
            "expectedPods": expected,
            "conditions": conditions,
        }
        if old_status == status:
            return
        new = deep_copy(pdb)
        new["status"] = status
        self.store.commit(self.store.resource(PDB), MODIFIED, new, pdb)


# --------------------------------------------------------------------------- garbage collector


def _owner_uids(obj: Obj | None) -> set[str]:
    if obj is None:
        return set()
    return {
        str(r.get("uid"))
        for r in meta_of(obj).get("ownerReferences") or []
        if isinstance(r, Mapping) and r.get("uid")
    }


class GarbageCollector:
    """The garbage collector: an index of dependents by owner uid, and the cascade when an
    owner is gone."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._dependents: dict[str, set[str]] = {}  # owner uid -> dependent uids

    def index(self, uid: str, old: Obj | None, new: Obj | None) -> None:
        before, after = _owner_uids(old), _owner_uids(new)
        for o in before - after:
            deps = self._dependents.get(o)
            if deps is not None:
                deps.discard(uid)
                if not deps:
                    del self._dependents[o]
        for o in after - before:
            self._dependents.setdefault(o, set()).add(uid)

    def collect(self, owner_uid: str, policy: str) -> None:
        """Done at once: drop references to a deleted owner and delete dependents left with
        no live owner (unless orphaning)."""
        store = self.store
        for dep_uid in sorted(self._dependents.pop(owner_uid, set())):
            where = store.locate(dep_uid)
            if where is None:
                continue
            rt, ns, name = where
            dep = store.stored(rt.key, ns).get(name)
            if dep is None:
                continue
            refs = [r for r in meta_of(dep).get("ownerReferences") or [] if isinstance(r, Mapping)]
            remaining = [r for r in refs if r.get("uid") != owner_uid]
            live = [r for r in remaining if store.locate(str(r.get("uid"))) is not None]
            if policy == "Orphan" or live:
                new = deep_copy(dep)
                if remaining:
                    new["metadata"]["ownerReferences"] = deep_copy(remaining)
                else:
                    new["metadata"].pop("ownerReferences", None)
                store.commit(rt, MODIFIED, new, dep)
            else:
                store.delete(rt, dep, policy, None)


# --------------------------------------------------------------------------- namespaces


class NamespaceController:
    """The namespace controller: a Terminating namespace's contents are deleted, and the
    namespace goes once nothing in it is left (objects with finalizers keep it)."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def terminating(self, name: str) -> None:
        store = self.store
        for key in list(store.kinds()):
            objs = store.stored(key, name)
            if not objs:
                continue
            for obj in list(objs.values()):
                current = store.stored(key, name).get(meta_of(obj)["name"])
                if current is not None:
                    store.delete(store.resource(key), current, "Background", 0)
        self.maybe_finish(name)

    def maybe_finish(self, name: str) -> None:
        store = self.store
        ns_obj = store.stored(NAMESPACE, "").get(name)
        if ns_obj is None or not meta_of(ns_obj).get("deletionTimestamp"):
            return
        if any(store.stored(key, name) for key in store.kinds()):
            return
        store.remove(store.resource(NAMESPACE), ns_obj)


# --------------------------------------------------------------------------- resource claims


def _pod_done(pod: Mapping[str, Any]) -> bool:
    """The pod will not run (again): terminal, or deleted before it was bound."""
    phase = (pod.get("status") or {}).get("phase")
    return phase in ("Succeeded", "Failed") or (
        bool(meta_of(pod).get("deletionTimestamp")) and not (pod.get("spec") or {}).get("nodeName")
    )


def _owning_pod(claim: Mapping[str, Any]) -> tuple[str, str] | None:
    """``(name, uid)`` of the pod a claim was generated for (its controller ownerReference)."""
    for ref in meta_of(claim).get("ownerReferences") or ():
        if (
            isinstance(ref, Mapping)
            and ref.get("controller")
            and ref.get("apiVersion") == "v1"
            and ref.get("kind") == "Pod"
        ):
            return str(ref.get("name") or ""), str(ref.get("uid") or "")
    return None


def _generate_name(pod_name: str, claim_name: str) -> str:
    """The resourceclaim controller's ``generateName`` for a pod's claim: ``<pod>-<claim>-``,
    both parts shortened in proportion when longer than 57 characters."""
    name = f"{pod_name}-{claim_name}-"
    if len(name) > 57:
        total = len(name)
        name = f"{pod_name[: len(pod_name) * 57 // total]}-{claim_name[: len(claim_name) * 57 // total]}"
    return name


class ResourceClaims:
    """The resource-claim controller (``resourceclaim-controller``, issue 11): the
    ResourceClaims of pods made from templates, and reservations that outlive their pods.

    * A pod (not being deleted) whose ``spec.resourceClaims`` entry names a
      ``resourceClaimTemplateName`` gets its own claim, made from the template:
      ``generateName`` ``<pod>-<entry>-``, the template's labels and annotations plus
      ``resource.kubernetes.io/pod-claim-name``, a controller ownerReference to the pod (the
      garbage collector deletes it with the pod); the claim's name is recorded in the pod's
      ``status.resourceClaimStatuses``. A pod whose template does not exist yet waits for it.
    * A bound pod whose claim is allocated but does not list it in ``reservedFor`` is added.
    * A ``reservedFor`` entry whose pod is gone, replaced or done is removed; a claim left
      reserved for nobody is deallocated when it carries the scheduler's
      ``resource.kubernetes.io/delete-protection`` finalizer (which then goes), and a claim
      generated for a pod that is done is deleted.
    """

    def __init__(self, store: Store) -> None:
        self.store = store
        self._waiting: dict[tuple[str, str], set[str]] = {}  # (ns, template) -> pod names
        self._reserving: dict[str, set[tuple[str, str]]] = {}  # pod uid -> claims (ns, name)

    # -- pods

    def pod_changed(self, ns: str, name: str, pod: Obj | None, old: Obj | None) -> None:
        if pod is None:
            uid = str(meta_of(old).get("uid", "")) if old is not None else ""
            for key in sorted(self._reserving.get(uid, ())):
                self.sync_claim(*key)
            return
        spec = pod.get("spec") or {}
        if not spec.get("resourceClaims"):
            return
        if not meta_of(pod).get("deletionTimestamp") and self._create_claims(ns, name, pod):
            return  # the status write ran this again for the new version
        if _pod_done(pod):
            for key in sorted(self._reserving.get(str(meta_of(pod).get("uid", "")), ())):
                self.sync_claim(*key)
        elif spec.get("nodeName"):
            self._reserve(ns, pod)

    def _create_claims(self, ns: str, name: str, pod: Obj) -> bool:
        """Create the missing claims of ``pod``; True when its status was written."""
        try:
            entries = pod_claim_names(pod)
        except APIError:
            return False
        recorded: list[dict[str, Any]] = []
        uid = str(meta_of(pod).get("uid", ""))
        claims = self.store.stored(RESOURCE_CLAIM, ns)
        for entry in entries:
            if entry.template_name is None or entry.state == CLAIM_NOT_NEEDED:
                continue
            if entry.state == CLAIM_GENERATED:
                existing = claims.get(entry.claim_name or "")
                if existing is not None and _owning_pod(existing) == (name, uid):
                    continue
            claim = self._find_claim(claims, name, uid, entry.name)
            if claim is None:
                template = self.store.stored(RESOURCE_CLAIM_TEMPLATE, ns).get(entry.template_name)
                if template is None:
                    self._waiting.setdefault((ns, entry.template_name), set()).add(name)
                    continue
                try:
                    claim = self.store.create(self._claim_from(template, ns, name, uid, entry.name))
                except ApiError as e:  # the template's spec is no valid claim: the pod waits
                    log.info(
                        "resourceclaim-controller: pod %s/%s, claim %s: %s", ns, name, entry.name, e
                    )
                    continue
            recorded.append({"name": entry.name, "resourceClaimName": meta_of(claim)["name"]})
        if not recorded:
            return False
        new = deep_copy(pod)
        status = new.setdefault("status", {})
        names = {r["name"] for r in recorded}
        kept = [
            s
            for s in status.get("resourceClaimStatuses") or ()
            if not (isinstance(s, Mapping) and s.get("name") in names)
        ]
        status["resourceClaimStatuses"] = kept + recorded
        self.store.commit(self.store.resource(POD), MODIFIED, new, pod)
        return True

    @staticmethod
    def _find_claim(claims: Mapping[str, Obj], pod_name: str, uid: str, entry: str) -> Obj | None:
        """A claim made for this entry earlier whose name the pod's status lost."""
        for claim in claims.values():
            annotations = meta_of(claim).get("annotations") or {}
            if (
                _owning_pod(claim) == (pod_name, uid)
                and annotations.get(POD_CLAIM_ANNOTATION) == entry
            ):
                return claim
        return None

    @staticmethod
    def _claim_from(template: Obj, ns: str, pod_name: str, uid: str, entry: str) -> Obj:
        tspec = template.get("spec") or {}
        tmeta = tspec.get("metadata") or {}
        annotations = dict(tmeta.get("annotations") or {})
        annotations[POD_CLAIM_ANNOTATION] = entry
        metadata: dict[str, Any] = {
            "generateName": _generate_name(pod_name, entry),
            "namespace": ns,
            "annotations": annotations,
            "ownerReferences": [
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "name": pod_name,
                    "uid": uid,
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        }
        if tmeta.get("labels"):
            metadata["labels"] = dict(tmeta["labels"])
        return {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": metadata,
            "spec": deep_copy(tspec.get("spec") or {}),
        }

    def _reserve(self, ns: str, pod: Obj) -> None:
        """A bound pod is a consumer of each of its allocated claims."""
        try:
            entries = pod_claim_names(pod)
        except APIError:
            return
        meta = meta_of(pod)
        uid = str(meta.get("uid", ""))
        claims = self.store.stored(RESOURCE_CLAIM, ns)
        for entry in entries:
            claim = claims.get(entry.claim_name or "")
            if claim is None or entry.claim_name is None:
                continue
            if entry.owned and _owning_pod(claim) != (meta["name"], uid):
                continue
            status = claim.get("status") or {}
            reserved = status.get("reservedFor") or []
            if status.get("allocation") is None or any(
                isinstance(r, Mapping) and r.get("uid") == uid for r in reserved
            ):
                continue
            new = deep_copy(claim)
            new["status"]["reservedFor"] = [
                *reserved,
                {"resource": "pods", "name": meta["name"], "uid": uid},
            ]
            self.store.commit(self.store.resource(RESOURCE_CLAIM), MODIFIED, new, claim)

    # -- templates and claims

    def template_changed(self, ns: str, name: str, template: Obj | None) -> None:
        if template is None:
            return
        for pod_name in sorted(self._waiting.pop((ns, name), ())):
            pod = self.store.stored(POD, ns).get(pod_name)
            if pod is not None:
                self.pod_changed(ns, pod_name, pod, None)

    def claim_changed(self, ns: str, name: str, claim: Obj | None, old: Obj | None) -> None:
        key = (ns, name)
        before = _consumer_uids(old)
        after = _consumer_uids(claim)
        for uid in before - after:
            keys = self._reserving.get(uid)
            if keys is not None:
                keys.discard(key)
                if not keys:
                    del self._reserving[uid]
        for uid in after - before:
            self._reserving.setdefault(uid, set()).add(key)
        if claim is not None:
            self.sync_claim(ns, name)

    def sync_claim(self, ns: str, name: str) -> None:
        """Drop reservations of pods that are gone, replaced or done; deallocate a claim
        reserved for nobody (the scheduler's finalizer says it may); delete a generated claim
        whose pod is done."""
        store = self.store
        rt = store.resource(RESOURCE_CLAIM)
        claim = store.stored(RESOURCE_CLAIM, ns).get(name)
        if claim is None:
            return
        pods = store.stored(POD, ns)
        status = claim.get("status") or {}
        reserved = [r for r in status.get("reservedFor") or () if isinstance(r, Mapping)]
        valid = []
        for r in reserved:
            if r.get("resource") == "pods" and not r.get("apiGroup"):
                pod = pods.get(str(r.get("name") or ""))
                if pod is None or meta_of(pod).get("uid") != r.get("uid") or _pod_done(pod):
                    continue
            valid.append(r)
        finalizers = list(meta_of(claim).get("finalizers") or ())
        deleting = bool(meta_of(claim).get("deletionTimestamp"))
        if len(valid) < len(reserved) or (deleting and not valid and CLAIM_FINALIZER in finalizers):
            new = deep_copy(claim)
            new_status = new.setdefault("status", {})
            new_status["reservedFor"] = valid
            if not valid:
                new_status.pop("reservedFor", None)
                if CLAIM_FINALIZER in finalizers:
                    new_status.pop("allocation", None)
                    finalizers.remove(CLAIM_FINALIZER)
                    new["metadata"]["finalizers"] = finalizers
                    if not finalizers:
                        new["metadata"].pop("finalizers", None)
            if not new_status:
                new.pop("status", None)
            if deleting and not finalizers:
                store.remove(rt, new)
                return
            store.commit(rt, MODIFIED, new, claim)
            claim = store.stored(RESOURCE_CLAIM, ns).get(name)
            if claim is None:
                return
        if valid or deleting:
            return
        owner = _owning_pod(claim)
        if owner is None:
            return
        pod = pods.get(owner[0])
        if pod is not None and (meta_of(pod).get("uid") != owner[1] or _pod_done(pod)):
            store.delete(rt, claim, "Background", None)


def _consumer_uids(claim: Obj | None) -> set[str]:
    if claim is None:
        return set()
    return {
        str(r.get("uid"))
        for r in (claim.get("status") or {}).get("reservedFor") or ()
        if isinstance(r, Mapping) and r.get("resource") == "pods" and r.get("uid")
    }


# --------------------------------------------------------------------------- the hook


class KubeControllerManager:
    """The loops behind the server's hook (see the module docstring)."""

    def __init__(self, store: Store) -> None:
        self.disruption = PodDisruptionBudgets(store)
        self.garbage_collector = GarbageCollector(store)
        self.namespaces = NamespaceController(store)
        self.resource_claims = ResourceClaims(store)

    def sync(self, objects: Iterable[tuple[ResourceType, Obj]]) -> None:
        """Take in what the server already stores (as the loops' informers list first)."""
        for rt, obj in objects:
            self.garbage_collector.index(str(meta_of(obj).get("uid", "")), None, obj)
            ns = namespace_of(obj)
            if rt.key == PDB:
                self.disruption.pdb_changed(ns, meta_of(obj)["name"], obj)
            elif rt.key == RESOURCE_CLAIM:
                self.resource_claims.claim_changed(ns, meta_of(obj)["name"], obj, None)

    # -- called by the server, under its lock

    def committed(self, rt: ResourceType, etype: str, obj: Obj, old: Obj | None) -> None:
        """A change was stored (after its watch events went out)."""
        meta = obj["metadata"]
        uid = str(meta.get("uid", ""))
        ns = meta.get("namespace", "") if rt.namespaced else ""
        removed = etype == DELETED
        self.garbage_collector.index(uid, None if etype == ADDED else old, None if removed else obj)
        if rt.key == POD:
            self.disruption.pod_changed(ns, meta["name"], None if removed else obj)
            # last: its writes run this hook again, after the loops above saw this version
            self.resource_claims.pod_changed(ns, meta["name"], None if removed else obj, old)
        elif rt.key == PDB:
            self.disruption.pdb_changed(ns, meta["name"], None if removed else obj)
        elif rt.key == RESOURCE_CLAIM:
            self.resource_claims.claim_changed(
                ns, meta["name"], None if removed else obj, None if etype == ADDED else old
            )
        elif rt.key == RESOURCE_CLAIM_TEMPLATE and etype == ADDED:
            self.resource_claims.template_changed(ns, meta["name"], obj)

    def owner_deleting(self, uid: str, policy: str) -> None:
        """A ``Foreground`` delete: the dependents go before the owner."""
        self.garbage_collector.collect(uid, policy)

    def removed(self, rt: ResourceType, obj: Obj, policy: str) -> None:
        """An object left storage: cascade to its dependents; a namespace may now be
        empty."""
        uid = meta_of(obj).get("uid")
        if uid:
            self.garbage_collector.collect(str(uid), policy)
        ns = meta_of(obj).get("namespace")
        if rt.namespaced and ns:
            self.namespaces.maybe_finish(str(ns))

    def namespace_terminating(self, name: str) -> None:
        """A namespace was marked Terminating: delete what is in it."""
        self.namespaces.terminating(name)


def register(server: InMemoryApiServer) -> KubeControllerManager:
    """Run the loops on ``server``'s writes from now on (they first take in what it
    stores already); returns them. A server runs them once: registering twice is an error."""
    return server.attach_controller_manager()
