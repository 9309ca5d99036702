"""Moved to :mod:`karpenter_core.runtime.context` (below ``state/``, which builds on it);
this alias keeps old imports working until they are updated."""

from karpenter_core.runtime.context import ControllerContext

__all__ = ["ControllerContext"]
