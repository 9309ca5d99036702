"""``IGNORE_DRA_REQUESTS`` (``--ignore-dra-requests``): one setting, read the same way by
``serve``, ``simulate`` and ``schedule`` - upstream's help text and default (true), the
flag before the environment variable, only ``true``/``false`` accepted."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from karpenter_core.cli import main
from karpenter_core.cli.schedule import InputError, read_ignore_dra_requests, with_dra_setting
from karpenter_core.cli.serve import build_config
from karpenter_core.cli.simulate import with_dra_setting as scenario_with_dra_setting
from karpenter_core.runtime.options import (
    IGNORE_DRA_REQUESTS_HELP,
    OptionsError,
    ignore_dra_requests,
)
from karpenter_core.sim.scenario import Scenario, ScenarioError

UPSTREAM_HELP = "When set, Karpenter will ignore pods' DRA requests during scheduling simulations."


def test_the_help_text_is_upstreams() -> None:
    """Upstream ``options.go``: ``--ignore-dra-requests`` / ``IGNORE_DRA_REQUESTS``,
    default true."""
    assert IGNORE_DRA_REQUESTS_HELP.startswith(UPSTREAM_HELP)


@pytest.mark.parametrize("command", ["serve", "simulate", "schedule"])
def test_every_command_documents_the_flag_with_upstreams_words(command: str) -> None:
    result = CliRunner().invoke(main, [command, "--help"])
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    entry = text.split("--ignore-dra-requests true|false ", 1)[1].split(" --", 1)[0]
    assert entry.startswith(UPSTREAM_HELP)
    assert "IGNORE_DRA_REQUESTS" in entry
    assert "default true" in entry


def test_default_is_to_ignore_dra_requests() -> None:
    assert ignore_dra_requests({}) is True


def test_the_environment_variable_turns_simulation_on() -> None:
    assert ignore_dra_requests({"IGNORE_DRA_REQUESTS": "false"}) is False


def test_the_flag_wins_over_the_environment() -> None:
    assert ignore_dra_requests({"IGNORE_DRA_REQUESTS": "false"}, "true") is True
    assert ignore_dra_requests({"IGNORE_DRA_REQUESTS": "true"}, "false") is False


def test_a_fallback_sits_between_the_flag_and_the_environment() -> None:
    assert ignore_dra_requests({"IGNORE_DRA_REQUESTS": "true"}, None, "false") is False
    assert ignore_dra_requests({}, "true", "false") is True


def test_only_true_and_false_are_accepted() -> None:
    with pytest.raises(OptionsError, match="ignore-dra-requests: invalid boolean 'yes'"):
        ignore_dra_requests({"IGNORE_DRA_REQUESTS": "yes"})


def test_serve_reads_the_flag_and_the_environment() -> None:
    assert build_config({}, {}).options.ignore_dra_requests is True
    env = {"IGNORE_DRA_REQUESTS": "false"}
    assert build_config({}, env).options.ignore_dra_requests is False
    assert build_config({"ignore_dra_requests": "true"}, env).options.ignore_dra_requests is True


def test_schedule_reads_the_flag_and_the_environment() -> None:
    assert read_ignore_dra_requests(None, {}) is True
    assert read_ignore_dra_requests(None, {"IGNORE_DRA_REQUESTS": "false"}) is False
    assert read_ignore_dra_requests("true", {"IGNORE_DRA_REQUESTS": "false"}) is True
    assert with_dra_setting(None, False).ignore_dra_requests is False
    with pytest.raises(InputError, match="ignore-dra-requests"):
        read_ignore_dra_requests("maybe", {})


def test_schedule_rejects_a_bad_value_as_bad_input(tmp_path: Path) -> None:
    f = tmp_path / "empty.yaml"
    f.write_text("apiVersion: v1\nkind: Namespace\nmetadata: {name: x}\n")
    result = CliRunner().invoke(main, ["schedule", "-f", str(f), "--ignore-dra-requests", "no"])
    assert result.exit_code == 1
    assert "ignore-dra-requests: invalid boolean 'no'" in result.output


def scenario(**options: str) -> Scenario:
    return Scenario(name="s", source="s.yaml", options=dict(options))


def test_simulate_keeps_a_scenario_that_says_nothing_unchanged() -> None:
    s = scenario(BATCH_IDLE_DURATION="2s")
    assert scenario_with_dra_setting(s, None, {}) is s


def test_simulate_reads_the_environment_when_the_scenario_says_nothing() -> None:
    s = scenario_with_dra_setting(scenario(), None, {"IGNORE_DRA_REQUESTS": "false"})
    assert s.options == {"IGNORE_DRA_REQUESTS": "false"}


def test_simulate_prefers_the_scenarios_own_option_to_the_environment() -> None:
    s = scenario(**{"ignore-dra-requests": "true"})
    out = scenario_with_dra_setting(s, None, {"IGNORE_DRA_REQUESTS": "false"})
    assert out.options == {"IGNORE_DRA_REQUESTS": "true"}


def test_simulate_lets_the_flag_win() -> None:
    s = scenario(IGNORE_DRA_REQUESTS="true", BATCH_IDLE_DURATION="2s")
    out = scenario_with_dra_setting(s, "false", {})
    assert out.options == {"IGNORE_DRA_REQUESTS": "false", "BATCH_IDLE_DURATION": "2s"}


def test_simulate_names_where_a_bad_value_came_from() -> None:
    with pytest.raises(ScenarioError, match=r"^--ignore-dra-requests: "):
        scenario_with_dra_setting(scenario(), "nope", {})
    with pytest.raises(ScenarioError, match=r"^s\.yaml: options: "):
        scenario_with_dra_setting(scenario(IGNORE_DRA_REQUESTS="nope"), None, {})
