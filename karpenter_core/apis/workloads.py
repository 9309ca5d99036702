"""Expand workload controllers (Deployments, ReplicaSets, StatefulSets, Jobs) into the pods
their controllers would create, so a what-if schedule can be asked of manifests alone.

Names follow the controllers' shapes so output reads naturally and repeat runs agree:

* Deployment ``web`` -> ReplicaSet ``web-<template hash>`` -> pods ``web-<hash>-<5 chars>``
  (pods carry the ``pod-template-hash`` label and a ReplicaSet owner reference);
* ReplicaSet ``rs`` -> pods ``rs-<5 chars>``;
* StatefulSet ``db`` -> pods ``db-0``, ``db-1``, ... plus PVCs ``<claim template>-db-<i>``
  for its ``volumeClaimTemplates`` (unless such PVCs already exist);
* Job ``batch`` -> ``batch-<5 chars>`` (``batch-<index>-<5 chars>`` when Indexed).

Hashes and suffixes are derived from the object, not random, so output is deterministic.
They are not byte-identical to kube-controller-manager's (which hashes Go structs).

Replicas already present as pods in the input (bound or not) are not created again, so a
snapshot exported from a cluster is not double counted: a Deployment with 3 replicas and 2
of its pods yields 1 pending pod. A pod counts for the workload its controller owner
reference names by uid (a ReplicaSet's pods count for the listed Deployment owning that
ReplicaSet); a pod with no controller, or whose controller is not in the input, counts for
every workload whose selector matches it in its namespace, as a controller would adopt it.
A Deployment whose ReplicaSet for its current template is in the input adds its pods to
that ReplicaSet, as the Deployment controller would, rather than to one it would create.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Callable, Container, Iterable, Mapping, Sequence
from typing import Any

from attrs import field, frozen

from karpenter_core.apis.labelselector import LabelSelector, SelectorError, label_selector_matches
from karpenter_core.apis.limits import shown_repr
from karpenter_core.apis.objects import (
    Controller,
    ObjectError,
    PersistentVolumeClaim,
    Pod,
    deterministic_uid,
    validate_pod_scheduling,
)

__all__ = [
    "POD_INDEX_LABEL",
    "WORKLOAD_KINDS",
    "Expansion",
    "WorkloadError",
    "expand_workload",
    "expand_workloads",
    "runs_template",
    "statefulset_ordinal",
    "template_hash",
]

WORKLOAD_KINDS: frozenset[tuple[str, str]] = frozenset(
    {
        ("apps/v1", "Deployment"),
        ("apps/v1", "ReplicaSet"),
        ("apps/v1", "StatefulSet"),
        ("batch/v1", "Job"),
    }
)

_ALPHANUMS = "bcdfghjklmnpqrstvwxz2456789"  # k8s SafeEncodeString alphabet (no vowels)


def _tuple(items: Iterable[Any]) -> tuple[Any, ...]:
    return tuple(items)


class WorkloadError(ObjectError):
    """An :class:`ObjectError` in ``objects[index]`` of :func:`expand_workloads`."""

    def __init__(self, index: int, error: ObjectError) -> None:
        super().__init__(error.path, error.message)
        self.index = index


@frozen
class Expansion:
    """Pods (and PVCs for StatefulSet claim templates) a workload adds."""

    pods: tuple[Pod, ...] = field(default=(), converter=_tuple)
    pvcs: tuple[PersistentVolumeClaim, ...] = field(default=(), converter=_tuple)
    controllers: tuple[Controller, ...] = field(default=(), converter=_tuple)
    """The pods' controller (a Deployment's ReplicaSet, the ReplicaSet or StatefulSet
    itself), for default topology spreads that deduce selectors from it."""


def _controller(
    kind: str, namespace: str, name: str, uid: str, selector: Mapping[str, Any]
) -> Controller:
    return Controller.from_dict(
        {
            "apiVersion": "apps/v1",
            "kind": kind,
            "metadata": {"name": name, "namespace": namespace, "uid": uid},
            "spec": {"selector": dict(selector)},
        }
    )


def _safe_encode(s: str) -> str:
    return "".join(_ALPHANUMS[ord(ch) % len(_ALPHANUMS)] for ch in s)


def template_hash(template: Mapping[str, Any]) -> str:
    """``pod-template-hash``: FNV-1a (32 bit) of the template, encoded like kube does."""
    h = 0x811C9DC5
    for b in json.dumps(template, sort_keys=True, separators=(",", ":"), default=str).encode():
        h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
    return _safe_encode(str(h))


def _suffix(*parts: str) -> str:
    digest = hashlib.sha256("/".join(parts).encode()).digest()
    return "".join(_ALPHANUMS[b % len(_ALPHANUMS)] for b in digest[:5])


def _meta(obj: Mapping[str, Any]) -> tuple[str, str, str]:
    meta = obj.get("metadata")
    if not isinstance(meta, Mapping):
        raise ObjectError("metadata", "required")
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        raise ObjectError("metadata.name", "required")
    namespace = str(meta.get("namespace") or "default")
    uid = str(meta.get("uid") or deterministic_uid(str(obj.get("kind")), namespace, name))
    return namespace, name, uid


def _spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = obj.get("spec")
    if not isinstance(spec, Mapping):
        raise ObjectError("spec", "required")
    return spec


def _template(spec: Mapping[str, Any]) -> tuple[Mapping[str, Any], dict[str, str]]:
    template = spec.get("template")
    if not isinstance(template, Mapping):
        raise ObjectError("spec.template", "required")
    tmeta = template.get("metadata") or {}
    if not isinstance(tmeta, Mapping):
        raise ObjectError("spec.template.metadata", "expected an object")
    labels = tmeta.get("labels") or {}
    if not isinstance(labels, Mapping):
        raise ObjectError("spec.template.metadata.labels", "expected an object")
    if not isinstance(template.get("spec"), Mapping):
        raise ObjectError("spec.template.spec", "required")
    validate_pod_scheduling(template["spec"], "spec.template.spec")
    return template, {str(k): str(v) for k, v in labels.items()}


MAX_EXPANDED_PODS = 100_000
"""Most pods one workload may expand into: beyond this an offline run would not finish, so a
typo like ``replicas: 99999999999`` is reported instead of hanging (kube caps at int32)."""


def _count(
    spec: Mapping[str, Any], key: str, default: int, where: str = "spec", *, pods: bool = True
) -> int:
    """A non-negative integer field; ``pods`` when it counts pods to create (so it is capped)."""
    v = spec.get(key)
    if v is None:
        return default
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise ObjectError(f"{where}.{key}", f"expected a non-negative integer, got {shown_repr(v)}")
    if pods and v > MAX_EXPANDED_PODS:
        raise ObjectError(
            f"{where}.{key}",
            f"{v} is more than the {MAX_EXPANDED_PODS} pods one workload may expand to",
        )
    return v


def _selector(spec: Mapping[str, Any], labels: Mapping[str, str]) -> Mapping[str, Any]:
    sel = spec.get("selector")
    if not isinstance(sel, Mapping):
        raise ObjectError("spec.selector", "required")
    try:
        selector = LabelSelector.from_dict(sel)
    except SelectorError as e:
        path = f"spec.selector.{e.path}" if e.path else "spec.selector"
        raise ObjectError(path, e.message) from None
    if not selector.matches(labels):
        raise ObjectError("spec.selector", "does not match spec.template.metadata.labels")
    return sel


def _owner(api_version: str, kind: str, name: str, uid: str) -> dict[str, Any]:
    return {
        "apiVersion": api_version,
        "kind": kind,
        "name": name,
        "uid": uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def _pod(
    template: Mapping[str, Any],
    namespace: str,
    name: str,
    labels: Mapping[str, str],
    owner: dict[str, Any],
    extra_annotations: Mapping[str, str] | None = None,
    volumes: Sequence[Mapping[str, Any]] = (),
) -> Pod:
    tmeta = template.get("metadata") or {}
    annotations = dict(tmeta.get("annotations") or {})
    annotations.update(extra_annotations or {})
    # Shallow: pod views are read-only, so replicas may share the template's nested values.
    spec = dict(template["spec"])
    if volumes:
        names = {v.get("name") for v in volumes}
        spec["volumes"] = [v for v in spec.get("volumes") or () if v.get("name") not in names]
        spec["volumes"].extend(volumes)
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": dict(labels),
            "annotations": annotations,
            "ownerReferences": [owner],
        },
        "spec": spec,
        "status": {"phase": "Pending"},
    }
    try:
        return Pod.from_dict(pod)
    except ObjectError as e:
        raise ObjectError(f"spec.template.{e.path}", e.message) from None


def runs_template(rs: Mapping[str, Any], template: Mapping[str, Any]) -> bool:
    """Whether the ReplicaSet runs ``template`` (its ``pod-template-hash`` label aside), as
    the Deployment controller finds its current ReplicaSet among those it owns: a real
    cluster's is named by a hash this module does not reproduce."""
    theirs = copy.deepcopy((rs.get("spec") or {}).get("template") or {})
    labels = (theirs.get("metadata") or {}).get("labels")
    if isinstance(labels, dict):
        labels.pop("pod-template-hash", None)
    return bool(theirs == template)


def _controller_uid(pod: Pod) -> str:
    return next((o.uid for o in pod.owner_references if o.controller and o.uid), "")


def _explicit_uid(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata")
    uid = meta.get("uid") if isinstance(meta, Mapping) else None
    return uid if isinstance(uid, str) else ""


@frozen
class _PodIndex:
    """The input's live pods by the workload that accounts for them (built once for all
    workloads, so expanding a snapshot costs its pods once, not once per workload)."""

    owned: Mapping[str, tuple[Pod, ...]]
    """Workload uid -> the pods its controller owner references give it (through its
    ReplicaSets, for a Deployment)."""
    unowned: Mapping[str, tuple[Pod, ...]]
    """Namespace -> pods no listed workload controls: each workload's selector decides."""

    @classmethod
    def of(cls, pods: Iterable[Pod], accounts_for: Mapping[str, str]) -> _PodIndex:
        """``accounts_for``: uid of each listed object that controls pods -> uid of the
        workload its pods count for (itself, or a ReplicaSet's Deployment)."""
        owned: dict[str, list[Pod]] = {}
        unowned: dict[str, list[Pod]] = {}
        for p in pods:
            if p.is_terminal():
                continue
            workload = accounts_for.get(_controller_uid(p))
            if workload is None:
                unowned.setdefault(p.namespace, []).append(p)
            else:
                owned.setdefault(workload, []).append(p)
        return cls(
            {k: tuple(v) for k, v in owned.items()}, {k: tuple(v) for k, v in unowned.items()}
        )

    def accounted(self, uid: str, namespace: str, adopts: Callable[[Pod], bool]) -> list[Pod]:
        """The live pods of the workload ``uid`` in ``namespace``: its own, and those no
        listed workload controls that it ``adopts``."""
        mine = [p for p in self.owned.get(uid, ()) if p.namespace == namespace]
        return mine + [p for p in self.unowned.get(namespace, ()) if adopts(p)]


def _selects(selector: Mapping[str, Any]) -> Callable[[Pod], bool]:
    return lambda p: label_selector_matches(selector, p.labels)


def _replicaset_pods(
    rs_name: str,
    rs_uid: str,
    namespace: str,
    template: Mapping[str, Any],
    labels: Mapping[str, str],
    want: int,
    existing: int,
) -> list[Pod]:
    owner = _owner("apps/v1", "ReplicaSet", rs_name, rs_uid)
    out = []
    for i in range(existing, want):
        name = f"{rs_name}-{_suffix(namespace, rs_name, str(i))}"
        out.append(_pod(template, namespace, name, labels, owner))
    return out


def _expand_deployment(
    obj: Mapping[str, Any], pods: _PodIndex, replicasets: Sequence[Mapping[str, Any]]
) -> Expansion:
    """``replicasets``: the listed ReplicaSets the Deployment owns."""
    namespace, name, uid = _meta(obj)
    spec = _spec(obj)
    template, labels = _template(spec)
    selector = _selector(spec, labels)
    replicas = _count(spec, "replicas", 1)
    have = len(pods.accounted(uid, namespace, _selects(selector)))
    current = next((rs for rs in replicasets if runs_template(rs, template)), None)
    if current is not None:
        # the input holds the ReplicaSet the controller would scale: new pods are its own,
        # and it is listed as a controller where it is read (expand_workloads)
        _, rs_name, rs_uid = _meta(current)
        rs_template, rs_labels = _template(_spec(current))
        return Expansion(
            pods=_replicaset_pods(
                rs_name, rs_uid, namespace, rs_template, rs_labels, replicas, have
            )
        )
    h = template_hash(template)
    rs_name = f"{name}-{h}"
    pod_labels = {**labels, "pod-template-hash": h}
    rs_uid = deterministic_uid("ReplicaSet", namespace, rs_name, uid)
    # The Deployment controller adds the template hash to its ReplicaSet's selector.
    rs_selector = {
        **selector,
        "matchLabels": {**(selector.get("matchLabels") or {}), "pod-template-hash": h},
    }
    return Expansion(
        pods=_replicaset_pods(rs_name, rs_uid, namespace, template, pod_labels, replicas, have),
        controllers=[_controller("ReplicaSet", namespace, rs_name, rs_uid, rs_selector)],
    )


def _expand_replicaset(obj: Mapping[str, Any], pods: _PodIndex) -> Expansion:
    namespace, name, uid = _meta(obj)
    spec = _spec(obj)
    template, labels = _template(spec)
    selector = _selector(spec, labels)
    replicas = _count(spec, "replicas", 1)
    have = len(pods.accounted(uid, namespace, _selects(selector)))
    return Expansion(
        pods=_replicaset_pods(name, uid, namespace, template, labels, replicas, have),
        controllers=[_controller("ReplicaSet", namespace, name, uid, selector)],
    )


POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"


def statefulset_ordinal(pod_name: str, labels: Mapping[str, Any], set_name: str) -> int | None:
    """A StatefulSet pod's ordinal: its ``apps.kubernetes.io/pod-index`` label (kept by
    anonymising, where the name is hashed), else the number ending ``<set_name>-<n>``."""
    index = str(labels.get(POD_INDEX_LABEL) or "")
    if index.isdigit():
        return int(index)
    prefix, _, number = pod_name.rpartition("-")
    return int(number) if prefix == set_name and number.isdigit() else None


def _ordinal(pod: Pod, name: str) -> int | None:
    return statefulset_ordinal(pod.name, pod.labels, name)


def _expand_statefulset(
    obj: Mapping[str, Any],
    pods_in: _PodIndex,
    existing_pvcs: Mapping[str, PersistentVolumeClaim],
    default_storage_class: str | None,
) -> Expansion:
    namespace, name, uid = _meta(obj)
    spec = _spec(obj)
    template, labels = _template(spec)
    selector = _selector(spec, labels)
    replicas = _count(spec, "replicas", 1)
    ordinals = spec.get("ordinals") or {}
    start = (
        _count(ordinals, "start", 0, "spec.ordinals", pods=False)
        if isinstance(ordinals, Mapping)
        else 0
    )
    # a pod no listed workload controls is this one's when it bears one of its pod names
    have = pods_in.accounted(uid, namespace, lambda p: _ordinal(p, name) is not None)
    taken = {_ordinal(p, name) for p in have}
    # ordinals not taken, as many as the replicas its pods do not already account for (a
    # pod whose ordinal cannot be read still counts)
    missing = [o for o in range(start, start + replicas) if o not in taken]
    missing = missing[: max(0, replicas - len(have))]
    revision = f"{name}-{template_hash(template)}"
    owner = _owner("apps/v1", "StatefulSet", name, uid)
    claim_templates = spec.get("volumeClaimTemplates") or ()
    if not isinstance(claim_templates, Sequence):
        raise ObjectError("spec.volumeClaimTemplates", "expected a list")
    pods: list[Pod] = []
    pvcs: list[PersistentVolumeClaim] = []
    for ordinal in missing:
        pod_name = f"{name}-{ordinal}"
        volumes = []
        for j, ct in enumerate(claim_templates):
            path = f"spec.volumeClaimTemplates[{j}]"
            if not isinstance(ct, Mapping):
                raise ObjectError(path, "expected an object")
            ct_name = (ct.get("metadata") or {}).get("name")
            if not isinstance(ct_name, str) or not ct_name:
                raise ObjectError(f"{path}.metadata.name", "required")
            claim = f"{ct_name}-{pod_name}"
            volumes.append({"name": ct_name, "persistentVolumeClaim": {"claimName": claim}})
            if f"{namespace}/{claim}" in existing_pvcs:
                continue
            pvc_spec = copy.deepcopy(dict(ct.get("spec") or {}))
            if "storageClassName" not in pvc_spec and default_storage_class:
                pvc_spec["storageClassName"] = default_storage_class
            pvc = {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": {
                    "name": claim,
                    "namespace": namespace,
                    "labels": dict((ct.get("metadata") or {}).get("labels") or {}),
                },
                "spec": pvc_spec,
                "status": {"phase": "Pending"},
            }
            try:
                pvcs.append(PersistentVolumeClaim.from_dict(pvc))
            except ObjectError as e:
                raise ObjectError(f"{path}.{e.path}", e.message) from None
        pod_labels = {
            **labels,
            "statefulset.kubernetes.io/pod-name": pod_name,
            "apps.kubernetes.io/pod-index": str(ordinal),
            "controller-revision-hash": revision,
        }
        pods.append(_pod(template, namespace, pod_name, pod_labels, owner, volumes=volumes))
    return Expansion(
        pods=pods,
        pvcs=pvcs,
        controllers=[_controller("StatefulSet", namespace, name, uid, selector)],
    )


def _expand_job(obj: Mapping[str, Any], pods_in: _PodIndex) -> Expansion:
    namespace, name, uid = _meta(obj)
    spec = _spec(obj)
    template, labels = _template(spec)
    if spec.get("suspend") is True:
        return Expansion()
    parallelism = _count(spec, "parallelism", 1)
    completions = spec.get("completions")
    status = obj.get("status") or {}
    succeeded = (
        _count(status, "succeeded", 0, "status", pods=False) if isinstance(status, Mapping) else 0
    )
    want = parallelism
    if completions is not None:
        want = min(parallelism, max(0, _count(spec, "completions", 1) - succeeded))
    have = pods_in.accounted(
        uid,
        namespace,
        lambda p: (
            any(o.kind == "Job" and o.name == name for o in p.owner_references)
            or p.labels.get("batch.kubernetes.io/job-name") == name
        ),
    )
    indexed = spec.get("completionMode") == "Indexed"
    job_labels = {
        **labels,
        "batch.kubernetes.io/controller-uid": uid,
        "batch.kubernetes.io/job-name": name,
        "controller-uid": uid,
        "job-name": name,
    }
    owner = _owner("batch/v1", "Job", name, uid)
    taken = {p.labels.get("batch.kubernetes.io/job-completion-index") for p in have}
    pods = []
    index = 0
    for i in range(len(have), want):
        if indexed:
            while str(index) in taken:
                index += 1
            idx = str(index)
            index += 1
            pod_name = f"{name}-{idx}-{_suffix(namespace, name, idx)}"
            pods.append(
                _pod(
                    template,
                    namespace,
                    pod_name,
                    {**job_labels, "batch.kubernetes.io/job-completion-index": idx},
                    owner,
                    extra_annotations={"batch.kubernetes.io/job-completion-index": idx},
                )
            )
        else:
            pod_name = f"{name}-{_suffix(namespace, name, str(i))}"
            pods.append(_pod(template, namespace, pod_name, job_labels, owner))
    return Expansion(pods=pods)


def ephemeral_claims(
    pod: Pod, existing: Container[str] = (), default_storage_class: str | None = None
) -> list[PersistentVolumeClaim]:
    """The PVCs the ephemeral-volume controller would create for ``pod``: one per generic
    ephemeral volume, named ``<pod>-<volume>``, from its ``volumeClaimTemplate`` (the
    cluster default StorageClass filled in as admission would). Claims whose
    ``namespace/name`` is in ``existing`` are not created again. Raises
    :class:`ObjectError` with the path under ``spec.volumes[i]`` for a bad template."""
    out: list[PersistentVolumeClaim] = []
    for i, volume in enumerate(pod.raw.get("spec", {}).get("volumes") or ()):
        eph = volume.get("ephemeral") if isinstance(volume, Mapping) else None
        if eph is None:
            continue
        path = f"spec.volumes[{i}].ephemeral.volumeClaimTemplate"
        template = eph.get("volumeClaimTemplate") if isinstance(eph, Mapping) else None
        if not isinstance(template, Mapping):
            raise ObjectError(path, "required")
        name = f"{pod.name}-{volume.get('name', '')}"
        if f"{pod.namespace}/{name}" in existing:
            continue
        spec = copy.deepcopy(dict(template.get("spec") or {}))
        if "storageClassName" not in spec and default_storage_class:
            spec["storageClassName"] = default_storage_class
        meta = template.get("metadata") or {}
        claim = {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {
                "name": name,
                "namespace": pod.namespace,
                "labels": dict(meta.get("labels") or {}) if isinstance(meta, Mapping) else {},
                "ownerReferences": [_owner("v1", "Pod", pod.name, pod.uid)],
            },
            "spec": spec,
            "status": {"phase": "Pending"},
        }
        try:
            out.append(PersistentVolumeClaim.from_dict(claim))
        except ObjectError as e:
            raise ObjectError(f"{path}.{e.path}", e.message) from None
    return out


def expand_workload(
    obj: Mapping[str, Any],
    existing_pods: Sequence[Pod] = (),
    existing_pvcs: Iterable[PersistentVolumeClaim] = (),
    default_storage_class: str | None = None,
) -> Expansion:
    """Pods (and PVCs) one workload object adds; raises :class:`ObjectError` on bad input.

    ``existing_pods`` are pods already known: those it controls (by owner reference uid)
    and those without a controller that it selects satisfy replicas;
    ``default_storage_class`` fills StatefulSet claim templates without a class, as
    admission would."""
    uid = _explicit_uid(obj)
    pods = _PodIndex.of(existing_pods, {uid: uid} if uid else {})
    return _expand(obj, pods, list(existing_pvcs), default_storage_class, ())


def _expand(
    obj: Mapping[str, Any],
    pods: _PodIndex,
    existing_pvcs: Sequence[PersistentVolumeClaim],
    default_storage_class: str | None,
    replicasets: Sequence[Mapping[str, Any]],
) -> Expansion:
    kind = obj.get("kind")
    if kind == "Deployment":
        return _expand_deployment(obj, pods, replicasets)
    if kind == "ReplicaSet":
        return _expand_replicaset(obj, pods)
    if kind == "StatefulSet":
        return _expand_statefulset(
            obj, pods, {p.key: p for p in existing_pvcs}, default_storage_class
        )
    if kind == "Job":
        return _expand_job(obj, pods)
    raise ObjectError("kind", f"{shown_repr(kind)} is not a workload kind")


def _workload_uid(obj: Mapping[str, Any]) -> str:
    """The uid :func:`_meta` gives ``obj`` (its own, else derived from its name)."""
    try:
        return _meta(obj)[2]
    except ObjectError:
        return ""  # reported when the object itself expands


def _namespaced_name(obj: Mapping[str, Any]) -> tuple[str, str] | None:
    meta = obj.get("metadata")
    if not isinstance(meta, Mapping):
        return None  # reported when the object itself expands
    return str(meta.get("namespace") or "default"), str(meta.get("name"))


def _deployment_of(
    rs: Mapping[str, Any], deployments: Mapping[tuple[str, str], Mapping[str, Any]]
) -> Mapping[str, Any] | None:
    """The listed Deployment owning ``rs``: by name in the ReplicaSet's namespace, and by
    uid too when both the reference and the Deployment have one."""
    at = _namespaced_name(rs)
    if at is None:
        return None
    for ref in (rs.get("metadata") or {}).get("ownerReferences") or ():
        if not isinstance(ref, Mapping) or ref.get("kind") != "Deployment":
            continue
        dep = deployments.get((at[0], str(ref.get("name"))))
        dep_uid = _explicit_uid(dep) if dep is not None else ""
        if dep is not None and (not ref.get("uid") or not dep_uid or ref.get("uid") == dep_uid):
            return dep
    return None


def expand_workloads(
    objects: Sequence[Mapping[str, Any]],
    existing_pods: Sequence[Pod] = (),
    existing_pvcs: Iterable[PersistentVolumeClaim] = (),
    default_storage_class: str | None = None,
) -> list[tuple[int, Expansion]]:
    """Expand many workloads; returns ``(index in objects, expansion)`` for each one.
    A bad object raises :class:`WorkloadError` carrying its index.

    A ReplicaSet owned by a Deployment that is also listed adds no pods: the Deployment
    accounts for its pods (exported clusters and snapshots contain both); its expansion
    is the ReplicaSet as a controller (for default topology spreads). A pod counts for the
    listed workload its controller owner reference names (see the module docstring)."""
    deployments: dict[tuple[str, str], Mapping[str, Any]] = {}
    for obj in objects:
        at = _namespaced_name(obj) if obj.get("kind") == "Deployment" else None
        if at is not None:
            deployments[at] = obj
    owner_of: dict[int, Mapping[str, Any]] = {}  # ReplicaSet index -> its listed Deployment
    accounts_for: dict[str, str] = {}
    for i, obj in enumerate(objects):
        uid = _explicit_uid(obj)
        dep = _deployment_of(obj, deployments) if obj.get("kind") == "ReplicaSet" else None
        if dep is not None:
            owner_of[i] = dep
        if uid:  # pods name their controller by uid: only an explicit one can be named
            accounts_for[uid] = _workload_uid(dep) if dep is not None else uid
    pods = _PodIndex.of(existing_pods, accounts_for)
    owned_replicasets: dict[int, list[Mapping[str, Any]]] = {}
    for i, dep in owner_of.items():
        owned_replicasets.setdefault(id(dep), []).append(objects[i])
    pvcs = list(existing_pvcs)
    out = []
    for i, obj in enumerate(objects):
        try:
            if i in owner_of:
                namespace, name, uid = _meta(obj)
                selector = _selector(_spec(obj), _template(_spec(obj))[1])
                exp = Expansion(
                    controllers=[_controller("ReplicaSet", namespace, name, uid, selector)]
                )
            else:
                exp = _expand(
                    obj, pods, pvcs, default_storage_class, owned_replicasets.get(id(obj), ())
                )
        except ObjectError as e:
            raise WorkloadError(i, e) from None
        pvcs.extend(exp.pvcs)
        out.append((i, exp))
    return out
