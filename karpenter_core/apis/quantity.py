"""Kubernetes resource quantities as exact integers in milli-units.

Every quantity in the project ("100m" CPU, "1Gi" memory, "110" pods) is held as a plain
``int`` counting thousandths of the unit: ``"1"`` is 1000, ``"100m"`` is 100 and ``"1Gi"``
is 1073741824000. One integer type for every resource keeps the scheduler's inner loop to
integer comparisons and additions, with no per-call parsing and no floating point error.

Parsing follows ``k8s.io/apimachinery/pkg/api/resource`` (``ParseQuantity``):

* grammar: optional sign, a decimal number (``1``, ``1.5``, ``.5``, ``1.``), then an
  optional suffix -- decimal SI (``n u m k M G T P E``), binary SI (``Ki Mi Gi Ti Pi Ei``)
  or a decimal exponent (``e3``, ``E-3``, ``e+2``);
* values are computed exactly and rounded *up* (away from zero), as Kubernetes rounds any
  non-zero amount up to its smallest representable step: here the step is one milli, so
  ``"1n"`` becomes 1 (one milli-unit), never 0;
* magnitudes above 2^63-1 units are capped there, as Kubernetes caps them;
* the format (DecimalSI, BinarySI, DecimalExponent) is remembered so values can be written
  back in the form the user chose; a BinarySI value strictly between 0 and 1 becomes
  DecimalSI, as upstream does.

Formatting follows ``Quantity.String()`` for a quantity that carries no cached original
text: the canonical form, which never contains a decimal point (``1.5`` is ``"1500m"``,
``1536Mi`` stays ``"1536Mi"``, ``1024Mi`` becomes ``"1Gi"``).
"""

from __future__ import annotations

import functools
import json
import math
import re

from karpenter_core.apis.limits import shown_repr

DECIMAL_SI = "DecimalSI"
BINARY_SI = "BinarySI"
DECIMAL_EXPONENT = "DecimalExponent"
FORMATS = frozenset({DECIMAL_SI, BINARY_SI, DECIMAL_EXPONENT})

# Kubernetes caps any parsed magnitude at the largest int64, in whole units.
MAX_UNITS = 2**63 - 1
MAX_MILLI = MAX_UNITS * 1000

# suffix -> (power of ten, power of two)
_DECIMAL_SUFFIXES: dict[str, int] = {
    "n": -9,
    "u": -6,
    "m": -3,
    "": 0,
    "k": 3,
    "M": 6,
    "G": 9,
    "T": 12,
    "P": 15,
    "E": 18,
}
_BINARY_SUFFIXES: dict[str, int] = {
    "Ki": 10,
    "Mi": 20,
    "Gi": 30,
    "Ti": 40,
    "Pi": 50,
    "Ei": 60,
}
# exponent (a multiple of 3) -> suffix, for the canonical DecimalSI form (milli is finest)
_DECIMAL_SUFFIX_FOR: dict[int, str] = {exp: s for s, exp in _DECIMAL_SUFFIXES.items() if exp >= -3}
_BINARY_SUFFIX_FOR: tuple[str, ...] = ("", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei")

_NUMBER = re.compile(r"([+-]?)([0-9]*)(?:\.([0-9]*))?(.*)", re.DOTALL)
_EXPONENT = re.compile(r"[eE]([+-]?[0-9]+)")
_VALID_SUFFIXES = "n, u, m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei or an exponent such as e3"
# Python refuses int() on very long digit strings; convert longer ones piecewise.
_INT_CHUNK = 4000
_NANO_PER_MILLI = 10**6


class QuantityError(ValueError):
    """A value that is not a Kubernetes quantity; the message quotes it and says why."""


def _quote(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def _error(text: str, why: str) -> QuantityError:
    return QuantityError(f"invalid quantity {_quote(text)}: {why}")


def _digits_to_int(digits: str) -> int:
    if len(digits) <= _INT_CHUNK:
        return int(digits)
    value = 0
    for start in range(0, len(digits), _INT_CHUNK):
        chunk = digits[start : start + _INT_CHUNK]
        value = value * 10 ** len(chunk) + int(chunk)
    return value


def _unknown_suffix(text: str, suffix: str) -> QuantityError:
    if suffix[0] == ".":
        return _error(text, "more than one decimal point")
    if suffix[0] in "+-":
        return _error(text, "the sign must come first, and only once")
    if suffix[0] in "eE" and len(suffix) > 1:
        return _error(text, "the exponent must be a whole number, such as e3 or e-3")
    if suffix == "e":  # a bare "E" is the exa suffix, so only "e" gets here
        return _error(text, "the exponent has no digits; write e.g. e3 or e-3")
    hint = ""
    letter = suffix[0].upper()
    if letter in "KMGTPE":
        decimal = "k" if letter == "K" else letter
        hint = f' (did you mean "{letter}i" for 2^n or "{decimal}" for 10^n?)'
    return _error(text, f"unknown suffix {_quote(suffix)}; use one of {_VALID_SUFFIXES}{hint}")


def _parse_text(text: str) -> tuple[int, str]:
    """Parse one quantity string to (milli-units, format); see the module docstring."""
    if not text:
        raise _error(text, "it is empty")
    if any(c.isspace() for c in text):
        raise _error(text, "it must not contain whitespace")
    match = _NUMBER.fullmatch(text)
    assert match is not None  # every string matches: all parts are optional
    sign, whole, fraction, suffix = match.groups()
    fraction = fraction or ""
    if not whole and not fraction:
        if suffix[:1] in ("+", "-"):
            raise _error(text, "the sign must come first, and only once")
        raise _error(text, "it has no number; write e.g. 1, 0.5 or .5 before any suffix")

    power10 = 0
    power2 = 0
    if suffix in _DECIMAL_SUFFIXES:
        power10 = _DECIMAL_SUFFIXES[suffix]
        fmt = DECIMAL_SI
    elif suffix in _BINARY_SUFFIXES:
        power2 = _BINARY_SUFFIXES[suffix]
        fmt = BINARY_SI
    else:
        exponent = _EXPONENT.fullmatch(suffix)
        if exponent is None:
            raise _unknown_suffix(text, suffix)
        digits = exponent.group(1)
        if len(digits.lstrip("+-").lstrip("0")) > 19 or abs(int(digits)) > MAX_UNITS:
            raise _error(text, "the exponent is out of range")
        power10 = int(digits)
        fmt = DECIMAL_EXPONENT

    # value = mantissa * 10**power10 * 2**power2, with no leading or trailing zeros
    digits = (whole + fraction).lstrip("0")
    mantissa = digits.rstrip("0")
    if not mantissa:
        return 0, fmt
    power10 += len(digits) - len(mantissa) - len(fraction)

    # Kubernetes rounds to nano (up, away from zero) and caps at MAX_UNITS; the value in
    # nano-units decides the BinarySI-below-one rule, then milli rounds up again.
    if len(mantissa) - 1 + power10 >= 19:  # at least 10**19 units: over the cap
        nano = MAX_UNITS * 10**9
    else:
        shift = power10 + 9
        if shift >= 0:
            nano = (_digits_to_int(mantissa) * 10**shift) << power2
        elif -shift > len(mantissa) + 19:  # far below one nano (2**60 < 10**19)
            nano = 1
        else:
            quotient, remainder = divmod(_digits_to_int(mantissa) << power2, 10**-shift)
            nano = quotient + (1 if remainder else 0)
        nano = min(nano, MAX_UNITS * 10**9)
    if fmt == BINARY_SI and nano < 10**9:
        fmt = DECIMAL_SI
    milli = -(-nano // _NANO_PER_MILLI)
    return (-milli if sign == "-" else milli), fmt


_parse_text_cached = functools.lru_cache(maxsize=8192)(_parse_text)


def parse_quantity_format(value: str | int | float) -> tuple[int, str]:
    """Parse a quantity and report the format it was written in.

    Strings are parsed as Kubernetes does. Python ints are whole units (DecimalSI); floats
    are read from their shortest decimal text (``0.1`` is exactly 100 milli-units), the way
    Kubernetes reads a JSON number. Booleans, NaN, infinities and other types are rejected.
    """
    if isinstance(value, str):
        return _parse_text_cached(value)
    if isinstance(value, bool):
        raise QuantityError(f"invalid quantity {shown_repr(value)}: expected a number or a string")
    if isinstance(value, int):
        units = min(abs(value), MAX_UNITS)
        return (-units if value < 0 else units) * 1000, DECIMAL_SI
    if isinstance(value, float):
        if not math.isfinite(value):
            raise QuantityError(f"invalid quantity {shown_repr(value)}: expected a finite number")
        return _parse_text_cached(repr(value))
    raise QuantityError(
        f"invalid quantity {shown_repr(value)}: expected a number or a string, got {type(value).__name__}"
    )


def parse_quantity(value: str | int | float) -> int:
    """Parse a quantity to an exact integer number of milli-units ("1" -> 1000)."""
    return parse_quantity_format(value)[0]


def format_quantity(milli: int, fmt: str = DECIMAL_SI) -> str:
    """Write milli-units in the canonical Kubernetes form for ``fmt``.

    BinarySI is used only for whole numbers of at least 1024 in magnitude (below that, or
    with a fractional part, Kubernetes writes DecimalSI instead). The result never has a
    decimal point: the number is scaled to the largest suffix that keeps it whole. Values
    beyond the largest suffix use it with a longer number (``"1000E"``, ``"1024Ei"``).
    """
    if fmt not in FORMATS:
        raise QuantityError(
            f"unknown quantity format {_quote(str(fmt))}; use one of {', '.join(sorted(FORMATS))}"
        )
    if isinstance(milli, bool) or not isinstance(milli, int):
        raise QuantityError(
            f"quantity must be an integer number of milli-units, got {shown_repr(milli)}"
        )
    if milli == 0:
        return "0"
    sign = "-" if milli < 0 else ""
    amount = -milli if milli < 0 else milli

    if fmt == BINARY_SI:
        if amount >= 1024 * 1000 and amount % 1000 == 0:
            units = amount // 1000
            step = 0
            while units % 1024 == 0 and step < len(_BINARY_SUFFIX_FOR) - 1:
                units //= 1024
                step += 1
            return f"{sign}{units}{_BINARY_SUFFIX_FOR[step]}"
        fmt = DECIMAL_SI

    exponent = -3
    while amount % 10 == 0:
        amount //= 10
        exponent += 1
    down = exponent % 3  # lower the exponent to a multiple of three
    amount *= 10**down
    exponent -= down
    if fmt == DECIMAL_EXPONENT:
        return f"{sign}{amount}" if exponent == 0 else f"{sign}{amount}e{exponent}"
    if exponent > 18:
        amount *= 10 ** (exponent - 18)
        exponent = 18
    return f"{sign}{amount}{_DECIMAL_SUFFIX_FOR[exponent]}"
