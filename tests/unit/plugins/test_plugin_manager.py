"""The plugin manager: discovery, filtering, validation and the registration helpers."""

from __future__ import annotations

import sys

import pytest
from plugin_sources import (
    ALL_FAMILIES_PLUGIN,
    EXTRA_ARGUMENT_PLUGIN,
    IMPORT_ERROR_PLUGIN,
    RAISING_PLUGIN,
    TYPO_PLUGIN,
    WRONG_RETURN_PLUGIN,
    FakePlugins,
    provider_plugin,
)

from karpenter_core import builtins
from karpenter_core.apis import labels
from karpenter_core.builtins import DISRUPTION_METHOD_NAMES
from karpenter_core.cloudprovider.protocol import NodeClassKind
from karpenter_core.hookspecs import CloudProviderSpec, ProviderContext, ProviderSetting
from karpenter_core.plugins import (
    BUILTIN_PLUGIN_NAME,
    PluginError,
    allowed_plugin_names,
    cloud_providers,
    controllers,
    disruption_methods,
    dra_drivers,
    get_cloud_provider,
    get_plugin_manager,
    hookimpl,
    instance_type_overlays,
    resolve_settings,
)
from karpenter_core.runtime.clock import VirtualClock
from karpenter_core.runtime.events import EventRecorder
from karpenter_core.sim.apiserver import InMemoryApiServer

NO_FILTER: dict[str, str] = {}


def test_builtins_register_first_as_karpenter_core(fake_plugins: FakePlugins) -> None:
    fake_plugins("zeta", provider_plugin("zeta"))
    pm = get_plugin_manager(NO_FILTER)
    info = list(pm.plugin_info.values())
    assert info[0].name == BUILTIN_PLUGIN_NAME
    assert info[0].distribution == "karpenter-core"
    assert pm.get_plugin(BUILTIN_PLUGIN_NAME) is builtins


def test_entry_point_plugin_is_registered_with_its_distribution(fake_plugins: FakePlugins) -> None:
    fake_plugins("acme", provider_plugin("acme"), dist="acme-karpenter", version="2.3.1")
    pm = get_plugin_manager(NO_FILTER)
    assert pm.plugin_info["acme"].distribution == "acme-karpenter"
    assert pm.plugin_info["acme"].version == "2.3.1"
    assert pm.load_errors == []


def test_cloud_provider_hook_is_called(fake_plugins: FakePlugins) -> None:
    fake_plugins("acme", provider_plugin("acme"))
    specs = cloud_providers(get_plugin_manager(NO_FILTER))
    assert list(specs) == ["acme"]
    assert specs["acme"].node_classes == (NodeClassKind("karpenter.acme.test", "TestNodeClass"),)


def test_overlay_hook_is_called_and_sorted_by_weight(fake_plugins: FakePlugins) -> None:
    fake_plugins("fam", ALL_FAMILIES_PLUGIN.replace("{prefix}", "fam"))
    overlays = instance_type_overlays(get_plugin_manager(NO_FILTER))
    # the built-in NodeOverlay overlay comes last: the cluster's objects have the last word
    assert [o.name for o in overlays] == ["fam-light", "fam-heavy", "nodeoverlay"]
    assert overlays[0].apply is not None
    assert overlays[0].apply(None, ["m5.large"]) == ["m5.large", "fam-overlaid"]


def test_disruption_method_hook_is_called_and_sorted_by_order(fake_plugins: FakePlugins) -> None:
    fake_plugins("fam", ALL_FAMILIES_PLUGIN.replace("{prefix}", "fam"))
    methods = disruption_methods(get_plugin_manager(NO_FILTER))
    plugin_methods = [m for m in methods if m.name.startswith("fam-")]
    assert [m.name for m in plugin_methods] == ["fam-early", "fam-late"]
    assert plugin_methods[0].factory("ctx") == ("early", "ctx")  # type: ignore[arg-type]
    # among the built-ins, by order
    orders = [m.order for m in methods]
    assert orders == sorted(orders)
    assert {m.name for m in methods} - {m.name for m in plugin_methods} == set(
        DISRUPTION_METHOD_NAMES
    )


def test_dra_driver_hook_is_called(fake_plugins: FakePlugins) -> None:
    fake_plugins("fam", ALL_FAMILIES_PLUGIN.replace("{prefix}", "fam"))
    drivers = dra_drivers(get_plugin_manager(NO_FILTER))
    assert list(drivers) == ["fam.example.com"]
    assert drivers["fam.example.com"].describe_devices(None, None) == []


def test_each_hook_family_reaches_the_plugin_module(fake_plugins: FakePlugins) -> None:
    module = fake_plugins("fam", ALL_FAMILIES_PLUGIN.replace("{prefix}", "fam"))
    pm = get_plugin_manager(NO_FILTER)
    instance_type_overlays(pm)
    disruption_methods(pm)
    dra_drivers(pm)
    assert sys.modules[module].CALLS == ["overlays", "disruption", "dra"]
    assert pm.hook_families("fam") == [
        "karpenter_instance_type_overlays",
        "karpenter_disruption_methods",
        "karpenter_dra_drivers",
    ]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, None),
        ("kwok,aws", frozenset({"kwok", "aws"})),
        (" kwok , aws ,", frozenset({"kwok", "aws"})),
        ("", frozenset()),
    ],
)
def test_allowed_plugin_names_parses_env_var(
    value: str | None, expected: frozenset[str] | None
) -> None:
    environ = {} if value is None else {"KARPENTER_PLUGINS": value}
    assert allowed_plugin_names(environ) == expected


def test_env_var_unset_loads_every_plugin(fake_plugins: FakePlugins) -> None:
    for name in ("alpha", "beta", "gamma"):
        fake_plugins(name, provider_plugin(name))
    pm = get_plugin_manager(NO_FILTER)
    assert set(pm.plugin_info) == {BUILTIN_PLUGIN_NAME, "alpha", "beta", "gamma"}


def test_env_var_limits_which_entry_points_load(fake_plugins: FakePlugins) -> None:
    modules = {
        name: fake_plugins(name, provider_plugin(name)) for name in ("alpha", "beta", "gamma")
    }
    pm = get_plugin_manager({"KARPENTER_PLUGINS": "alpha,gamma"})
    assert set(pm.plugin_info) == {BUILTIN_PLUGIN_NAME, "alpha", "gamma"}
    assert modules["beta"] not in sys.modules  # filtered plugins are not even imported
    assert set(cloud_providers(pm)) == {"alpha", "gamma"}


def test_empty_env_var_loads_only_builtins(fake_plugins: FakePlugins) -> None:
    fake_plugins("alpha", provider_plugin("alpha"))
    pm = get_plugin_manager({"KARPENTER_PLUGINS": ""})
    assert list(pm.plugin_info) == [BUILTIN_PLUGIN_NAME]


def test_env_var_naming_a_missing_plugin_is_reported(fake_plugins: FakePlugins) -> None:
    fake_plugins("alpha", provider_plugin("alpha"))
    pm = get_plugin_manager({"KARPENTER_PLUGINS": "alpha,awz"})
    assert "alpha" in pm.plugin_info
    [error] = pm.load_errors
    assert error.name == "awz"
    assert "KARPENTER_PLUGINS" in error.error
    assert "installed plugins: alpha" in error.error


def test_plugin_that_fails_to_import_is_reported_not_raised(fake_plugins: FakePlugins) -> None:
    fake_plugins("broken", IMPORT_ERROR_PLUGIN, dist="karpenter-broken", version="0.9")
    fake_plugins("alpha", provider_plugin("alpha"))
    pm = get_plugin_manager(NO_FILTER)
    assert "alpha" in pm.plugin_info
    [error] = pm.load_errors
    assert (error.name, error.distribution, error.version) == ("broken", "karpenter-broken", "0.9")
    assert "ModuleNotFoundError" in error.error
    assert "karpenter_no_such_sdk_module" in error.error


def test_check_pending_catches_a_mistyped_hookimpl(fake_plugins: FakePlugins) -> None:
    fake_plugins("typo", TYPO_PLUGIN)
    pm = get_plugin_manager(NO_FILTER)
    assert "typo" not in pm.plugin_info
    [error] = pm.load_errors
    assert "unknown hook 'karpenter_cloud_provider'" in error.error
    assert "did you mean 'karpenter_cloud_providers'" in error.error
    pm.check_pending()  # the rejected plugin left nothing pending behind


def test_mistyped_hookimpl_raises_in_strict_mode(fake_plugins: FakePlugins) -> None:
    fake_plugins("typo", TYPO_PLUGIN)
    with pytest.raises(PluginError, match=r"plugin 'typo'.*karpenter_cloud_provider"):
        get_plugin_manager(NO_FILTER, strict=True)


def test_mistyped_hookimpl_in_builtins_is_fatal(
    fake_plugins: FakePlugins, monkeypatch: pytest.MonkeyPatch
) -> None:
    @hookimpl
    def karpenter_dra_driver() -> list[object]:
        return []

    monkeypatch.setattr(builtins, "karpenter_dra_driver", karpenter_dra_driver, raising=False)
    with pytest.raises(PluginError, match="did you mean 'karpenter_dra_drivers'"):
        get_plugin_manager(NO_FILTER)


def test_hookimpl_with_undeclared_argument_is_reported(fake_plugins: FakePlugins) -> None:
    fake_plugins("args", EXTRA_ARGUMENT_PLUGIN)
    pm = get_plugin_manager(NO_FILTER)
    assert "args" not in pm.plugin_info
    [error] = pm.load_errors
    assert "invalid hook implementation" in error.error
    assert "region" in error.error


def test_wrong_registration_type_names_the_plugin(fake_plugins: FakePlugins) -> None:
    fake_plugins("wrong", WRONG_RETURN_PLUGIN)
    pm = get_plugin_manager(NO_FILTER)
    with pytest.raises(
        PluginError, match=r"plugin 'wrong'.*returned a str, expected CloudProviderSpec"
    ):
        cloud_providers(pm)


def test_hookimpl_that_raises_names_the_plugin(fake_plugins: FakePlugins) -> None:
    fake_plugins("raiser", RAISING_PLUGIN)
    pm = get_plugin_manager(NO_FILTER)
    with pytest.raises(
        PluginError, match=r"plugin 'raiser'.*RuntimeError: driver catalogue unreachable"
    ):
        dra_drivers(pm)


def test_duplicate_cloud_provider_name_names_both_plugins(fake_plugins: FakePlugins) -> None:
    fake_plugins("first", provider_plugin("same"))
    fake_plugins("second", provider_plugin("same"))
    pm = get_plugin_manager(NO_FILTER)
    with pytest.raises(PluginError, match=r"'same' is registered twice.*'first'.*'second'"):
        cloud_providers(pm)


def test_listing_providers_leaves_label_sets_alone(fake_plugins: FakePlugins) -> None:
    fake_plugins("acme", provider_plugin("acme"))
    before = (set(labels.WELL_KNOWN_LABELS), set(labels.RESTRICTED_LABEL_DOMAINS))
    cloud_providers(get_plugin_manager(NO_FILTER))
    assert before == (labels.WELL_KNOWN_LABELS, labels.RESTRICTED_LABEL_DOMAINS)


def test_selecting_a_provider_registers_its_labels(fake_plugins: FakePlugins) -> None:
    fake_plugins("acme", provider_plugin("acme"))
    fake_plugins("other", provider_plugin("other"))
    assert labels.is_restricted_label("karpenter.acme.test/anything") is False
    get_cloud_provider("acme", {"region": "mars-1"}, get_plugin_manager(NO_FILTER))
    assert labels.is_restricted_label("karpenter.acme.test/anything") is True
    assert "karpenter.acme.test/family" in labels.WELL_KNOWN_LABELS
    assert labels.is_restricted_label("karpenter.acme.test/family") is False
    assert "karpenter.other.test/family" not in labels.WELL_KNOWN_LABELS


def test_get_cloud_provider_builds_with_resolved_settings(fake_plugins: FakePlugins) -> None:
    fake_plugins("acme", provider_plugin("acme"))
    provider = get_cloud_provider("acme", {"region": "mars-1"}, get_plugin_manager(NO_FILTER))
    assert provider.settings == {"region": "mars-1", "zone-count": "3"}  # type: ignore[attr-defined]


def test_get_cloud_provider_without_a_cluster_gives_the_factory_none(
    fake_plugins: FakePlugins,
) -> None:
    fake_plugins("acme", provider_plugin("acme"))
    provider = get_cloud_provider("acme", {"region": "mars-1"}, get_plugin_manager(NO_FILTER))
    context = provider.context  # type: ignore[attr-defined]
    assert (context.kube, context.clock, context.recorder) == (None, None, None)


def test_get_cloud_provider_hands_kube_clock_and_recorder_to_the_factory(
    fake_plugins: FakePlugins,
) -> None:
    fake_plugins("acme", provider_plugin("acme"))
    clock = VirtualClock()
    kube = InMemoryApiServer(clock)
    recorder = EventRecorder(clock)
    provider = get_cloud_provider(
        "acme",
        {"region": "mars-1"},
        get_plugin_manager(NO_FILTER),
        kube=kube,
        clock=clock,
        recorder=recorder,
    )
    context = provider.context  # type: ignore[attr-defined]
    assert isinstance(context, ProviderContext)
    assert context.kube is kube
    assert context.clock is clock
    assert context.recorder is recorder


def test_provider_context_settings_are_a_read_only_copy() -> None:
    given = {"region": "mars-1"}
    context = ProviderContext(settings=given)
    given["region"] = "venus-2"
    assert context.settings == {"region": "mars-1"}
    with pytest.raises(TypeError):
        context.settings["region"] = "x"  # type: ignore[index]


def test_get_cloud_provider_unknown_name_lists_installed(fake_plugins: FakePlugins) -> None:
    fake_plugins("acme", provider_plugin("acme"))
    with pytest.raises(PluginError, match=r"unknown cloud provider 'akme' \(installed: acme\)"):
        get_cloud_provider("akme", {}, get_plugin_manager(NO_FILTER))


def test_get_cloud_provider_unknown_name_mentions_broken_plugins(fake_plugins: FakePlugins) -> None:
    fake_plugins("acme", IMPORT_ERROR_PLUGIN)
    with pytest.raises(PluginError, match="plugins that failed to load: plugin 'acme'"):
        get_cloud_provider("acme", {}, get_plugin_manager(NO_FILTER))


def _spec(*settings: ProviderSetting) -> CloudProviderSpec:
    return CloudProviderSpec(name="acme", factory=dict, settings=settings)


def test_resolve_settings_rejects_unknown_keys() -> None:
    spec = _spec(ProviderSetting("region"))
    with pytest.raises(
        PluginError, match=r"'acme': unknown setting\(s\) regoin \(accepted: region\)"
    ):
        resolve_settings(spec, {"regoin": "x"})


def test_resolve_settings_reports_missing_required_with_env_var() -> None:
    spec = _spec(ProviderSetting("cluster-name", required=True, env="CLUSTER_NAME"))
    with pytest.raises(
        PluginError, match=r"missing required setting\(s\) cluster-name \(env CLUSTER_NAME\)"
    ):
        resolve_settings(spec, {})


def test_resolve_settings_fills_defaults_and_keeps_given_values() -> None:
    spec = _spec(
        ProviderSetting("a", default="1"), ProviderSetting("b", default="2"), ProviderSetting("c")
    )
    assert resolve_settings(spec, {"b": "20"}) == {"a": "1", "b": "20"}


def test_spec_rejects_empty_name() -> None:
    with pytest.raises(ValueError, match=r"CloudProviderSpec.name must be a non-empty string"):
        CloudProviderSpec(name=" ", factory=dict)


def test_spec_rejects_a_bare_string_as_label_set() -> None:
    with pytest.raises(TypeError, match="expected a collection of strings"):
        CloudProviderSpec(name="acme", factory=dict, well_known_labels="karpenter.acme.test/x")  # type: ignore[arg-type]


REPLACING_DRIFT_PLUGIN = """
from karpenter_core.hookspecs import ORDER_DRIFT, DisruptionMethodSpec
from karpenter_core.plugins import hookimpl


@hookimpl
def karpenter_disruption_methods():
    return [DisruptionMethodSpec(name="drift", order=ORDER_DRIFT, factory=lambda ctx: "{tag}")]
"""


def test_a_plugin_method_named_like_a_builtin_replaces_it(fake_plugins: FakePlugins) -> None:
    fake_plugins("mine", REPLACING_DRIFT_PLUGIN.replace("{tag}", "mine"))
    methods = {m.name: m for m in disruption_methods(get_plugin_manager(NO_FILTER))}
    assert set(methods) == set(DISRUPTION_METHOD_NAMES)
    assert methods["drift"].factory(None) == "mine"  # type: ignore[arg-type]


def test_two_plugins_replacing_one_builtin_clash(fake_plugins: FakePlugins) -> None:
    fake_plugins("one", REPLACING_DRIFT_PLUGIN.replace("{tag}", "one"))
    fake_plugins("two", REPLACING_DRIFT_PLUGIN.replace("{tag}", "two"))
    with pytest.raises(PluginError, match="'drift' is registered twice: by plugin 'one'"):
        disruption_methods(get_plugin_manager(NO_FILTER))


def test_builtin_names_are_only_replaceable_for_methods_and_overlays(
    fake_plugins: FakePlugins,
) -> None:
    fake_plugins("fam", ALL_FAMILIES_PLUGIN.replace("{prefix}", "fam"))
    fake_plugins("fam2", ALL_FAMILIES_PLUGIN.replace("{prefix}", "fam"))
    with pytest.raises(PluginError, match=r"DRA driver 'fam\.example\.com' is registered twice"):
        dra_drivers(get_plugin_manager(NO_FILTER))


PROVIDER_CONTROLLER_PLUGIN = """
from karpenter_core.hookspecs import ControllerSpec
from karpenter_core.plugins import hookimpl


@hookimpl
def karpenter_controllers():
    return [ControllerSpec("nodeclass.status", lambda ctx: None, cloud_provider={provider})]
"""


def test_providers_may_each_have_a_controller_of_one_name(fake_plugins: FakePlugins) -> None:
    """Each provider has its own nodeclass.status (as upstream's do); only the selected
    provider's runs, so the two never meet in one operator."""
    fake_plugins("acme", PROVIDER_CONTROLLER_PLUGIN.replace("{provider}", "'acme'"))
    fake_plugins("other", PROVIDER_CONTROLLER_PLUGIN.replace("{provider}", "'other'"))
    found = controllers(get_plugin_manager(NO_FILTER))
    assert sorted((c.name, c.cloud_provider) for c in found) == [
        ("nodeclass.status", "acme"),
        ("nodeclass.status", "other"),
    ]


@pytest.mark.parametrize("provider", ["'acme'", "None"])
def test_one_controller_name_twice_for_the_same_providers_clashes(
    fake_plugins: FakePlugins, provider: str
) -> None:
    fake_plugins("one", PROVIDER_CONTROLLER_PLUGIN.replace("{provider}", provider))
    fake_plugins("two", PROVIDER_CONTROLLER_PLUGIN.replace("{provider}", provider))
    with pytest.raises(PluginError, match=r"'nodeclass\.status.*' is registered twice"):
        controllers(get_plugin_manager(NO_FILTER))
