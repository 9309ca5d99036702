"""Hook implementations of karpenter-kwok (entry point ``kwok`` in group ``karpenter``)."""

from __future__ import annotations

from importlib.resources import files

from karpenter_core.plugin_api import (
    CloudProviderSpec,
    ControllerSpec,
    DRADriverSpec,
    ProviderSetting,
    hookimpl,
)
from karpenter_kwok import dra
from karpenter_kwok.labels import KWOK_NODE_CLASS, RESTRICTED_LABEL_DOMAINS, WELL_KNOWN_LABELS
from karpenter_kwok.provider import (
    CATALOGUE_PROVIDER_SETTING,
    CATALOGUE_SETTINGS_SETTING,
    INSTANCE_TYPES_FILE_ENV,
    INSTANCE_TYPES_FILE_SETTING,
    INSUFFICIENT_CAPACITY_SETTING,
    LAUNCH_LATENCY_JITTER_SETTING,
    LAUNCH_LATENCY_SETTING,
    NAME,
    NEVER_REGISTER_SETTING,
    SEED_SETTING,
    UNAVAILABLE_OFFERINGS_TTL_SETTING,
    KwokCloudProvider,
)

CRDS = (files("karpenter_kwok") / "crds" / "karpenter.kwok.sh_kwoknodeclasses.yaml",)
"""The KWOKNodeClass CRD, package data so it ships in the wheel; ``karpenter crds`` prints
it and the Helm chart carries an identical copy."""

_RULES = (
    "a JSON/YAML list of rules {instanceTypes, zones, capacityTypes, attempts, after, until} "
    "matching the chosen offering (empty lists match all; after/until are durations since "
    "start)"
)

SETTINGS = (
    ProviderSetting(
        INSTANCE_TYPES_FILE_SETTING,
        "JSON file of instance types in the KWOK format; the built-in 144-type catalogue "
        "when empty.",
        env=INSTANCE_TYPES_FILE_ENV,
    ),
    ProviderSetting(
        SEED_SETTING,
        "Seed for node name suffixes and ties between equally cheap offerings.",
        default="0",
    ),
    ProviderSetting(
        LAUNCH_LATENCY_SETTING,
        "Extra time before a launched Node appears, on top of the KWOKNodeClass "
        "nodeRegistrationDelay (a duration such as 30s).",
        default="0s",
    ),
    ProviderSetting(
        LAUNCH_LATENCY_JITTER_SETTING,
        "Up to this much more launch latency, drawn from the seeded random source.",
        default="0s",
    ),
    ProviderSetting(
        INSUFFICIENT_CAPACITY_SETTING,
        f"Failure injection: launches raise InsufficientCapacityError for {_RULES}.",
        default="",
    ),
    ProviderSetting(
        NEVER_REGISTER_SETTING,
        f"Failure injection: instances are created but their Node never appears, for {_RULES}.",
        default="",
    ),
    ProviderSetting(
        UNAVAILABLE_OFFERINGS_TTL_SETTING,
        "How long an offering that ran out of capacity is reported unavailable "
        "(0s disables the cache).",
        default="3m",
    ),
    ProviderSetting(
        CATALOGUE_PROVIDER_SETTING,
        "Stand in for this provider's catalogue (e.g. aws): its instance types, per "
        "NodePool and NodeClass, built offline, are the ones KWOK launches; its NodeClass "
        "kinds replace KWOKNodeClass. What `karpenter simulate` uses for a non-KWOK "
        "cloudProvider.",
        default="",
    ),
    ProviderSetting(
        CATALOGUE_SETTINGS_SETTING,
        'The catalogue provider\'s settings as a JSON object (e.g. {"region": "us-west-2"}).',
        default="{}",
    ),
    ProviderSetting(
        dra.CONFIG_SETTING,
        "The KWOK DRA driver: DRAConfig documents (upstream's dra-kwok-driver CRD: a driver "
        "and pools of devices for the nodes their nodeSelectorTerms match), inline YAML/JSON "
        "or the path of a file; Karpenter predicts the devices of each instance type and "
        "KWOK nodes publish them as ResourceSlices once Ready (docs/dra.md).",
        default="",
        env=dra.CONFIG_ENV,
    ),
)


@hookimpl
def karpenter_cloud_providers() -> list[CloudProviderSpec]:
    return [
        CloudProviderSpec(
            name=NAME,
            factory=KwokCloudProvider.from_context,
            node_classes=(KWOK_NODE_CLASS,),
            well_known_labels=WELL_KNOWN_LABELS,
            restricted_label_domains=RESTRICTED_LABEL_DOMAINS,
            settings=SETTINGS,
            can_launch=True,
            crds=CRDS,
            description="Simulated nodes for KWOK clusters: a generated catalogue of 144 "
            "instance types (c/s/m families, 1-256 vCPUs, amd64/arm64, linux/windows) in "
            "four test zones; launches create Nodes for KWOK (or the simulated kubelet).",
        )
    ]


@hookimpl
def karpenter_dra_drivers() -> list[DRADriverSpec]:
    """The drivers of the KWOK DRA configuration in effect (the ``dra-config`` setting the
    KWOK provider was built with, else ``KWOK_DRA_CONFIG``)."""
    return dra.driver_specs()


@hookimpl
def karpenter_controllers() -> list[ControllerSpec]:
    """The KWOK DRA driver's ResourceSlice publisher (runs when drivers are configured)."""
    return dra.controller_specs()
