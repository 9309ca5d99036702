"""Does a node match a core/v1 ``NodeSelector``? The rule kube-scheduler applies to a node
(``component-helpers/scheduling/corev1/nodeaffinity``), over JSON selectors.

Terms are ORed; within a term every ``matchExpressions`` entry is tested on its own against
the node's labels and every ``matchFields`` entry against its fields (``metadata.name`` is
the only field a node has), and all must hold. A term with no entries matches nothing, as
does a selector with no terms, and an entry the API server would refuse (an unknown
operator, ``In`` without values, ``Gt`` with a non-number) makes its term match nothing.

Used where Kubernetes evaluates a selector against a concrete node: a ResourceClaim's
``status.allocation.nodeSelector`` (the simulated kube-scheduler's DynamicResources filter)
and the node selectors of a simulated DRA driver's pools. Karpenter's scheduler reasons
about sets of possible nodes with :mod:`karpenter_core.scheduling.requirements` instead.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["expression_matches", "node_selector_matches", "term_matches"]

METADATA_NAME = "metadata.name"

_GO_INT = re.compile(r"[+-]?[0-9]+")
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def _int64(value: str) -> int | None:
    """A label value read as kube-scheduler reads a number (base 10, optional sign,
    within int64); None when it is not one."""
    if _GO_INT.fullmatch(value) is None:
        return None
    number = int(value)
    return number if _INT64_MIN <= number <= _INT64_MAX else None


def expression_matches(expression: Any, labels: Mapping[str, str]) -> bool:
    """One ``matchExpressions`` entry against a node's labels (False when malformed)."""
    if not isinstance(expression, Mapping):
        return False
    key, operator = expression.get("key"), expression.get("operator")
    values = expression.get("values") or []
    if not isinstance(key, str) or not key or not isinstance(values, Sequence):
        return False
    if isinstance(values, str) or not all(isinstance(v, str) for v in values):
        return False
    value = labels.get(key)
    if operator == "In":
        return bool(values) and value is not None and value in values
    if operator == "NotIn":
        return bool(values) and (value is None or value not in values)
    if operator == "Exists":
        return not values and value is not None
    if operator == "DoesNotExist":
        return not values and value is None
    if operator in ("Gt", "Lt"):
        bound = _int64(values[0]) if len(values) == 1 else None
        number = None if value is None else _int64(value)
        if bound is None or number is None:
            return False
        return number > bound if operator == "Gt" else number < bound
    return False


def _field_matches(expression: Any, node_name: str) -> bool:
    if not isinstance(expression, Mapping):
        return False
    key, operator, values = (
        expression.get("key"),
        expression.get("operator"),
        expression.get("values"),
    )
    if not isinstance(key, str) or operator not in ("In", "NotIn"):
        return False
    if not isinstance(values, Sequence) or len(values) != 1 or not isinstance(values[0], str):
        return False
    value = node_name if key == METADATA_NAME else ""
    return bool((value == values[0]) == (operator == "In"))


def term_matches(term: Any, labels: Mapping[str, str], node_name: str = "") -> bool:
    """One ``NodeSelectorTerm`` (its expressions and fields ANDed) against a node."""
    if not isinstance(term, Mapping):
        return False
    expressions = term.get("matchExpressions") or []
    fields = term.get("matchFields") or []
    if not expressions and not fields:
        return False
    return all(expression_matches(e, labels) for e in expressions) and all(
        _field_matches(f, node_name) for f in fields
    )


def node_selector_matches(selector: Any, labels: Mapping[str, str], node_name: str = "") -> bool:
    """A ``NodeSelector`` (``{"nodeSelectorTerms": [...]}``) or a bare list of terms
    against a node: any term matching is enough."""
    terms = selector.get("nodeSelectorTerms") if isinstance(selector, Mapping) else selector
    if not isinstance(terms, Sequence) or isinstance(terms, str):
        return False
    return any(term_matches(t, labels, node_name) for t in terms)
