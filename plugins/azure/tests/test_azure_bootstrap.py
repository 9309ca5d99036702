"""The scriptless customData (karpenter_azure.bootstrap): upstream's aksbootstrap rules.

Scenarios ported from upstream's ``aksbootstrap_test.go`` (binary and credential-provider
URLs per Kubernetes minor, the kubelet-configuration flag map) plus the variables the
provisioning scripts read, checked by letting bash itself evaluate the rendered
assignments.
"""

from __future__ import annotations

import base64
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from attrs import frozen
from karpenter_azure.bootstrap import (
    GLOBAL_AKS_MIRROR,
    SYSCTL_CONTENT,
    AKSBootstrap,
    BootstrapError,
    KubeletConfiguration,
    ca_bundle_base64,
    containerd_config,
    credential_provider_url,
    gpu_driver_type,
    gpu_driver_version,
    gpu_image_sha,
    kube_binary_url,
    kubelet_config_flags,
    parse_kubernetes_version,
    parse_script_variables,
    parse_subnet_id,
    taint_to_string,
)

SUBNET = (
    "/subscriptions/sub-1/resourceGroups/vnet-rg/providers/Microsoft.Network/"
    "virtualNetworks/my-vnet/subnets/my-subnet"
)


@frozen
class T:
    key: str
    effect: str
    value: str | None = None


def make(**overrides: Any) -> AKSBootstrap:
    args: dict[str, Any] = {
        "kubernetes_version": "1.31.3",
        "arch": "amd64",
        "ca_bundle": "Q0EtREFUQQ==",
        "api_server_name": "cluster.hcp.westus2.azmk8s.io",
        "bootstrap_token": "abcdef.0123456789abcdef",
        "labels": {"karpenter.sh/nodepool": "default", "kubernetes.azure.com/mode": "user"},
        "taints": (T("karpenter.sh/unregistered", "NoExecute"),),
        "kubelet": KubeletConfiguration(max_pods=250),
        "tenant_id": "tenant-1",
        "subscription_id": "sub-1",
        "location": "westus2",
        "resource_group": "MC_rg_cluster_westus2",
        "kubelet_identity_client_id": "kubelet-client-id",
        "network_plugin": "none",
        "network_policy": "cilium",
        "network_security_group_name": "aks-agentpool-12345678-nsg",
        "route_table_name": "aks-agentpool-12345678-routetable",
        "subnet_id": SUBNET,
    }
    args.update(overrides)
    return AKSBootstrap(**args)


def variables_seen_by_bash(script: str, names: list[str]) -> dict[str, str]:
    """Run only the assignments of the script in bash and read back the values: what
    the provisioning scripts would see (nothing else of the script runs)."""
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("bash is not available")
    assignments = [line for line in script.splitlines() if re.match(r"[A-Z][A-Z0-9_]*=", line)]
    program = "\n".join(assignments) + "\n" + "".join(f'printf "%s\\0" "${n}"\n' for n in names)
    out = subprocess.run([bash, "-c", program], capture_output=True, check=True)
    values = out.stdout.decode("utf-8").split("\0")[:-1]
    return dict(zip(names, values, strict=True))


# --- URLs per Kubernetes minor (upstream TestKubeBinaryURL / TestGetCredentialProviderURL)


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        ("1.24.5", "v1.24.5"),
        ("1.27.1", "v1.27.1"),
        ("1.33.7", "v1.33.7"),
        ("1.34.0", None),
        ("1.35.5", None),
    ],
)
def test_kube_binary_url_until_1_34(version: str, expected: str | None) -> None:
    url = kube_binary_url(version, "amd64")
    if expected is None:
        assert url == ""
    else:
        assert url == (
            f"{GLOBAL_AKS_MIRROR}/kubernetes/{expected}/binaries/kubernetes-node-linux-amd64.tar.gz"
        )


@pytest.mark.parametrize(
    ("version", "arch", "provider_version"),
    [
        ("1.34.1", "amd64", "1.33.0"),
        ("1.33.0", "amd64", "1.33.0"),
        ("1.32.0", "amd64", "1.32.5"),
        ("1.31.0", "amd64", "1.31.6"),
        ("1.30.2", "amd64", "1.30.12"),
        ("1.30.0", "arm64", "1.30.12"),
        ("1.29.2", "amd64", None),
        ("1.28.7", "amd64", None),
    ],
)
def test_credential_provider_url(version: str, arch: str, provider_version: str | None) -> None:
    url = credential_provider_url(version, arch)
    if provider_version is None:
        assert url == ""
    else:
        assert url == (
            f"{GLOBAL_AKS_MIRROR}/cloud-provider-azure/v{provider_version}/binaries/"
            f"azure-acr-credential-provider-linux-{arch}-v{provider_version}.tar.gz"
        )


@pytest.mark.parametrize("bad", ["", "latest", "1", "one.two.three"])
def test_unparseable_kubernetes_version_is_an_error(bad: str) -> None:
    with pytest.raises(BootstrapError):
        parse_kubernetes_version(bad)
    with pytest.raises(BootstrapError):
        make(kubernetes_version=bad).custom_data()


def test_kubernetes_version_with_v_prefix_is_accepted() -> None:
    assert parse_kubernetes_version("v1.30.2") == (1, 30, 2)
    v = make(kubernetes_version="v1.30.2").variables()
    assert v["KUBERNETES_VERSION"] == "1.30.2"
    assert "/v1.30.2/" in v["KUBE_BINARY_URL"]


# --- kubelet flags ------------------------------------------------------------------------


def test_kubelet_config_map() -> None:
    """Upstream TestKubeletConfigMap: every AKSNodeClass kubelet field and the computed
    values become their flags."""
    config = KubeletConfiguration(
        max_pods=0,
        system_reserved={"cpu": "200m"},
        kube_reserved={"cpu": "400m", "memory": "1Gi"},
        eviction_hard={"memory.available": "100Mi"},
        eviction_soft={"memory.available": "300Mi"},
        eviction_soft_grace_period={"memory.available": "3m0s"},
        eviction_max_pod_grace_period=42,
        cluster_dns_service_ip="10.2.0.10",
        nodeclass_kubelet={
            "cpuManagerPolicy": "static",
            "cpuCFSQuota": True,
            "cpuCFSQuotaPeriod": "100ms",
            "imageGCHighThresholdPercent": 42,
            "imageGCLowThresholdPercent": 24,
            "topologyManagerPolicy": "best-effort",
            "allowedUnsafeSysctls": ["Allowed", "Unsafe", "Sysctls"],
            "containerLogMaxSize": "42Mi",
            "containerLogMaxFiles": 13,
            "podPidsLimit": 99,
            "failSwapOn": False,
        },
    )
    assert kubelet_config_flags(config) == {
        "--max-pods": "0",
        "--system-reserved": "cpu=200m",
        "--kube-reserved": "cpu=400m,memory=1Gi",
        "--eviction-hard": "memory.available<100Mi",
        "--eviction-soft": "memory.available<300Mi",
        "--eviction-soft-grace-period": "memory.available=3m0s",
        "--eviction-max-pod-grace-period": "42",
        "--image-gc-high-threshold": "42",
        "--image-gc-low-threshold": "24",
        "--cpu-cfs-quota": "true",
        "--cpu-manager-policy": "static",
        "--topology-manager-policy": "best-effort",
        "--allowed-unsafe-sysctls": "Allowed,Unsafe,Sysctls",
        "--container-log-max-size": "42Mi",
        "--container-log-max-files": "13",
        "--pod-max-pids": "99",
        "--cluster-dns": "10.2.0.10",
    }


def test_kubelet_config_map_leaves_unset_fields_to_the_base_flags() -> None:
    flags = kubelet_config_flags(KubeletConfiguration(max_pods=30, nodeclass_kubelet={}))
    assert flags == {"--max-pods": "30"}
    assert kubelet_config_flags(None) == {}
    flags = kubelet_config_flags(
        KubeletConfiguration(max_pods=30, nodeclass_kubelet={"cpuCFSQuota": False})
    )
    assert flags["--cpu-cfs-quota"] == "false"


def test_kubelet_config_overrides_base_flags() -> None:
    flags = make(
        kubelet=KubeletConfiguration(
            max_pods=77,
            cluster_dns_service_ip="10.9.0.10",
            eviction_hard={"memory.available": "750Mi"},
        )
    ).kubelet_flags()
    assert flags["--max-pods"] == "77"
    assert flags["--cluster-dns"] == "10.9.0.10"
    # upstream replaces the whole base eviction-hard with the instance type's memory threshold
    assert flags["--eviction-hard"] == "memory.available<750Mi"
    defaults = make(kubelet=None).kubelet_flags()
    assert defaults["--max-pods"] == "110"
    assert defaults["--cluster-dns"] == "10.0.0.10"
    assert defaults["--eviction-hard"] == (
        "memory.available<750Mi,nodefs.available<10%,nodefs.inodesFree<5%"
    )


@pytest.mark.parametrize(
    ("version", "keep_terminated", "cloud_config", "pause_image", "oot_credentials"),
    [
        ("1.29.9", True, True, True, False),
        ("1.30.4", True, True, True, True),
        ("1.31.0", False, True, True, True),
        ("1.33.2", False, True, True, True),
        ("1.34.0", False, False, True, True),
        ("1.35.1", False, False, False, True),
    ],
)
def test_kubelet_flags_per_kubernetes_minor(
    version: str,
    keep_terminated: bool,
    cloud_config: bool,
    pause_image: bool,
    oot_credentials: bool,
) -> None:
    flags = make(kubernetes_version=version).kubelet_flags()
    assert ("--keep-terminated-pod-volumes" in flags) is keep_terminated
    assert ("--cloud-config" in flags) is cloud_config
    assert ("--pod-infra-container-image" in flags) is pause_image
    assert ("--image-credential-provider-config" in flags) is oot_credentials
    assert ("--image-credential-provider-bin-dir" in flags) is oot_credentials
    assert ("--feature-gates" in flags) is not oot_credentials
    assert ("--azure-container-registry-config" in flags) is not oot_credentials
    v = make(kubernetes_version=version).variables()
    assert bool(v["CREDENTIAL_PROVIDER_DOWNLOAD_URL"]) is oot_credentials


def test_taints_are_registered_with_kubelet() -> None:
    taints = (T("dedicated", "NoSchedule", "gpu"), T("karpenter.sh/unregistered", "NoExecute"))
    flags = make(taints=taints).kubelet_flags()
    assert flags["--register-with-taints"] == (
        "dedicated=gpu:NoSchedule,karpenter.sh/unregistered:NoExecute"
    )
    assert "--register-with-taints" not in make(taints=()).kubelet_flags()
    assert taint_to_string(T("a", "NoExecute", "")) == "a:NoExecute"


# --- the variables ------------------------------------------------------------------------


def test_custom_data_is_base64_of_the_script() -> None:
    b = make()
    assert base64.b64decode(b.custom_data()).decode("utf-8") == b.script()
    assert b.script().startswith("#!/bin/bash\n")
    assert b.script().rstrip().endswith('/opt/azure/containers/provision_start.sh"')


def test_variables_carry_the_node_and_cluster_settings() -> None:
    b = make()
    seen = variables_seen_by_bash(
        b.script(),
        [
            "KUBERNETES_VERSION",
            "TLS_BOOTSTRAP_TOKEN",
            "KUBE_CA_CRT",
            "API_SERVER_NAME",
            "TENANT_ID",
            "SUBSCRIPTION_ID",
            "RESOURCE_GROUP",
            "LOCATION",
            "USER_ASSIGNED_IDENTITY_ID",
            "NETWORK_PLUGIN",
            "NETWORK_POLICY",
            "SUBNET",
            "VIRTUAL_NETWORK",
            "VIRTUAL_NETWORK_RESOURCE_GROUP",
            "NETWORK_SECURITY_GROUP",
            "ROUTE_TABLE",
            "KUBELET_NODE_LABELS",
            "KUBELET_FLAGS",
            "ADMINUSER",
            "SERVICE_PRINCIPAL_CLIENT_ID",
            "ENABLE_TLS_BOOTSTRAPPING",
            "NEEDS_CGROUPV2",
        ],
    )
    assert seen["KUBERNETES_VERSION"] == "1.31.3"
    assert seen["TLS_BOOTSTRAP_TOKEN"] == "abcdef.0123456789abcdef"
    assert seen["KUBE_CA_CRT"] == "Q0EtREFUQQ=="
    assert seen["API_SERVER_NAME"] == "cluster.hcp.westus2.azmk8s.io"
    assert seen["TENANT_ID"] == "tenant-1"
    assert seen["SUBSCRIPTION_ID"] == "sub-1"
    assert seen["RESOURCE_GROUP"] == "MC_rg_cluster_westus2"
    assert seen["LOCATION"] == "westus2"
    assert seen["USER_ASSIGNED_IDENTITY_ID"] == "kubelet-client-id"
    assert seen["NETWORK_PLUGIN"] == "none"
    assert seen["NETWORK_POLICY"] == "cilium"
    assert (seen["SUBNET"], seen["VIRTUAL_NETWORK"], seen["VIRTUAL_NETWORK_RESOURCE_GROUP"]) == (
        "my-subnet",
        "my-vnet",
        "vnet-rg",
    )
    assert seen["NETWORK_SECURITY_GROUP"] == "aks-agentpool-12345678-nsg"
    assert seen["ROUTE_TABLE"] == "aks-agentpool-12345678-routetable"
    assert seen["KUBELET_NODE_LABELS"] == (
        "karpenter.sh/nodepool=default,kubernetes.azure.com/mode=user"
    )
    flags = dict(f.split("=", 1) for f in seen["KUBELET_FLAGS"].split(" "))
    assert flags == b.kubelet_flags()
    assert seen["ADMINUSER"] == "azureuser"
    assert seen["SERVICE_PRINCIPAL_CLIENT_ID"] == "msi"
    assert seen["ENABLE_TLS_BOOTSTRAPPING"] == "true"
    assert seen["NEEDS_CGROUPV2"] == "true"


def test_arm64_downloads_arm64_binaries() -> None:
    v = make(arch="arm64", kubernetes_version="1.30.1").variables()
    for name in ("KUBE_BINARY_URL", "CREDENTIAL_PROVIDER_DOWNLOAD_URL", "CNI_PLUGINS_URL"):
        assert "linux-arm64" in v[name]
    assert "azure-vnet-cni-linux-arm64-" in v["VNET_CNI_PLUGINS_URL"]


def test_bad_subnet_id_leaves_the_network_names_empty() -> None:
    assert parse_subnet_id("not-a-subnet") is None
    assert parse_subnet_id(SUBNET.replace("/subnets/", "/subnetz/")) is None
    parts = parse_subnet_id(SUBNET.upper())
    assert parts is not None and parts.vnet_name == "MY-VNET"
    v = make(subnet_id="garbage").variables()
    assert (v["SUBNET"], v["VIRTUAL_NETWORK"], v["VIRTUAL_NETWORK_RESOURCE_GROUP"]) == ("", "", "")


def test_sysctl_and_containerd_are_shipped_base64() -> None:
    v = make().variables()
    assert base64.b64decode(v["SYSCTL_CONTENT"]).decode() == SYSCTL_CONTENT
    assert "net.core.somaxconn=16384" in SYSCTL_CONTENT
    toml = base64.b64decode(v["CONTAINERD_CONFIG_CONTENT"]).decode()
    assert toml == containerd_config(nvidia_runtime=False)
    assert 'default_runtime_name = "runc"' in toml
    assert "SystemdCgroup = true" in toml
    assert "nvidia" not in toml


def test_gpu_node_installs_the_driver_and_uses_the_nvidia_runtime() -> None:
    size = "Standard_NC6s_v3"
    b = make(
        gpu_node=True,
        gpu_driver_version=gpu_driver_version(size),
        gpu_driver_type=gpu_driver_type(size),
        gpu_image_sha=gpu_image_sha(size),
    )
    v = b.variables()
    assert v["GPU_NODE"] is True and v["CONFIG_GPU_DRIVER_IF_NEEDED"] is True
    assert (v["GPU_DRIVER_VERSION"], v["GPU_DRIVER_TYPE"]) == ("580.159.04", "cuda-lts")
    assert v["GPU_IMAGE_SHA"] == gpu_image_sha(size)
    toml = base64.b64decode(v["CONTAINERD_CONFIG_CONTENT"]).decode()
    assert 'default_runtime_name = "nvidia-container-runtime"' in toml
    assert 'BinaryName = "/usr/bin/nvidia-container-runtime"' in toml
    seen = variables_seen_by_bash(b.script(), ["GPU_NODE", "GPU_DRIVER_TYPE"])
    assert seen == {"GPU_NODE": "true", "GPU_DRIVER_TYPE": "cuda-lts"}


def test_gpu_mode_none_skips_driver_installation() -> None:
    b = make(gpu_node=True, gpu_driver_installation_enabled=False, gpu_driver_version="x")
    v = b.variables()
    assert v["GPU_NODE"] is False and v["CONFIG_GPU_DRIVER_IF_NEEDED"] is False
    assert v["GPU_DRIVER_VERSION"] == ""
    assert (
        'default_runtime_name = "runc"' in base64.b64decode(v["CONTAINERD_CONFIG_CONTENT"]).decode()
    )


@pytest.mark.parametrize(
    ("size", "driver_type", "version"),
    [
        ("Standard_NC6", "cuda", "470.82.01"),
        ("standard_nc24ads_a100_v4", "cuda-lts", "580.159.04"),
        ("Standard_NV36ads_A10_v5", "grid", "570.211.01"),
        ("Standard_NC24lds_xl_RTXPRO6000BSE_v6", "grid-v20", "595.58.03"),
    ],
)
def test_gpu_driver_by_vm_size(size: str, driver_type: str, version: str) -> None:
    assert gpu_driver_type(size) == driver_type
    assert gpu_driver_version(size) == version
    assert gpu_image_sha(size).isdigit()


def test_ca_bundle_pem_is_encoded_and_base64_kept() -> None:
    pem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
    encoded = ca_bundle_base64(pem)
    assert base64.b64decode(encoded).decode() == pem
    assert ca_bundle_base64(encoded) == encoded
    assert ca_bundle_base64(pem.encode()) == encoded


def test_same_inputs_give_the_same_custom_data_whatever_the_map_order() -> None:
    a = make(
        labels={"a": "1", "b": "2"},
        kubelet=KubeletConfiguration(10, kube_reserved={"cpu": "1", "memory": "2"}),
    )
    b = make(
        labels={"b": "2", "a": "1"},
        kubelet=KubeletConfiguration(10, kube_reserved={"memory": "2", "cpu": "1"}),
    )
    assert a.custom_data() == b.custom_data()
    assert a.custom_data() != make(labels={"a": "1"}).custom_data()


# --- values that could run code on the node -----------------------------------------------


def test_hostile_values_arrive_verbatim_and_run_nothing(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    evil = f'x"; touch {marker}; echo "$(touch {marker})`touch {marker}`\\'
    b = make(
        bootstrap_token=evil,
        tenant_id=f"t $(touch {marker})",
        network_policy=evil,
        labels={"team": f"a'b$(touch {marker})"},
        kubernetes_version="1.31.3",
    )
    seen = variables_seen_by_bash(
        b.script(), ["TLS_BOOTSTRAP_TOKEN", "TENANT_ID", "NETWORK_POLICY", "KUBELET_NODE_LABELS"]
    )
    assert seen["TLS_BOOTSTRAP_TOKEN"] == evil
    assert seen["TENANT_ID"] == f"t $(touch {marker})"
    assert seen["NETWORK_POLICY"] == evil
    assert seen["KUBELET_NODE_LABELS"] == f"team=a'b$(touch {marker})"
    assert not marker.exists()
    # and the parser used for debugging agrees with bash on single-line values
    parsed = parse_script_variables(b.script())
    assert parsed["TLS_BOOTSTRAP_TOKEN"] == evil
    assert parsed["TENANT_ID"] == seen["TENANT_ID"]


def test_nul_cannot_be_carried() -> None:
    with pytest.raises(BootstrapError, match="TLS_BOOTSTRAP_TOKEN"):
        make(bootstrap_token="a\0b").script()
