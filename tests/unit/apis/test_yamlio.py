"""libyaml's loader builds exactly the objects PyYAML's pure-Python one builds, on every
YAML file the repository ships (examples, CRDs, the chart), and is the one used when
PyYAML has it."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from karpenter_core.apis import yamlio

ROOT = Path(__file__).resolve().parents[3]
SHIPPED = sorted(
    p
    for pattern in (
        "examples/**/*.yaml",
        "karpenter_core/**/*.yaml",
        "plugins/*/karpenter_*/**/*.yaml",
        "charts/karpenter-core/*.yaml",
        "charts/karpenter-core/files/*.yaml",
    )
    for p in ROOT.glob(pattern)
)
C_LOADER = getattr(yaml, "CSafeLoader", None)


def test_there_are_files_to_compare() -> None:
    names = {p.name for p in SHIPPED}
    assert "quickstart.yaml" in names and "karpenter.sh_nodepools.yaml" in names
    assert len(SHIPPED) > 20


@pytest.mark.skipif(C_LOADER is None, reason="PyYAML was built without libyaml")
@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: str(p.relative_to(ROOT)))
def test_both_loaders_build_identical_objects(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    pure = list(yaml.load_all(text, Loader=yaml.SafeLoader))
    fast = list(yaml.load_all(text, Loader=C_LOADER))
    assert fast == pure
    assert [type(d) for d in fast] == [type(d) for d in pure]
    assert list(yamlio.safe_load_all(text)) == pure


def test_the_c_classes_are_used_when_pyyaml_has_them() -> None:
    assert yamlio.SafeLoader is getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    assert yamlio.SafeDumper is getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def test_dumped_yaml_loads_back_to_the_same_document() -> None:
    document = {"name": "n\u00e9", "zones": ["a", "b"], "price": 0.25, "empty": {}, "none": None}
    text = yamlio.safe_dump(document, sort_keys=False, allow_unicode=True)
    assert yaml.safe_load(text) == document
    assert text.startswith("name: n\u00e9\n")
    assert yamlio.safe_load(text) == document
