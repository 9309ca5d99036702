"""YAML with libyaml when PyYAML has it.

PyYAML's ``yaml.safe_load`` and ``yaml.safe_dump`` run its pure-Python scanner, parser
and emitter; the ``CSafeLoader``/``CSafeDumper`` classes do the same work in libyaml, about
ten times faster on the bundled CRDs (``bench/yaml_load.py``), and build the same objects.
A PyYAML built without libyaml has neither class: then the pure-Python ones are used.
(Manifests given by users go through :mod:`karpenter_core.apis.manifests`, whose bounded
loader has its own libyaml parser.)
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import yaml

__all__ = ["SafeDumper", "SafeLoader", "safe_dump", "safe_load", "safe_load_all"]

SafeLoader: type[Any] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
SafeDumper: type[Any] = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def safe_load(text: str) -> Any:
    """The one document of ``text``, as ``yaml.safe_load`` reads it."""
    return yaml.load(text, Loader=SafeLoader)


def safe_load_all(text: str) -> Iterator[Any]:
    """Every document of ``text``, as ``yaml.safe_load_all`` reads them."""
    return iter(yaml.load_all(text, Loader=SafeLoader))


def safe_dump(data: Any, **options: Any) -> str:
    """``data`` as YAML, as ``yaml.safe_dump`` writes it (same options)."""
    return str(yaml.dump(data, Dumper=SafeDumper, **options))
