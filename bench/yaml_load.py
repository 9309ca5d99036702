"""YAML loading: PyYAML's pure-Python SafeLoader against libyaml's CSafeLoader (what
:mod:`karpenter_core.apis.yamlio` uses when PyYAML was built with libyaml), on the largest
bundled manifests: the providers' NodeClass CRDs, every CRD ``karpenter crds`` prints, and
the examples.

Run: ``python bench/yaml_load.py [--repeat 7]``. Prints the median milliseconds of each load
and the ratio; it asserts nothing (timings vary by machine).
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def _files() -> dict[str, list[Path]]:
    crds = sorted(ROOT.glob("plugins/*/karpenter_*/crds/*.yaml"))
    core = sorted((ROOT / "karpenter_core" / "apis" / "crds").glob("*.yaml"))
    examples = sorted(ROOT.glob("examples/**/*.yaml"))
    largest = max(crds, key=lambda p: p.stat().st_size)
    return {
        f"largest bundled manifest ({largest.name}, {largest.stat().st_size // 1024} KiB)": [
            largest
        ],
        f"every CRD ({len(core) + len(crds)} files)": core + crds,
        f"examples ({len(examples)} files)": examples,
    }


def _median_ms(texts: list[str], loader: type, repeat: int) -> float:
    runs = []
    for _ in range(repeat):
        start = time.perf_counter()
        for text in texts:
            list(yaml.load_all(text, Loader=loader))
        runs.append((time.perf_counter() - start) * 1000)
    return statistics.median(runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    c_loader = getattr(yaml, "CSafeLoader", None)
    if c_loader is None:
        print("PyYAML was built without libyaml: no CSafeLoader to compare")
        return
    for label, paths in _files().items():
        texts = [p.read_text(encoding="utf-8") for p in paths]
        pure = _median_ms(texts, yaml.SafeLoader, args.repeat)
        fast = _median_ms(texts, c_loader, args.repeat)
        print(f"{label}: SafeLoader {pure:.1f} ms, CSafeLoader {fast:.1f} ms ({pure / fast:.1f}x)")


if __name__ == "__main__":
    main()
