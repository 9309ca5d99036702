"""What keeps an otherwise resolved EC2NodeClass from being valid: missing EC2 permissions.

* :class:`DryRunValidator`: as upstream's validation controller, proves the controller may
  call ``ec2:CreateLaunchTemplate``, ``ec2:CreateFleet`` and ``ec2:RunInstances`` (which
  also checks ``iam:PassRole`` on the instance profile) with ``DryRun`` requests shaped
  like a launch of this class: its first AMI, security groups, instance profile and tags,
  in each subnet. EC2 answers ``DryRunOperation`` when the call would have been allowed
  and ``UnauthorizedOperation`` when not; the latter sets ``ValidationSucceeded`` False
  with upstream's reasons (``CreateLaunchTemplateAuthCheckFailed``,
  ``CreateFleetAuthCheckFailed``, ``RunInstancesAuthCheckFailed``). Results are
  remembered for :data:`CACHE_TTL` per class content, so the 5-minute reconcile does not
  call EC2 each time; an error other than those (throttling, a network failure) is not
  remembered and leaves the condition Unknown until the next attempt.

  A ``CreateFleet`` request names a launch template EC2 must know, so (as upstream, whose
  check uses a template its launch path created) the check creates one with the content
  it just dry-ran, tagged like the class's templates, dry-runs ``CreateFleet`` over it
  (one on-demand instance of the probe type in each of the class's subnets, through
  :func:`~karpenter_aws.instance.fleet_request`, as a launch asks) and deletes it again;
  one the delete missed goes with the class's other templates. An endpoint that ignored
  ``DryRun`` and launched is not EC2; whatever it launched is terminated at once and the
  condition stays Unknown.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError  # type: ignore[import-untyped]

from karpenter_aws.instance import Override, fleet_request
from karpenter_aws.nodeclass import EC2NodeClass

__all__ = [
    "CACHE_TTL",
    "REASON_CREATE_FLEET",
    "REASON_CREATE_LAUNCH_TEMPLATE",
    "REASON_RUN_INSTANCES",
    "DryRunResult",
    "DryRunValidator",
]

log = logging.getLogger("karpenter.aws.nodeclass")

CACHE_TTL = 600.0
REASON_CREATE_LAUNCH_TEMPLATE = "CreateLaunchTemplateAuthCheckFailed"
REASON_CREATE_FLEET = "CreateFleetAuthCheckFailed"
REASON_RUN_INSTANCES = "RunInstancesAuthCheckFailed"
_MESSAGES = {
    REASON_CREATE_LAUNCH_TEMPLATE: "Controller isn't authorized to call ec2:CreateLaunchTemplate",
    REASON_CREATE_FLEET: "Controller isn't authorized to call ec2:CreateFleet",
    REASON_RUN_INSTANCES: "Controller isn't authorized to call ec2:RunInstances",
}
_DRY_RUN_OK = "DryRunOperation"
_UNAUTHORIZED = "UnauthorizedOperation"
# the smallest common type: DryRun checks permissions, the type need not be one the
# NodePools allow (upstream picks one from them; any type the AMI's architecture runs works)
_PROBE_TYPES = {"arm64": "m6g.large", "amd64": "m5.large"}


class DryRunResult:
    """``reason`` empty: allowed; else the False condition's reason and message.
    ``unknown``: EC2 could not say (not cached)."""

    def __init__(self, reason: str = "", message: str = "", *, unknown: bool = False) -> None:
        self.reason = reason
        self.message = message
        self.unknown = unknown


def _code(e: ClientError) -> str:
    return str((e.response.get("Error") or {}).get("Code") or "")


class DryRunValidator:
    """Dry-runs a class's launch calls; see the module docstring."""

    def __init__(self, ec2: Any, monotonic: Callable[[], float], ttl: float = CACHE_TTL) -> None:
        self._ec2 = ec2
        self._monotonic = monotonic
        self._ttl = ttl
        self._cache: dict[str, tuple[float, DryRunResult]] = {}

    def validate(self, nodeclass: EC2NodeClass, tags: Mapping[str, str]) -> DryRunResult:
        key = self._key(nodeclass, tags)
        now = self._monotonic()
        cached = self._cache.get(key)
        if cached is not None and cached[0] > now:
            return cached[1]
        result = self._run(nodeclass, tags)
        if not result.unknown:
            self._cache = {k: v for k, v in self._cache.items() if v[0] > now}
            self._cache[key] = (now + self._ttl, result)
        return result

    def _key(self, nodeclass: EC2NodeClass, tags: Mapping[str, str]) -> str:
        doc = json.dumps(
            [
                nodeclass.name,
                dict(nodeclass.raw_spec),
                # sorted: the status orders subnets by free addresses, which launches change
                sorted(s.id for s in nodeclass.subnets),
                sorted(g.id for g in nodeclass.security_groups),
                [a.id for a in nodeclass.amis],
                nodeclass.instance_profile_name,
                dict(sorted(tags.items())),
            ],
            sort_keys=True,
            default=str,
        )
        return hashlib.sha256(doc.encode()).hexdigest()

    def _run(self, nodeclass: EC2NodeClass, tags: Mapping[str, str]) -> DryRunResult:
        ec2_tags = [{"Key": k, "Value": v} for k, v in sorted(tags.items())]
        ami = nodeclass.amis[0]
        arch = next(
            (
                str(r.get("values", ["amd64"])[0])
                for r in ami.raw_requirements
                if r.get("key") == "kubernetes.io/arch" and r.get("values")
            ),
            "amd64",
        )
        groups = sorted(g.id for g in nodeclass.security_groups)
        template = {
            "LaunchTemplateName": f"karpenter.k8s.aws/validation-{nodeclass.uid or nodeclass.name}",
            "LaunchTemplateData": {
                "ImageId": ami.id,
                "IamInstanceProfile": {"Name": nodeclass.instance_profile_name},
                "NetworkInterfaces": [{"DeviceIndex": 0, "Groups": groups}],
            },
            "TagSpecifications": [{"ResourceType": "launch-template", "Tags": ec2_tags}],
        }
        probe = _PROBE_TYPES.get(arch, "m5.large")
        result = self._call(
            REASON_CREATE_LAUNCH_TEMPLATE,
            lambda: self._ec2.create_launch_template(DryRun=True, **template),
        )
        if result.reason or result.unknown:
            return result
        result = self._create_fleet(nodeclass, template, ami.id, probe, tags)
        if result.reason or result.unknown:
            return result
        return self._run_instances(nodeclass, ami.id, probe, groups, ec2_tags)

    def _create_fleet(
        self,
        nodeclass: EC2NodeClass,
        template: Mapping[str, Any],
        image_id: str,
        instance_type: str,
        tags: Mapping[str, str],
    ) -> DryRunResult:
        """The ``CreateFleet`` dry run over a template made for it (see the module
        docstring)."""
        name = str(template["LaunchTemplateName"])
        try:
            self._ec2.create_launch_template(**template)
        except ClientError as e:
            if _code(e) != "InvalidLaunchTemplateName.AlreadyExistsException":
                return self._failed(REASON_CREATE_LAUNCH_TEMPLATE, e)
        except BotoCoreError as e:
            return DryRunResult(REASON_CREATE_FLEET, f"dry run failed: {e}", unknown=True)
        overrides = [
            Override(instance_type, s.zone, s.id, image_id, 0.0) for s in nodeclass.subnets
        ]
        request = fleet_request([(name, overrides)], "on-demand", tags)
        try:
            return self._call(
                REASON_CREATE_FLEET,
                lambda: self._ec2.create_fleet(DryRun=True, **request),
                launched=self._terminate_launched,
            )
        finally:
            try:
                self._ec2.delete_launch_template(LaunchTemplateName=name)
            except (ClientError, BotoCoreError) as e:
                # the class's deletion removes it (it carries the class's tags)
                log.warning("deleting the validation launch template %s: %s", name, e)

    def _terminate_launched(self, answer: Any) -> None:
        """An endpoint ignored ``DryRun`` on CreateFleet: undo the launch."""
        ids = [
            i for fi in (answer or {}).get("Instances") or [] for i in fi.get("InstanceIds") or []
        ]
        if ids:
            log.error("CreateFleet ignored DryRun and launched %s; terminating", ", ".join(ids))
            self._ec2.terminate_instances(InstanceIds=ids)

    def _run_instances(
        self,
        nodeclass: EC2NodeClass,
        image_id: str,
        instance_type: str,
        groups: Sequence[str],
        ec2_tags: list[dict[str, str]],
    ) -> DryRunResult:
        """One subnet after another until one is allowed; the first subnet's answer
        decides otherwise (permissions are rarely per subnet)."""
        first: DryRunResult | None = None
        for subnet in nodeclass.subnets:
            result = self._call(
                REASON_RUN_INSTANCES,
                lambda subnet_id=subnet.id: self._ec2.run_instances(
                    DryRun=True,
                    MinCount=1,
                    MaxCount=1,
                    ImageId=image_id,
                    InstanceType=instance_type,
                    IamInstanceProfile={"Name": nodeclass.instance_profile_name},
                    NetworkInterfaces=[
                        {"DeviceIndex": 0, "SubnetId": subnet_id, "Groups": list(groups)}
                    ],
                    TagSpecifications=[
                        {"ResourceType": kind, "Tags": ec2_tags}
                        for kind in ("instance", "volume", "network-interface")
                    ],
                ),
            )
            if not result.reason and not result.unknown:
                return result
            first = first or result
        return first or DryRunResult()

    @staticmethod
    def _failed(reason: str, e: ClientError) -> DryRunResult:
        code = _code(e)
        if code == _UNAUTHORIZED:
            return DryRunResult(reason, f"{_MESSAGES[reason]}: {code}: {e}")
        return DryRunResult(reason, f"dry run failed: {code}: {e}", unknown=True)

    @staticmethod
    def _call(
        reason: str, call: Callable[[], Any], launched: Callable[[Any], None] | None = None
    ) -> DryRunResult:
        try:
            answer = call()
        except ClientError as e:
            if _code(e) == _DRY_RUN_OK:
                return DryRunResult()
            return DryRunValidator._failed(reason, e)
        except BotoCoreError as e:
            return DryRunResult(reason, f"dry run failed: {e}", unknown=True)
        # EC2 never performs a DryRun request; an endpoint that did is not EC2's behaviour
        if launched is not None:
            try:
                launched(answer)
            except (ClientError, BotoCoreError) as e:
                log.error("terminating what an ignored dry run launched failed: %s", e)
        return DryRunResult(reason, "dry run request was not refused as a dry run", unknown=True)
