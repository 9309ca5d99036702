"""`karpenter instance-types`: table, json and yaml output, and its errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from karpenter_core.cli.instance_types import TABLE_COLUMNS, command

ENTRY: dict[str, Any] = {
    "name": "m5.large",
    "architecture": "amd64",
    "operatingSystems": ["linux"],
    "resources": {"cpu": "2", "memory": "8Gi", "pods": "29"},
    "offerings": [
        {
            "Price": price,
            "Available": True,
            "Requirements": [
                {"key": "karpenter.sh/capacity-type", "operator": "In", "values": [ct]},
                {"key": "topology.kubernetes.io/zone", "operator": "In", "values": [zone]},
            ],
        }
        for ct, zone, price in [
            ("on-demand", "us-east-1a", 0.096),
            ("on-demand", "us-east-1b", 0.1),
            ("spot", "us-east-1a", 0.04),
        ]
    ],
}


def run(*args: str) -> Any:
    return CliRunner().invoke(command, list(args), catch_exceptions=False)


@pytest.fixture
def catalogue_file(tmp_path: Path) -> str:
    path = tmp_path / "types.json"
    path.write_text(json.dumps([ENTRY]))
    return str(path)


def test_table_lists_the_kwok_catalogue_by_default() -> None:
    result = run()
    assert result.exit_code == 0
    lines = result.output.splitlines()
    assert lines[0].split() == list(TABLE_COLUMNS)
    assert len(lines) == 1 + 144
    assert lines[1].split() == [
        "c-1x-amd64-linux",
        "1",
        "2Gi",
        "16",
        "amd64",
        "linux",
        "0.0271",
        "0.0190",
        "test-zone-a,test-zone-b,test-zone-c,test-zone-d",
    ]


def test_table_row_of_a_custom_file(catalogue_file: str) -> None:
    result = run("--instance-types", catalogue_file)
    assert result.exit_code == 0
    assert result.output.splitlines()[1].split() == [
        "m5.large",
        "2",
        "8Gi",
        "29",
        "amd64",
        "linux",
        "0.0960",
        "0.0400",
        "us-east-1a,us-east-1b",
    ]


def test_json_output_has_full_objects(catalogue_file: str) -> None:
    result = run("--instance-types", catalogue_file, "-o", "json")
    assert result.exit_code == 0
    (doc,) = json.loads(result.output)
    assert doc["name"] == "m5.large"
    assert doc["capacity"] == {"cpu": "2", "memory": "8Gi", "pods": "29"}
    assert doc["allocatable"] == {"cpu": "1900m", "memory": "8182Mi", "pods": "29"}
    assert doc["overhead"] == {"kubeReserved": {"cpu": "100m", "memory": "10Mi"}}
    assert [
        (o["capacityType"], o["zone"], o["price"], o["available"]) for o in doc["offerings"]
    ] == [
        ("on-demand", "us-east-1a", 0.096, True),
        ("on-demand", "us-east-1b", 0.1, True),
        ("spot", "us-east-1a", 0.04, True),
    ]
    keys = {r["key"] for r in doc["requirements"]}
    assert "karpenter.kwok.sh/instance-family" in keys


def test_yaml_output_matches_json(catalogue_file: str) -> None:
    as_json = json.loads(run("--instance-types", catalogue_file, "-o", "json").output)
    as_yaml = yaml.safe_load(run("--instance-types", catalogue_file, "-o", "yaml").output)
    assert as_yaml == as_json


def test_unknown_provider_is_one_line_listing_installed_ones() -> None:
    result = run("--cloud-provider", "nope")
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert len(lines) == 1
    assert "unknown cloud provider 'nope'" in lines[0]
    assert "kwok" in lines[0]


def test_broken_file_names_file_entry_and_field(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps([{**ENTRY, "resources": {"cpu": "two", "memory": "1Gi"}}]))
    result = run("--instance-types", str(path))
    assert result.exit_code == 1
    assert f'{path}: entry 0 "m5.large": resources.cpu: invalid quantity' in result.output
    assert "Traceback" not in result.output


def test_missing_file_is_an_error_not_a_traceback(tmp_path: Path) -> None:
    result = run("--instance-types", str(tmp_path / "missing.json"))
    assert result.exit_code == 1
    assert "could not read instance types file" in result.output


def test_instance_types_file_is_refused_by_providers_without_that_setting(
    catalogue_file: str,
) -> None:
    result = run("--cloud-provider", "azure", "--instance-types", catalogue_file)
    assert result.exit_code == 1
    assert "does not read an instance types file" in result.output


def test_unknown_output_format_is_rejected() -> None:
    result = run("-o", "xml")
    assert result.exit_code == 2
    assert "xml" in result.output


def test_region_is_refused_by_providers_without_regions() -> None:
    result = run("--cloud-provider", "kwok", "--region", "eastus")
    assert result.exit_code == 1
    assert (
        result.output.strip()
        == "Error: cloud provider 'kwok' has no regions; --region does not apply to it"
    )


def test_region_fills_the_providers_region_setting() -> None:
    from karpenter_core.cli import instance_types as cli
    from karpenter_core.plugins import get_plugin_manager

    assert cli.region_settings(get_plugin_manager(), "aws", " us-west-2 ") == {
        "region": "us-west-2"
    }
    assert cli.region_settings(get_plugin_manager(), "aws", None) == {}
