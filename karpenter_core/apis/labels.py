"""Well-known label, annotation, taint and finalizer keys of ``karpenter.sh``.

Upstream keeps these as package-level variables that cloud providers mutate at start-up.
We keep the same shape (module-level sets) because the scheduler reads them in its inner
loop, but providers extend them only through :func:`register_well_known_labels` and
:func:`register_restricted_label_domains`, which the plugin manager calls with what each
``CloudProviderSpec`` declares. Nothing here imports from the rest of the package.
"""

from __future__ import annotations

from collections.abc import Iterable

GROUP = "karpenter.sh"
API_VERSION = "karpenter.sh/v1"

# --- Kubernetes well-known labels -------------------------------------------------------
LABEL_TOPOLOGY_ZONE = "topology.kubernetes.io/zone"
LABEL_TOPOLOGY_REGION = "topology.kubernetes.io/region"
LABEL_INSTANCE_TYPE = "node.kubernetes.io/instance-type"
LABEL_ARCH = "kubernetes.io/arch"
LABEL_OS = "kubernetes.io/os"
LABEL_HOSTNAME = "kubernetes.io/hostname"
LABEL_WINDOWS_BUILD = "node.kubernetes.io/windows-build"

# --- Karpenter labels ---------------------------------------------------------------------
NODEPOOL_LABEL_KEY = "karpenter.sh/nodepool"
CAPACITY_TYPE_LABEL_KEY = "karpenter.sh/capacity-type"
NODE_INITIALIZED_LABEL_KEY = "karpenter.sh/initialized"
NODE_REGISTERED_LABEL_KEY = "karpenter.sh/registered"
NODE_DO_NOT_SYNC_TAINTS_LABEL_KEY = "karpenter.sh/do-not-sync-taints"

CAPACITY_TYPE_SPOT = "spot"
CAPACITY_TYPE_ON_DEMAND = "on-demand"
CAPACITY_TYPE_RESERVED = "reserved"
CAPACITY_TYPES = (CAPACITY_TYPE_RESERVED, CAPACITY_TYPE_SPOT, CAPACITY_TYPE_ON_DEMAND)

ARCHITECTURE_AMD64 = "amd64"
ARCHITECTURE_ARM64 = "arm64"

# --- Annotations --------------------------------------------------------------------------
DO_NOT_DISRUPT_ANNOTATION_KEY = "karpenter.sh/do-not-disrupt"
NODEPOOL_HASH_ANNOTATION_KEY = "karpenter.sh/nodepool-hash"
NODEPOOL_HASH_VERSION_ANNOTATION_KEY = "karpenter.sh/nodepool-hash-version"
NODEPOOL_HASH_VERSION = "v3"
NODECLAIM_TERMINATION_TIMESTAMP_ANNOTATION_KEY = "karpenter.sh/nodeclaim-termination-timestamp"
NODECLAIM_MIN_VALUES_RELAXED_ANNOTATION_KEY = "karpenter.sh/nodeclaim-min-values-relaxed"
REQUESTED_DRA_DRIVERS_ANNOTATION_KEY = "karpenter.sh/requested-dra-drivers"
PRICE_OVERLAY_APPLIED_ANNOTATION_KEY = "karpenter.sh/price-overlay-applied"
CAPACITY_OVERLAY_APPLIED_ANNOTATION_KEY = "karpenter.sh/capacity-overlay-applied"
INSTANCE_TYPE_SCORER_ANNOTATION_KEY = "karpenter.sh/instance-type-scorer"
INSTANCE_TYPE_PRIORITY_ANNOTATION_KEY = "karpenter.sh/instance-type-priority"
INSTANCE_TYPE_PREFERENCE_ANNOTATION_KEY = "karpenter.sh/instance-type-preference"
CAPACITY_BUFFER_FAKE_POD_ANNOTATION_KEY = "karpenter.sh/capacity-buffer-fake-pod"
CAPACITY_BUFFER_NAME_ANNOTATION_KEY = "karpenter.sh/capacity-buffer-name"
CAPACITY_BUFFER_NAMESPACE_ANNOTATION_KEY = "karpenter.sh/capacity-buffer-namespace"

# --- Taints and finalizers ----------------------------------------------------------------
DISRUPTED_TAINT_KEY = "karpenter.sh/disrupted"
UNREGISTERED_TAINT_KEY = "karpenter.sh/unregistered"
TERMINATION_FINALIZER = "karpenter.sh/termination"

# --- Label sets (providers extend these through the plugin contract) ----------------------
WELL_KNOWN_LABELS: set[str] = {
    NODEPOOL_LABEL_KEY,
    LABEL_TOPOLOGY_ZONE,
    LABEL_TOPOLOGY_REGION,
    LABEL_INSTANCE_TYPE,
    LABEL_ARCH,
    LABEL_OS,
    CAPACITY_TYPE_LABEL_KEY,
    LABEL_WINDOWS_BUILD,
}
"""Keys the scheduler may leave undefined on a NodeClaim: instance types and offerings
resolve them (``AllowUndefinedWellKnownLabels``)."""

CORE_WELL_KNOWN_LABELS: frozenset[str] = frozenset(WELL_KNOWN_LABELS)
"""The Kubernetes and Karpenter keys of :data:`WELL_KNOWN_LABELS`, before any provider adds
its own: what a typo hint suggests first."""

WELL_KNOWN_LABELS_FOR_OFFERINGS: frozenset[str] = frozenset(
    {LABEL_TOPOLOGY_ZONE, CAPACITY_TYPE_LABEL_KEY}
)

WELL_KNOWN_VALUES_FOR_REQUIREMENTS: dict[str, frozenset[str]] = {
    CAPACITY_TYPE_LABEL_KEY: frozenset(CAPACITY_TYPES),
}
"""The only key whose values Karpenter knows in advance."""

RESTRICTED_LABEL_DOMAINS: set[str] = {GROUP}
RESTRICTED_LABELS: frozenset[str] = frozenset({LABEL_HOSTNAME})

NORMALIZED_LABELS: dict[str, str] = {
    "failure-domain.beta.kubernetes.io/zone": LABEL_TOPOLOGY_ZONE,
    "failure-domain.beta.kubernetes.io/region": LABEL_TOPOLOGY_REGION,
    "beta.kubernetes.io/arch": LABEL_ARCH,
    "beta.kubernetes.io/os": LABEL_OS,
    "beta.kubernetes.io/instance-type": LABEL_INSTANCE_TYPE,
}

NORMALIZED_LABEL_VALUES: dict[str, dict[str, str]] = {}
"""canonical key -> {raw value -> normalized value}; empty unless a provider fills it."""

KNOWN_EPHEMERAL_TAINT_PREFIX = "readiness.k8s.io/"

# Keys used only inside scheduling simulation (so DaemonSets selecting on them count) and
# stripped before a NodeClaim is emitted.
SIMULATION_ONLY_LABELS: frozenset[str] = frozenset(
    {NODE_REGISTERED_LABEL_KEY, NODE_INITIALIZED_LABEL_KEY}
)

WELL_KNOWN_RESOURCES: frozenset[str] = frozenset({"cpu", "memory", "ephemeral-storage", "pods"})


def normalize_key(key: str) -> str:
    """Rewrite a legacy label key (``beta.kubernetes.io/arch``) to its current form."""
    return NORMALIZED_LABELS.get(key, key)


def normalize_value(key: str, value: str) -> str:
    """Apply a provider's value normalisation for ``key`` (identity by default)."""
    table = NORMALIZED_LABEL_VALUES.get(key)
    if table is None:
        return value
    return table.get(value, value)


def label_domain(key: str) -> str:
    """The DNS prefix of a qualified key, or ``""`` when it has none."""
    prefix, sep, _ = key.partition("/")
    return prefix if sep else ""


def is_restricted_label(key: str) -> bool:
    """True when users may not constrain ``key``: hostname or a Karpenter-owned domain.

    Well-known keys (``karpenter.sh/capacity-type``) are never restricted.
    """
    if key in WELL_KNOWN_LABELS:
        return False
    if key in RESTRICTED_LABELS:
        return True
    domain = label_domain(key)
    return any(domain == d or domain.endswith("." + d) for d in RESTRICTED_LABEL_DOMAINS)


def register_well_known_labels(keys: Iterable[str]) -> None:
    """Add provider keys (``karpenter.k8s.aws/instance-family``...) to the well-known set."""
    WELL_KNOWN_LABELS.update(keys)


def register_restricted_label_domains(domains: Iterable[str]) -> None:
    """Add provider-owned label domains (``karpenter.kwok.sh``) to the restricted set."""
    RESTRICTED_LABEL_DOMAINS.update(domains)


def register_normalized_label_values(key: str, values: dict[str, str]) -> None:
    """Let a provider rewrite raw label values of ``key`` to canonical ones."""
    NORMALIZED_LABEL_VALUES.setdefault(key, {}).update(values)
