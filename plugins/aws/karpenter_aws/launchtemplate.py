"""EC2 launch templates: what every instance of one (AMI, kubelet settings, ...) shares.

CreateFleet takes the per-offering parts (instance type, subnet, zone, price) as overrides;
everything else (image, instance profile, security groups, user data, disks, metadata
options, tags) lives in a launch template. As upstream (``pkg/providers/launchtemplate``),
a template is named after a hash of its content, ``karpenter.k8s.aws/<hash>``, so two
launches that need the same template share it, and any change to the content (a new
AMI, a different max-pods) gives a new name instead of editing a template in use.

:class:`LaunchTemplateSpec` is the pure value (content, name, CreateLaunchTemplate
request); :class:`LaunchTemplateProvider` makes sure one exists in EC2: it remembers
templates it saw for a minute (each use renews the minute), else
``DescribeLaunchTemplates`` by name, and creates the template on
``InvalidLaunchTemplateName.NotFoundException``. A template CreateFleet says is gone is
forgotten (:meth:`LaunchTemplateProvider.invalidate`) so the retry recreates it.
:meth:`LaunchTemplateProvider.delete_all` removes an EC2NodeClass's templates.

Cleanup, as upstream: at start-up (:meth:`LaunchTemplateProvider.hydrate`, once the
process leads) every template tagged for the cluster enters the cache, and a template
whose entry expires, i.e. no launch used it for a minute, is deleted from EC2
(:meth:`LaunchTemplateProvider.sweep`, every minute). So templates of an older AMI or
kubelet setting, and of EC2NodeClasses deleted while no Karpenter ran, do not pile up;
one still needed is simply made again by the next launch. The ``aws.launchtemplate.cleanup``
singleton (:class:`LaunchTemplateCleanup`) drives both.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import math
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from attrs import asdict, evolve, field, frozen
from botocore.exceptions import BotoCoreError, ClientError  # type: ignore[import-untyped]

from karpenter_aws.amifamily import get_family
from karpenter_aws.labels import GROUP, LABEL_NODE_CLASS
from karpenter_aws.network import Interfaces
from karpenter_aws.userdata import UserDataOptions, render
from karpenter_core.plugin_api import Result

__all__ = [
    "EKS_CLUSTER_NAME_TAG",
    "LT_NOT_FOUND_CODES",
    "BlockDevice",
    "LaunchTemplateCleanup",
    "LaunchTemplateProvider",
    "LaunchTemplateSpec",
    "MetadataOptions",
    "TemplateInputs",
    "block_device_from",
    "default_block_devices",
    "metadata_options_from",
]

log = logging.getLogger("karpenter.aws.launchtemplate")

NAME_PREFIX = GROUP
EKS_CLUSTER_NAME_TAG = "eks:eks-cluster-name"
LT_NOT_FOUND_CODES = frozenset(
    {"InvalidLaunchTemplateName.NotFoundException", "InvalidLaunchTemplateId.NotFound"}
)
_ALREADY_EXISTS = "InvalidLaunchTemplateName.AlreadyExistsException"
CACHE_TTL_SECONDS = 60.0
SWEEP_INTERVAL_SECONDS = 60.0
"""How often expired templates are deleted (upstream's cache clean-up interval)."""
GIB = 1 << 30
_OPTIONAL = frozenset(
    {"network", "nested_virtualization", "capacity_reservation", "placement_group"}
)
"""Template parts left out of the name while unset."""


@frozen
class BlockDevice:
    """One EBS block device mapping, sizes in GiB as the EC2 API takes them."""

    device_name: str
    volume_size_gib: int | None = None
    volume_type: str | None = None
    encrypted: bool | None = None
    delete_on_termination: bool | None = None
    iops: int | None = None
    throughput: int | None = None
    kms_key_id: str | None = None
    snapshot_id: str | None = None

    def request(self) -> dict[str, Any]:
        ebs: dict[str, Any] = {}
        for key, value in (
            ("VolumeSize", self.volume_size_gib),
            ("VolumeType", self.volume_type),
            ("Encrypted", self.encrypted),
            ("DeleteOnTermination", self.delete_on_termination),
            ("Iops", self.iops or None),
            ("Throughput", self.throughput or None),
            ("KmsKeyId", self.kms_key_id),
            ("SnapshotId", self.snapshot_id),
        ):
            if value is not None:
                ebs[key] = value
        return {"DeviceName": self.device_name, "Ebs": ebs}


def block_device_from(bdm: Any) -> BlockDevice:
    """A :class:`BlockDevice` from an EC2NodeClass block device mapping (sizes in bytes,
    rounded up to whole GiB as upstream does)."""
    size = getattr(bdm, "volume_size", None)
    return BlockDevice(
        device_name=str(getattr(bdm, "device_name", "") or ""),
        volume_size_gib=math.ceil(size / GIB) if size else None,
        volume_type=getattr(bdm, "volume_type", None),
        encrypted=getattr(bdm, "encrypted", None),
        delete_on_termination=getattr(bdm, "delete_on_termination", None),
        iops=getattr(bdm, "iops", None),
        throughput=getattr(bdm, "throughput", None),
        kms_key_id=getattr(bdm, "kms_key_id", None),
        snapshot_id=getattr(bdm, "snapshot_id", None),
    )


def default_block_devices(family: str) -> tuple[BlockDevice, ...]:
    """The AMI family's block devices when the EC2NodeClass names none (upstream's
    defaults: AL2/AL2023 a 20Gi root, Bottlerocket 4Gi + 20Gi, Windows 50Gi; Custom none,
    so the AMI's own mappings apply)."""
    return tuple(block_device_from(b) for b in get_family(family).default_block_device_mappings)


@frozen
class MetadataOptions:
    """Instance metadata service options (EC2NodeClass defaults are upstream's)."""

    http_endpoint: str = "enabled"
    http_protocol_ipv6: str = "disabled"
    http_put_response_hop_limit: int = 1
    http_tokens: str = "required"

    def request(self) -> dict[str, Any]:
        return {
            "HttpEndpoint": self.http_endpoint,
            "HttpProtocolIpv6": self.http_protocol_ipv6,
            "HttpPutResponseHopLimit": self.http_put_response_hop_limit,
            "HttpTokens": self.http_tokens,
            "InstanceMetadataTags": "disabled",
        }


def metadata_options_from(mo: Any) -> MetadataOptions:
    """:class:`MetadataOptions` from an EC2NodeClass's ``metadata_options`` (None: defaults)."""
    if mo is None:
        return MetadataOptions()
    d = MetadataOptions()

    def pick(name: str, default: Any) -> Any:
        value = getattr(mo, name, None)
        return default if value is None else value

    return MetadataOptions(
        http_endpoint=str(pick("http_endpoint", d.http_endpoint)),
        http_protocol_ipv6=str(pick("http_protocol_ipv6", d.http_protocol_ipv6)),
        http_put_response_hop_limit=int(
            pick("http_put_response_hop_limit", d.http_put_response_hop_limit)
        ),
        http_tokens=str(pick("http_tokens", d.http_tokens)),
    )


def _sorted_ids(value: Iterable[str]) -> tuple[str, ...]:
    return tuple(sorted(value))


def _tags(value: Mapping[str, str]) -> Mapping[str, str]:
    return dict(sorted(value.items()))


def ec2_tags(tags: Mapping[str, str]) -> list[dict[str, str]]:
    """EC2's ``[{Key, Value}]`` form, sorted by key."""
    return [{"Key": k, "Value": v} for k, v in sorted(tags.items())]


@frozen
class LaunchTemplateSpec:
    """Everything one launch template holds; its name is a hash of all of it."""

    image_id: str
    instance_profile: str
    security_group_ids: tuple[str, ...] = field(converter=_sorted_ids)
    user_data: str
    capacity_type: str
    tags: Mapping[str, str] = field(factory=dict, converter=_tags)
    block_devices: tuple[BlockDevice, ...] = ()
    metadata_options: MetadataOptions = field(factory=MetadataOptions)
    associate_public_ip: bool | None = None
    detailed_monitoring: bool = False
    tenancy: str = "default"
    # None: the one default interface from security_group_ids and associate_public_ip
    network: Interfaces | None = None
    nested_virtualization: str | None = None
    # (reservation id, reservation type) for a launch into a capacity reservation
    capacity_reservation: tuple[str, str] | None = None
    # (group id, partition number or 0) for a launch into a placement group
    placement_group: tuple[str, int] | None = None

    def name(self) -> str:
        """``karpenter.k8s.aws/<decimal 64-bit hash of the content>``; unset optional
        parts stay out of it, so templates made before they existed keep their names."""
        content = asdict(self, filter=lambda a, v: v is not None or a.name not in _OPTIONAL)
        doc = json.dumps(content, sort_keys=True, default=str)
        digest = int.from_bytes(hashlib.sha256(doc.encode()).digest()[:8], "big")
        return f"{NAME_PREFIX}/{digest}"

    def _placement(self) -> dict[str, Any]:
        """The template's ``Placement``: tenancy, and the placement group (by id, as
        upstream) with the partition a partition-group launch targets."""
        placement: dict[str, Any] = {"Tenancy": self.tenancy}
        if self.placement_group is not None:
            group_id, partition = self.placement_group
            placement["GroupId"] = group_id
            if partition:
                placement["PartitionNumber"] = partition
        return placement

    def request(self) -> dict[str, Any]:
        """The ``CreateLaunchTemplate`` arguments for this template."""
        network = self.network or Interfaces(
            security_group_ids=self.security_group_ids,
            associate_public_ip=self.associate_public_ip,
        )
        data_tags = [{"ResourceType": "network-interface", "Tags": ec2_tags(self.tags)}]
        if self.capacity_type == "spot":
            data_tags.append(
                {"ResourceType": "spot-instances-request", "Tags": ec2_tags(self.tags)}
            )
        data: dict[str, Any] = {
            "ImageId": self.image_id,
            "IamInstanceProfile": {"Name": self.instance_profile},
            "Monitoring": {"Enabled": self.detailed_monitoring},
            "NetworkInterfaces": network.request(),
            "UserData": base64.b64encode(self.user_data.encode()).decode(),
            "MetadataOptions": self.metadata_options.request(),
            "TagSpecifications": data_tags,
            "Placement": self._placement(),
        }
        if self.capacity_reservation is not None:
            # only into this reservation: never fall back to open capacity
            rid, rtype = self.capacity_reservation
            data["CapacityReservationSpecification"] = {
                "CapacityReservationPreference": "capacity-reservations-only",
                "CapacityReservationTarget": {"CapacityReservationId": rid},
            }
            if rtype == "capacity-block":
                data["InstanceMarketOptions"] = {"MarketType": "capacity-block"}
        if self.nested_virtualization:
            data["CpuOptions"] = {"NestedVirtualization": self.nested_virtualization}
        if self.block_devices:
            data["BlockDeviceMappings"] = [b.request() for b in self.block_devices]
        return {
            "LaunchTemplateName": self.name(),
            "LaunchTemplateData": data,
            "TagSpecifications": [{"ResourceType": "launch-template", "Tags": ec2_tags(self.tags)}],
        }


@frozen
class TemplateInputs:
    """What the templates of one launch share; :meth:`spec` adds the per-group parts.

    Instance types are grouped by (AMI, max pods) because both end up in the template
    (image id, kubelet ``maxPods`` in the user data); the capacity type is in the user
    data's labels and decides whether spot requests get tagged. ``placement_group`` is
    the (group id, partition or 0) every template of the launch places into.
    """

    family: str
    instance_profile: str
    security_group_ids: tuple[str, ...] = field(converter=_sorted_ids)
    user_data: UserDataOptions
    tags: Mapping[str, str] = field(factory=dict, converter=_tags)
    block_devices: tuple[BlockDevice, ...] = ()
    metadata_options: MetadataOptions = field(factory=MetadataOptions)
    associate_public_ip: bool | None = None
    detailed_monitoring: bool = False
    tenancy: str = "default"
    network: Interfaces | None = None
    nested_virtualization: str | None = None
    placement_group: tuple[str, int] | None = None

    def spec(
        self,
        image_id: str,
        max_pods: int | None,
        capacity_type: str,
        efa_count: int = 0,
        capacity_reservation: tuple[str, str] | None = None,
    ) -> LaunchTemplateSpec:
        """The template for ``image_id`` with kubelet ``max_pods`` (the user's own
        ``maxPods`` wins) for ``capacity_type`` launches, with ``efa_count`` EFA interfaces
        when the NodeClass lists no interfaces of its own, targeting
        ``capacity_reservation`` (id, type) for a reserved launch. Raises
        :class:`~karpenter_aws.userdata.UserDataError` when the user data cannot be made."""
        ud = self.user_data
        labels = {**ud.labels, "karpenter.sh/capacity-type": capacity_type}
        ud = evolve(
            ud, labels=labels, max_pods=ud.max_pods if ud.max_pods is not None else max_pods
        )
        blocks = self.block_devices or default_block_devices(self.family)
        return LaunchTemplateSpec(
            image_id=image_id,
            instance_profile=self.instance_profile,
            security_group_ids=self.security_group_ids,
            user_data=render(self.family, ud),
            capacity_type=capacity_type,
            tags=self.tags,
            block_devices=blocks,
            metadata_options=self.metadata_options,
            associate_public_ip=self.associate_public_ip,
            detailed_monitoring=self.detailed_monitoring,
            tenancy=self.tenancy,
            network=self._network(efa_count),
            nested_virtualization=self.nested_virtualization,
            capacity_reservation=capacity_reservation,
            placement_group=self.placement_group,
        )

    def _network(self, efa_count: int) -> Interfaces | None:
        """The interfaces with ``efa_count`` EFAs; None when they are just the default
        one (so that template keeps the name it always had)."""
        default = Interfaces(
            security_group_ids=self.security_group_ids,
            associate_public_ip=self.associate_public_ip,
        )
        network = evolve(self.network or default, efa_count=efa_count)
        return None if network == default else network


def error_code(err: BaseException) -> str:
    """The AWS error code of a botocore ``ClientError`` (``""`` otherwise)."""
    if isinstance(err, ClientError):
        return str(err.response.get("Error", {}).get("Code") or "")
    return ""


class LaunchTemplateProvider:
    """Makes sure the launch templates a launch needs exist (see the module docstring)."""

    def __init__(
        self,
        ec2: Any,
        *,
        monotonic: Callable[[], float] = time.monotonic,
        ttl: float = CACHE_TTL_SECONDS,
    ) -> None:
        self._ec2 = ec2
        self._monotonic = monotonic
        self._ttl = ttl
        self._seen: dict[str, float] = {}
        self._lock = threading.Lock()
        self._lookups: dict[str, threading.Lock] = {}

    def ensure(self, spec: LaunchTemplateSpec) -> str:
        """The name of an existing template with ``spec``'s content (created if missing).

        Raises botocore's ``ClientError`` for anything but a missing template.
        """
        name = spec.name()
        if self._renew(name):
            return name
        with self._lock:
            lookup = self._lookups.setdefault(name, threading.Lock())
        # one lookup per name at a time (upstream serialises them all): a burst of
        # launches needing a new template describes and creates it once, not per launch
        with lookup:
            if self._renew(name):
                return name
            return self._find_or_create(spec, name)

    def _renew(self, name: str) -> bool:
        """Whether ``name`` is cached (unexpired); a hit renews its lifetime."""
        now = self._monotonic()
        with self._lock:
            if self._seen.get(name, -math.inf) > now:
                self._seen[name] = now + self._ttl
                return True
            return False

    def _find_or_create(self, spec: LaunchTemplateSpec, name: str) -> str:
        try:
            out = self._ec2.describe_launch_templates(LaunchTemplateNames=[name])
            found = bool(out.get("LaunchTemplates"))
        except ClientError as e:
            if error_code(e) not in LT_NOT_FOUND_CODES:
                raise
            found = False
        if not found:
            try:
                self._ec2.create_launch_template(**spec.request())
                log.info("created launch template %s (image %s)", name, spec.image_id)
            except ClientError as e:
                if error_code(e) != _ALREADY_EXISTS:
                    raise
        with self._lock:
            self._seen[name] = self._monotonic() + self._ttl
        return name

    def invalidate(self, name: str) -> None:
        """Forget ``name`` (CreateFleet said it does not exist), so it is recreated."""
        with self._lock:
            self._seen.pop(name, None)

    def hydrate(self, cluster_name: str) -> int:
        """Cache every template tagged for ``cluster_name`` (start-up); how many.

        From now on each of them is deleted by :meth:`sweep` unless a launch uses it
        within the cache's lifetime.
        """
        paginator = self._ec2.get_paginator("describe_launch_templates")
        filters = [{"Name": f"tag:{EKS_CLUSTER_NAME_TAG}", "Values": [cluster_name]}]
        names = [
            str(lt.get("LaunchTemplateName") or "")
            for page in paginator.paginate(Filters=filters, PaginationConfig={"PageSize": 200})
            for lt in page.get("LaunchTemplates", [])
        ]
        expiry = self._monotonic() + self._ttl
        with self._lock:
            for name in names:
                if name:
                    self._seen.setdefault(name, expiry)
        log.info("hydrated the launch template cache with %d templates", len(names))
        return len(names)

    def sweep(self) -> list[str]:
        """Delete from EC2 every cached template whose entry expired; their names.

        The lock is held while deleting so that no launch renews an entry being deleted;
        a launch that looked a template up just before still recovers, since CreateFleet
        then reports it missing and the retry recreates it.
        """
        deleted: list[str] = []
        with self._lock:
            now = self._monotonic()
            for name, expiry in sorted(self._seen.items()):
                if expiry > now:
                    continue
                try:
                    self._ec2.delete_launch_template(LaunchTemplateName=name)
                except ClientError as e:
                    if error_code(e) not in LT_NOT_FOUND_CODES:
                        log.warning("deleting expired launch template %s failed: %s", name, e)
                        continue
                del self._seen[name]
                self._lookups.pop(name, None)
                deleted.append(name)
        if deleted:
            log.info("deleted %d unused launch templates: %s", len(deleted), ", ".join(deleted))
        return deleted

    def delete_all(self, cluster_name: str, nodeclass_name: str) -> int:
        """Delete every template this cluster made for ``nodeclass_name``; how many."""
        paginator = self._ec2.get_paginator("describe_launch_templates")
        filters = [
            {"Name": f"tag:{EKS_CLUSTER_NAME_TAG}", "Values": [cluster_name]},
            {"Name": f"tag:{LABEL_NODE_CLASS}", "Values": [nodeclass_name]},
        ]
        deleted = 0
        for page in paginator.paginate(Filters=filters):
            for lt in page.get("LaunchTemplates", []):
                name = str(lt.get("LaunchTemplateName") or "")
                try:
                    self._ec2.delete_launch_template(LaunchTemplateName=name)
                except ClientError as e:
                    if error_code(e) not in LT_NOT_FOUND_CODES:
                        raise
                self.invalidate(name)
                deleted += 1
        return deleted


class LaunchTemplateCleanup:
    """A singleton reconciler: hydrate the cache once, then :meth:`~LaunchTemplateProvider.
    sweep` every :data:`SWEEP_INTERVAL_SECONDS` (hydration is retried until it works;
    launches do not wait for it)."""

    def __init__(self, provider: LaunchTemplateProvider, cluster_name: str) -> None:
        self._provider = provider
        self._cluster = cluster_name
        self._hydrated = False

    def reconcile(self) -> Result:
        if not self._hydrated:
            try:
                self._provider.hydrate(self._cluster)
            except (ClientError, BotoCoreError) as e:
                log.warning("hydrating the launch template cache failed: %s", e)
                return Result.after(SWEEP_INTERVAL_SECONDS)
            self._hydrated = True
            return Result.after(SWEEP_INTERVAL_SECONDS)
        try:
            self._provider.sweep()
        except BotoCoreError as e:
            log.warning("deleting expired launch templates failed: %s", e)
        return Result.after(SWEEP_INTERVAL_SECONDS)
