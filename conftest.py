"""Every test tier: the in-memory API server checks that no reader changed a stored
object it was handed without a copy (``karpenter_core.sim.apiserver.VERIFY_ENV``)."""

import os

from karpenter_core.sim.apiserver import VERIFY_ENV

os.environ.setdefault(VERIFY_ENV, "1")
