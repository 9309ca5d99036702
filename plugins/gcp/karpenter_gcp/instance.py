"""GCE instances for NodeClaims: create (one ``instances.insert``), get, list, delete.

As upstream (``pkg/providers/instance/instance.go``), each node is one Compute Engine
instance named ``karpenter-<nodeclaim>`` in one zone, inserted with its machine type, its
disks (the boot disk created from the image, plus secondary disks), scheduling (spot: the
``SPOT`` provisioning model, preemptible, no automatic restart, ``TERMINATE`` on host
maintenance, ``DELETE`` on preemption), one network interface in the cluster's subnetwork
with an alias range for pods, GCE labels that identify Karpenter's instances, metadata
rendered from the node pool template (:mod:`karpenter_gcp.metadata`), the node service
account with the ``cloud-platform`` scope, and the cluster's network tags.
:func:`build_launch_request` assembles that from the cluster (:mod:`karpenter_gcp.gke`),
the source template's metadata (:mod:`karpenter_gcp.nodepooltemplate`) and the choices of
the provider (NodeClaim, machine type, zone, capacity type, image).

The insert returns a zone operation, which is waited on (``zoneOperations.wait`` until
``DONE``, bounded by ``operation_timeout``); an operation that finishes with an error is a
failed launch. A launch is all or nothing: after any failure from the insert on (a 5xx may
come after GCE accepted it), the instance, if it exists, and any disk left behind are
deleted before the error is raised, so no failure path leaks. Capacity errors (:mod:`karpenter_gcp.gceerrors`) mark the offering unavailable and
raise ``InsufficientCapacityError``; anything else raises a one-line ``CreateError``. An
instance that already exists under the node's name (Karpenter restarted mid-launch) is
adopted, as upstream does.

The provider id is ``gce://<project>/<zone>/<name>``, as the GCE cloud provider writes it
on the Node. ``list`` is one ``instances.aggregatedList`` (every zone, every page) filtered
by Karpenter's labels and the cluster name, keeping the cluster's region and location
(upstream lists each zone of the region in turn). GCE reports an instance's image on its
boot disk, not on the instance: ``create`` reports the image it launched, ``get`` by
provider id reads the boot disk, ``list`` leaves the image empty.

Calls are retried on 429 and on 5xx that name no capacity code (the client library's own
retry covers only some methods and never 429).

Not here: choosing the instance type, capacity type and zone among offerings (the
provider's job; upstream orders types by price and picks a random zone for on-demand, the
cheapest for spot), launch metrics, the instance cache (callers get fresh answers),
confidential VMs, attached GPU accelerators (built-in GPU machines only get
``TERMINATE``), additional network interfaces, GPU driver labels and taints, the
metadata-server binary patch for Arm nodes.
"""

from __future__ import annotations

import base64
import builtins
import datetime as dt
import functools
import logging
import re
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from attrs import evolve, field, frozen

from karpenter_core.plugin_api import (
    CreateError,
    InsufficientCapacityError,
    NodeClaimNotFoundError,
    UnavailableOfferings,
)
from karpenter_gcp.clients import GCPClients
from karpenter_gcp.gceerrors import (
    capacity_error,
    classify,
    create_error,
    describe,
    is_not_found,
    is_retryable,
    one_line,
    operation_errors,
)
from karpenter_gcp.gke import ClusterInfo
from karpenter_gcp.metadata import NodeMetadataInput, Taint, node_metadata

__all__ = [
    "CLOUD_PLATFORM_SCOPE",
    "GC_GRACE_PERIOD",
    "GC_INTERVAL",
    "LABEL_CLUSTER_ID",
    "LABEL_CLUSTER_LOCATION",
    "LABEL_CLUSTER_NAME",
    "LABEL_GKE_NODE",
    "LABEL_NODECLASS",
    "LABEL_NODEPOOL",
    "LABEL_PROVISIONING_MODEL",
    "STATUS_PROVISIONING",
    "STATUS_RUNNING",
    "STATUS_STOPPING",
    "STATUS_TERMINATED",
    "AttachedDiskSpec",
    "GCEAPIError",
    "Instance",
    "InstanceProvider",
    "LaunchRequest",
    "build_launch_request",
    "instance_labels",
    "instance_name",
    "list_filter",
    "network_tags",
    "nodeclaim_name",
    "orphaned",
    "parse_provider_id",
    "pod_cidr_size",
    "provider_id",
    "sanitize_label",
]

log = logging.getLogger("karpenter.gcp.instance")

T = TypeVar("T")


def sanitize_label(key: str) -> str:
    """A Kubernetes label key as a GCE label key (upstream ``SanitizeGCELabelValue``):
    every run of non-alphanumerics becomes ``-``, trimmed, lower-cased
    (``karpenter.sh/nodepool`` → ``karpenter-sh-nodepool``)."""
    return re.sub(r"[^a-zA-Z0-9]+", "-", key).strip("-").lower()


LABEL_NODEPOOL = sanitize_label("karpenter.sh/nodepool")
LABEL_NODECLASS = sanitize_label("karpenter.k8s.gcp/gcenodeclass")
LABEL_CLUSTER_NAME = "goog-k8s-cluster-name"
LABEL_CLUSTER_LOCATION = "goog-k8s-cluster-location"
LABEL_CLUSTER_ID = "goog-gke-cluster-id-base32"
LABEL_GKE_NODE = "goog-gke-node"
LABEL_COST_MANAGEMENT = "goog-gke-cost-management"
LABEL_PROVISIONING_MODEL = "goog-gke-node-pool-provisioning-model"
"""GCE label keys upstream writes on its instances; ``list`` finds Karpenter's instances
by the first three."""

CLOUD_PLATFORM_SCOPE = "https://www.googleapis.com/auth/cloud-platform"

STATUS_PROVISIONING = "PROVISIONING"
STATUS_RUNNING = "RUNNING"
STATUS_STOPPING = "STOPPING"
STATUS_TERMINATED = "TERMINATED"

_PROVIDER_ID = re.compile(r"^gce://(?P<project>[^/]+)/(?P<zone>[^/]+)/(?P<name>[^/]+)$")
_NAME_PREFIX = "karpenter-"


class GCEAPIError(RuntimeError):
    """A Compute call failed for a reason that is neither "not found" nor a launch error
    (permission denied, throttled past retries, API unreachable...); one line."""


# ---------------------------------------------------------------------------- helpers


def instance_name(nodeclaim: str) -> str:
    """The instance name of a NodeClaim (upstream: ``karpenter-<nodeclaim>``)."""
    return f"{_NAME_PREFIX}{nodeclaim}"


def nodeclaim_name(name: str) -> str:
    """The NodeClaim an instance was made for."""
    return name.removeprefix(_NAME_PREFIX)


def provider_id(project: str, zone: str, name: str) -> str:
    """``gce://<project>/<zone>/<name>``."""
    return f"gce://{project}/{zone}/{name}"


def parse_provider_id(pid: str) -> tuple[str, str, str]:
    """(project, zone, name) of a ``gce://`` provider id; ``ValueError`` naming it
    otherwise."""
    m = _PROVIDER_ID.match(pid or "")
    if m is None:
        raise ValueError(f"provider id {pid!r} is not of the form gce://<project>/<zone>/<name>")
    return m["project"], m["zone"], m["name"]


def pod_cidr_size(max_pods: int) -> int:
    """The prefix length of a node's pod alias range for ``max_pods`` (GKE flexible pod
    CIDR: twice the pods, rounded up to a power of two; /23 at most)."""
    for limit, prefix in ((8, 28), (16, 27), (32, 26), (64, 25), (128, 24)):
        if max_pods <= limit:
            return prefix
    return 23


def _cluster_id_base32(cluster_id: str) -> str:
    try:
        raw = bytes.fromhex(cluster_id)
    except ValueError:
        return ""
    return base64.b32encode(raw).decode().rstrip("=").lower() if raw else ""


def instance_labels(
    *,
    cluster_name: str,
    cluster_location: str,
    nodepool: str,
    nodeclass: str,
    capacity_type: str,
    cluster_id: str = "",
    nodeclass_labels: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The GCE labels of a node (upstream ``setupInstanceLabels`` and
    ``configureInstanceCapacityProvision``): the GCENodeClass's labels, then GKE's node
    markers and Karpenter's ownership labels (which win)."""
    labels = dict(nodeclass_labels or {})
    labels[LABEL_PROVISIONING_MODEL] = "spot" if capacity_type == "spot" else "on-demand"
    cid = _cluster_id_base32(cluster_id)
    if cid:
        labels[LABEL_CLUSTER_ID] = cid
    labels[LABEL_COST_MANAGEMENT] = ""
    labels[LABEL_GKE_NODE] = ""
    labels[LABEL_NODEPOOL] = nodepool
    labels[LABEL_NODECLASS] = nodeclass
    labels[LABEL_CLUSTER_NAME] = cluster_name
    labels[LABEL_CLUSTER_LOCATION] = cluster_location
    return labels


def network_tags(cluster_name: str, cluster_id: str = "", extra: Iterable[str] = ()) -> list[str]:
    """Network tags (upstream ``buildInstanceTags``): ``gke-<cluster>-node``, then
    ``gke-<cluster>-<id[:8]>-node`` (the target of GKE's firewall rules) when the cluster
    id is known, then the GCENodeClass's tags; duplicates dropped."""
    tags = [f"gke-{cluster_name}-node"]
    if len(cluster_id) >= 8:
        tags.append(f"gke-{cluster_name}-{cluster_id[:8]}-node")
    tags.extend(extra)
    return list(dict.fromkeys(tags))


def list_filter(cluster_name: str) -> str:
    """Upstream's Compute filter for the cluster's Karpenter instances."""
    return (
        f"(labels.{LABEL_NODEPOOL}:* AND labels.{LABEL_NODECLASS}:* AND "
        f"labels.{LABEL_CLUSTER_NAME}:{cluster_name})"
    )


def _last(url: str) -> str:
    return url.rstrip("/").rsplit("/", 1)[-1]


def _parse_time(value: str) -> dt.datetime | None:
    if not value:
        return None
    try:
        parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)


# ---------------------------------------------------------------------------- values


def _map(value: Mapping[str, str]) -> Mapping[str, str]:
    return dict(value)


def _strs(value: Iterable[str]) -> tuple[str, ...]:
    return tuple(value)


@frozen
class AttachedDiskSpec:
    """A non-boot disk: a persistent disk (optionally from an image, e.g. a secondary
    boot disk with a container image cache) or a local SSD (``local_ssd``: ``SCRATCH``,
    type ``local-ssd``, 375 GB, NVMe)."""

    size_gb: int = 0
    disk_type: str = "pd-balanced"
    source_image: str = ""
    device_name: str = ""
    local_ssd: bool = False
    mode: str = "READ_WRITE"


def _disks(value: Iterable[AttachedDiskSpec]) -> tuple[AttachedDiskSpec, ...]:
    return tuple(value)


@frozen
class LaunchRequest:
    """Everything one node's instance needs, resolved.

    ``metadata`` is the node's metadata items (see :func:`karpenter_gcp.metadata.
    node_metadata`), ``labels`` its GCE labels (:func:`instance_labels`), ``tags`` its
    network tags (:func:`network_tags`). ``network``/``subnetwork`` are URLs or
    ``projects/.../regions/.../subnetworks/...`` paths; ``pod_range_name`` the secondary
    range pods use (empty: GKE's default), ``max_pods`` sizes the alias range.
    ``external_ip`` adds a ``ONE_TO_ONE_NAT`` access config (clusters without private
    nodes). ``arm64`` marks disks ``ARM64``. ``on_host_maintenance`` "" lets GCE choose
    (MIGRATE), spot and GPU machines use ``TERMINATE``.
    """

    name: str
    zone: str
    machine_type: str
    capacity_type: str
    image: str
    boot_disk_size_gb: int = 100
    boot_disk_type: str = "pd-balanced"
    disks: tuple[AttachedDiskSpec, ...] = field(default=(), converter=_disks)
    network: str = ""
    subnetwork: str = ""
    pod_range_name: str = ""
    max_pods: int = 110
    external_ip: bool = False
    labels: Mapping[str, str] = field(factory=dict, converter=_map)
    metadata: Mapping[str, str] = field(factory=dict, converter=_map)
    tags: tuple[str, ...] = field(default=(), converter=_strs)
    service_account: str = ""
    scopes: tuple[str, ...] = field(default=(CLOUD_PLATFORM_SCOPE,), converter=_strs)
    on_host_maintenance: str = ""
    arm64: bool = False
    secure_boot: bool | None = None
    vtpm: bool | None = None
    integrity_monitoring: bool | None = None
    disk_kms_key: str = ""

    def __attrs_post_init__(self) -> None:
        if self.capacity_type not in ("spot", "on-demand"):
            raise ValueError(f"capacity type {self.capacity_type!r} is not spot or on-demand")
        if not self.name or not self.zone or not self.machine_type:
            raise ValueError("a launch needs an instance name, a zone and a machine type")
        if not self.image:
            raise ValueError(f"instance {self.name}: no boot image")


@frozen
class Instance:
    """What Karpenter needs of one GCE instance."""

    name: str
    project: str
    zone: str
    machine_type: str
    capacity_type: str
    status: str = ""
    labels: Mapping[str, str] = field(factory=dict, converter=_map)
    image: str = ""
    created: dt.datetime | None = None
    id: str = ""

    @property
    def provider_id(self) -> str:
        return provider_id(self.project, self.zone, self.name)

    @property
    def nodepool(self) -> str:
        return self.labels.get(LABEL_NODEPOOL, "")

    @property
    def nodeclass(self) -> str:
        return self.labels.get(LABEL_NODECLASS, "")

    @property
    def cluster_location(self) -> str:
        """The ``goog-k8s-cluster-location`` label ("" on instances of an older Karpenter,
        which garbage collection must leave alone: they could be another cluster's)."""
        return self.labels.get(LABEL_CLUSTER_LOCATION, "")

    @classmethod
    def from_api(cls, inst: Any, project: str, zone: str = "") -> Instance:
        """From a ``compute_v1.Instance`` (its zone from the instance when not given)."""
        boot = next((d for d in inst.disks if d.boot), None)
        image = ""
        if boot is not None:
            image = boot.initialize_params.source_image or ""
        sched = inst.scheduling
        spot = sched.provisioning_model == "SPOT" or bool(sched.preemptible)
        return cls(
            name=inst.name,
            project=project,
            zone=zone or _last(inst.zone),
            machine_type=_last(inst.machine_type),
            capacity_type="spot" if spot else "on-demand",
            status=inst.status,
            labels=dict(inst.labels),
            image=image,
            created=_parse_time(inst.creation_timestamp),
            id=str(inst.id) if inst.id else "",
        )


def build_launch_request(
    *,
    nodeclaim: str,
    nodepool: str,
    nodeclass: str,
    zone: str,
    machine_type: str,
    capacity_type: str,
    image: str,
    cluster: ClusterInfo,
    cluster_location: str,
    source_metadata: Mapping[str, str],
    service_account: str,
    max_pods: int = 110,
    boot_disk_size_gb: int = 100,
    boot_disk_type: str = "pd-balanced",
    disks: Iterable[AttachedDiskSpec] = (),
    subnetwork: str = "",
    pod_range_name: str = "",
    private_nodes: bool | None = None,
    nodeclass_labels: Mapping[str, str] | None = None,
    nodeclass_metadata: Mapping[str, str] | None = None,
    extra_network_tags: Iterable[str] = (),
    image_family: str = "ContainerOptimizedOS",
    machine_family: str = "",
    kube_reserved: Mapping[str, str] | None = None,
    kubelet: Mapping[str, Any] | None = None,
    node_labels: Mapping[str, str] | None = None,
    taints: Iterable[Taint] = (),
    arm64: bool = False,
    gpu: bool = False,
    secure_boot: bool | None = None,
    vtpm: bool | None = None,
    integrity_monitoring: bool | None = None,
    disk_kms_key: str = "",
) -> LaunchRequest:
    """One node's :class:`LaunchRequest` assembled as upstream ``buildInstance`` does:
    the name from the NodeClaim; network, subnetwork (unless the GCENodeClass names one)
    and pod range from the cluster; no external IP when nodes are private (the cluster's
    setting unless ``private_nodes`` overrides it); labels, tags and the metadata rewritten
    from the source template; GPU machines ``TERMINATE`` on host maintenance; the
    GCENodeClass's shielded-instance settings (None: GCE's default) and disk KMS key.
    ``ValueError`` without a service account (upstream refuses to launch nodes that could
    not authenticate)."""
    if not service_account:
        raise ValueError(
            "no service account for the node: set the GCENodeClass serviceAccount or the "
            "default node pool service account"
        )
    metadata = node_metadata(
        source_metadata,
        NodeMetadataInput(
            zone=zone,
            capacity_type=capacity_type,
            nodepool=nodepool,
            nodeclass=nodeclass,
            max_pods=max_pods,
            image_family=image_family,
            machine_family=machine_family,
            labels=node_labels or {},
            taints=taints,
            custom_metadata=nodeclass_metadata or {},
            kube_reserved=kube_reserved or {},
            kubelet=kubelet or {},
        ),
    )
    private = cluster.private_nodes if private_nodes is None else private_nodes
    return LaunchRequest(
        name=instance_name(nodeclaim),
        zone=zone,
        machine_type=machine_type,
        capacity_type=capacity_type,
        image=image,
        boot_disk_size_gb=boot_disk_size_gb,
        boot_disk_type=boot_disk_type,
        disks=disks,
        network=cluster.network,
        subnetwork=subnetwork or cluster.subnetwork,
        pod_range_name=pod_range_name or cluster.pod_range_name,
        max_pods=max_pods,
        external_ip=not private,
        labels=instance_labels(
            cluster_name=cluster.name,
            cluster_location=cluster_location,
            nodepool=nodepool,
            nodeclass=nodeclass,
            capacity_type=capacity_type,
            cluster_id=cluster.id,
            nodeclass_labels=nodeclass_labels,
        ),
        metadata=metadata,
        tags=network_tags(cluster.name, cluster.id, extra_network_tags),
        service_account=service_account,
        on_host_maintenance="TERMINATE" if gpu else "",
        arm64=arm64,
        secure_boot=secure_boot,
        vtpm=vtpm,
        integrity_monitoring=integrity_monitoring,
        disk_kms_key=disk_kms_key,
    )


GC_INTERVAL = 120.0
GC_GRACE_PERIOD = 180.0
"""Upstream's garbage collection of orphaned instances: every 2 minutes, instances older
than 3 minutes."""


def orphaned(
    instances: Iterable[Instance],
    known_provider_ids: Iterable[str],
    now: dt.datetime,
    grace: float = GC_GRACE_PERIOD,
) -> builtins.list[Instance]:
    """The instances garbage collection deletes (upstream ``isOrphaned``): no NodeClaim
    has their provider id, they are older than ``grace`` seconds (a launch may not have
    written its NodeClaim's provider id yet), and they carry the cluster-location label
    (instances of an older Karpenter lack it and could belong to a same-named cluster
    elsewhere, so they are never collected). An instance of unknown age is kept."""
    known = set(known_provider_ids)
    out = []
    for inst in instances:
        if inst.provider_id in known or not inst.cluster_location:
            continue
        if inst.created is None or (now - inst.created).total_seconds() < grace:
            continue
        out.append(inst)
    return out


# ---------------------------------------------------------------------------- provider


class InstanceProvider:
    """Creates, finds and deletes the cluster's Karpenter instances in one project.

    ``cluster_name`` and ``cluster_location`` scope ``list`` (and fill labels callers do
    not set); ``region`` restricts ``list`` to its zones (all zones when empty).
    ``retry_initial``/``retry_deadline`` bound the retry of throttled or failing calls;
    ``operation_timeout`` the wait for a launch's zone operation, ``cleanup_timeout`` the
    waits of deletes (a cleanup must outlast the launch it undoes).
    """

    def __init__(
        self,
        clients: GCPClients,
        project: str,
        unavailable: UnavailableOfferings,
        *,
        cluster_name: str = "",
        cluster_location: str = "",
        region: str = "",
        operation_timeout: float = 120.0,
        cleanup_timeout: float = 300.0,
        retry_initial: float = 0.5,
        retry_deadline: float = 60.0,
    ) -> None:
        self._clients = clients
        self.project = project
        self._unavailable = unavailable
        self.cluster_name = cluster_name
        self.cluster_location = cluster_location
        self.region = region
        self.operation_timeout = operation_timeout
        self.cleanup_timeout = cleanup_timeout
        self._retry_initial = retry_initial
        self._retry_deadline = retry_deadline

    # ------------------------------------------------------------------ plumbing

    def _call(self, fn: Callable[[], T]) -> T:
        """``fn()``, retried with exponential backoff while :func:`is_retryable`."""
        delay = self._retry_initial
        deadline = time.monotonic() + self._retry_deadline
        while True:
            try:
                return fn()
            except Exception as e:
                if not is_retryable(e) or time.monotonic() + delay > deadline:
                    raise
                log.info("retrying GCE call after %s", describe(e))
                time.sleep(delay)
                delay = min(delay * 2, 10.0)

    def _wait(self, zone: str, operation: Any, timeout: float | None = None) -> Any:
        """Wait on a zone operation until ``DONE``; returns the finished operation.
        ``TimeoutError`` past ``timeout`` (default ``operation_timeout``)."""
        from google.cloud import compute_v1

        done = compute_v1.Operation.Status.DONE
        limit = self.operation_timeout if timeout is None else timeout
        deadline = time.monotonic() + limit
        op = operation
        while op.status != done:
            if time.monotonic() > deadline:
                raise TimeoutError(f"zone operation {op.name} in {zone} not done after {limit:g}s")
            op = self._call(functools.partial(self._wait_once, zone, str(op.name)))
        return op

    def _wait_once(self, zone: str, name: str) -> Any:
        """One ``zoneOperations.wait`` (GCE answers when the operation is done or after
        about two minutes, whichever is first)."""
        return self._clients.zone_operations.wait(project=self.project, zone=zone, operation=name)

    # ------------------------------------------------------------------ create

    def instance_body(self, r: LaunchRequest) -> Any:
        """The ``compute_v1.Instance`` inserted for ``r`` (see the module docstring)."""
        from google.cloud import compute_v1

        zone_disk_type = f"projects/{self.project}/zones/{r.zone}/diskTypes/"
        arch = "ARM64" if r.arm64 else None

        def encryption() -> Any:
            if not r.disk_kms_key:
                return None
            return compute_v1.CustomerEncryptionKey(kms_key_name=r.disk_kms_key)

        boot = compute_v1.AttachedDisk(
            boot=True,
            auto_delete=True,
            type_="PERSISTENT",
            mode="READ_WRITE",
            initialize_params=compute_v1.AttachedDiskInitializeParams(
                source_image=r.image,
                disk_size_gb=r.boot_disk_size_gb,
                disk_type=zone_disk_type + r.boot_disk_type,
                architecture=arch,
            ),
            disk_encryption_key=encryption(),
        )
        disks = [boot]
        for d in r.disks:
            if d.local_ssd:
                disks.append(
                    compute_v1.AttachedDisk(
                        type_="SCRATCH",
                        interface="NVME",
                        auto_delete=True,
                        initialize_params=compute_v1.AttachedDiskInitializeParams(
                            disk_type=zone_disk_type + "local-ssd",
                            disk_size_gb=d.size_gb or 375,
                        ),
                    )
                )
                continue
            params = compute_v1.AttachedDiskInitializeParams(
                disk_type=zone_disk_type + d.disk_type, architecture=arch
            )
            if d.size_gb:
                params.disk_size_gb = d.size_gb
            if d.source_image:
                params.source_image = d.source_image
            disks.append(
                compute_v1.AttachedDisk(
                    type_="PERSISTENT",
                    auto_delete=True,
                    mode=d.mode,
                    device_name=d.device_name or None,
                    initialize_params=params,
                    disk_encryption_key=encryption(),
                )
            )

        nic = compute_v1.NetworkInterface(
            network=r.network or None,
            subnetwork=r.subnetwork or None,
            alias_ip_ranges=[
                compute_v1.AliasIpRange(
                    ip_cidr_range=f"/{pod_cidr_size(r.max_pods)}",
                    subnetwork_range_name=r.pod_range_name or None,
                )
            ],
        )
        if r.external_ip:
            nic.access_configs = [
                compute_v1.AccessConfig(type_="ONE_TO_ONE_NAT", name="External NAT")
            ]

        scheduling = compute_v1.Scheduling()
        if r.capacity_type == "spot":
            scheduling.provisioning_model = "SPOT"
            scheduling.preemptible = True
            scheduling.automatic_restart = False
            scheduling.on_host_maintenance = "TERMINATE"
            scheduling.instance_termination_action = "DELETE"
        if r.on_host_maintenance:
            scheduling.on_host_maintenance = r.on_host_maintenance

        body = compute_v1.Instance(
            name=r.name,
            machine_type=f"zones/{r.zone}/machineTypes/{r.machine_type}",
            disks=disks,
            network_interfaces=[nic],
            scheduling=scheduling,
            labels=dict(r.labels),
            metadata=compute_v1.Metadata(
                items=[compute_v1.Items(key=k, value=r.metadata[k]) for k in sorted(r.metadata)]
            ),
            tags=compute_v1.Tags(items=list(r.tags)),
        )
        if r.service_account:
            body.service_accounts = [
                compute_v1.ServiceAccount(email=r.service_account, scopes=list(r.scopes))
            ]
        if any(v is not None for v in (r.secure_boot, r.vtpm, r.integrity_monitoring)):
            shielded = compute_v1.ShieldedInstanceConfig()
            if r.secure_boot is not None:
                shielded.enable_secure_boot = r.secure_boot
            if r.vtpm is not None:
                shielded.enable_vtpm = r.vtpm
            if r.integrity_monitoring is not None:
                shielded.enable_integrity_monitoring = r.integrity_monitoring
            body.shielded_instance_config = shielded
        return body

    def create(self, request: LaunchRequest) -> Instance:
        """Insert the node's instance and wait for its zone operation; on any failure
        delete what was created, then raise (see the module docstring)."""
        attempted = False
        try:
            existing = self._get_raw(request.zone, request.name)
            if existing is not None:
                return self._adopt(request, existing)
            # From here on the instance may exist even when a call fails (a 5xx or a lost
            # answer after GCE accepted the insert): every failure path cleans up.
            attempted = True
            operation = self._insert(request)
            if operation is None:
                existing = self._get_raw(request.zone, request.name)
                if existing is not None:
                    return self._adopt(request, existing)
                raise CreateError(
                    f"inserting instance {request.name} in {request.zone}: it already exists "
                    "but cannot be found",
                    "InstanceConflict",
                    "the instance name is taken",
                )
            self._await_insert(request, operation)
            raw = self._get_raw(request.zone, request.name)
            if raw is None:
                raise CreateError(
                    f"instance {request.name} in {request.zone} vanished after its insert",
                    "InstanceNotFound",
                    "the instance was gone after its insert completed",
                )
            # GCE does not echo a disk's initializeParams: the image is the one launched.
            instance = evolve(
                Instance.from_api(raw, self.project, request.zone), image=request.image
            )
        except Exception as e:
            if attempted:
                self._cleanup(request)
            if isinstance(e, InsufficientCapacityError | CreateError):
                raise
            raise create_error(f"creating instance {request.name}", e) from e
        log.info(
            "launched instance %s type=%s zone=%s capacity-type=%s",
            instance.provider_id,
            instance.machine_type,
            instance.zone,
            instance.capacity_type,
        )
        return instance

    def _adopt(self, r: LaunchRequest, raw: Any) -> Instance:
        """An instance already named for the node: Karpenter restarted mid-launch, or a
        retried insert whose first attempt GCE had accepted. Kept, as upstream does."""
        log.info("instance %s already exists in %s; adopting it", r.name, r.zone)
        return self._with_image(Instance.from_api(raw, self.project, r.zone), raw)

    def _insert(self, r: LaunchRequest) -> Any:
        """Send the insert; returns its zone operation, or None when GCE answers that the
        instance already exists (a retried insert whose first attempt went through).
        Capacity errors mark and raise ``InsufficientCapacityError``, others a
        ``CreateError``."""
        from google.api_core.exceptions import Conflict, GoogleAPICallError

        body = self.instance_body(r)
        try:
            return self._call(
                lambda: self._clients.instances.insert_unary(
                    project=self.project, zone=r.zone, instance_resource=body
                )
            )
        except Conflict:
            return None
        except GoogleAPICallError as e:
            ice = classify(e, r.machine_type, r.zone, r.capacity_type, self._unavailable)
            if ice is not None:
                log.info("insert of %s failed for capacity: %s", r.name, describe(e))
                raise ice from e
            raise create_error(f"inserting instance {r.name} in {r.zone}", e) from e

    def _await_insert(self, r: LaunchRequest, operation: Any) -> None:
        """Wait for the insert; an operation ending with errors raises as ``_insert``."""
        op = self._wait(r.zone, operation)
        errors = operation_errors(op)
        if not errors:
            return
        ice = capacity_error(errors, r.machine_type, r.zone, r.capacity_type, self._unavailable)
        if ice is not None:
            log.info("instance %s failed for capacity in %s: %s", r.name, r.zone, errors)
            raise ice
        detail = "; ".join(m or c for c, m in errors)
        raise create_error(f"instance {r.name} in {r.zone}: operation failed", detail, errors[0][0])

    def _cleanup(self, r: LaunchRequest) -> None:
        """Delete the instance (its auto-delete disks go with it), then any disk of the
        request still there; problems are logged (the launch error matters more, and
        garbage collection catches leftovers)."""
        try:
            self._delete_and_wait(r.zone, r.name)
        except Exception as e:
            log.error("cleanup of instance %s failed: %s", r.name, describe(e))
        for disk in self._disk_names(r):
            try:
                self._delete_disk_if_exists(r.zone, disk)
            except Exception as e:
                log.error("cleanup of disk %s failed: %s", disk, describe(e))

    @staticmethod
    def _disk_names(r: LaunchRequest) -> builtins.list[str]:
        """Names GCE gives the request's persistent disks: the boot disk is named after
        the instance; others after their device name when given."""
        return [r.name] + [d.device_name for d in r.disks if d.device_name and not d.local_ssd]

    # ------------------------------------------------------------------ find / delete

    def _get_raw(self, zone: str, name: str) -> Any:
        """The ``compute_v1.Instance`` or None when GCE does not know it."""
        from google.api_core.exceptions import GoogleAPICallError

        try:
            return self._call(
                lambda: self._clients.instances.get(project=self.project, zone=zone, instance=name)
            )
        except GoogleAPICallError as e:
            if is_not_found(e):
                return None
            raise GCEAPIError(f"getting instance {name} in {zone}: {describe(e)}") from e

    def get(self, name_or_provider_id: str) -> Instance:
        """The instance by provider id (``gce://project/zone/name``; its image read from
        the boot disk) or by name (found through the aggregated list, image left empty);
        ``NodeClaimNotFoundError`` when it does not exist."""
        if name_or_provider_id.startswith("gce://"):
            project, zone, name = parse_provider_id(name_or_provider_id)
            if project != self.project:
                raise NodeClaimNotFoundError(
                    f"instance {name_or_provider_id} is not in project {self.project}"
                )
            raw = self._get_raw(zone, name)
            if raw is None:
                raise NodeClaimNotFoundError(f"instance {name_or_provider_id} not found")
            return self._with_image(Instance.from_api(raw, self.project, zone), raw)
        name = name_or_provider_id
        found = self._aggregated(f'name = "{name}"')
        if not found:
            raise NodeClaimNotFoundError(f"instance {name} not found in project {self.project}")
        return found[0]

    def _with_image(self, instance: Instance, raw: Any) -> Instance:
        """``instance`` with its image read from its boot disk (GCE reports the image on
        the disk, not the instance); unchanged when the disk cannot be read."""
        from google.api_core.exceptions import GoogleAPICallError

        if instance.image:
            return instance
        boot = next((d for d in raw.disks if d.boot and d.source), None)
        if boot is None:
            return instance
        try:
            disk = self._call(
                lambda: self._clients.disks.get(
                    project=self.project, zone=instance.zone, disk=_last(boot.source)
                )
            )
        except GoogleAPICallError as e:
            log.info("boot disk of %s unreadable: %s", instance.name, describe(e))
            return instance
        return evolve(instance, image=disk.source_image or "")

    def _aggregated(self, filter_: str) -> builtins.list[Instance]:
        """Every instance matching ``filter_`` across zones (all pages), restricted to
        ``region``'s zones when set."""
        from google.api_core.exceptions import GoogleAPICallError

        def fetch() -> builtins.list[Instance]:
            out: builtins.list[Instance] = []
            pager = self._clients.instances.aggregated_list(
                request={
                    "project": self.project,
                    "filter": filter_,
                }
            )
            for scope, scoped in pager:
                zone = scope.removeprefix("zones/")
                if self.region and not zone.startswith(self.region + "-"):
                    continue
                out.extend(Instance.from_api(i, self.project, zone) for i in scoped.instances)
            return out

        try:
            return self._call(fetch)
        except GoogleAPICallError as e:
            raise GCEAPIError(f"listing instances of project {self.project}: {describe(e)}") from e

    def list(self) -> builtins.list[Instance]:
        """The cluster's Karpenter instances: labelled with a NodePool, a GCENodeClass and
        the cluster name; those labelled with another cluster location are dropped (an
        instance without the location label, from an older Karpenter, is kept, as
        upstream does). Images are not read (one disk call per instance); ``ValueError``
        without a cluster name (the filter would match every cluster's nodes)."""
        if not self.cluster_name:
            raise ValueError("listing Karpenter instances needs the cluster name")
        out = []
        for inst in self._aggregated(list_filter(self.cluster_name)):
            location = inst.labels.get(LABEL_CLUSTER_LOCATION)
            if location is not None and self.cluster_location and location != self.cluster_location:
                continue
            out.append(inst)
        return sorted(out, key=lambda i: (i.zone, i.name))

    def delete(self, name_or_provider_id: str, *, wait: bool = True) -> None:
        """Delete the instance (its auto-delete disks go with it) and, with ``wait``,
        wait for the operation. ``NodeClaimNotFoundError`` when it does not exist; an
        instance already ``STOPPING`` (a delete in flight) is left to finish, as upstream
        does, to avoid overlapping deletes. Unlike upstream, a ``TERMINATED`` instance is
        deleted too rather than reported gone (it would keep its disks and addresses)."""
        if name_or_provider_id.startswith("gce://"):
            _, zone, name = parse_provider_id(name_or_provider_id)
        else:
            inst = self.get(name_or_provider_id)
            zone, name = inst.zone, inst.name
        raw = self._get_raw(zone, name)
        if raw is None:
            raise NodeClaimNotFoundError(f"instance {name} in {zone} not found")
        if raw.status == STATUS_STOPPING:
            log.info("instance %s is already being deleted", name)
            return
        if not self._delete(zone, name, wait=wait):
            raise NodeClaimNotFoundError(f"instance {name} in {zone} not found")

    def update_labels(self, provider_id_: str, labels: Mapping[str, str]) -> Instance:
        """Merge ``labels`` into the instance's GCE labels (upstream ``CreateTags``: read
        the labels and their fingerprint, ``setLabels`` the union, wait); retried once when
        another writer changed them in between. ``NodeClaimNotFoundError`` when the
        instance is gone."""
        from google.api_core.exceptions import GoogleAPICallError
        from google.cloud import compute_v1

        _, zone, name = parse_provider_id(provider_id_)
        for attempt in range(2):
            raw = self._get_raw(zone, name)
            if raw is None:
                raise NodeClaimNotFoundError(f"instance {name} in {zone} not found")
            merged = {**dict(raw.labels), **labels}
            if merged == dict(raw.labels):
                return Instance.from_api(raw, self.project, zone)
            req = compute_v1.InstancesSetLabelsRequest(
                labels=merged, label_fingerprint=raw.label_fingerprint
            )
            try:
                op = self._call(
                    functools.partial(
                        self._clients.instances.set_labels_unary,
                        project=self.project,
                        zone=zone,
                        instance=name,
                        instances_set_labels_request_resource=req,
                    )
                )
            except GoogleAPICallError as e:
                if is_not_found(e):
                    raise NodeClaimNotFoundError(f"instance {name} in {zone} not found") from e
                if getattr(e, "code", None) == 412 and attempt == 0:
                    continue  # the fingerprint moved: read again and merge again
                raise GCEAPIError(f"setting labels of {name} in {zone}: {describe(e)}") from e
            self._wait(zone, op)
            found = self._get_raw(zone, name)
            if found is None:
                raise NodeClaimNotFoundError(f"instance {name} in {zone} not found")
            return Instance.from_api(found, self.project, zone)
        raise GCEAPIError(f"setting labels of {name} in {zone}: labels keep changing")

    def _delete(self, zone: str, name: str, *, wait: bool) -> bool:
        """Issue the delete (and wait); False when the instance was already gone."""
        from google.api_core.exceptions import GoogleAPICallError

        try:
            op = self._call(
                lambda: self._clients.instances.delete_unary(
                    project=self.project, zone=zone, instance=name
                )
            )
        except GoogleAPICallError as e:
            if is_not_found(e):
                return False
            raise GCEAPIError(f"deleting instance {name} in {zone}: {describe(e)}") from e
        log.debug("deleting instance %s in %s (operation %s)", name, zone, op.name)
        if wait:
            done = self._wait(zone, op, self.cleanup_timeout)
            errors = operation_errors(done)
            if errors:
                raise GCEAPIError(
                    f"deleting instance {name} in {zone}: "
                    + one_line("; ".join(m or c for c, m in errors))
                )
        return True

    def _delete_and_wait(self, zone: str, name: str) -> None:
        if self._get_raw(zone, name) is not None:
            self._delete(zone, name, wait=True)

    def _delete_disk_if_exists(self, zone: str, disk: str) -> None:
        from google.api_core.exceptions import GoogleAPICallError

        client = self._clients.disks
        try:
            self._call(lambda: client.get(project=self.project, zone=zone, disk=disk))
        except GoogleAPICallError as e:
            if is_not_found(e):
                return
            raise
        op = self._call(lambda: client.delete_unary(project=self.project, zone=zone, disk=disk))
        self._wait(zone, op, self.cleanup_timeout)
        log.info("deleted leftover disk %s in %s", disk, zone)
