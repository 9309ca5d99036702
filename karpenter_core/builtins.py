"""The plugin karpenter-core registers for itself, before any installed plugin.

Core features that are extensions in spirit (the NodeOverlay CRD as an instance-type
overlay, emptiness / drift / consolidation as disruption methods) register here through
the same hooks a third-party plugin uses, so there is exactly one way in. The hookimpls
arrive with those features; until then this plugin implements no hook.
"""

from __future__ import annotations
