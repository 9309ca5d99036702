"""``karpenter serve``'s flags and environment variables: precedence, defaults, one-line
errors, and help for every flag. (The operator itself, on wall clocks:
tests/wallclock/operator/test_serve.py.)"""

from __future__ import annotations

from typing import Any

import attrs
import pytest
from click.testing import CliRunner

from karpenter_core.cli import main
from karpenter_core.cli.serve import BadFlag, build_config
from karpenter_core.runtime.options import Options

# ---------------------------------------------------------------------- flags


def test_flags_win_over_environment_variables() -> None:
    cfg = build_config(
        {"batch_idle_duration": "3s", "cloud_provider": "kwok"},
        {"BATCH_IDLE_DURATION": "2s", "BATCH_MAX_DURATION": "20s", "LOG_LEVEL": "debug"},
    )
    assert cfg.options.batch_idle_duration == 3.0
    assert cfg.options.batch_max_duration == 20.0
    assert cfg.options.log_level == "debug"


def test_the_cloud_provider_defaults_to_kwok_when_installed() -> None:
    assert build_config({}, {}).cloud_provider == "kwok"


def test_provider_settings_are_name_value_pairs() -> None:
    cfg = build_config({"provider_settings": ("seed=7", "launch-latency=2s")}, {})
    assert dict(cfg.provider_settings) == {"seed": "7", "launch-latency": "2s"}
    with pytest.raises(BadFlag, match="expected NAME=VALUE"):
        build_config({"provider_settings": ("seed",)}, {})


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--batch-idle-duration", "soon"], "batch-idle-duration: invalid duration 'soon'"),
        (["--disable-leader-election=yes"], "disable-leader-election: invalid boolean 'yes'"),
        (["--log-level", "loud"], "log-level: 'loud' is not one of"),
        (["--metrics-port", "http"], "metrics-port: invalid integer 'http'"),
        (["--no-such-flag"], "No such option"),
        (["--provider-setting", "oops"], "expected NAME=VALUE"),
    ],
)
def test_a_bad_flag_is_one_line_and_exit_2(args: list[str], message: str) -> None:
    result = CliRunner().invoke(main, ["serve", *args])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    assert lines[0].startswith("Error: ")
    assert message in lines[0]


def test_a_bad_environment_variable_is_one_line_naming_it() -> None:
    result = CliRunner().invoke(main, ["serve"], env={"FEATURE_GATES": "NodeRepair"})
    assert result.exit_code == 2
    assert result.output.strip() == ("Error: feature-gates: 'NodeRepair' is not NAME=true|false")


def test_a_missing_kubeconfig_is_one_line_and_exit_1(tmp_path: Any) -> None:
    result = CliRunner().invoke(main, ["serve", "--kubeconfig", f"{tmp_path}/nope"])
    assert result.exit_code == 1
    assert (
        result.output.strip().splitlines()[-1] == f"Error: kubeconfig {tmp_path}/nope: no such file"
    )
    assert "Traceback" not in result.output


def test_a_bare_boolean_flag_means_true() -> None:
    from karpenter_core.cli.serve import command

    ctx = command.make_context("serve", ["--disable-leader-election", "--kubeconfig", "x"])
    cfg = build_config(ctx.params, {})
    assert cfg.options.disable_leader_election is True
    assert cfg.kubeconfig == "x"


def test_every_serve_flag_says_what_it_does_in_its_help() -> None:
    from karpenter_core.cli.serve import _ENV_HELP

    missing = [f.name for f in attrs.fields(Options) if not _ENV_HELP.get(f.name)]
    assert missing == []
