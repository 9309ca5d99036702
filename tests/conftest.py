"""Settings for every tier of this repository's tests.

Hypothesis's per-example deadline (200 ms by default) is a timed assertion: on a shared
2-core machine a property test that is fast everywhere else fails with DeadlineExceeded
when the machine is busy. Speed is measured by ``bench/``, so no property test here has a
deadline; the number of examples still comes from each test's own settings.

The reservation-id label a cloud provider declares is process-wide (one provider per
operator); a test that builds a provider declares it, and the tests after it on the same
worker would see that provider's label instead of their own. Every test gets back the
declaration that stood before it.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import settings

from karpenter_core.cloudprovider import types

settings.register_profile("karpenter-core", deadline=None)
settings.load_profile("karpenter-core")


@pytest.fixture(autouse=True)
def _reservation_labels_restored() -> Iterator[None]:
    label, extra = types.reservation_id_label(), types.reserved_capacity_labels()
    yield
    types.register_reservation_labels(label, extra)
