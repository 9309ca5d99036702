"""Loading KWOK instance types: the built-in catalogue and user files."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from karpenter_kwok.instance_types import (
    InstanceTypesFileError,
    default_instance_types,
    instance_family,
    instance_size,
    load_instance_types,
    load_instance_types_file,
    parse_instance_types,
)

from karpenter_core.apis import labels
from karpenter_core.apis.quantity import parse_quantity
from karpenter_core.cloudprovider.types import order_by_price
from karpenter_core.scheduling.requirements import IN, Requirement, Requirements

ZONE = "topology.kubernetes.io/zone"
CAPACITY_TYPE = "karpenter.sh/capacity-type"
GIB = 1024**3


def q(text: str) -> int:
    return parse_quantity(text)


@pytest.fixture(scope="module")
def catalogue() -> dict[str, Any]:
    return {it.name: it for it in default_instance_types()}


def _entry(**overrides: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "name": "m5.large",
        "architecture": "amd64",
        "operatingSystems": ["linux"],
        "resources": {"cpu": "2", "memory": "8Gi"},
        "offerings": [
            {
                "Price": 0.096,
                "Available": False,
                "Requirements": [
                    {"key": CAPACITY_TYPE, "operator": "In", "values": ["on-demand"]},
                    {"key": ZONE, "operator": "In", "values": ["us-east-1a"]},
                ],
            }
        ],
    }
    entry.update(overrides)
    return entry


def _write(tmp_path: Path, data: Any) -> str:
    path = tmp_path / "instance_types.json"
    path.write_text(json.dumps(data) if not isinstance(data, str) else data)
    return str(path)


# --- built-in catalogue -------------------------------------------------------------------


def test_builtin_catalogue_has_144_types(catalogue: dict[str, Any]) -> None:
    assert len(catalogue) == 144


@pytest.mark.parametrize(
    ("name", "cpu", "memory", "pods"),
    [
        ("c-1x-amd64-linux", "1", "2Gi", "16"),
        ("s-4x-arm64-windows", "4", "16Gi", "64"),
        ("m-96x-amd64-linux", "96", "768Gi", "1024"),
    ],
)
def test_builtin_capacity(
    catalogue: dict[str, Any], name: str, cpu: str, memory: str, pods: str
) -> None:
    assert catalogue[name].capacity == {
        "cpu": q(cpu),
        "memory": q(memory),
        "pods": q(pods),
        "ephemeral-storage": q("20Gi"),
    }


def test_builtin_allocatable_subtracts_100m_cpu_and_10mi_memory(catalogue: dict[str, Any]) -> None:
    alloc = catalogue["c-1x-amd64-linux"].allocatable()
    assert alloc["cpu"] == q("900m")
    assert alloc["memory"] == q("2038Mi")
    assert alloc["pods"] == q("16")


def test_builtin_requirements_of_a_type(catalogue: dict[str, Any]) -> None:
    r = catalogue["s-48x-arm64-windows"].requirements
    expected = {
        "node.kubernetes.io/instance-type": {"s-48x-arm64-windows"},
        "kubernetes.io/arch": {"arm64"},
        "kubernetes.io/os": {"windows"},
        ZONE: {"test-zone-a", "test-zone-b", "test-zone-c", "test-zone-d"},
        CAPACITY_TYPE: {"spot", "on-demand"},
        "karpenter.kwok.sh/instance-size": {"48"},
        "karpenter.kwok.sh/instance-family": {"s"},
        "karpenter.kwok.sh/instance-cpu": {"48"},
        "karpenter.kwok.sh/instance-memory": {"192Gi"},
    }
    assert {k: set(r.get(k).values) for k in r} == expected
    assert all(r.get(k).operator() == IN for k in r)


def test_builtin_prices_on_demand_and_spot(catalogue: dict[str, Any]) -> None:
    it = catalogue["c-1x-amd64-linux"]
    assert it.offering_price("test-zone-a", "on-demand") == 0.027147483648
    assert it.offering_price("test-zone-d", "spot") == pytest.approx(0.0190032385536)
    big = catalogue["m-8x-amd64-linux"]
    # 8 * 0.025 + 64 GiB (68,719,476,736 bytes) * 0.001 / 1e9
    assert big.offering_price("test-zone-b", "on-demand") == pytest.approx(0.268719476736)


def test_builtin_offerings_have_precomputed_zone_and_capacity_type(
    catalogue: dict[str, Any],
) -> None:
    offerings = catalogue["c-2x-amd64-linux"].offerings
    assert [(o.zone, o.capacity_type) for o in offerings[:3]] == [
        ("test-zone-a", "spot"),
        ("test-zone-a", "on-demand"),
        ("test-zone-b", "spot"),
    ]
    assert all(o.available for o in offerings)


def test_cheapest_builtin_type_for_spot_in_one_zone() -> None:
    reqs = Requirements(
        Requirement.new(ZONE, IN, ["test-zone-c"]), Requirement.new(CAPACITY_TYPE, IN, ["spot"])
    )
    ordered = order_by_price(default_instance_types(), reqs)
    # the two c-1x types on each OS tie for cheapest; all are 1 vCPU, 2Gi
    assert {it.name for it in ordered[:4]} == {
        "c-1x-amd64-linux",
        "c-1x-arm64-linux",
        "c-1x-amd64-windows",
        "c-1x-arm64-windows",
    }


# --- naming helpers -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "cpu", "size"),
    [
        ("m5.large", "2", "large"),
        ("c6i.24xlarge", "96", "24xlarge"),
        ("m5.xlarge", "4", "xlarge"),
        ("t3.nano", "2", "nano"),
        ("m7g.metal", "64", "metal"),
        ("c-4x-amd64-linux", "4", "4"),
        ("n2-standard-8", "8", "8"),
        ("Standard_D4s_v3", "4", "4"),
        ("m5.huge", "8", "8"),
    ],
)
def test_instance_size(name: str, cpu: str, size: str) -> None:
    assert instance_size(name, cpu) == size


@pytest.mark.parametrize(
    ("name", "family"),
    [
        ("m5.large", "m5"),
        ("n2-standard-8", "n2"),
        ("c-4x-amd64-linux", "c"),
        ("Standard_D4s_v3", "S"),
        ("", ""),
    ],
)
def test_instance_family(name: str, family: str) -> None:
    assert instance_family(name) == family


# --- user files ---------------------------------------------------------------------------


def test_file_entry_is_loaded_with_defaults(tmp_path: Path) -> None:
    (it,) = load_instance_types_file(_write(tmp_path, [_entry()]))
    assert it.name == "m5.large"
    assert it.capacity["pods"] == q("110")
    assert it.offerings[0].available  # forced available, as upstream
    assert it.offerings[0].price == 0.096
    assert it.requirements.get("karpenter.kwok.sh/instance-size").values == {"large"}
    assert it.requirements.get("karpenter.kwok.sh/instance-family").values == {"m5"}
    assert it.requirements.get("karpenter.kwok.sh/instance-memory").values == {"8Gi"}
    assert it.requirements.get(ZONE).values == {"us-east-1a"}


def test_explicit_pods_override_the_default(tmp_path: Path) -> None:
    entry = _entry(resources={"cpu": "2", "memory": "8Gi", "pods": "29"})
    (it,) = load_instance_types_file(_write(tmp_path, [entry]))
    assert it.capacity["pods"] == q("29")


def test_cpu_and_memory_labels_use_canonical_quantities(tmp_path: Path) -> None:
    entry = _entry(resources={"cpu": "1.5", "memory": "2048Mi"})
    (it,) = load_instance_types_file(_write(tmp_path, [entry]))
    assert it.requirements.get("karpenter.kwok.sh/instance-cpu").values == {"1500m"}
    assert it.requirements.get("karpenter.kwok.sh/instance-memory").values == {"2Gi"}


def test_offering_keys_match_case_insensitively(tmp_path: Path) -> None:
    entry = _entry(
        offerings=[
            {
                "price": 1.5,
                "available": True,
                "reservationCapacity": 3,
                "requirements": [
                    {"key": CAPACITY_TYPE, "operator": "In", "values": ["reserved"]},
                    {"key": ZONE, "operator": "In", "values": ["z1"]},
                ],
            }
        ]
    )
    (it,) = load_instance_types_file(_write(tmp_path, [entry]))
    o = it.offerings[0]
    assert (o.price, o.capacity_type, o.reservation_capacity) == (1.5, "reserved", 3)


def test_custom_offering_requirement_keys_become_well_known(tmp_path: Path) -> None:
    key = "example.com/test-kwok-offering-key"
    entry = _entry()
    entry["offerings"][0]["Requirements"].append({"key": key, "operator": "In", "values": ["x"]})
    load_instance_types_file(_write(tmp_path, [entry]))
    assert key in labels.WELL_KNOWN_LABELS
    labels.WELL_KNOWN_LABELS.discard(key)


def test_zones_and_capacity_types_are_the_union_over_offerings(tmp_path: Path) -> None:
    def off(ct: str, zone: str) -> dict[str, Any]:
        return {
            "Price": 1,
            "Requirements": [
                {"key": CAPACITY_TYPE, "operator": "In", "values": [ct]},
                {"key": ZONE, "operator": "In", "values": [zone]},
            ],
        }

    entry = _entry(offerings=[off("spot", "a"), off("on-demand", "b"), off("spot", "c")])
    (it,) = load_instance_types_file(_write(tmp_path, [entry]))
    assert it.requirements.get(ZONE).values == {"a", "b", "c"}
    assert it.requirements.get(CAPACITY_TYPE).values == {"spot", "on-demand"}


def test_override_fields_are_accepted_and_ignored(tmp_path: Path) -> None:
    entry = _entry()
    entry["offerings"][0].update({"CapacityOverride": None, "OverheadOverride": None})
    (it,) = load_instance_types_file(_write(tmp_path, [entry]))
    assert not it.offerings[0].has_overrides


def test_load_instance_types_without_a_path_is_the_builtin_catalogue() -> None:
    assert [it.name for it in load_instance_types(None)] == [
        it.name for it in default_instance_types()
    ]


BAD_ENTRIES = [
    (
        {"resources": {"cpu": "2", "memory": "lots"}},
        'entry 0 "m5.large": resources.memory: invalid quantity',
    ),
    ({"resources": {"memory": "8Gi"}}, "resources: 'cpu' is required"),
    ({"name": ""}, "entry 0: name: must be a non-empty string"),
    ({"architecture": 64}, "architecture: must be a non-empty string, got the number 64"),
    ({"operatingSystems": []}, "operatingSystems: must name at least one operating system"),
    ({"operatingSystems": ["linux", 3]}, "operatingSystems[1]: must be a string"),
    ({"offerings": {"Price": 1}}, "offerings: must be a list"),
    ({"offerings": [{"Requirements": []}]}, "offerings[0].Price: must be a number, got null"),
    (
        {"offerings": [{"Price": -1, "Requirements": []}]},
        "offerings[0].Price: must not be negative",
    ),
    (
        {
            "offerings": [
                {"Price": 1, "Requirements": [{"key": ZONE, "operator": "In", "values": ["a"]}]}
            ]
        },
        'offerings[0].Requirements: needs "karpenter.sh/capacity-type" In [<value>]',
    ),
    (
        {"offerings": [{"capacityType": "on-demand", "zone": "us-east-1a", "price": 1.6}]},
        "unknown field 'capacityType' (this is the older example shape",
    ),
    (
        {
            "offerings": [
                {"Price": 1, "Requirements": [{"key": ZONE, "operator": "Near", "values": ["a"]}]}
            ]
        },
        "offerings[0].Requirements[0]:",
    ),
    ({"colour": "blue"}, "unknown field 'colour'; expected one of name, offerings"),
    (
        {"resources": {"cpu": True, "memory": "1Gi"}},
        "resources.cpu: must be a quantity, got a boolean",
    ),
]


@pytest.mark.parametrize(("overrides", "message"), BAD_ENTRIES)
def test_bad_entry_error_names_file_entry_and_field(
    tmp_path: Path, overrides: dict[str, Any], message: str
) -> None:
    path = _write(tmp_path, [_entry(**overrides)])
    with pytest.raises(InstanceTypesFileError) as info:
        load_instance_types_file(path)
    assert str(info.value).startswith(f"{path}: entry 0")
    assert message in str(info.value)


def test_error_names_the_failing_entry_index(tmp_path: Path) -> None:
    path = _write(tmp_path, [_entry(), _entry(name="m5.xlarge", resources={"cpu": "x"})])
    with pytest.raises(
        InstanceTypesFileError, match=re.escape('entry 1 "m5.xlarge": resources.cpu')
    ):
        load_instance_types_file(path)


def test_duplicate_names_are_rejected(tmp_path: Path) -> None:
    path = _write(tmp_path, [_entry(), _entry()])
    with pytest.raises(
        InstanceTypesFileError, match=re.escape('entry 1 "m5.large": name: duplicates entry 0')
    ):
        load_instance_types_file(path)


def test_invalid_json_names_file_and_position(tmp_path: Path) -> None:
    path = _write(tmp_path, '[{"name": "x",]')
    with pytest.raises(
        InstanceTypesFileError, match=r"not valid JSON: .*\(line 1, column \d+\)"
    ) as info:
        load_instance_types_file(path)
    assert str(info.value).startswith(path)


def test_top_level_must_be_a_list(tmp_path: Path) -> None:
    path = _write(tmp_path, {"name": "x"})
    with pytest.raises(
        InstanceTypesFileError, match="must be a JSON list of instance types, got an object"
    ):
        load_instance_types_file(path)


def test_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    missing = str(tmp_path / "nope.json")
    with pytest.raises(InstanceTypesFileError, match="could not read instance types file") as info:
        load_instance_types_file(missing)
    assert str(info.value).startswith(missing)


def test_parse_instance_types_names_its_source() -> None:
    with pytest.raises(InstanceTypesFileError, match=r"^inline: entry 0: must be an object"):
        parse_instance_types([3], source="inline")
