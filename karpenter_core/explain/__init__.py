"""Why Karpenter decided what it decided, as values the CLI renders.

``karpenter explain`` answers three questions users ask of every node autoscaler — why is
this pod pending (or why did it land there), why is this node not consolidated, what is
this NodePool allowed to do now — from the engine's own decision functions, not from a
second implementation: the verdict on a pod is the provisioning scheduler's, the reasons
a node is not a disruption candidate are the sentences disruption publishes as events
(:func:`karpenter_core.disruption.candidates.new_candidate`, each method's
``should_disrupt``, the consolidation simulation), and budgets are
:func:`karpenter_core.disruption.budgets.allowed_disruptions`. What this package adds is
the breakdown around a verdict (each NodePool and instance type considered, the first
constraint that excluded it, the closest miss), computed with the scheduler's own
predicates.

Every explanation is an attrs value with a stable ``code`` per reason, so tests and
programs branch on codes and people read the messages.
"""

from karpenter_core.explain.inputs import ExplainInput, load_explain_input
from karpenter_core.explain.node import NodeExplanation, explain_node
from karpenter_core.explain.nodepool import NodePoolExplanation, explain_nodepool
from karpenter_core.explain.pod import PodExplanation, explain_pod
from karpenter_core.explain.reasons import Reason

__all__ = [
    "ExplainInput",
    "NodeExplanation",
    "NodePoolExplanation",
    "PodExplanation",
    "Reason",
    "explain_node",
    "explain_nodepool",
    "explain_pod",
    "load_explain_input",
]
