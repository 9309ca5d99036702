"""A Karpenter node's GCE metadata, rewritten from a GKE node pool's instance template.

GKE nodes bootstrap from their instance metadata: ``kube-env`` (a ``KEY: value`` document
the node's ``configure.sh`` reads, whose ``KUBELET_ARGS`` entry holds the kubelet flags),
``kube-labels`` (the Node's labels), ``kubelet-config`` (a KubeletConfiguration YAML) and
the scripts (``configure-sh``, ``user-data``...). Karpenter does not generate these: as
upstream (``pkg/metadata``, ``pkg/providers/instance``), it copies them from the instance
template of an existing node pool of the cluster and rewrites what makes the node
Karpenter's:

- only the template keys in :data:`RETAINED_SOURCE_KEYS` are copied (not the pool's
  identity, e.g. ``cluster-name`` stays but ``goog-k8s-node-pool-name`` labels do not);
  the GCENodeClass's ``metadata`` entries come next, then the three rewritten keys;
- ``kube-env``: ``ZONE`` is the node's zone; COS nodes get the BFQ I/O scheduler entries,
  Ubuntu nodes lose them; ``SECONDARY_BOOT_DISKS`` is dropped; ``KUBELET_ARGS`` keeps the
  template's flags except ``--max-pods``, ``--node-labels`` and ``--register-with-taints``,
  which are Karpenter's: the NodeClass's max pods, the registration labels, and the
  ``karpenter.sh/unregistered=true:NoExecute`` taint;
- ``kube-labels``: the Karpenter labels plus ``karpenter.sh/registered=true``; GKE's
  readiness labels of the template (``cloud.google.com/gke-netd-ready``...) are kept when
  Karpenter sets no value for them;
- ``kubelet-config``: kube-reserved of the instance type, the NodeClass's kubelet
  settings, and graceful shutdown (30 s, 15 s for critical pods) on spot nodes.

Everything here is pure: dicts in, dicts out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import yaml
from attrs import field, frozen

__all__ = [
    "GKE_OS_DISTRIBUTION_LABEL",
    "GKE_PROVISIONING_LABEL",
    "GKE_READINESS_LABELS",
    "KUBELET_CONFIG_KEY",
    "KUBE_ENV_KEY",
    "KUBE_LABELS_KEY",
    "MACHINE_FAMILY_LABEL",
    "MAX_PODS_LABEL",
    "MAX_PODS_PER_NODE_LABEL",
    "REGISTERED_LABEL",
    "RETAINED_SOURCE_KEYS",
    "UNREGISTERED_TAINT",
    "KubeletArgs",
    "NodeMetadataInput",
    "Taint",
    "format_labels",
    "inherited_readiness_labels",
    "metadata_items",
    "node_metadata",
    "parse_kube_env",
    "parse_kubelet_args",
    "parse_labels",
    "render_kube_env",
]

KUBE_ENV_KEY = "kube-env"
KUBE_LABELS_KEY = "kube-labels"
KUBELET_CONFIG_KEY = "kubelet-config"

MAX_PODS_LABEL = "max-pods"
MAX_PODS_PER_NODE_LABEL = "max-pods-per-node"
GKE_PROVISIONING_LABEL = "gke-provisioning"
GKE_OS_DISTRIBUTION_LABEL = "cloud.google.com/gke-os-distribution"
MACHINE_FAMILY_LABEL = "cloud.google.com/machine-family"
REGISTERED_LABEL = "karpenter.sh/registered"
NODEPOOL_LABEL = "karpenter.sh/nodepool"
NODECLASS_LABEL = "karpenter.k8s.gcp/gcenodeclass"

GKE_READINESS_LABELS = (
    "projectcalico.org/ds-ready",
    "iam.gke.io/gke-metadata-server-enabled",
    "node.kubernetes.io/masq-agent-ds-ready",
    "cloud.google.com/gke-netd-ready",
    "addon.gke.io/node-local-dns-ds-ready",
)
"""Labels GKE's DaemonSets gate on; a template's values are inherited (upstream
``GKEReadinessLabelKeys``)."""

RETAINED_SOURCE_KEYS = (
    "cluster-location",
    "cluster-name",
    "cluster-uid",
    "common-psm1",
    "configure-sh",
    "containerd-configure-sh",
    "disable-address-manager",
    "disable-legacy-endpoints",
    "enable-os-login",
    "gci-ensure-gke-docker",
    "gci-metrics-enabled",
    "gci-update-strategy",
    "google-compute-enable-pcid",
    "install-ssh-psm1",
    "instance-template",
    "k8s-node-setup-psm1",
    "kubeconfig",
    "serial-port-logging-enable",
    "startup-script",
    "user-data",
    "user-profile-psm1",
    "windows-startup-script-ps1",
)
"""Template metadata keys a Karpenter node keeps (the node's scripts and cluster
identity); every other template key is dropped."""

_KUBELET_ARGS = "KUBELET_ARGS"
_OWNED_FLAGS = ("--max-pods=", "--node-labels=", "--register-with-taints=")


@frozen
class Taint:
    """A node taint as ``--register-with-taints`` spells it: ``key=value:Effect``."""

    key: str
    value: str = ""
    effect: str = "NoSchedule"

    def __str__(self) -> str:
        return (
            f"{self.key}={self.value}:{self.effect}" if self.value else f"{self.key}:{self.effect}"
        )


UNREGISTERED_TAINT = Taint("karpenter.sh/unregistered", "true", "NoExecute")


def format_labels(labels: Mapping[str, str]) -> str:
    """``k=v,k2=v2`` sorted by key (the form of Kubernetes' ``labels.Set.String``, which
    ``kube-labels`` and ``--node-labels`` use)."""
    return ",".join(f"{k}={labels[k]}" for k in sorted(labels))


def parse_labels(raw: str) -> dict[str, str]:
    """``k=v,k2=v2`` → dict; malformed parts are skipped."""
    out: dict[str, str] = {}
    for part in raw.split(","):
        key, sep, value = part.strip().partition("=")
        if sep and key:
            out[key] = value
    return out


def parse_kube_env(raw: str) -> dict[str, str]:
    """The entries of a ``kube-env`` document. An entry is ``KEY: value`` at the start of
    a line; indented lines or lines without ``": "`` continue the previous entry's value
    (certificates and multi-line YAML values)."""
    entries: dict[str, str] = {}
    current = ""
    for line in raw.split("\n"):
        if not line.startswith((" ", "\t")):
            key, sep, value = line.partition(": ")
            if sep and key:
                current = key
                entries[key] = value
                continue
        if current:
            entries[current] += "\n" + line
    return entries


@frozen
class KubeletArgs:
    """``KUBELET_ARGS``: the template's flags Karpenter keeps, plus its own."""

    other: tuple[str, ...] = ()
    max_pods: int | None = None
    node_labels: Mapping[str, str] = field(factory=dict)
    taints: tuple[Taint, ...] = ()

    def __str__(self) -> str:
        parts = list(self.other)
        if self.max_pods is not None:
            parts.append(f"--max-pods={self.max_pods}")
        if self.node_labels:
            parts.append("--node-labels=" + format_labels(self.node_labels))
        if self.taints:
            parts.append("--register-with-taints=" + ",".join(str(t) for t in self.taints))
        return " ".join(parts)


def parse_kubelet_args(raw: str) -> KubeletArgs:
    """The template's kubelet flags without the three Karpenter owns (see module doc)."""
    return KubeletArgs(other=tuple(f for f in raw.split() if not f.startswith(_OWNED_FLAGS)))


def render_kube_env(entries: Mapping[str, str], kubelet_args: KubeletArgs) -> str:
    """A ``kube-env`` document: entries sorted by key, ``KUBELET_ARGS`` last."""
    lines = [f"{k}: {entries[k]}" for k in sorted(entries) if k != _KUBELET_ARGS]
    args = str(kubelet_args)
    if args:
        lines.append(f"{_KUBELET_ARGS}: {args}")
    return "\n".join(lines)


def inherited_readiness_labels(source: Mapping[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """GKE readiness labels of a template: (from ``kube-labels``, from ``--node-labels``
    of ``KUBELET_ARGS``)."""
    kube = parse_labels(source.get(KUBE_LABELS_KEY, ""))
    node: dict[str, str] = {}
    for flag in parse_kube_env(source.get(KUBE_ENV_KEY, "")).get(_KUBELET_ARGS, "").split():
        if flag.startswith("--node-labels="):
            node = parse_labels(flag.removeprefix("--node-labels="))

    def only(labels: Mapping[str, str]) -> dict[str, str]:
        return {k: labels[k] for k in GKE_READINESS_LABELS if k in labels}

    return only(kube), only(node)


def _labels(value: Mapping[str, str]) -> Mapping[str, str]:
    return dict(value)


def _settings(value: Mapping[str, Any]) -> Mapping[str, Any]:
    return dict(value)


def _taints(value: Iterable[Taint]) -> tuple[Taint, ...]:
    return tuple(value)


@frozen
class NodeMetadataInput:
    """What a node's metadata depends on besides its template.

    ``image_family`` is the GCENodeClass's (``ContainerOptimizedOS`` or ``Ubuntu``);
    ``kube_reserved`` is the instance type's (``{"cpu": "80m", "memory": "1024Mi",
    "ephemeral-storage": "41Gi"}``); ``kubelet`` holds GCENodeClass kubelet settings in
    KubeletConfiguration field names (``maxPods``, ``evictionHard``...; map fields are
    merged, others replace); ``labels`` are extra node labels (both registration and
    ``kube-labels``) and ``taints`` extra registration taints.
    """

    zone: str
    capacity_type: str
    nodepool: str
    nodeclass: str
    max_pods: int = 110
    image_family: str = "ContainerOptimizedOS"
    machine_family: str = ""
    labels: Mapping[str, str] = field(factory=dict, converter=_labels)
    taints: tuple[Taint, ...] = field(default=(), converter=_taints)
    custom_metadata: Mapping[str, str] = field(factory=dict, converter=_labels)
    kube_reserved: Mapping[str, str] = field(factory=dict, converter=_labels)
    kubelet: Mapping[str, Any] = field(factory=dict, converter=_settings)


_MERGED_KUBELET_FIELDS = frozenset(
    {"systemReserved", "kubeReserved", "evictionHard", "evictionSoft", "evictionSoftGracePeriod"}
)


def _kubelet_config(raw: str, spec: NodeMetadataInput) -> str:
    """The template's kubelet-config with Karpenter's changes ("" when it stays empty)."""
    loaded = yaml.safe_load(raw) if raw.strip() else {}
    config: dict[str, Any] = dict(loaded) if isinstance(loaded, Mapping) else {}
    if spec.kube_reserved:
        config["kubeReserved"] = {**(config.get("kubeReserved") or {}), **spec.kube_reserved}
    for key, value in spec.kubelet.items():
        if key in _MERGED_KUBELET_FIELDS and isinstance(value, Mapping):
            config[key] = {**(config.get(key) or {}), **value}
        else:
            config[key] = value
    if spec.capacity_type == "spot":
        config["featureGates"] = {
            **(config.get("featureGates") or {}),
            "GracefulNodeShutdown": True,
        }
        config["shutdownGracePeriod"] = "30s"
        config["shutdownGracePeriodCriticalPods"] = "15s"
    if not config:
        return ""
    return yaml.safe_dump(config, sort_keys=True, default_flow_style=False)


def node_metadata(source: Mapping[str, str], spec: NodeMetadataInput) -> dict[str, str]:
    """The metadata items (key → value, sorted by key) of a Karpenter node launched from
    a template whose metadata is ``source`` (see the module docstring)."""
    provisioning = "spot" if spec.capacity_type == "spot" else "standard"
    os_distribution = "ubuntu" if spec.image_family.lower() == "ubuntu" else "cos"

    registration = {
        MAX_PODS_PER_NODE_LABEL: str(spec.max_pods),
        GKE_OS_DISTRIBUTION_LABEL: os_distribution,
        NODEPOOL_LABEL: spec.nodepool,
        NODECLASS_LABEL: spec.nodeclass,
        MAX_PODS_LABEL: str(spec.max_pods),
        GKE_PROVISIONING_LABEL: provisioning,
    }
    if spec.machine_family:
        registration[MACHINE_FAMILY_LABEL] = spec.machine_family
    registration.update(spec.labels)
    kube_labels = {**registration, REGISTERED_LABEL: "true"}
    inherited_kube, inherited_registration = inherited_readiness_labels(source)
    for key, value in inherited_kube.items():
        kube_labels.setdefault(key, value)
    for key, value in inherited_registration.items():
        registration.setdefault(key, value)

    env = parse_kube_env(source.get(KUBE_ENV_KEY, ""))
    args = parse_kubelet_args(env.pop(_KUBELET_ARGS, ""))
    env["ZONE"] = spec.zone
    if os_distribution == "cos":
        env["ENABLE_NODE_BFQ_IO_SCHEDULER"] = '"true"'
        env["NODE_BFQ_IO_SCHEDULER_IO_WEIGHT"] = '"1200"'
    else:
        env.pop("ENABLE_NODE_BFQ_IO_SCHEDULER", None)
        env.pop("NODE_BFQ_IO_SCHEDULER_IO_WEIGHT", None)
    env.pop("SECONDARY_BOOT_DISKS", None)
    args = KubeletArgs(
        other=args.other,
        max_pods=spec.max_pods,
        node_labels=registration,
        taints=(UNREGISTERED_TAINT, *spec.taints),
    )

    out = {k: source[k] for k in RETAINED_SOURCE_KEYS if k in source}
    out.update({k: v for k, v in spec.custom_metadata.items() if k})
    out[KUBE_ENV_KEY] = render_kube_env(env, args)
    out[KUBE_LABELS_KEY] = format_labels(kube_labels)
    kubelet_config = _kubelet_config(source.get(KUBELET_CONFIG_KEY, ""), spec)
    if kubelet_config:
        out[KUBELET_CONFIG_KEY] = kubelet_config
    else:
        out.pop(KUBELET_CONFIG_KEY, None)
    return dict(sorted(out.items()))


def metadata_items(values: Mapping[str, str]) -> Sequence[dict[str, str]]:
    """``[{"key", "value"}]`` sorted by key, the Compute ``metadata.items`` shape."""
    return [{"key": k, "value": values[k]} for k in sorted(values)]
