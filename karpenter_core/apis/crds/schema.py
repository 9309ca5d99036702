"""The four core CRDs, described in Python.

This module is the single source of the CRD manifests shipped in this package (the YAML files
next to it are rendered from it by ``python -m karpenter_core.apis.crds``, and a unit test
keeps them in sync) *and* of the structural schema that :mod:`karpenter_core.apis.validation`
checks objects against, so what ``karpenter validate`` accepts is what an API server with
these CRDs installed accepts. Names, versions, field types, enums, patterns, defaults,
CEL rules (``x-kubernetes-validations``), printer columns and subresources match upstream
``karpenter.sh/v1``; the descriptions are our own.
"""

from __future__ import annotations

from typing import Any

Schema = dict[str, Any]

# --- patterns shared by several fields -------------------------------------------------------
QUALIFIED_NAME_PATTERN = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*(\/))?"
    r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$"
)
LABEL_VALUE_PATTERN = r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$"
QUANTITY_PATTERN = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|"
    r"([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
NILLABLE_DURATION_PATTERN = r"^(([0-9]+(s|m|h))+|Never)$"
DURATION_PATTERN = r"^([0-9]+(s|m|h))+$"
BUDGET_DURATION_PATTERN = r"^((([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?)$"
BUDGET_NODES_PATTERN = r"^((100|[0-9]{1,2})%|[0-9]+)$"
BUDGET_SCHEDULE_PATTERN = (
    r"^(@(annually|yearly|monthly|weekly|daily|midnight|hourly))|((.+)\s(.+)\s(.+)\s(.+)\s(.+))$"
)
CONDITION_TYPE_PATTERN = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"
)
CONDITION_REASON_PATTERN = r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"
CONDITION_REASON_PATTERN_OPTIONAL = r"^([A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?|)$"
PRICE_PATTERN = r"^\d+(\.\d+)?$"
PRICE_ADJUSTMENT_PATTERN = (
    r"^(([+-]{1}(\d*\.?\d+))|(\+{1}\d*\.?\d+%)|(^(-\d{1,2}(\.\d+)?%)$)|(-100%))$"
)

OPERATORS = ["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte"]
TAINT_EFFECTS = ["NoSchedule", "PreferNoSchedule", "NoExecute"]
CONSOLIDATION_POLICIES = ["WhenEmpty", "WhenEmptyOrUnderutilized", "Balanced"]
DISRUPTION_REASONS = ["Underutilized", "Empty", "Drifted"]

# --- CEL rules (the strings are part of the API; validation.py implements each one) ----------
RULE_DOMAIN_KEY = (
    'self in ["karpenter.sh/capacity-type", "karpenter.sh/nodepool"] || '
    '!self.find("^([^/]+)").endsWith("karpenter.sh")'
)
RULE_DOMAIN_LABELS = (
    'self.all(x, x in ["karpenter.sh/capacity-type", "karpenter.sh/nodepool"] || '
    '!x.find("^([^/]+)").endsWith("karpenter.sh"))'
)
RULE_NOT_NODEPOOL_KEY = 'self != "karpenter.sh/nodepool"'
RULE_NOT_NODEPOOL_LABELS = 'self.all(x, x != "karpenter.sh/nodepool")'
RULE_NOT_HOSTNAME_KEY = 'self != "kubernetes.io/hostname"'
RULE_NOT_HOSTNAME_LABELS = 'self.all(x, x != "kubernetes.io/hostname")'
RULE_NOT_EMPTY = "self != ''"
RULE_IN_HAS_VALUES = "self.all(x, x.operator == 'In' ? x.values.size() != 0 : true)"
RULE_NOTIN_HAS_VALUES = "self.all(x, x.operator == 'NotIn' ? x.values.size() != 0 : true)"
RULE_NUMERIC_SINGLE_VALUE = (
    "self.all(x, (x.operator == 'Gt' || x.operator == 'Lt' || x.operator == 'Gte' || "
    "x.operator == 'Lte') ? (x.values.size() == 1 && int(x.values[0]) >= 0) : true)"
)
RULE_MIN_VALUES = (
    "self.all(x, (x.operator == 'In' && has(x.minValues)) ? x.values.size() >= x.minValues : true)"
)
RULE_GROUP_IMMUTABLE = "self.group == oldSelf.group"
RULE_KIND_IMMUTABLE = "self.kind == oldSelf.kind"
RULE_BUDGET_SCHEDULE_DURATION = "self.all(x, has(x.schedule) == has(x.duration))"
RULE_STATIC_DYNAMIC = "has(self.replicas) == has(oldSelf.replicas)"
RULE_STATIC_LIMITS = (
    "!has(self.replicas) || (!has(self.limits) || size(self.limits) == 0 || "
    "(size(self.limits) == 1 && 'nodes' in self.limits))"
)
RULE_STATIC_WEIGHT = "!has(self.replicas) || !has(self.weight)"
RULE_SPEC_IMMUTABLE = "self == oldSelf"
RULE_OVERLAY_CAPACITY = "self.all(x, !(x in ['cpu', 'memory', 'ephemeral-storage', 'pods']))"
RULE_OVERLAY_PRICE_EXCLUSIVE = "!has(self.price) || !has(self.priceAdjustment)"
RULE_BUFFER_TEMPLATE_NEEDS_SIZE = (
    "!has(self.podTemplateRef) || has(self.replicas) || has(self.limits)"
)
RULE_BUFFER_EXCLUSIVE_REFS = "!(has(self.podTemplateRef) && has(self.scalableRef))"

MSG_DOMAIN = 'label domain "karpenter.sh" is restricted'
MSG_NODEPOOL = 'label "karpenter.sh/nodepool" is restricted'
MSG_HOSTNAME = 'label "kubernetes.io/hostname" is restricted'


def _rule(rule: str, message: str) -> dict[str, str]:
    return {"message": message, "rule": rule}


def _str(
    description: str | None = None,
    *,
    validations: list[dict[str, str]] | None = None,
    **kw: Any,
) -> Schema:
    s: Schema = {"type": "string", **kw}
    if description:
        s["description"] = description
    if validations:
        s["x-kubernetes-validations"] = validations
    return s


def _obj(
    properties: dict[str, Schema],
    required: list[str] | None = None,
    description: str | None = None,
    *,
    validations: list[dict[str, str]] | None = None,
    default: Any = None,
) -> Schema:
    s: Schema = {}
    if default is not None:
        s["default"] = default
    if description:
        s["description"] = description
    s["properties"] = properties
    if required:
        s["required"] = required
    s["type"] = "object"
    if validations:
        s["x-kubernetes-validations"] = validations
    return s


def _quantity_map(description: str, *, validations: list[dict[str, str]] | None = None) -> Schema:
    s: Schema = {
        "additionalProperties": {
            "anyOf": [{"type": "integer"}, {"type": "string"}],
            "pattern": QUANTITY_PATTERN,
            "x-kubernetes-int-or-string": True,
        },
        "description": description,
        "type": "object",
    }
    if validations:
        s["x-kubernetes-validations"] = validations
    return s


def _taints(description: str) -> Schema:
    return {
        "description": description,
        "items": _obj(
            {
                "effect": _str("NoSchedule, PreferNoSchedule or NoExecute.", enum=TAINT_EFFECTS),
                "key": _str(
                    "The taint key, a qualified name.", minLength=1, pattern=QUALIFIED_NAME_PATTERN
                ),
                "timeAdded": _str(
                    "When a NoExecute taint was added (set by the system).", format="date-time"
                ),
                "value": _str("The taint value.", pattern=QUALIFIED_NAME_PATTERN),
            },
            required=["effect", "key"],
            description="A taint (core/v1 Taint).",
        ),
        "type": "array",
        "x-kubernetes-list-type": "atomic",
    }


def requirement_item_schema(*, nodepool_key_rule: bool, min_values: bool) -> Schema:
    """One node selector requirement; NodePool, NodeClaim and NodeOverlay differ slightly."""
    key_rules = [_rule(RULE_DOMAIN_KEY, MSG_DOMAIN)]
    if nodepool_key_rule:
        key_rules.append(_rule(RULE_NOT_NODEPOOL_KEY, MSG_NODEPOOL))
    key_rules.append(_rule(RULE_NOT_HOSTNAME_KEY, MSG_HOSTNAME))
    props: dict[str, Schema] = {
        "key": _str(
            "The label key the requirement constrains.",
            maxLength=316,
            pattern=QUALIFIED_NAME_PATTERN,
            validations=key_rules,
        ),
    }
    if min_values:
        props["minValues"] = {
            "description": "Alpha: the least number of distinct values the launch must keep "
            "flexible for this key.",
            "maximum": 50,
            "minimum": 1,
            "type": "integer",
        }
    props["operator"] = _str(
        "How the key relates to the values: In, NotIn, Exists, DoesNotExist, Gt, Lt, Gte, Lte.",
        enum=OPERATORS,
    )
    # Upstream's generator puts maxLength/pattern on the array, where the API server ignores
    # them; we keep the same schema (values are checked by runtime validation instead).
    props["values"] = {
        "description": "Label values. In needs at least one; Gt/Lt/Gte/Lte exactly one integer.",
        "items": _str(),
        "maxLength": 63,
        "pattern": LABEL_VALUE_PATTERN,
        "type": "array",
        "x-kubernetes-list-type": "atomic",
    }
    return _obj(props, required=["key", "operator"], description="A node selector requirement.")


def _requirements(item: Schema, rules: list[dict[str, str]]) -> Schema:
    return {
        "description": "Constraints every node launched from this object satisfies.",
        "items": item,
        "maxItems": 100,
        "type": "array",
        "x-kubernetes-list-type": "atomic",
        "x-kubernetes-validations": rules,
    }


_REQUIREMENT_RULES = [
    _rule(RULE_IN_HAS_VALUES, "requirements with operator 'In' must have a value defined"),
    _rule(
        RULE_NUMERIC_SINGLE_VALUE,
        "requirements operator 'Gt', 'Lt', 'Gte', or 'Lte' must have a single positive integer value",
    ),
    _rule(
        RULE_MIN_VALUES,
        "requirements with 'minValues' must have at least that many values specified in the "
        "'values' field",
    ),
]


def _node_class_ref(*, immutable_group_kind: bool) -> Schema:
    rules = None
    if immutable_group_kind:
        rules = [
            _rule(RULE_GROUP_IMMUTABLE, "nodeClassRef.group is immutable"),
            _rule(RULE_KIND_IMMUTABLE, "nodeClassRef.kind is immutable"),
        ]
    return _obj(
        {
            "group": _str(
                "API group of the NodeClass.",
                pattern="^[^/]*$",
                validations=[_rule(RULE_NOT_EMPTY, "group may not be empty")],
            ),
            "kind": _str(
                "Kind of the NodeClass.",
                validations=[_rule(RULE_NOT_EMPTY, "kind may not be empty")],
            ),
            "name": _str(
                "Name of the NodeClass.",
                validations=[_rule(RULE_NOT_EMPTY, "name may not be empty")],
            ),
        },
        required=["group", "kind", "name"],
        description="The provider-specific NodeClass that configures launched nodes.",
        validations=rules,
    )


def _node_claim_spec_properties(*, template: bool) -> dict[str, Schema]:
    props: dict[str, Schema] = {
        "expireAfter": _str(
            "How long a node may live before it is replaced; 'Never' disables expiry.",
            default="720h",
            pattern=NILLABLE_DURATION_PATTERN,
        ),
        "nodeClassRef": _node_class_ref(immutable_group_kind=template),
        "requirements": _requirements(
            requirement_item_schema(nodepool_key_rule=template, min_values=True),
            _REQUIREMENT_RULES,
        ),
    }
    if not template:
        props["resources"] = _obj(
            {"requests": _quantity_map("The least resources the launched node must offer.")},
            description="Resources the NodeClaim needs.",
        )
    props["startupTaints"] = _taints(
        "Taints applied at start-up that a daemon is expected to remove; pods need not "
        "tolerate them to be provisioned for."
    )
    props["taints"] = _taints("Taints applied to the node.")
    props["terminationGracePeriod"] = _str(
        "Longest time draining may take before pods are deleted regardless of PDBs and "
        "do-not-disrupt; unset waits forever.",
        pattern=DURATION_PATTERN,
    )
    return props


def _conditions(*, reason_optional: bool, description: str) -> Schema:
    reason: Schema = {
        "description": "Machine-readable reason for the last transition.",
        "maxLength": 1024,
    }
    if reason_optional:
        reason["pattern"] = CONDITION_REASON_PATTERN_OPTIONAL
    else:
        reason["minLength"] = 1
        reason["pattern"] = CONDITION_REASON_PATTERN
    reason["type"] = "string"
    required = ["lastTransitionTime", "status", "type"]
    if not reason_optional:
        required = ["lastTransitionTime", "message", "reason", "status", "type"]
    return {
        "description": description,
        "items": _obj(
            {
                "lastTransitionTime": _str("When the status last changed.", format="date-time"),
                "message": _str("Human-readable details.", maxLength=32768),
                "observedGeneration": {
                    "description": "The object generation the condition was computed for.",
                    "format": "int64",
                    "minimum": 0,
                    "type": "integer",
                },
                "reason": reason,
                "status": _str("True, False or Unknown.", enum=["True", "False", "Unknown"]),
                "type": _str("Condition type.", maxLength=316, pattern=CONDITION_TYPE_PATTERN),
            },
            required=required,
            description="A status condition.",
        ),
        "type": "array",
        "x-kubernetes-list-map-keys": ["type"],
        "x-kubernetes-list-type": "map",
    }


def _root(spec: Schema, status: Schema, description: str) -> Schema:
    return {
        "description": description,
        "properties": {
            "apiVersion": _str("Versioned schema of this representation of an object."),
            "kind": _str("REST resource this object represents."),
            "metadata": {"type": "object"},
            "spec": spec,
            "status": status,
        },
        "required": ["spec"],
        "type": "object",
    }


def _crd(
    *,
    group: str,
    kind: str,
    plural: str,
    scope: str,
    version: str,
    schema: Schema,
    columns: list[dict[str, Any]],
    categories: list[str],
    short_names: list[str] | None = None,
    scale: bool = False,
) -> dict[str, Any]:
    names: dict[str, Any] = {"categories": categories, "kind": kind, "listKind": kind + "List"}
    names["plural"] = plural
    if short_names:
        names["shortNames"] = short_names
    names["singular"] = kind.lower()
    subresources: dict[str, Any] = {}
    if scale:
        subresources["scale"] = {
            "specReplicasPath": ".spec.replicas",
            "statusReplicasPath": ".status.nodes",
        }
    subresources["status"] = {}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "names": names,
            "scope": scope,
            "versions": [
                {
                    "additionalPrinterColumns": columns,
                    "name": version,
                    "schema": {"openAPIV3Schema": schema},
                    "served": True,
                    "storage": True,
                    "subresources": subresources,
                }
            ],
        },
    }


def _col(name: str, type_: str, path: str, priority: int | None = None) -> dict[str, Any]:
    c: dict[str, Any] = {"jsonPath": path, "name": name}
    if priority is not None:
        c["priority"] = priority
    c["type"] = type_
    return c


_READY = '.status.conditions[?(@.type=="Ready")].status'
_AGE = _col("Age", "date", ".metadata.creationTimestamp")


def nodepool_crd() -> dict[str, Any]:
    disruption = _obj(
        {
            "budgets": {
                "default": [{"nodes": "10%"}],
                "description": "Limits on how many nodes may be disrupted at once; the most "
                "restrictive active budget wins.",
                "items": _obj(
                    {
                        "duration": _str(
                            "How long the budget stays active after each schedule hit "
                            "(hours and minutes only).",
                            pattern=BUDGET_DURATION_PATTERN,
                        ),
                        "nodes": _str(
                            "Most nodes (count or percentage) that may be disrupting at once.",
                            default="10%",
                            pattern=BUDGET_NODES_PATTERN,
                        ),
                        "reasons": {
                            "description": "Disruption reasons the budget applies to; all "
                            "when unset.",
                            "items": _str(enum=DISRUPTION_REASONS),
                            "maxItems": 50,
                            "type": "array",
                            "x-kubernetes-list-type": "set",
                        },
                        "schedule": _str(
                            "Cron schedule (UTC) at which the budget becomes active.",
                            pattern=BUDGET_SCHEDULE_PATTERN,
                        ),
                    },
                    required=["nodes"],
                    description="A disruption budget.",
                ),
                "maxItems": 50,
                "type": "array",
                "x-kubernetes-list-type": "atomic",
                "x-kubernetes-validations": [
                    _rule(RULE_BUDGET_SCHEDULE_DURATION, "'schedule' must be set with 'duration'")
                ],
            },
            "consolidateAfter": _str(
                "How long a node must be unneeded before consolidation; 'Never' disables it.",
                default="0s",
                pattern=NILLABLE_DURATION_PATTERN,
            ),
            "consolidationPolicy": _str(
                "Which nodes consolidation may remove.",
                default="WhenEmptyOrUnderutilized",
                enum=CONSOLIDATION_POLICIES,
            ),
        },
        description="How Karpenter may disrupt nodes of this NodePool.",
        default={"consolidateAfter": "0s"},
    )
    template = _obj(
        {
            "metadata": _obj(
                {
                    "annotations": {
                        "additionalProperties": {"type": "string"},
                        "description": "Annotations copied to launched nodes.",
                        "type": "object",
                        "x-kubernetes-map-type": "granular",
                    },
                    "labels": {
                        "additionalProperties": _str(maxLength=63, pattern=LABEL_VALUE_PATTERN),
                        "description": "Labels copied to launched nodes.",
                        "maxProperties": 100,
                        "type": "object",
                        "x-kubernetes-map-type": "atomic",
                        "x-kubernetes-validations": [
                            _rule(RULE_DOMAIN_LABELS, MSG_DOMAIN),
                            _rule(RULE_NOT_NODEPOOL_LABELS, MSG_NODEPOOL),
                            _rule(RULE_NOT_HOSTNAME_LABELS, MSG_HOSTNAME),
                        ],
                    },
                },
                description="Labels and annotations for launched nodes.",
            ),
            "spec": _obj(
                _node_claim_spec_properties(template=True),
                required=["nodeClassRef", "requirements"],
                description="The NodeClaim spec stamped onto launched nodes.",
            ),
        },
        required=["spec"],
        description="Template for the NodeClaims this NodePool creates.",
    )
    spec = _obj(
        {
            "disruption": disruption,
            "limits": _quantity_map(
                "Caps on the total resources (and 'nodes') this NodePool may provision."
            ),
            "replicas": {
                "description": "Alpha: a fixed node count; makes the NodePool static.",
                "format": "int64",
                "minimum": 0,
                "type": "integer",
            },
            "template": template,
            "weight": {
                "description": "Priority among NodePools; higher is tried first.",
                "format": "int32",
                "maximum": 100,
                "minimum": 1,
                "type": "integer",
            },
        },
        required=["template"],
        description="Desired state of the NodePool.",
        validations=[
            _rule(
                RULE_STATIC_DYNAMIC,
                "Cannot transition NodePool between static (replicas set) and dynamic "
                "(replicas unset) provisioning modes",
            ),
            _rule(RULE_STATIC_LIMITS, "only 'limits.nodes' is supported on static NodePools"),
            _rule(RULE_STATIC_WEIGHT, "'weight' is not supported on static NodePools"),
        ],
    )
    status = _obj(
        {
            "conditions": _conditions(
                reason_optional=False, description="Signals for health and readiness."
            ),
            "nodeClassObservedGeneration": {
                "description": "Generation of the NodeClass last observed.",
                "format": "int64",
                "type": "integer",
            },
            "nodes": {
                "default": 0,
                "description": "Number of nodes owned by this NodePool.",
                "format": "int64",
                "type": "integer",
            },
            "resources": _quantity_map("Resources provisioned by this NodePool."),
        },
        description="Observed state of the NodePool.",
    )
    return _crd(
        group="karpenter.sh",
        kind="NodePool",
        plural="nodepools",
        scope="Cluster",
        version="v1",
        schema=_root(spec, status, "A NodePool: how and within which limits to launch nodes."),
        columns=[
            _col("NodeClass", "string", ".spec.template.spec.nodeClassRef.name"),
            _col("Nodes", "string", ".status.nodes"),
            _col("Ready", "string", _READY),
            _AGE,
            _col("Weight", "integer", ".spec.weight", 1),
            _col("CPU", "string", ".status.resources.cpu", 1),
            _col("Memory", "string", ".status.resources.memory", 1),
        ],
        categories=["karpenter"],
        scale=True,
    )


def nodeclaim_crd() -> dict[str, Any]:
    spec = _obj(
        _node_claim_spec_properties(template=False),
        required=["nodeClassRef", "requirements"],
        description="Desired node; immutable once created.",
        validations=[_rule(RULE_SPEC_IMMUTABLE, "spec is immutable")],
    )
    status = _obj(
        {
            "allocatable": _quantity_map("Estimated allocatable resources of the node."),
            "capacity": _quantity_map("Estimated capacity of the node."),
            "conditions": _conditions(
                reason_optional=True, description="Signals for health and readiness."
            ),
            "imageID": _str("Image the node runs."),
            "lastPodEventTime": _str(
                "Last time a pod was bound to or removed from the node.", format="date-time"
            ),
            "nodeName": _str("Name of the registered Node."),
            "providerID": _str("Cloud provider ID of the instance."),
        },
        description="Observed state of the NodeClaim.",
    )
    return _crd(
        group="karpenter.sh",
        kind="NodeClaim",
        plural="nodeclaims",
        scope="Cluster",
        version="v1",
        schema=_root(spec, status, "A NodeClaim: a request for, and the record of, one node."),
        columns=[
            _col("Type", "string", ".metadata.labels.node\\.kubernetes\\.io/instance-type"),
            _col("Capacity", "string", ".metadata.labels.karpenter\\.sh/capacity-type"),
            _col("Zone", "string", ".metadata.labels.topology\\.kubernetes\\.io/zone"),
            _col("Node", "string", ".status.nodeName"),
            _col("Ready", "string", _READY),
            _AGE,
            _col("ImageID", "string", ".status.imageID", 1),
            _col("ID", "string", ".status.providerID", 1),
            _col("NodePool", "string", ".metadata.labels.karpenter\\.sh/nodepool", 1),
            _col("NodeClass", "string", ".spec.nodeClassRef.name", 1),
            _col("Drifted", "string", '.status.conditions[?(@.type=="Drifted")].status', 1),
        ],
        categories=["karpenter"],
    )


def nodeoverlay_crd() -> dict[str, Any]:
    spec = _obj(
        {
            "capacity": _quantity_map(
                "Extended resources added to matching instance types (never cpu, memory, "
                "ephemeral-storage or pods).",
                validations=[_rule(RULE_OVERLAY_CAPACITY, "invalid resource restricted")],
            ),
            "price": _str("Replacement price for matching offerings.", pattern=PRICE_PATTERN),
            "priceAdjustment": _str(
                "Signed price delta (-0.5) or percentage (+10%) for matching offerings.",
                pattern=PRICE_ADJUSTMENT_PATTERN,
            ),
            "requirements": _requirements(
                requirement_item_schema(nodepool_key_rule=False, min_values=False),
                [
                    _rule(
                        RULE_NOTIN_HAS_VALUES,
                        "requirements with operator 'NotIn' must have a value defined",
                    ),
                    _rule(
                        RULE_IN_HAS_VALUES,
                        "requirements with operator 'In' must have a value defined",
                    ),
                    _rule(
                        RULE_NUMERIC_SINGLE_VALUE,
                        "requirements operator 'Gt', 'Lt', 'Gte' or 'Lte' must have a single "
                        "positive integer value",
                    ),
                ],
            ),
            "weight": {
                "description": "Precedence among overlays; higher wins.",
                "format": "int32",
                "maximum": 10000,
                "minimum": 1,
                "type": "integer",
            },
        },
        required=["requirements"],
        description="Which instance types to adjust, and how.",
        validations=[
            _rule(RULE_OVERLAY_PRICE_EXCLUSIVE, "cannot set both 'price' and 'priceAdjustment'")
        ],
    )
    status = _obj(
        {
            "conditions": _conditions(
                reason_optional=False, description="Signals for health and readiness."
            )
        },
        description="Observed state of the NodeOverlay.",
    )
    return _crd(
        group="karpenter.sh",
        kind="NodeOverlay",
        plural="nodeoverlays",
        scope="Cluster",
        version="v1alpha1",
        schema=_root(spec, status, "A NodeOverlay: adjusts price or capacity of instance types."),
        columns=[
            _col("Ready", "string", _READY),
            _AGE,
            _col("Weight", "integer", ".spec.weight", 1),
        ],
        categories=["karpenter"],
        short_names=["overlays"],
    )


def capacitybuffer_crd() -> dict[str, Any]:
    local_ref = _obj(
        {"name": _str("Name of the PodTemplate.", minLength=1)},
        required=["name"],
        description="A PodTemplate in the same namespace.",
    )
    spec = _obj(
        {
            "limits": _quantity_map("Caps on the total requests of all buffer chunks."),
            "percentage": {
                "description": "Buffer size as a percentage of the scalable object's replicas.",
                "format": "int32",
                "minimum": 0,
                "type": "integer",
            },
            "podTemplateRef": local_ref,
            "provisioningStrategy": _str(
                "How the buffer is used.", default="buffer.x-k8s.io/active-capacity"
            ),
            "replicas": {
                "description": "Number of buffer chunks.",
                "format": "int32",
                "minimum": 0,
                "type": "integer",
            },
            "scalableRef": _obj(
                {
                    "apiGroup": _str("API group of the referent; empty for core."),
                    "kind": _str("Deployment, StatefulSet or ReplicaSet.", minLength=1),
                    "name": _str("Name of the referent.", minLength=1),
                },
                required=["kind", "name"],
                description="An object with a scale subresource whose pods shape the buffer.",
            ),
        },
        description="Desired buffer capacity.",
        validations=[
            _rule(
                RULE_BUFFER_TEMPLATE_NEEDS_SIZE,
                "If podTemplateRef is set, replicas or limits must also be set",
            ),
            _rule(
                RULE_BUFFER_EXCLUSIVE_REFS,
                "You must define either PodTemplateRef or ScalableRef, but not both",
            ),
        ],
    )
    status = _obj(
        {
            "conditions": _conditions(
                reason_optional=False, description="Standard conditions of the buffer."
            ),
            "podTemplateGeneration": {
                "description": "Observed PodTemplate generation.",
                "format": "int64",
                "type": "integer",
            },
            "podTemplateRef": local_ref,
            "provisioningStrategy": _str("Strategy in use."),
            "replicas": {
                "description": "Buffer chunks currently provisioned.",
                "format": "int32",
                "type": "integer",
            },
        },
        description="Observed state of the buffer.",
    )
    return _crd(
        group="autoscaling.x-k8s.io",
        kind="CapacityBuffer",
        plural="capacitybuffers",
        scope="Namespaced",
        version="v1beta1",
        schema=_root(spec, status, "A CapacityBuffer: spare capacity kept ready for workloads."),
        columns=[
            _col("Strategy", "string", ".spec.provisioningStrategy"),
            _col("PodTemplate", "string", ".status.podTemplateRef.name"),
            _col("Replicas", "integer", ".status.replicas"),
            _col("ConditionsType", "string", ".status.conditions[*].type"),
            _col("ConditionsStatus", "string", ".status.conditions[*].status"),
            _col("ConditionsReason", "string", ".status.conditions[*].reason"),
            _AGE,
        ],
        categories=["autoscaling"],
        short_names=["cb"],
    )


CRD_FILES: dict[str, Any] = {
    "karpenter.sh_nodepools.yaml": nodepool_crd,
    "karpenter.sh_nodeclaims.yaml": nodeclaim_crd,
    "karpenter.sh_nodeoverlays.yaml": nodeoverlay_crd,
    "autoscaling.x-k8s.io_capacitybuffers.yaml": capacitybuffer_crd,
}
"""File name -> builder, in the order ``karpenter crds`` prints them."""


def all_crds() -> list[dict[str, Any]]:
    return [build() for build in CRD_FILES.values()]


def object_schema(api_version: str, kind: str) -> Schema | None:
    """The ``openAPIV3Schema`` for ``apiVersion``/``kind``, or ``None`` when not a core CRD."""
    return _SCHEMAS.get((api_version, kind))


def _index() -> dict[tuple[str, str], Schema]:
    out: dict[tuple[str, str], Schema] = {}
    for crd in all_crds():
        spec = crd["spec"]
        for version in spec["versions"]:
            key = (f"{spec['group']}/{version['name']}", spec["names"]["kind"])
            out[key] = version["schema"]["openAPIV3Schema"]
    return out


_SCHEMAS = _index()
