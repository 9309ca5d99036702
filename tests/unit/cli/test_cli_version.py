"""`karpenter --version` reports the installed distribution's version."""

from __future__ import annotations

from importlib.metadata import version

from click.testing import CliRunner

from karpenter_core.cli import main


def test_version_is_the_installed_distribution_version() -> None:
    result = CliRunner().invoke(main, ["--version"])
    assert result.exit_code == 0
    assert result.stdout == f"karpenter, version {version('karpenter-core')}\n"


def test_group_offers_the_issue_2_commands() -> None:
    assert {"plugins", "instance-types", "crds", "validate"} <= set(main.commands)
