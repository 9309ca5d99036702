"""The AWS provider's settings, parsed once from the resolved string map.

``karpenter serve`` hands every provider its settings as strings (flags and environment
variables); this turns them into typed values and rejects bad ones with an error naming
the setting, so a typo fails at start-up instead of mid-launch.
"""

from __future__ import annotations

from collections.abc import Mapping

from attrs import frozen

__all__ = ["AWSSettings", "SettingsError"]


class SettingsError(ValueError):
    """A setting has a value the provider cannot use."""


def _bool(name: str, raw: str) -> bool:
    value = raw.strip().lower()
    if value in ("true", "1", "yes"):
        return True
    if value in ("false", "0", "no", ""):
        return False
    raise SettingsError(f"aws setting {name}: {raw!r} is not a boolean (true or false)")


def _int(name: str, raw: str, minimum: int = 0) -> int:
    try:
        value = int(raw.strip())
    except ValueError:
        raise SettingsError(f"aws setting {name}: {raw!r} is not an integer") from None
    if value < minimum:
        raise SettingsError(f"aws setting {name}: {value} is below {minimum}")
    return value


def _fraction(name: str, raw: str) -> float:
    try:
        value = float(raw.strip())
    except ValueError:
        raise SettingsError(f"aws setting {name}: {raw!r} is not a number") from None
    if not 0.0 <= value < 1.0:
        raise SettingsError(f"aws setting {name}: {value} is not a fraction in [0, 1)")
    return value


@frozen
class AWSSettings:
    """Typed AWS settings (see ``karpenter_aws.plugin.SETTINGS`` for their documentation)."""

    cluster_name: str
    cluster_endpoint: str = ""
    cluster_ca_bundle: str = ""
    interruption_queue: str = ""
    isolated_vpc: bool = False
    reserved_enis: int = 0
    vm_memory_overhead_percent: float = 0.075
    price_list_file: str = ""

    @classmethod
    def from_mapping(cls, settings: Mapping[str, str]) -> AWSSettings:
        """Parse resolved settings; raises :class:`SettingsError` naming the bad one."""
        name = (settings.get("cluster-name") or "").strip()
        if not name:
            raise SettingsError("aws setting cluster-name is required (env CLUSTER_NAME)")
        return cls(
            cluster_name=name,
            cluster_endpoint=(settings.get("cluster-endpoint") or "").strip(),
            cluster_ca_bundle=(settings.get("cluster-ca-bundle") or "").strip(),
            interruption_queue=(settings.get("interruption-queue") or "").strip(),
            isolated_vpc=_bool("isolated-vpc", settings.get("isolated-vpc", "false")),
            reserved_enis=_int("reserved-enis", settings.get("reserved-enis", "0")),
            vm_memory_overhead_percent=_fraction(
                "vm-memory-overhead-percent", settings.get("vm-memory-overhead-percent", "0.075")
            ),
            price_list_file=(settings.get("price-list-file") or "").strip(),
        )
