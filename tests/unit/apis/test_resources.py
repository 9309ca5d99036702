"""Resource lists of milli-unit integers (upstream karpenter pkg/utils/resources)."""

from __future__ import annotations

import copy

import pytest
from hypothesis import given
from hypothesis import strategies as st

from karpenter_core.apis.quantity import QuantityError
from karpenter_core.apis.resources import (
    CPU,
    EPHEMERAL_STORAGE,
    MEMORY,
    PODS,
    add,
    exceeded,
    fits,
    format_resource_list,
    is_zero,
    max_of,
    merge_over,
    min_of,
    parse_resource_list,
    subtract,
)

GI = 1024**3
GPU = "nvidia.com/gpu"


# --- parsing and formatting ----------------------------------------------------------------


def test_constants_are_the_kubernetes_resource_names() -> None:
    assert (CPU, MEMORY, PODS, EPHEMERAL_STORAGE) == ("cpu", "memory", "pods", "ephemeral-storage")


def test_parse_resource_list_parses_every_quantity_to_milli_units() -> None:
    parsed = parse_resource_list({"cpu": "1500m", "memory": "1Gi", "pods": 110, GPU: "1"})
    assert parsed == {"cpu": 1500, "memory": 1000 * GI, "pods": 110_000, GPU: 1000}


def test_parse_resource_list_of_none_is_empty() -> None:
    assert parse_resource_list(None) == {}


def test_parse_resource_list_error_names_the_resource_and_quotes_the_value() -> None:
    with pytest.raises(QuantityError, match=r'resource memory: invalid quantity "1Gb"'):
        parse_resource_list({"cpu": "1", "memory": "1Gb"})


def test_parse_resource_list_rejects_a_non_mapping() -> None:
    with pytest.raises(QuantityError, match=r"must be a mapping.*got list"):
        parse_resource_list(["cpu"])  # type: ignore[arg-type]


@pytest.mark.parametrize("name", [1, ""])
def test_parse_resource_list_rejects_a_bad_resource_name(name: object) -> None:
    with pytest.raises(QuantityError, match="resource name must be a non-empty string"):
        parse_resource_list({name: "1"})  # type: ignore[dict-item]


@pytest.mark.parametrize(
    ("name", "milli", "text"),
    [
        (CPU, 1500, "1500m"),
        (CPU, 2000, "2"),
        (CPU, 1000 * 1024, "1024"),  # cpu is always DecimalSI
        (PODS, 110_000, "110"),
        (MEMORY, 1000 * GI, "1Gi"),
        (MEMORY, 1000 * 1536 * 1024**2, "1536Mi"),
        (MEMORY, 1000 * 10**9, "1G"),  # not a whole number of KiB: DecimalSI
        (MEMORY, 1000 * 512, "512"),
        (MEMORY, 500, "500m"),
        (EPHEMERAL_STORAGE, 1000 * 20 * GI, "20Gi"),
        ("storage", 1000 * 10 * GI, "10Gi"),
        ("hugepages-2Mi", 1000 * 4 * 1024**2, "4Mi"),
        (GPU, 1000 * 1024, "1024"),
    ],
)
def test_format_resource_list_uses_binary_si_for_whole_kib_of_bytes(
    name: str, milli: int, text: str
) -> None:
    assert format_resource_list({name: milli}) == {name: text}


def test_format_resource_list_sorts_keys() -> None:
    assert list(format_resource_list({"pods": 1000, "cpu": 1000, "memory": 1000})) == [
        "cpu",
        "memory",
        "pods",
    ]


def test_format_then_parse_resource_list_round_trips() -> None:
    original = {"cpu": 250, "memory": 1000 * 3 * GI, "pods": 110_000, GPU: 2000}
    assert parse_resource_list(format_resource_list(original)) == original


# --- arithmetic ----------------------------------------------------------------------------


def test_add_sums_each_resource_and_keeps_resources_of_any_list() -> None:
    assert add({"cpu": 1000, "memory": 5}, {"cpu": 500, GPU: 1000}, {"pods": 1000}) == {
        "cpu": 1500,
        "memory": 5,
        GPU: 1000,
        "pods": 1000,
    }


def test_add_of_nothing_is_empty() -> None:
    assert add() == {}


def test_add_returns_a_new_dict() -> None:
    a = {"cpu": 1}
    result = add(a)
    result["cpu"] = 99
    assert a == {"cpu": 1}


def test_subtract_keeps_only_the_left_resources_like_upstream() -> None:
    assert subtract({"cpu": 1000, "memory": 10}, {"cpu": 1500, GPU: 1000}) == {
        "cpu": -500,
        "memory": 10,
    }


def test_max_of_takes_the_largest_of_each_resource_in_any_list() -> None:
    assert max_of({"cpu": 1000, "memory": 5}, {"cpu": 3000}, {GPU: 1000}) == {
        "cpu": 3000,
        "memory": 5,
        GPU: 1000,
    }


def test_max_of_keeps_negative_values_when_alone() -> None:
    assert max_of({"cpu": -5}) == {"cpu": -5}


def test_max_of_nothing_is_empty() -> None:
    assert max_of() == {}


def test_min_of_takes_the_smallest_of_resources_present_in_every_list() -> None:
    assert min_of({"cpu": 1000}, {"cpu": 2000, GPU: 1000}) == {"cpu": 1000}
    assert min_of({"cpu": 3000, "memory": 7}, {"cpu": 2000, "memory": 9}) == {
        "cpu": 2000,
        "memory": 7,
    }


def test_min_of_nothing_is_empty() -> None:
    assert min_of() == {}


@pytest.mark.parametrize(
    ("r", "zero"),
    [
        ({}, True),
        ({"cpu": 0, "memory": 0}, True),
        ({"cpu": 0, "memory": 1}, False),
        ({"cpu": -1}, False),
    ],
)
def test_is_zero_only_when_every_quantity_is_zero(r: dict[str, int], zero: bool) -> None:
    assert is_zero(r) is zero


def test_merge_over_lets_override_keys_win() -> None:
    assert merge_over({"cpu": 1000, "memory": 5}, {"memory": 9, GPU: 1000}) == {
        "cpu": 1000,
        "memory": 9,
        GPU: 1000,
    }


# --- fits / exceeded -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("requests", "available", "expected"),
    [
        ({}, {}, True),
        ({"cpu": 1000}, {"cpu": 1000}, True),
        ({"cpu": 1001}, {"cpu": 1000}, False),
        ({"cpu": 500, "memory": 10}, {"cpu": 1000, "memory": 10}, True),
        ({"cpu": 500, "memory": 11}, {"cpu": 1000, "memory": 10}, False),
        ({GPU: 1000}, {"cpu": 1000}, False),  # missing from available counts as zero
        ({GPU: 0}, {"cpu": 1000}, True),  # a zero request of an unknown resource fits
        ({}, {"cpu": -1}, False),  # any negative available fails, even for nothing
        ({"cpu": 1}, {"cpu": 1000, "memory": -1}, False),
        ({"cpu": -5}, {}, True),  # negative requests are below zero available
    ],
)
def test_fits_follows_upstream_resources_fits(
    requests: dict[str, int], available: dict[str, int], expected: bool
) -> None:
    assert fits(requests, available) is expected


@pytest.mark.parametrize(
    ("requests", "available", "names"),
    [
        ({"cpu": 1000}, {"cpu": 1000}, []),
        (
            {"cpu": 1001, "memory": 11, "pods": 1},
            {"cpu": 1000, "memory": 10, "pods": 5},
            ["cpu", "memory"],
        ),
        ({GPU: 1000}, {}, [GPU]),
        ({"cpu": 1}, {"cpu": 10, "memory": -1}, ["memory"]),
    ],
)
def test_exceeded_names_what_breaks_fits(
    requests: dict[str, int], available: dict[str, int], names: list[str]
) -> None:
    assert exceeded(requests, available) == names


# --- properties ----------------------------------------------------------------------------

_names = st.sampled_from(["cpu", "memory", "pods", "ephemeral-storage", GPU])
_lists = st.dictionaries(_names, st.integers(-(10**22), 10**22), max_size=5)
_non_negative = st.dictionaries(_names, st.integers(0, 10**22), max_size=5)


@given(_lists, _lists)
def test_subtract_undoes_add(a: dict[str, int], b: dict[str, int]) -> None:
    result = subtract(add(a, b), b)
    assert {k: v for k, v in result.items() if k in a} == a
    assert all(v == 0 for k, v in result.items() if k not in a)


@given(_lists, _lists, _lists)
def test_add_is_commutative_and_associative(
    a: dict[str, int], b: dict[str, int], c: dict[str, int]
) -> None:
    assert add(a, b) == add(b, a)
    assert add(add(a, b), c) == add(a, add(b, c)) == add(a, b, c)


@given(_lists, _lists, _lists)
def test_functions_never_mutate_their_inputs(
    a: dict[str, int], b: dict[str, int], c: dict[str, int]
) -> None:
    before = copy.deepcopy((a, b, c))
    add(a, b, c)
    subtract(a, b)
    max_of(a, b, c)
    min_of(a, b, c)
    fits(a, b)
    exceeded(a, b)
    merge_over(a, b)
    format_resource_list(a)
    assert (a, b, c) == before


@given(_lists, _lists)
def test_exceeded_is_empty_exactly_when_fits(a: dict[str, int], b: dict[str, int]) -> None:
    assert (exceeded(a, b) == []) is fits(a, b)


@given(_non_negative, _non_negative, _non_negative)
def test_fits_is_monotonic(
    requests: dict[str, int], available: dict[str, int], extra: dict[str, int]
) -> None:
    if fits(requests, available):
        assert fits(requests, add(available, extra))
        smaller = {k: v - extra.get(k, 0) for k, v in requests.items()}
        assert fits(smaller, available)
    else:
        assert not fits(add(requests, extra), available)


@given(_non_negative, _non_negative)
def test_requests_fit_in_their_own_sum_with_more(a: dict[str, int], b: dict[str, int]) -> None:
    assert fits(a, add(a, b))


@given(_lists, _lists)
def test_max_of_and_min_of_bound_each_list(a: dict[str, int], b: dict[str, int]) -> None:
    high, low = max_of(a, b), min_of(a, b)
    for r in (a, b):
        assert all(high[k] >= v for k, v in r.items())
        assert all(low[k] <= r[k] for k in low)
