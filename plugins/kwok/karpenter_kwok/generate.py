"""The KWOK provider's built-in catalogue: 144 generic instance types.

Upstream ships this catalogue as a JSON file produced by a small generator; we keep the
generator instead of the file and produce the very same entries (names, quantities, prices
to the last bit of the float) in the same order. The output uses the KWOK JSON format that
``INSTANCE_TYPES_FILE_PATH`` files use, so the built-in catalogue goes through the same
loader as a user's file, and ``python -m karpenter_kwok.generate`` writes a starting point
for a custom file.

The catalogue is the product of
- vCPUs: 1, 2, 4, 8, 16, 32, 48, 64, 96, 128, 192, 256;
- families ``c`` (2 GiB per vCPU), ``s`` (4 GiB) and ``m`` (8 GiB);
- operating systems ``linux`` and ``windows``; architectures ``amd64`` and ``arm64``;
with names ``<family>-<cpu>x-<arch>-<os>``, pods ``min(cpu * 16, 1024)``, 20Gi of
ephemeral storage and one spot and one on-demand offering in each of four zones. The
on-demand price is ``0.025 * vCPU + 0.001 * memory bytes / 1e9``; spot costs 0.7 times that.
(Upstream's design document quotes other numbers; the generator is what upstream runs.)
"""

from __future__ import annotations

import json
import sys
from typing import Any

__all__ = [
    "ARCHITECTURES",
    "CPU_COUNTS",
    "FAMILIES",
    "OPERATING_SYSTEMS",
    "ZONES",
    "generate_instance_type_options",
    "instance_type_name",
    "main",
    "on_demand_price",
]

CPU_COUNTS: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 48, 64, 96, 128, 192, 256)
FAMILIES: tuple[tuple[str, int], ...] = (("c", 2), ("s", 4), ("m", 8))
"""(family, GiB of memory per vCPU): compute, standard, memory optimised."""
OPERATING_SYSTEMS: tuple[str, ...] = ("linux", "windows")
ARCHITECTURES: tuple[str, ...] = ("amd64", "arm64")
ZONES: tuple[str, ...] = ("test-zone-a", "test-zone-b", "test-zone-c", "test-zone-d")
CAPACITY_TYPES: tuple[str, ...] = ("spot", "on-demand")
MAX_PODS = 1024
PODS_PER_CPU = 16
SPOT_DISCOUNT = 0.7
EPHEMERAL_STORAGE = "20Gi"

_GIB = 1024**3
_CAPACITY_TYPE_KEY = "karpenter.sh/capacity-type"
_ZONE_KEY = "topology.kubernetes.io/zone"


def instance_type_name(cpu: int, gib_per_cpu: int, arch: str, os_name: str) -> str:
    """``<family>-<cpu>x-<arch>-<os>``; unknown memory ratios get the family ``e``."""
    family = {2: "c", 4: "s", 8: "m"}.get(gib_per_cpu, "e")
    return f"{family}-{cpu}x-{arch}-{os_name}"


def on_demand_price(cpu: int, memory_bytes: int) -> float:
    """The generator's on-demand price, evaluated in the same float order as upstream."""
    return 0.025 * float(cpu) + 0.001 * float(memory_bytes) / 1e9


def _binary_si_gib(gib: int) -> str:
    """Canonical Kubernetes spelling of a whole number of GiB (2048Gi prints as 2Ti)."""
    return f"{gib // 1024}Ti" if gib % 1024 == 0 else f"{gib}Gi"


def _offering(capacity_type: str, zone: str, price: float) -> dict[str, Any]:
    return {
        "Price": price,
        "Available": True,
        "Requirements": [
            {"key": _CAPACITY_TYPE_KEY, "operator": "In", "values": [capacity_type]},
            {"key": _ZONE_KEY, "operator": "In", "values": [zone]},
        ],
    }


def generate_instance_type_options() -> list[dict[str, Any]]:
    """The 144 catalogue entries in KWOK JSON form, in upstream's order."""
    entries: list[dict[str, Any]] = []
    for cpu in CPU_COUNTS:
        for _family, gib_per_cpu in FAMILIES:
            for os_name in OPERATING_SYSTEMS:
                for arch in ARCHITECTURES:
                    gib = cpu * gib_per_cpu
                    price = on_demand_price(cpu, gib * _GIB)
                    offerings = [
                        _offering(ct, zone, price * SPOT_DISCOUNT if ct == "spot" else price)
                        for zone in ZONES
                        for ct in CAPACITY_TYPES
                    ]
                    entries.append(
                        {
                            "name": instance_type_name(cpu, gib_per_cpu, arch, os_name),
                            "offerings": offerings,
                            "architecture": arch,
                            "operatingSystems": [os_name],
                            "resources": {
                                "cpu": str(cpu),
                                "ephemeral-storage": EPHEMERAL_STORAGE,
                                "memory": _binary_si_gib(gib),
                                "pods": str(min(cpu * PODS_PER_CPU, MAX_PODS)),
                            },
                        }
                    )
    return entries


def main() -> None:
    """Print the catalogue as indented JSON (a template for INSTANCE_TYPES_FILE_PATH)."""
    json.dump(generate_instance_type_options(), sys.stdout, indent=4)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
