"""``karpenter simulate``: run the real controllers against a scenario on a virtual clock.

::

    karpenter simulate [SCENARIO.yaml] [--from SNAPSHOT] [--what-if TARGET=VALUE ...]
                       [--until DURATION] [--seed N] [-o table|json|yaml|html] [--out FILE]
                       [--charge-compute-time | --no-charge-compute-time] [--compute-time-scale X]
                       [-q]

The scenario format and every report field are documented in ``docs/simulate.md``. The
``-o json`` object is a public interface. Exit status (``docs/cli.md``): 0 when the
simulation ran (whatever it found), 1 for a scenario that cannot run, with one line naming
the file and the field, 3 when it ran but a controller failed repeatedly (the report is
still written and names the controller). While it runs, a progress bar on stderr (a
terminal only; ``-q`` turns it off) shows the virtual time reached, pods pending and nodes.

``--from SNAPSHOT`` (or the scenario's ``from``) starts from a cluster's objects instead
of an empty cluster; with it the scenario is optional (then 30 minutes in which nothing
changes). ``--what-if`` (or the scenario's ``whatIf``) runs twice, as it is and changed,
and reports both runs and the difference (:mod:`karpenter_core.sim.whatif`).
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import attrs
import click

from karpenter_core.apis.workloads import MAX_EXPANDED_PODS
from karpenter_core.cli.exits import EXIT_CONTROLLER_FAILED, BadInput, echo_problem
from karpenter_core.cli.output import HTML, JSON, YAML, dump, output_option
from karpenter_core.cli.progress import Progress, describe_run, progress
from karpenter_core.runtime.collector import tune_collector
from karpenter_core.runtime.options import (
    IGNORE_DRA_REQUESTS_ENV,
    IGNORE_DRA_REQUESTS_FLAG,
    IGNORE_DRA_REQUESTS_HELP,
    OptionsError,
    ignore_dra_requests,
    parse_feature_gates,
)
from karpenter_core.sim.scenario import (
    Scenario,
    ScenarioError,
    check_compute_time_scale,
    check_run_length,
    load_scenario,
    parse_duration,
)

if TYPE_CHECKING:
    from karpenter_core.sim.engine import Simulation
    from karpenter_core.sim.report import Report
    from karpenter_core.sim.startstate import StartingState
    from karpenter_core.sim.whatif import WhatIf

__all__ = ["command"]

FROM_ONLY_UNTIL = 1800.0
"""How long ``--from`` without a scenario runs: 30 minutes of nothing changing, long
enough for consolidation and expiry to act on the snapshot's state."""


@click.command("simulate", short_help="Run a scenario on a virtual clock and report.")
# A plain string, not click.Path: a directory or a missing file is bad input (exit 1, one
# line from the loader), like every other file problem, not a usage error (exit 2).
@click.argument("scenario", metavar="[SCENARIO.yaml]", required=False)
@click.option(
    "--from",
    "from_path",
    metavar="SNAPSHOT",
    default=None,
    help="Start from the objects of a cluster snapshot (`karpenter snapshot`) instead of an "
    "empty cluster; the clock starts when it was taken. Default: the scenario's `from`.",
)
@click.option(
    "--what-if",
    "what_ifs",
    metavar="TARGET=VALUE",
    multiple=True,
    help="A change to compare with doing nothing (repeatable): nodepool/NAME=<JSON merge "
    "patch>, consolidation/NAME=<policy>, budget/NAME=<nodes>, deployment/[NS/]NAME=<replicas>, "
    "nodeoverlay/NAME=<price adjustment>, nodeoverlay=<file>. Runs twice and reports the "
    "difference.",
)
@click.option(
    "--until",
    "until",
    metavar="DURATION",
    help="Virtual time to run (Go duration, e.g. 45m). Default: the scenario's `until`, "
    "else 10m after the last scheduled change.",
)
@click.option("--seed", type=int, default=None, help="Seed (default: the scenario's, else 0).")
@click.option(
    "--cloud-provider",
    "cloud_provider",
    metavar="NAME",
    default=None,
    help="Whose instance types the simulated cloud offers (default: the scenario's "
    "`cloudProvider`, else kwok). Another provider's offline catalogue (e.g. aws, with "
    "--region) is launched by KWOK: nothing reaches the real cloud.",
)
@click.option(
    "--region",
    metavar="REGION",
    default=None,
    help="The --cloud-provider's region (its bundled catalogue).",
)
@output_option(html=True)
@click.option(
    "--out",
    "out",
    metavar="FILE",
    default=None,
    help="Write the report to FILE instead of standard output.",
)
@click.option(
    IGNORE_DRA_REQUESTS_FLAG,
    "ignore_dra_requests",
    default=None,
    metavar="true|false",
    help=f"{IGNORE_DRA_REQUESTS_HELP} [env {IGNORE_DRA_REQUESTS_ENV}, read when the "
    "scenario's options do not set it; default true]",
)
@click.option(
    "--instance-type-scorer",
    "instance_type_scorer",
    default=None,
    metavar="NAME",
    help="Which instance-type scorer orders each NodeClaim's types (price, least-waste, "
    "priority or a plugin's). Default: the scenario's options.INSTANCE_TYPE_SCORER, "
    "else price.",
)
@click.option(
    "--charge-compute-time/--no-charge-compute-time",
    "charge_compute_time",
    default=None,
    help="Charge each Karpenter reconcile's CPU time to the virtual clock, so timeouts and "
    "batching behave as on a controller of this machine's speed. Default: the scenario's "
    "`chargeComputeTime`, else off.",
)
@click.option(
    "--compute-time-scale",
    "compute_time_scale",
    metavar="X",
    default=None,
    help="Charge X times the measured CPU time (2: a controller half this machine's "
    "speed). Default: the scenario's `computeTimeScale`, else 1.",
)
@click.option("-v", "--verbose", is_flag=True, help="Log the controllers' warnings to stderr.")
@click.option(
    "-q",
    "--quiet",
    is_flag=True,
    help="No progress bar (it is drawn on stderr only when stderr is a terminal).",
)
def command(
    scenario: str | None,
    from_path: str | None,
    what_ifs: tuple[str, ...],
    until: str | None,
    seed: int | None,
    cloud_provider: str | None,
    region: str | None,
    output: str,
    out: str | None,
    ignore_dra_requests: str | None,
    instance_type_scorer: str | None,
    charge_compute_time: bool | None,
    compute_time_scale: str | None,
    verbose: bool,
    quiet: bool,
) -> None:
    """Simulate SCENARIO.yaml: NodePools, workloads and events on a virtual clock, and
    report nodes launched and removed, pod pending times, cost and every decision.

    With --from, start from a cluster snapshot; with --what-if, run twice (as it is and
    changed) and report the difference."""
    logging.basicConfig(level=logging.WARNING if verbose else logging.CRITICAL, stream=sys.stderr)
    tune_collector()
    if scenario is None and from_path is None:
        raise click.UsageError("give a SCENARIO.yaml, a --from SNAPSHOT, or both")
    if out is not None and Path(out).is_dir():  # found now rather than after the run
        raise BadInput(f"--out {out}: is a directory, expected a file")
    from karpenter_core.sim.startstate import StartingStateError, load_starting_state
    from karpenter_core.sim.whatif import parse_what_if

    try:
        if scenario is None:
            parsed = Scenario(name=Path(str(from_path)).name, until=FROM_ONLY_UNTIL)
        else:
            parsed = load_scenario(scenario)
        parsed = with_dra_setting(parsed, ignore_dra_requests, os.environ)
        parsed = with_compute_charge(parsed, charge_compute_time, compute_time_scale)
        parsed = with_scorer(parsed, instance_type_scorer)
        parsed = with_cloud_provider(parsed, cloud_provider, region)
        until_s = None if until is None else parse_duration(until, "--until")
        check_run_length(parsed, until_s)
        changes = [*parsed.what_if, *(parse_what_if(w) for w in what_ifs)]
        parsed = with_gates_for(parsed, changes)
    except ScenarioError as e:
        raise BadInput(str(e)) from None
    problem = _workload_problem(parsed)
    if problem is not None:
        raise BadInput(problem)
    snapshot = from_path or parsed.from_path
    initial: StartingState | None = None
    if snapshot is not None:
        try:
            initial = load_starting_state(snapshot)
        except StartingStateError as e:
            raise BadInput(str(e)) from None

    from karpenter_core.sim.report import render_text
    from karpenter_core.sim.report_html import render_comparison_html, render_html
    from karpenter_core.sim.whatif import compare, render_comparison_text

    length = parsed.default_until() if until_s is None else until_s
    reports: list[Report] = []
    if changes:
        # the changed run first, so a change that cannot be made fails before any run
        changed = _simulation(parsed, seed, initial, changes)
        _check_changes(changed, changes)
        what_if = _run(changed, until_s, length, "what-if", quiet)
        baseline = _run(_simulation(parsed, seed, initial, ()), until_s, length, "baseline", quiet)
        reports = [baseline, what_if]
        comparison = compare(changes, baseline, what_if, snapshot or "")
        if output == JSON:
            text = comparison.to_json() + "\n"
        elif output == YAML:
            text = dump(comparison.to_json_dict(), YAML)
        elif output == HTML:
            text = render_comparison_html(comparison)
        else:
            text = render_comparison_text(comparison)
    else:
        report = _run(_simulation(parsed, seed, initial, ()), until_s, length, "simulating", quiet)
        reports = [report]
        if output == JSON:
            text = report.to_json() + "\n"
        elif output == YAML:
            text = dump(json.loads(report.to_json()), YAML)
        elif output == HTML:
            text = render_html(report)
        else:
            text = render_text(report)
    if out is None:
        click.echo(text, nl=False)
    else:
        try:
            Path(out).write_text(text, encoding="utf-8")
        except OSError as e:
            raise BadInput(f"--out {out}: cannot write: {e.strerror or e}") from None
        click.echo(f"wrote {output} report to {out}", err=True)
    failed = [f for r in reports for f in r.failed_controllers]
    if failed:
        for f in failed:
            echo_problem(f"Error: {f.describe()}", err=True)
        sys.exit(EXIT_CONTROLLER_FAILED)


def _simulation(
    scenario: Scenario, seed: int | None, initial: StartingState | None, changes: Sequence[WhatIf]
) -> Simulation:
    from karpenter_core.sim.engine import Simulation, SimulationError

    try:
        return Simulation(scenario, seed=seed, initial=initial, what_if=[c.event for c in changes])
    except SimulationError as e:
        raise BadInput(str(e)) from None


def _check_changes(sim: Simulation, changes: Sequence[WhatIf]) -> None:
    """A what-if that could not be made (no such NodePool, a patch the CRD refuses) would
    compare two identical runs: it is bad input, said before anything runs. Each change
    made is one scenario decision, in the order given."""
    made = [
        d
        for d in sim.observer.decisions
        if d.source == "scenario" and d.action in ("PatchObject", "ApplyObject")
    ]
    for change, d in zip(changes, made, strict=False):
        if d.details.get("applied") is False:
            raise BadInput(f"--what-if {change.text}: {d.reason}")


def _run(sim: Simulation, until_s: float | None, length: float, label: str, quiet: bool) -> Report:
    """Run ``sim`` with a progress bar on a terminal."""
    from karpenter_core.sim.engine import RunStatus

    bar: Progress[RunStatus] = progress(
        round(length), label, lambda s: describe_run(s, length), quiet=quiet
    )

    def on_time() -> None:
        if bar.due():  # reading the status costs a pass over the pods: only when drawn
            status = sim.status()
            bar.advance(int(status.elapsed), status)

    with bar:
        report = sim.run(until_s, on_time=on_time if bar.shown else None)
        if bar.shown:
            final = sim.status()
            bar.advance(int(final.elapsed), final, force=True)
    return report


def with_gates_for(scenario: Scenario, changes: Sequence[WhatIf]) -> Scenario:
    """The scenario with the feature gates the what-if changes need turned on (in both
    runs: a gate alone changes nothing while no object uses it), so a NodeOverlay what-if
    is not compared with itself for want of ``NodeOverlay=true``."""
    needed = sorted({c.gate for c in changes if c.gate})
    if not needed:
        return scenario
    options = dict(scenario.options)
    key = next((k for k in options if k.upper().replace("-", "_") == "FEATURE_GATES"), None)
    current = options.pop(key, "") if key is not None else ""
    try:
        gates = parse_feature_gates(current)
    except OptionsError as e:
        raise ScenarioError(f"{scenario.source}: options.FEATURE_GATES: {e}") from None
    missing = [g for g in needed if not gates.get(g)]
    if not missing:
        return scenario
    options["FEATURE_GATES"] = ",".join([current, *(f"{g}=true" for g in missing)]).strip(",")
    return attrs.evolve(scenario, options=options)


def with_dra_setting(scenario: Scenario, flag: str | None, environ: Mapping[str, str]) -> Scenario:
    """The scenario with ``IGNORE_DRA_REQUESTS`` settled as ``serve`` reads it: the
    ``--ignore-dra-requests`` flag wins, then the scenario's own ``options``, then the
    environment variable; a scenario that says nothing and runs without either keeps
    upstream's default (true). A value other than true/false is a :class:`ScenarioError`."""
    said = None
    for key, value in scenario.options.items():
        if key.upper().replace("-", "_") == IGNORE_DRA_REQUESTS_ENV:
            said = value
    try:
        ignore = ignore_dra_requests(environ, flag, said)
    except OptionsError as e:
        where = "--ignore-dra-requests" if flag is not None else f"{scenario.source}: options"
        raise ScenarioError(f"{where}: {e}") from None
    if flag is None and said is None and IGNORE_DRA_REQUESTS_ENV not in environ:
        return scenario
    options = {
        k: v
        for k, v in scenario.options.items()
        if k.upper().replace("-", "_") != IGNORE_DRA_REQUESTS_ENV
    }
    options[IGNORE_DRA_REQUESTS_ENV] = "true" if ignore else "false"
    return attrs.evolve(scenario, options=options)


def with_cloud_provider(scenario: Scenario, name: str | None, region: str | None) -> Scenario:
    """The scenario with ``--cloud-provider`` (replacing the scenario's provider and its
    settings) and ``--region`` (the provider's ``region`` setting); BadInput for a
    provider without regions."""
    if name is None and region is None:
        return scenario
    from karpenter_core.cli.instance_types import region_settings
    from karpenter_core.plugins import PluginError, get_plugin_manager

    provider = name if name is not None else scenario.cloud_provider
    settings = dict(scenario.provider_settings) if name is None else {}
    try:
        settings.update(region_settings(get_plugin_manager(), provider, region))
    except PluginError as e:
        raise BadInput(str(e)) from None
    return attrs.evolve(scenario, cloud_provider=provider, provider_settings=settings)


def with_scorer(scenario: Scenario, flag: str | None) -> Scenario:
    """The scenario with ``--instance-type-scorer`` in its options (the flag wins over
    the scenario's own ``INSTANCE_TYPE_SCORER``); the name is checked against the
    installed scorers when the simulation starts."""
    if flag is None:
        return scenario
    options = {
        k: v
        for k, v in scenario.options.items()
        if k.upper().replace("-", "_") != "INSTANCE_TYPE_SCORER"
    }
    options["INSTANCE_TYPE_SCORER"] = flag
    return attrs.evolve(scenario, options=options)


def with_compute_charge(scenario: Scenario, charge: bool | None, scale: str | None) -> Scenario:
    """The scenario with ``--charge-compute-time`` / ``--compute-time-scale`` applied (a
    flag wins over the scenario's field). A scale while charging stays off would be
    ignored silently, so it is a :class:`ScenarioError`."""
    if charge is not None:
        scenario = attrs.evolve(scenario, charge_compute_time=charge)
    if scale is None:
        return scenario
    try:
        value: object = float(scale)
    except ValueError:
        value = scale  # not a number: the check below says so
    scenario = attrs.evolve(
        scenario, compute_time_scale=check_compute_time_scale(value, "--compute-time-scale")
    )
    if not scenario.charge_compute_time:
        raise ScenarioError(
            "--compute-time-scale: has no effect while charging compute time is off "
            "(add --charge-compute-time, or chargeComputeTime: true to the scenario)"
        )
    return scenario


def _workload_problem(scenario: Scenario) -> str | None:
    """A workload size the scenario loader lets through but that would never finish:
    beyond :data:`MAX_EXPANDED_PODS` pods (the loader checks everything else)."""
    for i, w in enumerate(scenario.workloads):
        where = f"{scenario.source}: workloads[{i}] ({w.name})"
        sizes = [("replicas", w.replicas)]
        sizes += [(f"scale[{j}].replicas", step.replicas) for j, step in enumerate(w.scale)]
        for field_name, size in sizes:
            if size > MAX_EXPANDED_PODS:
                return (
                    f"{where}: {field_name}: {size} is more than the {MAX_EXPANDED_PODS} "
                    "pods one workload may expand to"
                )
    return None
