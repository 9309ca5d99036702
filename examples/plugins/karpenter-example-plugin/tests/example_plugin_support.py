"""What the example plugin's tests share: where the project is, what its
``pyproject.toml`` declares, and a NodePool builder for the plugin's annotations."""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from karpenter_core.testing import builders as b

PROJECT = Path(__file__).resolve().parents[1]
PYPROJECT: dict[str, Any] = tomllib.loads((PROJECT / "pyproject.toml").read_text(encoding="utf-8"))[
    "project"
]
DISTRIBUTION: str = PYPROJECT["name"]
MANIFESTS = PROJECT / "manifests"
SCENARIO = PROJECT / "scenario.yaml"


def annotated_nodepool(annotations: Mapping[str, str], **kwargs: Any) -> dict[str, Any]:
    """The kit's NodePool (``builders.nodepool(**kwargs)``) with ``annotations`` on the
    NodePool itself: the builder's own ``annotations`` are its template's, the nodes'."""
    pool = b.nodepool(**kwargs)
    pool["metadata"]["annotations"] = dict(annotations)
    return pool
