"""Operator options with upstream Karpenter's names, environment variables and defaults.

Every option has a flag (``--batch-idle-duration``) and falls back to an environment
variable (``BATCH_IDLE_DURATION``), exactly as upstream's ``pkg/operator/options``, so a
user's Helm values and Deployment env carry over unchanged.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from typing import Any

import attrs

from karpenter_core.apis.durations import parse_go_duration

FEATURE_GATE_DEFAULTS: Mapping[str, bool] = {
    "NodeRepair": False,
    "ReservedCapacity": True,
    "SpotToSpotConsolidation": False,
    "NodeOverlay": False,
    "StaticCapacity": False,
    "CapacityBuffer": False,
}

LOG_LEVELS = ("", "debug", "info", "error")

IGNORE_DRA_REQUESTS_ENV = "IGNORE_DRA_REQUESTS"
IGNORE_DRA_REQUESTS_FLAG = "--ignore-dra-requests"
IGNORE_DRA_REQUESTS_HELP = (
    "When set, Karpenter will ignore pods' DRA requests during scheduling simulations. "
    "NOTE: This flag will be removed once formal DRA support is GA in Karpenter."
)
"""Upstream's help text, word for word. With the default (true), pods that use
ResourceClaims get a DRAError and are not scheduled; ``false`` simulates their claims.
Upstream has no DRA feature gate: this flag is the only switch."""
PREFERENCE_POLICIES = ("Respect", "Ignore")
MIN_VALUES_POLICIES = ("Strict", "BestEffort")


class OptionsError(ValueError):
    """A flag or environment variable has a value the operator cannot use."""


def parse_bool(name: str, value: str) -> bool:
    """Upstream boolean flags accept only the literals ``true`` and ``false``."""
    if value == "true":
        return True
    if value == "false":
        return False
    raise OptionsError(f"{name}: invalid boolean {value!r}: expected true or false")


def parse_feature_gates(value: str) -> dict[str, bool]:
    """``A=true,B=false`` over the defaults; unknown gates are ignored like upstream."""
    gates = dict(FEATURE_GATE_DEFAULTS)
    for part in filter(None, (p.strip() for p in value.split(","))):
        name, sep, raw = part.partition("=")
        if not sep:
            raise OptionsError(f"feature-gates: {part!r} is not NAME=true|false")
        gates[name.strip()] = parse_bool(f"feature-gates {name.strip()}", raw.strip())
    return gates


def ignore_dra_requests(
    environ: Mapping[str, str], flag: str | None = None, fallback: str | None = None
) -> bool:
    """``IGNORE_DRA_REQUESTS`` as every command reads it: the ``--ignore-dra-requests``
    flag, else ``fallback`` (what a simulation scenario's ``options`` say), else the
    environment variable, else upstream's default, true. Only ``true``/``false`` are
    accepted (:class:`OptionsError` names the flag otherwise)."""
    for value in (flag, fallback, environ.get(IGNORE_DRA_REQUESTS_ENV)):
        if value is not None:
            return parse_bool("ignore-dra-requests", value)
    return True


def _seconds(name: str, value: str) -> float:
    try:
        return parse_go_duration(value) / 1e9
    except ValueError as err:
        raise OptionsError(f"{name}: invalid duration {value!r}: {err}") from None


@attrs.frozen(slots=True)
class Options:
    """The operator's settings (defaults as upstream)."""

    karpenter_service: str = ""
    metrics_port: int = 8080
    health_probe_port: int = 8081
    # Not upstream Karpenter's (it always listens on every interface); named after
    # controller-runtime's --metrics-bind-address / --health-probe-bind-address, but only
    # the address: the port stays METRICS_PORT / HEALTH_PROBE_PORT. "" = every interface.
    metrics_bind_address: str = ""
    health_probe_bind_address: str = ""
    kube_client_qps: int = 200
    kube_client_burst: int = 300
    enable_profiling: bool = False
    disable_controller_warmup: bool = True
    disable_leader_election: bool = False
    disable_cluster_state_observability: bool = False
    leader_election_name: str = "karpenter-leader-election"
    leader_election_namespace: str = ""
    memory_limit: int = -1
    cpu_requests: int = 1000
    log_level: str = "info"
    log_output_paths: str = "stdout"
    log_error_output_paths: str = "stderr"
    batch_max_duration: float = 10.0
    batch_idle_duration: float = 1.0
    preference_policy: str = "Respect"
    min_values_policy: str = "Strict"
    ignore_dra_requests: bool = True
    feature_gates: Mapping[str, bool] = attrs.field(factory=lambda: dict(FEATURE_GATE_DEFAULTS))
    scheduler_config: str = ""
    # Not upstream's: which registered instance-type scorer orders a NodeClaim's types
    # (karpenter_core.scoring); checked against the plugins where they are loaded.
    instance_type_scorer: str = "price"

    def gate(self, name: str) -> bool:
        """Whether feature gate ``name`` is on (unknown gates are off)."""
        return bool(self.feature_gates.get(name, False))

    @classmethod
    def from_env(cls, environ: Mapping[str, str], **overrides: Any) -> Options:
        """Options from upstream's environment variables, then explicit ``overrides``
        (flags win over the environment). Raises :class:`OptionsError` on bad values."""
        values: dict[str, Any] = {}
        for field in attrs.fields(cls):
            env = field.name.upper()
            if env in environ:
                values[field.name] = _convert(field.name, environ[env], field.default)
        for name, value in overrides.items():
            if value is None:
                continue
            default = getattr(attrs.fields(cls), name).default
            values[name] = _convert(name, value, default) if isinstance(value, str) else value
        opts = cls(**values)
        opts.check()
        return opts

    def check(self) -> None:
        """Reject combinations upstream rejects, with the flag name in the message."""
        if self.log_level not in LOG_LEVELS:
            allowed = ", ".join(map(repr, LOG_LEVELS))
            raise OptionsError(f"log-level: {self.log_level!r} is not one of {allowed}")
        if self.preference_policy not in PREFERENCE_POLICIES:
            raise OptionsError(
                f"preference-policy: {self.preference_policy!r} is not Respect or Ignore"
            )
        if self.min_values_policy not in MIN_VALUES_POLICIES:
            raise OptionsError(
                f"min-values-policy: {self.min_values_policy!r} is not Strict or BestEffort"
            )
        if not self.instance_type_scorer.strip():
            raise OptionsError("instance-type-scorer: must name a scorer (default price)")
        if self.batch_idle_duration <= 0 or self.batch_max_duration <= 0:
            raise OptionsError("batch-idle-duration and batch-max-duration must be positive")
        for name, port_flag in (
            ("metrics_bind_address", "metrics-port"),
            ("health_probe_bind_address", "health-probe-port"),
        ):
            problem = bind_address_problem(getattr(self, name), port_flag)
            if problem:
                raise OptionsError(f"{name.replace('_', '-')}: {problem}")


def bind_address_problem(value: str, port_flag: str) -> str | None:
    """Why ``value`` is not a listen address ("" or an IPv4/IPv6 literal), else None."""
    if value == "":
        return None
    try:
        ipaddress.ip_address(value.removeprefix("[").removesuffix("]"))
        return None
    except ValueError:
        pass
    host, sep, port = value.rpartition(":")
    if sep and port.isdigit() and (host == "" or bind_address_problem(host, port_flag) is None):
        return f"{value!r} names a port: give only the address; the port is --{port_flag}"
    return f"{value!r} is not an IP address (or empty for every interface)"


def _convert(name: str, raw: str, default: Any) -> Any:
    flag = name.replace("_", "-")
    if name == "feature_gates":
        return parse_feature_gates(raw)
    if name in ("batch_max_duration", "batch_idle_duration"):
        return _seconds(flag, raw)
    if isinstance(default, bool):
        return parse_bool(flag, raw)
    if isinstance(default, int):
        try:
            value = int(raw)
        except ValueError:
            raise OptionsError(f"{flag}: invalid integer {raw!r}") from None
        if name == "cpu_requests" and value <= 0:
            return 1000
        return value
    return raw
