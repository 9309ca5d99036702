"""The GCP provider's settings: upstream's options and environment variable names, typed.

As for Azure, two levels of requirement: the catalogue (``karpenter instance-types`` /
``karpenter schedule``) needs at most a region (upstream's ``CLUSTER_LOCATION``; none means
the first bundled region), and serving needs what upstream requires — the project, the
cluster's location and name — which :meth:`GCPSettings.launch_problems` reports, one line
per missing setting with its variable.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from attrs import frozen

__all__ = ["GCPSettings", "SettingsError"]

ENV = {
    "project-id": "PROJECT_ID",
    "region": "CLUSTER_LOCATION",
    "node-location": "NODE_LOCATION",
    "cluster-name": "CLUSTER_NAME",
    "vm-memory-overhead-percent": "VM_MEMORY_OVERHEAD_PERCENT",
    "default-nodepool-service-account": "DEFAULT_NODEPOOL_SERVICE_ACCOUNT",
    "default-nodepool-template-name": "DEFAULT_NODEPOOL_TEMPLATE_NAME",
    "interruption": "INTERRUPTION",
}
_LOCATION = re.compile(r"^[a-z]+-[a-z]+\d+(-[a-z])?$")
_PROJECT = re.compile(r"^[a-z][a-z0-9-]{4,28}[a-z0-9]$|^[a-z0-9.:-]+$")


class SettingsError(ValueError):
    """A setting has a value the provider cannot use (one line, naming the setting)."""


def _setting(name: str) -> str:
    env = ENV.get(name)
    return f"gcp setting {name}" + (f" (env {env})" if env else "")


def _bool(name: str, raw: str) -> bool:
    value = raw.strip().lower()
    if value in ("true", "1", "yes"):
        return True
    if value in ("false", "0", "no", ""):
        return False
    raise SettingsError(f"{_setting(name)}: {raw!r} is not a boolean (true or false)")


def _fraction(name: str, raw: str) -> float:
    try:
        value = float(raw.strip())
    except ValueError:
        raise SettingsError(f"{_setting(name)}: {raw!r} is not a number") from None
    if not 0.0 <= value < 1.0:
        raise SettingsError(f"{_setting(name)}: {value} is not a fraction in [0, 1)")
    return value


def _location(name: str, raw: str) -> str:
    value = raw.strip().lower()
    if value and not _LOCATION.match(value):
        raise SettingsError(
            f"{_setting(name)}: {raw!r} is not a GCP region or zone (us-central1, us-central1-a)"
        )
    return value


@frozen
class GCPSettings:
    """Typed GCP settings (see ``karpenter_gcp.plugin.SETTINGS`` for their docs)."""

    project_id: str = ""
    region: str = ""
    node_location: str = ""
    cluster_name: str = ""
    vm_memory_overhead_percent: float = 0.07
    default_nodepool_service_account: str = ""
    default_nodepool_template_name: str = ""
    interruption: bool = True
    kubernetes_version: str = ""

    @property
    def cluster_location(self) -> str:
        """Where the GKE cluster is, for API calls (upstream: node-location, else the
        region)."""
        return self.node_location or self.region

    @classmethod
    def from_mapping(cls, settings: Mapping[str, str]) -> GCPSettings:
        """Parse resolved settings; raises :class:`SettingsError` naming the bad one."""

        def get(name: str, default: str = "") -> str:
            value = settings.get(name)
            return (default if value is None else value).strip()

        region = _location("region", get("region"))
        if region.count("-") == 2:
            raise SettingsError(
                f"{_setting('region')}: {region!r} is a zone; the region is "
                f"{region.rsplit('-', 1)[0]!r} (a zonal cluster's zone goes in "
                "node-location, env NODE_LOCATION)"
            )
        project = get("project-id")
        if project and not _PROJECT.match(project):
            raise SettingsError(f"{_setting('project-id')}: {project!r} is not a project id")
        return cls(
            project_id=project,
            region=region,
            node_location=_location("node-location", get("node-location")),
            cluster_name=get("cluster-name"),
            vm_memory_overhead_percent=_fraction(
                "vm-memory-overhead-percent", get("vm-memory-overhead-percent", "0.07")
            ),
            default_nodepool_service_account=get("default-nodepool-service-account"),
            default_nodepool_template_name=get("default-nodepool-template-name"),
            interruption=_bool("interruption", get("interruption", "true")),
            kubernetes_version=get("kubernetes-version"),
        )

    def launch_problems(self) -> list[str]:
        """What serving needs and is missing, one entry per setting (empty: ready)."""
        needed = {
            "project-id": self.project_id,
            "region": self.region,
            "cluster-name": self.cluster_name,
        }
        return [f"{_setting(name)} is required" for name, value in needed.items() if not value]
