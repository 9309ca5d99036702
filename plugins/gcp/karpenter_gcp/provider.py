"""The GCP CloudProvider: one GCE instance per NodeClaim, shaped by a GCENodeClass, joining
a GKE cluster with the bootstrap of one of the cluster's node pools.

It wires the pieces together as upstream's ``pkg/cloudprovider`` does:

- ``create``: resolve the NodeClaim's GCENodeClass (missing or terminating ⇒
  ``InsufficientCapacityError`` and an event; ``Ready=False`` ⇒ ``NodeClassNotReadyError``;
  unknown ⇒ ``CreateError("NodeClassReadinessUnknown")``), list its instance types, choose
  the cheapest available offering (:func:`select`), take the bootstrap metadata of the
  cluster's source node pool's instance template (:mod:`karpenter_gcp.nodepooltemplate`),
  rewrite it for this node (:mod:`karpenter_gcp.metadata`) and insert the instance, waiting
  on its zone operation (:class:`~karpenter_gcp.instance.InstanceProvider`, which cleans up
  after any failure and marks capacity errors on the offering).
- ``get`` / ``list`` / ``delete``: by provider id ``gce://<project>/<zone>/<name>`` and by
  the cluster's labels (one aggregated list).
- ``get_instance_types``: the NodePool's GCENodeClass's types from machine types and
  prices; without a cluster or credentials the bundled snapshot of the region.
- ``is_drifted``: the GCENodeClass hash, then the image.
- ``repair_policies``: upstream's.
"""

from __future__ import annotations

import builtins
import logging
import random
from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import attrs

from karpenter_core.plugin_api import (
    CreateError,
    DriftReason,
    InstanceType,
    InsufficientCapacityError,
    NodeClaim,
    NodeClaimNotFoundError,
    NodeClassKind,
    NodePool,
    Offering,
    RepairPolicy,
    Requirements,
    UnavailableOfferings,
    WallClock,
    as_nodeclaim,
    describe_requested,
    drift_nodeclass,
    fits,
    instance_nodeclaim,
    launch_nodeclass,
    launch_preference,
    nodepool_nodeclass,
    preference_rank,
)
from karpenter_core.plugin_api import labels as wk
from karpenter_core.plugin_api import resources as res
from karpenter_gcp import drift
from karpenter_gcp.labels import GCE_NODE_CLASS
from karpenter_gcp.nodeclass import GCENodeClass, NodeClassError, get_nodeclass
from karpenter_gcp.settings import GCPSettings

if TYPE_CHECKING:
    from karpenter_core.plugin_api import Clock, EventRecorder, KubeClient
    from karpenter_gcp.clients import GCPClients
    from karpenter_gcp.instance import Instance, InstanceProvider

__all__ = ["NAME", "REPAIR_POLICIES", "GCPCloudProvider", "select"]

log = logging.getLogger("karpenter.gcp")

NAME = "gcp"

REPAIR_POLICIES: tuple[RepairPolicy, ...] = (
    RepairPolicy("Ready", "False", timedelta(minutes=10)),
    RepairPolicy("Ready", "Unknown", timedelta(minutes=10)),
    RepairPolicy("KernelDeadlock", "True", timedelta(minutes=5)),
    RepairPolicy("ReadonlyFilesystem", "True", timedelta(minutes=5)),
    RepairPolicy("FrequentKubeletRestart", "True", timedelta(minutes=30)),
    RepairPolicy("FrequentContainerdRestart", "True", timedelta(minutes=30)),
)
"""Upstream's node conditions (node-problem-detector's among them) that make a GCE node
eligible for repair."""


class ClusterRequiredError(RuntimeError):
    """A call that needs the cluster on a provider built without one."""


def select(
    instance_types: Sequence[InstanceType],
    reqs: Requirements,
    requests: Mapping[str, int],
    rng: random.Random | None = None,
    preference: Mapping[str, int] | None = None,
) -> tuple[InstanceType, Offering]:
    """The cheapest available offering, ``reqs`` allows, of a type that fits ``requests``;
    at equal price spot first, then the type's name, then a random zone (a burst spreads
    over zones). With a ``preference`` (the NodeClaim's launch order, from an
    instance-type scorer) the best-ranked type comes first, then the same order.
    ``InsufficientCapacityError`` naming the request when there is none."""
    rng = rng or random.Random()
    best: tuple[tuple[int, float, int, str, float], InstanceType, Offering] | None = None
    for it in instance_types:
        if it.requirements.intersects(reqs) is not None or not fits(it, requests, reqs)[0]:
            continue
        for o in it.offerings.available().compatible(reqs):
            spot = 0 if o.capacity_type == wk.CAPACITY_TYPE_SPOT else 1
            key = (preference_rank(preference or {}, it.name), o.price, spot, it.name, rng.random())
            if best is None or key < best[0]:
                best = (key, it, o)
    if best is None:
        raise InsufficientCapacityError(
            "all requested instance types were unavailable during launch "
            f"({describe_requested(reqs)}; {len(instance_types)} types considered)"
        )
    return best[1], best[2]


class GCPCloudProvider:
    """GCE instances for Karpenter on GKE; see the module docstring."""

    def __init__(
        self,
        settings: GCPSettings,
        *,
        clients: GCPClients | None = None,
        kube: KubeClient | None = None,
        clock: Clock | None = None,
        recorder: EventRecorder | None = None,
        unavailable: UnavailableOfferings | None = None,
        catalogue: Any = None,
        instances: InstanceProvider | None = None,
        gke: Any = None,
        templates: Any = None,
    ) -> None:
        from karpenter_gcp.sources import CatalogueSource

        self.settings = settings
        self.clients = clients
        self.kube = kube
        self.clock: Clock = clock or WallClock()
        self.recorder = recorder
        self.unavailable = unavailable or UnavailableOfferings(self.clock)
        self.catalogue = catalogue or CatalogueSource(
            settings, clients, self.clock, self.unavailable
        )
        if clients is not None:
            from karpenter_gcp.gke import GKEProvider
            from karpenter_gcp.instance import InstanceProvider
            from karpenter_gcp.nodepooltemplate import NodePoolTemplateProvider

            gke = gke or GKEProvider(
                clients, settings.project_id, settings.cluster_location, settings.cluster_name
            )
            templates = templates or NodePoolTemplateProvider(
                clients,
                gke,
                settings.project_id,
                settings.region,
                settings.cluster_name,
                preferred_pool=settings.default_nodepool_template_name,
                service_account=settings.default_nodepool_service_account,
            )
            instances = instances or InstanceProvider(
                clients,
                settings.project_id,
                self.unavailable,
                cluster_name=settings.cluster_name,
                cluster_location=settings.cluster_location,
                region=settings.region,
            )
        self.gke = gke
        self.templates = templates
        self.instances = instances

    @property
    def name(self) -> str:
        return NAME

    # ------------------------------------------------------------------ launching

    def create(self, nodeclaim: NodeClaim) -> NodeClaim:
        """Insert a GCE instance for ``nodeclaim`` (see the module docstring)."""
        nc = as_nodeclaim(nodeclaim)
        instances = self._require("create", self.instances)
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
        it, offering = select(
            types, reqs, requests, preference=launch_preference(nc.metadata.annotations)
        )
        request = self._launch_request(nc, nodeclass, it, offering)
        instance = instances.create(request)
        out = self._to_nodeclaim(instance, it)
        annotations = {**out.metadata.annotations, **drift.hash_annotations(nodeclass)}
        return attrs.evolve(out, metadata=attrs.evolve(out.metadata, annotations=annotations))

    def _launch_nodeclass(self, nc: NodeClaim) -> GCENodeClass:
        return launch_nodeclass(
            self._require("create", self.kube),
            nc,
            get_nodeclass,
            kind=GCE_NODE_CLASS.kind,
            malformed=NodeClassError,
            recorder=self.recorder,
            missing_noun="node class",
            unknown_noun="NodeClass",
        )

    def _launch_request(
        self, nc: NodeClaim, nodeclass: GCENodeClass, it: InstanceType, offering: Offering
    ) -> Any:
        from karpenter_gcp.gke import GKEAPIError
        from karpenter_gcp.instance import AttachedDiskSpec, build_launch_request
        from karpenter_gcp.metadata import Taint
        from karpenter_gcp.nodepooltemplate import SourcePoolError

        image = _image_for(nodeclass, it)
        if not image:
            raise CreateError(
                f"no image of {GCE_NODE_CLASS.kind} {nodeclass.name!r} suits instance type "
                f"{it.name} (architecture)",
                "ImageResolutionFailed",
                "no image suits the instance type",
            )
        try:
            cluster = self.gke.info()
            metadata = self.templates.source_metadata()
        except (GKEAPIError, SourcePoolError) as e:
            raise CreateError(
                f"reading the bootstrap of cluster {self.settings.cluster_name!r}: {e}",
                "BootstrapUnavailable",
                str(e),
            ) from e
        boot = nodeclass.boot_disk or {}
        extra_disks = [
            AttachedDiskSpec(
                size_gb=int(d.get("sizeGiB") or 0),
                disk_type=str(d.get("category") or ""),
                local_ssd=d.get("category") == "local-ssd",
            )
            for d in nodeclass.disks
            if not d.get("boot")
        ]
        shielded = nodeclass.shielded_instance_config
        kms = str(boot.get("kmsKeyName") or "")
        labels = {k: v for k, v in nc.metadata.labels.items()}
        for req in it.requirements.values():
            if req.operator() == "In" and len(req.values) == 1:
                labels.setdefault(req.key, next(iter(req.values)))
        labels[wk.CAPACITY_TYPE_LABEL_KEY] = offering.capacity_type
        labels[wk.LABEL_TOPOLOGY_ZONE] = offering.zone
        taints = [
            Taint(t.key, t.value or "", t.effect)
            for t in (*nc.spec.taints, *nc.spec.startup_taints)
        ]
        arch = _single(it, wk.LABEL_ARCH) or "amd64"
        try:
            return build_launch_request(
                nodeclaim=nc.name or "",
                nodepool=nc.metadata.labels.get(wk.NODEPOOL_LABEL_KEY, ""),
                nodeclass=nodeclass.name,
                zone=offering.zone,
                machine_type=it.name,
                capacity_type=offering.capacity_type,
                image=image,
                cluster=cluster,
                cluster_location=self.settings.cluster_location,
                source_metadata=metadata,
                service_account=nodeclass.service_account
                or self.settings.default_nodepool_service_account,
                max_pods=nodeclass.max_pods,
                boot_disk_size_gb=int(boot.get("sizeGiB") or 100),
                boot_disk_type=str(boot.get("category") or "pd-balanced"),
                disks=extra_disks,
                subnetwork=nodeclass.subnetwork or "",
                pod_range_name=nodeclass.subnet_range_name or "",
                private_nodes=nodeclass.enable_private_nodes,
                nodeclass_labels=nodeclass.labels,
                nodeclass_metadata=nodeclass.metadata,
                extra_network_tags=nodeclass.network_tags,
                image_family=nodeclass.image_family,
                machine_family=it.name.split("-", 1)[0],
                kubelet=nodeclass.kubelet,
                kube_reserved={
                    k: str(v)
                    for k, v in res.format_resource_list(
                        it.overhead.kube_reserved if it.overhead is not None else {}
                    ).items()
                },
                secure_boot=shielded.get("enableSecureBoot"),
                vtpm=shielded.get("enableVtpm"),
                integrity_monitoring=shielded.get("enableIntegrityMonitoring"),
                disk_kms_key=kms,
                node_labels=labels,
                taints=taints,
                arm64=arch == "arm64",
                gpu=bool(it.capacity.get("nvidia.com/gpu")),
            )
        except ValueError as e:
            raise CreateError(f"building the instance: {e}", "LaunchTemplateFailed", str(e)) from e

    # ------------------------------------------------------------------ instances

    def delete(self, nodeclaim: NodeClaim) -> None:
        nc = as_nodeclaim(nodeclaim)
        instances = self._require("delete", self.instances)
        pid = (nc.status.provider_id if nc.status is not None else None) or ""
        if not pid.startswith("gce://"):
            raise NodeClaimNotFoundError(f"provider id {pid!r} is not a GCE instance")
        instances.delete(pid)

    def get(self, provider_id: str) -> NodeClaim:
        instances = self._require("get", self.instances)
        if not provider_id.startswith("gce://"):
            raise NodeClaimNotFoundError(f"provider id {provider_id!r} is not a GCE instance")
        try:
            instance = instances.get(provider_id)
        except ValueError as e:
            raise NodeClaimNotFoundError(e) from e
        return self._to_nodeclaim(instance, self._type_of(instance, {}))

    def list(self) -> builtins.list[NodeClaim]:
        instances = self._require("list", self.instances)
        cache: dict[str, Sequence[InstanceType]] = {}
        return [self._to_nodeclaim(i, self._type_of(i, cache)) for i in instances.list()]

    def _type_of(
        self, instance: Instance, cache: dict[str, Sequence[InstanceType]]
    ) -> InstanceType | None:
        name = instance.nodeclass
        if name not in cache:
            nodeclass = None
            if name and self.kube is not None:
                try:
                    nodeclass = get_nodeclass(self.kube, name)
                except NodeClassError as e:
                    log.warning("instance %s: its %s: %s", instance.name, GCE_NODE_CLASS.kind, e)
            try:
                cache[name] = list(self.catalogue.instance_types(nodeclass))
            except Exception as e:
                log.warning("instance %s: instance types unavailable: %s", instance.name, e)
                cache[name] = []
        return next((t for t in cache[name] if t.name == instance.machine_type), None)

    def _to_nodeclaim(self, instance: Instance, it: InstanceType | None) -> NodeClaim:
        return instance_to_nodeclaim(instance, it, now=self.clock.now())

    # ------------------------------------------------------------------ catalogue

    def get_instance_types(self, nodepool: NodePool | None) -> builtins.list[InstanceType]:
        if self.kube is None or nodepool is None:
            return list(self.catalogue.instance_types(None))
        nodeclass = nodepool_nodeclass(
            self.kube,
            nodepool,
            get_nodeclass,
            kind=GCE_NODE_CLASS.kind,
            malformed=NodeClassError,
            recorder=self.recorder,
            log=log,
        )
        return list(self.catalogue.instance_types(nodeclass)) if nodeclass is not None else []

    # ------------------------------------------------------------------ drift / repair

    def is_drifted(self, nodeclaim: NodeClaim) -> DriftReason:
        nc = as_nodeclaim(nodeclaim)
        found = drift_nodeclass(self.kube, nc, get_nodeclass, malformed=NodeClassError, log=log)
        if found is None:
            return ""
        nodeclass = found[1]
        static = drift.static_drift(nc.metadata.annotations, nodeclass)
        if static:
            return static
        image = (nc.status.image_id if nc.status is not None else None) or ""
        return drift.image_drift(image, nodeclass) if image else ""

    def repair_policies(self) -> Sequence[RepairPolicy]:
        return REPAIR_POLICIES

    def supported_node_classes(self) -> Sequence[NodeClassKind]:
        return (GCE_NODE_CLASS,)

    def _require(self, operation: str, value: Any) -> Any:
        if value is None:
            raise ClusterRequiredError(
                f"the {NAME} cloud provider cannot {operation}(): it was built for the "
                "catalogue only (no cluster client or no Google Cloud credentials)"
            )
        return value


def _single(it: InstanceType, key: str) -> str:
    if not it.requirements.has(key):
        return ""
    req = it.requirements.get(key)
    return next(iter(req.values)) if not req.complement and len(req.values) == 1 else ""


def _image_for(nodeclass: GCENodeClass, it: InstanceType) -> str:
    """The first of the class's resolved images whose requirements the type meets."""
    for image in nodeclass.images:
        try:
            reqs = Requirements.from_node_selector_requirements(image.get("requirements") or [])
        except ValueError:
            continue
        if it.requirements.intersects(reqs) is None:
            return str(image.get("sourceImage") or image.get("id") or "")
    return ""


def instance_to_nodeclaim(instance: Instance, it: InstanceType | None, *, now: Any) -> NodeClaim:
    """The NodeClaim view of an instance, as upstream's ``instanceToNodeClaim``: the type's
    single-valued requirements as labels, zone, capacity type, NodePool, cluster location;
    capacity/allocatable from the type; a stopping/terminated instance is being deleted."""
    from karpenter_gcp.instance import LABEL_CLUSTER_LOCATION, STATUS_STOPPING, STATUS_TERMINATED
    from karpenter_gcp.instance import nodeclaim_name as claim_of

    labels: dict[str, str] = {
        wk.LABEL_INSTANCE_TYPE: instance.machine_type,
        wk.LABEL_TOPOLOGY_ZONE: instance.zone,
        wk.CAPACITY_TYPE_LABEL_KEY: instance.capacity_type,
    }
    if instance.nodepool:
        labels[wk.NODEPOOL_LABEL_KEY] = instance.nodepool
    if instance.cluster_location:
        labels[LABEL_CLUSTER_LOCATION] = instance.cluster_location
    terminating = instance.status in (STATUS_STOPPING, STATUS_TERMINATED)
    return instance_nodeclaim(
        it,
        name=claim_of(instance.name) or None,
        labels=labels,
        provider_id=instance.provider_id,
        image_id=instance.image or None,
        created=instance.created,
        deleting_since=now if terminating else None,
    )
