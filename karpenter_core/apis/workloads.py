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
matching pods yields 1 pending pod.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Container, Iterable, Mapping, Sequence
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
    "WORKLOAD_KINDS",
    "Expansion",
    "WorkloadError",
    "expand_workload",
    "expand_workloads",
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


def _live(pods: Iterable[Pod], namespace: str) -> list[Pod]:
    return [p for p in pods if p.namespace == namespace and not p.is_terminal()]


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


def _expand_deployment(obj: Mapping[str, Any], existing: Sequence[Pod]) -> Expansion:
    namespace, name, uid = _meta(obj)
    spec = _spec(obj)
    template, labels = _template(spec)
    selector = _selector(spec, labels)
    replicas = _count(spec, "replicas", 1)
    have = sum(1 for p in _live(existing, namespace) if label_selector_matches(selector, p.labels))
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


def _expand_replicaset(obj: Mapping[str, Any], existing: Sequence[Pod]) -> Expansion:
    namespace, name, uid = _meta(obj)
    spec = _spec(obj)
    template, labels = _template(spec)
    selector = _selector(spec, labels)
    replicas = _count(spec, "replicas", 1)
    have = sum(1 for p in _live(existing, namespace) if label_selector_matches(selector, p.labels))
    return Expansion(
        pods=_replicaset_pods(name, uid, namespace, template, labels, replicas, have),
        controllers=[_controller("ReplicaSet", namespace, name, uid, selector)],
    )


def _expand_statefulset(
    obj: Mapping[str, Any],
    existing: Sequence[Pod],
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
    have = {p.name for p in _live(existing, namespace)}
    revision = f"{name}-{template_hash(template)}"
    owner = _owner("apps/v1", "StatefulSet", name, uid)
    claim_templates = spec.get("volumeClaimTemplates") or ()
    if not isinstance(claim_templates, Sequence):
        raise ObjectError("spec.volumeClaimTemplates", "expected a list")
    pods: list[Pod] = []
    pvcs: list[PersistentVolumeClaim] = []
    for ordinal in range(start, start + replicas):
        pod_name = f"{name}-{ordinal}"
        if pod_name in have:
            continue
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


def _expand_job(obj: Mapping[str, Any], existing: Sequence[Pod]) -> Expansion:
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
    have = [
        p
        for p in _live(existing, namespace)
        if any(o.kind == "Job" and o.name == name for o in p.owner_references)
        or p.labels.get("batch.kubernetes.io/job-name") == name
    ]
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

    ``existing_pods`` are pods already known (they satisfy replicas); ``default_storage_class``
    fills StatefulSet claim templates without a class, as admission would."""
    kind = obj.get("kind")
    if kind == "Deployment":
        return _expand_deployment(obj, existing_pods)
    if kind == "ReplicaSet":
        return _expand_replicaset(obj, existing_pods)
    if kind == "StatefulSet":
        return _expand_statefulset(
            obj, existing_pods, {p.key: p for p in existing_pvcs}, default_storage_class
        )
    if kind == "Job":
        return _expand_job(obj, existing_pods)
    raise ObjectError("kind", f"{shown_repr(kind)} is not a workload kind")


def _owned_by_listed_deployment(obj: Mapping[str, Any], deployments: set[tuple[str, str]]) -> bool:
    meta = obj.get("metadata") or {}
    namespace = str(meta.get("namespace") or "default")
    return any(
        o.get("kind") == "Deployment" and (namespace, o.get("name")) in deployments
        for o in meta.get("ownerReferences") or ()
        if isinstance(o, Mapping)
    )


def expand_workloads(
    objects: Sequence[Mapping[str, Any]],
    existing_pods: Sequence[Pod] = (),
    existing_pvcs: Iterable[PersistentVolumeClaim] = (),
    default_storage_class: str | None = None,
) -> list[tuple[int, Expansion]]:
    """Expand many workloads; returns ``(index in objects, expansion)`` for each one expanded.
    A bad object raises :class:`WorkloadError` carrying its index.

    A ReplicaSet owned by a Deployment that is also listed is skipped: the Deployment
    accounts for its pods (exported clusters contain both)."""
    deployments = {
        (str(meta.get("namespace") or "default"), str(meta.get("name")))
        for o in objects
        if o.get("kind") == "Deployment"
        # A metadata that is not a mapping is reported when the Deployment itself expands.
        for meta in [o.get("metadata")]
        if isinstance(meta, Mapping)
    }
    pvcs = list(existing_pvcs)
    out = []
    for i, obj in enumerate(objects):
        if obj.get("kind") == "ReplicaSet" and _owned_by_listed_deployment(obj, deployments):
            continue
        try:
            exp = expand_workload(obj, existing_pods, pvcs, default_storage_class)
        except ObjectError as e:
            raise WorkloadError(i, e) from None
        pvcs.extend(exp.pvcs)
        out.append((i, exp))
    return out
