"""The VM ``customData`` that joins a new Azure VM to the cluster, in upstream's default
provision mode ``aksscriptless`` (upstream ``pkg/providers/imagefamily/bootstrap``).

AKS node images (Ubuntu, Azure Linux) carry AgentBaker's provisioning scripts. In the
scriptless mode Karpenter does not call any AKS service to get a bootstrap script: it
writes the variables those scripts read (``ADMINUSER``, ``KUBELET_FLAGS``,
``KUBELET_NODE_LABELS``, ``TLS_BOOTSTRAP_TOKEN``, ``KUBE_CA_CRT``, ...) into a bash
script that waits for ``/opt/azure/containers/provision.sh``, exports them and starts
``provision_start.sh``. The VM takes the script base64-encoded as ``osProfile.customData``.

What this module reproduces of upstream, with the same variables and values:

* the node-bootstrapping variables (:meth:`AKSBootstrap.variables`): the static ones
  (cloud-provider rate limits, CSE file paths, ``msi`` service principal, ...), the
  per-cluster ones (tenant, subscription, location, node resource group, API server
  name, bootstrap token, CA, network plugin and policy, the subnet/VNet parsed from the
  subnet id, the managed NSG and route table), the per-node ones (Kubernetes version,
  binary and credential-provider download URLs for the architecture, GPU driver
  settings, labels, kubelet flags);
* the kubelet flags (:meth:`AKSBootstrap.kubelet_flags`): upstream's base set, adjusted
  per Kubernetes minor (``--keep-terminated-pod-volumes`` below 1.31, no
  ``--cloud-config`` from 1.34, no ``--pod-infra-container-image`` from 1.35, the
  out-of-tree ACR credential provider from 1.30 else the in-tree feature gate),
  ``--register-with-taints``, then the kubelet configuration (max pods, cluster DNS,
  kube/system reserved, eviction thresholds and the AKSNodeClass ``kubelet`` field);
* the containerd configuration (runc, or the NVIDIA runtime when the node installs GPU
  drivers) and the sysctl file, both base64 inside the script as upstream ships them.

The script is our own text (not a copy of upstream's template); map-valued things
(labels, flags, reserved resources) are written in sorted order, where upstream's Go
maps give a random one, so the same inputs always give the same customData.

Quoting: upstream writes some variables bare (``KUBERNETES_VERSION=1.30.2``) and some in
double quotes (``KUBELET_FLAGS="..."``). A value that is safe in upstream's form is
written that way; one that is not (a space in a bare value, ``$``, a backquote, ``"`` or
``\\`` inside double quotes, a newline) is written single-quoted instead, so no value
can run anything on the node. A NUL cannot be carried by bash and raises
:class:`BootstrapError`.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

from attrs import field, frozen

__all__ = [
    "ARCH_AMD64",
    "ARCH_ARM64",
    "GLOBAL_AKS_MIRROR",
    "SYSCTL_CONTENT",
    "AKSBootstrap",
    "BootstrapError",
    "KubeletConfiguration",
    "SubnetParts",
    "TaintLike",
    "base_kubelet_flags",
    "ca_bundle_base64",
    "containerd_config",
    "credential_provider_url",
    "gpu_driver_type",
    "gpu_driver_version",
    "gpu_image_sha",
    "kube_binary_url",
    "kubelet_config_flags",
    "parse_kubernetes_version",
    "parse_script_variables",
    "parse_subnet_id",
    "taint_to_string",
]

GLOBAL_AKS_MIRROR = "https://acs-mirror.azureedge.net"
ARCH_AMD64 = "amd64"
ARCH_ARM64 = "arm64"
PAUSE_IMAGE = "mcr.microsoft.com/oss/kubernetes/pause:3.6"
AZURE_CNI_VERSION = "v1.4.32"
CNI_PLUGINS_VERSION = "v1.1.1"

SYSCTL_CONTENT = (
    "# A partial workaround for kubernetes/kubernetes#41916 (connection resets)\n"
    "net.ipv4.tcp_retries2=8\n"
    "net.core.message_burst=80\n"
    "net.core.message_cost=40\n"
    "net.core.somaxconn=16384\n"
    "net.ipv4.tcp_max_syn_backlog=16384\n"
    "net.ipv4.neigh.default.gc_thresh1=4096\n"
    "net.ipv4.neigh.default.gc_thresh2=8192\n"
    "net.ipv4.neigh.default.gc_thresh3=16384\n"
)
"""The node's sysctl settings (upstream's ``sysctl.conf``), shipped as ``SYSCTL_CONTENT``."""


class BootstrapError(ValueError):
    """Inputs that cannot become customData (an unparseable Kubernetes version, a NUL)."""


class TaintLike(Protocol):
    """Any taint value with ``key``, ``value`` (may be None) and ``effect``: the core's API
    ``Taint`` and the scheduling ``Taint`` both fit."""

    @property
    def key(self) -> str: ...

    @property
    def value(self) -> str | None: ...

    @property
    def effect(self) -> str: ...


# --- small pure helpers -------------------------------------------------------------------


def parse_kubernetes_version(version: str) -> tuple[int, int, int]:
    """``(major, minor, patch)`` of ``1.30.2`` / ``v1.30.2`` / ``1.30``; upstream parses the
    NodeClass's resolved version as semver and would panic on garbage, we raise
    :class:`BootstrapError`."""
    m = re.fullmatch(r"v?(\d+)\.(\d+)(?:\.(\d+))?(?:[-+].*)?", version.strip())
    if not m:
        raise BootstrapError(f"kubernetes version {version!r} is not MAJOR.MINOR[.PATCH]")
    return int(m[1]), int(m[2]), int(m[3] or 0)


def _bare_version(version: str) -> str:
    return version.strip().removeprefix("v")


def kube_binary_url(kubernetes_version: str, arch: str) -> str:
    """Where the node downloads kubelet/kubectl; empty from 1.34, whose images carry the
    binaries at a path AgentBaker already knows."""
    if parse_kubernetes_version(kubernetes_version)[1] >= 34:
        return ""
    version = _bare_version(kubernetes_version)
    return f"{GLOBAL_AKS_MIRROR}/kubernetes/v{version}/binaries/kubernetes-node-linux-{arch}.tar.gz"


_CREDENTIAL_PROVIDER_VERSIONS = {30: "1.30.12", 31: "1.31.6", 32: "1.32.5"}
_CREDENTIAL_PROVIDER_LATEST = "1.33.0"


def credential_provider_url(kubernetes_version: str, arch: str) -> str:
    """The out-of-tree ACR credential provider for this minor (one release per minor,
    1.33.0 for 1.33 and later), or empty below 1.30, where the in-tree provider is used."""
    minor = parse_kubernetes_version(kubernetes_version)[1]
    if minor < 30:
        return ""
    v = _CREDENTIAL_PROVIDER_VERSIONS.get(minor, _CREDENTIAL_PROVIDER_LATEST)
    return (
        f"{GLOBAL_AKS_MIRROR}/cloud-provider-azure/v{v}/binaries/"
        f"azure-acr-credential-provider-linux-{arch}-v{v}.tar.gz"
    )


@frozen
class SubnetParts:
    """An ARM subnet id's parts (upstream ``GetVnetSubnetIDComponents``)."""

    subscription_id: str
    resource_group: str
    vnet_name: str
    subnet_name: str


def parse_subnet_id(subnet_id: str) -> SubnetParts | None:
    """The parts of ``/subscriptions/S/resourceGroups/RG/providers/Microsoft.Network/
    virtualNetworks/V/subnets/N`` (case-insensitive), or None when it is not one. Upstream
    ignores the error here and leaves the variables empty; so do we."""
    parts = subnet_id.split("/")
    if len(parts) != 11:
        return None
    rebuilt = (
        f"/subscriptions/{parts[2]}/resourceGroups/{parts[4]}/providers/Microsoft.Network/"
        f"virtualNetworks/{parts[8]}/subnets/{parts[10]}"
    )
    if rebuilt.lower() != subnet_id.lower():
        return None
    return SubnetParts(parts[2], parts[4], parts[8], parts[10])


def ca_bundle_base64(ca: str | bytes) -> str:
    """``KUBE_CA_CRT`` wants the cluster CA as base64 of the PEM (upstream base64-encodes
    the rest config's CA data). PEM text or bytes are encoded; anything else is taken as
    already encoded."""
    if isinstance(ca, bytes):
        return base64.b64encode(ca).decode("ascii")
    if "-----BEGIN" in ca:
        return base64.b64encode(ca.encode("utf-8")).decode("ascii")
    return ca.strip()


def taint_to_string(taint: TaintLike) -> str:
    """``key=value:effect`` (``key:effect`` without a value), as Kubernetes prints a taint
    for ``--register-with-taints``."""
    value = taint.value or ""
    return f"{taint.key}={value}:{taint.effect}" if value else f"{taint.key}:{taint.effect}"


# --- GPU driver selection (upstream pkg/utils/gpu.go) ---------------------------------------

_NVIDIA_470_CUDA = "470.82.01"
_NVIDIA_CUDA_LTS = "580.159.04"
_AKS_GPU_CUDA_LTS_SUFFIX = "20260629214430"
_NVIDIA_GRID = "570.211.01"
_AKS_GPU_GRID_SUFFIX = "20260522192315"
_NVIDIA_GRID_V20 = "595.58.03"
_AKS_GPU_GRID_V20_SUFFIX = "20260609172331"

_CONVERGED_DRIVER_SIZES = frozenset(
    {
        "standard_nv6ads_a10_v5",
        "standard_nv12ads_a10_v5",
        "standard_nv18ads_a10_v5",
        "standard_nv36ads_a10_v5",
        "standard_nv72ads_a10_v5",
        "standard_nv36adms_a10_v5",
        "standard_nc8ads_a10_v4",
        "standard_nc16ads_a10_v4",
        "standard_nc32ads_a10_v4",
    }
)
"""Sizes whose GPUs need the GRID ("converged") driver; CUDA drivers fail to install."""

_GRID_V20_SIZES = frozenset(
    f"standard_nc{n}_xl_rtxpro6000bse_v6"
    for n in (
        "24lds",
        "36ds",
        "36lds",
        "72ds",
        "72lds",
        "144ds",
        "144lds",
        "288ds",
        "288lds",
    )
)
"""RTX PRO 6000 Blackwell sizes, which need the GRID v20 driver."""


def _is_ncv1(size: str) -> bool:
    s = size.lower()
    return s.startswith("standard_nc") and "_v" not in s


def gpu_driver_version(size: str) -> str:
    """The NVIDIA driver version the node installs for this VM size."""
    s = size.lower()
    if s in _GRID_V20_SIZES:
        return _NVIDIA_GRID_V20
    if s in _CONVERGED_DRIVER_SIZES:
        return _NVIDIA_GRID
    if _is_ncv1(s):
        return _NVIDIA_470_CUDA
    return _NVIDIA_CUDA_LTS


def gpu_driver_type(size: str) -> str:
    """``grid-v20``, ``grid``, ``cuda`` (NCv1 only) or ``cuda-lts``: which
    ``mcr.microsoft.com/aks/aks-gpu-<type>`` image installs the driver."""
    s = size.lower()
    if s in _GRID_V20_SIZES:
        return "grid-v20"
    if s in _CONVERGED_DRIVER_SIZES:
        return "grid"
    if _is_ncv1(s):
        return "cuda"
    return "cuda-lts"


def gpu_image_sha(size: str) -> str:
    """The aks-gpu image tag suffix matching :func:`gpu_driver_type`."""
    s = size.lower()
    if s in _GRID_V20_SIZES:
        return _AKS_GPU_GRID_V20_SUFFIX
    if s in _CONVERGED_DRIVER_SIZES:
        return _AKS_GPU_GRID_SUFFIX
    return _AKS_GPU_CUDA_LTS_SUFFIX


# --- kubelet flags ------------------------------------------------------------------------

_TLS_CIPHER_SUITES = ",".join(
    (
        "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
        "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
        "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305",
        "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
        "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305",
        "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
        "TLS_RSA_WITH_AES_256_GCM_SHA384",
        "TLS_RSA_WITH_AES_128_GCM_SHA256",
    )
)


def base_kubelet_flags() -> dict[str, str]:
    """The kubelet flags every AKS node starts from, before per-version and per-node
    changes (upstream ``getBaseKubeletFlags``)."""
    return {
        "--address": "0.0.0.0",
        "--anonymous-auth": "false",
        "--authentication-token-webhook": "true",
        "--authorization-mode": "Webhook",
        "--cgroups-per-qos": "true",
        "--client-ca-file": "/etc/kubernetes/certs/ca.crt",
        "--cloud-config": "/etc/kubernetes/azure.json",
        "--cloud-provider": "external",
        "--cluster-dns": "10.0.0.10",
        "--cluster-domain": "cluster.local",
        "--enforce-node-allocatable": "pods",
        "--event-qps": "0",
        "--eviction-hard": "memory.available<750Mi,nodefs.available<10%,nodefs.inodesFree<5%",
        "--image-gc-high-threshold": "85",
        "--image-gc-low-threshold": "80",
        "--kubeconfig": "/var/lib/kubelet/kubeconfig",
        "--max-pods": "110",
        "--node-status-update-frequency": "10s",
        "--pod-infra-container-image": PAUSE_IMAGE,
        "--pod-manifest-path": "/etc/kubernetes/manifests",
        "--pod-max-pids": "-1",
        "--protect-kernel-defaults": "true",
        "--read-only-port": "0",
        "--resolv-conf": "/run/systemd/resolve/resolv.conf",
        "--rotate-certificates": "true",
        "--streaming-connection-idle-timeout": "4h",
        "--tls-cert-file": "/etc/kubernetes/certs/kubeletserver.crt",
        "--tls-cipher-suites": _TLS_CIPHER_SUITES,
        "--tls-private-key-file": "/etc/kubernetes/certs/kubeletserver.key",
    }


def _str_map(value: Mapping[str, Any] | None) -> dict[str, str]:
    return {str(k): str(v) for k, v in (value or {}).items()}


@frozen
class KubeletConfiguration:
    """What the kubelet flags of one node are made from (upstream
    ``bootstrap.KubeletConfiguration``): the AKSNodeClass's ``kubelet`` field as written
    (camelCase keys), plus what Karpenter computes: max pods, the cluster DNS address, the
    instance type's reserved resources and eviction threshold (quantity strings)."""

    max_pods: int
    cluster_dns_service_ip: str = ""
    kube_reserved: Mapping[str, str] = field(factory=dict, converter=_str_map)
    system_reserved: Mapping[str, str] = field(factory=dict, converter=_str_map)
    eviction_hard: Mapping[str, str] = field(factory=dict, converter=_str_map)
    eviction_soft: Mapping[str, str] = field(factory=dict, converter=_str_map)
    eviction_soft_grace_period: Mapping[str, str] = field(factory=dict, converter=_str_map)
    eviction_max_pod_grace_period: int | None = None
    nodeclass_kubelet: Mapping[str, Any] = field(factory=dict)


def _join(values: Mapping[str, str], sep: str) -> str:
    return ",".join(f"{k}{sep}{values[k]}" for k in sorted(values))


def _go_bool(value: Any) -> str:
    return "true" if value else "false"


def kubelet_config_flags(config: KubeletConfiguration | None) -> dict[str, str]:
    """The flags the kubelet configuration sets (upstream ``kubeletConfigToMap``); they
    override the base flags. The AKSNodeClass's ``cpuCFSQuotaPeriod`` and ``failSwapOn``
    are not carried in this mode, as upstream."""
    if config is None:
        return {}
    flags: dict[str, str] = {"--max-pods": str(config.max_pods)}
    for name, values, sep in (
        ("--system-reserved", config.system_reserved, "="),
        ("--kube-reserved", config.kube_reserved, "="),
        ("--eviction-hard", config.eviction_hard, "<"),
        ("--eviction-soft", config.eviction_soft, "<"),
        ("--eviction-soft-grace-period", config.eviction_soft_grace_period, "="),
    ):
        if values:
            flags[name] = _join(values, sep)
    if config.eviction_max_pod_grace_period is not None:
        flags["--eviction-max-pod-grace-period"] = str(config.eviction_max_pod_grace_period)
    k = config.nodeclass_kubelet or {}
    if k.get("imageGCHighThresholdPercent") is not None:
        flags["--image-gc-high-threshold"] = str(int(k["imageGCHighThresholdPercent"]))
    if k.get("imageGCLowThresholdPercent") is not None:
        flags["--image-gc-low-threshold"] = str(int(k["imageGCLowThresholdPercent"]))
    if k.get("cpuCFSQuota") is not None:
        flags["--cpu-cfs-quota"] = _go_bool(k["cpuCFSQuota"])
    for key, flag in (
        ("cpuManagerPolicy", "--cpu-manager-policy"),
        ("topologyManagerPolicy", "--topology-manager-policy"),
        ("containerLogMaxSize", "--container-log-max-size"),
    ):
        if k.get(key):
            flags[flag] = str(k[key])
    if k.get("containerLogMaxFiles") is not None:
        flags["--container-log-max-files"] = str(int(k["containerLogMaxFiles"]))
    if k.get("podPidsLimit") is not None:
        flags["--pod-max-pids"] = str(int(k["podPidsLimit"]))
    sysctls = k.get("allowedUnsafeSysctls") or ()
    if sysctls:
        flags["--allowed-unsafe-sysctls"] = ",".join(str(s) for s in sysctls)
    if config.cluster_dns_service_ip:
        flags["--cluster-dns"] = config.cluster_dns_service_ip
    return flags


# --- containerd ---------------------------------------------------------------------------


def containerd_config(nvidia_runtime: bool, systemd_cgroup: bool = True) -> str:
    """``/etc/containerd/config.toml`` for the node: runc by default, the NVIDIA container
    runtime when the node installs GPU drivers; systemd cgroups (cgroup v2, always on for
    Karpenter nodes); the AKS registry headers and the metrics address. Upstream's kubenet
    bridge section is never rendered (Karpenter does not support kubenet)."""
    binary = "/usr/bin/nvidia-container-runtime" if nvidia_runtime else "/usr/bin/runc"
    runtime = "nvidia-container-runtime" if nvidia_runtime else "runc"
    cri = 'plugins."io.containerd.grpc.v1.cri"'
    lines = [
        "version = 2",
        "oom_score = 0",
        f"[{cri}]",
        f'  sandbox_image = "{PAUSE_IMAGE}"',
        f"  [{cri}.containerd]",
        f'    default_runtime_name = "{runtime}"',
        f"    [{cri}.containerd.runtimes.{runtime}]",
        '      runtime_type = "io.containerd.runc.v2"',
        f"    [{cri}.containerd.runtimes.{runtime}.options]",
        f'      BinaryName = "{binary}"',
    ]
    if systemd_cgroup:
        lines.append("      SystemdCgroup = true")
    lines += [
        f"    [{cri}.containerd.runtimes.untrusted]",
        '      runtime_type = "io.containerd.runc.v2"',
        f"    [{cri}.containerd.runtimes.untrusted.options]",
        f'      BinaryName = "{binary}"',
        f"  [{cri}.registry]",
        '    config_path = "/etc/containerd/certs.d"',
        f"  [{cri}.registry.headers]",
        '    X-Meta-Source-Client = ["azure/aks"]',
        "[metrics]",
        '  address = "0.0.0.0:10257"',
    ]
    return "\n".join(lines) + "\n"


# --- the script ---------------------------------------------------------------------------


def _b64(text: str) -> str:
    return base64.b64encode(text.encode("utf-8")).decode("ascii")


_BARE_SAFE = re.compile(r"[A-Za-z0-9_./:=,@%+-]*")
_DQ_UNSAFE = re.compile(r'["$`\\\n\r]')

# Each variable: (name, quoted as upstream writes it)
_VARIABLES: tuple[tuple[str, bool], ...] = (
    ("ADMINUSER", False),
    ("MOBY_VERSION", False),
    ("TENANT_ID", False),
    ("KUBERNETES_VERSION", False),
    ("HYPERKUBE_URL", False),
    ("KUBE_BINARY_URL", False),
    ("CUSTOM_KUBE_BINARY_URL", False),
    ("CREDENTIAL_PROVIDER_DOWNLOAD_URL", False),
    ("KUBEPROXY_URL", False),
    ("APISERVER_PUBLIC_KEY", False),
    ("SUBSCRIPTION_ID", False),
    ("RESOURCE_GROUP", False),
    ("LOCATION", False),
    ("VM_TYPE", False),
    ("SUBNET", False),
    ("NETWORK_SECURITY_GROUP", False),
    ("VIRTUAL_NETWORK", False),
    ("VIRTUAL_NETWORK_RESOURCE_GROUP", False),
    ("ROUTE_TABLE", False),
    ("PRIMARY_AVAILABILITY_SET", False),
    ("PRIMARY_SCALE_SET", False),
    ("SERVICE_PRINCIPAL_CLIENT_ID", False),
    ("NETWORK_PLUGIN", False),
    ("NETWORK_POLICY", True),
    ("VNET_CNI_PLUGINS_URL", False),
    ("CNI_PLUGINS_URL", False),
    ("CLOUDPROVIDER_BACKOFF", False),
    ("CLOUDPROVIDER_BACKOFF_MODE", False),
    ("CLOUDPROVIDER_BACKOFF_RETRIES", False),
    ("CLOUDPROVIDER_BACKOFF_EXPONENT", False),
    ("CLOUDPROVIDER_BACKOFF_DURATION", False),
    ("CLOUDPROVIDER_BACKOFF_JITTER", False),
    ("CLOUDPROVIDER_RATELIMIT", False),
    ("CLOUDPROVIDER_RATELIMIT_QPS", False),
    ("CLOUDPROVIDER_RATELIMIT_QPS_WRITE", False),
    ("CLOUDPROVIDER_RATELIMIT_BUCKET", False),
    ("CLOUDPROVIDER_RATELIMIT_BUCKET_WRITE", False),
    ("LOAD_BALANCER_DISABLE_OUTBOUND_SNAT", False),
    ("USE_MANAGED_IDENTITY_EXTENSION", False),
    ("USE_INSTANCE_METADATA", False),
    ("LOAD_BALANCER_SKU", False),
    ("EXCLUDE_MASTER_FROM_STANDARD_LB", False),
    ("MAXIMUM_LOADBALANCER_RULE_COUNT", False),
    ("CONTAINER_RUNTIME", False),
    ("CLI_TOOL", False),
    ("CONTAINERD_DOWNLOAD_URL_BASE", False),
    ("NETWORK_MODE", False),
    ("USER_ASSIGNED_IDENTITY_ID", False),
    ("API_SERVER_NAME", False),
    ("IS_VHD", False),
    ("GPU_NODE", False),
    ("SGX_NODE", False),
    ("MIG_NODE", False),
    ("CONFIG_GPU_DRIVER_IF_NEEDED", False),
    ("ENABLE_GPU_DEVICE_PLUGIN_IF_NEEDED", False),
    ("TELEPORTD_PLUGIN_DOWNLOAD_URL", False),
    ("CONTAINERD_VERSION", False),
    ("CONTAINERD_PACKAGE_URL", False),
    ("RUNC_VERSION", False),
    ("RUNC_PACKAGE_URL", False),
    ("ENABLE_HOSTS_CONFIG_AGENT", True),
    ("DISABLE_SSH", True),
    ("NEEDS_CONTAINERD", True),
    ("TELEPORT_ENABLED", True),
    ("SHOULD_CONFIGURE_HTTP_PROXY", True),
    ("SHOULD_CONFIGURE_HTTP_PROXY_CA", True),
    ("HTTP_PROXY_TRUSTED_CA", True),
    ("SHOULD_CONFIGURE_CUSTOM_CA_TRUST", True),
    ("CUSTOM_CA_TRUST_COUNT", True),
    ("IS_KRUSTLET", True),
    ("GPU_NEEDS_FABRIC_MANAGER", True),
    ("NEEDS_DOCKER_LOGIN", True),
    ("IPV6_DUAL_STACK_ENABLED", True),
    ("OUTBOUND_COMMAND", True),
    ("ENABLE_UNATTENDED_UPGRADES", True),
    ("ENSURE_NO_DUPE_PROMISCUOUS_BRIDGE", True),
    ("SHOULD_CONFIG_SWAP_FILE", True),
    ("SHOULD_CONFIG_TRANSPARENT_HUGE_PAGE", True),
    ("TARGET_CLOUD", True),
    ("TARGET_ENVIRONMENT", True),
    ("CUSTOM_ENV_JSON", True),
    ("IS_CUSTOM_CLOUD", True),
    ("CSE_HELPERS_FILEPATH", True),
    ("CSE_DISTRO_HELPERS_FILEPATH", True),
    ("CSE_INSTALL_FILEPATH", True),
    ("CSE_DISTRO_INSTALL_FILEPATH", True),
    ("CSE_CONFIG_FILEPATH", True),
    ("AZURE_PRIVATE_REGISTRY_SERVER", True),
    ("HAS_CUSTOM_SEARCH_DOMAIN", True),
    ("CUSTOM_SEARCH_DOMAIN_FILEPATH", True),
    ("HTTP_PROXY_URLS", True),
    ("HTTPS_PROXY_URLS", True),
    ("NO_PROXY_URLS", True),
    ("ENABLE_TLS_BOOTSTRAPPING", True),
    ("ENABLE_SECURE_TLS_BOOTSTRAPPING", True),
    ("ENABLE_KUBELET_SERVING_CERTIFICATE_ROTATION", True),
    ("DHCPV6_SERVICE_FILEPATH", True),
    ("DHCPV6_CONFIG_FILEPATH", True),
    ("THP_ENABLED", True),
    ("THP_DEFRAG", True),
    ("SERVICE_PRINCIPAL_FILE_CONTENT", True),
    ("KUBELET_CLIENT_CONTENT", True),
    ("KUBELET_CLIENT_CERT_CONTENT", True),
    ("KUBELET_CONFIG_FILE_ENABLED", True),
    ("KUBELET_CONFIG_FILE_CONTENT", True),
    ("SWAP_FILE_SIZE_MB", True),
    ("GPU_IMAGE_SHA", True),
    ("GPU_DRIVER_VERSION", True),
    ("GPU_DRIVER_TYPE", True),
    ("GPU_INSTANCE_PROFILE", True),
    ("CUSTOM_SEARCH_DOMAIN_NAME", True),
    ("CUSTOM_SEARCH_REALM_USER", True),
    ("CUSTOM_SEARCH_REALM_PASSWORD", True),
    ("MESSAGE_OF_THE_DAY", True),
    ("HAS_KUBELET_DISK_TYPE", True),
    ("NEEDS_CGROUPV2", True),
    ("SYSCTL_CONTENT", True),
    ("TLS_BOOTSTRAP_TOKEN", True),
    ("KUBELET_FLAGS", True),
    ("KUBELET_NODE_LABELS", True),
    ("AZURE_ENVIRONMENT_FILEPATH", True),
    ("KUBE_CA_CRT", True),
    ("CONTAINERD_CONFIG_CONTENT", True),
    ("IS_KATA", True),
)
_QUOTED = dict(_VARIABLES)
# after the variables: constants AgentBaker reads, then the start of provisioning
_TRAILER = (
    'MCR_REPOSITORY_BASE="mcr.microsoft.com"',
    "ENABLE_IMDS_RESTRICTION=false",
    "INSERT_IMDS_RESTRICTION_RULE_TO_MANGLE_TABLE=false",
    "CSE_TIMEOUT=15m",
    '/usr/bin/nohup /bin/bash -c "/bin/bash /opt/azure/containers/provision_start.sh"',
)
_HEADER = (
    "#!/bin/bash",
    "",
    "set -o allexport  # provision_start.sh and its children read the variables below",
    "echo '#EOF' >> /opt/azure/manifest.json  # the provisioning scripts wait for this line",
    "mkdir -p /var/log/azure/Microsoft.Azure.Extensions.CustomScript/events",
    "",
    "echo $(date),$(hostname) > /var/log/azure/cluster-provision-cse-output.log;",
    "for i in $(seq 1 1200); do",
    'grep -Fq "EOF" /opt/azure/containers/provision.sh && break;',
    "if [ $i -eq 1200 ]; then exit 100; else sleep 1; fi;",
    "done;",
)


def _shell_value(name: str, value: str, quoted: bool) -> str:
    """``value`` as the right-hand side of ``name=``: upstream's form when that is safe,
    else single-quoted (see the module docstring)."""
    if "\0" in value:
        raise BootstrapError(f"{name}: a NUL cannot be carried in customData")
    if quoted and not _DQ_UNSAFE.search(value):
        return f'"{value}"'
    if not quoted and _BARE_SAFE.fullmatch(value):
        return value
    return "'" + value.replace("'", "'\\''") + "'"


def _render_value(value: Any) -> str:
    if isinstance(value, bool):
        return _go_bool(value)
    return str(value)


@frozen
class AKSBootstrap:
    """One node's scriptless bootstrap (upstream ``bootstrap.AKS`` with its ``Options``).

    ``ca_bundle`` is the cluster CA, base64 of the PEM (see :func:`ca_bundle_base64`);
    ``api_server_name`` the host name of the cluster endpoint; ``labels`` the node labels
    already filtered to those kubelet may set; ``taints`` every taint to register with
    (the NodeClaim's taints and startup taints, ``karpenter.sh/unregistered`` included).
    """

    kubernetes_version: str
    arch: str
    ca_bundle: str
    api_server_name: str
    bootstrap_token: str
    labels: Mapping[str, str] = field(factory=dict)
    taints: Sequence[TaintLike] = ()
    kubelet: KubeletConfiguration | None = None
    tenant_id: str = ""
    subscription_id: str = ""
    location: str = ""
    resource_group: str = ""
    kubelet_identity_client_id: str = ""
    network_plugin: str = ""
    network_policy: str = ""
    network_security_group_name: str = ""
    route_table_name: str = ""
    subnet_id: str = ""
    admin_username: str = "azureuser"
    gpu_node: bool = False
    gpu_driver_installation_enabled: bool = True
    gpu_driver_version: str = ""
    gpu_driver_type: str = ""
    gpu_image_sha: str = ""
    cluster_name: str = ""
    cluster_endpoint: str = ""

    @property
    def installs_gpu_driver(self) -> bool:
        """An NVIDIA node whose NodeClass leaves driver installation on; otherwise
        ``GPU_NODE=false``, so AgentBaker installs no driver and uses runc."""
        return self.gpu_node and self.gpu_driver_installation_enabled

    def kubelet_flags(self) -> dict[str, str]:
        """Every kubelet flag of the node (upstream ``applyOptions``)."""
        minor = parse_kubernetes_version(self.kubernetes_version)[1]
        flags = base_kubelet_flags()
        if minor < 31:
            flags["--keep-terminated-pod-volumes"] = "false"
        if minor >= 34:
            del flags["--cloud-config"]
        if minor >= 35:
            del flags["--pod-infra-container-image"]
        if credential_provider_url(self.kubernetes_version, self.arch):
            flags["--image-credential-provider-config"] = (
                "/var/lib/kubelet/credential-provider-config.yaml"
            )
            flags["--image-credential-provider-bin-dir"] = "/var/lib/kubelet/credential-provider"
        else:
            flags["--feature-gates"] = "DisableKubeletCloudCredentialProviders=false"
            flags["--azure-container-registry-config"] = "/etc/kubernetes/azure.json"
        if self.taints:
            flags["--register-with-taints"] = ",".join(taint_to_string(t) for t in self.taints)
        flags.update(kubelet_config_flags(self.kubelet))
        return flags

    def variables(self) -> dict[str, Any]:
        """The node-bootstrapping variables by the names the provisioning scripts read
        (upstream's static values with this node's overrides applied)."""
        version = _bare_version(self.kubernetes_version)
        parse_kubernetes_version(version)
        subnet = parse_subnet_id(self.subnet_id) if self.subnet_id else None
        gpu = self.installs_gpu_driver
        flags = self.kubelet_flags()
        cni = f"{GLOBAL_AKS_MIRROR}/azure-cni/{AZURE_CNI_VERSION}/binaries"
        plugins = f"{GLOBAL_AKS_MIRROR}/cni-plugins/{CNI_PLUGINS_VERSION}/binaries"
        return {
            "ADMINUSER": self.admin_username,
            "MOBY_VERSION": "",
            "TENANT_ID": self.tenant_id,
            "KUBERNETES_VERSION": version,
            "HYPERKUBE_URL": "",
            "KUBE_BINARY_URL": kube_binary_url(version, self.arch),
            "CUSTOM_KUBE_BINARY_URL": "",
            "CREDENTIAL_PROVIDER_DOWNLOAD_URL": credential_provider_url(version, self.arch),
            "KUBEPROXY_URL": "",
            "APISERVER_PUBLIC_KEY": "",
            "SUBSCRIPTION_ID": self.subscription_id,
            "RESOURCE_GROUP": self.resource_group,
            "LOCATION": self.location,
            "VM_TYPE": "standard",
            "SUBNET": subnet.subnet_name if subnet else "",
            "NETWORK_SECURITY_GROUP": self.network_security_group_name,
            "VIRTUAL_NETWORK": subnet.vnet_name if subnet else "",
            "VIRTUAL_NETWORK_RESOURCE_GROUP": subnet.resource_group if subnet else "",
            "ROUTE_TABLE": self.route_table_name,
            "PRIMARY_AVAILABILITY_SET": "",
            "PRIMARY_SCALE_SET": "",
            "SERVICE_PRINCIPAL_CLIENT_ID": "msi",
            "NETWORK_PLUGIN": self.network_plugin,
            "NETWORK_POLICY": self.network_policy,
            "VNET_CNI_PLUGINS_URL": (
                f"{cni}/azure-vnet-cni-linux-{self.arch}-{AZURE_CNI_VERSION}.tgz"
            ),
            "CNI_PLUGINS_URL": f"{plugins}/cni-plugins-linux-{self.arch}-{CNI_PLUGINS_VERSION}.tgz",
            "CLOUDPROVIDER_BACKOFF": True,
            "CLOUDPROVIDER_BACKOFF_MODE": "v2",
            "CLOUDPROVIDER_BACKOFF_RETRIES": "6",
            "CLOUDPROVIDER_BACKOFF_EXPONENT": "0",
            "CLOUDPROVIDER_BACKOFF_DURATION": "5",
            "CLOUDPROVIDER_BACKOFF_JITTER": "0",
            "CLOUDPROVIDER_RATELIMIT": True,
            "CLOUDPROVIDER_RATELIMIT_QPS": "10",
            "CLOUDPROVIDER_RATELIMIT_QPS_WRITE": "10",
            "CLOUDPROVIDER_RATELIMIT_BUCKET": "100",
            "CLOUDPROVIDER_RATELIMIT_BUCKET_WRITE": "100",
            "LOAD_BALANCER_DISABLE_OUTBOUND_SNAT": False,
            "USE_MANAGED_IDENTITY_EXTENSION": True,
            "USE_INSTANCE_METADATA": True,
            "LOAD_BALANCER_SKU": "Standard",
            "EXCLUDE_MASTER_FROM_STANDARD_LB": True,
            "MAXIMUM_LOADBALANCER_RULE_COUNT": 250,
            "CONTAINER_RUNTIME": "containerd",
            "CLI_TOOL": "ctr",
            "CONTAINERD_DOWNLOAD_URL_BASE": "",
            "NETWORK_MODE": "",
            "USER_ASSIGNED_IDENTITY_ID": self.kubelet_identity_client_id,
            "API_SERVER_NAME": self.api_server_name,
            "IS_VHD": True,
            "GPU_NODE": gpu,
            "SGX_NODE": False,
            "MIG_NODE": False,
            "CONFIG_GPU_DRIVER_IF_NEEDED": gpu,
            "ENABLE_GPU_DEVICE_PLUGIN_IF_NEEDED": False,
            "TELEPORTD_PLUGIN_DOWNLOAD_URL": "",
            "CONTAINERD_VERSION": "",
            "CONTAINERD_PACKAGE_URL": "",
            "RUNC_VERSION": "",
            "RUNC_PACKAGE_URL": "",
            "ENABLE_HOSTS_CONFIG_AGENT": False,
            "DISABLE_SSH": False,
            "NEEDS_CONTAINERD": True,
            "TELEPORT_ENABLED": False,
            "SHOULD_CONFIGURE_HTTP_PROXY": False,
            "SHOULD_CONFIGURE_HTTP_PROXY_CA": False,
            "HTTP_PROXY_TRUSTED_CA": "",
            "SHOULD_CONFIGURE_CUSTOM_CA_TRUST": False,
            "CUSTOM_CA_TRUST_COUNT": 0,
            "IS_KRUSTLET": False,
            "GPU_NEEDS_FABRIC_MANAGER": False,
            "NEEDS_DOCKER_LOGIN": False,
            "IPV6_DUAL_STACK_ENABLED": False,
            "OUTBOUND_COMMAND": "curl -v --insecure --proxy-insecure https://mcr.microsoft.com/v2/",
            "ENABLE_UNATTENDED_UPGRADES": False,
            "ENSURE_NO_DUPE_PROMISCUOUS_BRIDGE": False,
            "SHOULD_CONFIG_SWAP_FILE": False,
            "SHOULD_CONFIG_TRANSPARENT_HUGE_PAGE": False,
            "TARGET_CLOUD": "AzurePublicCloud",
            "TARGET_ENVIRONMENT": "AzurePublicCloud",
            "CUSTOM_ENV_JSON": "",
            "IS_CUSTOM_CLOUD": False,
            "CSE_HELPERS_FILEPATH": "/opt/azure/containers/provision_source.sh",
            "CSE_DISTRO_HELPERS_FILEPATH": "/opt/azure/containers/provision_source_distro.sh",
            "CSE_INSTALL_FILEPATH": "/opt/azure/containers/provision_installs.sh",
            "CSE_DISTRO_INSTALL_FILEPATH": "/opt/azure/containers/provision_installs_distro.sh",
            "CSE_CONFIG_FILEPATH": "/opt/azure/containers/provision_configs.sh",
            "AZURE_PRIVATE_REGISTRY_SERVER": "",
            "HAS_CUSTOM_SEARCH_DOMAIN": False,
            "CUSTOM_SEARCH_DOMAIN_FILEPATH": "/opt/azure/containers/setup-custom-search-domains.sh",
            "HTTP_PROXY_URLS": "",
            "HTTPS_PROXY_URLS": "",
            "NO_PROXY_URLS": "",
            "ENABLE_TLS_BOOTSTRAPPING": True,
            "ENABLE_SECURE_TLS_BOOTSTRAPPING": False,
            "ENABLE_KUBELET_SERVING_CERTIFICATE_ROTATION": False,
            "DHCPV6_SERVICE_FILEPATH": "",
            "DHCPV6_CONFIG_FILEPATH": "",
            "THP_ENABLED": "",
            "THP_DEFRAG": "",
            "SERVICE_PRINCIPAL_FILE_CONTENT": _b64("msi"),
            "KUBELET_CLIENT_CONTENT": "",
            "KUBELET_CLIENT_CERT_CONTENT": "",
            "KUBELET_CONFIG_FILE_ENABLED": False,
            "KUBELET_CONFIG_FILE_CONTENT": "",
            "SWAP_FILE_SIZE_MB": 0,
            "GPU_IMAGE_SHA": self.gpu_image_sha if gpu else "",
            "GPU_DRIVER_VERSION": self.gpu_driver_version if gpu else "",
            "GPU_DRIVER_TYPE": self.gpu_driver_type if gpu else "",
            "GPU_INSTANCE_PROFILE": "",
            "CUSTOM_SEARCH_DOMAIN_NAME": "",
            "CUSTOM_SEARCH_REALM_USER": "",
            "CUSTOM_SEARCH_REALM_PASSWORD": "",
            "MESSAGE_OF_THE_DAY": "",
            "HAS_KUBELET_DISK_TYPE": False,
            "NEEDS_CGROUPV2": True,
            "SYSCTL_CONTENT": _b64(SYSCTL_CONTENT),
            "TLS_BOOTSTRAP_TOKEN": self.bootstrap_token,
            "KUBELET_FLAGS": " ".join(f"{k}={flags[k]}" for k in sorted(flags)),
            "KUBELET_NODE_LABELS": ",".join(f"{k}={self.labels[k]}" for k in sorted(self.labels)),
            "AZURE_ENVIRONMENT_FILEPATH": "",
            "KUBE_CA_CRT": self.ca_bundle,
            "CONTAINERD_CONFIG_CONTENT": _b64(containerd_config(nvidia_runtime=gpu)),
            "IS_KATA": False,
        }

    def script(self) -> str:
        """The bootstrap script in clear text."""
        values = self.variables()
        lines = list(_HEADER)
        for name, quoted in _VARIABLES:
            lines.append(f"{name}={_shell_value(name, _render_value(values[name]), quoted)}")
        lines.extend(_TRAILER)
        return "\n".join(lines) + "\n"

    def custom_data(self) -> str:
        """The script base64-encoded, as ``osProfile.customData`` takes it."""
        return _b64(self.script())


def parse_script_variables(script: str) -> dict[str, str]:
    """``NAME=value`` assignments of a rendered script with bash's quoting removed: what
    the provisioning scripts will see. Used to check renders (tests, debugging)."""
    out: dict[str, str] = {}
    for line in script.splitlines():
        m = re.fullmatch(r"([A-Z][A-Z0-9_]*)=(.*)", line)
        if not m:
            continue
        out[m[1]] = _unquote(m[2])
    return out


def _unquote(text: str) -> str:
    if len(text) >= 2 and text[0] == '"' and text[-1] == '"':
        return text[1:-1]
    if text.startswith("'"):
        return "".join(_single_quoted_parts(text))
    return text


def _single_quoted_parts(text: str) -> Iterable[str]:
    i = 0
    while i < len(text):
        if text[i] == "'":
            j = text.index("'", i + 1)
            yield text[i + 1 : j]
            i = j + 1
        elif text[i] == "\\":
            yield text[i + 1]
            i += 2
        else:
            yield text[i]
            i += 1
