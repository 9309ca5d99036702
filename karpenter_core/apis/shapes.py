"""The JSON shape of the Kubernetes kinds Karpenter reads, checked before anything reads them.

``karpenter schedule`` and ``karpenter simulate`` take Pods, workloads, storage objects,
Nodes and the rest as plain manifests, and the scheduler, the workload expansion and the
simulated controllers read their fields directly. A field of the wrong type (a string where
the API has a list) would surface as a ``TypeError`` deep inside one of them, or, in a
simulation, as a controller failing on every reconcile. The API server would have refused
such an object when it was created, so :func:`shape_errors` refuses it the same way, once,
where the object enters, with the field's path: ``allowedTopologies[0].matchLabelExpressions:
expected a list, got a string``.

Only types are checked here (objects, lists, maps, strings, integers, booleans, quantities),
for every field Karpenter or the simulator reads; fields nobody reads are left alone, as
unknown fields are. Values (operators, label syntax, quantities' syntax) are checked by the
parsers in :mod:`karpenter_core.apis.objects` and by :mod:`karpenter_core.apis.validation`.
Karpenter's own kinds (NodePool, NodeClaim, NodeOverlay, CapacityBuffer) are checked
against their CRD schemas by :mod:`karpenter_core.apis.validation` instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from karpenter_core.apis.limits import MAX_SHOWN_KEY_CHARS, elide

__all__ = ["SHAPES", "Shape", "describe", "manifest_errors", "shape_errors"]

Shape = Any
"""A type name (:data:`STRING`...), :func:`obj`, :func:`list_of` or :func:`map_of`."""

STRING = "string"
INTEGER = "integer"
BOOLEAN = "boolean"
QUANTITY = "quantity"  # a resource.Quantity: a string ("500m") or a number
INT_OR_STRING = "int-or-string"  # an intstr.IntOrString: 2 or "50%"
ANY = "any"


def obj(**fields: Shape) -> Shape:
    """A JSON object with these fields (others are not checked)."""
    return ("object", fields)


def list_of(item: Shape) -> Shape:
    return ("list", item)


def map_of(value: Shape) -> Shape:
    return ("map", value)


STRINGS = list_of(STRING)
STRING_MAP = map_of(STRING)
RESOURCE_LIST = map_of(QUANTITY)

OWNER_REFERENCE = obj(
    apiVersion=STRING,
    kind=STRING,
    name=STRING,
    uid=STRING,
    controller=BOOLEAN,
    blockOwnerDeletion=BOOLEAN,
)
OBJECT_META = obj(
    name=STRING,
    generateName=STRING,
    namespace=STRING,
    uid=STRING,
    resourceVersion=STRING,
    generation=INTEGER,
    creationTimestamp=STRING,
    deletionTimestamp=STRING,
    deletionGracePeriodSeconds=INTEGER,
    labels=STRING_MAP,
    annotations=STRING_MAP,
    ownerReferences=list_of(OWNER_REFERENCE),
    finalizers=STRINGS,
)
LABEL_SELECTOR = obj(
    matchLabels=STRING_MAP,
    matchExpressions=list_of(obj(key=STRING, operator=STRING, values=STRINGS)),
)
NODE_SELECTOR_REQUIREMENT = obj(key=STRING, operator=STRING, values=STRINGS)
NODE_SELECTOR_TERM = obj(
    matchExpressions=list_of(NODE_SELECTOR_REQUIREMENT),
    matchFields=list_of(NODE_SELECTOR_REQUIREMENT),
)
NODE_SELECTOR = obj(nodeSelectorTerms=list_of(NODE_SELECTOR_TERM))
POD_AFFINITY_TERM = obj(
    labelSelector=LABEL_SELECTOR,
    namespaceSelector=LABEL_SELECTOR,
    namespaces=STRINGS,
    topologyKey=STRING,
    matchLabelKeys=STRINGS,
    mismatchLabelKeys=STRINGS,
)
POD_AFFINITY = obj(
    requiredDuringSchedulingIgnoredDuringExecution=list_of(POD_AFFINITY_TERM),
    preferredDuringSchedulingIgnoredDuringExecution=list_of(
        obj(weight=INTEGER, podAffinityTerm=POD_AFFINITY_TERM)
    ),
)
AFFINITY = obj(
    nodeAffinity=obj(
        requiredDuringSchedulingIgnoredDuringExecution=NODE_SELECTOR,
        preferredDuringSchedulingIgnoredDuringExecution=list_of(
            obj(weight=INTEGER, preference=NODE_SELECTOR_TERM)
        ),
    ),
    podAffinity=POD_AFFINITY,
    podAntiAffinity=POD_AFFINITY,
)
RESOURCE_REQUIREMENTS = obj(
    requests=RESOURCE_LIST,
    limits=RESOURCE_LIST,
    claims=list_of(obj(name=STRING, request=STRING)),
)
CONTAINER = obj(
    name=STRING,
    image=STRING,
    command=STRINGS,
    args=STRINGS,
    resources=RESOURCE_REQUIREMENTS,
    restartPolicy=STRING,
    ports=list_of(
        obj(
            name=STRING,
            containerPort=INTEGER,
            hostPort=INTEGER,
            hostIP=STRING,
            protocol=STRING,
        )
    ),
)
PVC_SPEC = obj(
    storageClassName=STRING,
    volumeName=STRING,
    volumeMode=STRING,
    accessModes=STRINGS,
    selector=LABEL_SELECTOR,
    resources=obj(requests=RESOURCE_LIST, limits=RESOURCE_LIST),
)
VOLUME = obj(
    name=STRING,
    persistentVolumeClaim=obj(claimName=STRING, readOnly=BOOLEAN),
    ephemeral=obj(volumeClaimTemplate=obj(metadata=OBJECT_META, spec=PVC_SPEC)),
    csi=obj(driver=STRING, readOnly=BOOLEAN, volumeAttributes=STRING_MAP),
)
POD_SPEC = obj(
    containers=list_of(CONTAINER),
    initContainers=list_of(CONTAINER),
    nodeName=STRING,
    nodeSelector=STRING_MAP,
    affinity=AFFINITY,
    tolerations=list_of(
        obj(
            key=STRING,
            operator=STRING,
            value=STRING,
            effect=STRING,
            tolerationSeconds=INTEGER,
        )
    ),
    topologySpreadConstraints=list_of(
        obj(
            maxSkew=INTEGER,
            minDomains=INTEGER,
            topologyKey=STRING,
            whenUnsatisfiable=STRING,
            labelSelector=LABEL_SELECTOR,
            matchLabelKeys=STRINGS,
            nodeAffinityPolicy=STRING,
            nodeTaintsPolicy=STRING,
        )
    ),
    volumes=list_of(VOLUME),
    schedulingGates=list_of(obj(name=STRING)),
    priorityClassName=STRING,
    priority=INTEGER,
    preemptionPolicy=STRING,
    schedulerName=STRING,
    restartPolicy=STRING,
    runtimeClassName=STRING,
    serviceAccountName=STRING,
    hostNetwork=BOOLEAN,
    terminationGracePeriodSeconds=INTEGER,
    activeDeadlineSeconds=INTEGER,
    overhead=RESOURCE_LIST,
    resources=RESOURCE_REQUIREMENTS,
    resourceClaims=list_of(
        obj(name=STRING, resourceClaimName=STRING, resourceClaimTemplateName=STRING)
    ),
)
CONDITIONS = list_of(
    obj(
        type=STRING,
        status=STRING,
        reason=STRING,
        message=STRING,
        lastTransitionTime=STRING,
        lastHeartbeatTime=STRING,
    )
)
POD_TEMPLATE = obj(metadata=OBJECT_META, spec=POD_SPEC)


def _kind(spec: Shape | None = None, **top: Shape) -> Shape:
    fields: dict[str, Shape] = {"apiVersion": STRING, "kind": STRING, "metadata": OBJECT_META}
    if spec is not None:
        fields["spec"] = spec
    fields.update(top)
    return obj(**fields)


SHAPES: dict[str, Shape] = {
    "Pod": _kind(
        POD_SPEC,
        status=obj(
            phase=STRING,
            nominatedNodeName=STRING,
            startTime=STRING,
            conditions=CONDITIONS,
        ),
    ),
    "PodTemplate": _kind(template=POD_TEMPLATE),
    "Deployment": _kind(
        obj(
            replicas=INTEGER,
            paused=BOOLEAN,
            minReadySeconds=INTEGER,
            selector=LABEL_SELECTOR,
            template=POD_TEMPLATE,
        )
    ),
    "ReplicaSet": _kind(obj(replicas=INTEGER, selector=LABEL_SELECTOR, template=POD_TEMPLATE)),
    "ReplicationController": _kind(
        obj(replicas=INTEGER, selector=STRING_MAP, template=POD_TEMPLATE)
    ),
    "StatefulSet": _kind(
        obj(
            replicas=INTEGER,
            serviceName=STRING,
            podManagementPolicy=STRING,
            selector=LABEL_SELECTOR,
            template=POD_TEMPLATE,
            volumeClaimTemplates=list_of(obj(metadata=OBJECT_META, spec=PVC_SPEC)),
            ordinals=obj(start=INTEGER),
        )
    ),
    "DaemonSet": _kind(obj(selector=LABEL_SELECTOR, template=POD_TEMPLATE)),
    "Job": _kind(
        obj(
            parallelism=INTEGER,
            completions=INTEGER,
            completionMode=STRING,
            backoffLimit=INTEGER,
            activeDeadlineSeconds=INTEGER,
            ttlSecondsAfterFinished=INTEGER,
            suspend=BOOLEAN,
            manualSelector=BOOLEAN,
            selector=LABEL_SELECTOR,
            template=POD_TEMPLATE,
        )
    ),
    "PodDisruptionBudget": _kind(
        obj(
            minAvailable=INT_OR_STRING,
            maxUnavailable=INT_OR_STRING,
            selector=LABEL_SELECTOR,
            unhealthyPodEvictionPolicy=STRING,
        ),
        status=obj(
            disruptionsAllowed=INTEGER,
            currentHealthy=INTEGER,
            desiredHealthy=INTEGER,
            expectedPods=INTEGER,
            observedGeneration=INTEGER,
        ),
    ),
    "StorageClass": _kind(
        provisioner=STRING,
        volumeBindingMode=STRING,
        reclaimPolicy=STRING,
        allowVolumeExpansion=BOOLEAN,
        parameters=STRING_MAP,
        mountOptions=STRINGS,
        allowedTopologies=list_of(
            obj(matchLabelExpressions=list_of(obj(key=STRING, values=STRINGS)))
        ),
    ),
    "PersistentVolumeClaim": _kind(
        PVC_SPEC, status=obj(phase=STRING, accessModes=STRINGS, capacity=RESOURCE_LIST)
    ),
    "PersistentVolume": _kind(
        obj(
            storageClassName=STRING,
            capacity=RESOURCE_LIST,
            accessModes=STRINGS,
            persistentVolumeReclaimPolicy=STRING,
            volumeMode=STRING,
            claimRef=obj(namespace=STRING, name=STRING, uid=STRING),
            csi=obj(driver=STRING, volumeHandle=STRING, fsType=STRING, readOnly=BOOLEAN),
            nodeAffinity=obj(required=NODE_SELECTOR),
        ),
        status=obj(phase=STRING),
    ),
    "CSINode": _kind(
        obj(
            drivers=list_of(
                obj(
                    name=STRING,
                    nodeID=STRING,
                    topologyKeys=STRINGS,
                    allocatable=obj(count=INTEGER),
                )
            )
        )
    ),
    "CSIDriver": _kind(obj(attachRequired=BOOLEAN, podInfoOnMount=BOOLEAN)),
    "VolumeAttachment": _kind(
        obj(attacher=STRING, nodeName=STRING, source=obj(persistentVolumeName=STRING)),
        status=obj(attached=BOOLEAN),
    ),
    "Node": _kind(
        obj(
            providerID=STRING,
            unschedulable=BOOLEAN,
            taints=list_of(obj(key=STRING, value=STRING, effect=STRING, timeAdded=STRING)),
        ),
        status=obj(
            capacity=RESOURCE_LIST,
            allocatable=RESOURCE_LIST,
            conditions=CONDITIONS,
            addresses=list_of(obj(type=STRING, address=STRING)),
        ),
    ),
    "Namespace": _kind(status=obj(phase=STRING)),
    "Service": _kind(obj(selector=STRING_MAP, type=STRING, clusterIP=STRING)),
    "PriorityClass": _kind(value=INTEGER, globalDefault=BOOLEAN, preemptionPolicy=STRING),
    "Lease": _kind(
        obj(
            holderIdentity=STRING,
            leaseDurationSeconds=INTEGER,
            acquireTime=STRING,
            renewTime=STRING,
            leaseTransitions=INTEGER,
        )
    ),
}
"""The checked fields of each core kind; any other kind gets its metadata checked."""

_OTHER_KIND = _kind()


def describe(value: Any) -> str:
    """A JSON value's type in words, for ``expected ..., got ...``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, Mapping):
        return "an object"
    return type(value).__name__


_EXPECTED = {
    STRING: "a string",
    INTEGER: "an integer",
    BOOLEAN: "a boolean (true or false)",
    QUANTITY: "a quantity (a string like 500m, or a number)",
    INT_OR_STRING: "an integer or a string",
    "object": "an object",
    "list": "a list",
    "map": "an object",
}


def _fits(value: Any, name: str) -> bool:
    if name == STRING:
        return isinstance(value, str)
    if name == INTEGER:
        return isinstance(value, int) and not isinstance(value, bool)
    if name == BOOLEAN:
        return isinstance(value, bool)
    if name == QUANTITY:
        return isinstance(value, str | int | float) and not isinstance(value, bool)
    if name == INT_OR_STRING:
        return isinstance(value, str | int) and not isinstance(value, bool)
    if name in ("object", "map"):
        return isinstance(value, Mapping)
    if name == "list":
        return isinstance(value, list)
    return True


def shape_errors(obj_: Mapping[str, Any], kind: str | None = None) -> list[str]:
    """``path: expected ..., got ...`` for the first field of ``obj_`` whose type is wrong
    (empty when every checked field fits). ``kind`` defaults to the object's own; a kind
    not in :data:`SHAPES` gets its metadata checked. A null field is an unset one, as to
    the API server; a null list item or map value is an error."""
    shape = SHAPES.get(kind if kind is not None else str(obj_.get("kind")), _OTHER_KIND)
    error = _check(obj_, shape, "")
    return [] if error is None else [error]


def _check(value: Any, shape: Shape, path: str) -> str | None:
    if shape == ANY:
        return None
    name = shape[0] if isinstance(shape, tuple) else shape
    if not _fits(value, name):
        where = path or "<the object>"
        return f"{where}: expected {_EXPECTED[name]}, got {describe(value)}"
    if not isinstance(shape, tuple):
        return None
    inner = shape[1]
    if name == "object":
        for field, sub in inner.items():
            item = value.get(field)
            if item is None:
                continue
            error = _check(item, sub, f"{path}.{field}" if path else field)
            if error is not None:
                return error
    elif name == "list":
        for i, item in enumerate(value):
            error = _check_item(item, inner, f"{path}[{i}]")
            if error is not None:
                return error
    elif name == "map":
        for key, item in value.items():
            error = _check_item(item, inner, f"{path}[{elide(str(key), MAX_SHOWN_KEY_CHARS)}]")
            if error is not None:
                return error
    return None


def _check_item(value: Any, shape: Shape, path: str) -> str | None:
    if value is None:
        name = shape[0] if isinstance(shape, tuple) else shape
        return f"{path}: expected {_EXPECTED.get(name, 'a value')}, got null"
    return _check(value, shape, path)


def manifest_errors(obj_: Mapping[str, Any]) -> list[str]:
    """What the API server would refuse in a core object before any controller reads it:
    a field of the wrong type (:func:`shape_errors`), else labels and annotations that break
    its rules (key and value syntax, 256 KiB of annotations) on the object and on its pod
    template. The first problem only, as ``path: message``."""
    from karpenter_core.apis.validation import validate_labels_and_annotations

    errors = shape_errors(obj_)
    if errors:
        return errors
    metas: list[tuple[Any, str]] = [(obj_.get("metadata"), "metadata")]
    spec = obj_.get("spec")
    template = spec.get("template") if isinstance(spec, Mapping) else None
    if isinstance(template, Mapping):
        metas.append((template.get("metadata"), "spec.template.metadata"))
    for meta, path in metas:
        if isinstance(meta, Mapping):
            problems = validate_labels_and_annotations(meta, path)
            if problems:
                return [str(problems[0])]
    return []
