"""``karpenter simulate``: run the real controllers against a scenario on a virtual clock.

::

    karpenter simulate SCENARIO.yaml [--until DURATION] [--seed N] [-o text|json|html] [--out FILE]

The scenario format and every report field are documented in ``docs/simulate.md``. The
``-o json`` object is a public interface. Exit status 0 when the simulation ran (whatever
it found), 1 for a scenario that cannot run, with one line naming the file and the field.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import click

from karpenter_core.sim.scenario import ScenarioError, load_scenario, parse_duration

__all__ = ["command"]

FORMATS = ("text", "json", "html")


@click.command("simulate")
@click.argument("scenario", metavar="SCENARIO.yaml", type=click.Path(dir_okay=False))
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
    type=click.Path(dir_okay=False, writable=True),
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
    try:
        parsed = load_scenario(scenario)
        until_s = None if until is None else parse_duration(until, "--until")
    except ScenarioError as e:
        raise click.ClickException(str(e)) from None

    from karpenter_core.sim.engine import Simulation, SimulationError
    from karpenter_core.sim.report import render_html, render_text

    try:
        sim = Simulation(parsed, seed=seed)
    except SimulationError as e:
        raise click.ClickException(str(e)) from None
    report = sim.run(until_s)
    if output == "json":
        text = report.to_json() + "\n"
    elif output == "html":
        text = render_html(report)
    else:
        text = render_text(report)
    if out is None:
        click.echo(text, nl=False)
        return
    try:
        Path(out).write_text(text, encoding="utf-8")
    except OSError as e:
        raise click.ClickException(f"--out {out}: cannot write: {e.strerror or e}") from None
    click.echo(f"wrote {output} report to {out}", err=True)
