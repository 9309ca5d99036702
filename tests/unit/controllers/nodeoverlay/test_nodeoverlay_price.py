"""The NodeOverlay price maths (spec apis §4, upstream ``cloudprovider.AdjustedPrice``):
empty keeps the price, an unsigned value replaces it, ``±x%`` scales, ``±x`` adds, and the
result never goes below zero."""

from __future__ import annotations

import pytest

from karpenter_core.cloudprovider import overlay
from karpenter_core.testing import fakecatalog


@pytest.mark.parametrize(
    ("price", "change", "expected"),
    [
        # empty: unchanged
        (1.0, "", 1.0),
        (0.37, "", 0.37),
        # unsigned: replaces the price
        (1.0, "80", 80.0),
        (1.0, "13234.223", 13234.223),
        (5.0, "0", 0.0),
        (0.0, "2.5", 2.5),
        # signed delta: p + delta
        (1.0, "+0.5", 1.5),
        (1.02, "+1000", 1001.02),
        (1.0, "-0.25", 0.75),
        (1.0, "+.5", 1.5),
        # signed percentage: p * (1 + pct / 100)
        (2.0, "+10%", 2.2),
        (2.0, "-10%", 1.8),
        (2.0, "+150%", 5.0),
        (2.0, "-99.5%", 0.01),
        (2.0, "-100%", 0.0),
        # clamped at zero
        (1.0, "-5", 0.0),
        (0.1, "-0.10000001", 0.0),
    ],
)
def test_adjusted_price(price: float, change: str, expected: float) -> None:
    assert overlay.adjusted_price(price, change) == pytest.approx(expected)


def test_adjusted_price_never_goes_negative() -> None:
    for change in ("-1", "-1000", "-100%", "-0.5"):
        assert overlay.adjusted_price(0.4, change) >= 0.0


def test_a_malformed_change_is_a_value_error_naming_it() -> None:
    with pytest.raises(ValueError, match="'\\+abc'"):
        overlay.adjusted_price(1.0, "+abc")


def test_a_price_overlay_copies_the_offering_and_marks_it() -> None:
    original = fakecatalog.offering("spot", "test-zone-1", 1.0)
    priced = original.with_price_overlay("+10%")
    assert priced is not original
    assert priced.price == pytest.approx(1.1)
    assert priced.is_price_overlaid()
    assert not original.is_price_overlaid() and original.price == 1.0
    assert priced.requirements is original.requirements
