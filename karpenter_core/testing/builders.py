"""Builders of Kubernetes objects for tests (upstream's ``pkg/test``, in Python).

Each returns a plain Kubernetes-shaped dict, the shape the API server stores and the engine
reads, with defaults that make a valid object and keyword overrides for what a test is
about. They only build: nothing is sent anywhere until a test applies the object
(``Environment.apply``). Names left out are generated (``pod-1``, ``node-2``...), so a
test names only the objects it refers to.

Quantities are Kubernetes strings (``"500m"``, ``"2Gi"``); times are datetimes (written
as RFC 3339); requirements, tolerations, taints and affinity are their API dicts.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from karpenter_core.apis import labels as wk
from karpenter_core.cloudprovider.protocol import NodeClassKind
from karpenter_core.runtime.clock import format_time
from karpenter_core.testing.fake import KWOK_NODE_CLASS

__all__ = [
    "NODEPOOL_READY_CONDITIONS",
    "START",
    "capacity_buffer",
    "condition",
    "daemonset",
    "deployment",
    "device",
    "device_class",
    "namespace",
    "node",
    "node_class_ref",
    "node_for",
    "nodeclaim",
    "nodeclass",
    "nodeoverlay",
    "nodepool",
    "owner_reference",
    "pdb",
    "pod",
    "pod_claim",
    "pod_template",
    "pods",
    "replicaset",
    "requirement",
    "resource_claim",
    "resource_claim_template",
    "resource_slice",
    "unschedulable_pod",
]

START = datetime(2026, 1, 1, tzinfo=UTC)
"""Where an Environment's virtual clock starts, and the default time of built conditions."""

NODEPOOL_READY_CONDITIONS = ("ValidationSucceeded", "NodeClassReady", "Ready")
"""What ``nodepool(ready=True)`` sets True: a pool the provisioner uses at once, without
waiting for the NodePool controllers."""

_ids = itertools.count(1)


def _name(prefix: str, name: str | None) -> str:
    return name if name is not None else f"{prefix}-{next(_ids)}"


def _meta(
    name: str,
    *,
    namespace: str | None = None,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    finalizers: Sequence[str] | None = None,
    owner: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    if labels:
        meta["labels"] = dict(labels)
    if annotations:
        meta["annotations"] = dict(annotations)
    if finalizers:
        meta["finalizers"] = list(finalizers)
    if owner is not None:
        meta["ownerReferences"] = [owner_reference(owner)]
    return meta


def _dicts(items: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return [dict(i) for i in items]


# ---------------------------------------------------------------------- pieces


def condition(
    type_: str,
    status: str | bool = True,
    *,
    reason: str | None = None,
    message: str = "",
    at: datetime | None = START,
    observed_generation: int | None = None,
) -> dict[str, Any]:
    """A status condition (``reason`` defaults to the type, as Karpenter's own do)."""
    if isinstance(status, bool):
        status = "True" if status else "False"
    out: dict[str, Any] = {
        "type": type_,
        "status": status,
        "reason": reason if reason is not None else type_,
        "message": message,
    }
    if at is not None:
        out["lastTransitionTime"] = format_time(at)
    if observed_generation is not None:
        out["observedGeneration"] = observed_generation
    return out


def owner_reference(
    owner: Mapping[str, Any] | str,
    name: str | None = None,
    *,
    uid: str | None = None,
    api_version: str | None = None,
    controller: bool = True,
    block_owner_deletion: bool | None = None,
) -> dict[str, Any]:
    """An ownerReference: to a built or stored object (its kind, name and uid), a kind
    and name (``owner_reference("ReplicaSet", "web")``), or a reference dict as it is."""
    if isinstance(owner, Mapping):
        if "metadata" not in owner:
            return dict(owner)
        meta = owner["metadata"]
        kind = str(owner.get("kind") or "")
        name = name or str(meta.get("name") or "")
        uid = uid or meta.get("uid") or f"{kind.lower()}-{name}-uid"
        api_version = api_version or str(owner.get("apiVersion") or "v1")
    else:
        kind = owner
        name = name or f"{kind.lower()}-1"
        uid = uid or f"{kind.lower()}-{name}-uid"
        api_version = api_version or _API_VERSIONS.get(kind, "v1")
    ref: dict[str, Any] = {"apiVersion": api_version, "kind": kind, "name": name, "uid": uid}
    if controller:
        ref["controller"] = True
    if block_owner_deletion is not None:
        ref["blockOwnerDeletion"] = block_owner_deletion
    return ref


_API_VERSIONS = {
    "ReplicaSet": "apps/v1",
    "Deployment": "apps/v1",
    "StatefulSet": "apps/v1",
    "DaemonSet": "apps/v1",
    "Job": "batch/v1",
    "CronJob": "batch/v1",
    "NodePool": "karpenter.sh/v1",
    "NodeClaim": "karpenter.sh/v1",
}


def requirement(
    key: str, operator: str, *values: str, min_values: int | None = None
) -> dict[str, Any]:
    """A node selector requirement (``requirement("karpenter.sh/capacity-type", "In",
    "spot")``); ``min_values`` is Karpenter's extension."""
    out: dict[str, Any] = {"key": key, "operator": operator}
    if values or operator in ("In", "NotIn"):
        out["values"] = list(values)
    if min_values is not None:
        out["minValues"] = min_values
    return out


def node_class_ref(
    kind: NodeClassKind | Mapping[str, str] = KWOK_NODE_CLASS, name: str = "default"
) -> dict[str, str]:
    """A NodePool's or NodeClaim's ``nodeClassRef`` (the fake provider's kind by default)."""
    if isinstance(kind, Mapping):
        return dict(kind)
    return {"group": kind.group, "kind": kind.kind, "name": name}


# ---------------------------------------------------------------------- pods


def pod(
    name: str | None = None,
    *,
    namespace: str = "default",
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    requests: Mapping[str, str] | None = None,
    limits: Mapping[str, str] | None = None,
    cpu: str | None = None,
    memory: str | None = None,
    image: str = "pause",
    node_name: str | None = None,
    node_selector: Mapping[str, str] | None = None,
    node_requirements: Sequence[Mapping[str, Any]] = (),
    tolerations: Sequence[Mapping[str, Any]] = (),
    affinity: Mapping[str, Any] | None = None,
    topology_spread: Sequence[Mapping[str, Any]] = (),
    host_ports: Sequence[int] = (),
    volumes: Sequence[Mapping[str, Any]] = (),
    owner: Mapping[str, Any] | None = None,
    priority: int | None = None,
    priority_class: str | None = None,
    termination_grace_period: int | None = None,
    finalizers: Sequence[str] | None = None,
    phase: str | None = None,
    conditions: Sequence[Mapping[str, Any]] = (),
    unschedulable: bool = False,
    ready: bool | None = None,
    start_time: datetime | None = None,
    spec: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A Pod with one container.

    ``cpu``/``memory`` are shorthands merged into ``requests``. ``node_requirements`` are
    required node-affinity terms' expressions (one term), added to ``affinity``. ``owner``
    is an object or ownerReference (see :func:`owner_reference`). Status: ``phase``
    defaults to Running when ``node_name`` is set and Pending otherwise;
    ``unschedulable`` adds ``PodScheduled=False`` (reason Unschedulable), what the
    kube-scheduler writes and what makes Karpenter act on a pod; ``ready`` adds a Ready
    condition. ``spec`` entries are merged into the spec last.
    """
    all_requests = dict(requests or {})
    if cpu is not None:
        all_requests["cpu"] = cpu
    if memory is not None:
        all_requests["memory"] = memory
    resources: dict[str, Any] = {}
    if all_requests:
        resources["requests"] = all_requests
    if limits:
        resources["limits"] = dict(limits)
    container: dict[str, Any] = {"name": "c", "image": image, "resources": resources}
    if host_ports:
        container["ports"] = [{"containerPort": p, "hostPort": p} for p in host_ports]
    body: dict[str, Any] = {"containers": [container]}
    if node_name:
        body["nodeName"] = node_name
    if node_selector:
        body["nodeSelector"] = dict(node_selector)
    aff = {k: dict(v) for k, v in (affinity or {}).items()}
    if node_requirements:
        node_aff = aff.setdefault("nodeAffinity", {})
        node_aff["requiredDuringSchedulingIgnoredDuringExecution"] = {
            "nodeSelectorTerms": [{"matchExpressions": _dicts(node_requirements)}]
        }
    if aff:
        body["affinity"] = aff
    if tolerations:
        body["tolerations"] = _dicts(tolerations)
    if topology_spread:
        body["topologySpreadConstraints"] = _dicts(topology_spread)
    if volumes:
        body["volumes"] = _dicts(volumes)
    if priority is not None:
        body["priority"] = priority
    if priority_class is not None:
        body["priorityClassName"] = priority_class
    if termination_grace_period is not None:
        body["terminationGracePeriodSeconds"] = termination_grace_period
    body.update(spec or {})
    status: dict[str, Any] = {"phase": phase or ("Running" if node_name else "Pending")}
    conds = _dicts(conditions)
    if unschedulable:
        conds.append({"type": "PodScheduled", "status": "False", "reason": "Unschedulable"})
    if ready is not None:
        conds.append({"type": "Ready", "status": "True" if ready else "False"})
    if conds:
        status["conditions"] = conds
    if start_time is not None:
        status["startTime"] = format_time(start_time)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": _meta(
            _name("pod", name),
            namespace=namespace,
            labels=labels,
            annotations=annotations,
            finalizers=finalizers,
            owner=owner,
        ),
        "spec": body,
        "status": status,
    }


def unschedulable_pod(name: str | None = None, **kw: Any) -> dict[str, Any]:
    """A pending pod the kube-scheduler has marked Unschedulable (upstream's
    ``UnschedulablePod``): what Karpenter provisions for."""
    return pod(name, unschedulable=True, **kw)


def pods(count: int, *, prefix: str = "pod", **kw: Any) -> list[dict[str, Any]]:
    """``count`` pods named ``prefix-0`` ... with the same options."""
    return [pod(f"{prefix}-{i}", **kw) for i in range(count)]


def _template(pod_obj: Mapping[str, Any]) -> dict[str, Any]:
    meta = {k: v for k, v in pod_obj["metadata"].items() if k in ("labels", "annotations")}
    return {"metadata": meta, "spec": dict(pod_obj["spec"])}


def daemonset(
    name: str | None = None,
    *,
    namespace: str = "default",
    labels: Mapping[str, str] | None = None,
    **pod_options: Any,
) -> dict[str, Any]:
    """A DaemonSet whose pod template is :func:`pod` with ``pod_options`` (requests,
    tolerations, node selector...); its pods carry ``labels`` (default ``app: <name>``)."""
    return _workload("DaemonSet", "daemonset", name, namespace, None, labels, pod_options)


def _workload(
    kind: str,
    prefix: str,
    name: str | None,
    namespace: str,
    replicas: int | None,
    labels: Mapping[str, str] | None,
    pod_options: Mapping[str, Any],
) -> dict[str, Any]:
    name = _name(prefix, name)
    selector = dict(labels or {"app": name})
    template = _template(pod(name, namespace=namespace, labels=selector, **pod_options))
    spec: dict[str, Any] = {"selector": {"matchLabels": selector}, "template": template}
    if replicas is not None:
        spec["replicas"] = replicas
    return {
        "apiVersion": "apps/v1",
        "kind": kind,
        "metadata": _meta(name, namespace=namespace, labels=selector),
        "spec": spec,
    }


def deployment(
    name: str | None = None,
    *,
    replicas: int | None = 1,
    namespace: str = "default",
    labels: Mapping[str, str] | None = None,
    **pod_options: Any,
) -> dict[str, Any]:
    """A Deployment of ``replicas`` pods built by :func:`pod` with ``pod_options`` (None
    leaves ``replicas`` out, for the API's default)."""
    return _workload("Deployment", "deployment", name, namespace, replicas, labels, pod_options)


def replicaset(
    name: str | None = None,
    *,
    replicas: int | None = 1,
    namespace: str = "default",
    labels: Mapping[str, str] | None = None,
    **pod_options: Any,
) -> dict[str, Any]:
    """A ReplicaSet of ``replicas`` pods built by :func:`pod` with ``pod_options``."""
    return _workload("ReplicaSet", "replicaset", name, namespace, replicas, labels, pod_options)


def pod_template(
    name: str | None = None,
    *,
    namespace: str = "default",
    labels: Mapping[str, str] | None = None,
    **pod_options: Any,
) -> dict[str, Any]:
    """A v1 PodTemplate whose template is :func:`pod` with ``labels`` and ``pod_options``
    (what a CapacityBuffer's ``podTemplateRef`` names)."""
    name = _name("podtemplate", name)
    return {
        "apiVersion": "v1",
        "kind": "PodTemplate",
        "metadata": _meta(name, namespace=namespace),
        "template": _template(pod(name, namespace=namespace, labels=labels, **pod_options)),
    }


def pdb(
    name: str | None = None,
    *,
    namespace: str = "default",
    labels: Mapping[str, str] | None = None,
    selector: Mapping[str, Any] | None = None,
    min_available: int | str | None = None,
    max_unavailable: int | str | None = None,
    unhealthy_pod_eviction_policy: str | None = None,
    disruptions_allowed: int | None = None,
) -> dict[str, Any]:
    """A PodDisruptionBudget selecting pods with ``labels`` (or a full label ``selector``;
    default ``app: web``). ``disruptions_allowed`` writes the status the disruption
    controller would, for tests without kube-controller-manager."""
    spec: dict[str, Any] = {
        "selector": dict(selector)
        if selector is not None
        else {"matchLabels": dict(labels or {"app": "web"})}
    }
    if min_available is not None:
        spec["minAvailable"] = min_available
    if max_unavailable is not None:
        spec["maxUnavailable"] = max_unavailable
    if unhealthy_pod_eviction_policy is not None:
        spec["unhealthyPodEvictionPolicy"] = unhealthy_pod_eviction_policy
    out: dict[str, Any] = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": _meta(_name("pdb", name), namespace=namespace),
        "spec": spec,
    }
    if disruptions_allowed is not None:
        out["status"] = {"disruptionsAllowed": disruptions_allowed}
    return out


def namespace(name: str, *, labels: Mapping[str, str] | None = None) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": _meta(name, labels=labels)}


# ---------------------------------------------------------------------- nodes


def node(
    name: str | None = None,
    *,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    taints: Sequence[Mapping[str, Any]] = (),
    provider_id: str | None = None,
    capacity: Mapping[str, str] | None = None,
    allocatable: Mapping[str, str] | None = None,
    ready: bool | None = True,
    conditions: Sequence[Mapping[str, Any]] = (),
    unschedulable: bool = False,
    finalizers: Sequence[str] | None = None,
    owner: Mapping[str, Any] | None = None,
    phase: str | None = None,
) -> dict[str, Any]:
    """A Node (4 CPU, 16Gi, 110 pods unless ``capacity`` says otherwise; ``allocatable``
    defaults to the capacity). ``ready`` None leaves the Ready condition out, as on a
    Node its kubelet has not reported yet. Without a ``provider_id`` the Node is not a
    cloud instance (cluster state keys it by name). ``phase`` is the deprecated
    ``status.phase`` some kubelets still report."""
    cap = dict(capacity or {"cpu": "4", "memory": "16Gi", "pods": "110"})
    conds = _dicts(conditions)
    if ready is not None:
        conds.insert(0, {"type": "Ready", "status": "True" if ready else "False"})
    spec: dict[str, Any] = {}
    if provider_id is not None:
        spec["providerID"] = provider_id
    if taints:
        spec["taints"] = _dicts(taints)
    if unschedulable:
        spec["unschedulable"] = True
    status: dict[str, Any] = {
        "capacity": cap,
        "allocatable": dict(allocatable) if allocatable is not None else dict(cap),
    }
    if conds:
        status["conditions"] = conds
    if phase is not None:
        status["phase"] = phase
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": _meta(
            _name("node", name),
            labels=labels,
            annotations=annotations,
            finalizers=finalizers,
            owner=owner,
        ),
        "spec": spec,
        "status": status,
    }


def nodepool(
    name: str = "default",
    *,
    node_class: NodeClassKind | Mapping[str, str] = KWOK_NODE_CLASS,
    requirements: Sequence[Mapping[str, Any]] = (),
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    taints: Sequence[Mapping[str, Any]] = (),
    startup_taints: Sequence[Mapping[str, Any]] = (),
    expire_after: str | None = None,
    termination_grace_period: str | None = None,
    consolidation_policy: str | None = None,
    consolidate_after: str | None = None,
    budgets: Sequence[Mapping[str, Any]] | None = None,
    limits: Mapping[str, str] | None = None,
    weight: int | None = None,
    replicas: int | None = None,
    ready: bool = False,
) -> dict[str, Any]:
    """A NodePool whose template names ``node_class`` (the fake provider's KWOK kind).

    ``labels``/``annotations``/``taints`` are the template's (the nodes'). The disruption
    block is written only when one of its fields is given, so the API server's defaults
    apply otherwise. ``ready`` writes the Ready status the NodePool controllers would
    reach (:data:`NODEPOOL_READY_CONDITIONS`), for tests that run without them.
    """
    template_spec: dict[str, Any] = {
        "nodeClassRef": node_class_ref(node_class),
        "requirements": _dicts(requirements),
    }
    if taints:
        template_spec["taints"] = _dicts(taints)
    if startup_taints:
        template_spec["startupTaints"] = _dicts(startup_taints)
    if expire_after is not None:
        template_spec["expireAfter"] = expire_after
    if termination_grace_period is not None:
        template_spec["terminationGracePeriod"] = termination_grace_period
    template: dict[str, Any] = {"spec": template_spec}
    template_meta = _meta("", labels=labels, annotations=annotations)
    del template_meta["name"]
    if template_meta:
        template["metadata"] = template_meta
    spec: dict[str, Any] = {"template": template}
    disruption: dict[str, Any] = {}
    if consolidation_policy is not None:
        disruption["consolidationPolicy"] = consolidation_policy
    if consolidate_after is not None:
        disruption["consolidateAfter"] = consolidate_after
    if budgets is not None:
        disruption["budgets"] = _dicts(budgets)
    if disruption:
        spec["disruption"] = disruption
    if limits is not None:
        spec["limits"] = dict(limits)
    if weight is not None:
        spec["weight"] = weight
    if replicas is not None:
        spec["replicas"] = replicas
    out: dict[str, Any] = {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": _meta(name),
        "spec": spec,
    }
    if ready:
        out["status"] = {"conditions": [condition(t) for t in NODEPOOL_READY_CONDITIONS]}
    return out


def nodeclaim(
    name: str | None = None,
    *,
    nodepool: str | Mapping[str, Any] | None = None,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    node_class: NodeClassKind | Mapping[str, str] = KWOK_NODE_CLASS,
    requirements: Sequence[Mapping[str, Any]] = (),
    requests: Mapping[str, str] | None = None,
    taints: Sequence[Mapping[str, Any]] = (),
    startup_taints: Sequence[Mapping[str, Any]] = (),
    expire_after: str | None = None,
    termination_grace_period: str | None = None,
    finalizers: Sequence[str] | None = None,
    provider_id: str | None = None,
    node_name: str | None = None,
    capacity: Mapping[str, str] | None = None,
    allocatable: Mapping[str, str] | None = None,
    conditions: Sequence[str | Mapping[str, Any]] = (),
    image_id: str | None = None,
) -> dict[str, Any]:
    """A NodeClaim. ``nodepool`` (a name, or the NodePool object, which also makes it the
    owner) sets the ``karpenter.sh/nodepool`` label. A status is written when any of
    ``provider_id``, ``node_name``, ``capacity``, ``allocatable``, ``conditions`` or
    ``image_id`` is given (``allocatable`` defaults to the capacity); conditions given as
    names are True (``conditions=["Launched", "Registered"]``)."""
    all_labels = dict(labels or {})
    owner = None
    if isinstance(nodepool, Mapping):
        owner = owner_reference(nodepool, controller=False, block_owner_deletion=True)
        all_labels.setdefault(wk.NODEPOOL_LABEL_KEY, str(nodepool["metadata"]["name"]))
    elif nodepool is not None:
        all_labels.setdefault(wk.NODEPOOL_LABEL_KEY, nodepool)
    spec: dict[str, Any] = {
        "nodeClassRef": node_class_ref(node_class),
        "requirements": _dicts(requirements),
    }
    if requests is not None:
        spec["resources"] = {"requests": dict(requests)}
    if taints:
        spec["taints"] = _dicts(taints)
    if startup_taints:
        spec["startupTaints"] = _dicts(startup_taints)
    if expire_after is not None:
        spec["expireAfter"] = expire_after
    if termination_grace_period is not None:
        spec["terminationGracePeriod"] = termination_grace_period
    out: dict[str, Any] = {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodeClaim",
        "metadata": _meta(
            _name("nodeclaim", name),
            labels=all_labels,
            annotations=annotations,
            finalizers=finalizers,
            owner=owner,
        ),
        "spec": spec,
    }
    status: dict[str, Any] = {}
    if provider_id is not None:
        status["providerID"] = provider_id
    if node_name is not None:
        status["nodeName"] = node_name
    if image_id is not None:
        status["imageID"] = image_id
    if capacity is not None:
        status["capacity"] = dict(capacity)
    if allocatable is not None or capacity is not None:
        status["allocatable"] = dict(allocatable if allocatable is not None else capacity or {})
    if conditions:
        status["conditions"] = [condition(c) if isinstance(c, str) else dict(c) for c in conditions]
    if status:
        out["status"] = status
    return out


def node_for(
    claim: Mapping[str, Any],
    *,
    name: str | None = None,
    labels: Mapping[str, str] | None = None,
    taints: Sequence[Mapping[str, Any]] | None = None,
    registered: bool = False,
    initialized: bool = False,
    ready: bool | None = True,
) -> dict[str, Any]:
    """The Node a launched NodeClaim's instance registers (upstream's
    ``NodeClaimLinkedNode``): the claim's provider id, labels, capacity and allocatable, its
    taints and startup taints, and -- until ``registered`` -- the unregistered taint.
    ``registered``/``initialized`` also add the labels Karpenter puts on at those steps.
    Named after the claim's ``status.nodeName`` (else the claim) unless ``name`` is given."""
    meta = claim["metadata"]
    spec = claim.get("spec") or {}
    status = claim.get("status") or {}
    node_labels = dict(meta.get("labels") or {})
    ref = spec.get("nodeClassRef") or {}
    if ref.get("group") and ref.get("kind"):
        node_labels[f"{ref['group']}/{str(ref['kind']).lower()}"] = str(ref.get("name") or "")
    if registered:
        node_labels[wk.NODE_REGISTERED_LABEL_KEY] = "true"
    if initialized:
        node_labels[wk.NODE_INITIALIZED_LABEL_KEY] = "true"
    node_labels.update(labels or {})
    all_taints = (
        _dicts(taints)
        if taints is not None
        else _dicts([*spec.get("taints", ()), *spec.get("startupTaints", ())])
    )
    if not registered:
        all_taints.append({"key": wk.UNREGISTERED_TAINT_KEY, "effect": "NoExecute"})
    node_name = name or status.get("nodeName") or meta["name"]
    return node(
        node_name,
        labels=node_labels,
        annotations=meta.get("annotations"),
        taints=all_taints,
        provider_id=status.get("providerID"),
        capacity=status.get("capacity"),
        allocatable=status.get("allocatable"),
        ready=ready,
    )


def nodeclass(
    name: str = "default",
    *,
    kind: NodeClassKind = KWOK_NODE_CLASS,
    ready: bool | None = True,
    spec: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A NodeClass of ``kind`` (its CRD must be known to the API server); ``ready``
    writes its Ready condition (None: no status)."""
    out: dict[str, Any] = {
        "apiVersion": kind.api_version,
        "kind": kind.kind,
        "metadata": _meta(name),
        "spec": dict(spec or {}),
    }
    if ready is not None:
        out["status"] = {"conditions": [condition("Ready", ready)]}
    return out


def nodeoverlay(
    name: str | None = None,
    *,
    requirements: Sequence[Mapping[str, Any]] = (),
    weight: int | None = None,
    price: str | None = None,
    price_adjustment: str | None = None,
    capacity: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """A ``karpenter.sh/v1alpha1`` NodeOverlay."""
    spec: dict[str, Any] = {"requirements": _dicts(requirements)}
    if weight is not None:
        spec["weight"] = weight
    if price is not None:
        spec["price"] = price
    if price_adjustment is not None:
        spec["priceAdjustment"] = price_adjustment
    if capacity is not None:
        spec["capacity"] = dict(capacity)
    return {
        "apiVersion": "karpenter.sh/v1alpha1",
        "kind": "NodeOverlay",
        "metadata": _meta(_name("nodeoverlay", name)),
        "spec": spec,
    }


def capacity_buffer(
    name: str | None = None, *, namespace: str = "default", **spec: Any
) -> dict[str, Any]:
    """An ``autoscaling.x-k8s.io/v1beta1`` CapacityBuffer with ``spec`` as given
    (``replicas=3, podTemplateRef={"name": "tmpl"}``)."""
    return {
        "apiVersion": "autoscaling.x-k8s.io/v1beta1",
        "kind": "CapacityBuffer",
        "metadata": _meta(_name("buffer", name), namespace=namespace),
        "spec": spec,
    }


# ---------------------------------------------------------------------- DRA (resource.k8s.io/v1)

RESOURCE_API_VERSION = "resource.k8s.io/v1"


def _attribute(value: bool | int | str) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"bool": value}
    if isinstance(value, int):
        return {"int": value}
    return {"string": value}


def device(
    name: str,
    attributes: Mapping[str, bool | int | str] | None = None,
    *,
    capacity: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """A device of a ResourceSlice: typed attributes from Python values (``{"model":
    "a100", "index": 0}``) and capacities as quantities."""
    out: dict[str, Any] = {"name": name}
    if attributes:
        out["attributes"] = {k: _attribute(v) for k, v in attributes.items()}
    if capacity:
        out["capacity"] = {k: {"value": v} for k, v in capacity.items()}
    return out


def device_class(name: str = "gpu", *expressions: str, driver: str | None = None) -> dict[str, Any]:
    """A DeviceClass whose devices pass every CEL ``expressions`` (``driver``: the usual
    ``device.driver == "<driver>"``)."""
    exprs = list(expressions)
    if driver is not None:
        exprs.insert(0, f'device.driver == "{driver}"')
    spec: dict[str, Any] = {}
    if exprs:
        spec["selectors"] = [{"cel": {"expression": e}} for e in exprs]
    return {
        "apiVersion": RESOURCE_API_VERSION,
        "kind": "DeviceClass",
        "metadata": _meta(name),
        "spec": spec,
    }


def _claim_spec(
    device_class_name: str, count: int, requests: Sequence[Mapping[str, Any]]
) -> dict[str, Any]:
    reqs = _dicts(requests) or [
        {"name": "devices", "exactly": {"deviceClassName": device_class_name, "count": count}}
    ]
    return {"devices": {"requests": reqs}}


def resource_claim_template(
    name: str | None = None,
    *,
    namespace: str = "default",
    device_class_name: str = "gpu",
    count: int = 1,
    requests: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """A ResourceClaimTemplate: one request ``devices`` for ``count`` devices of the class,
    or the given ``requests``."""
    return {
        "apiVersion": RESOURCE_API_VERSION,
        "kind": "ResourceClaimTemplate",
        "metadata": _meta(_name("claim-template", name), namespace=namespace),
        "spec": {"spec": _claim_spec(device_class_name, count, requests)},
    }


def resource_claim(
    name: str | None = None,
    *,
    namespace: str = "default",
    device_class_name: str = "gpu",
    count: int = 1,
    requests: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """A ResourceClaim (shareable by name), shaped as :func:`resource_claim_template`."""
    return {
        "apiVersion": RESOURCE_API_VERSION,
        "kind": "ResourceClaim",
        "metadata": _meta(_name("claim", name), namespace=namespace),
        "spec": _claim_spec(device_class_name, count, requests),
    }


def resource_slice(
    name: str | None = None,
    *,
    driver: str = "gpu.example.com",
    pool: str | None = None,
    devices: Sequence[Mapping[str, Any] | str] = (),
    node_name: str | None = None,
    node_selector: Mapping[str, Any] | None = None,
    generation: int = 0,
    slice_count: int = 1,
) -> dict[str, Any]:
    """A ResourceSlice: node-local with ``node_name`` (pool named after the node unless
    given), else for the nodes ``node_selector`` selects, else for all nodes. Devices may
    be bare names."""
    spec: dict[str, Any] = {
        "driver": driver,
        "pool": {
            "name": pool or node_name or "pool",
            "generation": generation,
            "resourceSliceCount": slice_count,
        },
        "devices": [device(d) if isinstance(d, str) else dict(d) for d in devices],
    }
    if node_name is not None:
        spec["nodeName"] = node_name
    elif node_selector is not None:
        spec["nodeSelector"] = dict(node_selector)
    else:
        spec["allNodes"] = True
    return {
        "apiVersion": RESOURCE_API_VERSION,
        "kind": "ResourceSlice",
        "metadata": _meta(_name("slice", name)),
        "spec": spec,
    }


def pod_claim(
    name: str, *, template: str | None = None, claim: str | None = None
) -> dict[str, Any]:
    """One entry of a pod's ``spec.resourceClaims``: from a ResourceClaimTemplate (a claim
    per pod) or naming a shared ResourceClaim. Give it with ``pod(spec={"resourceClaims":
    [...]})``."""
    if (template is None) == (claim is None):
        raise ValueError("pod_claim: give exactly one of template and claim")
    if template is not None:
        return {"name": name, "resourceClaimTemplateName": template}
    return {"name": name, "resourceClaimName": claim}
