"""``nodeclass.status``: resolves what an EC2NodeClass selects and says whether it is Ready.

Each reconcile of an EC2NodeClass:

* adds the ``karpenter.k8s.aws/termination`` finalizer and the drift-hash annotations
  (``karpenter.k8s.aws/ec2nodeclass-hash`` / ``-hash-version``; when the hash version
  changes, NodeClaims of the class that have not drifted get the new hash, so a hash
  algorithm change alone does not drift nodes);
* resolves subnets (most free IPs first), security groups, AMIs (ids, tags, names, owners,
  SSM parameters, or an alias through the public SSM parameters of the cluster's Kubernetes
  version) and the instance profile (created under
  ``/karpenter/<region>/<cluster>/<nodeclass-uid>/`` for a ``role``, looked up for an
  ``instanceProfile``), writing them to status;
* sets ``SubnetsReady``, ``SecurityGroupsReady``, ``AMIsReady``, ``InstanceProfileReady``,
  ``ValidationSucceeded``, ``PlacementGroupReady``, with the ReservedCapacity gate
  ``CapacityReservationsReady``, and their conjunction ``Ready``, stamped with the
  generation.

``ValidationSucceeded`` also needs the ``DryRun`` permission checks of
:mod:`karpenter_aws.validation` to pass.

``PlacementGroupReady`` (as upstream) is True without a ``placementGroupSelector``, True
once the group it names is found available (re-checked every minute), False with
``PlacementGroupNotFound`` when no available group has that name or id and
``PlacementGroupResolutionFailed`` when EC2 could not be asked. The group itself is kept
in memory by :class:`~karpenter_aws.placementgroup.PlacementGroupProvider` (upstream has no
status field for it), shared with launches, offerings and drift.

``status.capacityReservations`` lists what ``capacityReservationSelectorTerms`` select
(:mod:`karpenter_aws.capacityreservation`), sorted by id, re-read every minute or at the
next reservation end if sooner; an EC2 failure keeps the previous list and the previous
``CapacityReservationsReady`` (and says so in an event) rather than dropping the reserved
offerings of running nodes.

AWS failures (``ClientError``, connection errors) become a False condition whose message
carries the AWS error code, plus a Warning event; the controller itself never raises for
them. A spec this provider cannot parse sets ``ValidationSucceeded`` False with the field
named.

Deletion: while NodeClaims still name the class the finalizer stays (an event says which,
every 10 minutes; NodeClaim deletions re-run the reconcile at once); then the managed
instance profiles under the class's IAM path and its launch templates are deleted and the
finalizer removed.
"""

from __future__ import annotations

import copy
import hashlib
import json
import logging
import uuid
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping
from datetime import UTC, datetime
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError  # type: ignore[import-untyped]

from karpenter_aws.amifamily import (
    DEFAULT_SSM_PREFIX,
    AliasError,
    AliasParameter,
    alias_parameters,
    variant_requirements,
)
from karpenter_aws.capacityreservation import (
    EXPIRATION_PERIOD,
    CapacityReservation,
    CapacityReservationProvider,
    tag_filters,
)
from karpenter_aws.clients import AWSClients
from karpenter_aws.labels import EC2_NODE_CLASS, LABEL_NODE_CLASS
from karpenter_aws.nodeclass import (
    CONDITION_AMIS_READY,
    CONDITION_CAPACITY_RESERVATIONS_READY,
    CONDITION_INSTANCE_PROFILE_READY,
    CONDITION_PLACEMENT_GROUP_READY,
    CONDITION_SECURITY_GROUPS_READY,
    CONDITION_SUBNETS_READY,
    CONDITION_VALIDATION_SUCCEEDED,
    FINALIZER,
    HASH_ANNOTATION,
    HASH_VERSION,
    HASH_VERSION_ANNOTATION,
    NODECLASS_RESOURCE,
    READY_CONDITIONS,
    READY_CONDITIONS_RESERVED,
    EC2NodeClass,
    NodeClassError,
)
from karpenter_aws.placementgroup import PlacementGroupError, PlacementGroupProvider
from karpenter_aws.settings import AWSSettings
from karpenter_aws.validation import DryRunValidator
from karpenter_core.plugin_api import (
    ApiError,
    Clock,
    ConditionSet,
    Conflict,
    EventRecorder,
    KubeClient,
    NotFound,
    ObjectKey,
    Result,
    Watch,
    condition_of,
)

__all__ = [
    "CONTROLLER_NAME",
    "DEFAULT_REQUEUE",
    "SUBNET_REQUEUE",
    "TERMINATION_EVENT_INTERVAL",
    "WATCHES",
    "NodeClassStatusReconciler",
    "instance_profile_path",
]

log = logging.getLogger("karpenter.aws.nodeclass")

CONTROLLER_NAME = "nodeclass.status"
SUBNET_REQUEUE = 60.0
"""Subnets are re-read every minute: their free-IP counts order launches."""
RESERVATION_REQUEUE = 60.0
"""Capacity reservations are re-read every minute (upstream's poll period)."""
PLACEMENT_GROUP_REQUEUE = 60.0
"""A selected placement group is looked up again every minute (the provider's TTL)."""
DEFAULT_REQUEUE = 300.0
"""Security groups, AMIs and the instance profile change rarely: every five minutes."""
TERMINATION_EVENT_INTERVAL = 600.0
_STATUS_WRITE_ATTEMPTS = 3

_NODECLAIMS = ("karpenter.sh/v1", "NodeClaim")
_ARCHITECTURES = {"x86_64": "amd64", "arm64": "arm64"}


def instance_profile_path(region: str, cluster: str, uid: str) -> str:
    """The IAM path of the instance profiles Karpenter manages for one NodeClass; deleting
    the class deletes everything under it."""
    return f"/karpenter/{region}/{cluster}/{uid}/"


class _AWSFailure(Exception):
    """An AWS call failed; ``code`` is the AWS error code (or the botocore error name)."""

    def __init__(self, operation: str, code: str, message: str) -> None:
        super().__init__(f"{operation} failed: {code}: {message}")
        self.operation = operation
        self.code = code


def _aws(operation: str, call: Callable[[], Any]) -> Any:
    """Run one AWS call, turning its errors into :class:`_AWSFailure`."""
    try:
        return call()
    except ClientError as e:
        err = e.response.get("Error") or {}
        raise _AWSFailure(
            operation, str(err.get("Code") or "Unknown"), str(err.get("Message") or e)
        ) from None
    except BotoCoreError as e:
        raise _AWSFailure(operation, type(e).__name__, str(e)) from None


def _paginate(client: Any, method: str, operation: str, **kwargs: Any) -> list[dict[str, Any]]:
    """Every page of a paginated AWS call (errors as :class:`_AWSFailure`)."""
    return list(_aws(operation, lambda: list(client.get_paginator(method).paginate(**kwargs))))


def _union_by_id(
    client: Any,
    method: str,
    operation: str,
    filter_sets: list[list[dict[str, Any]]],
    items_key: str,
    id_key: str,
) -> list[dict[str, Any]]:
    """The items any of ``filter_sets`` selects, each once: selector terms are ORed, one
    describe call per term (EC2 ANDs the filters within a call)."""
    found: dict[str, dict[str, Any]] = {}
    for filters in filter_sets:
        for page in _paginate(client, method, operation, Filters=filters):
            for item in page.get(items_key) or []:
                found[item[id_key]] = item
    return list(found.values())


def _code(e: ClientError) -> str:
    return str((e.response.get("Error") or {}).get("Code") or "")


def _parse_time(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        t = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return t if t.tzinfo else t.replace(tzinfo=UTC)


def _requirement_sort_key(r: Mapping[str, Any]) -> tuple[int, str]:
    key = str(r.get("key", ""))
    return (len(key), key)


class NodeClassStatusReconciler:
    """Reconciles one EC2NodeClass at a time (see the module docstring)."""

    def __init__(
        self,
        kube: KubeClient,
        clock: Clock,
        recorder: EventRecorder,
        clients: AWSClients,
        settings: AWSSettings,
        *,
        kubernetes_version: str | Callable[[], str] | None = None,
        ssm_prefix: str = DEFAULT_SSM_PREFIX,
        ca_bundle: str | None = None,
        reservations: CapacityReservationProvider | None = None,
        reserved_capacity: bool = True,
        placement_groups: PlacementGroupProvider | None = None,
    ) -> None:
        """``kubernetes_version`` (``"1.31"``) picks the alias SSM parameters; by default it
        is read from the API server's ``/version``, else from EKS ``DescribeCluster`` (and
        kept for five minutes). ``ssm_prefix`` is where the public AMI parameters live
        (``/aws/service``). ``ca_bundle`` enters the drift hash (default: the
        ``cluster-ca-bundle`` setting); it must be the one launches hash with.
        ``reserved_capacity`` is the ReservedCapacity gate: without it reservations are not
        resolved and ``CapacityReservationsReady`` is not among Ready's conditions."""
        self.kube = kube
        self.clock = clock
        self.recorder = recorder
        self.clients = clients
        self.settings = settings
        self.ssm_prefix = ssm_prefix.rstrip("/")
        self._kubernetes_version = kubernetes_version
        self._discovered_version: tuple[float, str] | None = None
        self.ca_bundle = ca_bundle if ca_bundle is not None else settings.cluster_ca_bundle
        # (role, uid) -> profile created but maybe not yet in status (a failed status
        # write must not make the next reconcile create a second profile)
        self._created_profiles: dict[tuple[str, str], str] = {}
        self._dry_run = DryRunValidator(clients.ec2, clock.monotonic)
        # shared with the instance types, whose reserved offerings read its counts
        self.reservations = reservations or CapacityReservationProvider(clients.ec2, clock)
        self.reserved_capacity = reserved_capacity
        # shared with the cloud provider, which launches into the group it resolves
        self.placement_groups = placement_groups or PlacementGroupProvider(clients.ec2, clock)
        self._ready_conditions = (
            READY_CONDITIONS_RESERVED if reserved_capacity else READY_CONDITIONS
        )

    # ------------------------------------------------------------------ entry point

    def reconcile(self, key: ObjectKey) -> Result:
        try:
            obj = self.kube.get(NODECLASS_RESOURCE, key.name)
        except NotFound:
            return Result()
        meta = obj.get("metadata") or {}
        if meta.get("deletionTimestamp"):
            return self._finalize(obj)
        try:
            nodeclass: EC2NodeClass | None = EC2NodeClass.from_dict(obj)
            error = ""
        except NodeClassError as e:
            nodeclass, error = None, str(e)
        updated, requeue = self._ensure_metadata(obj, nodeclass)
        if updated is None:
            return requeue
        obj = updated
        status_obj = copy.deepcopy(obj)
        conditions = ConditionSet(status_obj, self.clock, dependents=self._ready_conditions)
        if nodeclass is None:
            conditions.set_false(CONDITION_VALIDATION_SUCCEEDED, "InvalidSpec", error)
            self.recorder.warning(obj, "InvalidSpec", error)
            return self._write_status(obj, status_obj) or Result()
        status = status_obj.setdefault("status", {})
        after = [
            self._subnets(nodeclass, status, conditions, obj),
            self._security_groups(nodeclass, status, conditions, obj),
            self._amis(nodeclass, status, conditions, obj),
            self._instance_profile(nodeclass, status, conditions, obj),
        ]
        if self.reserved_capacity:
            after.append(self._capacity_reservations(nodeclass, status, conditions, obj))
        after.append(self._placement_group(nodeclass, conditions, obj))
        self._validation(nodeclass, conditions, obj, status)
        return self._write_status(obj, status_obj) or Result.after(min(after))

    # ------------------------------------------------------------------ metadata

    def _ensure_metadata(
        self, obj: dict[str, Any], nodeclass: EC2NodeClass | None
    ) -> tuple[dict[str, Any] | None, Result]:
        """Finalizer and hash annotations, written before anything is created in AWS (the
        finalizer is what guarantees the instance profile is cleaned up)."""
        new = copy.deepcopy(obj)
        meta = new.setdefault("metadata", {})
        finalizers = list(meta.get("finalizers") or [])
        if FINALIZER not in finalizers:
            meta["finalizers"] = [*finalizers, FINALIZER]
        annotations = meta.get("annotations")
        old_version = annotations.get(HASH_VERSION_ANNOTATION) if annotations else None
        if nodeclass is not None:
            digest = nodeclass.hash(self.ca_bundle or None)
            if old_version != HASH_VERSION and not self._migrate_nodeclaim_hashes(
                nodeclass.name, digest
            ):
                # the class keeps its old version until every NodeClaim has the new one
                return None, Result(requeue=True)
            meta["annotations"] = {
                **(annotations or {}),
                HASH_ANNOTATION: digest,
                HASH_VERSION_ANNOTATION: HASH_VERSION,
            }
        if new == obj:
            return obj, Result()
        try:
            return self.kube.update(new), Result()
        except NotFound:
            return None, Result()
        except Conflict:
            return None, Result(requeue=True)

    def _nodeclaims_of(self, name: str) -> list[dict[str, Any]]:
        out = []
        for nc in self.kube.list(_NODECLAIMS).items:
            ref = (nc.get("spec") or {}).get("nodeClassRef") or {}
            if (
                ref.get("name") == name
                and ref.get("kind", EC2_NODE_CLASS.kind) == EC2_NODE_CLASS.kind
                and ref.get("group", EC2_NODE_CLASS.group) == EC2_NODE_CLASS.group
            ):
                out.append(nc)
        return out

    def _migrate_nodeclaim_hashes(self, name: str, digest: str) -> bool:
        """After a hash-version change, give the class's NodeClaims the new version (and
        the new hash unless they already drifted), so nodes do not drift just because the
        hash algorithm changed. False when a write conflicted (try again)."""
        done = True
        for nc in self._nodeclaims_of(name):
            annotations = (nc.get("metadata") or {}).get("annotations") or {}
            if annotations.get(HASH_VERSION_ANNOTATION) == HASH_VERSION:
                continue
            new = copy.deepcopy(nc)
            ann = new["metadata"].setdefault("annotations", {})
            ann[HASH_VERSION_ANNOTATION] = HASH_VERSION
            if condition_of(nc, "Drifted") is None:
                ann[HASH_ANNOTATION] = digest
            try:
                self.kube.update(new)
            except NotFound:
                continue
            except Conflict:
                done = False
        return done

    # ------------------------------------------------------------------ status writes

    def _write_status(self, obj: dict[str, Any], new: dict[str, Any]) -> Result | None:
        """Write ``new``'s status if it changed; on a conflict re-read and retry with the
        computed status (same generation), else requeue. None when all went well."""
        if new.get("status") == obj.get("status"):
            return None
        status = new.get("status")
        for _ in range(_STATUS_WRITE_ATTEMPTS):
            try:
                self.kube.update_status(new)
                return None
            except NotFound:
                return Result()
            except Conflict:
                try:
                    fresh = self.kube.get(NODECLASS_RESOURCE, obj["metadata"]["name"])
                except NotFound:
                    return Result()
                if (fresh.get("metadata") or {}).get("generation") != (
                    obj.get("metadata") or {}
                ).get("generation"):
                    return Result(requeue=True)
                new = copy.deepcopy(fresh)
                new["status"] = copy.deepcopy(status)
        return Result(requeue=True)

    def _aws_failed(
        self,
        conditions: ConditionSet,
        condition: str,
        reason: str,
        failure: _AWSFailure,
        obj: Mapping[str, Any],
    ) -> float:
        message = str(failure)
        conditions.set_false(condition, reason, message)
        self.recorder.warning(obj, reason, message, str((obj.get("metadata") or {}).get("uid")))
        log.warning("EC2NodeClass %s: %s", (obj.get("metadata") or {}).get("name"), message)
        return SUBNET_REQUEUE

    # ------------------------------------------------------------------ reservations

    def _capacity_reservations(
        self,
        nodeclass: EC2NodeClass,
        status: dict[str, Any],
        conditions: ConditionSet,
        obj: Mapping[str, Any],
    ) -> float:
        """``status.capacityReservations`` and ``CapacityReservationsReady``: True once the
        terms are resolved (none set: at once). An EC2 failure changes neither the list
        nor the condition (as upstream, whose reconciler returns the error): running
        nodes keep their reserved offerings, and a class never resolved stays Unknown."""
        if not nodeclass.capacity_reservation_selector_terms:
            status.pop("capacityReservations", None)
            conditions.set_true(CONDITION_CAPACITY_RESERVATIONS_READY)
            return DEFAULT_REQUEUE
        try:
            found = _aws(
                "DescribeCapacityReservations",
                lambda: self.reservations.list(nodeclass.capacity_reservation_selector_terms),
            )
        except _AWSFailure as e:
            message = str(e)
            self.recorder.warning(obj, "CapacityReservationsDiscoveryFailed", message)
            log.warning("EC2NodeClass %s: %s", nodeclass.name, message)
            return RESERVATION_REQUEUE
        now = self.clock.now()
        parsed: list[CapacityReservation] = []
        for raw in found:
            try:
                parsed.append(CapacityReservation.from_ec2(raw, now))
            except ValueError as e:
                log.error("EC2NodeClass %s: ignoring capacity reservation: %s", nodeclass.name, e)
        parsed.sort(key=lambda r: r.id)
        conditions.set_true(CONDITION_CAPACITY_RESERVATIONS_READY)
        if parsed:
            status["capacityReservations"] = [r.to_status() for r in parsed]
        else:
            status.pop("capacityReservations", None)
        ends = [r.end_time for r in parsed if r.end_time is not None]
        if not ends:
            return RESERVATION_REQUEUE
        # an expiring capacity block must show as such promptly: its offerings go away
        soonest = min((t - EXPIRATION_PERIOD if t - EXPIRATION_PERIOD > now else t) for t in ends)
        return max(0.0, min(RESERVATION_REQUEUE, (soonest - now).total_seconds()))

    # ------------------------------------------------------------------ subnets

    def _describe_subnets(self, nodeclass: EC2NodeClass) -> list[dict[str, Any]]:
        filter_sets: list[list[dict[str, Any]]] = []
        ids = [t.id for t in nodeclass.subnet_selector_terms if t.id]
        for t in nodeclass.subnet_selector_terms:
            if not t.id:
                filter_sets.append(tag_filters(t.tags))
        if ids:
            filter_sets.append([{"Name": "subnet-id", "Values": ids}])
        return _union_by_id(
            self.clients.ec2,
            "describe_subnets",
            "DescribeSubnets",
            filter_sets,
            "Subnets",
            "SubnetId",
        )

    def _subnets(
        self,
        nodeclass: EC2NodeClass,
        status: dict[str, Any],
        conditions: ConditionSet,
        obj: Mapping[str, Any],
    ) -> float:
        try:
            subnets = self._describe_subnets(nodeclass)
        except _AWSFailure as e:
            return self._aws_failed(
                conditions, CONDITION_SUBNETS_READY, "SubnetsDiscoveryFailed", e, obj
            )
        if not subnets:
            status.pop("subnets", None)
            conditions.set_false(
                CONDITION_SUBNETS_READY,
                "SubnetsNotFound",
                "SubnetSelector did not match any Subnets",
            )
            return SUBNET_REQUEUE
        subnets.sort(key=lambda s: (-int(s.get("AvailableIpAddressCount") or 0), s["SubnetId"]))
        status["subnets"] = [
            {
                "id": s["SubnetId"],
                "zone": s.get("AvailabilityZone", ""),
                **({"zoneID": s["AvailabilityZoneId"]} if s.get("AvailabilityZoneId") else {}),
            }
            for s in subnets
        ]
        conditions.set_true(CONDITION_SUBNETS_READY)
        return SUBNET_REQUEUE

    # ------------------------------------------------------------------ security groups

    def _describe_security_groups(self, nodeclass: EC2NodeClass) -> list[dict[str, Any]]:
        terms = nodeclass.security_group_selector_terms
        filter_sets = [tag_filters(t.tags) for t in terms if t.tags]
        ids = [t.id for t in terms if t.id]
        names = [t.name for t in terms if t.name]
        if ids:
            filter_sets.append([{"Name": "group-id", "Values": ids}])
        if names:
            filter_sets.append([{"Name": "group-name", "Values": names}])
        return _union_by_id(
            self.clients.ec2,
            "describe_security_groups",
            "DescribeSecurityGroups",
            filter_sets,
            "SecurityGroups",
            "GroupId",
        )

    def _security_groups(
        self,
        nodeclass: EC2NodeClass,
        status: dict[str, Any],
        conditions: ConditionSet,
        obj: Mapping[str, Any],
    ) -> float:
        try:
            groups = self._describe_security_groups(nodeclass)
        except _AWSFailure as e:
            return self._aws_failed(
                conditions,
                CONDITION_SECURITY_GROUPS_READY,
                "SecurityGroupsDiscoveryFailed",
                e,
                obj,
            )
        if not groups:
            status.pop("securityGroups", None)
            conditions.set_false(
                CONDITION_SECURITY_GROUPS_READY,
                "SecurityGroupsNotFound",
                "SecurityGroupSelector did not match any SecurityGroups",
            )
            return SUBNET_REQUEUE
        groups.sort(key=lambda g: str(g["GroupId"]))
        status["securityGroups"] = [
            {"id": g["GroupId"], **({"name": g["GroupName"]} if g.get("GroupName") else {})}
            for g in groups
        ]
        conditions.set_true(CONDITION_SECURITY_GROUPS_READY)
        return DEFAULT_REQUEUE

    # ------------------------------------------------------------------ AMIs

    def kubernetes_version(self) -> str:
        """The cluster's ``major.minor``; raises ``_AWSFailure``/``ValueError`` when it
        cannot be found."""
        source = self._kubernetes_version
        if callable(source):
            return source()
        if source:
            return source
        cached = self._discovered_version
        if cached is not None and self.clock.monotonic() - cached[0] < DEFAULT_REQUEUE:
            return cached[1]
        version = self._discover_kubernetes_version()
        self._discovered_version = (self.clock.monotonic(), version)
        return version

    def _discover_kubernetes_version(self) -> str:
        server_version = getattr(self.kube, "server_version", None)
        if callable(server_version):
            try:
                info = server_version()
                major = str(info.get("major", "")).rstrip("+")
                minor = "".join(ch for ch in str(info.get("minor", "")) if ch.isdigit())
                if major and minor:
                    return f"{major}.{minor}"
            except (ApiError, OSError, AttributeError) as e:
                log.debug("API server /version unavailable: %s", e)
        cluster = _aws(
            "DescribeCluster",
            lambda: self.clients.eks.describe_cluster(name=self.settings.cluster_name),
        )
        version = str((cluster.get("cluster") or {}).get("version") or "")
        if not version:
            raise ValueError("the cluster's Kubernetes version is unknown")
        return version

    def _ssm_value(self, name: str) -> str | None:
        """The parameter's value, or None when it does not exist."""
        try:
            out = self.clients.ssm.get_parameter(Name=name)
        except ClientError as e:
            if _code(e) == "ParameterNotFound":
                return None
            err = e.response.get("Error") or {}
            raise _AWSFailure("GetParameter", _code(e), str(err.get("Message") or e)) from None
        except BotoCoreError as e:
            raise _AWSFailure("GetParameter", type(e).__name__, str(e)) from None
        value = (out.get("Parameter") or {}).get("Value")
        return str(value) if value else None

    def _image_queries(
        self, nodeclass: EC2NodeClass
    ) -> Iterator[tuple[dict[str, Any], dict[str, list[list[dict[str, Any]]]] | None]]:
        """(DescribeImages arguments, known requirements per image id or None)."""
        alias = nodeclass.alias
        if alias is not None:
            params = alias_parameters(alias, self.kubernetes_version(), self.ssm_prefix)
            known: dict[str, list[list[dict[str, Any]]]] = {}
            for p in params:
                image_id = self._ssm_value(p.name)
                if not image_id:
                    continue
                known.setdefault(image_id, []).extend(_variant_sets(p))
            if known:
                yield {"Filters": [{"Name": "image-id", "Values": sorted(known)}]}, known
            return
        ids: list[str] = []
        for term in nodeclass.ami_selector_terms:
            if term.id:
                ids.append(term.id)
            elif term.ssm_parameter:
                value = self._ssm_value(term.ssm_parameter)
                if value and value.startswith("ami-"):
                    ids.append(value)
                else:
                    log.info(
                        "EC2NodeClass %s: SSM parameter %s holds no AMI id",
                        nodeclass.name,
                        term.ssm_parameter,
                    )
            else:
                args: dict[str, Any] = {"Filters": tag_filters(term.tags)}
                owners = [term.owner] if term.owner else []
                if term.name:
                    args["Filters"].append({"Name": "name", "Values": [term.name]})
                    owners = owners or ["self", "amazon"]
                if owners:
                    args["Owners"] = owners
                yield args, None
        if ids:
            yield {"Filters": [{"Name": "image-id", "Values": ids}]}, None

    def _resolve_amis(self, nodeclass: EC2NodeClass) -> list[dict[str, Any]]:
        now = self.clock.now()
        best: dict[str, tuple[tuple[Any, ...], dict[str, Any]]] = {}
        for args, known in self._image_queries(nodeclass):
            query = {
                **args,
                "Filters": [*args["Filters"], {"Name": "state", "Values": ["available"]}],
                "IncludeDeprecated": True,
            }
            pages = _paginate(self.clients.ec2, "describe_images", "DescribeImages", **query)
            for page in pages:
                for image in page.get("Images") or []:
                    arch = _ARCHITECTURES.get(str(image.get("Architecture") or ""))
                    if arch is None:
                        continue
                    image_id = str(image["ImageId"])
                    deprecation = _parse_time(image.get("DeprecationTime"))
                    deprecated = deprecation is not None and deprecation <= now
                    created = _parse_time(image.get("CreationDate"))
                    sets = known.get(image_id, [[]]) if known is not None else [[]]
                    for extra in sets:
                        reqs = sorted(
                            [
                                *extra,
                                {"key": "kubernetes.io/arch", "operator": "In", "values": [arch]},
                            ],
                            key=_requirement_sort_key,
                        )
                        rkey = json.dumps(reqs, sort_keys=True)
                        # not deprecated first, then newest, then the greater name
                        rank = (
                            not deprecated,
                            created.timestamp() if created else float("-inf"),
                            str(image.get("Name") or ""),
                        )
                        entry = {
                            "id": image_id,
                            "name": str(image.get("Name") or ""),
                            "requirements": reqs,
                            **({"deprecated": True} if deprecated else {}),
                            "_created": rank[1],
                        }
                        held = best.get(rkey)
                        if held is None or rank > held[0]:
                            best[rkey] = (rank, entry)
        amis = [entry for _, entry in best.values()]
        amis.sort(key=lambda a: (-a["_created"], a["id"]))
        for a in amis:
            del a["_created"]
        return amis

    def _amis(
        self,
        nodeclass: EC2NodeClass,
        status: dict[str, Any],
        conditions: ConditionSet,
        obj: Mapping[str, Any],
    ) -> float:
        try:
            amis = self._resolve_amis(nodeclass)
        except AliasError as e:
            conditions.set_false(CONDITION_AMIS_READY, "UnsupportedAlias", str(e))
            self.recorder.warning(obj, "UnsupportedAlias", str(e))
            return DEFAULT_REQUEUE
        except _AWSFailure as e:
            return self._aws_failed(conditions, CONDITION_AMIS_READY, "AMIDiscoveryFailed", e, obj)
        except ValueError as e:
            conditions.set_false(CONDITION_AMIS_READY, "KubernetesVersionUnknown", str(e))
            return SUBNET_REQUEUE
        if not amis:
            status.pop("amis", None)
            conditions.set_false(
                CONDITION_AMIS_READY, "AMINotFound", "AMISelector did not match any AMIs"
            )
            return SUBNET_REQUEUE
        status["amis"] = amis
        conditions.set_true(CONDITION_AMIS_READY)
        return DEFAULT_REQUEUE

    # ------------------------------------------------------------------ instance profile

    def _profile_tags(self, nodeclass: EC2NodeClass) -> list[dict[str, str]]:
        cluster = self.settings.cluster_name
        tags = {
            **nodeclass.tags,
            f"kubernetes.io/cluster/{cluster}": "owned",
            "eks:eks-cluster-name": cluster,
            LABEL_NODE_CLASS: nodeclass.name,
            "topology.kubernetes.io/region": self.clients.region,
        }
        return [{"Key": k, "Value": v} for k, v in sorted(tags.items())]

    def _new_profile_name(self, nodeclass: EC2NodeClass) -> str:
        # A fresh name per role change: a profile whose role is swapped in place would
        # change the permissions of instances already running with it.
        seed = f"{self.clients.region}{nodeclass.name}{uuid.uuid4()}"
        digits = int.from_bytes(hashlib.sha256(seed.encode()).digest()[:8], "big")
        return f"{self.settings.cluster_name}_{digits}"[:128]

    def _current_role(self, profile: str) -> str | None:
        """The role of an existing profile ("" without one), None when it does not exist."""
        try:
            out = self.clients.iam.get_instance_profile(InstanceProfileName=profile)
        except ClientError as e:
            if _code(e) == "NoSuchEntity":
                return None
            raise
        roles = (out.get("InstanceProfile") or {}).get("Roles") or []
        return str(roles[0].get("RoleName") or "") if roles else ""

    def _create_profile(self, nodeclass: EC2NodeClass, role: str) -> str:
        name = self._new_profile_name(nodeclass)
        iam = self.clients.iam
        path = instance_profile_path(self.clients.region, self.settings.cluster_name, nodeclass.uid)
        iam.create_instance_profile(
            InstanceProfileName=name, Path=path, Tags=self._profile_tags(nodeclass)
        )
        try:
            iam.add_role_to_instance_profile(InstanceProfileName=name, RoleName=role)
        except (ClientError, BotoCoreError):
            try:
                iam.delete_instance_profile(InstanceProfileName=name)
            except (ClientError, BotoCoreError) as e:
                log.warning("instance profile %s: cleanup after a failed create: %s", name, e)
            raise
        return name

    def _instance_profile(
        self,
        nodeclass: EC2NodeClass,
        status: dict[str, Any],
        conditions: ConditionSet,
        obj: Mapping[str, Any],
    ) -> float:
        if nodeclass.instance_profile:
            try:
                found = _aws(
                    "GetInstanceProfile",
                    lambda: self._current_role(str(nodeclass.instance_profile)),
                )
            except _AWSFailure as e:
                return self._aws_failed(
                    conditions,
                    CONDITION_INSTANCE_PROFILE_READY,
                    "InstanceProfileDiscoveryFailed",
                    e,
                    obj,
                )
            if found is None:
                status.pop("instanceProfile", None)
                conditions.set_false(
                    CONDITION_INSTANCE_PROFILE_READY,
                    "InstanceProfileNotFound",
                    f"instance profile {nodeclass.instance_profile!r} does not exist",
                )
                return SUBNET_REQUEUE
            status["instanceProfile"] = nodeclass.instance_profile
            conditions.set_true(CONDITION_INSTANCE_PROFILE_READY)
            return DEFAULT_REQUEUE
        role = nodeclass.role or ""
        cache_key = (role, nodeclass.uid)
        current = self._created_profiles.get(cache_key) or str(status.get("instanceProfile") or "")
        try:
            current_role = (
                _aws("GetInstanceProfile", lambda: self._current_role(current)) if current else None
            )
            if current_role != role:
                current = _aws(
                    "CreateInstanceProfile", lambda: self._create_profile(nodeclass, role)
                )
                self._created_profiles[cache_key] = current
                self.recorder.normal(
                    obj,
                    "InstanceProfileCreated",
                    f"created instance profile {current} for role {role}",
                )
        except _AWSFailure as e:
            return self._aws_failed(
                conditions,
                CONDITION_INSTANCE_PROFILE_READY,
                "InstanceProfileCreationFailed",
                e,
                obj,
            )
        status["instanceProfile"] = current
        conditions.set_true(CONDITION_INSTANCE_PROFILE_READY)
        return DEFAULT_REQUEUE

    def _placement_group(
        self, nodeclass: EC2NodeClass, conditions: ConditionSet, obj: Mapping[str, Any]
    ) -> float:
        """``PlacementGroupReady``; see the module docstring."""
        selector = nodeclass.placement_group_selector
        if selector is None:
            conditions.set_true(CONDITION_PLACEMENT_GROUP_READY)
            return DEFAULT_REQUEUE
        named = selector.name or selector.id
        try:
            group = self.placement_groups.resolve(selector)
        except PlacementGroupError as e:
            conditions.set_false(
                CONDITION_PLACEMENT_GROUP_READY,
                "PlacementGroupResolutionFailed",
                f"Failed to resolve placement group {named!r}: {e}",
            )
            self.recorder.warning(obj, "PlacementGroupResolutionFailed", str(e))
            return PLACEMENT_GROUP_REQUEUE
        if group is None:
            conditions.set_false(
                CONDITION_PLACEMENT_GROUP_READY,
                "PlacementGroupNotFound",
                f"Placement group {named!r} not found",
            )
            return PLACEMENT_GROUP_REQUEUE
        log.debug(
            "EC2NodeClass %s: placement group %s (%s, %s)",
            nodeclass.name,
            group.id,
            group.name,
            group.strategy,
        )
        conditions.set_true(CONDITION_PLACEMENT_GROUP_READY)
        return PLACEMENT_GROUP_REQUEUE

    # ------------------------------------------------------------------ validation

    def _validation(
        self,
        nodeclass: EC2NodeClass,
        conditions: ConditionSet,
        obj: Mapping[str, Any],
        status: Mapping[str, Any],
    ) -> None:
        """False for a kubelet configuration the kubelet would reject or ignore, and when
        a DryRun says the controller may not launch; True once the resolution conditions
        are and the DryRun calls are allowed (:mod:`karpenter_aws.validation`)."""
        kubelet = nodeclass.kubelet.problems()
        if kubelet:
            conditions.set_false(
                CONDITION_VALIDATION_SUCCEEDED, "InvalidKubeletConfiguration", "; ".join(kubelet)
            )
            return
        others = [
            t
            for t in READY_CONDITIONS
            if t not in (CONDITION_VALIDATION_SUCCEEDED, CONDITION_PLACEMENT_GROUP_READY)
        ]
        message = "Awaiting AMI, Instance Profile, Security Group, and Subnet resolution"
        if any(conditions.is_false(t) for t in others):
            conditions.set_false(CONDITION_VALIDATION_SUCCEEDED, "DependenciesNotReady", message)
            return
        if any(conditions.is_unknown(t) for t in others):
            conditions.set_unknown_with_reason(
                CONDITION_VALIDATION_SUCCEEDED, "DependenciesNotReady", message
            )
            return
        # the status just written holds what a launch would use
        resolved = EC2NodeClass.from_dict({**obj, "status": status})
        cluster = self.settings.cluster_name
        tags = {
            **nodeclass.tags,
            f"kubernetes.io/cluster/{cluster}": "owned",
            "eks:eks-cluster-name": cluster,
            LABEL_NODE_CLASS: nodeclass.name,
        }
        result = self._dry_run.validate(resolved, tags)
        if result.unknown:
            conditions.set_unknown_with_reason(
                CONDITION_VALIDATION_SUCCEEDED, "DryRunFailed", result.message
            )
            log.warning("EC2NodeClass %s: %s", nodeclass.name, result.message)
        elif result.reason:
            conditions.set_false(CONDITION_VALIDATION_SUCCEEDED, result.reason, result.message)
            self.recorder.warning(obj, result.reason, result.message)
        else:
            conditions.set_true(CONDITION_VALIDATION_SUCCEEDED)

    # ------------------------------------------------------------------ deletion

    def _finalize(self, obj: dict[str, Any]) -> Result:
        meta = obj.get("metadata") or {}
        name = str(meta.get("name") or "")
        finalizers = list(meta.get("finalizers") or [])
        if FINALIZER not in finalizers:
            return Result()
        claims = sorted(str(nc["metadata"]["name"]) for nc in self._nodeclaims_of(name))
        if claims:
            self.recorder.normal(
                obj,
                "WaitingOnNodeClaimTermination",
                f"Waiting on NodeClaim termination for {', '.join(claims)}",
            )
            return Result.after(TERMINATION_EVENT_INTERVAL)
        try:
            self._delete_instance_profiles(str(meta.get("uid") or ""))
            self._delete_launch_templates(name)
        except _AWSFailure as e:
            self.recorder.warning(obj, "TerminationFailed", str(e))
            log.warning("EC2NodeClass %s: %s", name, e)
            return Result(requeue=True)
        new = copy.deepcopy(obj)
        new["metadata"]["finalizers"] = [f for f in finalizers if f != FINALIZER]
        try:
            self.kube.update(new)
        except NotFound:
            return Result()
        except Conflict:
            return Result(requeue=True)
        return Result()

    def _delete_instance_profiles(self, uid: str) -> None:
        if self.settings.isolated_vpc or not uid:
            return  # IAM is unreachable from isolated VPCs; nothing was created there
        iam = self.clients.iam
        prefix = instance_profile_path(self.clients.region, self.settings.cluster_name, uid)
        pages = _paginate(iam, "list_instance_profiles", "ListInstanceProfiles", PathPrefix=prefix)
        for page in pages:
            for profile in page.get("InstanceProfiles") or []:
                pname = profile["InstanceProfileName"]
                for role in profile.get("Roles") or []:
                    _ignore_missing(
                        "RemoveRoleFromInstanceProfile",
                        iam.remove_role_from_instance_profile,
                        InstanceProfileName=pname,
                        RoleName=role["RoleName"],
                    )
                _ignore_missing(
                    "DeleteInstanceProfile", iam.delete_instance_profile, InstanceProfileName=pname
                )

    def _delete_launch_templates(self, name: str) -> None:
        """Launch templates Karpenter made for this class (tagged with the cluster and the
        class name)."""
        ec2 = self.clients.ec2
        filters = [
            {"Name": "tag:eks:eks-cluster-name", "Values": [self.settings.cluster_name]},
            {"Name": f"tag:{LABEL_NODE_CLASS}", "Values": [name]},
        ]
        pages = _paginate(
            ec2, "describe_launch_templates", "DescribeLaunchTemplates", Filters=filters
        )
        for page in pages:
            for lt in page.get("LaunchTemplates") or []:
                _ignore_missing(
                    "DeleteLaunchTemplate",
                    ec2.delete_launch_template,
                    LaunchTemplateId=lt["LaunchTemplateId"],
                )


_NOT_FOUND_CODES = frozenset(
    {
        "NoSuchEntity",
        "InvalidLaunchTemplateId.NotFound",
        "InvalidLaunchTemplateName.NotFoundException",
    }
)


def _ignore_missing(operation: str, call: Callable[..., Any], **kwargs: Any) -> None:
    """Call ``call(**kwargs)``; something already gone counts as done."""
    try:
        _aws(operation, lambda: call(**kwargs))
    except _AWSFailure as e:
        if e.code not in _NOT_FOUND_CODES:
            raise


def _variant_sets(parameter: AliasParameter) -> list[list[dict[str, Any]]]:
    """One requirement set per variant the parameter's AMI serves (Windows: one)."""
    if not parameter.variants:
        return [variant_requirements(parameter, None)]
    return [variant_requirements(parameter, v) for v in parameter.variants]


def _nodeclass_of_deleted_claim(event_type: str, obj: dict[str, Any]) -> Iterable[Hashable]:
    ref = (obj.get("spec") or {}).get("nodeClassRef") or {}
    if (
        ref.get("name")
        and ref.get("kind", EC2_NODE_CLASS.kind) == EC2_NODE_CLASS.kind
        and ref.get("group", EC2_NODE_CLASS.group) == EC2_NODE_CLASS.group
    ):
        return (ObjectKey("", str(ref["name"])),)
    return ()


def _deleted(event_type: str, obj: dict[str, Any]) -> bool:
    return event_type == "DELETED"


WATCHES = (
    Watch(NODECLASS_RESOURCE),
    Watch(_NODECLAIMS, mapper=_nodeclass_of_deleted_claim, predicate=_deleted),
)
"""``nodeclass.status``'s watches: EC2NodeClasses, and NodeClaim deletions (a class
waiting to be deleted re-checks at once)."""
