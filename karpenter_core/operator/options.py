"""Moved to :mod:`karpenter_core.runtime.options` (below ``state/`` and ``controllers/``,
which read options); this alias keeps old imports working until they are updated."""

from karpenter_core.runtime.options import (
    FEATURE_GATE_DEFAULTS,
    LOG_LEVELS,
    MIN_VALUES_POLICIES,
    PREFERENCE_POLICIES,
    Options,
    OptionsError,
    bind_address_problem,
    parse_bool,
    parse_feature_gates,
)

__all__ = [
    "FEATURE_GATE_DEFAULTS",
    "LOG_LEVELS",
    "MIN_VALUES_POLICIES",
    "PREFERENCE_POLICIES",
    "Options",
    "OptionsError",
    "bind_address_problem",
    "parse_bool",
    "parse_feature_gates",
]
