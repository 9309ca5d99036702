"""Rewrite the CRD YAML files of this package from :mod:`.schema`."""

from __future__ import annotations

from pathlib import Path

from karpenter_core.apis.crds import render
from karpenter_core.apis.crds.schema import CRD_FILES


def main() -> None:
    here = Path(__file__).parent
    for name, build in CRD_FILES.items():
        (here / name).write_text(render(build()), encoding="utf-8")
        print(f"wrote {name}")


if __name__ == "__main__":
    main()
