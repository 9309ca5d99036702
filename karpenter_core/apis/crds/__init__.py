"""CRD manifests of the core kinds (NodePool, NodeClaim, NodeOverlay, CapacityBuffer).

The YAML files in this package are what an operator installs; they are rendered from
:mod:`karpenter_core.apis.crds.schema` (``python -m karpenter_core.apis.crds`` rewrites them)
and a unit test fails if they drift from it.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import Any

import yaml

from karpenter_core.apis import yamlio
from karpenter_core.apis.crds.schema import CRD_FILES, all_crds

HEADER = (
    "# Rendered from karpenter_core/apis/crds/schema.py by `python -m karpenter_core.apis.crds`.\n"
)


def render(crd: dict[str, Any]) -> str:
    """One CRD as a YAML document (header comment, ``---``, block style, stable key order)."""
    body = yaml.safe_dump(crd, sort_keys=False, default_flow_style=False, width=1000)
    return HEADER + "---\n" + body


@cache
def _load() -> tuple[dict[str, Any], ...]:
    pkg = resources.files(__name__)
    out = []
    for name in CRD_FILES:
        out.append(yamlio.safe_load(pkg.joinpath(name).read_text(encoding="utf-8")))
    return tuple(out)


def crd_manifests() -> list[dict[str, Any]]:
    """The four CRDs as dicts (fresh copies; callers may mutate them)."""
    import copy

    return [copy.deepcopy(c) for c in _load()]


def crd_yaml_files() -> dict[str, str]:
    """File name -> text of each shipped CRD manifest, in print order."""
    pkg = resources.files(__name__)
    return {name: pkg.joinpath(name).read_text(encoding="utf-8") for name in CRD_FILES}


__all__ = ["CRD_FILES", "all_crds", "crd_manifests", "crd_yaml_files", "render"]
