"""The built-in disruption methods, in upstream's order: emptiness, static drift, drift,
multi-node and single-node consolidation (registered by :mod:`karpenter_core.builtins`
through the same hook a plugin uses). Balanced scoring and spot-to-spot are decisions
inside consolidation. Each is a function of the pass's snapshot (see
:class:`karpenter_core.disruption.types.Method`)."""
