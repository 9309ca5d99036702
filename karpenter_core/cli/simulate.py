"""``karpenter simulate``: run the real controllers against a scenario on a virtual clock.

::

    karpenter simulate SCENARIO.yaml [--until DURATION] [--seed N] [-o text|json|html] [--out FILE]

The scenario format and every report field are documented in ``docs/simulate.md``. The
``-o json`` object is a public interface. Exit status (``docs/cli.md``): 0 when the
simulation ran (whatever it found), 1 for a scenario that cannot run, with one line naming
the file and the field, 3 when it ran but a controller failed repeatedly (the report is
still written and names the controller).
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import click

from karpenter_core.apis.workloads import MAX_EXPANDED_PODS
from karpenter_core.cli.exits import EXIT_CONTROLLER_FAILED, BadInput, echo_problem
from karpenter_core.sim.scenario import (
    Scenario,
    ScenarioError,
    check_run_length,
    load_scenario,
    parse_duration,
)

__all__ = ["command"]

FORMATS = ("text", "json", "html")


@click.command("simulate")
# A plain string, not click.Path: a directory or a missing file is bad input (exit 1, one
# line from the loader), like every other file problem, not a usage error (exit 2).
@click.argument("scenario", metavar="SCENARIO.yaml")
@click.option(
    "--until",
    "until",
    metavar="DURATION",
    help="Virtual time to run (Go duration, e.g. 45m). Default: the scenario's `until`, "
    "else 10m after the last scheduled change.",
)
@click.option("--seed", type=int, default=None, help="Seed (default: the scenario's, else 0).")
@click.option(
    "-o",
    "--output",
    type=click.Choice(FORMATS),
    default="text",
    show_default=True,
    help="Report format.",
)
@click.option(
    "--out",
    "out",
    metavar="FILE",
    default=None,
    help="Write the report to FILE instead of standard output.",
)
@click.option("-v", "--verbose", is_flag=True, help="Log the controllers' warnings to stderr.")
def command(
    scenario: str, until: str | None, seed: int | None, output: str, out: str | None, verbose: bool
) -> None:
    """Simulate SCENARIO.yaml: NodePools, workloads and events on a virtual clock, and
    report nodes launched and removed, pod pending times, cost and every decision."""
    logging.basicConfig(level=logging.WARNING if verbose else logging.CRITICAL, stream=sys.stderr)
    if out is not None and Path(out).is_dir():  # found now rather than after the run
        raise BadInput(f"--out {out}: is a directory, expected a file")
    try:
        parsed = load_scenario(scenario)
        until_s = None if until is None else parse_duration(until, "--until")
        check_run_length(parsed, until_s)
    except ScenarioError as e:
        raise BadInput(str(e)) from None
    problem = _workload_problem(parsed)
    if problem is not None:
        raise BadInput(problem)

    from karpenter_core.sim.engine import Simulation, SimulationError
    from karpenter_core.sim.report import render_html, render_text

    try:
        sim = Simulation(parsed, seed=seed)
    except SimulationError as e:
        raise BadInput(str(e)) from None
    report = sim.run(until_s)
    if output == "json":
        text = report.to_json() + "\n"
    elif output == "html":
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
    failed = report.failed_controllers
    if failed:
        for f in failed:
            echo_problem(f"Error: {f.describe()}", err=True)
        sys.exit(EXIT_CONTROLLER_FAILED)


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
