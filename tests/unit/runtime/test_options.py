"""Operator options: upstream names, env fallbacks, defaults and clear errors."""

from __future__ import annotations

import pytest

from karpenter_core.operator import FEATURE_GATE_DEFAULTS, Options, OptionsError


def test_defaults_match_upstream() -> None:
    opts = Options.from_env({})
    assert (opts.batch_idle_duration, opts.batch_max_duration) == (1.0, 10.0)
    assert (opts.metrics_port, opts.health_probe_port) == (8080, 8081)
    assert (opts.kube_client_qps, opts.kube_client_burst) == (200, 300)
    assert opts.leader_election_name == "karpenter-leader-election"
    assert opts.disable_controller_warmup is True
    assert opts.ignore_dra_requests is True
    assert dict(opts.feature_gates) == dict(FEATURE_GATE_DEFAULTS)


def test_environment_variables_override_defaults() -> None:
    opts = Options.from_env({"BATCH_IDLE_DURATION": "2s", "METRICS_PORT": "9090"})
    assert opts.batch_idle_duration == 2.0
    assert opts.metrics_port == 9090


def test_flags_win_over_environment() -> None:
    opts = Options.from_env({"BATCH_MAX_DURATION": "20s"}, batch_max_duration="1m")
    assert opts.batch_max_duration == 60.0


def test_feature_gates_merge_over_defaults_and_ignore_unknown() -> None:
    opts = Options.from_env({"FEATURE_GATES": "NodeRepair=true,SomethingNew=true"})
    assert opts.gate("NodeRepair") is True
    assert opts.gate("ReservedCapacity") is True
    assert opts.gate("NodeOverlay") is False


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"DISABLE_LEADER_ELECTION": "yes"}, "disable-leader-election: invalid boolean"),
        ({"METRICS_PORT": "eighty"}, "metrics-port: invalid integer"),
        ({"BATCH_IDLE_DURATION": "1 second"}, "batch-idle-duration: invalid duration"),
        ({"PREFERENCE_POLICY": "Prefer"}, "preference-policy"),
        ({"MIN_VALUES_POLICY": "Loose"}, "min-values-policy"),
        ({"LOG_LEVEL": "trace"}, "log-level"),
        ({"FEATURE_GATES": "NodeRepair"}, "feature-gates"),
    ],
)
def test_bad_values_name_the_flag(env: dict[str, str], message: str) -> None:
    with pytest.raises(OptionsError, match=message):
        Options.from_env(env)


def test_non_positive_cpu_requests_become_one_core() -> None:
    assert Options.from_env({"CPU_REQUESTS": "0"}).cpu_requests == 1000


def test_bind_addresses_default_to_every_interface_and_take_ip_addresses() -> None:
    opts = Options.from_env({})
    assert (opts.metrics_bind_address, opts.health_probe_bind_address) == ("", "")
    opts = Options.from_env(
        {"METRICS_BIND_ADDRESS": "127.0.0.1"}, health_probe_bind_address="[fd00::1]"
    )
    assert (opts.metrics_bind_address, opts.health_probe_bind_address) == (
        "127.0.0.1",
        "[fd00::1]",
    )


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("0.0.0.0:8080", "names a port: give only the address; the port is --metrics-port"),
        (":8080", "names a port"),
        ("metrics.example.com", "is not an IP address"),
        ("127.0.0.1 ", "is not an IP address"),
    ],
)
def test_a_bind_address_must_be_an_address_without_a_port(value: str, message: str) -> None:
    with pytest.raises(OptionsError, match=f"metrics-bind-address: .*{message}"):
        Options.from_env({"METRICS_BIND_ADDRESS": value})
