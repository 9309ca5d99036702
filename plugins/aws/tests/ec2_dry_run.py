"""EC2's ``DryRun`` semantics for ``CreateFleet``, which moto ignores (it launches).

:func:`dry_run_create_fleet_as_ec2` makes a boto3 EC2 client answer a ``DryRun``
CreateFleet itself, as EC2 does, and never pass it on to moto:
``InvalidLaunchTemplateName.NotFoundException`` for a template moto does not know, else
``DryRunOperation`` (HTTP 412). Requests without ``DryRun`` go to moto unchanged.
"""

from __future__ import annotations

from typing import Any

from botocore.awsrequest import AWSResponse


def dry_run_create_fleet_as_ec2(ec2: Any) -> None:
    """Answer DryRun CreateFleet requests as EC2 does (see the module docstring)."""

    def keep(params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        if params.get("DryRun"):
            context["dry_run_templates"] = [
                c["LaunchTemplateSpecification"].get("LaunchTemplateName")
                for c in params.get("LaunchTemplateConfigs") or []
            ]

    def answer(context: dict[str, Any], **_: Any) -> tuple[AWSResponse, dict[str, Any]] | None:
        names = context.get("dry_run_templates")
        if names is None:
            return None  # a real request: moto launches
        known = {
            t["LaunchTemplateName"] for t in ec2.describe_launch_templates()["LaunchTemplates"]
        }
        missing = [n for n in names if n not in known]
        code, status = ("DryRunOperation", 412)
        if missing:
            code, status = ("InvalidLaunchTemplateName.NotFoundException", 400)
        error = {"Code": code, "Message": f"{code} {missing}"}
        return AWSResponse("https://ec2.amazonaws.com/", status, {}, None), {
            "Error": error,
            "ResponseMetadata": {"HTTPStatusCode": status},
        }

    ec2.meta.events.register("before-parameter-build.ec2.CreateFleet", keep)
    ec2.meta.events.register("before-call.ec2.CreateFleet", answer)
