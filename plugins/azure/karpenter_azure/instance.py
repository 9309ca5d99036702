"""Azure VMs for NodeClaims: create (NIC + VM + billing extension), get, list, delete.

Upstream's default provision mode, ``aksscriptless`` (``pkg/providers/instance/
vminstance.go``), gives each node two ARM resources named after the NodeClaim,
``aks-<nodeclaim>``: a network interface in the AKS subnet and a virtual machine using it,
whose ``customData`` carries the node's whole bootstrap. In the clouds that support it
(public, China, US Government) the VM then gets the ``computeAksLinuxBilling`` extension
that identifies it as an AKS node for billing. Each step is an ARM long-running operation
polled to the end (``Retry-After`` honoured, else every ``poll_interval`` seconds).

A launch is all or nothing: if any step fails, whatever was created is deleted (VM first,
which takes its NIC and OS disk with it, then the NIC if it is still there) before the
error is raised, so no failure path leaks a NIC or a VM. Capacity errors (see
:mod:`karpenter_azure.azerrors`) mark offerings unavailable and raise
``InsufficientCapacityError``; anything else raises a one-line ``CreateError`` whose
reason is the ARM error code.

Listing uses Resource Graph, as upstream does: one query for the resource group's VMs (and
one for NICs) carrying Karpenter's NodePool tag, following ``$skipToken`` pages. The
provider id is ``azure://`` + the VM's ARM id with the resource group lower-cased, as the
Azure cloud provider writes it on the Node.

A NIC create that names a deleted load-balancer backend pool is retried once with pools
from the ``refresh_backend_pools`` callback (upstream ``lberrors.go``). ``update_tags``
propagates tag changes to the NIC, extension and VM (upstream ``Update``). A VM that
already exists under the node's name (Karpenter restarted mid-launch) is adopted, not
re-created.

Not implemented here: the ``bootstrappingclient`` and AKS-machine-API modes (the custom
script extension, AKS machines), listing the load balancers' backend pools and the
managed NSG (callers pass their ids), launch metrics, and upstream's asynchronous create
(this ``create`` returns once the VM and its extension exist).
"""

from __future__ import annotations

import builtins
import datetime as dt
import logging
import re
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from attrs import evolve, field, frozen

from karpenter_azure.azerrors import (
    FamilyMember,
    OfferingRef,
    Target,
    classify_create_error,
    create_error,
    describe,
    is_missing_backend_pool,
    is_not_found,
    is_regional_zone,
    one_line,
)
from karpenter_azure.clients import AzureClients
from karpenter_azure.labels import LABEL_SKU_CPU, LABEL_SKU_FAMILY
from karpenter_core.plugin_api import (
    CreateError,
    InstanceType,
    InsufficientCapacityError,
    NodeClaimNotFoundError,
    UnavailableOfferings,
)

__all__ = [
    "AKS_BILLING_EXTENSION",
    "AKS_MACHINE_NODECLAIM_TAG",
    "BILLING_TAG",
    "BILLING_TAG_LINUX",
    "CLUSTER_TAG",
    "NODECLAIM_TAG",
    "NODECLASS_TAG",
    "NODEPOOL_TAG",
    "REGIONAL_ZONE",
    "AzureAPIError",
    "LaunchRequest",
    "NICInstance",
    "VMInstance",
    "VMProvider",
    "capacity_context",
    "launch_tags",
    "nic_list_query",
    "nodeclaim_name",
    "offering_refs",
    "provider_id",
    "resource_name",
    "vm_list_query",
    "vm_name_from_provider_id",
    "zone_label",
]

log = logging.getLogger("karpenter.azure.instance")

# Tag keys (upstream pkg/providers/launchtemplate/tags.go): ARM tag keys cannot hold "/",
# so Karpenter's label keys appear with "_".
NODEPOOL_TAG = "karpenter.sh_nodepool"
CLUSTER_TAG = "karpenter.azure.com_cluster"
AKS_MACHINE_NODECLAIM_TAG = "karpenter.azure.com_aksmachine_nodeclaim"
BILLING_TAG = "compute.aks.billing"
BILLING_TAG_LINUX = "linux"
# Not upstream's (it derives the NodeClaim from the VM name, :func:`nodeclaim_name`, and
# has no NodeClass tag); read when present so callers that add them can use them.
NODECLAIM_TAG = "karpenter.sh_nodeclaim"
NODECLASS_TAG = "karpenter.azure.com_aksnodeclass"

AKS_BILLING_EXTENSION = "computeAksLinuxBilling"
_BILLING_PUBLISHER = "Microsoft.AKS"
_BILLING_TYPE = "Compute.AKS.Linux.Billing"
# Clouds where upstream adds the billing extension (its aksIdentifyingExtensionEnvs).
_BILLING_CLOUDS = frozenset({"azurepubliccloud", "azurechinacloud", "azureusgovernmentcloud"})

_VM_TYPE = "microsoft.compute/virtualmachines"
_NIC_TYPE = "microsoft.network/networkinterfaces"
_RG_IN_ID = re.compile(r"(/resourceGroups/)([^/]+)(/)", re.IGNORECASE)
_PROVIDER_ID = re.compile(
    r"^azure:///subscriptions/[^/]+/resourceGroups/[^/]+/providers/"
    r"Microsoft\.Compute/virtualMachines/(?P<name>[^/]+)$",
    re.IGNORECASE,
)


REGIONAL_ZONE = "0"
"""The zone label of a VM without an availability zone (its fault domain, always 0 for a
standalone VM), as the Azure cloud provider labels such Nodes."""


def zone_label(zone: str, location: str) -> str:
    """A zone as its label: ``1`` in ``westus2`` → ``westus2-1``; labels pass through,
    regional ("" or "0") stays as given."""
    if is_regional_zone(zone) or "-" in zone:
        return zone
    return f"{location.lower()}-{zone}"


class AzureAPIError(RuntimeError):
    """An ARM call failed for a reason that is neither "not found" nor a launch error
    (throttled past retries, unauthorized, ARM unreachable...); one line."""


# ---------------------------------------------------------------------------- helpers


def resource_name(nodeclaim_name: str) -> str:
    """The VM and NIC name of a NodeClaim (upstream ``GenerateResourceName``)."""
    return f"aks-{nodeclaim_name}"


def nodeclaim_name(vm_name: str) -> str:
    """The NodeClaim a VM was made for (upstream ``GetNodeClaimNameFromVMName``)."""
    return vm_name.removeprefix("aks-")


def provider_id(arm_id: str) -> str:
    """The Node provider id of a VM: ``azure://`` + its ARM id, resource group lower-cased
    (as the Azure cloud provider sets it, for historical reasons)."""
    return "azure://" + _RG_IN_ID.sub(lambda m: m[1] + m[2].lower() + m[3], arm_id, count=1)


def vm_name_from_provider_id(pid: str) -> str:
    """The VM name of an ``azure:///subscriptions/.../virtualMachines/<name>`` provider id;
    ``ValueError`` naming the id otherwise."""
    m = _PROVIDER_ID.match(pid or "")
    if m is None:
        raise ValueError(
            f"provider id {pid!r} is not of the form "
            "azure:///subscriptions/<sub>/resourceGroups/<rg>/providers/"
            "Microsoft.Compute/virtualMachines/<name>"
        )
    return m["name"]


def launch_tags(
    cluster_name: str,
    nodepool: str,
    nodeclass_tags: Mapping[str, str] | None = None,
    additional_tags: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The tags of a node's resources (upstream ``launchtemplate.Tags``): the operator's
    additional tags, then the AKSNodeClass's, then Karpenter's own (which win); every key
    with "/" replaced by "_" first, so ``karpenter.azure.com/cluster`` collides with, and
    loses to, ``karpenter.azure.com_cluster``."""

    def mapped(tags: Mapping[str, str] | None) -> dict[str, str]:
        return {k.replace("/", "_"): v for k, v in (tags or {}).items()}

    own = {CLUSTER_TAG: cluster_name, BILLING_TAG: BILLING_TAG_LINUX}
    if nodepool:
        own[NODEPOOL_TAG] = nodepool
    return {**mapped(additional_tags), **mapped(nodeclass_tags), **mapped(own)}


def _kql_string(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _list_query(resource_group: str, resource_type: str) -> str:
    # ARG reports resource groups in lower case.
    return (
        f"Resources | where type == {_kql_string(resource_type)}"
        f" | where resourceGroup == {_kql_string(resource_group.lower())}"
        f" | where tags has_cs {_kql_string(NODEPOOL_TAG)}"
        f" | where not(tags has_cs {_kql_string(AKS_MACHINE_NODECLAIM_TAG)})"
    )


def vm_list_query(resource_group: str) -> str:
    """Upstream's Resource Graph query for Karpenter's VMs in ``resource_group`` (tagged
    with the NodePool, not created through the AKS machine API)."""
    return _list_query(resource_group, _VM_TYPE)


def nic_list_query(resource_group: str) -> str:
    """The same query for network interfaces."""
    return _list_query(resource_group, _NIC_TYPE)


def _arm_zones(zone: str) -> list[str]:
    """ARM ``zones`` of a zone label: ``westus2-1`` → ``["1"]``; regional → ``[]``."""
    if is_regional_zone(zone):
        return []
    return [zone.rsplit("-", 1)[-1]]


def _lower_last_segment(arm_id: str) -> str:
    head, _, last = arm_id.rpartition("/")
    return f"{head}/{last.lower()}" if head else arm_id.lower()


def _parse_time(value: Any) -> dt.datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)


def _image_ref_string(ref: Mapping[str, Any]) -> str:
    """An image reference as one string (upstream ``ImageReferenceToString``)."""
    for key in ("id", "communityGalleryImageId", "sharedGalleryImageId"):
        if ref.get(key):
            return str(ref[key])
    parts = [ref.get(k) for k in ("publisher", "offer", "sku", "version")]
    return ":".join(str(p) for p in parts) if all(parts) else ""


def _image_reference(image_id: str, use_sig: bool | None) -> dict[str, str]:
    """Upstream ``setImageReference``: a shared image gallery (SIG) image is referenced by
    ``id``, a community gallery image by ``communityGalleryImageId``. ``use_sig`` None
    decides from the id's form."""
    if use_sig is None:
        use_sig = not image_id.lower().startswith("/communitygalleries/")
    return {"id": image_id} if use_sig else {"communityGalleryImageId": image_id}


# ---------------------------------------------------------------------------- values


def _tags(value: Mapping[str, str]) -> Mapping[str, str]:
    return dict(value)


def _strs(value: Iterable[str]) -> tuple[str, ...]:
    return tuple(value)


def _offerings(value: Iterable[OfferingRef]) -> tuple[OfferingRef, ...]:
    return tuple(value)


def _family(value: Iterable[FamilyMember]) -> tuple[FamilyMember, ...]:
    return tuple(value)


@frozen
class LaunchRequest:
    """Everything one node's NIC and VM need (the launch template, resolved).

    ``zone`` is the zone label (``westus2-1``; a bare ARM zone ``1`` is read in
    ``location``), "" or "0" for a regional VM. ``offerings``,
    ``vcpus`` and ``family`` describe the size for capacity-error marking (every zone of a
    placement, larger sizes of the family); without them only the attempted offering is
    marked. ``secondary_ips`` is Azure CNI (non-overlay) pod IPs: max pods - 1.
    """

    name: str
    sku: str
    zone: str
    capacity_type: str
    subnet_id: str
    image_id: str
    custom_data: str
    tags: Mapping[str, str] = field(factory=dict, converter=_tags)
    location: str = ""
    resource_group: str = ""
    admin_username: str = "azureuser"
    ssh_public_key: str = ""
    node_identities: tuple[str, ...] = field(default=(), converter=_strs)
    os_disk_size_gb: int | None = None
    ephemeral_os_disk: bool = False
    ephemeral_placement: str = "ResourceDisk"
    accelerated_networking: bool = False
    use_sig: bool | None = None
    disk_encryption_set_id: str = ""
    encryption_at_host: bool | None = None
    trusted_launch: bool = False
    secure_boot: bool = False
    vtpm: bool = False
    ultra_ssd: bool = False
    backend_pool_ids: tuple[str, ...] = field(default=(), converter=_strs)
    network_security_group_id: str = ""
    secondary_ips: int = 0
    offerings: tuple[OfferingRef, ...] = field(default=(), converter=_offerings)
    vcpus: int = 0
    family: tuple[FamilyMember, ...] = field(default=(), converter=_family)

    def __attrs_post_init__(self) -> None:
        if self.capacity_type not in ("spot", "on-demand"):
            raise ValueError(f"capacity type {self.capacity_type!r} is not spot or on-demand")
        if not self.name or not self.sku:
            raise ValueError("a launch needs a resource name and a VM size")


@frozen
class VMInstance:
    """What Karpenter needs of one VM (from a GET or a Resource Graph row).

    ``zone`` is the zone label (``westus2-1``), ``"0"`` for a regional VM (upstream's
    ``MakeAKSLabelZoneFromVM``: the Node's topology label is the fault domain, 0).
    """

    name: str
    id: str
    sku: str
    zone: str
    capacity_type: str
    tags: Mapping[str, str] = field(factory=dict, converter=_tags)
    provisioning_state: str = ""
    image_id: str = ""
    location: str = ""
    created: dt.datetime | None = None
    nic_ids: tuple[str, ...] = field(default=(), converter=_strs)

    @property
    def provider_id(self) -> str:
        return provider_id(self.id)

    @property
    def deleting(self) -> bool:
        return self.provisioning_state.lower() == "deleting"

    @classmethod
    def from_arm(cls, d: Mapping[str, Any]) -> VMInstance:
        """From ARM JSON (GET body or Resource Graph row). ``ValueError`` when the id,
        name or tags are missing (upstream rejects such rows too)."""
        if not d.get("id") or not d.get("name"):
            raise ValueError("virtual machine is missing id or name")
        if d.get("tags") is None:
            raise ValueError(f"virtual machine {d.get('name')} is missing tags")
        props = d.get("properties") or {}
        location = str(d.get("location") or "")
        zones = d.get("zones") or []
        priority = str(props.get("priority") or "Regular")
        storage = props.get("storageProfile") or {}
        nics = ((props.get("networkProfile") or {}).get("networkInterfaces")) or []
        return cls(
            name=str(d["name"]),
            id=str(d["id"]),
            sku=str((props.get("hardwareProfile") or {}).get("vmSize") or ""),
            zone=f"{location.lower()}-{zones[0]}" if zones and location else REGIONAL_ZONE,
            capacity_type="spot" if priority.lower() in ("spot", "low") else "on-demand",
            tags={str(k): str(v) for k, v in (d.get("tags") or {}).items()},
            provisioning_state=str(props.get("provisioningState") or ""),
            image_id=_image_ref_string(storage.get("imageReference") or {}),
            location=location,
            created=_parse_time(props.get("timeCreated")),
            nic_ids=tuple(str(n.get("id")) for n in nics if n.get("id")),
        )


@frozen
class NICInstance:
    """A network interface Karpenter created (for garbage collection of orphans)."""

    name: str
    id: str
    tags: Mapping[str, str] = field(factory=dict, converter=_tags)
    vm_id: str = ""
    provisioning_state: str = ""

    @classmethod
    def from_arm(cls, d: Mapping[str, Any]) -> NICInstance:
        if not d.get("id") or not d.get("name"):
            raise ValueError("network interface is missing id or name")
        props = d.get("properties") or {}
        return cls(
            name=str(d["name"]),
            id=str(d["id"]),
            tags={str(k): str(v) for k, v in (d.get("tags") or {}).items()},
            vm_id=str((props.get("virtualMachine") or {}).get("id") or ""),
            provisioning_state=str(props.get("provisioningState") or ""),
        )


def _unauthorized(what: str, err: BaseException) -> CreateError:
    """A launch refused for credentials: the token could not be obtained, or ARM
    rejected it. Retrying helps only once the identity or its role assignment is fixed."""
    return CreateError(
        f"{what}: {one_line(str(err), 300)}",
        "Unauthorized",
        "ARM credentials were rejected or are unavailable",
    )


def _raw_json(pipeline_response: Any, _deserialized: Any, _headers: Any) -> Any:
    """SDK ``cls`` hook: the response's JSON, so GETs and Resource Graph rows parse alike."""
    return pipeline_response.http_response.json()


# ---------------------------------------------------------------------------- provider


class VMProvider:
    """Creates, finds and deletes this cluster's VMs and NICs in one resource group."""

    def __init__(
        self,
        clients: AzureClients,
        resource_group: str,
        location: str,
        unavailable: UnavailableOfferings,
        *,
        poll_interval: float = 3.0,
        billing_extension: bool | None = None,
        refresh_backend_pools: Callable[[tuple[str, ...]], Sequence[str]] | None = None,
        wall: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.UTC),
    ) -> None:
        """``poll_interval`` is the LRO polling period when ARM sends no ``Retry-After``
        (upstream polls every 3 s rather than the SDK's 30 s). ``billing_extension`` None
        adds the AKS billing extension in the clouds upstream adds it in.
        ``refresh_backend_pools`` (given the stale pool ids, returns current ones) lets a
        NIC create that names a deleted load-balancer backend pool be retried once with
        fresh pools, as upstream does."""
        self._clients = clients
        self.resource_group = resource_group
        self.location = location
        self._unavailable = unavailable
        self._poll = poll_interval
        if billing_extension is None:
            billing_extension = clients.environment.name.lower() in _BILLING_CLOUDS
        self.billing_extension = billing_extension
        self._refresh_pools = refresh_backend_pools
        self._wall = wall
        self._deleting: set[str] = set()
        self._deleting_lock = threading.Lock()

    @property
    def _compute(self) -> Any:
        return self._clients.compute

    @property
    def _network(self) -> Any:
        return self._clients.network

    def _vm_id(self, rg: str, name: str) -> str:
        return (
            f"/subscriptions/{self._clients.subscription_id}/resourceGroups/{rg}"
            f"/providers/Microsoft.Compute/virtualMachines/{name}"
        )

    # ------------------------------------------------------------------ bodies

    def nic_body(self, r: LaunchRequest) -> dict[str, Any]:
        """The NIC as upstream builds it: one primary dynamic IP configuration in the
        subnet (named after the NIC, in the load balancers' backend pools), accelerated
        networking when the size supports it, no IP forwarding, the node's tags."""
        primary: dict[str, Any] = {
            "name": r.name,
            "properties": {
                "primary": True,
                "privateIPAllocationMethod": "Dynamic",
                "subnet": {"id": r.subnet_id},
            },
        }
        if r.backend_pool_ids:
            primary["properties"]["loadBalancerBackendAddressPools"] = [
                {"id": pool} for pool in r.backend_pool_ids
            ]
        configs = [primary]
        for i in range(1, r.secondary_ips + 1):
            configs.append(
                {
                    "name": f"ipconfig{i}",
                    "properties": {
                        "primary": False,
                        "privateIPAllocationMethod": "Dynamic",
                        "subnet": {"id": r.subnet_id},
                    },
                }
            )
        props: dict[str, Any] = {
            "ipConfigurations": configs,
            "enableAcceleratedNetworking": r.accelerated_networking,
            "enableIPForwarding": False,
        }
        if r.network_security_group_id:
            props["networkSecurityGroup"] = {"id": r.network_security_group_id}
        return {"location": r.location or self.location, "tags": dict(r.tags), "properties": props}

    def vm_body(self, r: LaunchRequest, nic_id: str) -> dict[str, Any]:
        """The VM as upstream's ``newVMObject`` builds it for a Linux node."""
        os_disk: dict[str, Any] = {
            "name": r.name,
            "createOption": "FromImage",
            "deleteOption": "Delete",
        }
        if r.os_disk_size_gb is not None:
            os_disk["diskSizeGB"] = r.os_disk_size_gb
        if r.ephemeral_os_disk:
            os_disk["diffDiskSettings"] = {"option": "Local", "placement": r.ephemeral_placement}
            os_disk["caching"] = "ReadOnly"
        if r.disk_encryption_set_id:
            os_disk["managedDisk"] = {"diskEncryptionSet": {"id": r.disk_encryption_set_id}}
        props: dict[str, Any] = {
            "hardwareProfile": {"vmSize": r.sku},
            "storageProfile": {
                "imageReference": _image_reference(r.image_id, r.use_sig),
                "osDisk": os_disk,
            },
            "networkProfile": {
                "networkInterfaces": [
                    {"id": nic_id, "properties": {"primary": True, "deleteOption": "Delete"}}
                ]
            },
            "osProfile": {
                "adminUsername": r.admin_username,
                "computerName": r.name,
                "customData": r.custom_data,
                "linuxConfiguration": {
                    "disablePasswordAuthentication": True,
                    "ssh": {
                        "publicKeys": [
                            {
                                "keyData": r.ssh_public_key,
                                "path": f"/home/{r.admin_username}/.ssh/authorized_keys",
                            }
                        ]
                    },
                },
            },
            "priority": "Spot" if r.capacity_type == "spot" else "Regular",
        }
        if r.capacity_type == "spot":
            props["evictionPolicy"] = "Delete"
            props["billingProfile"] = {"maxPrice": -1}
        security: dict[str, Any] = {}
        if r.encryption_at_host is not None:
            security["encryptionAtHost"] = r.encryption_at_host
        if r.trusted_launch:
            security["securityType"] = "TrustedLaunch"
            security["uefiSettings"] = {"secureBootEnabled": r.secure_boot, "vTpmEnabled": r.vtpm}
        if security:
            props["securityProfile"] = security
        if r.ultra_ssd:
            props["additionalCapabilities"] = {"ultraSSDEnabled": True}
        body: dict[str, Any] = {
            "location": r.location or self.location,
            "properties": props,
            "zones": _arm_zones(r.zone),
            "tags": dict(r.tags),
        }
        if r.node_identities:
            body["identity"] = {
                "type": "UserAssigned",
                "userAssignedIdentities": {i: {} for i in r.node_identities},
            }
        return body

    def billing_extension_body(self, r: LaunchRequest) -> dict[str, Any]:
        """Upstream's AKS identifying (billing) extension."""
        return {
            "location": r.location or self.location,
            "tags": dict(r.tags),
            "properties": {
                "publisher": _BILLING_PUBLISHER,
                "type": _BILLING_TYPE,
                "typeHandlerVersion": "1.0",
                "autoUpgradeMinorVersion": True,
                "settings": {},
            },
        }

    # ------------------------------------------------------------------ create

    def create(self, request: LaunchRequest) -> VMInstance:
        """Create the node's NIC, VM and billing extension and wait for each; on any
        failure delete what was created, then raise (see the module docstring)."""
        rg = request.resource_group or self.resource_group
        target = Target(
            sku=request.sku,
            zone=zone_label(request.zone, request.location or self.location),
            capacity_type=request.capacity_type,
            offerings=request.offerings,
            vcpus=request.vcpus,
            family=request.family,
            subnet_id=request.subnet_id,
        )
        try:
            return self._create(request, rg, target)
        except Exception as e:
            self._cleanup(rg, request.name)
            if isinstance(e, InsufficientCapacityError | CreateError):
                raise
            raise create_error(f"creating VM {request.name}", e) from e

    def _create(self, r: LaunchRequest, rg: str, target: Target) -> VMInstance:
        from azure.core.exceptions import ClientAuthenticationError, HttpResponseError

        try:
            existing = self._compute.virtual_machines.get(rg, r.name, cls=_raw_json)
        except ClientAuthenticationError as e:
            raise _unauthorized(f"getting VM {r.name}", e) from e
        except HttpResponseError as e:
            if not is_not_found(e):
                raise create_error(f"getting VM {r.name}", e) from e
            existing = None
        if existing is not None:
            # A previous run created it (Karpenter restarted mid-launch): keep it, as
            # upstream does, rather than fail on properties that cannot change.
            log.info("VM %s already exists; adopting it", r.name)
            return VMInstance.from_arm(existing)

        try:
            nic = self._create_nic(r, rg)
        except ClientAuthenticationError as e:
            raise _unauthorized(f"creating NIC {r.name}", e) from e
        except HttpResponseError as e:
            ice = classify_create_error(e, target, self._unavailable)
            if ice is not None:
                raise ice from e
            raise create_error(f"creating NIC {r.name}", e) from e
        nic_id = str(nic.get("id") or "")
        log.debug("created network interface %s", nic_id)

        body = self.vm_body(r, nic_id)
        try:
            vm = self._compute.virtual_machines.begin_create_or_update(
                rg, r.name, body, polling_interval=self._poll, cls=_raw_json
            ).result()
        except ClientAuthenticationError as e:
            raise _unauthorized(f"creating VM {r.name}", e) from e
        except HttpResponseError as e:
            ice = classify_create_error(e, target, self._unavailable)
            if ice is not None:
                log.info(
                    "VM %s (%s %s %s) failed for capacity: %s",
                    r.name,
                    r.sku,
                    r.zone or "regional",
                    r.capacity_type,
                    describe(e),
                )
                raise ice from e
            raise create_error(f"creating VM {r.name}", e) from e

        if self.billing_extension:
            try:
                self._compute.virtual_machine_extensions.begin_create_or_update(
                    rg,
                    r.name,
                    AKS_BILLING_EXTENSION,
                    self.billing_extension_body(r),
                    polling_interval=self._poll,
                ).result()
            except HttpResponseError as e:
                raise create_error(
                    f"creating VM extension {AKS_BILLING_EXTENSION} for VM {r.name}", e
                ) from e

        if not isinstance(vm, Mapping) or not vm.get("id"):
            vm = {**body, "id": self._vm_id(rg, r.name), "name": r.name}
        instance = VMInstance.from_arm(vm)
        if instance.created is None:
            instance = evolve(instance, created=self._wall())
        log.info(
            "launched VM %s type=%s zone=%s capacity-type=%s",
            instance.id,
            instance.sku,
            instance.zone or "regional",
            instance.capacity_type,
        )
        return instance

    def _create_nic(self, r: LaunchRequest, rg: str) -> Any:
        """PUT the NIC and wait; once more with refreshed backend pools when ARM says a
        submitted pool no longer exists (and a refresher was given)."""
        from azure.core.exceptions import HttpResponseError

        def put(request: LaunchRequest) -> Any:
            return self._network.network_interfaces.begin_create_or_update(
                rg, request.name, self.nic_body(request), polling_interval=self._poll, cls=_raw_json
            ).result()

        try:
            return put(r)
        except HttpResponseError as e:
            if self._refresh_pools is None or not is_missing_backend_pool(e, r.backend_pool_ids):
                raise
            log.info("NIC %s names a stale backend pool; refreshing pools: %s", r.name, describe(e))
        try:
            pools = tuple(self._refresh_pools(r.backend_pool_ids))
        except Exception as e:
            raise CreateError(
                f"refreshing backend pools after NIC {r.name} failed: {one_line(str(e), 300)}",
                "BackendPoolRefreshFailed",
                "refreshing the load balancer backend pools failed",
            ) from e
        return put(evolve(r, backend_pool_ids=pools))

    def _cleanup(self, rg: str, name: str) -> None:
        """Delete the VM (if any) then the NIC (if any) after a failed launch; problems
        are logged, not raised (the launch error matters more, and GC catches leftovers)."""
        try:
            self._delete_vm_if_exists(rg, name)
        except Exception as e:
            log.error("cleanup of VM %s failed: %s", name, describe(e))
        try:
            self._delete_nic_if_exists(rg, name)
        except Exception as e:
            log.error("cleanup of NIC %s failed: %s", name, describe(e))

    # ------------------------------------------------------------------ find / delete

    def get(self, vm_name: str) -> VMInstance:
        """The VM ``vm_name``; ``NodeClaimNotFoundError`` when ARM does not know it."""
        from azure.core.exceptions import AzureError

        try:
            d = self._compute.virtual_machines.get(self.resource_group, vm_name, cls=_raw_json)
        except AzureError as e:
            if is_not_found(e):
                raise NodeClaimNotFoundError(f"VM {vm_name} not found") from e
            raise AzureAPIError(f"getting VM {vm_name}: {describe(e)}") from e
        return VMInstance.from_arm(d)

    def _query(self, query: str) -> builtins.list[dict[str, Any]]:
        """Every row of a Resource Graph query, following ``$skipToken`` pages."""
        from azure.core.exceptions import AzureError
        from azure.mgmt.resourcegraph.models import QueryRequest, QueryRequestOptions

        rows: builtins.list[dict[str, Any]] = []
        token: str | None = None
        while True:
            req = QueryRequest(
                subscriptions=[self._clients.subscription_id],
                query=query,
                options=QueryRequestOptions(result_format="objectArray", skip_token=token),
            )
            try:
                resp = self._clients.resource_graph.resources(req)
            except AzureError as e:
                raise AzureAPIError(f"querying Azure Resource Graph: {describe(e)}") from e
            data = resp.data
            if not isinstance(data, list):
                raise AzureAPIError("Azure Resource Graph answered rows that are not a list")
            rows.extend(d for d in data if isinstance(d, dict))
            token = resp.skip_token
            if not token:
                return rows

    def list(self) -> builtins.list[VMInstance]:
        """Every Karpenter VM of the resource group (Resource Graph, all pages). IDs get
        their last segment lower-cased: Resource Graph's casing of it varies."""
        out = []
        for row in self._query(vm_list_query(self.resource_group)):
            row = {**row, "id": _lower_last_segment(str(row.get("id") or ""))}
            out.append(VMInstance.from_arm(row))
        return out

    def list_nics(self) -> builtins.list[NICInstance]:
        """Every Karpenter NIC of the resource group (for orphan garbage collection)."""
        out = []
        for row in self._query(nic_list_query(self.resource_group)):
            row = {**row, "id": _lower_last_segment(str(row.get("id") or ""))}
            out.append(NICInstance.from_arm(row))
        return out

    def delete(self, vm_name: str) -> None:
        """Force-delete the VM and wait, then delete its NIC if still there.
        ``NodeClaimNotFoundError`` when the VM does not exist (its NIC, if any, is deleted
        first); a VM already being deleted (by ARM, or by another call of this provider
        still waiting for it) is left to finish, as upstream does."""
        with self._deleting_lock:
            if vm_name in self._deleting:
                return
            self._deleting.add(vm_name)
        try:
            try:
                vm = self.get(vm_name)
            except NodeClaimNotFoundError:
                self._delete_nic_if_exists(self.resource_group, vm_name)
                raise
            if vm.deleting:
                return
            self._delete_vm_if_exists(self.resource_group, vm_name)
            try:
                self._delete_nic_if_exists(self.resource_group, vm_name)
            except AzureAPIError as e:
                # The NIC may still be detaching; the NIC garbage collector retries.
                log.warning("%s", e)
        finally:
            with self._deleting_lock:
                self._deleting.discard(vm_name)

    def update_tags(self, vm_name: str, tags: Mapping[str, str]) -> None:
        """Replace the tags of a node's NIC, Karpenter's extensions and VM, in that order
        (upstream ``Update``: the VM last, so a partial failure is retried rather than
        looking done). A missing billing extension is skipped (a launch may have been cut
        short before it); a missing VM or NIC is ``NodeClaimNotFoundError``."""
        from azure.core.exceptions import AzureError

        rg = self.resource_group
        payload = {"tags": dict(tags)}

        def call(what: str, fn: Callable[[], Any]) -> bool:
            try:
                fn()
            except AzureError as e:
                if is_not_found(e):
                    return False
                raise AzureAPIError(f"updating tags of {what}: {describe(e)}") from e
            return True

        if not call(
            f"NIC {vm_name}",
            lambda: self._network.network_interfaces.update_tags(rg, vm_name, payload),
        ):
            raise NodeClaimNotFoundError(f"NIC {vm_name} not found")
        for ext in self.managed_extension_names():

            def update_extension(name: str = ext) -> Any:
                return self._compute.virtual_machine_extensions.begin_update(
                    rg, vm_name, name, payload, polling_interval=self._poll
                ).result()

            if not call(f"VM extension {ext} of {vm_name}", update_extension):
                log.info("extension %s of VM %s not found when updating tags", ext, vm_name)
        if not call(
            f"VM {vm_name}",
            lambda: self._compute.virtual_machines.begin_update(
                rg, vm_name, payload, polling_interval=self._poll
            ).result(),
        ):
            raise NodeClaimNotFoundError(f"VM {vm_name} not found")

    def managed_extension_names(self) -> builtins.list[str]:
        """The VM extensions Karpenter manages (upstream ``GetManagedExtensionNames`` for
        the scriptless mode): the billing extension where it is added."""
        return [AKS_BILLING_EXTENSION] if self.billing_extension else []

    def delete_nic(self, nic_name: str) -> None:
        """Delete a NIC if it exists (no error when it does not)."""
        self._delete_nic_if_exists(self.resource_group, nic_name)

    def _delete_vm_if_exists(self, rg: str, name: str) -> None:
        from azure.core.exceptions import AzureError

        try:
            self._compute.virtual_machines.get(rg, name, cls=_raw_json)
        except AzureError as e:
            if is_not_found(e):
                return
            raise AzureAPIError(f"getting VM {name}: {describe(e)}") from e
        try:
            self._compute.virtual_machines.begin_delete(
                rg, name, force_deletion=True, polling_interval=self._poll
            ).result()
        except AzureError as e:
            if is_not_found(e):
                return
            raise AzureAPIError(f"deleting VM {name}: {describe(e)}") from e
        log.debug("deleted VM %s", name)

    def _delete_nic_if_exists(self, rg: str, name: str) -> None:
        from azure.core.exceptions import AzureError

        try:
            self._network.network_interfaces.get(rg, name, cls=_raw_json)
        except AzureError as e:
            if is_not_found(e):
                return
            raise AzureAPIError(f"getting NIC {name}: {describe(e)}") from e
        try:
            self._network.network_interfaces.begin_delete(
                rg, name, polling_interval=self._poll
            ).result()
        except AzureError as e:
            if is_not_found(e):
                return
            raise AzureAPIError(f"deleting NIC {name}: {describe(e)}") from e
        log.debug("deleted NIC %s", name)


def offering_refs(pairs: Sequence[tuple[str, str]]) -> tuple[OfferingRef, ...]:
    """``OfferingRef``s from (zone, capacity type) pairs."""
    return tuple(OfferingRef(zone, ct) for zone, ct in pairs)


def _single(it: InstanceType, key: str) -> str:
    req = it.requirements.get(key)
    if req.complement or len(req.values) != 1:
        return ""
    return next(iter(req.values))


def _vcpus(it: InstanceType) -> int:
    try:
        return int(_single(it, LABEL_SKU_CPU) or 0)
    except ValueError:
        return 0


def capacity_context(
    instance_type: InstanceType, candidates: Iterable[InstanceType] = ()
) -> dict[str, Any]:
    """The ``offerings``, ``vcpus`` and ``family`` fields of a :class:`LaunchRequest` for
    ``instance_type``: every offering of the type (so a capacity error can mark all zones
    of a placement) and the ``candidates`` of its VM family (``karpenter.azure.com/
    sku-family``) with their vCPUs (``sku-cpu``), so larger sizes are marked too."""
    family = _single(instance_type, LABEL_SKU_FAMILY)
    members = tuple(
        FamilyMember(c.name, _vcpus(c))
        for c in candidates
        if family and _single(c, LABEL_SKU_FAMILY) == family
    )
    return {
        "offerings": tuple(OfferingRef(o.zone, o.capacity_type) for o in instance_type.offerings),
        "vcpus": _vcpus(instance_type),
        "family": members,
    }
