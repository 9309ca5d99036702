"""The negotiated-discount overlay: what it does to prices, and where it shows."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from click.testing import CliRunner
from example_plugin_support import MANIFESTS, annotated_nodepool
from karpenter_example_plugin.discount import apply_discount, instance_family
from karpenter_example_plugin.policy import DISCOUNT_ANNOTATION, PolicyError

from karpenter_core.cli import main
from karpenter_core.plugin_api import IN, InstanceType, NodePool, Requirement
from karpenter_core.plugins import KarpenterPluginManager
from karpenter_core.testing import Environment, fakecatalog

FAMILY_LABEL = "example.com/instance-family"


def _type(name: str, family: str, price: float) -> InstanceType:
    return fakecatalog.instance_type(
        name,
        offerings=[
            fakecatalog.offering("on-demand", "test-zone-a", price),
            fakecatalog.offering("spot", "test-zone-a", price / 2),
        ],
        requirements=[Requirement.new(FAMILY_LABEL, IN, [family])],
    )


def _prices(its: list[InstanceType] | tuple[InstanceType, ...]) -> dict[str, list[float]]:
    return {it.name: [round(o.price, 6) for o in it.offerings] for it in its}


@pytest.fixture
def catalogue() -> tuple[InstanceType, ...]:
    return (_type("c-large", "c", 1.0), _type("m-large", "m", 1.2))


@pytest.fixture
def pool() -> Callable[[str | None], NodePool]:
    def make(discount: str | None) -> NodePool:
        annotations = {DISCOUNT_ANNOTATION: discount} if discount is not None else {}
        return NodePool.from_dict(annotated_nodepool(annotations))

    return make


def test_the_family_comes_from_the_instance_family_requirement(
    catalogue: tuple[InstanceType, ...],
) -> None:
    assert [instance_family(it) for it in catalogue] == ["c", "m"]
    assert instance_family(fakecatalog.instance_type("plain")) is None


def test_every_offering_of_the_family_is_discounted_and_no_other(
    pool: Callable[[str | None], NodePool], catalogue: tuple[InstanceType, ...]
) -> None:
    out = apply_discount(pool("m=25"), catalogue)
    assert _prices(list(out)) == {"c-large": [1.0, 0.5], "m-large": [0.9, 0.45]}
    assert _prices(catalogue) == {"c-large": [1.0, 0.5], "m-large": [1.2, 0.6]}  # untouched


def test_several_families_each_get_their_own_rate(
    pool: Callable[[str | None], NodePool], catalogue: tuple[InstanceType, ...]
) -> None:
    out = apply_discount(pool("c=10, m=50"), catalogue)
    assert _prices(list(out)) == {"c-large": [0.9, 0.45], "m-large": [0.6, 0.3]}


def test_a_nodepool_without_the_annotation_gets_the_types_as_they_are(
    pool: Callable[[str | None], NodePool], catalogue: tuple[InstanceType, ...]
) -> None:
    assert apply_discount(pool(None), catalogue) is catalogue


def test_every_pass_gets_the_same_discounted_copy(
    pool: Callable[[str | None], NodePool], catalogue: tuple[InstanceType, ...]
) -> None:
    # the scheduler caches by instance type identity
    first = apply_discount(pool("m=25"), catalogue)
    again = apply_discount(pool("m=25"), catalogue)
    assert all(a is b for a, b in zip(first, again, strict=True))
    assert first[1] is not catalogue[1]


@pytest.mark.parametrize("value", ["m", "m=", "m=abc", "m=100", "m=-5", "=10", "m=10,,"])
def test_an_unreadable_discount_is_an_error_naming_the_annotation(
    pool: Callable[[str | None], NodePool], catalogue: tuple[InstanceType, ...], value: str
) -> None:
    with pytest.raises(PolicyError, match=DISCOUNT_ANNOTATION):
        apply_discount(pool(value), catalogue)


def test_the_operator_sees_discounted_prices_through_the_plugin_manager(
    make_karpenter_env: Callable[..., Environment],
    plugin_manager: KarpenterPluginManager,
    pool: Callable[[str | None], NodePool],
    catalogue: tuple[InstanceType, ...],
) -> None:
    from karpenter_core.testing import FakeCloudProvider

    env = make_karpenter_env(
        FakeCloudProvider(list(catalogue)), plugin_manager=plugin_manager, kubelet=False
    )
    seen = env.cloud_provider.get_instance_types(pool("m=25"))
    assert _prices(list(seen))["m-large"] == [0.9, 0.45]


def _schedule(plugins: str) -> dict[str, str]:
    result = CliRunner().invoke(
        main, ["schedule", "-f", str(MANIFESTS), "-o", "json"], env={"KARPENTER_PLUGINS": plugins}
    )
    assert result.exit_code == 0, result.output
    [claim] = json.loads(result.output)["nodeClaims"]
    return {"first": claim["instanceTypes"][0], "pods": ",".join(claim["pods"])}


def test_karpenter_schedule_on_the_bundled_manifests_picks_the_discounted_family(
    installed: None,
) -> None:
    without = _schedule("kwok")
    with_plugin = _schedule("kwok,example")
    assert without["first"] == "c-4x-amd64-linux"
    assert with_plugin["first"] == "m-4x-amd64-linux"
    assert with_plugin["pods"] == without["pods"]
