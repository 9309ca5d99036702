"""The public plugin API: everything a plugin may use, from one module.

A plugin (a cloud provider, an overlay, a disruption method, a DRA driver, a controller)
imports from here and nowhere else in ``karpenter_core``; a test scans the bundled
plugins' code to hold them to it. Whatever is not re-exported here is the core's own
business and may change without notice; whatever is, changes only with a deprecation.

Names are loaded on first use (PEP 562), so importing this module from a plugin's entry
point costs nothing until the plugin actually needs, say, the disruption types.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from karpenter_core import metrics
    from karpenter_core.apis import labels, resources
    from karpenter_core.apis.accessors import (
        annotations_of,
        labels_of,
        meta_of,
        name_of,
        namespace_of,
        spec_of,
        status_of,
    )
    from karpenter_core.apis.base import (
        ObjectMeta,
        format_time,
    )
    from karpenter_core.apis.conditions import (
        ConditionSet,
        condition_of,
        conditions_of,
        is_true,
    )
    from karpenter_core.apis.crds.openapi import (
        CRDSchema,
        FieldError,
        SpecCheck,
    )
    from karpenter_core.apis.durations import (
        DurationError,
        parse_go_duration,
    )
    from karpenter_core.apis.manifests import (
        ManifestError,
        parse_json,
        parse_yaml,
        read_text,
    )
    from karpenter_core.apis.quantity import (
        QuantityError,
        format_quantity,
        parse_quantity,
        parse_quantity_format,
    )
    from karpenter_core.apis.resource import Device
    from karpenter_core.apis.v1 import (
        NodeClaim,
        NodeClaimStatus,
        NodePool,
    )
    from karpenter_core.cloudprovider import catalogue
    from karpenter_core.cloudprovider.errors import (
        CloudProviderError,
        CreateError,
        InsufficientCapacityError,
        NodeClaimNotFoundError,
        NodeClassNotReadyError,
        UnevaluatedNodePoolError,
    )
    from karpenter_core.cloudprovider.protocol import (
        Adoption,
        AdoptsInstances,
        CloudProvider,
        DriftReason,
        InjectsOfferingOutages,
        NodeClassKind,
        NodeLifecycleHookResult,
        OfferingOutage,
        RepairPolicy,
        SimulatesNodes,
    )
    from karpenter_core.cloudprovider.providerkit import (
        ProviderNodeClass,
        as_nodeclaim,
        describe_requested,
        drift_nodeclass,
        ensure_hash_annotations,
        instance_nodeclaim,
        launch_nodeclass,
        nodepool_nodeclass,
    )
    from karpenter_core.cloudprovider.types import (
        InstanceType,
        InstanceTypeOverhead,
        Offering,
        Offerings,
        fits,
        register_reservation_labels,
        truncate,
    )
    from karpenter_core.cloudprovider.unavailable import (
        UNAVAILABLE_OFFERINGS_TTL,
        UnavailableOfferings,
        offering_key,
    )
    from karpenter_core.controllers.disruption.context import DisruptionContext
    from karpenter_core.controllers.node.health import (
        termination_timestamp,
    )
    from karpenter_core.controllers.nodeclaim.garbagecollection import (
        record_disruption,
    )
    from karpenter_core.disruption.notices import Blocked, Unconsolidatable
    from karpenter_core.disruption.simulation import (
        CandidateDeletingError,
        SimulationError,
        simulate_scheduling,
    )
    from karpenter_core.disruption.snapshot import DisruptionSnapshot
    from karpenter_core.disruption.types import (
        BudgetMap,
        Candidate,
        Command,
        Decision,
        Method,
        ValidatingMethod,
        ValidationError,
    )
    from karpenter_core.hookspecs import (
        CLASS_EVENTUAL,
        CLASS_GRACEFUL,
        CONSOLIDATION_TYPE_EMPTY,
        CONSOLIDATION_TYPE_MULTI,
        CONSOLIDATION_TYPE_NONE,
        CONSOLIDATION_TYPE_SINGLE,
        ORDER_DRIFT,
        ORDER_EMPTINESS,
        ORDER_MULTI_NODE_CONSOLIDATION,
        ORDER_SINGLE_NODE_CONSOLIDATION,
        ORDER_STATIC_DRIFT,
        WEIGHT_NODEOVERLAY,
        CloudProviderSpec,
        ControllerSpec,
        DisruptionMethodSpec,
        DRADriverSpec,
        InstanceTypeOverlaySpec,
        InstanceTypeScorerSpec,
        NodeLifecycleHookSpec,
        ProviderContext,
        ProviderSetting,
        ScoringRequest,
    )
    from karpenter_core.kube.client import (
        AlreadyExists,
        ApiError,
        Conflict,
        KubeClient,
        NotFound,
        ResourceType,
        api_reader,
        register_resource,
        shared_get,
        shared_list,
    )
    from karpenter_core.metrics import (
        counter,
        gauge,
        histogram,
    )
    from karpenter_core.plugins import (
        get_cloud_provider,
        hookimpl,
    )
    from karpenter_core.runtime.clock import (
        Clock,
        TimerHandle,
        VirtualClock,
        WallClock,
    )
    from karpenter_core.runtime.context import (
        ControllerContext,
    )
    from karpenter_core.runtime.events import (
        NORMAL,
        WARNING,
        Event,
        EventRecorder,
    )
    from karpenter_core.runtime.logthrottle import (
        LogThrottle,
        held_back,
    )
    from karpenter_core.runtime.reconciler import (
        ObjectKey,
        Reconciler,
        Result,
        SingletonReconciler,
        Watch,
    )
    from karpenter_core.runtime.workqueue import (
        ItemExponentialFailureRateLimiter,
        RateLimiter,
    )
    from karpenter_core.scheduling.nodeselector import (
        node_selector_matches,
        term_matches,
    )
    from karpenter_core.scheduling.requirements import (
        DOES_NOT_EXIST,
        EXISTS,
        GT,
        GTE,
        IN,
        LT,
        LTE,
        NOT_IN,
        Requirement,
        Requirements,
    )
    from karpenter_core.scoring import (
        launch_preference,
        preference_rank,
    )

_NAMES: dict[str, str] = {
    # Registration: the hooks' registration objects and the hookimpl marker
    "CloudProviderSpec": "karpenter_core.hookspecs",
    "ControllerSpec": "karpenter_core.hookspecs",
    "DisruptionMethodSpec": "karpenter_core.hookspecs",
    "DRADriverSpec": "karpenter_core.hookspecs",
    "InstanceTypeOverlaySpec": "karpenter_core.hookspecs",
    "InstanceTypeScorerSpec": "karpenter_core.hookspecs",
    "ScoringRequest": "karpenter_core.hookspecs",
    "NodeLifecycleHookSpec": "karpenter_core.hookspecs",
    "ProviderContext": "karpenter_core.hookspecs",
    "ProviderSetting": "karpenter_core.hookspecs",
    "ORDER_EMPTINESS": "karpenter_core.hookspecs",
    "ORDER_STATIC_DRIFT": "karpenter_core.hookspecs",
    "ORDER_DRIFT": "karpenter_core.hookspecs",
    "ORDER_MULTI_NODE_CONSOLIDATION": "karpenter_core.hookspecs",
    "ORDER_SINGLE_NODE_CONSOLIDATION": "karpenter_core.hookspecs",
    "WEIGHT_NODEOVERLAY": "karpenter_core.hookspecs",
    "hookimpl": "karpenter_core.plugins",
    # Another provider's catalogue, built offline (KWOK stands in for it in simulations)
    "get_cloud_provider": "karpenter_core.plugins",
    # Instance-type scoring: the launch order the core writes on a NodeClaim
    "launch_preference": "karpenter_core.scoring",
    "preference_rank": "karpenter_core.scoring",
    # The cloud provider contract
    "AdoptsInstances": "karpenter_core.cloudprovider.protocol",
    "Adoption": "karpenter_core.cloudprovider.protocol",
    "CloudProvider": "karpenter_core.cloudprovider.protocol",
    "DriftReason": "karpenter_core.cloudprovider.protocol",
    "InjectsOfferingOutages": "karpenter_core.cloudprovider.protocol",
    "NodeClassKind": "karpenter_core.cloudprovider.protocol",
    "NodeLifecycleHookResult": "karpenter_core.cloudprovider.protocol",
    "OfferingOutage": "karpenter_core.cloudprovider.protocol",
    "RepairPolicy": "karpenter_core.cloudprovider.protocol",
    "SimulatesNodes": "karpenter_core.cloudprovider.protocol",
    "InstanceType": "karpenter_core.cloudprovider.types",
    "InstanceTypeOverhead": "karpenter_core.cloudprovider.types",
    "Offering": "karpenter_core.cloudprovider.types",
    "Offerings": "karpenter_core.cloudprovider.types",
    "fits": "karpenter_core.cloudprovider.types",
    "register_reservation_labels": "karpenter_core.cloudprovider.types",
    "truncate": "karpenter_core.cloudprovider.types",
    "CloudProviderError": "karpenter_core.cloudprovider.errors",
    "CreateError": "karpenter_core.cloudprovider.errors",
    "InsufficientCapacityError": "karpenter_core.cloudprovider.errors",
    "NodeClaimNotFoundError": "karpenter_core.cloudprovider.errors",
    "NodeClassNotReadyError": "karpenter_core.cloudprovider.errors",
    "UnevaluatedNodePoolError": "karpenter_core.cloudprovider.errors",
    "UNAVAILABLE_OFFERINGS_TTL": "karpenter_core.cloudprovider.unavailable",
    "UnavailableOfferings": "karpenter_core.cloudprovider.unavailable",
    "offering_key": "karpenter_core.cloudprovider.unavailable",
    # What every provider does alike: resolving its NodeClass (for a launch, a NodePool's
    # instance types, drift), the NodeClaim view of an instance, describing a request
    "ProviderNodeClass": "karpenter_core.cloudprovider.providerkit",
    "as_nodeclaim": "karpenter_core.cloudprovider.providerkit",
    "describe_requested": "karpenter_core.cloudprovider.providerkit",
    "drift_nodeclass": "karpenter_core.cloudprovider.providerkit",
    "ensure_hash_annotations": "karpenter_core.cloudprovider.providerkit",
    "instance_nodeclaim": "karpenter_core.cloudprovider.providerkit",
    "launch_nodeclass": "karpenter_core.cloudprovider.providerkit",
    "nodepool_nodeclass": "karpenter_core.cloudprovider.providerkit",
    # The API model
    "NodeClaim": "karpenter_core.apis.v1",
    "NodeClaimStatus": "karpenter_core.apis.v1",
    "NodePool": "karpenter_core.apis.v1",
    "ObjectMeta": "karpenter_core.apis.base",
    "format_time": "karpenter_core.apis.base",
    # Reading an object's JSON
    "annotations_of": "karpenter_core.apis.accessors",
    "labels_of": "karpenter_core.apis.accessors",
    "meta_of": "karpenter_core.apis.accessors",
    "name_of": "karpenter_core.apis.accessors",
    "namespace_of": "karpenter_core.apis.accessors",
    "spec_of": "karpenter_core.apis.accessors",
    "status_of": "karpenter_core.apis.accessors",
    "QuantityError": "karpenter_core.apis.quantity",
    "format_quantity": "karpenter_core.apis.quantity",
    "parse_quantity": "karpenter_core.apis.quantity",
    "parse_quantity_format": "karpenter_core.apis.quantity",
    "DurationError": "karpenter_core.apis.durations",
    "parse_go_duration": "karpenter_core.apis.durations",
    "ManifestError": "karpenter_core.apis.manifests",
    "parse_json": "karpenter_core.apis.manifests",
    "parse_yaml": "karpenter_core.apis.manifests",
    "read_text": "karpenter_core.apis.manifests",
    # Validating and defaulting an object (a provider's NodeClass) against the CRD it ships,
    # as the API server does: OpenAPI checks and x-kubernetes-validations CEL rules
    "CRDSchema": "karpenter_core.apis.crds.openapi",
    "FieldError": "karpenter_core.apis.crds.openapi",
    "SpecCheck": "karpenter_core.apis.crds.openapi",
    # Scheduling requirements
    "DOES_NOT_EXIST": "karpenter_core.scheduling.requirements",
    "EXISTS": "karpenter_core.scheduling.requirements",
    "GT": "karpenter_core.scheduling.requirements",
    "GTE": "karpenter_core.scheduling.requirements",
    "IN": "karpenter_core.scheduling.requirements",
    "LT": "karpenter_core.scheduling.requirements",
    "LTE": "karpenter_core.scheduling.requirements",
    "NOT_IN": "karpenter_core.scheduling.requirements",
    "Requirement": "karpenter_core.scheduling.requirements",
    "Requirements": "karpenter_core.scheduling.requirements",
    # DRA drivers: a device of a ResourceSlice (checks a driver's device specs), and node
    # selectors tested against a concrete node (a driver's pools)
    "Device": "karpenter_core.apis.resource",
    "node_selector_matches": "karpenter_core.scheduling.nodeselector",
    "term_matches": "karpenter_core.scheduling.nodeselector",
    # Disruption methods
    "CLASS_EVENTUAL": "karpenter_core.hookspecs",
    "CLASS_GRACEFUL": "karpenter_core.hookspecs",
    "CONSOLIDATION_TYPE_EMPTY": "karpenter_core.hookspecs",
    "CONSOLIDATION_TYPE_MULTI": "karpenter_core.hookspecs",
    "CONSOLIDATION_TYPE_NONE": "karpenter_core.hookspecs",
    "CONSOLIDATION_TYPE_SINGLE": "karpenter_core.hookspecs",
    "CandidateDeletingError": "karpenter_core.disruption.simulation",
    "SimulationError": "karpenter_core.disruption.simulation",
    "simulate_scheduling": "karpenter_core.disruption.simulation",
    "BudgetMap": "karpenter_core.disruption.types",
    "Candidate": "karpenter_core.disruption.types",
    "Command": "karpenter_core.disruption.types",
    "Decision": "karpenter_core.disruption.types",
    "Method": "karpenter_core.disruption.types",
    "ValidatingMethod": "karpenter_core.disruption.types",
    "ValidationError": "karpenter_core.disruption.types",
    "DisruptionSnapshot": "karpenter_core.disruption.snapshot",
    "Blocked": "karpenter_core.disruption.notices",
    "Unconsolidatable": "karpenter_core.disruption.notices",
    "DisruptionContext": "karpenter_core.controllers.disruption.context",
    # Status conditions, and NodeClaim lifecycle helpers
    "ConditionSet": "karpenter_core.apis.conditions",
    "condition_of": "karpenter_core.apis.conditions",
    "conditions_of": "karpenter_core.apis.conditions",
    "is_true": "karpenter_core.apis.conditions",
    "record_disruption": "karpenter_core.controllers.nodeclaim.garbagecollection",
    "termination_timestamp": "karpenter_core.controllers.node.health",
    # The cluster client
    "AlreadyExists": "karpenter_core.kube.client",
    "ApiError": "karpenter_core.kube.client",
    "Conflict": "karpenter_core.kube.client",
    "KubeClient": "karpenter_core.kube.client",
    "NotFound": "karpenter_core.kube.client",
    "ResourceType": "karpenter_core.kube.client",
    "register_resource": "karpenter_core.kube.client",
    "api_reader": "karpenter_core.kube.client",
    "shared_get": "karpenter_core.kube.client",
    "shared_list": "karpenter_core.kube.client",
    # Controllers: context, clocks, events, reconcilers, queues, logging
    "ControllerContext": "karpenter_core.runtime.context",
    "Clock": "karpenter_core.runtime.clock",
    "TimerHandle": "karpenter_core.runtime.clock",
    "VirtualClock": "karpenter_core.runtime.clock",
    "WallClock": "karpenter_core.runtime.clock",
    "Event": "karpenter_core.runtime.events",
    "EventRecorder": "karpenter_core.runtime.events",
    "NORMAL": "karpenter_core.runtime.events",
    "WARNING": "karpenter_core.runtime.events",
    "ObjectKey": "karpenter_core.runtime.reconciler",
    "Reconciler": "karpenter_core.runtime.reconciler",
    "Result": "karpenter_core.runtime.reconciler",
    "SingletonReconciler": "karpenter_core.runtime.reconciler",
    "Watch": "karpenter_core.runtime.reconciler",
    "ItemExponentialFailureRateLimiter": "karpenter_core.runtime.workqueue",
    "RateLimiter": "karpenter_core.runtime.workqueue",
    "LogThrottle": "karpenter_core.runtime.logthrottle",
    "held_back": "karpenter_core.runtime.logthrottle",
    # Metrics on Karpenter's registry
    "counter": "karpenter_core.metrics",
    "gauge": "karpenter_core.metrics",
    "histogram": "karpenter_core.metrics",
}
"""Each public name and the module it lives in."""

_MODULES: dict[str, str] = {
    "labels": "karpenter_core.apis.labels",  # well-known label, annotation and taint keys
    "resources": "karpenter_core.apis.resources",  # resource lists
    "metrics": "karpenter_core.metrics",  # the metrics module (reset/snapshot in tests)
    "catalogue": "karpenter_core.cloudprovider.catalogue",  # bundled catalogue package data
}
"""Modules re-exported whole."""

__all__ = [
    "CLASS_EVENTUAL",
    "CLASS_GRACEFUL",
    "CONSOLIDATION_TYPE_EMPTY",
    "CONSOLIDATION_TYPE_MULTI",
    "CONSOLIDATION_TYPE_NONE",
    "CONSOLIDATION_TYPE_SINGLE",
    "DOES_NOT_EXIST",
    "EXISTS",
    "GT",
    "GTE",
    "IN",
    "LT",
    "LTE",
    "NORMAL",
    "NOT_IN",
    "ORDER_DRIFT",
    "ORDER_EMPTINESS",
    "ORDER_MULTI_NODE_CONSOLIDATION",
    "ORDER_SINGLE_NODE_CONSOLIDATION",
    "ORDER_STATIC_DRIFT",
    "UNAVAILABLE_OFFERINGS_TTL",
    "WARNING",
    "WEIGHT_NODEOVERLAY",
    "Adoption",
    "AdoptsInstances",
    "AlreadyExists",
    "ApiError",
    "Blocked",
    "BudgetMap",
    "CRDSchema",
    "Candidate",
    "CandidateDeletingError",
    "Clock",
    "CloudProvider",
    "CloudProviderError",
    "CloudProviderSpec",
    "Command",
    "ConditionSet",
    "Conflict",
    "ControllerContext",
    "ControllerSpec",
    "CreateError",
    "DRADriverSpec",
    "Decision",
    "Device",
    "DisruptionContext",
    "DisruptionMethodSpec",
    "DisruptionSnapshot",
    "DriftReason",
    "DurationError",
    "Event",
    "EventRecorder",
    "FieldError",
    "InjectsOfferingOutages",
    "InstanceType",
    "InstanceTypeOverhead",
    "InstanceTypeOverlaySpec",
    "InstanceTypeScorerSpec",
    "InsufficientCapacityError",
    "ItemExponentialFailureRateLimiter",
    "KubeClient",
    "LogThrottle",
    "ManifestError",
    "Method",
    "NodeClaim",
    "NodeClaimNotFoundError",
    "NodeClaimStatus",
    "NodeClassKind",
    "NodeClassNotReadyError",
    "NodeLifecycleHookResult",
    "NodeLifecycleHookSpec",
    "NodePool",
    "NotFound",
    "ObjectKey",
    "ObjectMeta",
    "Offering",
    "OfferingOutage",
    "Offerings",
    "ProviderContext",
    "ProviderNodeClass",
    "ProviderSetting",
    "QuantityError",
    "RateLimiter",
    "Reconciler",
    "RepairPolicy",
    "Requirement",
    "Requirements",
    "ResourceType",
    "Result",
    "ScoringRequest",
    "SimulatesNodes",
    "SimulationError",
    "SingletonReconciler",
    "SpecCheck",
    "TimerHandle",
    "UnavailableOfferings",
    "Unconsolidatable",
    "UnevaluatedNodePoolError",
    "ValidatingMethod",
    "ValidationError",
    "VirtualClock",
    "WallClock",
    "Watch",
    "annotations_of",
    "api_reader",
    "as_nodeclaim",
    "catalogue",
    "condition_of",
    "conditions_of",
    "counter",
    "describe_requested",
    "drift_nodeclass",
    "ensure_hash_annotations",
    "fits",
    "format_quantity",
    "format_time",
    "gauge",
    "get_cloud_provider",
    "held_back",
    "histogram",
    "hookimpl",
    "instance_nodeclaim",
    "is_true",
    "labels",
    "labels_of",
    "launch_nodeclass",
    "launch_preference",
    "meta_of",
    "metrics",
    "name_of",
    "namespace_of",
    "node_selector_matches",
    "nodepool_nodeclass",
    "offering_key",
    "parse_go_duration",
    "parse_json",
    "parse_quantity",
    "parse_quantity_format",
    "parse_yaml",
    "preference_rank",
    "read_text",
    "record_disruption",
    "register_reservation_labels",
    "register_resource",
    "resources",
    "shared_get",
    "shared_list",
    "simulate_scheduling",
    "spec_of",
    "status_of",
    "term_matches",
    "termination_timestamp",
    "truncate",
]


def __getattr__(name: str) -> Any:
    module = _MODULES.get(name)
    if module is not None:
        value = importlib.import_module(module)
    elif name in _NAMES:
        value = getattr(importlib.import_module(_NAMES[name]), name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return list(__all__)
