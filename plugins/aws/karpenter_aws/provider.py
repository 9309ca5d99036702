"""The AWS CloudProvider: EC2 instances for NodeClaims, shaped by EC2NodeClasses.

It wires the pieces together the way upstream's ``pkg/cloudprovider`` does:

- ``create``: resolve the NodeClaim's EC2NodeClass (missing or terminating ⇒
  ``InsufficientCapacityError``; ``Ready=False`` or a status older than the spec ⇒
  ``NodeClassNotReadyError``; ``Ready`` unknown ⇒ ``CreateError("NodeClassReadinessUnknown")``),
  list its instance types (:mod:`karpenter_aws.instancetypes`), and launch through
  :class:`~karpenter_aws.instance.InstanceProvider` with the class's subnets (one per zone,
  in status order: most free addresses first), security groups, AMIs, instance profile,
  user data and tags. The returned NodeClaim carries the drift-hash annotations.
- ``get``/``list``/``delete``: by provider id ``aws:///<zone>/<id>`` and by tags; ``get``
  answers from the instance cache, drift and tagging look EC2 up afresh (as upstream).
- ``get_instance_types``: the NodePool's EC2NodeClass's types (``[]`` and an event when the
  class is missing). Without a cluster (``karpenter instance-types``) a default view: every
  zone of the region, AL2023.
- ``is_drifted``: :mod:`karpenter_aws.drift`.
- its controllers (the EC2NodeClass status controller, interruption handling, a
  catalogue/price refresh every 12 hours and ``nodeclaim.tagging``, which gives an
  instance whose Node registered the ``Name`` tag) are registered through the plugin's
  ``karpenter_controllers`` hook (:mod:`karpenter_aws.controllers`).

The cluster endpoint, CA bundle and service CIDR the user data needs come from the
settings, else from ``eks:DescribeCluster`` (once, retried until it succeeds); the cluster
DNS address from the ``kube-system/kube-dns`` Service when a cluster client is given.
"""

from __future__ import annotations

import builtins
import contextlib
import logging
import threading
from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import attrs
from botocore.exceptions import BotoCoreError, ClientError  # type: ignore[import-untyped]

from karpenter_aws import drift
from karpenter_aws.capacityreservation import CapacityReservationProvider
from karpenter_aws.clients import AWSClients
from karpenter_aws.instance import (
    AMI,
    NODECLAIM_TAG,
    NODECLASS_TAG,
    Instance,
    InstanceProvider,
    LaunchRequest,
    TagError,
    instance_to_nodeclaim,
    launch_tags,
    parse_instance_id,
)
from karpenter_aws.labels import (
    EC2_NODE_CLASS,
    LABEL_CAPACITY_RESERVATION_ID,
    LABEL_CAPACITY_RESERVATION_INTERRUPTIBLE,
    LABEL_CAPACITY_RESERVATION_TYPE,
    LABEL_INSTANCE_TENANCY,
    LABEL_PLACEMENT_GROUP_ID,
    LABEL_PLACEMENT_GROUP_PARTITION,
)
from karpenter_aws.launchtemplate import (
    EKS_CLUSTER_NAME_TAG,
    MetadataOptions,
    TemplateInputs,
    block_device_from,
    metadata_options_from,
)
from karpenter_aws.network import IP_FAMILY_IPV6, Interfaces, ip_family
from karpenter_aws.nodeclass import (
    HASH_ANNOTATION,
    HASH_VERSION,
    HASH_VERSION_ANNOTATION,
    EC2NodeClass,
    NodeClassError,
    SubnetStatus,
    get_nodeclass,
)
from karpenter_aws.placementgroup import PlacementGroup, PlacementGroupProvider
from karpenter_aws.settings import AWSSettings
from karpenter_aws.userdata import Taint, UserDataOptions
from karpenter_core.plugin_api import (
    ApiError,
    CreateError,
    DriftReason,
    InstanceType,
    NodeClaim,
    NodeClaimNotFoundError,
    NodeClassKind,
    NodeClassNotReadyError,
    NodePool,
    NotFound,
    ObjectKey,
    RepairPolicy,
    Requirements,
    Result,
    UnavailableOfferings,
    WallClock,
    Watch,
    as_nodeclaim,
    drift_nodeclass,
    launch_nodeclass,
    launch_preference,
    nodepool_nodeclass,
    register_reservation_labels,
)
from karpenter_core.plugin_api import labels as wk
from karpenter_core.plugin_api import resources as res

if TYPE_CHECKING:
    from karpenter_core.plugin_api import Clock, EventRecorder, KubeClient

__all__ = ["NAME", "REPAIR_POLICIES", "AWSCloudProvider", "CatalogueUnavailableError"]

log = logging.getLogger("karpenter.aws")

NAME = "aws"
UNREGISTERED_TAINT = Taint(wk.UNREGISTERED_TAINT_KEY, "NoExecute")
INSTANCE_PROFILE_ANNOTATION = "karpenter.k8s.aws/instance-profile-name"
"""The instance profile a NodeClaim was launched with (upstream records it too)."""
TAGGING_CONTROLLER = "nodeclaim.tagging"
TAGGED_ANNOTATION = "karpenter.k8s.aws/tagged"
CLUSTER_NAME_TAGGED_ANNOTATION = "compatibility.karpenter.k8s.aws/cluster-name-tagged"
_NODECLAIMS = ("karpenter.sh/v1", "NodeClaim")
CLUSTER_INFO_RETRY = 300.0
REFRESH_INTERVAL = 12 * 3600.0
REFRESH_RETRY = 300.0
DEFAULT_FAMILY = "AL2023"

REPAIR_POLICIES: tuple[RepairPolicy, ...] = (
    RepairPolicy("Ready", "False", timedelta(minutes=30)),
    RepairPolicy("Ready", "Unknown", timedelta(minutes=30)),
    RepairPolicy("AcceleratedHardwareReady", "False", timedelta(minutes=10)),
    RepairPolicy("StorageReady", "False", timedelta(minutes=30)),
    RepairPolicy("NetworkingReady", "False", timedelta(minutes=30)),
    RepairPolicy("KernelReady", "False", timedelta(minutes=30)),
    RepairPolicy("ContainerRuntimeReady", "False", timedelta(minutes=30)),
)
"""Upstream's node conditions that make an AWS node eligible for repair (spec §1.6)."""


class CatalogueUnavailableError(ValueError):
    """The instance-type catalogue could not be read from EC2 (reachability, permissions).

    A ValueError so the CLI reports it in one line."""


class ClusterRequiredError(RuntimeError):
    """A call that needs the cluster (the EC2NodeClass) on a provider built without one."""


class AWSCloudProvider:
    """EC2 for Karpenter; see the module docstring."""

    def __init__(
        self,
        clients: AWSClients,
        settings: AWSSettings,
        kube: KubeClient | None = None,
        clock: Clock | None = None,
        recorder: EventRecorder | None = None,
        *,
        unavailable: UnavailableOfferings | None = None,
        pricing: Any = None,
        instance_types: Any = None,
        instances: InstanceProvider | None = None,
        node_classes: Sequence[Mapping[str, Any]] = (),
    ) -> None:
        self.clients = clients
        # EC2NodeClass manifests by name, for listing without a cluster (``schedule -f``)
        self.offline_nodeclasses: dict[str, Mapping[str, Any]] = {
            str((m.get("metadata") or {}).get("name") or ""): m
            for m in node_classes
            if m.get("kind") == EC2_NODE_CLASS.kind
        }
        self.settings = settings
        self.kube = kube
        self.clock: Clock = clock or WallClock()
        self.recorder = recorder
        # not `or`: an empty cache is falsy (it has a length), and must still be the one shared
        self.unavailable = (
            unavailable if unavailable is not None else UnavailableOfferings(self.clock)
        )
        if pricing is None:
            from karpenter_aws.pricing import PricingProvider

            pricing = PricingProvider(clients, settings, self.clock)
        self.pricing = pricing
        # selected by nodeclass.status, read by reserved offerings, counted by launches
        self.reservations = CapacityReservationProvider(clients.ec2, self.clock)
        # resolved by nodeclass.status, read by offerings, launches and drift
        self.placement_groups = PlacementGroupProvider(clients.ec2, self.clock)
        register_reservation_labels(
            LABEL_CAPACITY_RESERVATION_ID,
            (LABEL_CAPACITY_RESERVATION_TYPE, LABEL_CAPACITY_RESERVATION_INTERRUPTIBLE),
        )
        if instance_types is None:
            from karpenter_aws.instancetypes import InstanceTypeProvider

            instance_types = InstanceTypeProvider(
                clients,
                settings,
                self.pricing,
                self.unavailable,
                self.clock,
                reservations=self.reservations,
                placement_groups=self.placement_groups,
            )
        self.instance_types = instance_types
        self.instances = instances or InstanceProvider(
            clients.ec2, settings.cluster_name, self.unavailable, wall=self.clock.now
        )
        if self.instances.reservations is None:
            self.instances.reservations = self.reservations
        if getattr(self.instance_types, "reservations", False) is None:
            self.instance_types.reservations = self.reservations
        if getattr(self.instance_types, "placement_groups", False) is None:
            self.instance_types.placement_groups = self.placement_groups
        self._lock = threading.Lock()
        self._cluster: dict[str, str] | None = None
        self._cluster_partial: tuple[dict[str, str], float] | None = None
        self._cluster_dns: tuple[str, ...] | None = None
        self._priced = kube is not None  # with a cluster the refresh controller prices

    @property
    def name(self) -> str:
        return NAME

    # ------------------------------------------------------------------ launching

    def create(self, nodeclaim: NodeClaim) -> NodeClaim:
        """Launch an EC2 instance for ``nodeclaim`` (see the module docstring)."""
        nc = as_nodeclaim(nodeclaim)
        nodeclass = self._launch_nodeclass(nc)
        nodepool = nc.metadata.labels.get(wk.NODEPOOL_LABEL_KEY, "")
        try:
            tags = launch_tags(self.settings.cluster_name, nodeclass.name, nodeclass.tags, nodepool)
        except TagError as e:
            raise NodeClassNotReadyError(e) from e
        cluster = self._cluster_info()
        if nodeclass.ami_family == "AL2023" and not cluster["cidr"]:
            # nodeadm refuses a NodeConfig without the service CIDR: the node would never join.
            raise CreateError(
                f"resolving cluster CIDR: eks:DescribeCluster on {self.settings.cluster_name!r} "
                "gave no service CIDR, which AL2023 nodes (nodeadm) need",
                "ClusterCIDRUnknown",
                "the cluster's service CIDR could not be discovered",
            )
        try:
            types = list(self.instance_types.list(nodeclass))
        except Exception as e:
            raise CreateError(
                f"resolving instance types, {e}",
                "InstanceTypeResolutionFailed",
                "Error resolving instance types",
            ) from e
        request = self._launch_request(nc, nodeclass, types, tags, cluster)
        instance = self.instances.create(request)
        if instance.reservation_id:
            self.reservations.mark_launched(instance.reservation_id, instance.launch_time)
        it = next((t for t in types if t.name == instance.instance_type), None)
        out = self._to_nodeclaim(instance, it, nodeclass)
        annotations = {
            **out.metadata.annotations,
            HASH_ANNOTATION: self._hash(nodeclass),
            HASH_VERSION_ANNOTATION: HASH_VERSION,
            INSTANCE_PROFILE_ANNOTATION: nodeclass.instance_profile_name,
        }
        return attrs.evolve(out, metadata=attrs.evolve(out.metadata, annotations=annotations))

    def _launch_nodeclass(self, nc: NodeClaim) -> EC2NodeClass:
        return launch_nodeclass(
            self._require_kube("create"),
            nc,
            get_nodeclass,
            kind=EC2_NODE_CLASS.kind,
            malformed=NodeClassError,
            recorder=self.recorder,
            on_unknown=_not_reconciled,
        )

    def _launch_request(
        self,
        nc: NodeClaim,
        nodeclass: EC2NodeClass,
        types: Sequence[InstanceType],
        tags: Mapping[str, str],
        cluster: Mapping[str, str],
    ) -> LaunchRequest:
        if not nodeclass.security_groups:
            raise NodeClassNotReadyError("no security groups are present in the status")
        if not nodeclass.instance_profile_name:
            raise NodeClassNotReadyError("no instance profile is present in the status")
        try:
            reqs = Requirements.from_node_selector_requirements(nc.spec.requirements)
            requests = res.parse_resource_list(
                nc.spec.resources.requests if nc.spec.resources is not None else None
            )
        except ValueError as e:
            raise CreateError(f"nodeclaim {nc.name!r}: {e}", "InvalidNodeClaim", str(e)) from e
        kubelet = nodeclass.kubelet
        taints = [UNREGISTERED_TAINT]
        for t in (*nc.spec.taints, *nc.spec.startup_taints):
            taints.append(Taint(t.key, t.effect, t.value or ""))
        cluster_dns = kubelet.cluster_dns or self._kube_dns()
        selector = nodeclass.placement_group_selector
        group = self.placement_groups.get(selector)
        if group is None and selector is not None:
            # never launch outside the group the class names (a Ready status written
            # before a restart, the group deleted since): wait until it resolves again
            named = selector.name or selector.id
            raise NodeClassNotReadyError(f"placement group {named!r} is not resolved")
        partition = _target_partition(reqs, group)
        user_data = UserDataOptions(
            cluster_name=self.settings.cluster_name,
            cluster_endpoint=cluster["endpoint"],
            ca_bundle=cluster["ca"],
            cluster_cidr=cluster["cidr"],
            cluster_dns=cluster_dns,
            max_pods=kubelet.max_pods,
            pods_per_core=kubelet.pods_per_core,
            kube_reserved=kubelet.kube_reserved,
            system_reserved=kubelet.system_reserved,
            eviction_hard=kubelet.eviction_hard,
            labels={
                **nc.metadata.labels,
                EC2_NODE_CLASS.label_key: nodeclass.name,
            },
            taints=tuple(taints),
            custom_user_data=nodeclass.user_data,
            instance_store_policy=nodeclass.instance_store_policy,
        )
        template = TemplateInputs(
            family=nodeclass.ami_family,
            instance_profile=nodeclass.instance_profile_name,
            security_group_ids=tuple(sg.id for sg in nodeclass.security_groups),
            user_data=user_data,
            tags=tags,
            block_devices=tuple(block_device_from(b) for b in nodeclass.block_device_mappings),
            metadata_options=_metadata_options(nodeclass, cluster_dns),
            associate_public_ip=nodeclass.associate_public_ip,
            detailed_monitoring=nodeclass.detailed_monitoring,
            tenancy=_tenancy(reqs),
            network=Interfaces.of(
                [sg.id for sg in nodeclass.security_groups],
                associate_public_ip=nodeclass.associate_public_ip,
                cluster_dns=cluster_dns,
                ip_prefix_count=nodeclass.ip_prefix_count,
                connection_tracking=nodeclass.connection_tracking,
                configured=nodeclass.network_interfaces,
            ),
            nested_virtualization=nodeclass.nested_virtualization,
            placement_group=(group.id, int(partition or 0)) if group is not None else None,
        )
        return LaunchRequest(
            nodeclaim_name=nc.name or "",
            requirements=reqs,
            instance_types=types,
            subnets=_subnet_per_zone(nodeclass.subnets, self.unavailable),
            amis=_amis(nodeclass),
            template=template,
            # not the NodeClaim's name: nodeclaim.tagging adds it, so that the launches
            # of one NodePool make equal CreateFleet requests, which can be merged
            tags=tags,
            requests=requests,
            # upstream drops the fleet Context when the scheduler relaxed minValues
            context=None
            if nc.metadata.annotations.get(wk.NODECLAIM_MIN_VALUES_RELAXED_ANNOTATION_KEY) == "true"
            else nodeclass.context,
            placement_group_id=group.id if group is not None else "",
            placement_group_partition=partition,
            preference=launch_preference(nc.metadata.annotations),
        )

    def _cluster_info(self) -> dict[str, str]:
        """Endpoint, CA bundle and service CIDR: settings first, then DescribeCluster."""
        with self._lock:
            if self._cluster is not None:
                return self._cluster
            partial = self._cluster_partial
            if partial is not None and self.clock.monotonic() < partial[1]:
                return partial[0]
        info = {
            "endpoint": self.settings.cluster_endpoint,
            "ca": self.settings.cluster_ca_bundle,
            "cidr": "",
        }
        try:
            cluster = self.clients.eks.describe_cluster(name=self.settings.cluster_name)["cluster"]
        except (ClientError, BotoCoreError) as e:
            if not info["endpoint"]:
                raise CreateError(
                    f"no cluster endpoint: set cluster-endpoint (CLUSTER_ENDPOINT) or allow "
                    f"eks:DescribeCluster on {self.settings.cluster_name!r}: {e}",
                    "ClusterEndpointUnknown",
                    "the cluster endpoint is neither set nor discoverable",
                ) from e
            log.warning(
                "eks:DescribeCluster failed (%s); launching without the service CIDR, "
                "retrying in %ds",
                e,
                CLUSTER_INFO_RETRY,
            )
            cluster = {}
        info["endpoint"] = info["endpoint"] or str(cluster.get("endpoint") or "")
        info["ca"] = info["ca"] or str(
            (cluster.get("certificateAuthority") or {}).get("data") or ""
        )
        network = cluster.get("kubernetesNetworkConfig") or {}
        info["cidr"] = str(network.get("serviceIpv4Cidr") or network.get("serviceIpv6Cidr") or "")
        if not info["endpoint"]:
            raise CreateError(
                f"eks:DescribeCluster returned no endpoint for {self.settings.cluster_name!r}",
                "ClusterEndpointUnknown",
                "the cluster endpoint is neither set nor discoverable",
            )
        with self._lock:
            if cluster:
                self._cluster = info
            else:  # settings only: asked again later, not on every launch
                self._cluster_partial = (info, self.clock.monotonic() + CLUSTER_INFO_RETRY)
        return info

    def _kube_dns(self) -> tuple[str, ...]:
        if self._cluster_dns is not None or self.kube is None:
            return self._cluster_dns or ()
        try:
            svc = self.kube.get("services", "kube-dns", "kube-system")
            ip = str((svc.get("spec") or {}).get("clusterIP") or "")
            self._cluster_dns = (ip,) if ip and ip != "None" else ()
        except (ApiError, LookupError) as e:
            log.info("no kube-system/kube-dns Service (%s): nodes use the AMI's cluster DNS", e)
            self._cluster_dns = ()
        return self._cluster_dns

    def _hash(self, nodeclass: EC2NodeClass) -> str:
        return nodeclass.hash(self.settings.cluster_ca_bundle or None)

    # ------------------------------------------------------------------ instances

    def delete(self, nodeclaim: NodeClaim) -> None:
        """Terminate the NodeClaim's instance; NodeClaimNotFoundError once it is gone."""
        nc = as_nodeclaim(nodeclaim)
        provider_id = nc.status.provider_id if nc.status is not None else None
        try:
            instance_id = parse_instance_id(provider_id or "")
        except ValueError as e:
            raise NodeClaimNotFoundError(e) from e
        try:
            self.instances.delete(instance_id)
        except NodeClaimNotFoundError:
            # the instance is gone: its reservation slot is free again (upstream counts
            # it once the delete finds it gone, not when termination starts)
            rid = nc.metadata.labels.get(LABEL_CAPACITY_RESERVATION_ID, "")
            if rid:
                self.reservations.mark_terminated(rid)
            raise

    def get(self, provider_id: str) -> NodeClaim:
        """The NodeClaim view of the live instance ``provider_id``."""
        try:
            instance_id = parse_instance_id(provider_id)
        except ValueError as e:
            raise NodeClaimNotFoundError(e) from e
        instance = self.instances.get(instance_id)
        nodeclass = self._nodeclass_of(instance)
        return self._to_nodeclaim(instance, self._type_of(instance, nodeclass, {}), nodeclass)

    def list(self) -> builtins.list[NodeClaim]:
        """Every live instance this cluster's Karpenter launched, as NodeClaims."""
        out: builtins.list[NodeClaim] = []
        nodeclasses: dict[str, EC2NodeClass | None] = {}
        types: dict[str, Sequence[InstanceType]] = {}
        for instance in self.instances.list():
            name = instance.tags.get(NODECLASS_TAG, "")
            if name not in nodeclasses:
                nodeclasses[name] = self._nodeclass_of(instance)
            nodeclass = nodeclasses[name]
            out.append(
                self._to_nodeclaim(instance, self._type_of(instance, nodeclass, types), nodeclass)
            )
        return out

    def _nodeclass_of(self, instance: Instance) -> EC2NodeClass | None:
        name = instance.tags.get(NODECLASS_TAG)
        if not name or self.kube is None:
            return None
        try:
            return get_nodeclass(self.kube, name)
        except (NodeClassError, ApiError) as e:
            log.warning(
                "instance %s: cannot read its %s %r: %s", instance.id, EC2_NODE_CLASS.kind, name, e
            )
            return None

    def _type_of(
        self,
        instance: Instance,
        nodeclass: EC2NodeClass | None,
        cache: dict[str, Sequence[InstanceType]],
    ) -> InstanceType | None:
        if nodeclass is None:
            return None
        if nodeclass.name not in cache:
            try:
                cache[nodeclass.name] = list(self.instance_types.list(nodeclass))
            except Exception as e:
                log.warning("instance types of %s %r: %s", EC2_NODE_CLASS.kind, nodeclass.name, e)
                cache[nodeclass.name] = []
        return next((t for t in cache[nodeclass.name] if t.name == instance.instance_type), None)

    def _to_nodeclaim(
        self, instance: Instance, it: InstanceType | None, nodeclass: EC2NodeClass | None
    ) -> NodeClaim:
        zone_id = ""
        if nodeclass is not None:
            zone_id = next((s.zone_id for s in nodeclass.subnets if s.zone == instance.zone), "")
        return instance_to_nodeclaim(instance, it, now=self.clock.now(), zone_id=zone_id)

    # ------------------------------------------------------------------ catalogue

    def get_instance_types(self, nodepool: NodePool | None) -> builtins.list[InstanceType]:
        """The NodePool's EC2NodeClass's types. Without a cluster: the EC2NodeClass given
        offline (:meth:`_offline_nodeclass`), else the default view."""
        if self.kube is None or nodepool is None:
            view = self._offline_nodeclass(nodepool) or self._default_nodeclass()
            self._prices_once()
            return self._listed(view)
        nodeclass = nodepool_nodeclass(
            self.kube,
            nodepool,
            get_nodeclass,
            kind=EC2_NODE_CLASS.kind,
            malformed=NodeClassError,
            recorder=self.recorder,
            log=log,
        )
        return self._listed(nodeclass) if nodeclass is not None else []

    def _prices_once(self) -> None:
        """Without a cluster nothing runs the periodic refresh: fetch prices once, so a
        listing shows them (a failure leaves the price-list-file seed, with a warning)."""
        with self._lock:
            if self._priced:
                return
            self._priced = True
        try:
            self.pricing.refresh()
        except Exception as e:
            log.warning("aws: refreshing prices failed, listing with what is known: %s", e)

    def _listed(self, nodeclass: EC2NodeClass) -> builtins.list[InstanceType]:
        try:
            return list(self.instance_types.list(nodeclass))
        except (ClientError, BotoCoreError, RuntimeError) as e:
            raise CatalogueUnavailableError(f"aws: cannot list instance types: {e}") from e

    def _offline_nodeclass(self, nodepool: NodePool | None) -> EC2NodeClass | None:
        """The EC2NodeClass ``nodepool`` names, from the manifests given without a cluster.

        Its spec is resolved as the cluster would (AMI family from the alias, kubelet,
        block devices, instance store, networking); what only EC2 can resolve is taken from
        its ``status`` when the manifest carries one, else every zone of the region stands
        in for the subnets (selector terms cannot be matched offline). A malformed class
        raises ``ValueError`` naming the field, as ``karpenter validate`` would."""
        ref = nodepool.spec.template.spec.node_class_ref if nodepool is not None else None
        if ref is None or ref.kind != EC2_NODE_CLASS.kind:
            return None
        manifest = self.offline_nodeclasses.get(ref.name)
        if manifest is None:
            return None
        try:
            nodeclass = EC2NodeClass.from_dict(manifest)
        except NodeClassError as e:
            raise ValueError(f"{EC2_NODE_CLASS.kind} {ref.name!r}: {e}") from None
        if nodeclass.subnets:
            return nodeclass
        return attrs.evolve(nodeclass, subnets=self._default_nodeclass().subnets)

    def _default_nodeclass(self) -> EC2NodeClass:
        """A stand-in EC2NodeClass for listing without a cluster: every zone, AL2023."""
        from karpenter_aws import catalogue

        if catalogue.is_offline(self.clients):
            region = catalogue.load_region(self.clients.region)
            return EC2NodeClass(
                name="",
                ami_family=DEFAULT_FAMILY,
                subnets=tuple(
                    SubnetStatus(id="", zone=zone, zone_id=zone_id)
                    for zone, zone_id in sorted(region.zones.items())
                ),
            )
        try:
            zones = self.clients.ec2.describe_availability_zones()["AvailabilityZones"]
        except (ClientError, BotoCoreError) as e:
            raise CatalogueUnavailableError(f"aws: cannot list availability zones: {e}") from e
        subnets = tuple(
            SubnetStatus(id="", zone=str(z.get("ZoneName")), zone_id=str(z.get("ZoneId") or ""))
            for z in zones
            if z.get("ZoneType", "availability-zone") == "availability-zone"
        )
        return EC2NodeClass(name="", ami_family=DEFAULT_FAMILY, subnets=subnets)

    # ------------------------------------------------------------------ drift / repair

    def is_drifted(self, nodeclaim: NodeClaim) -> DriftReason:
        """Upstream's drift checks (:mod:`karpenter_aws.drift`), first hit wins."""
        nc = as_nodeclaim(nodeclaim)
        found = drift_nodeclass(self.kube, nc, get_nodeclass, malformed=NodeClassError, log=log)
        if found is None:
            return ""
        nodepool, nodeclass = found
        static = drift.static_drift(
            nc.metadata.annotations,
            self._hash(nodeclass),
            HASH_VERSION,
            hash_key=HASH_ANNOTATION,
            version_key=HASH_VERSION_ANNOTATION,
        )
        if static:
            return static
        type_name = nc.metadata.labels.get(wk.LABEL_INSTANCE_TYPE, "")
        try:
            types = self.get_instance_types(nodepool)
        except CatalogueUnavailableError as e:
            log.warning(
                "drift of %s: instance types unavailable, AMI drift not checked: %s", nc.name, e
            )
            types = []
        it = next((t for t in types if t.name == type_name), None)
        image = (nc.status.image_id if nc.status is not None else None) or ""
        ami = drift.ami_drift(image, it, [(a.id, a.requirements) for a in nodeclass.amis])
        if ami:
            return ami
        try:
            instance = self.instances.get(parse_instance_id(_provider_id(nc)), skip_cache=True)
        except (ValueError, NodeClaimNotFoundError) as e:
            log.debug("drift of %s: no instance (%s)", nc.name, e)
            return ""
        except (ClientError, BotoCoreError) as e:
            log.warning("drift of %s: describing its instance failed: %s", nc.name, e)
            return ""
        return drift.first_drift(
            drift.security_group_drift(
                instance.security_group_ids, (sg.id for sg in nodeclass.security_groups)
            ),
            drift.subnet_drift(instance.subnet_id, (s.id for s in nodeclass.subnets)),
            drift.capacity_reservation_drift(
                instance.reservation_id, (r.id for r in nodeclass.capacity_reservations)
            ),
            self._placement_group_drift(nc, nodeclass),
        )

    def _placement_group_drift(self, nc: NodeClaim, nodeclass: EC2NodeClass) -> str:
        """``PlacementGroupDrift`` from the NodeClaim's group label and the group the
        class resolves now; undecided while a selected group cannot be resolved (no
        group known is not "no group")."""
        selector = nodeclass.placement_group_selector
        group = self.placement_groups.get(selector)
        if selector is not None and group is None:
            return ""
        return drift.placement_group_drift(
            nc.metadata.labels.get(LABEL_PLACEMENT_GROUP_ID, ""),
            group.id if group is not None else "",
        )

    def repair_policies(self) -> Sequence[RepairPolicy]:
        return REPAIR_POLICIES

    def supported_node_classes(self) -> Sequence[NodeClassKind]:
        return (EC2_NODE_CLASS,)

    # ------------------------------------------------------------------ controllers

    def _require_kube(self, operation: str) -> KubeClient:
        if self.kube is None:
            raise ClusterRequiredError(
                f"the {NAME} cloud provider needs a cluster client for {operation}(): it was "
                "built without one; only the instance-type catalogue is available"
            )
        return self.kube


def _taggable(obj: Mapping[str, Any]) -> bool:
    """An AWS NodeClaim with a Node, not being deleted, not yet marked as tagged."""
    meta = obj.get("metadata") or {}
    annotations = meta.get("annotations") or {}
    if annotations.get(TAGGED_ANNOTATION) == "true" and (
        annotations.get(CLUSTER_NAME_TAGGED_ANNOTATION) == "true"
    ):
        return False
    ref = (obj.get("spec") or {}).get("nodeClassRef") or {}
    if ref.get("group") != EC2_NODE_CLASS.group:
        return False
    return bool((obj.get("status") or {}).get("nodeName")) and not meta.get("deletionTimestamp")


def _taggable_event(event_type: str, obj: dict[str, Any]) -> bool:
    return event_type != "DELETED" and _taggable(obj)


class _Tagging:
    """Upstream's ``nodeclaim.tagging``: once a NodeClaim has its Node, tag the instance
    with ``Name`` (the Node's name), ``karpenter.sh/nodeclaim`` and ``eks:eks-cluster-name``
    (only tags it lacks) and annotate the NodeClaim as tagged."""

    def __init__(self, kube: KubeClient, instances: InstanceProvider, cluster: str) -> None:
        self._kube = kube
        self._instances = instances
        self._cluster = cluster

    def reconcile(self, key: ObjectKey) -> Result:
        try:
            obj = self._kube.get(_NODECLAIMS, key.name)
        except NotFound:
            return Result()
        if not _taggable(obj):
            return Result()
        status = obj.get("status") or {}
        try:
            instance_id = parse_instance_id(str(status.get("providerID") or ""))
        except ValueError as e:
            log.warning("nodeclaim %s: not tagging its instance: %s", key.name, e)
            return Result()
        wanted = {
            "Name": str(status.get("nodeName")),
            NODECLAIM_TAG: key.name,
            EKS_CLUSTER_NAME_TAG: self._cluster,
        }
        try:
            instance = self._instances.get(instance_id, skip_cache=True)
            missing = {k: v for k, v in wanted.items() if k not in instance.tags}
            if missing:
                self._instances.create_tags(instance_id, missing)
        except NodeClaimNotFoundError:
            return Result()
        except (ClientError, BotoCoreError) as e:
            log.warning("nodeclaim %s: tagging instance %s failed: %s", key.name, instance_id, e)
            return Result(requeue=True)
        annotations = {TAGGED_ANNOTATION: "true", CLUSTER_NAME_TAGGED_ANNOTATION: "true"}
        with contextlib.suppress(NotFound):  # deleted meanwhile: nothing to mark
            self._kube.patch(_NODECLAIMS, key.name, {"metadata": {"annotations": annotations}})
        return Result()


def refresh_controller(provider: AWSCloudProvider) -> _Refresh:
    """The ``aws.catalogue.refresh`` singleton of ``provider``."""
    return _Refresh(provider.pricing, provider.instance_types)


def tagging_controller(kube: KubeClient, provider: AWSCloudProvider) -> _Tagging:
    """The ``nodeclaim.tagging`` controller of ``provider``."""
    return _Tagging(kube, provider.instances, provider.settings.cluster_name)


def tagging_watches() -> tuple[Watch, ...]:
    """NodeClaims that may need tags (``nodeclaim.tagging``'s watch)."""
    return (Watch(_NODECLAIMS, predicate=_taggable_event),)


class _Refresh:
    """Refreshes prices and the instance-type catalogue every 12 hours (5 minutes after
    a failure)."""

    def __init__(self, pricing: Any, instance_types: Any) -> None:
        self._pricing = pricing
        self._instance_types = instance_types

    def reconcile(self) -> Result:
        ok = True
        for what, target in (("prices", self._pricing), ("instance types", self._instance_types)):
            refresh = getattr(target, "refresh", None)
            if not callable(refresh):
                continue
            try:
                refresh()
            except Exception as e:
                ok = False
                log.warning("refreshing %s failed, retrying in %ds: %s", what, REFRESH_RETRY, e)
        return Result.after(REFRESH_INTERVAL if ok else REFRESH_RETRY)


def _metadata_options(nodeclass: EC2NodeClass, cluster_dns: Sequence[str]) -> MetadataOptions:
    """The class's metadata options; unset, the defaults, with the IPv6 endpoint in an IPv6
    cluster (as upstream's family defaults)."""
    options = metadata_options_from(nodeclass.metadata_options)
    if "metadataOptions" not in nodeclass.raw_spec and ip_family(cluster_dns) == IP_FAMILY_IPV6:
        return attrs.evolve(options, http_protocol_ipv6="enabled")
    return options


def _tenancy(reqs: Requirements) -> str:
    """``dedicated`` only when the NodeClaim allows nothing else (upstream's choice)."""
    req = reqs.get(LABEL_INSTANCE_TENANCY)
    if not req.has("default") and req.has("dedicated"):
        return "dedicated"
    return "default"


def _subnet_per_zone(
    subnets: Sequence[SubnetStatus], unavailable: UnavailableOfferings | None = None
) -> dict[str, str]:
    """One subnet per zone: the first in status order (most free addresses first) that
    did not just run out of addresses (``InsufficientFreeAddressesInSubnet``), else the
    zone's first."""
    out: dict[str, str] = {}
    fallback: dict[str, str] = {}
    for s in subnets:
        if not s.zone or not s.id:
            continue
        fallback.setdefault(s.zone, s.id)
        # no offering is ever marked under an empty type: this asks about the subnet only
        if unavailable is not None and unavailable.is_unavailable(
            "", s.zone, "", subnet_ids=[s.id]
        ):
            continue
        out.setdefault(s.zone, s.id)
    return {**fallback, **out}


def _amis(nodeclass: EC2NodeClass) -> builtins.list[AMI]:
    """Status AMIs, non-deprecated first (a deprecated AMI is used only when nothing else
    suits a type, as upstream)."""
    ordered = sorted(nodeclass.amis, key=lambda a: bool(a.deprecated))
    return [AMI(a.id, a.requirements) for a in ordered]


def _target_partition(reqs: Requirements, group: PlacementGroup | None) -> str:
    """The partition a launch into a partition group targets: the lowest the NodeClaim
    allows when it names some (EC2 takes one; an ICE there marks only it, and the next
    NodeClaim tries the others), else none (EC2 picks)."""
    if group is None or not group.partitions():
        return ""
    key = LABEL_PLACEMENT_GROUP_PARTITION
    if not reqs.has(key):
        return ""
    allowed = [p for p in group.partitions() if reqs.get(key).has(p)]
    if len(allowed) == len(group.partitions()):
        return ""
    return min(allowed, key=int) if allowed else ""


def _provider_id(nc: NodeClaim) -> str:
    return (nc.status.provider_id if nc.status is not None else None) or ""


def _not_reconciled(nodeclass: EC2NodeClass) -> None:
    """Ready unknown because the status was written for an older generation: the class is
    not ready yet (``NodeClassNotReadyError``) rather than of unknown readiness."""
    cond = nodeclass.condition("Ready")
    observed = cond.get("observedGeneration") if cond is not None else None
    if cond is not None and observed is not None and observed != nodeclass.generation:
        raise NodeClassNotReadyError(
            "nodeclass status has not been reconciled against the latest spec"
        )
