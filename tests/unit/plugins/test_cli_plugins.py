"""`karpenter plugins`: the table, the JSON, and broken plugins reported without a traceback."""

from __future__ import annotations

import json

import pytest
import yaml
from click.testing import CliRunner
from plugin_sources import (
    ALL_FAMILIES_PLUGIN,
    IMPORT_ERROR_PLUGIN,
    RAISING_PLUGIN,
    FakePlugins,
    provider_plugin,
)

from karpenter_core.cli import main
from karpenter_core.cli.plugins import STATUS_CAN_LAUNCH, STATUS_CATALOGUE_ONLY


def _run(*args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["plugins", *args], env=env)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.output


@pytest.fixture
def three_plugins(fake_plugins: FakePlugins) -> None:
    fake_plugins(
        "real", provider_plugin("real", can_launch=True), dist="karpenter-real", version="1.4.0"
    )
    fake_plugins(
        "stub", provider_plugin("stub", can_launch=False), dist="karpenter-stub", version="0.1.0"
    )
    fake_plugins(
        "extras",
        ALL_FAMILIES_PLUGIN.replace("{prefix}", "x"),
        dist="karpenter-extras",
        version="2.0",
    )


def _line(output: str, name: str) -> str:
    [line] = [ln for ln in output.splitlines() if ln.split()[:1] == [name]]
    return line


def test_table_lists_each_plugin_with_distribution_hooks_and_status(three_plugins: None) -> None:
    code, out = _run(env={"KARPENTER_PLUGINS": None})  # type: ignore[dict-item]
    assert code == 0
    assert out.splitlines()[0].split() == ["PLUGIN", "DISTRIBUTION", "HOOKS", "STATUS"]
    assert "karpenter-real 1.4.0" in _line(out, "real")
    assert _line(out, "real").endswith(f"real: {STATUS_CAN_LAUNCH}")
    assert _line(out, "stub").endswith(f"stub: {STATUS_CATALOGUE_ONLY}")
    assert "instance_type_overlays,disruption_methods,dra_drivers" in _line(out, "extras")
    assert "karpenter-core" in _line(out, "builtins")


def test_json_output_has_the_same_facts(three_plugins: None) -> None:
    code, out = _run("-o", "json", env={"KARPENTER_PLUGINS": None})  # type: ignore[dict-item]
    assert code == 0
    rows = {row["name"]: row for row in json.loads(out)["plugins"]}
    assert list(rows) == ["builtins", "extras", "real", "stub"]
    stub = rows["stub"]
    assert (stub["distribution"], stub["version"], stub["hooks"]) == (
        "karpenter-stub",
        "0.1.0",
        ["cloud_providers"],
    )
    assert stub["cloudProviders"][0]["canLaunch"] is False
    assert stub["cloudProviders"][0]["status"] == STATUS_CATALOGUE_ONLY
    assert stub["cloudProviders"][0]["nodeClasses"] == [
        {"group": "karpenter.stub.test", "kind": "TestNodeClass", "version": ""}
    ]
    assert rows["extras"]["disruptionMethods"] == ["x-late", "x-early"]
    assert rows["extras"]["draDrivers"] == ["x.example.com"]
    assert rows["builtins"]["instanceTypeScorers"] == ["price", "least-waste", "priority"]
    assert rows["extras"]["instanceTypeScorers"] == []


def test_env_var_filters_the_listing(three_plugins: None) -> None:
    code, out = _run("-o", "json", env={"KARPENTER_PLUGINS": "stub"})
    assert code == 0
    assert [row["name"] for row in json.loads(out)["plugins"]] == ["builtins", "stub"]


def test_plugin_that_fails_to_import_is_listed_with_its_error(fake_plugins: FakePlugins) -> None:
    fake_plugins("good", provider_plugin("good"))
    fake_plugins("broken", IMPORT_ERROR_PLUGIN, dist="karpenter-broken", version="0.2")
    code, out = _run(env={"KARPENTER_PLUGINS": None})  # type: ignore[dict-item]
    assert code == 1
    assert "Traceback" not in out
    assert _line(out, "good").endswith(f"good: {STATUS_CAN_LAUNCH}")
    broken = _line(out, "broken")
    assert "karpenter-broken 0.2" in broken
    assert "error: failed to import" in broken
    assert "karpenter_no_such_sdk_module" in broken


def test_plugin_whose_hook_raises_is_marked_error_and_others_still_listed(
    fake_plugins: FakePlugins,
) -> None:
    fake_plugins("good", provider_plugin("good"))
    fake_plugins("raiser", RAISING_PLUGIN)
    code, out = _run("-o", "json", env={"KARPENTER_PLUGINS": None})  # type: ignore[dict-item]
    assert code == 1
    rows = {row["name"]: row for row in json.loads(out)["plugins"]}
    assert rows["good"]["status"] == "loaded"
    assert rows["raiser"]["status"] == "error"
    assert "driver catalogue unreachable" in rows["raiser"]["error"]


def test_json_keys_are_camel_case_and_yaml_is_the_same_document(three_plugins: None) -> None:
    code, out = _run("-o", "json", env={"KARPENTER_PLUGINS": None})  # type: ignore[dict-item]
    assert code == 0
    document = json.loads(out)

    def keys(value: object) -> set[str]:
        if isinstance(value, dict):
            return set(value) | {k for v in value.values() for k in keys(v)}
        if isinstance(value, list):
            return {k for v in value for k in keys(v)}
        return set()

    assert {"cloudProviders", "canLaunch", "nodeClasses", "draDrivers"} <= keys(document)
    assert not [k for k in keys(document) if "_" in k]
    code, out = _run("-o", "yaml", env={"KARPENTER_PLUGINS": None})  # type: ignore[dict-item]
    assert code == 0
    assert yaml.safe_load(out) == document


def test_text_is_still_accepted_as_the_table(three_plugins: None) -> None:
    env = {"KARPENTER_PLUGINS": None}
    assert _run("-o", "text", env=env) == _run(env=env)  # type: ignore[arg-type]
