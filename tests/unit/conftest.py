"""Fixtures shared by the unit tests, and the guard that keeps them unit tests: no Manager, no
thread, no socket, no subprocess (``unit_guard.py``; docs/testing.md, "The tiers")."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator

import pytest
import urllib3  # noqa: F401  (its import probes for IPv6 with a socket: done here, not in a test)
from unit_guard import forbid_impurity

from karpenter_core.apis import labels as wk


@pytest.fixture(autouse=True)
def _unit_means_no_manager_and_no_threads(request: pytest.FixtureRequest) -> Iterator[None]:
    with forbid_impurity() as seen:
        yield
    if seen:
        pytest.fail(
            f"{request.node.nodeid} {' and '.join(seen)}: that is not a unit test. Move it to "
            "tests/manager/ (a Manager or the kit's Environment) or tests/wallclock/ (threads, "
            "sockets, subprocesses), mirroring its path under tests/unit/ (docs/testing.md).",
            pytrace=False,
        )


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
