"""Kubernetes quantity parsing and canonical formatting (k8s.io/apimachinery resource)."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from karpenter_core.apis.quantity import (
    BINARY_SI,
    DECIMAL_EXPONENT,
    DECIMAL_SI,
    MAX_MILLI,
    MAX_UNITS,
    QuantityError,
    format_quantity,
    parse_quantity,
    parse_quantity_format,
)

KI = 1024
MI = KI**2
GI = KI**3


# --- parsing -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "milli"),
    [
        # plain numbers
        ("0", 0),
        ("1", 1000),
        ("42", 42000),
        ("007", 7000),
        # decimal SI suffixes
        ("1n", 1),  # 1e-9 rounds up to one milli
        ("1u", 1),
        ("1000000u", 1000),
        ("1m", 1),
        ("100m", 100),
        ("1k", 1000 * 10**3),
        ("1M", 1000 * 10**6),
        ("1G", 1000 * 10**9),
        ("1T", 1000 * 10**12),
        ("1P", 1000 * 10**15),
        ("1E", 1000 * 10**18),  # a bare E is exa, not an exponent
        # binary SI suffixes
        ("1Ki", 1000 * KI),
        ("1Mi", 1000 * MI),
        ("1Gi", 1000 * GI),
        ("1Ti", 1000 * KI**4),
        ("1Pi", 1000 * KI**5),
        ("7Ei", 1000 * 7 * KI**6),
        # decimal exponents
        ("1e3", 1000 * 10**3),
        ("1E3", 1000 * 10**3),
        ("1e+3", 1000 * 10**3),
        ("1E-3", 1),
        ("2.5e+2", 250_000),
        ("1e0", 1000),
        ("12e-1", 1200),
        # signs
        ("+1", 1000),
        ("-1", -1000),
        ("-100m", -100),
        ("+1.5Gi", 1500 * GI),
        ("-0", 0),
        # fractions
        ("0.5", 500),
        (".5", 500),
        ("1.", 1000),
        ("1.5", 1500),
        ("1.5Gi", 1500 * GI),
        ("0.1Ki", 102_400),
        ("0.25k", 250_000),
        ("1.000", 1000),
        ("0.0", 0),
    ],
)
def test_parse_quantity_accepts_every_kubernetes_form(text: str, milli: int) -> None:
    assert parse_quantity(text) == milli


@pytest.mark.parametrize(
    ("text", "milli"),
    [
        ("1.0001", 1001),
        ("0.1m", 1),
        ("1500u", 2),
        ("1001u", 2),
        ("1000u", 1),
        ("-1n", -1),  # away from zero, as Kubernetes rounds
        ("-1.0001", -1001),
        ("1e-999999", 1),
        ("0.0000000001", 1),  # finer than nano
        ("1.0000000001", 1001),
        ("0.0001Ki", 103),  # 0.1024 units
    ],
)
def test_parse_quantity_rounds_sub_milli_values_up_away_from_zero(text: str, milli: int) -> None:
    assert parse_quantity(text) == milli


@pytest.mark.parametrize(
    "text",
    ["10E", "9223372036854775808", "8Ei", "1e19", "1e99999", "1" + "0" * 5000],
)
def test_parse_quantity_caps_magnitude_at_max_int64_units(text: str) -> None:
    assert parse_quantity(text) == MAX_MILLI
    assert parse_quantity("-" + text) == -MAX_MILLI


def test_parse_quantity_keeps_max_int64_exactly() -> None:
    assert parse_quantity(str(MAX_UNITS)) == MAX_UNITS * 1000


def test_parse_quantity_is_exact_for_very_long_digit_strings() -> None:
    # longer than Python's default int() digit limit; 1111111111.111... units
    assert parse_quantity("1" * 5000 + "e-4990") == 1_111_111_111_112
    assert parse_quantity("0." + "0" * 5000 + "1") == 1


@pytest.mark.parametrize(
    ("text", "fmt"),
    [
        ("1", DECIMAL_SI),
        ("100m", DECIMAL_SI),
        ("1E", DECIMAL_SI),
        ("1Gi", BINARY_SI),
        ("0.5Ki", BINARY_SI),  # 512 units: not below one, stays binary
        ("0.0001Ki", DECIMAL_SI),  # between 0 and 1: Kubernetes switches to DecimalSI
        ("0Mi", BINARY_SI),
        ("1e3", DECIMAL_EXPONENT),
        ("1E-3", DECIMAL_EXPONENT),
    ],
)
def test_parse_quantity_format_reports_the_written_format(text: str, fmt: str) -> None:
    assert parse_quantity_format(text)[1] == fmt


@pytest.mark.parametrize(
    ("value", "milli"),
    [
        (3, 3000),
        (-2, -2000),
        (0, 0),
        (0.1, 100),  # read as its shortest decimal text, not as the binary float
        (1.5, 1500),
        (2.0, 2000),
        (1e-05, 1),
        (1e16, 10**19),
        (2**70, MAX_MILLI),
    ],
)
def test_parse_quantity_accepts_python_numbers(value: int | float, milli: int) -> None:
    assert parse_quantity(value) == milli


def test_parse_quantity_format_of_an_int_is_decimal_si() -> None:
    assert parse_quantity_format(5) == (5000, DECIMAL_SI)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "empty"),
        (" 1", "whitespace"),
        ("1 ", "whitespace"),
        ("1 Gi", "whitespace"),
        ("1\n", "whitespace"),
        ("1.2.3", "more than one decimal point"),
        ("Gi", "no number"),
        (".", "no number"),
        ("-", "no number"),
        ("m", "no number"),
        ("1Gb", 'unknown suffix "Gb"'),
        ("1GB", 'unknown suffix "GB"'),
        ("1K", 'unknown suffix "K"'),
        ("1mi", 'unknown suffix "mi"'),
        ("1x", 'unknown suffix "x"'),
        ("--1", "sign"),
        ("+-1", "sign"),
        ("1-", "sign"),
        ("1e", "exponent has no digits"),
        ("1e1.5", "whole number"),
        ("1ee3", "whole number"),
        ("1e99999999999999999999", "exponent is out of range"),
        ("\u0661", "no number"),  # only ASCII digits count
    ],
)
def test_parse_quantity_rejects_garbage_quoting_the_input(text: str, reason: str) -> None:
    with pytest.raises(QuantityError) as info:
        parse_quantity(text)
    message = str(info.value)
    assert reason in message
    assert f'"{text}"' in message.replace("\\n", "\n")


def test_parse_quantity_error_suggests_the_suffixes_meant() -> None:
    with pytest.raises(QuantityError, match=r'did you mean "Gi" .* or "G"'):
        parse_quantity("2Gb")


def test_parse_quantity_error_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="invalid quantity"):
        parse_quantity("abc")


def test_parse_quantity_raises_again_for_the_same_bad_input() -> None:
    for _ in range(2):
        with pytest.raises(QuantityError):
            parse_quantity("1Gb")


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (True, "expected a number or a string"),
        (None, "got NoneType"),
        ([1], "got list"),
        (float("nan"), "finite"),
        (float("inf"), "finite"),
    ],
)
def test_parse_quantity_rejects_other_types(value: object, reason: str) -> None:
    with pytest.raises(QuantityError, match=reason):
        parse_quantity(value)  # type: ignore[arg-type]


# --- formatting ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("milli", "fmt", "text"),
    [
        (0, DECIMAL_SI, "0"),
        (0, BINARY_SI, "0"),
        (0, DECIMAL_EXPONENT, "0"),
        # DecimalSI: largest suffix keeping the number whole; never a decimal point
        (1000, DECIMAL_SI, "1"),
        (100, DECIMAL_SI, "100m"),
        (1, DECIMAL_SI, "1m"),
        (1500, DECIMAL_SI, "1500m"),
        (1_500_000, DECIMAL_SI, "1500"),
        (15_000_000, DECIMAL_SI, "15k"),
        (1000 * 10**6, DECIMAL_SI, "1M"),
        (1000 * 10**9, DECIMAL_SI, "1G"),
        (1000 * 10**12, DECIMAL_SI, "1T"),
        (1000 * 10**15, DECIMAL_SI, "1P"),
        (1000 * 10**18, DECIMAL_SI, "1E"),
        (1000 * 10**21, DECIMAL_SI, "1000E"),  # beyond the largest suffix
        (1000 * GI, DECIMAL_SI, "1073741824"),
        (-1500, DECIMAL_SI, "-1500m"),
        (-15_000_000, DECIMAL_SI, "-15k"),
        # BinarySI: divide by 1024 while exact
        (1000 * GI, BINARY_SI, "1Gi"),
        (1000 * 1024 * MI, BINARY_SI, "1Gi"),
        (1000 * 1536 * MI, BINARY_SI, "1536Mi"),
        (1000 * 1025 * KI, BINARY_SI, "1025Ki"),
        (1000 * 2048 * KI, BINARY_SI, "2Mi"),
        (1000 * 1025, BINARY_SI, "1025"),
        (1000 * KI**6, BINARY_SI, "1Ei"),
        (1000 * KI**7, BINARY_SI, "1024Ei"),  # beyond the largest suffix
        (-1000 * GI, BINARY_SI, "-1Gi"),
        # BinarySI falls back to DecimalSI below 1024 and for fractional values
        (1000 * 1023, BINARY_SI, "1023"),
        (512_000, BINARY_SI, "512"),
        (100, BINARY_SI, "100m"),
        (1_024_500, BINARY_SI, "1024500m"),
        (1000 * 1000, BINARY_SI, "1k"),
        # DecimalExponent
        (1000, DECIMAL_EXPONENT, "1"),
        (1_000_000, DECIMAL_EXPONENT, "1e3"),
        (1500, DECIMAL_EXPONENT, "1500e-3"),
        (100, DECIMAL_EXPONENT, "100e-3"),
        (250_000, DECIMAL_EXPONENT, "250"),
        (15_000_000, DECIMAL_EXPONENT, "15e3"),
        (1000 * 10**21, DECIMAL_EXPONENT, "1e21"),
        (-1, DECIMAL_EXPONENT, "-1e-3"),
    ],
)
def test_format_quantity_writes_the_canonical_kubernetes_form(
    milli: int, fmt: str, text: str
) -> None:
    assert format_quantity(milli, fmt) == text


def test_format_quantity_defaults_to_decimal_si() -> None:
    assert format_quantity(2_000_000) == "2k"


def test_format_quantity_rejects_an_unknown_format() -> None:
    with pytest.raises(QuantityError, match='unknown quantity format "Binary"'):
        format_quantity(1000, "Binary")


@pytest.mark.parametrize("value", [1.5, "1", True, None])
def test_format_quantity_rejects_a_non_integer(value: object) -> None:
    with pytest.raises(QuantityError, match="integer number of milli-units"):
        format_quantity(value)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("written", "canonical"),
    [
        ("1024Mi", "1Gi"),
        ("1.5Gi", "1536Mi"),
        ("1000m", "1"),
        ("1.5k", "1500"),
        ("0100m", "100m"),
        ("+1", "1"),
        ("1e3", "1e3"),
        ("1000e0", "1e3"),
        ("0.5", "500m"),
        ("2048", "2048"),
        ("1n", "1m"),
    ],
)
def test_parse_then_format_canonicalises(written: str, canonical: str) -> None:
    assert format_quantity(*parse_quantity_format(written)) == canonical


@pytest.mark.parametrize(
    "text",
    [
        "0",
        "1m",
        "100m",
        "1",
        "1500m",
        "1500",
        "15k",
        "1M",
        "1G",
        "1T",
        "1P",
        "1E",
        "-1",
        "-100m",
        "1Ki",
        "1Gi",
        "1536Mi",
        "1025Ki",
        "5Ei",
        "-1Gi",
        "1e3",
        "1500e-3",
        "15e3",
        "1e-3",
        "9223372036854775807",
        "110",
    ],
)
def test_canonical_strings_format_back_unchanged(text: str) -> None:
    assert format_quantity(*parse_quantity_format(text)) == text


# --- properties ----------------------------------------------------------------------------

_SUFFIXES: dict[str, tuple[int, int]] = {
    **{
        s: (e, 0)
        for s, e in [
            ("n", -9),
            ("u", -6),
            ("m", -3),
            ("", 0),
            ("k", 3),
            ("M", 6),
            ("G", 9),
            ("T", 12),
            ("P", 15),
            ("E", 18),
        ]
    },
    **{
        s: (0, b)
        for s, b in [("Ki", 10), ("Mi", 20), ("Gi", 30), ("Ti", 40), ("Pi", 50), ("Ei", 60)]
    },
}


@st.composite
def quantity_cases(draw: st.DrawFn) -> tuple[str, int]:
    """A quantity string built from random parts, and its exact value in milli-units
    (computed independently with Fraction: rounded up away from zero, then capped)."""
    sign = draw(st.sampled_from(["", "+", "-"]))
    whole = draw(st.text("0123456789", max_size=25))
    fraction = draw(st.none() | st.text("0123456789", max_size=15))
    if not whole and not fraction:
        whole = "0"
    power10, power2 = 0, 0
    if draw(st.booleans()):
        suffix = draw(st.sampled_from(sorted(_SUFFIXES)))
        power10, power2 = _SUFFIXES[suffix]
    else:
        power10 = draw(st.integers(-30, 30))
        marker = draw(st.sampled_from(["e", "E"]))
        plus = "+" if power10 >= 0 and draw(st.booleans()) else ""
        suffix = f"{marker}{plus}{power10}"
    number = whole if fraction is None else f"{whole}.{fraction}"
    value = Fraction(f"{whole or '0'}.{fraction or '0'}") * Fraction(10) ** power10 * 2**power2
    milli = min(math.ceil(value * 1000), MAX_MILLI)
    return f"{sign}{number}{suffix}", (-milli if sign == "-" else milli)


@given(quantity_cases())
def test_parse_quantity_matches_exact_rational_reference(case: tuple[str, int]) -> None:
    text, milli = case
    assert parse_quantity(text) == milli


@given(quantity_cases())
def test_format_then_parse_round_trips_any_parsed_value(case: tuple[str, int]) -> None:
    milli, fmt = parse_quantity_format(case[0])
    assert parse_quantity(format_quantity(milli, fmt)) == milli


@given(
    st.integers(-MAX_MILLI, MAX_MILLI),
    st.sampled_from([DECIMAL_SI, BINARY_SI, DECIMAL_EXPONENT]),
)
def test_formatted_values_parse_back_and_are_fixed_points(milli: int, fmt: str) -> None:
    text = format_quantity(milli, fmt)
    parsed, parsed_fmt = parse_quantity_format(text)
    assert parsed == milli
    assert "." not in text
    # One canonicalisation may change the text: a BinarySI value that is no multiple of
    # 1024 is written without a suffix ("5000"), which parses as DecimalSI and is then
    # written "5k" -- as apimachinery's Quantity does. After that it is a fixed point.
    canonical = format_quantity(parsed, parsed_fmt)
    if fmt != BINARY_SI:
        assert canonical == text
    again, again_fmt = parse_quantity_format(canonical)
    assert again == milli
    assert format_quantity(again, again_fmt) == canonical


def test_a_binary_si_value_without_a_binary_suffix_canonicalises_as_decimal() -> None:
    assert format_quantity(5_000_000, BINARY_SI) == "5000"
    milli, fmt = parse_quantity_format("5000")
    assert (milli, fmt) == (5_000_000, DECIMAL_SI)
    assert format_quantity(milli, fmt) == "5k"


@given(st.floats(allow_nan=False, allow_infinity=False, min_value=-1e15, max_value=1e15))
def test_floats_parse_as_their_shortest_decimal_text(value: float) -> None:
    assert parse_quantity(value) == parse_quantity(repr(value))
