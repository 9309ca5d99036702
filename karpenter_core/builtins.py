"""The plugin karpenter-core registers for itself, before any installed plugin.

It implements no hook today. The core features that are extensions in spirit are wired
in directly, and plugins compose with them: NodeOverlay objects apply on top of plugins'
instance-type overlays (:mod:`karpenter_core.cloudprovider.overlay`), and plugins'
disruption methods take their place among emptiness, drift and consolidation by ``order``
(a plugin method with a built-in's name replaces it; see
:func:`karpenter_core.controllers.disruption.build_methods`). Both reach the controllers
through :func:`karpenter_core.operator.controllers.plugin_extras`.
"""

from __future__ import annotations
