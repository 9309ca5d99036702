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

Waits poll with generous deadlines and assert on state, never on how long something took.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import copy
import functools
import logging
import os
import re
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from serve_harness import APP_NS, WAIT, Cluster, Serve, wait_for

from karpenter_core.cli import main as cli_main
from karpenter_core.kube.client import AlreadyExists, ApiError, NotFound, create_with_status
from karpenter_core.plugins import cloud_providers, get_plugin_manager

FAKEARM_DIR = Path(__file__).resolve().parents[2] / "plugins" / "azure" / "tests"
if str(FAKEARM_DIR) not in sys.path:
    sys.path.insert(0, str(FAKEARM_DIR))

from fakearm import FakeARM  # noqa: E402 -- needs FAKEARM_DIR on sys.path
from fakearm_catalog import CatalogRoutes, catalog_routes  # noqa: E402 -- the same

log = logging.getLogger("azure_harness")

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
NODECLAIM = ("karpenter.sh/v1", "NodeClaim")
NODEPOOL_LABEL = "karpenter.sh/nodepool"
# Upstream's tag keys (pkg/providers/launchtemplate/tags.go): "/" becomes "_".
NODEPOOL_TAG = "karpenter.sh_nodepool"
CLUSTER_TAG = "karpenter.azure.com_cluster"
UNREGISTERED_TAINT = "karpenter.sh/unregistered"
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
    spec = cloud_providers(get_plugin_manager()).get("azure")
    return bool(spec is not None and spec.can_launch)


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


def node_for(vm: Mapping[str, Any], nodeclaim: Mapping[str, Any]) -> dict[str, Any]:
    """The Node the VM's kubelet registers.

    Labels: the NodeClaim's (``--node-labels`` in the customData), the kubelet's own (arch,
    os, hostname) and the cloud node manager's (instance type, zone, region) read from the
    VM. Taints: ``karpenter.sh/unregistered`` and the NodeClaim's taints and startup taints
    (``--register-with-taints``). Capacity and allocatable: the NodeClaim's status, what
    the instance type it was launched as reports.
    """
    name = node_name_of(vm)
    meta = nodeclaim.get("metadata") or {}
    spec = nodeclaim.get("spec") or {}
    status = nodeclaim.get("status") or {}
    labels = dict(meta.get("labels") or {})
    arch = labels.get("kubernetes.io/arch", "amd64")
    labels.update(
        {
            "kubernetes.io/arch": arch,
            "kubernetes.io/os": "linux",
            "kubernetes.io/hostname": name,
            "node.kubernetes.io/instance-type": vm_size(vm),
            "topology.kubernetes.io/zone": vm_zone(vm),
            "topology.kubernetes.io/region": str(vm.get("location") or REGION).lower(),
        }
    )
    pool = (vm.get("tags") or {}).get(NODEPOOL_TAG)
    if pool:
        labels[NODEPOOL_LABEL] = pool
    taints = [{"key": UNREGISTERED_TAINT, "effect": "NoExecute"}]
    taints += [dict(t) for t in spec.get("taints") or []]
    taints += [dict(t) for t in spec.get("startupTaints") or []]
    vm_id = str((vm.get("properties") or {}).get("vmId") or vm["name"])
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "spec": {"providerID": kubelet_provider_id(vm), "taints": taints},
        "status": {
            "capacity": dict(status.get("capacity") or {}),
            "allocatable": dict(status.get("allocatable") or status.get("capacity") or {}),
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "KubeletReady",
                    "message": "kubelet is posting ready status",
                }
            ],
            "addresses": [{"type": "Hostname", "address": name}],
            "nodeInfo": {
                "architecture": arch,
                "operatingSystem": "linux",
                "kubeletVersion": kubelet_version(vm),
                "machineID": vm_id,
                "systemUUID": vm_id,
                "bootID": vm_id,
                "kernelVersion": "",
                "osImage": "",
                "containerRuntimeVersion": "",
                "kubeProxyVersion": "",
            },
        },
    }


class NodeJoiner:
    """Plays the kubelets of Karpenter's VMs (see the module docstring).

    Each VM joins at most once: a kubelet registers when its machine boots, and a Node
    Karpenter deleted while deleting the VM must not come back. A VM joins once its create
    has succeeded (a VM left ``Failed`` by its create never boots) and its NodeClaim names
    it; until then it waits for the next poll. A joined VM that is gone from Azure takes
    its Node with it (the cloud node lifecycle controller's part).
    """

    def __init__(self, arm: FakeARM, kube: Any, interval: float = 0.25) -> None:
        self.arm = arm
        self.kube = kube
        self.interval = interval
        self.joined: dict[str, str] = {}  # VM name -> Node name
        self.removed: set[str] = set()  # VM names whose Node was deleted after the VM went
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _vms(self) -> dict[str, dict[str, Any]]:
        with self.arm.lock:
            return {
                name: copy.deepcopy(vm)
                for name, vm in self.arm.vms.items()
                if NODEPOOL_TAG in (vm.get("tags") or {})
            }

    def step(self) -> list[str]:
        """One poll: register the Nodes of succeeded VMs whose NodeClaim names them, delete
        the Nodes of joined VMs that are gone; the names of the Nodes created."""
        vms = self._vms()
        claims = {
            str((c.get("status") or {}).get("providerID")).lower(): c
            for c in self.kube.list(NODECLAIM).items
            if (c.get("status") or {}).get("providerID")
        }
        created = []
        for name, vm in sorted(vms.items()):
            if name in self.joined or vm_state(vm) != "Succeeded":
                continue
            claim = claims.get(kubelet_provider_id(vm).lower())
            if claim is None or claim["metadata"].get("deletionTimestamp"):
                continue
            node = node_for(vm, claim)
            with contextlib.suppress(AlreadyExists):
                create_with_status(self.kube, node)
                created.append(node["metadata"]["name"])
            self.joined[name] = node["metadata"]["name"]
        for name, node_name in self.joined.items():
            if name in vms or name in self.removed:
                continue
            with contextlib.suppress(NotFound):
                self.kube.delete("nodes", node_name)
            self.removed.add(name)
        return created

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.step()
            except Exception as e:  # keep joining: one failed poll is retried on the next
                self.errors.append(f"{type(e).__name__}: {e}")
                log.warning("node joiner: %s", e)

    def start(self) -> NodeJoiner:
        self._thread = threading.Thread(target=self._run, name="azure-node-joiner", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)


# --------------------------------------------------------------------------- serve


class AzureServe(Serve):
    """A ``karpenter serve`` subprocess whose environment holds none of the developer's own
    Azure credentials: ``DefaultAzureCredential`` must take the fake's managed identity."""

    def launch(self) -> AzureServe:
        saved = {k: os.environ.pop(k) for k in FOREIGN_CREDENTIAL_VARS if k in os.environ}
        try:
            super().launch()
        finally:
            os.environ.update(saved)
        return self


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


class Azure:
    """The cluster, the fake ARM, the node joiner and the ``karpenter serve`` processes."""

    def __init__(self, cluster: Cluster, arm: FakeARM, workdir: Path) -> None:
        self.cluster = cluster
        self.kube = cluster.kube
        self.arm = arm
        self.workdir = workdir
        self.joiner = NodeJoiner(arm, self.kube)
        self.started: list[Serve] = []
        self.catalog = serve_bundled_skus(arm)

    def install_crds(self) -> None:
        """The CRDs as users install them: ``karpenter crds --cloud-provider azure``."""
        result = CliRunner().invoke(cli_main, ["crds", "--cloud-provider", "azure"])
        assert result.exit_code == 0, result.output
        crds = [d for d in yaml.safe_load_all(result.stdout) if d]
        assert "aksnodeclasses.karpenter.azure.com" in {c["metadata"]["name"] for c in crds}
        for crd in crds:
            with contextlib.suppress(AlreadyExists):
                self.kube.create(crd)
        for crd in crds:
            name = crd["metadata"]["name"]
            wait_for(functools.partial(self.cluster._established, name), f"the CRD {name}")

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

    def serve(self, name: str = "a", *extra: str, env: Mapping[str, str] | None = None) -> Serve:
        """``karpenter serve --cloud-provider azure`` against the fake; ``env`` adds settings."""
        s = AzureServe(
            self.cluster,
            self.workdir,
            name,
            "--cloud-provider",
            "azure",
            *extra,
            env={**self.env(), **(env or {})},
        ).start()
        self.started.append(s)
        return s

    def wait(self, predicate: Callable[[], Any], what: str, deadline: float = WAIT) -> Any:
        """:func:`wait_for` that gives up at once, with the log, when a ``karpenter serve``
        this test started has exited (nothing it waits for can happen then)."""

        def check() -> Any:
            for s in self.started:
                if s.exited():
                    raise AssertionError(
                        f"karpenter serve exited while waiting for {what}; "
                        f"log:\n{quiet_tail(s, 30)}"
                    )
            return predicate()

        return wait_for(check, what, deadline)

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

    def apply_nodepool(
        self,
        name: str,
        nodeclass: str,
        *,
        types: tuple[str, ...] = ALLOWED_TYPES,
        zones: tuple[str, ...] | None = None,
        consolidation: str = "WhenEmpty",
    ) -> None:
        """An on-demand NodePool of ``types`` (in ``zones`` when given). It consolidates at
        once under ``consolidation`` (by default only empty nodes, so a test's snapshot of
        nodes and VMs is not raced by a replacement), any number of nodes at a time."""
        requirements: list[dict[str, Any]] = [
            {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": list(types)},
            {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
        ]
        if zones is not None:
            requirements.append(
                {"key": "topology.kubernetes.io/zone", "operator": "In", "values": list(zones)}
            )
        self.kube.create(
            {
                "apiVersion": "karpenter.sh/v1",
                "kind": "NodePool",
                "metadata": {"name": name},
                "spec": {
                    "template": {
                        "spec": {
                            "nodeClassRef": {
                                "group": "karpenter.azure.com",
                                "kind": "AKSNodeClass",
                                "name": nodeclass,
                            },
                            "requirements": requirements,
                        }
                    },
                    "disruption": {
                        "consolidationPolicy": consolidation,
                        "consolidateAfter": "0s",
                        "budgets": [{"nodes": "100%"}],
                    },
                    "limits": {"cpu": "1000"},
                },
            }
        )

    def apply_deployment(self, name: str, replicas: int, *, cpu: str = "500m") -> None:
        """Pause pods labelled ``app=<name>`` requesting ``cpu`` and 256Mi."""
        self.kube.create(
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": name, "namespace": APP_NS},
                "spec": {
                    "replicas": replicas,
                    "selector": {"matchLabels": {"app": name}},
                    "template": {
                        "metadata": {"labels": {"app": name}},
                        "spec": {
                            "terminationGracePeriodSeconds": 0,
                            "containers": [
                                {
                                    "name": "app",
                                    "image": "registry.k8s.io/pause:3.10",
                                    "resources": {"requests": {"cpu": cpu, "memory": "256Mi"}},
                                }
                            ],
                        },
                    },
                },
            }
        )

    def nodeclass(self, name: str) -> dict[str, Any]:
        return self.kube.get(AKSNODECLASS, name)

    # -- the fake's inventory (copies, read under its lock)

    def vms(self) -> dict[str, dict[str, Any]]:
        """Karpenter's VMs (tagged with a NodePool) by name."""
        with self.arm.lock:
            return {
                n: copy.deepcopy(vm)
                for n, vm in self.arm.vms.items()
                if NODEPOOL_TAG in (vm.get("tags") or {})
            }

    def nics(self) -> dict[str, dict[str, Any]]:
        """Every NIC by name (the fake holds nothing but Karpenter's)."""
        with self.arm.lock:
            return {n: copy.deepcopy(nic) for n, nic in self.arm.nics.items()}

    def all_vm_names(self) -> set[str]:
        with self.arm.lock:
            return set(self.arm.vms)

    def report(self) -> None:
        """Printed at teardown (pytest shows it when the test failed)."""
        for s in self.started:
            print(f"--- {s.log.name} (last lines, SDK request logs left out)\n{quiet_tail(s)}")
        if self.joiner.errors:
            print("--- node joiner errors:", self.joiner.errors[-10:])
        with contextlib.suppress(ApiError, OSError):
            print(
                "--- nodeclaims:",
                [
                    (c["metadata"]["name"], (c.get("status") or {}).get("providerID"))
                    for c in self.cluster.nodeclaims()
                ],
            )
        with contextlib.suppress(ApiError, OSError):
            for nc in self.kube.list(AKSNODECLASS).items:
                print(f"--- AKSNodeClass {nc['metadata']['name']} status:", nc.get("status"))
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
    env = Azure(cluster, fake_arm, tmp_path)
    env.install_crds()
    env.joiner.start()
    try:
        yield env
    finally:
        env.joiner.stop()
        for s in env.started:
            if not s.exited():
                s.kill9()
        env.report()


def claims_by_vm(azure: Azure) -> dict[str, dict[str, Any]]:
    """Launched NodeClaims by the lower-cased name of their VM (from the provider id)."""
    return {
        str(c["status"]["providerID"]).rsplit("/", 1)[-1].lower(): c
        for c in azure.cluster.nodeclaims()
        if (c.get("status") or {}).get("providerID")
    }
