"""Instance-type scorers in the solve: which type a NodeClaim launches as, on crafted
catalogues, for the built-ins, a plugin's scorer, and scorers that misbehave."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs
import pytest
from scheduler_helpers import fake_labels as fake_labels  # autouse fixture
from scheduler_helpers import nodepool, pod, solve

from karpenter_core.apis.v1 import NodePool
from karpenter_core.cloudprovider.types import InstanceType
from karpenter_core.hookspecs import InstanceTypeScorerSpec, ScoringRequest
from karpenter_core.plugins import (
    BUILTIN_PLUGIN_NAME,
    KarpenterPluginManager,
    PluginError,
    hookimpl,
    instance_type_scorers,
)
from karpenter_core.provisioning.scheduler import SchedulerOptions
from karpenter_core.provisioning.scheduler.results import Results
from karpenter_core.scoring import (
    BUILTIN_SCORERS,
    PREFERENCE_ANNOTATION_KEY,
    PRIORITY_ANNOTATION_KEY,
    REASON_SCORER_FAILED,
    REASON_UNKNOWN_SCORER,
    SCORER_ANNOTATION_KEY,
    Scoring,
    UnknownScorerError,
    launch_preference,
    parse_priority,
    preference_rank,
)
from karpenter_core.testing.fakecatalog import default_offerings, instance_type


def priced(name: str, cpu: int, memory_gi: float, price: float) -> InstanceType:
    return instance_type(name, cpu=cpu, memory_gi=memory_gi, offerings=default_offerings(price))


# 1.5 CPU / 1 GiB fits all three; the roomy one is (artificially) the cheapest.
ROOMY = priced("roomy", 8, 32, 0.10)
MID = priced("mid", 4, 4, 0.15)
SNUG = priced("snug", 2, 2, 0.20)
WASTE_CATALOGUE = [SNUG, MID, ROOMY]


class Problems:
    """Records what :class:`Scoring` reports (the provisioner turns it into events)."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, str]] = []

    def __call__(self, np: NodePool, reason: str, message: str) -> None:
        self.seen.append((np.name, reason, message))


def annotated(annotations: dict[str, str], name: str = "default") -> NodePool:
    np = nodepool(name)
    return attrs.evolve(np, metadata=attrs.evolve(np.metadata, annotations=annotations))


def run(
    catalogue: Sequence[InstanceType],
    scoring: Scoring | None,
    pools: Sequence[NodePool] | None = None,
    max_instance_types: int = 600,
    pods: Sequence[Any] | None = None,
) -> Results:
    options = SchedulerOptions(scoring=scoring, max_instance_types=max_instance_types)
    pods = list(pods) if pods is not None else [pod(cpu="1500m", memory="1Gi")]
    return solve(pods, pools, catalogue, options=options)


def launched(results: Results) -> list[str]:
    """The type each new NodeClaim would launch as: the first of its launch order."""
    return [nc.instance_types_ranked()[0].name for nc in results.new_nodeclaims]


def order(results: Results) -> list[str]:
    (nc,) = results.new_nodeclaims
    return [i.name for i in nc.instance_types_ranked()]


def scoring(default: str = "price", *extra: InstanceTypeScorerSpec, report: Any = None) -> Scoring:
    return Scoring([*BUILTIN_SCORERS, *extra], default, report)


# --- the default is upstream's ------------------------------------------------------------------


def test_price_is_the_default_and_identical_to_no_scoring() -> None:
    pods = [pod(cpu="1500m", memory="1Gi")]
    plain = run(WASTE_CATALOGUE, None, pods=pods)
    scored = run(WASTE_CATALOGUE, scoring(), pods=pods)
    assert launched(plain) == launched(scored) == ["roomy"]
    assert plain.to_json_dict() == scored.to_json_dict()
    assert "instanceTypeScorer" not in scored.to_json_dict()["nodeClaims"][0]
    (nc,) = scored.new_nodeclaims
    assert nc.scorer is None
    assert PREFERENCE_ANNOTATION_KEY not in nc.to_nodeclaim_dict()["metadata"]["annotations"]


# --- least-waste --------------------------------------------------------------------------------


def test_least_waste_launches_the_snuggest_type_not_the_cheapest() -> None:
    results = run(WASTE_CATALOGUE, scoring("least-waste"))
    assert order(results) == ["snug", "mid", "roomy"]
    claim = results.to_json_dict()["nodeClaims"][0]
    assert claim["instanceTypeScorer"] == "least-waste"
    assert claim["instanceTypes"] == ["snug", "mid", "roomy"]


def test_least_waste_ties_break_by_price() -> None:
    twin_dear = priced("twin-dear", 2, 2, 0.30)
    results = run([twin_dear, *WASTE_CATALOGUE], scoring("least-waste"))
    assert order(results)[:2] == ["snug", "twin-dear"]


def test_the_cap_keeps_the_scorers_best_types() -> None:
    results = run(WASTE_CATALOGUE, scoring("least-waste"), max_instance_types=1)
    assert [i.name for i in results.new_nodeclaims[0].options] == ["snug"]
    reqs = results.new_nodeclaims[0].launch_requirements()
    assert reqs.get("node.kubernetes.io/instance-type").values == {"snug"}


def test_the_nodeclaim_carries_the_launch_order() -> None:
    (nc,) = run(WASTE_CATALOGUE, scoring("least-waste")).new_nodeclaims
    annotations = nc.to_nodeclaim_dict()["metadata"]["annotations"]
    assert annotations[PREFERENCE_ANNOTATION_KEY] == "snug,mid,roomy"
    assert launch_preference(annotations) == {"snug": 0, "mid": 1, "roomy": 2}


# --- priority -----------------------------------------------------------------------------------

FAMILIES = [
    priced("c5.large", 2, 4, 0.08),
    priced("m5.large", 2, 8, 0.10),
    priced("m5.xlarge", 4, 16, 0.20),
    priced("r5.large", 2, 16, 0.13),
    priced("r5.xlarge", 4, 32, 0.26),
]


def test_priority_follows_the_nodepool_annotation_then_price() -> None:
    pool = annotated({PRIORITY_ANNOTATION_KEY: "m5.x*, r5"})
    results = run(FAMILIES, scoring("priority"), [pool])
    assert order(results) == ["m5.xlarge", "r5.large", "r5.xlarge", "c5.large", "m5.large"]


def test_priority_families_match_on_a_separator_only() -> None:
    pool = annotated({PRIORITY_ANNOTATION_KEY: "m"})
    results = run(FAMILIES, scoring("priority"), [pool])
    # "m" is a family of neither m5.large nor m5.xlarge: nothing listed, so price
    assert order(results)[0] == "c5.large"


def test_priority_without_the_annotation_is_price_order() -> None:
    assert launched(run(FAMILIES, scoring("priority"))) == ["c5.large"]


def test_parse_priority_accepts_commas_spaces_and_newlines() -> None:
    assert parse_priority(" m5.*,, r5\nc6i.large ") == ["m5.*", "r5", "c6i.large"]


# --- selection ----------------------------------------------------------------------------------


def test_a_nodepool_annotation_overrides_the_operator_default() -> None:
    waste = annotated({SCORER_ANNOTATION_KEY: "least-waste"}, "waste")
    plain = nodepool("plain")
    options = SchedulerOptions(scoring=scoring())
    pods = [
        pod(cpu="1500m", memory="1Gi", node_selector={"karpenter.sh/nodepool": n})
        for n in ("waste", "plain")
    ]
    results = solve(pods, [waste, plain], WASTE_CATALOGUE, options=options)
    by_pool = {
        nc.nodepool_name: nc.instance_types_ranked()[0].name for nc in results.new_nodeclaims
    }
    assert by_pool == {"waste": "snug", "plain": "roomy"}


def test_an_unknown_annotation_falls_back_to_the_default_and_is_reported() -> None:
    problems = Problems()
    pool = annotated({SCORER_ANNOTATION_KEY: "cheapest-please"})
    results = run(WASTE_CATALOGUE, scoring("least-waste", report=problems), [pool])
    assert launched(results) == ["snug"]
    [(name, reason, message)] = set(problems.seen)
    assert (name, reason) == ("default", REASON_UNKNOWN_SCORER)
    assert "'cheapest-please'" in message and "least-waste, price, priority" in message


def test_an_unknown_default_is_refused() -> None:
    with pytest.raises(UnknownScorerError, match=r"'expensive' \(known: least-waste, price"):
        scoring("expensive")


# --- a plugin's scorer through pluggy ----------------------------------------------------------


def most_memory(request: ScoringRequest) -> list[float]:
    return [-float(it.capacity["memory"]) for it in request.instance_types]


class MemoryPlugin:
    @hookimpl
    def karpenter_instance_type_scorers(self) -> list[InstanceTypeScorerSpec]:
        return [InstanceTypeScorerSpec("most-memory", most_memory, "biggest memory first")]


def plugin_manager(*plugins: tuple[str, object]) -> KarpenterPluginManager:
    from karpenter_core import builtins

    pm = KarpenterPluginManager()
    assert pm.register_plugin(builtins, BUILTIN_PLUGIN_NAME) is None
    for name, plugin in plugins:
        assert pm.register_plugin(plugin, name) is None
    return pm


def test_a_plugin_scorer_registered_through_pluggy_changes_the_launched_type() -> None:
    pm = plugin_manager(("memory", MemoryPlugin()))
    scorers = instance_type_scorers(pm)
    assert [s.name for s in scorers] == ["least-waste", "most-memory", "price", "priority"]
    results = run(
        WASTE_CATALOGUE,
        Scoring(scorers, "price"),
        [annotated({SCORER_ANNOTATION_KEY: "most-memory"})],
    )
    assert launched(results) == ["roomy"]
    results = run(FAMILIES, Scoring(scorers, "most-memory"))
    assert launched(results) == ["r5.xlarge"]


def test_a_plugin_scorer_named_like_a_built_in_replaces_it() -> None:
    class Replacement:
        @hookimpl
        def karpenter_instance_type_scorers(self) -> list[InstanceTypeScorerSpec]:
            return [InstanceTypeScorerSpec("price", most_memory)]

    scorers = instance_type_scorers(plugin_manager(("mine", Replacement())))
    assert launched(run(WASTE_CATALOGUE, Scoring(scorers, "price"))) == ["roomy"]
    assert launched(run(FAMILIES, Scoring(scorers, "price"))) == ["r5.xlarge"]


def test_two_plugins_registering_one_scorer_name_clash() -> None:
    pm = plugin_manager(("a", MemoryPlugin()), ("b", MemoryPlugin()))
    with pytest.raises(PluginError, match="instance type scorer 'most-memory' is registered twice"):
        instance_type_scorers(pm)


# --- misbehaving scorers ------------------------------------------------------------------------


def broken(request: ScoringRequest) -> list[float]:
    raise RuntimeError("pricing API down")


@pytest.mark.parametrize(
    ("score", "detail"),
    [
        (broken, "RuntimeError: pricing API down"),
        (lambda r: [0.0], "returned 1 scores for 3 instance types"),
        (lambda r: [float("nan")] * len(r.instance_types), "returned the score nan"),
        (lambda r: ["a"] * len(r.instance_types), "returned the score 'a'"),
    ],
)
def test_a_failing_scorer_launches_by_price_and_is_reported(score: Any, detail: str) -> None:
    problems = Problems()
    spec = InstanceTypeScorerSpec("flaky", score)
    results = run(WASTE_CATALOGUE, scoring("flaky", spec, report=problems))
    assert order(results) == ["roomy", "mid", "snug"]
    [(name, reason, message)] = problems.seen
    assert (name, reason) == ("default", REASON_SCORER_FAILED)
    assert "'flaky'" in message and detail in message and "launching by price" in message


def test_the_scorer_sees_the_nodeclaims_requests_and_prices() -> None:
    seen: list[ScoringRequest] = []

    def spy(request: ScoringRequest) -> list[float]:
        seen.append(request)
        return [0.0] * len(request.instance_types)

    run(WASTE_CATALOGUE, scoring("spy", InstanceTypeScorerSpec("spy", spy)))
    [request] = seen
    assert [it.name for it in request.instance_types] == ["roomy", "mid", "snug"]
    assert request.prices == (0.10, 0.15, 0.20)
    assert request.requests["cpu"] == 1500
    assert request.pod_count == 1
    assert request.nodepool.name == "default"


# --- the provider's helpers ---------------------------------------------------------------------


def test_preference_rank_puts_unlisted_types_last_and_is_flat_without_a_preference() -> None:
    pref = launch_preference({PREFERENCE_ANNOTATION_KEY: "b, a,b"})
    assert pref == {"b": 0, "a": 1}
    assert [preference_rank(pref, n) for n in ("a", "b", "z")] == [1, 0, 2]
    assert launch_preference({}) == {}
    assert preference_rank({}, "anything") == 0
