"""Operator wiring: options (upstream flags and environment variables) and the context
every controller receives, so ``serve`` and ``simulate`` build the same controllers."""

from karpenter_core.runtime.context import ControllerContext
from karpenter_core.runtime.options import FEATURE_GATE_DEFAULTS, Options, OptionsError

__all__ = ["FEATURE_GATE_DEFAULTS", "ControllerContext", "Options", "OptionsError"]
