"""Rendering charts/karpenter-core with ``helm template`` for the chart tests, and reading
the rendered objects."""

from __future__ import annotations

import subprocess
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "karpenter-core"
NS = "karpenter"


def helm_template(
    helm: Path,
    *sets: str,
    release: str = "karpenter-core",
    values: Iterable[Path] = (),
    chart: Path = CHART,
    extra: Iterable[str] = (),
) -> subprocess.CompletedProcess[str]:
    """``helm template`` of the chart with values files and ``--set`` items, as run."""
    args = [str(helm), "template", release, str(chart), "--namespace", NS, *extra]
    for v in values:
        args += ["--values", str(v)]
    for s in sets:
        args += ["--set", s]
    return subprocess.run(args, capture_output=True, text=True, check=False)


def render(
    helm: Path,
    *sets: str,
    release: str = "karpenter-core",
    values: Path | Iterable[Path] = (),
    chart: Path = CHART,
    extra: Iterable[str] = (),
) -> list[dict[str, Any]]:
    """The objects the chart renders; the test fails with helm's message if it fails."""
    files = [values] if isinstance(values, Path) else list(values)
    proc = helm_template(helm, *sets, release=release, values=files, chart=chart, extra=extra)
    assert proc.returncode == 0, proc.stderr
    return [d for d in yaml.safe_load_all(proc.stdout) if d]


def one(docs: Iterable[dict[str, Any]], kind: str, name: str | None = None) -> dict[str, Any]:
    found = [
        d for d in docs if d["kind"] == kind and (name is None or d["metadata"]["name"] == name)
    ]
    assert len(found) == 1, f"{kind} {name}: found {len(found)}"
    return found[0]


def container_of(deployment: dict[str, Any]) -> dict[str, Any]:
    """The operator's container (the first)."""
    container: dict[str, Any] = deployment["spec"]["template"]["spec"]["containers"][0]
    return container


def env_of(deployment: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container_of(deployment)["env"]}
