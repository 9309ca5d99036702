"""One output convention for every command (docs/cli.md, "Output"): ``-o table|json|yaml``
(``wide`` where a table has more columns, ``html`` where a page exists, ``text`` still
accepted for ``table``), camelCase JSON, complete one-line summaries in ``karpenter --help``
and a meaningful metavar on every ``serve`` option."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import click
import pytest
import yaml
from click.testing import CliRunner

from karpenter_core.cli import main

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
SCHEDULE = ["schedule", "-f", str(EXAMPLES / "schedule")]
PRINTING = ("crds", "instance-types", "plugins", "schedule", "simulate", "validate")
"""Commands that print results (``serve`` runs the operator and logs)."""


def _run(*args: str) -> str:
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code == 0, result.output
    return result.stdout


def _output_option(name: str) -> click.Option:
    command = main.commands[name]
    (option,) = [p for p in command.params if isinstance(p, click.Option) and "-o" in p.opts]
    return option


@pytest.mark.parametrize("name", PRINTING)
def test_every_command_printing_results_offers_table_json_and_yaml(name: str) -> None:
    option = _output_option(name)
    assert isinstance(option.type, click.Choice)
    assert {"table", "json", "yaml"} <= set(option.type.choices)
    assert "text" not in option.type.choices  # an alias, not listed
    extra = set(option.type.choices) - {"table", "json", "yaml"}
    expected = {"schedule": {"wide"}, "instance-types": {"wide"}, "simulate": {"html"}}
    assert extra == expected.get(name, set())


@pytest.mark.parametrize("name", PRINTING)
def test_text_is_accepted_for_table_everywhere(name: str) -> None:
    option = _output_option(name)
    ctx = click.Context(main.commands[name])
    assert option.type.convert("text", option, ctx) == "table"


def test_help_lists_every_command_with_its_whole_summary() -> None:
    out = _run("--help")
    listing = out.split("Commands:", 1)[1]
    assert "..." not in listing
    for name, command in main.commands.items():
        summary = command.short_help
        assert summary, name
        assert re.search(rf"^  {re.escape(name)} +{re.escape(summary)}$", listing, re.M), name


def test_every_serve_option_names_what_its_value_is() -> None:
    for param in main.commands["serve"].params:
        if isinstance(param, click.Option) and not param.is_flag and param.name != "help":
            metavar = param.metavar
            assert metavar and metavar not in ("VALUE", "TEXT"), param.name
    out = _run("serve", "--help")
    assert "VALUE " not in out.replace("NAME=VALUE", "") and " TEXT " not in out
    assert "--batch-idle-duration DURATION" in out and "--metrics-port PORT" in out


def _snake_keys(value: Any) -> set[str]:
    if isinstance(value, dict):
        own = {k for k in value if re.fullmatch(r"[a-z0-9]+(_[a-z0-9]+)+", k)}
        return own | {k for v in value.values() for k in _snake_keys(v)}
    if isinstance(value, list):
        return {k for v in value for k in _snake_keys(v)}
    return set()


@pytest.mark.parametrize(
    "args",
    [
        SCHEDULE,
        ["instance-types"],
        ["plugins"],
        ["validate", "-f", str(EXAMPLES), "-q"],
    ],
    ids=["schedule", "instance-types", "plugins", "validate"],
)
def test_json_is_camel_case_and_yaml_the_same_document(args: list[str]) -> None:
    document = json.loads(_run(*args, "-o", "json"))
    assert _snake_keys(document) == set()
    assert yaml.safe_load(_run(*args, "-o", "yaml")) == document


def test_schedule_wide_adds_zone_and_capacity_type_columns() -> None:
    plain = _run(*SCHEDULE).splitlines()
    assert "ZONE" not in plain[0]
    wide = _run(*SCHEDULE, "-o", "wide").splitlines()
    assert wide[0].split() == [
        "NODEPOOL", "INSTANCE", "TYPE", "PRICE", "ZONE", "CAPACITY", "TYPE", "PODS"
    ]  # fmt: skip
    claims = json.loads(_run(*SCHEDULE, "-o", "json"))["nodeClaims"]
    for line, claim in zip(wide[1:], claims, strict=False):
        reqs = {r["key"]: r for r in claim["requirements"]}
        zone = reqs.get("topology.kubernetes.io/zone")
        shown = ",".join(zone["values"]) if zone and zone["operator"] == "In" else "any"
        assert line.split()[3] == shown
        assert line.split()[4] == ",".join(reqs["karpenter.sh/capacity-type"]["values"])
    assert any("test-zone-a" in line for line in wide[1:])


def test_schedule_text_is_its_table() -> None:
    assert _run(*SCHEDULE, "-o", "text") == _run(*SCHEDULE)


def test_instance_types_wide_adds_capacity_types() -> None:
    plain = _run("instance-types").splitlines()
    wide = _run("instance-types", "-o", "wide").splitlines()
    assert wide[0].endswith("ZONES" + wide[0].split("ZONES", 1)[1])
    assert "CAPACITY TYPES" in wide[0] and "CAPACITY TYPES" not in plain[0]
    assert wide[1].startswith(plain[1].split()[0])
    assert wide[1].split()[-1] == "on-demand,spot"


def test_validate_document_says_what_is_wrong(tmp_path: Path) -> None:
    bad = tmp_path / "pool.yaml"
    bad.write_text(
        "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: np}\n"
        "spec: {template: {spec: {nodeClassRef: {group: g, kind: K, name: n}}}}\n"
    )
    result = CliRunner().invoke(main, ["validate", "-f", str(bad), "-o", "json"])
    assert result.exit_code == 1
    document = json.loads(result.stdout)
    assert document["valid"] is False
    assert (document["files"], document["invalid"], document["checked"]) == (1, 1, {"NodePool": 1})
    assert document["problems"] == [
        {
            "file": str(bad),
            "object": "NodePool/np",
            "message": "spec.template.spec.requirements: Required value",
        }
    ]


def test_crds_table_and_json_list_the_same_crds() -> None:
    document = json.loads(_run("crds", "-o", "json"))
    assert (document["apiVersion"], document["kind"]) == ("v1", "List")
    items = document["items"]
    rows = _run("crds", "-o", "table").splitlines()[1:]
    assert [r.split()[0] for r in rows] == [i["metadata"]["name"] for i in items]
    # yaml (the default) stays the stream kubectl apply reads, with the same manifests
    assert [i for i in yaml.safe_load_all(_run("crds")) if i] == items
