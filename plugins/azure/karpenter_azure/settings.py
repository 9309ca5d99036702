"""The Azure provider's settings: upstream's options and environment variable names, typed.

``karpenter serve`` resolves every provider setting to a string (flag, environment variable
or default); :meth:`AzureSettings.from_mapping` turns them into typed values and rejects bad
ones with an error naming the setting and its variable, so a typo fails at start-up rather
than at the first launch.

Two levels of requirement, as the issue asks: the catalogue (``karpenter instance-types``,
``karpenter schedule``) needs only a region, and none at all falls back to the first
bundled one; launching (``karpenter serve``) needs what upstream marks ``[REQUIRED]``
(cluster name and endpoint, bootstrap token, SSH public key, subnet, node resource group)
plus the subscription, and :meth:`AzureSettings.launch_problems` lists what is missing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from attrs import field, frozen

__all__ = [
    "PROVISION_MODE_SCRIPTLESS",
    "AzureSettings",
    "SettingsError",
    "parse_tags",
]

PROVISION_MODE_SCRIPTLESS = "aksscriptless"
"""Upstream's default provision mode and the one this plugin implements: a NIC and a VM per
node, the node's bootstrap in the VM's customData."""

_OTHER_PROVISION_MODES = ("bootstrappingclient", "aksmachineapi", "aksmachineapiheaderbatch")
_SUBNET_ID = re.compile(
    r"^/subscriptions/[^/]+/resourceGroups/[^/]+/providers/Microsoft\.Network/"
    r"virtualNetworks/[^/]+/subnets/[^/]+$",
    re.IGNORECASE,
)
_IDENTITY_ID = re.compile(
    r"^/subscriptions/[^/]+/resourceGroups/[^/]+/providers/"
    r"Microsoft\.ManagedIdentity/userAssignedIdentities/[^/]+$",
    re.IGNORECASE,
)
_NETWORK_PLUGINS = ("azure", "none", "kubenet")
_NETWORK_PLUGIN_MODES = ("overlay", "")
_NETWORK_POLICIES = ("", "azure", "cilium", "calico")
_NETWORK_DATAPLANES = ("", "azure", "cilium")

# setting name -> upstream's environment variable, for messages
ENV = {
    "region": "LOCATION",
    "subscription-id": "AZURE_SUBSCRIPTION_ID",
    "cluster-name": "CLUSTER_NAME",
    "cluster-endpoint": "CLUSTER_ENDPOINT",
    "kubelet-bootstrap-token": "KUBELET_BOOTSTRAP_TOKEN",
    "ssh-public-key": "SSH_PUBLIC_KEY",
    "vnet-subnet-id": "VNET_SUBNET_ID",
    "node-resource-group": "AZURE_NODE_RESOURCE_GROUP",
}


class SettingsError(ValueError):
    """A setting has a value the provider cannot use (one line, naming the setting)."""


def _setting(name: str) -> str:
    env = ENV.get(name)
    return f"azure setting {name}" + (f" (env {env})" if env else "")


def _bool(name: str, raw: str) -> bool:
    value = raw.strip().lower()
    if value in ("true", "1", "yes"):
        return True
    if value in ("false", "0", "no", ""):
        return False
    raise SettingsError(f"{_setting(name)}: {raw!r} is not a boolean (true or false)")


def _fraction(name: str, raw: str) -> float:
    try:
        value = float(raw.strip())
    except ValueError:
        raise SettingsError(f"{_setting(name)}: {raw!r} is not a number") from None
    if not 0.0 <= value < 1.0:
        raise SettingsError(f"{_setting(name)}: {value} is not a fraction in [0, 1)")
    return value


def _choice(name: str, raw: str, choices: tuple[str, ...]) -> str:
    value = raw.strip()
    if value.lower() not in choices:
        shown = ", ".join(repr(c) for c in choices)
        raise SettingsError(f"{_setting(name)}: {raw!r} is not one of {shown}")
    return value.lower()


def parse_tags(raw: str) -> dict[str, str]:
    """``key1=value1,key2=value2`` (upstream's ``ADDITIONAL_TAGS``) as a dict."""
    out: dict[str, str] = {}
    for part in raw.split(","):
        part = part.strip()
        if not part:
            continue
        key, sep, value = part.partition("=")
        if not sep or not key.strip():
            raise SettingsError(
                f"{_setting('additional-tags')}: {part!r} is not key=value "
                "(expected key1=value1,key2=value2)"
            )
        out[key.strip()] = value.strip()
    return out


def _identities(raw: str) -> tuple[str, ...]:
    ids = tuple(p.strip() for p in raw.split(",") if p.strip())
    for i in ids:
        if not _IDENTITY_ID.match(i):
            raise SettingsError(
                f"{_setting('node-identities')}: {i!r} is not a user-assigned identity "
                "resource id (/subscriptions/…/providers/Microsoft.ManagedIdentity/"
                "userAssignedIdentities/NAME)"
            )
    return ids


def _endpoint(raw: str) -> str:
    value = raw.strip()
    if value and not re.match(r"^https?://[^/\s]+", value):
        raise SettingsError(
            f"{_setting('cluster-endpoint')}: {raw!r} is not a URL (https://host[:port])"
        )
    return value


@frozen
class AzureSettings:
    """Typed Azure settings (see ``karpenter_azure.plugin.SETTINGS`` for their docs)."""

    region: str = ""
    subscription_id: str = ""
    resource_group: str = ""
    cluster_name: str = ""
    cluster_endpoint: str = ""
    kubelet_bootstrap_token: str = field(default="", repr=False)
    ssh_public_key: str = field(default="", repr=False)
    linux_admin_username: str = "azureuser"
    vnet_subnet_id: str = ""
    node_resource_group: str = ""
    network_plugin: str = "azure"
    network_plugin_mode: str = "overlay"
    network_policy: str = ""
    network_dataplane: str = "cilium"
    dns_service_ip: str = ""
    vnet_guid: str = ""
    kubelet_identity_client_id: str = ""
    node_identities: tuple[str, ...] = ()
    additional_tags: Mapping[str, str] = field(factory=dict)
    vm_memory_overhead_percent: float = 0.075
    provision_mode: str = PROVISION_MODE_SCRIPTLESS
    use_sig: bool = False
    kubernetes_version: str = ""
    node_image_version: str = "latest"
    cluster_ca_bundle: str = field(default="", repr=False)
    pricing_endpoint: str = ""
    sdk_logging: bool = False

    @classmethod
    def from_mapping(cls, settings: Mapping[str, str]) -> AzureSettings:
        """Parse resolved settings; raises :class:`SettingsError` naming the bad one."""

        def get(name: str, default: str = "") -> str:
            value = settings.get(name)
            return (default if value is None else value).strip()

        mode = get("provision-mode", PROVISION_MODE_SCRIPTLESS).lower()
        if mode in _OTHER_PROVISION_MODES:
            raise SettingsError(
                f"azure setting provision-mode (env PROVISION_MODE): {mode!r} is not "
                f"supported; this plugin implements upstream's default, "
                f"{PROVISION_MODE_SCRIPTLESS!r}"
            )
        if mode != PROVISION_MODE_SCRIPTLESS:
            raise SettingsError(
                f"azure setting provision-mode (env PROVISION_MODE): {mode!r} is not a "
                f"provision mode (upstream's are {PROVISION_MODE_SCRIPTLESS!r}, "
                + ", ".join(repr(m) for m in _OTHER_PROVISION_MODES)
                + ")"
            )
        use_sig = _bool("use-sig", get("use-sig", "false"))
        if use_sig:
            raise SettingsError(
                "azure setting use-sig (env USE_SIG): true needs AKS's managed shared image "
                "galleries, which only the AKS-managed Karpenter add-on can use; self-hosted "
                "Karpenter uses the community galleries (false)"
            )
        subnet = get("vnet-subnet-id")
        if subnet and not _SUBNET_ID.match(subnet):
            raise SettingsError(
                f"{_setting('vnet-subnet-id')}: {subnet!r} is not a subnet resource id "
                "(/subscriptions/…/resourceGroups/…/providers/Microsoft.Network/"
                "virtualNetworks/…/subnets/…)"
            )
        plugin = _choice("network-plugin", get("network-plugin", "azure"), _NETWORK_PLUGINS)
        plugin_mode = _choice(
            "network-plugin-mode", get("network-plugin-mode", "overlay"), _NETWORK_PLUGIN_MODES
        )
        return cls(
            region=get("region").lower().replace(" ", ""),
            subscription_id=get("subscription-id"),
            resource_group=get("resource-group"),
            cluster_name=get("cluster-name"),
            cluster_endpoint=_endpoint(get("cluster-endpoint")),
            kubelet_bootstrap_token=get("kubelet-bootstrap-token"),
            ssh_public_key=get("ssh-public-key"),
            linux_admin_username=get("linux-admin-username", "azureuser"),
            vnet_subnet_id=subnet,
            node_resource_group=get("node-resource-group"),
            network_plugin=plugin,
            network_plugin_mode=plugin_mode,
            network_policy=_choice("network-policy", get("network-policy"), _NETWORK_POLICIES),
            network_dataplane=_choice(
                "network-dataplane", get("network-dataplane", "cilium"), _NETWORK_DATAPLANES
            ),
            dns_service_ip=get("dns-service-ip"),
            vnet_guid=get("vnet-guid"),
            kubelet_identity_client_id=get("kubelet-identity-client-id"),
            node_identities=_identities(get("node-identities")),
            additional_tags=parse_tags(get("additional-tags")),
            vm_memory_overhead_percent=_fraction(
                "vm-memory-overhead-percent", get("vm-memory-overhead-percent", "0.075")
            ),
            provision_mode=mode,
            use_sig=use_sig,
            kubernetes_version=get("kubernetes-version"),
            node_image_version=get("node-image-version", "latest"),
            cluster_ca_bundle=get("cluster-ca-bundle"),
            pricing_endpoint=get("pricing-endpoint"),
            sdk_logging=_bool("enable-azure-sdk-logging", get("enable-azure-sdk-logging")),
        )

    def launch_problems(self) -> list[str]:
        """What launching needs and is missing, one entry per setting (empty: ready)."""
        needed = {
            "region": self.region,
            "subscription-id": self.subscription_id,
            "cluster-name": self.cluster_name,
            "cluster-endpoint": self.cluster_endpoint,
            "kubelet-bootstrap-token": self.kubelet_bootstrap_token,
            "ssh-public-key": self.ssh_public_key,
            "vnet-subnet-id": self.vnet_subnet_id,
            "node-resource-group": self.node_resource_group,
        }
        return [f"{_setting(name)} is required" for name, value in needed.items() if not value]
