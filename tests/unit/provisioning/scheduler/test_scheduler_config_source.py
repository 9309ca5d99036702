"""Where the SCHEDULER_CONFIG document comes from: the value itself (upstream's form, as
the chart passes ``settings.schedulerConfig``) or ``@PATH``; and ``karpenter serve``
refusing a bad inline document at start-up, as upstream's options parsing does."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from karpenter_core.cli import main
from karpenter_core.cli.serve import BadFlag, build_config
from karpenter_core.provisioning.scheduler.config import (
    check_scheduler_config_option,
    load_scheduler_config,
    scheduler_config_source,
)
from karpenter_core.provisioning.scheduler.topology import SchedulerConfigError

ZONE_SPREAD = {
    "podTopologySpread": {
        "defaultConstraints": [
            {
                "maxSkew": 1,
                "topologyKey": "topology.kubernetes.io/zone",
                "whenUnsatisfiable": "ScheduleAnyway",
            }
        ]
    }
}
# as upstream's chart writes it: a block scalar, so the value starts with a newline
YAML_DOC = "\n" + yaml.safe_dump(ZONE_SPREAD, sort_keys=False)


@pytest.mark.parametrize("value", [YAML_DOC, json.dumps(ZONE_SPREAD)])
def test_the_value_is_the_document_itself(value: str) -> None:
    assert load_scheduler_config(value) == ZONE_SPREAD
    assert scheduler_config_source(value) == "scheduler-config"


@pytest.mark.parametrize("value", ["", "  \n"])
def test_an_empty_value_means_no_config(value: str) -> None:
    assert load_scheduler_config(value) is None


def test_at_path_reads_the_file(tmp_path: Path) -> None:
    path = tmp_path / "scheduler.yaml"
    path.write_text(YAML_DOC)
    assert load_scheduler_config(f"@{path}") == ZONE_SPREAD
    assert scheduler_config_source(f"@{path}") == str(path)


def test_a_missing_file_names_it(tmp_path: Path) -> None:
    path = tmp_path / "nope.yaml"
    with pytest.raises(SchedulerConfigError) as e:
        load_scheduler_config(f"@{path}")
    assert str(e.value) == f"{path}: cannot read scheduler config: no such file or directory"


def test_a_path_without_at_says_how_to_name_a_file() -> None:
    with pytest.raises(SchedulerConfigError) as e:
        load_scheduler_config("/etc/karpenter/scheduler.yaml")
    message = str(e.value)
    assert message.startswith("scheduler-config: scheduler config: expected one mapping")
    assert "give @/etc/karpenter/scheduler.yaml" in message


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (YAML_DOC.replace("maxSkew: 1", "maxSkew: 0"), "maxSkew must be greater than 0"),
        ("podTopologySpread: [", "decoding scheduler config: invalid YAML"),
        ("podTopologySpred: {}", 'unknown field "podTopologySpred"'),
        ("a: 1\n---\nb: 2\n", "expected one mapping"),
        ("@", "'@' must be followed by a file's path"),
        ("@-", "'@' must be followed by a file's path"),
    ],
)
def test_a_bad_inline_value_is_one_line_naming_the_option(value: str, expected: str) -> None:
    with pytest.raises(SchedulerConfigError) as e:
        load_scheduler_config(value)
    message = str(e.value)
    assert message.startswith("scheduler-config: ") and "\n" not in message
    assert expected in message


def test_a_bad_file_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "scheduler.yaml"
    path.write_text(YAML_DOC.replace("ScheduleAnyway", "Sometimes"))
    with pytest.raises(SchedulerConfigError) as e:
        load_scheduler_config(f"@{path}")
    assert str(e.value).startswith(f"{path}: validating scheduler config")


def test_the_start_up_check_leaves_the_file_to_the_provisioner(tmp_path: Path) -> None:
    """The file may be mounted or fixed later: only the inline form fails at start-up."""
    check_scheduler_config_option(f"@{tmp_path}/not-yet.yaml")
    check_scheduler_config_option(YAML_DOC)
    with pytest.raises(SchedulerConfigError):
        check_scheduler_config_option("podTopologySpread: [")


def test_serve_takes_the_inline_document_from_the_environment() -> None:
    config = build_config({"cloud_provider": "kwok"}, {"SCHEDULER_CONFIG": YAML_DOC})
    assert config.options.scheduler_config == YAML_DOC


def test_serve_refuses_a_bad_inline_document_before_starting() -> None:
    with pytest.raises(BadFlag) as e:
        build_config({}, {"SCHEDULER_CONFIG": YAML_DOC.replace("maxSkew: 1", "maxSkew: -1")})
    assert e.value.message.startswith("scheduler-config: ") and "maxSkew" in e.value.message
    result = CliRunner().invoke(main, ["serve", "--scheduler-config", "/etc/sched.yaml"])
    assert result.exit_code == 2
    [line] = result.output.strip().splitlines()
    assert line.startswith("Error: scheduler-config: ") and "give @/etc/sched.yaml" in line
