"""Settings for every tier of this repository's tests.

Hypothesis's per-example deadline (200 ms by default) is a timed assertion: on a shared
2-core machine a property test that is fast everywhere else fails with DeadlineExceeded
when the machine is busy. Speed is measured by ``bench/``, so no property test here has a
deadline; the number of examples still comes from each test's own settings.
"""

from __future__ import annotations

from hypothesis import settings

settings.register_profile("karpenter-core", deadline=None)
settings.load_profile("karpenter-core")
