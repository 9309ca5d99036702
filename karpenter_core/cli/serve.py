"""``karpenter serve``: run the operator against a Kubernetes API server.

Every upstream option is a flag with upstream's name (``--batch-idle-duration``) and falls
back to upstream's environment variable (``BATCH_IDLE_DURATION``), so a Deployment written
for upstream Karpenter configures this one unchanged. Boolean flags take ``true``/``false``
(a bare ``--disable-leader-election`` means true), like Go's flag package.

Bad input is one line and a non-zero exit: a bad flag (exit 2), or a missing CRD, an
unreachable API server, a port in use, an unknown cloud provider (exit 1).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Mapping
from typing import Any

import attrs
import click

from karpenter_core.runtime.options import IGNORE_DRA_REQUESTS_HELP, Options, OptionsError

_ENV_HELP = {
    "karpenter_service": "Vestigial; accepted for compatibility.",
    "metrics_port": "Port of the /metrics endpoint.",
    "health_probe_port": "Port of the /healthz and /readyz endpoints.",
    "metrics_bind_address": "Address the /metrics server listens on (empty: every interface).",
    "health_probe_bind_address": "Address the probe server listens on (empty: every interface).",
    "kube_client_qps": "Client-side rate limit of the main API client.",
    "kube_client_burst": "Burst of the main API client's rate limiter.",
    "enable_profiling": "Accepted for compatibility (no pprof handlers in Python).",
    "disable_controller_warmup": "Accepted for compatibility.",
    "disable_leader_election": "Run controllers without taking the Lease (one replica only!).",
    "disable_cluster_state_observability": "Turn off the pod/node/nodepool metric controllers.",
    "leader_election_name": "Name of the leader-election Lease.",
    "leader_election_namespace": "Namespace of the Lease; the pod's own namespace when empty.",
    "memory_limit": "Accepted for compatibility (a Go GC setting).",
    "cpu_requests": "The container's CPU request in millicores; sizes worker pools.",
    "log_level": "debug, info or error.",
    "log_output_paths": "Comma-separated: stdout, stderr or file paths.",
    "log_error_output_paths": "Accepted for compatibility.",
    "batch_max_duration": "Longest a provisioning batch may stay open.",
    "batch_idle_duration": "A batch closes after this long without new pending pods.",
    "preference_policy": "Respect or Ignore preferred affinities and ScheduleAnyway spreads.",
    "min_values_policy": "Strict or BestEffort.",
    "ignore_dra_requests": IGNORE_DRA_REQUESTS_HELP,
    "feature_gates": "NAME=true|false,... over the defaults.",
    "scheduler_config": "podTopologySpread defaults: the YAML/JSON document itself (as "
    "upstream), or @FILE to read it from a file every provisioning pass.",
    "instance_type_scorer": "Which instance-type scorer orders a NodeClaim's types: price, "
    "least-waste, priority or a plugin's (a NodePool's karpenter.sh/instance-type-scorer "
    "annotation overrides it).",
}


_METAVARS = {
    "karpenter_service": "NAME",
    "metrics_port": "PORT",
    "health_probe_port": "PORT",
    "metrics_bind_address": "ADDRESS",
    "health_probe_bind_address": "ADDRESS",
    "kube_client_qps": "QPS",
    "kube_client_burst": "N",
    "leader_election_name": "NAME",
    "leader_election_namespace": "NAMESPACE",
    "memory_limit": "BYTES",
    "cpu_requests": "MILLICORES",
    "log_level": "debug|info|error",
    "log_output_paths": "PATHS",
    "log_error_output_paths": "PATHS",
    "batch_max_duration": "DURATION",
    "batch_idle_duration": "DURATION",
    "preference_policy": "Respect|Ignore",
    "min_values_policy": "Strict|BestEffort",
    "feature_gates": "NAME=BOOL,...",
    "scheduler_config": "DOCUMENT|@FILE",
    "instance_type_scorer": "NAME",
}
"""What each non-boolean option's value is, for ``--help`` (booleans show ``true|false``)."""


class BadFlag(click.ClickException):
    """A usage error shown as one line (click's default adds the usage text)."""

    exit_code = 2


class _OneLineCommand(click.Command):
    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as e:
            raise BadFlag(e.format_message()) from None


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _option_decorators() -> list[Any]:
    decorators = []
    for f in attrs.fields(Options):
        default = f.default
        if isinstance(default, attrs.Factory):  # type: ignore[arg-type]
            shown = "NodeRepair=false,ReservedCapacity=true,... (upstream's)"
        elif isinstance(default, bool):
            shown = "true" if default else "false"
        elif f.name in ("batch_max_duration", "batch_idle_duration"):
            shown = f"{default:g}s"
        else:
            shown = repr(default) if isinstance(default, str) else str(default)
        help_text = f"{_ENV_HELP.get(f.name, '')} [env {f.name.upper()}; default {shown}]"
        kwargs: dict[str, Any] = {
            "default": None,
            "help": help_text.strip(),
            "metavar": _METAVARS.get(f.name, "VALUE"),
        }
        if isinstance(default, bool):
            kwargs.update(is_flag=False, flag_value="true", metavar="true|false")
        decorators.append(click.option(_flag(f.name), f.name, type=str, **kwargs))
    return decorators


def default_cloud_provider(environ: Mapping[str, str]) -> str | None:
    """``kwok`` when that plugin is installed (upstream's reference provider), else None."""
    try:
        from karpenter_core.plugins import cloud_providers, get_plugin_manager

        return "kwok" if "kwok" in cloud_providers(get_plugin_manager(environ)) else None
    except Exception:
        return None


def parse_provider_settings(values: tuple[str, ...]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in values:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise BadFlag(f"--provider-setting {item!r}: expected NAME=VALUE")
        out[name.strip()] = value
    return out


def build_config(
    params: Mapping[str, Any], environ: Mapping[str, str]
) -> Any:  # -> ServeConfig (imported lazily to keep `karpenter --help` fast)
    """Flags and environment to a :class:`~karpenter_core.operator.serve.ServeConfig`."""
    from karpenter_core.operator.serve import ServeConfig

    overrides = {f.name: params.get(f.name) for f in attrs.fields(Options)}
    try:
        options = Options.from_env(environ, **overrides)
    except OptionsError as e:
        raise BadFlag(str(e)) from None
    from karpenter_core.provisioning.scheduler.config import check_scheduler_config_option
    from karpenter_core.provisioning.scheduler.topology import SchedulerConfigError

    try:
        check_scheduler_config_option(options.scheduler_config)
    except SchedulerConfigError as e:
        raise BadFlag(str(e)) from None
    provider = params.get("cloud_provider") or default_cloud_provider(environ)
    if not provider:
        raise BadFlag("--cloud-provider is required: no kwok plugin is installed to default to")
    return ServeConfig(
        options=options,
        cloud_provider=provider,
        kubeconfig=params.get("kubeconfig"),
        provider_settings=parse_provider_settings(tuple(params.get("provider_settings") or ())),
    )


def _serve(**params: Any) -> None:
    """Run the Karpenter operator against a Kubernetes API server.

    Uses --kubeconfig, else $KUBECONFIG, else the in-cluster service account, else
    ~/.kube/config. Every option also reads upstream's environment variable.
    """
    from karpenter_core.operator.serve import Operator, ServeError

    environ = dict(os.environ)
    config = build_config(params, environ)
    stop = threading.Event()
    operator = Operator(config, environ=environ)

    def on_signal(signum: int, frame: Any) -> None:
        stop.set()
        operator.wake()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        code = operator.run(stop)
    except ServeError as e:
        raise click.ClickException(str(e)) from None
    if code:
        click.echo("Error: leader election lost; exiting so the replica restarts", err=True)
        sys.exit(code)


def _make_command() -> click.Command:
    fn: Any = _serve
    for decorator in reversed(_option_decorators()):
        fn = decorator(fn)
    fn = click.option(
        "--provider-setting",
        "provider_settings",
        multiple=True,
        metavar="NAME=VALUE",
        help="A cloud provider setting (repeatable); overrides its environment variable.",
    )(fn)
    fn = click.option(
        "--kubeconfig",
        type=str,
        default=None,
        metavar="FILE",
        help="Path of a kubeconfig (default: $KUBECONFIG, in-cluster, ~/.kube/config).",
    )(fn)
    fn = click.option(
        "--cloud-provider",
        type=str,
        default=None,
        metavar="NAME",
        help="Cloud provider plugin to launch nodes with (default: kwok when installed).",
    )(fn)
    return click.command(
        name="serve",
        cls=_OneLineCommand,
        short_help="Run the operator against a Kubernetes API server.",
    )(fn)


command = _make_command()

__all__ = ["BadFlag", "build_config", "command", "default_cloud_provider"]
