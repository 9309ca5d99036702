"""Harness for ``karpenter serve --cloud-provider azure`` end to end on a real control plane,
with Azure Resource Manager played by the Azure plugin's fake ARM server.

What runs where:

- **Azure**: ``FakeARM`` (``plugins/azure/tests/fakearm.py``) in the test process, one per
  test: a real HTTPS server with a self-signed certificate that the official Azure SDKs in
  the Karpenter subprocess talk to (managed-identity tokens, NIC/VM/extension long-running
  operations, Resource Graph), with an inventory the tests read and fault injection
  (:meth:`FakeARM.fail_next_vm_create`). Its directory is put on ``sys.path`` here because
  pytest's rootdir-relative imports do not reach it from ``tests/integration``.
- **Karpenter**: ``karpenter serve --cloud-provider azure`` subprocesses
  (:class:`AzureServe`, serve_harness's :class:`Serve` without the developer's own Azure
  credentials in its environment) reaching the fake through ``FakeARM.env()`` (CA bundle,
  ``IDENTITY_ENDPOINT``/``IDENTITY_HEADER``, ``AZURE_ENVIRONMENT_FILEPATH``) and given the
  settings upstream requires (``LOCATION``, ``AZURE_SUBSCRIPTION_ID``, ``CLUSTER_NAME``...).
  The region is one whose catalogue the plugin bundles (:data:`REGION`): the fake answers
  Resource SKUs (``fakearm_catalog``, paged) with the bundled records of that region, what
  Azure answered when they were recorded. The retail prices endpoint points at a path of
  the fake that has no route, so prices come from the bundled snapshot (the documented
  fallback) without waiting on an unreachable internet.
- **The VMs' kubelets**: :class:`NodeJoiner`. A VM's kubelet registers a Node named after
  the VM's computer name with the provider id the Azure cloud provider gives it
  (``azure://`` + the VM's ARM id, resource group lower-cased), the labels and taints
  Karpenter put in its customData, and the cloud node manager adds the instance type,
  zone (``<region>-<n>``) and region from the VM. The joiner polls the fake's inventory and
  registers that Node for each VM whose create succeeded and whose NodeClaim names it,
  taking the labels, taints and resources from the NodeClaim (what the customData carries);
  when a VM disappears from Azure its Node is deleted, as the cloud node lifecycle
  controller does. From then on serve_harness's fake kubelet keeps the Node Ready and runs
  the pods the real kube-scheduler binds to it.

The cloud-independent parts (the serve wrapper, ``wait``, the NodePool and Deployment
manifests, the joiner's loop, the Node a kubelet registers, the teardown report) are
``cloud_harness``'s; this module gives what is Azure's.

Waits poll with generous deadlines and assert on state, never on how long something took.
"""

from __future__ import annotations

import base64
import binascii
import copy
import re
import sys
from collections.abc import Hashable, Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar

import pytest
from cloud_harness import (
    CloudWorld,
    ScrubbedServe,
    can_launch,
    claims_by_machine,
    kubelet_node,
    running,
)
from cloud_harness import NodeJoiner as CloudNodeJoiner
from serve_harness import Cluster, Serve

FAKEARM_DIR = Path(__file__).resolve().parents[2] / "plugins" / "azure" / "tests"
if str(FAKEARM_DIR) not in sys.path:
    sys.path.insert(0, str(FAKEARM_DIR))

from fakearm import FakeARM  # noqa: E402 -- needs FAKEARM_DIR on sys.path
from fakearm_catalog import CatalogRoutes, catalog_routes  # noqa: E402 -- the same

# A region whose Resource SKUs and prices the plugin bundles (karpenter_azure/data).
REGION = "southcentralus"
ZONES = tuple(f"{REGION}-{n}" for n in (1, 2, 3))
SUBSCRIPTION = "12345678-1234-1234-1234-123456789abc"
CLUSTER_NAME = "karpenter-e2e"
# Mixed case on purpose: ARM ids keep it, Node provider ids lower-case it.
NODE_RESOURCE_GROUP = "MC_karpenter-e2e_karpenter-e2e_southcentralus"
VNET_SUBNET_ID = (
    f"/subscriptions/{SUBSCRIPTION}/resourceGroups/{NODE_RESOURCE_GROUP}/providers/"
    "Microsoft.Network/virtualNetworks/aks-vnet-e2e/subnets/aks-subnet"
)
BOOTSTRAP_TOKEN = "abcdef.0123456789abcdef"
SSH_PUBLIC_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIE2eTestKeyForKarpenterE2E karpenter@e2e"
KUBERNETES_VERSION = "1.33.0"
"""The ``kubernetes-version`` setting; the status controller prefers the API server's own."""
# Two x86-64 sizes of the bundled southcentralus catalogue, offered in its three zones.
ALLOWED_TYPES = ("Standard_D2s_v3", "Standard_D4s_v3")

AKSNODECLASS = ("karpenter.azure.com/v1beta1", "AKSNodeClass")
# Upstream's tag keys (pkg/providers/launchtemplate/tags.go): "/" becomes "_".
NODEPOOL_TAG = "karpenter.sh_nodepool"
CLUSTER_TAG = "karpenter.azure.com_cluster"
PROVIDER_ID_PREFIX = "azure://"

# Credentials DefaultAzureCredential would try before the fake's managed identity.
FOREIGN_CREDENTIAL_VARS = (
    "AZURE_CLIENT_ID",
    "AZURE_CLIENT_SECRET",
    "AZURE_TENANT_ID",
    "AZURE_CLIENT_CERTIFICATE_PATH",
    "AZURE_USERNAME",
    "AZURE_PASSWORD",
    "AZURE_FEDERATED_TOKEN_FILE",
    "MSI_ENDPOINT",
    "MSI_SECRET",
    "IDENTITY_SERVER_THUMBPRINT",
    "IMDS_ENDPOINT",
    "ARM_CLOUD",
    "ARM_SUBSCRIPTION_ID",
)

_RG_IN_ID = re.compile(r"(/resourceGroups/)([^/]+)(/)", re.IGNORECASE)


def azure_can_launch() -> bool:
    """Whether the installed Azure plugin says it can launch (its CloudProviderSpec)."""
    return can_launch("azure")


def kubelet_provider_id(vm: Mapping[str, Any]) -> str:
    """The provider id the Azure cloud provider gives a VM's Node: ``azure://`` + its ARM
    id with the resource group lower-cased (cloud-provider-azure's historical form)."""
    arm_id = str(vm["id"])
    return PROVIDER_ID_PREFIX + _RG_IN_ID.sub(lambda m: m[1] + m[2].lower() + m[3], arm_id, count=1)


def vm_zone(vm: Mapping[str, Any]) -> str:
    """The zone label the cloud node manager gives the VM's Node: ``<region>-<n>``, or
    ``"0"`` (a fault domain) for a regional VM."""
    zones = vm.get("zones") or []
    return f"{str(vm.get('location') or REGION).lower()}-{zones[0]}" if zones else "0"


def vm_size(vm: Mapping[str, Any]) -> str:
    return str(((vm.get("properties") or {}).get("hardwareProfile") or {}).get("vmSize") or "")


def vm_state(vm: Mapping[str, Any]) -> str:
    return str((vm.get("properties") or {}).get("provisioningState") or "")


_K8S_VERSION_IN_SCRIPT = re.compile(r"""^KUBERNETES_VERSION=["']?v?([0-9][0-9.]*)""", re.MULTILINE)


def custom_data(vm: Mapping[str, Any]) -> str:
    """The VM's bootstrap script (``osProfile.customData`` decoded; "" when absent)."""
    raw = ((vm.get("properties") or {}).get("osProfile") or {}).get("customData") or ""
    try:
        return base64.b64decode(str(raw), validate=True).decode("utf-8", "replace")
    except (binascii.Error, ValueError):
        return ""


def kubelet_version(vm: Mapping[str, Any]) -> str:
    """The kubelet version the VM boots: the ``KUBERNETES_VERSION`` its customData gives the
    node image's provisioning scripts (the setting's when the script names none)."""
    m = _K8S_VERSION_IN_SCRIPT.search(custom_data(vm))
    return f"v{m[1] if m else KUBERNETES_VERSION}"


def node_name_of(vm: Mapping[str, Any]) -> str:
    """A VM's Node name: its computer name (the host name kubelet registers with)."""
    os_profile = (vm.get("properties") or {}).get("osProfile") or {}
    return str(os_profile.get("computerName") or vm["name"]).lower()


# --------------------------------------------------------------------------- node joiner


def karpenters_vms(arm: FakeARM) -> dict[str, dict[str, Any]]:
    """Karpenter's VMs (tagged with a NodePool) by name: copies, read under the fake's lock."""
    with arm.lock:
        return {
            n: copy.deepcopy(vm)
            for n, vm in arm.vms.items()
            if NODEPOOL_TAG in (vm.get("tags") or {})
        }


def node_for(vm: Mapping[str, Any], nodeclaim: Mapping[str, Any]) -> dict[str, Any]:
    """The Node the VM's kubelet registers (:func:`cloud_harness.kubelet_node`): named
    after its computer name, with the instance type, zone and region the cloud node manager
    reads from the VM, the NodePool of its tag, and the kubelet version its customData
    boots."""
    return kubelet_node(
        node_name_of(vm),
        kubelet_provider_id(vm),
        nodeclaim,
        instance_type=vm_size(vm),
        zone=vm_zone(vm),
        region=str(vm.get("location") or REGION).lower(),
        pool=(vm.get("tags") or {}).get(NODEPOOL_TAG),
        machine_id=str((vm.get("properties") or {}).get("vmId") or vm["name"]),
        kubelet_version=kubelet_version(vm),
    )


class NodeJoiner(CloudNodeJoiner):
    """Plays the kubelets of Karpenter's VMs (see the module docstring), keyed by VM name.

    A VM boots once its create has succeeded (a VM left ``Failed`` by its create never
    boots); provider ids compare case-insensitively (the resource group's case differs).
    """

    thread_name = "azure-node-joiner"

    def __init__(self, arm: FakeARM, kube: Any, interval: float = 0.25) -> None:
        super().__init__(kube, interval)
        self.arm = arm

    def machines(self) -> dict[Hashable, dict[str, Any]]:
        return dict(karpenters_vms(self.arm))

    def booted(self, machine: Mapping[str, Any]) -> bool:
        return vm_state(machine) == "Succeeded"

    def provider_id(self, machine: Mapping[str, Any]) -> str:
        return kubelet_provider_id(machine)

    def node_for(self, machine: Mapping[str, Any], nodeclaim: Mapping[str, Any]) -> dict[str, Any]:
        return node_for(machine, nodeclaim)

    def claim_key(self, provider_id: str) -> str:
        return provider_id.lower()


# --------------------------------------------------------------------------- serve


class AzureServe(ScrubbedServe):
    """A ``karpenter serve`` subprocess whose environment holds none of the developer's own
    Azure credentials: ``DefaultAzureCredential`` must take the fake's managed identity."""

    foreign_vars = FOREIGN_CREDENTIAL_VARS


# --------------------------------------------------------------------------- the Azure world

# Loggers whose lines (one per ARM request and response) would push everything else out
# of a log's tail.
_NOISY_LOGGERS = ('"azure.core.pipeline.policies.http_logging_policy"', '"azure.identity.')


def quiet_tail(s: Serve, n: int = 80) -> str:
    """The last ``n`` lines of a serve log without the Azure SDK's per-request lines."""
    lines = s.log.read_text(errors="replace").splitlines()
    return "\n".join([ln for ln in lines if not any(x in ln for x in _NOISY_LOGGERS)][-n:])


def serve_bundled_skus(arm: FakeARM) -> CatalogRoutes:
    """Make the fake answer Resource SKUs with the plugin's bundled records of
    :data:`REGION` (three per page, so the SDK's paging runs)."""
    from karpenter_azure.catalogue import load_snapshot

    routes = catalog_routes(arm)
    with routes.lock:
        routes.skus = [sku.to_dict() for sku in load_snapshot(REGION).skus]
        routes.sku_page_size = 3
    return routes


class Azure(CloudWorld):
    """The cluster, the fake ARM, the node joiner and the ``karpenter serve`` processes."""

    provider = "azure"
    nodeclass_crd = "aksnodeclasses.karpenter.azure.com"
    nodeclass_api = AKSNODECLASS
    serve_class: ClassVar[type[Serve]] = AzureServe
    allowed_types = ALLOWED_TYPES
    log_note = ", SDK request logs left out"

    def __init__(self, cluster: Cluster, arm: FakeARM, workdir: Path) -> None:
        super().__init__(cluster, workdir)
        self.arm = arm
        self.joiner = NodeJoiner(arm, self.kube)
        self.catalog = serve_bundled_skus(arm)

    def env(self) -> dict[str, str]:
        """The settings upstream requires, and the fake's endpoints."""
        no_prices = f"{self.arm.url}/fake-retail-prices/api/retail/prices"
        return {
            **self.arm.env(),
            "LOCATION": REGION,
            "AZURE_SUBSCRIPTION_ID": SUBSCRIPTION,
            "CLUSTER_NAME": CLUSTER_NAME,
            "CLUSTER_ENDPOINT": self.cluster.cp.server,
            "KUBELET_BOOTSTRAP_TOKEN": BOOTSTRAP_TOKEN,
            "SSH_PUBLIC_KEY": SSH_PUBLIC_KEY,
            "VNET_SUBNET_ID": VNET_SUBNET_ID,
            "AZURE_NODE_RESOURCE_GROUP": NODE_RESOURCE_GROUP,
            "KUBERNETES_VERSION": KUBERNETES_VERSION,
            "AZURE_PRICING_ENDPOINT": no_prices,
            "AZURE_RETAIL_PRICES_ENDPOINT": no_prices,
        }

    def tail(self, s: Serve, n: int) -> str:
        return quiet_tail(s, n)

    # -- objects

    def apply_nodeclass(self, name: str, **spec: Any) -> None:
        """An AKSNodeClass (API defaults: Ubuntu, 128 GB OS disk, the setting's subnet);
        ``spec`` sets fields."""
        self.kube.create(
            {
                "apiVersion": "karpenter.azure.com/v1beta1",
                "kind": "AKSNodeClass",
                "metadata": {"name": name},
                "spec": dict(spec),
            }
        )

    # -- the fake's inventory (copies, read under its lock)

    def vms(self) -> dict[str, dict[str, Any]]:
        """Karpenter's VMs (tagged with a NodePool) by name."""
        return karpenters_vms(self.arm)

    def nics(self) -> dict[str, dict[str, Any]]:
        """Every NIC by name (the fake holds nothing but Karpenter's)."""
        with self.arm.lock:
            return {n: copy.deepcopy(nic) for n, nic in self.arm.nics.items()}

    def all_vm_names(self) -> set[str]:
        with self.arm.lock:
            return set(self.arm.vms)

    def report_cloud(self) -> None:
        with self.arm.lock:
            print(
                "--- VMs:",
                [(n, vm_size(vm), vm.get("zones"), vm_state(vm)) for n, vm in self.arm.vms.items()],
            )
            print("--- NICs:", sorted(self.arm.nics))


@pytest.fixture(name="fake_arm")
def fake_arm_fixture() -> Iterator[FakeARM]:
    """A fresh fake ARM server for one test. Its long-running operations ask for a 100 ms
    wait between polls (``retry-after-ms``), as ARM may, so the SDK's own polling period
    (seconds, when ARM names none) does not set the pace of every launch and deletion."""
    arm = FakeARM().start()
    arm.retry_after_ms = 100
    try:
        yield arm
    finally:
        arm.stop()


@pytest.fixture(name="azure")
def azure_fixture(cluster: Cluster, fake_arm: FakeARM, tmp_path: Path) -> Iterator[Azure]:
    """The Azure CRDs installed and the node joiner running; ``azure.serve()`` starts
    ``karpenter serve --cloud-provider azure`` against the fake."""
    yield from running(Azure(cluster, fake_arm, tmp_path))


def claims_by_vm(azure: Azure) -> dict[str, dict[str, Any]]:
    """Launched NodeClaims by the lower-cased name of their VM (from the provider id)."""
    return claims_by_machine(azure.cluster, lambda pid: pid.rsplit("/", 1)[-1].lower())
