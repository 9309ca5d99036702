"""Shared fixtures for the API tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from karpenter_core.apis import labels as wk


@pytest.fixture
def restore_label_sets() -> Iterator[None]:
    """Undo any provider label registration a test makes (the sets are module globals)."""
    well_known = set(wk.WELL_KNOWN_LABELS)
    domains = set(wk.RESTRICTED_LABEL_DOMAINS)
    yield
    wk.WELL_KNOWN_LABELS.clear()
    wk.WELL_KNOWN_LABELS.update(well_known)
    wk.RESTRICTED_LABEL_DOMAINS.clear()
    wk.RESTRICTED_LABEL_DOMAINS.update(domains)
