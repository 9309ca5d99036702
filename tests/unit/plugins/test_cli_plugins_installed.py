"""`karpenter plugins` over the five packages this repository installs (no fakes).

Every bundled provider (kwok, aws, azure, gcp) now launches and says so; the wheel test
checks the same for a fresh install of kwok and aws.
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from karpenter_core.cli import main


def _providers() -> dict[str, dict[str, object]]:
    result = CliRunner().invoke(main, ["plugins", "-o", "json"], env={"KARPENTER_PLUGINS": None})
    assert result.exit_code == 0, result.output
    return {
        provider["name"]: provider
        for plugin in json.loads(result.stdout)["plugins"]
        for provider in plugin["cloudProviders"]
    }


@pytest.mark.parametrize("name", ["kwok", "aws", "azure", "gcp"])
def test_launching_providers_are_listed_as_able_to_launch(name: str) -> None:
    assert _providers()[name]["canLaunch"] is True


@pytest.mark.parametrize("name", ["azure", "gcp"])
def test_table_row_says_the_provider_can_launch(name: str) -> None:
    result = CliRunner().invoke(main, ["plugins"], env={"KARPENTER_PLUGINS": None})
    assert result.exit_code == 0
    [row] = [line for line in result.stdout.splitlines() if line.split()[:1] == [name]]
    assert row.endswith(f"{name}: can launch")
