"""Properties: round trips for generated objects; arbitrary input never crashes validation."""

from __future__ import annotations

import contextlib
from typing import Any

from apis_fixtures import FULL_NODEPOOL, fresh
from hypothesis import given, settings
from hypothesis import strategies as st

from karpenter_core.apis.v1 import APIError, NodeClaim, NodePool
from karpenter_core.apis.v1alpha1 import NodeOverlay
from karpenter_core.apis.validation import validate

names = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-", min_size=1, max_size=12)
durations = st.sampled_from(["0s", "30s", "60m", "1h30m", "720h", "Never"])
strings = st.lists(names, max_size=4)

requirement = st.fixed_dictionaries(
    {"key": names, "operator": st.sampled_from(["In", "NotIn", "Exists", "Gt"])},
    optional={"values": strings, "minValues": st.integers(1, 50), "x-unknown": names},
)
taint = st.fixed_dictionaries(
    {"key": names, "effect": st.sampled_from(["NoSchedule", "NoExecute"])},
    optional={"value": names},
)
budget = st.fixed_dictionaries(
    {"nodes": st.sampled_from(["10%", "0", "3"])},
    optional={
        "reasons": st.lists(st.sampled_from(["Empty", "Drifted", "Underutilized"]), max_size=3),
        "schedule": st.just("@daily"),
        "duration": st.just("1h"),
    },
)
template_spec = st.fixed_dictionaries(
    {
        "requirements": st.lists(requirement, max_size=4),
        "nodeClassRef": st.fixed_dictionaries({"group": names, "kind": names, "name": names}),
    },
    optional={
        "taints": st.lists(taint, max_size=3),
        "startupTaints": st.lists(taint, max_size=2),
        "expireAfter": durations,
        "terminationGracePeriod": st.sampled_from(["1h", "30s"]),
        "somethingNew": st.dictionaries(names, names, max_size=2),
    },
)
nodepool = st.fixed_dictionaries(
    {
        "apiVersion": st.just("karpenter.sh/v1"),
        "kind": st.just("NodePool"),
        "metadata": st.fixed_dictionaries(
            {"name": names}, optional={"labels": st.dictionaries(names, names, max_size=3)}
        ),
        "spec": st.fixed_dictionaries(
            {
                "template": st.fixed_dictionaries(
                    {"spec": template_spec},
                    optional={
                        "metadata": st.fixed_dictionaries(
                            {},
                            optional={
                                "labels": st.dictionaries(names, names, max_size=3),
                                "annotations": st.dictionaries(names, names, max_size=2),
                            },
                        )
                    },
                )
            },
            optional={
                "disruption": st.fixed_dictionaries(
                    {},
                    optional={
                        "consolidateAfter": durations,
                        "consolidationPolicy": st.sampled_from(["WhenEmpty", "Balanced"]),
                        "budgets": st.lists(budget, max_size=3),
                    },
                ),
                "limits": st.dictionaries(
                    st.sampled_from(["cpu", "memory", "nodes"]),
                    st.one_of(st.integers(0, 100), st.just("10Gi")),
                ),
                "weight": st.integers(1, 100),
                "replicas": st.integers(0, 10),
            },
        ),
    }
)


@given(nodepool)
def test_generated_nodepools_round_trip(d: dict[str, Any]) -> None:
    assert NodePool.from_dict(fresh(d)).to_dict() == d


@given(nodepool)
def test_with_defaults_is_idempotent(d: dict[str, Any]) -> None:
    once = NodePool.from_dict(d).with_defaults()
    assert once.with_defaults().to_dict() == once.to_dict()


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.floats(allow_nan=False) | names,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(names, children, max_size=3),
    max_leaves=10,
)

paths = st.sampled_from(
    [
        ("spec",),
        ("spec", "template"),
        ("spec", "template", "spec"),
        ("spec", "template", "spec", "requirements"),
        ("spec", "template", "spec", "taints"),
        ("spec", "template", "metadata", "labels"),
        ("spec", "disruption"),
        ("spec", "disruption", "budgets"),
        ("spec", "limits"),
        ("spec", "weight"),
        ("metadata",),
        ("metadata", "name"),
    ]
)


@settings(max_examples=300)
@given(paths, json_values)
def test_arbitrary_values_never_crash(path: tuple[str, ...], value: Any) -> None:
    d = fresh(FULL_NODEPOOL)
    node = d
    for p in path[:-1]:
        node = node[p]
    node[path[-1]] = value
    errors = validate(d)
    assert isinstance(errors, list)
    with contextlib.suppress(APIError):
        NodePool.from_dict(d)


@given(json_values)
def test_arbitrary_specs_of_other_kinds_never_crash(value: Any) -> None:
    for api_version, kind, cls in [
        ("karpenter.sh/v1", "NodeClaim", NodeClaim),
        ("karpenter.sh/v1alpha1", "NodeOverlay", NodeOverlay),
    ]:
        d = {"apiVersion": api_version, "kind": kind, "metadata": {"name": "x"}, "spec": value}
        assert isinstance(validate(d), list)
        with contextlib.suppress(APIError):
            cls.from_dict(d)
