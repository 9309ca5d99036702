"""Fixtures shared by the unit tests."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator

import pytest

from karpenter_core.apis import labels as wk


@pytest.fixture
def restore_label_sets() -> Iterator[None]:
    """Start from core's own label sets and undo any provider registration a test makes.

    The sets are module globals: tests that ran earlier in the session (``karpenter schedule``
    with kwok...) may have registered provider labels, so begin from a pristine copy.
    """
    well_known = set(wk.WELL_KNOWN_LABELS)
    domains = set(wk.RESTRICTED_LABEL_DOMAINS)
    spec = importlib.util.spec_from_file_location("_pristine_labels", wk.__file__)
    assert spec is not None and spec.loader is not None
    pristine = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(pristine)
    wk.WELL_KNOWN_LABELS.clear()
    wk.WELL_KNOWN_LABELS.update(pristine.WELL_KNOWN_LABELS)
    wk.RESTRICTED_LABEL_DOMAINS.clear()
    wk.RESTRICTED_LABEL_DOMAINS.update(pristine.RESTRICTED_LABEL_DOMAINS)
    yield
    wk.WELL_KNOWN_LABELS.clear()
    wk.WELL_KNOWN_LABELS.update(well_known)
    wk.RESTRICTED_LABEL_DOMAINS.clear()
    wk.RESTRICTED_LABEL_DOMAINS.update(domains)
