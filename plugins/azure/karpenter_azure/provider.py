"""The Azure CloudProvider: one VM (and its NIC) per NodeClaim, shaped by an AKSNodeClass.

It wires the pieces together as upstream's ``pkg/cloudprovider`` does in its default
provision mode (``aksscriptless``):

- ``create``: resolve the NodeClaim's AKSNodeClass (missing or terminating ⇒
  ``InsufficientCapacityError`` and an event; ``Ready=False`` ⇒ ``NodeClassNotReadyError``;
  ``Ready`` unknown ⇒ ``CreateError("NodeClassReadinessUnknown")``), list its instance types,
  choose one offering (:mod:`karpenter_azure.allocation`: cheapest, spot first at equal
  price), render the launch template (image, customData bootstrap, tags, OS disk:
  :mod:`karpenter_azure.launchtemplate`) and create NIC + VM
  (:class:`~karpenter_azure.instance.VMProvider`, which cleans up after any failure and
  marks capacity errors on the offering). The NodeClaim it returns carries the instance
  type's labels, zone, capacity type, image and the drift-hash annotations.
- ``get`` / ``list`` / ``delete``: by provider id ``azure:///subscriptions/…/virtualMachines/
  <name>`` and by the cluster's tags (Resource Graph).
- ``get_instance_types``: the NodePool's AKSNodeClass's types from Resource SKUs and the
  retail prices API; without a cluster or without credentials (``karpenter instance-types
  --cloud-provider azure``) the bundled snapshot of the region.
- ``is_drifted``: the AKSNodeClass hash, the Kubernetes version (the Node's kubelet against
  ``status.kubernetesVersion``), the kubelet identity, the image (the NodeClaim's image
  against the images the class resolves now) and the subnet.
- ``repair_policies``: upstream's (Ready False/Unknown for 10 minutes, the AKS node-problem
  conditions at once).
"""

from __future__ import annotations

import base64
import builtins
import logging
import threading
from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import attrs

from karpenter_azure import drift
from karpenter_azure.allocation import Selection, select
from karpenter_azure.labels import (
    AKS_NODE_CLASS,
    LABEL_SKU_ACCELERATED_NETWORKING,
    LABEL_SKU_CPU,
    LABEL_SKU_FAMILY,
)
from karpenter_azure.nodeclass import AKSNodeClass, NodeClassError, get_nodeclass
from karpenter_azure.settings import AzureSettings
from karpenter_core.plugin_api import (
    ApiError,
    CreateError,
    DriftReason,
    InstanceType,
    NodeClaim,
    NodeClaimNotFoundError,
    NodeClassKind,
    NodePool,
    NotFound,
    RepairPolicy,
    Requirements,
    UnavailableOfferings,
    WallClock,
    as_nodeclaim,
    drift_nodeclass,
    instance_nodeclaim,
    launch_nodeclass,
    launch_preference,
    nodepool_nodeclass,
)
from karpenter_core.plugin_api import labels as wk
from karpenter_core.plugin_api import resources as res

if TYPE_CHECKING:
    from karpenter_azure.clients import AzureClients
    from karpenter_azure.instance import LaunchRequest, VMInstance, VMProvider
    from karpenter_azure.launchtemplate import LaunchTemplate
    from karpenter_core.plugin_api import Clock, EventRecorder, KubeClient

__all__ = ["NAME", "REPAIR_POLICIES", "AzureCloudProvider", "parse_provider_id"]

log = logging.getLogger("karpenter.azure")

NAME = "azure"
K8S_VERSION_DRIFT = "K8sVersionDrift"
IMAGE_DRIFT = "ImageDrift"
KUBELET_IDENTITY_DRIFT = "KubeletIdentityDrift"
SUBNET_DRIFT = "SubnetDrift"
KUBELET_IDENTITY_ANNOTATION = "karpenter.azure.com/kubelet-identity-client-id"
"""The kubelet identity a NodeClaim was launched with (upstream compares the Node's)."""

REPAIR_POLICIES: tuple[RepairPolicy, ...] = (
    RepairPolicy("Ready", "False", timedelta(minutes=10)),
    RepairPolicy("Ready", "Unknown", timedelta(minutes=10)),
    RepairPolicy("kubernetes.azure.com/NodeHealthy", "False", timedelta(0)),
    RepairPolicy("PreemptionScheduled", "True", timedelta(0)),
)
"""Upstream's node conditions that make an Azure node eligible for repair."""


class ClusterRequiredError(RuntimeError):
    """A call that needs the cluster (its AKSNodeClasses) on a provider built without one."""


def parse_provider_id(provider_id: str) -> str:
    """The VM name of ``azure:///subscriptions/…/virtualMachines/<name>``; ``ValueError``
    for anything else (a Node that is not an Azure VM, a scale-set instance...)."""
    prefix = "azure://"
    if not provider_id.startswith(prefix):
        raise ValueError(f"provider id {provider_id!r} is not an Azure VM (azure:///…)")
    parts = provider_id[len(prefix) :].strip("/").split("/")
    lowered = [p.lower() for p in parts]
    if (
        len(parts) != 8
        or lowered[0] != "subscriptions"
        or lowered[2] != "resourcegroups"
        or lowered[4] != "providers"
        or lowered[5] != "microsoft.compute"
        or lowered[6] != "virtualmachines"
        or not parts[7]
    ):
        raise ValueError(f"provider id {provider_id!r} is not an Azure VM resource id")
    return parts[7]


class AzureCloudProvider:
    """Azure VMs for Karpenter; see the module docstring."""

    def __init__(
        self,
        settings: AzureSettings,
        *,
        clients: AzureClients | None = None,
        kube: KubeClient | None = None,
        clock: Clock | None = None,
        recorder: EventRecorder | None = None,
        unavailable: UnavailableOfferings | None = None,
        catalogue: Any = None,
        vms: VMProvider | None = None,
    ) -> None:
        from karpenter_azure.sources import CatalogueSource

        self.settings = settings
        self.clients = clients
        self.kube = kube
        self.clock: Clock = clock or WallClock()
        self.recorder = recorder
        self.unavailable = unavailable or UnavailableOfferings(self.clock)
        self.catalogue = catalogue or CatalogueSource(
            settings, clients, self.clock, self.unavailable
        )
        if vms is None and clients is not None and settings.node_resource_group:
            from karpenter_azure.instance import VMProvider

            vms = VMProvider(
                clients, settings.node_resource_group, settings.region, self.unavailable
            )
        self.vms = vms
        self._lock = threading.Lock()
        self._ca: str | None = None
        self._launching: set[str] = set()

    def launching(self, resource_name: str) -> bool:
        """Whether a create of the VM/NIC named ``resource_name`` is in flight (its NIC
        exists before its VM: garbage collection must not take it)."""
        with self._lock:
            return resource_name.lower() in self._launching

    @property
    def name(self) -> str:
        return NAME

    # ------------------------------------------------------------------ launching

    def create(self, nodeclaim: NodeClaim) -> NodeClaim:
        """Launch a VM for ``nodeclaim`` (see the module docstring)."""
        nc = as_nodeclaim(nodeclaim)
        vms = self._require_vms("create")
        nodeclass = self._launch_nodeclass(nc)
        try:
            reqs = Requirements.from_node_selector_requirements(nc.spec.requirements)
            requests = res.parse_resource_list(
                nc.spec.resources.requests if nc.spec.resources is not None else None
            )
        except ValueError as e:
            raise CreateError(f"nodeclaim {nc.name!r}: {e}", "InvalidNodeClaim", str(e)) from e
        try:
            types = list(self.catalogue.instance_types(nodeclass))
        except Exception as e:
            raise CreateError(
                f"resolving instance types, {e}",
                "InstanceTypeResolutionFailed",
                "Error resolving instance types",
            ) from e
        selection = select(
            types, reqs, requests, preference=launch_preference(nc.metadata.annotations)
        )
        template = self._launch_template(nc, nodeclass, selection)
        request = self._launch_request(nc, nodeclass, selection, template, types)
        with self._lock:
            self._launching.add(request.name.lower())
        try:
            vm = vms.create(request)
        finally:
            with self._lock:
                self._launching.discard(request.name.lower())
        out = self._to_nodeclaim(vm, selection.instance_type)
        annotations = {
            **out.metadata.annotations,
            **drift.hash_annotations(nodeclass),
            KUBELET_IDENTITY_ANNOTATION: self.settings.kubelet_identity_client_id,
            SUBNET_ANNOTATION: template.subnet_id,
        }
        return attrs.evolve(out, metadata=attrs.evolve(out.metadata, annotations=annotations))

    def _launch_nodeclass(self, nc: NodeClaim) -> AKSNodeClass:
        return launch_nodeclass(
            self._require_kube("create"),
            nc,
            get_nodeclass,
            kind=AKS_NODE_CLASS.kind,
            malformed=NodeClassError,
            recorder=self.recorder,
        )

    def _launch_template(
        self, nc: NodeClaim, nodeclass: AKSNodeClass, selection: Selection
    ) -> LaunchTemplate:
        import os

        from karpenter_azure import launchtemplate

        s = self.settings
        try:
            return launchtemplate.build(
                nodeclass=nodeclass,
                nodeclaim=nc,
                instance_type=selection.instance_type,
                zone=selection.zone,
                capacity_type=selection.capacity_type,
                images=nodeclass.images,
                node_image_version=s.node_image_version,
                kubernetes_version=nodeclass.kubernetes_version or s.kubernetes_version,
                cluster_name=s.cluster_name,
                cluster_endpoint=s.cluster_endpoint,
                ca_bundle=self._ca_bundle(),
                bootstrap_token=s.kubelet_bootstrap_token,
                network_plugin=s.network_plugin,
                network_plugin_mode=s.network_plugin_mode,
                network_policy=s.network_policy,
                network_dataplane=s.network_dataplane,
                dns_service_ip=s.dns_service_ip,
                kubelet_identity_client_id=s.kubelet_identity_client_id,
                subnet_id=nodeclass.vnet_subnet_id or s.vnet_subnet_id,
                node_resource_group=s.node_resource_group,
                subscription_id=s.subscription_id,
                tenant_id=(
                    os.environ.get("AZURE_TENANT_ID") or os.environ.get("ARM_TENANT_ID") or ""
                ).strip(),
                location=s.region,
                vnet_guid=s.vnet_guid,
                additional_tags=s.additional_tags,
                sku_capabilities=self.catalogue.capabilities(selection.instance_type.name),
                admin_username=s.linux_admin_username,
            )
        except launchtemplate.LaunchTemplateError as e:
            raise CreateError(
                f"getting launch template: {e}", "LaunchTemplateFailed", str(e)
            ) from e

    def _launch_request(
        self,
        nc: NodeClaim,
        nodeclass: AKSNodeClass,
        selection: Selection,
        template: LaunchTemplate,
        types: Sequence[InstanceType],
    ) -> LaunchRequest:
        from karpenter_azure.azerrors import FamilyMember, OfferingRef
        from karpenter_azure.instance import LaunchRequest, resource_name

        s = self.settings
        it = selection.instance_type
        family = _label(it, LABEL_SKU_FAMILY)
        security = nodeclass.spec.get("security") or {}
        trusted = security.get("trustedLaunch") or {}
        return LaunchRequest(
            name=resource_name(nc.name or ""),
            location=s.region,
            resource_group=s.node_resource_group,
            sku=it.name,
            zone=selection.zone,
            capacity_type=selection.capacity_type,
            subnet_id=template.subnet_id,
            image_id=template.image_id,
            custom_data=template.custom_data,
            tags=template.tags,
            os_disk_size_gb=template.os_disk_size_gb,
            ephemeral_os_disk=template.ephemeral_os_disk,
            ephemeral_placement=template.ephemeral_os_disk_placement or "ResourceDisk",
            admin_username=s.linux_admin_username,
            ssh_public_key=s.ssh_public_key,
            node_identities=s.node_identities,
            accelerated_networking=_label(it, LABEL_SKU_ACCELERATED_NETWORKING) == "true",
            use_sig=s.use_sig,
            encryption_at_host=nodeclass.encryption_at_host or None,
            trusted_launch=nodeclass.trusted_launch,
            secure_boot=trusted.get("secureBoot") is True,
            vtpm=trusted.get("vtpm") is True,
            secondary_ips=(
                template.max_pods - 1
                if s.network_plugin == "azure" and s.network_plugin_mode != "overlay"
                else 0
            ),
            offerings=[OfferingRef(o.zone, o.capacity_type) for o in it.offerings],
            vcpus=int(_label(it, LABEL_SKU_CPU) or 0),
            family=[
                FamilyMember(t.name, int(_label(t, LABEL_SKU_CPU) or 0))
                for t in types
                if family and _label(t, LABEL_SKU_FAMILY) == family
            ],
        )

    def _ca_bundle(self) -> str:
        """The cluster CA (base64) nodes verify the API server with: the setting, else the
        kube client's own CA file."""
        if self.settings.cluster_ca_bundle:
            return self.settings.cluster_ca_bundle
        with self._lock:
            if self._ca is not None:
                return self._ca
        ca = ""
        path = getattr(self.kube, "ca_file", None) if self.kube is not None else None
        if isinstance(path, str) and path:
            try:
                with open(path, "rb") as f:
                    ca = base64.b64encode(f.read()).decode()
            except OSError as e:
                log.warning("azure: cannot read the cluster CA %s: %s", path, e)
        with self._lock:
            self._ca = ca
        return ca

    # ------------------------------------------------------------------ instances

    def delete(self, nodeclaim: NodeClaim) -> None:
        """Delete the NodeClaim's VM and NIC; NodeClaimNotFoundError once both are gone."""
        nc = as_nodeclaim(nodeclaim)
        vms = self._require_vms("delete")
        provider_id = nc.status.provider_id if nc.status is not None else None
        try:
            name = parse_provider_id(provider_id or "")
        except ValueError as e:
            raise NodeClaimNotFoundError(e) from e
        vms.delete(name)

    def get(self, provider_id: str) -> NodeClaim:
        """The NodeClaim view of the live VM ``provider_id``."""
        vms = self._require_vms("get")
        try:
            name = parse_provider_id(provider_id)
        except ValueError as e:
            raise NodeClaimNotFoundError(e) from e
        vm = vms.get(name)
        return self._to_nodeclaim(vm, self._type_of(vm, {}))

    def list(self) -> builtins.list[NodeClaim]:
        """Every VM this cluster's Karpenter launched (by tag), as NodeClaims."""
        vms = self._require_vms("list")
        cache: dict[str, Sequence[InstanceType]] = {}
        return [self._to_nodeclaim(vm, self._type_of(vm, cache)) for vm in vms.list()]

    def _type_of(
        self, vm: VMInstance, cache: dict[str, Sequence[InstanceType]]
    ) -> InstanceType | None:
        from karpenter_azure.instance import NODECLASS_TAG

        name = vm.tags.get(NODECLASS_TAG, "")
        if name not in cache:
            nodeclass = None
            if name and self.kube is not None:
                try:
                    nodeclass = get_nodeclass(self.kube, name)
                except (NodeClassError, ApiError) as e:
                    log.warning(
                        "vm %s: cannot read its %s %r: %s", vm.name, AKS_NODE_CLASS.kind, name, e
                    )
            try:
                cache[name] = list(self.catalogue.instance_types(nodeclass))
            except Exception as e:
                log.warning("vm %s: instance types unavailable: %s", vm.name, e)
                cache[name] = []
        return next((t for t in cache[name] if t.name.lower() == vm.sku.lower()), None)

    def _to_nodeclaim(self, vm: VMInstance, it: InstanceType | None) -> NodeClaim:
        return vm_to_nodeclaim(vm, it, now=self.clock.now())

    # ------------------------------------------------------------------ catalogue

    def get_instance_types(self, nodepool: NodePool | None) -> builtins.list[InstanceType]:
        """The NodePool's AKSNodeClass's types; without a cluster, the default view."""
        if self.kube is None or nodepool is None:
            return list(self.catalogue.instance_types(None))
        nodeclass = nodepool_nodeclass(
            self.kube,
            nodepool,
            get_nodeclass,
            kind=AKS_NODE_CLASS.kind,
            malformed=NodeClassError,
            recorder=self.recorder,
            log=log,
        )
        return list(self.catalogue.instance_types(nodeclass)) if nodeclass is not None else []

    # ------------------------------------------------------------------ drift / repair

    def is_drifted(self, nodeclaim: NodeClaim) -> DriftReason:
        """Upstream's checks in its order, first hit wins; then the subnet."""
        nc = as_nodeclaim(nodeclaim)
        nodeclass = self._nodeclass_for_drift(nc)
        if nodeclass is None:
            return ""
        static = drift.static_drift(nc.metadata.annotations, nodeclass)
        if static:
            return static
        node = self._node_of(nc)
        expected = nodeclass.kubernetes_version
        if node is not None and expected and nodeclass.condition("KubernetesVersionReady"):
            kubelet = str(
                ((node.get("status") or {}).get("nodeInfo") or {}).get("kubeletVersion") or ""
            )
            if kubelet and kubelet.removeprefix("v") != expected.removeprefix("v"):
                return K8S_VERSION_DRIFT
        launched_identity = nc.metadata.annotations.get(KUBELET_IDENTITY_ANNOTATION)
        if (
            launched_identity is not None
            and self.settings.kubelet_identity_client_id
            and launched_identity != self.settings.kubelet_identity_client_id
        ):
            return KUBELET_IDENTITY_DRIFT
        image = (nc.status.image_id if nc.status is not None else None) or ""
        if (
            image
            and nodeclass.images
            and not any(_same_image(image, str(i.get("id") or "")) for i in nodeclass.images)
        ):
            return IMAGE_DRIFT
        wanted_subnet = nodeclass.vnet_subnet_id or self.settings.vnet_subnet_id
        launched_subnet = nc.metadata.annotations.get(SUBNET_ANNOTATION)
        if launched_subnet and wanted_subnet and launched_subnet.lower() != wanted_subnet.lower():
            return SUBNET_DRIFT
        return ""

    def _nodeclass_for_drift(self, nc: NodeClaim) -> AKSNodeClass | None:
        found = drift_nodeclass(self.kube, nc, get_nodeclass, malformed=NodeClassError, log=log)
        return found[1] if found is not None else None

    def _node_of(self, nc: NodeClaim) -> Mapping[str, Any] | None:
        node_name = nc.status.node_name if nc.status is not None else None
        if not node_name or self.kube is None:
            return None
        try:
            return self.kube.get("nodes", node_name)
        except NotFound:
            return None

    def repair_policies(self) -> Sequence[RepairPolicy]:
        return REPAIR_POLICIES

    def supported_node_classes(self) -> Sequence[NodeClassKind]:
        return (AKS_NODE_CLASS,)

    # ------------------------------------------------------------------ helpers

    def _require_kube(self, operation: str) -> KubeClient:
        if self.kube is None:
            raise ClusterRequiredError(
                f"the {NAME} cloud provider needs a cluster client for {operation}(): it was "
                "built without one; only the instance-type catalogue is available"
            )
        return self.kube

    def _require_vms(self, operation: str) -> VMProvider:
        if self.vms is None:
            raise ClusterRequiredError(
                f"the {NAME} cloud provider cannot {operation}() VMs: it was built for the "
                "catalogue only (no Azure credentials, subscription or node resource group)"
            )
        return self.vms


SUBNET_ANNOTATION = "karpenter.azure.com/subnet-id"
"""The subnet a NodeClaim's NIC was created in (compared for subnet drift)."""


def _same_image(launched: str, wanted: str) -> bool:
    """Image ids compare case-insensitively; a ``…/versions/latest`` image resolved at
    launch matches any version of the same definition."""
    a, b = launched.lower(), wanted.lower()
    if a == b:
        return True
    if b.endswith("/versions/latest"):
        return a.rsplit("/versions/", 1)[0] == b.rsplit("/versions/", 1)[0]
    return False


def _label(it: InstanceType, key: str) -> str:
    """The instance type's single value for ``key`` ("" when it has none or several)."""
    if not it.requirements.has(key):
        return ""
    req = it.requirements.get(key)
    return next(iter(req.values)) if not req.complement and len(req.values) == 1 else ""


def vm_to_nodeclaim(vm: VMInstance, it: InstanceType | None, *, now: Any) -> NodeClaim:
    """The NodeClaim view of a VM: the type's single-valued requirements as labels plus
    zone, capacity type and NodePool (its tag); capacity/allocatable from the type; a VM
    being deleted gets a deletion timestamp of ``now``."""
    from karpenter_azure.instance import NODEPOOL_TAG, nodeclaim_name

    labels: dict[str, str] = {}
    if vm.zone:
        labels[wk.LABEL_TOPOLOGY_ZONE] = vm.zone
    labels[wk.CAPACITY_TYPE_LABEL_KEY] = vm.capacity_type
    if NODEPOOL_TAG in vm.tags:
        labels[wk.NODEPOOL_LABEL_KEY] = vm.tags[NODEPOOL_TAG]
    return instance_nodeclaim(
        it,
        name=nodeclaim_name(vm.name) or None,
        defaults={wk.LABEL_INSTANCE_TYPE: vm.sku},
        labels=labels,
        provider_id=vm.provider_id,
        image_id=vm.image_id or None,
        created=vm.created,
        deleting_since=now if vm.deleting else None,
    )
