"""The requirements algebra: the scheduler's inner loop.

A :class:`Requirement` is the set of label values one key may take; a :class:`Requirements`
maps keys to them. Every placement decision (pod vs NodeClaim, NodeClaim vs instance type,
NodeClaim vs offering, pod vs existing node) is a handful of :meth:`Requirements.compatible`
/ :meth:`Requirements.intersects` calls, so this module is written for speed:

* a ``Requirement`` is immutable (read-only properties over private slots), so a
  ``Requirements.copy()`` is a shallow dict copy and requirements can be shared freely;
* values are ``frozenset``s and the ``In`` constructor (by far the most common) is a fast path;
* :meth:`Requirement.has_intersection` answers "do these overlap?" without building a set;
* failures are returned as :class:`RequirementsError` values whose text is only formatted when
  someone calls ``str()`` on them (the scheduler usually only needs "did it fail?").

Semantics follow upstream Karpenter (``pkg/scheduling/requirement.go``), quirks included;
each quirk is called out where it is implemented.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import ItemsView, Iterable, Iterator, KeysView, Mapping, ValuesView
from collections.abc import Set as AbstractSet
from typing import Any, NamedTuple

from karpenter_core.apis import labels as _labels

# --- operators ------------------------------------------------------------------------------
IN = "In"
NOT_IN = "NotIn"
EXISTS = "Exists"
DOES_NOT_EXIST = "DoesNotExist"
GT = "Gt"
LT = "Lt"
GTE = "Gte"
"""Karpenter-specific inclusive lower bound (``designs/gte-lte-operators.md``)."""
LTE = "Lte"
"""Karpenter-specific inclusive upper bound."""

OPERATORS: frozenset[str] = frozenset({IN, NOT_IN, EXISTS, DOES_NOT_EXIST, GT, LT, GTE, LTE})
NUMERIC_OPERATORS: frozenset[str] = frozenset({GT, LT, GTE, LTE})

MAX_INT64 = 2**63 - 1
MIN_INT64 = -(2**63)

ALLOW_UNDEFINED_WELL_KNOWN_LABELS: AbstractSet[str] = _labels.WELL_KNOWN_LABELS
"""Pass as ``allow_undefined`` so well-known keys may be missing on the receiver.

This is the live, provider-extensible set (not a copy), mirroring upstream's
``AllowUndefinedWellKnownLabels`` option: keys a provider registers later are honoured.
"""

_EMPTY: frozenset[str] = frozenset()
_INTEGER = re.compile(r"[+-]?[0-9]+")
_rng = random.Random()


def _atoi(value: str) -> int | None:
    """Parse like Go's ``strconv.Atoi`` on 64-bit: optional sign, ASCII digits, int64 range.

    Python's ``int()`` is more lenient (whitespace, underscores, non-ASCII digits), which would
    let values such as ``" 5"`` satisfy a ``Gt`` bound that upstream rejects.
    """
    if _INTEGER.fullmatch(value) is None:
        return None
    if len(value.lstrip("+-").lstrip("0")) > 19:  # beyond int64; int() refuses 4,300 digits
        return None
    n = int(value)
    if n < MIN_INT64 or n > MAX_INT64:
        return None
    return n


def _within_bounds(value: str, gte: int | None, lte: int | None) -> bool:
    if gte is None and lte is None:
        return True
    # Once a bound exists only integers can satisfy it.
    n = _atoi(value)
    if n is None:
        return False
    if gte is not None and n < gte:
        return False
    return not (lte is not None and n > lte)


def _go_quote(s: str) -> str:
    """Approximate Go's ``%q`` (a double-quoted, escaped string) for messages."""
    return json.dumps(s, ensure_ascii=False)


class Requirement:
    """The allowed values of one label key.

    ``has(v)`` is ``(v in values) XOR complement`` and, when ``gte``/``lte`` are set, ``v`` must
    be an integer within them. For a complement requirement ``values`` is the *excluded* set.
    Instances are immutable and hashable; build them with :meth:`new`.
    """

    __slots__ = ("_complement", "_gte", "_key", "_lte", "_min_values", "_values")

    _key: str
    _complement: bool
    _values: frozenset[str]
    _gte: int | None
    _lte: int | None
    _min_values: int | None

    def __init__(
        self,
        key: str,
        complement: bool,
        values: frozenset[str] = _EMPTY,
        gte: int | None = None,
        lte: int | None = None,
        min_values: int | None = None,
    ) -> None:
        """Low-level constructor taking the internal representation verbatim (no normalisation).

        Prefer :meth:`new`; this exists for tests and for code that already holds canonical
        parts (for example the result of an intersection).
        """
        self._key = key
        self._complement = complement
        self._values = values
        self._gte = gte
        self._lte = lte
        self._min_values = min_values

    # --- construction -------------------------------------------------------------------------
    @classmethod
    def new(
        cls,
        key: str,
        operator: str,
        values: Iterable[str] = (),
        min_values: int | None = None,
    ) -> Requirement:
        """Build a requirement from a node-selector expression.

        The key is normalised (``beta.kubernetes.io/arch`` -> ``kubernetes.io/arch``) and values
        pass through the provider's value normalisation. ``Gt n`` becomes ``gte = n + 1`` and
        ``Lt n`` becomes ``lte = n - 1`` so only inclusive bounds exist internally.

        Raises ``ValueError`` for an unknown operator or a numeric operator whose values are not
        exactly one integer.
        """
        if isinstance(values, str):
            raise ValueError(
                f"requirement {_go_quote(key)}: values must be a list of strings, got {values!r}"
            )
        key = _labels.NORMALIZED_LABELS.get(key, key)
        table = _labels.NORMALIZED_LABEL_VALUES.get(key)
        if operator == IN:  # the hot path
            if table:
                return cls(
                    key, False, frozenset(table.get(v, v) for v in values), None, None, min_values
                )
            return cls(key, False, frozenset(values), None, None, min_values)
        if operator == NOT_IN:
            if table:
                return cls(
                    key, True, frozenset(table.get(v, v) for v in values), None, None, min_values
                )
            return cls(key, True, frozenset(values), None, None, min_values)
        if operator == EXISTS:
            return cls(key, True, _EMPTY, None, None, min_values)
        if operator == DOES_NOT_EXIST:
            return cls(key, False, _EMPTY, None, None, min_values)
        if operator in NUMERIC_OPERATORS:
            vals = list(values)
            n = _atoi(vals[0]) if len(vals) == 1 and isinstance(vals[0], str) else None
            if n is None:
                raise ValueError(
                    f"requirement {_go_quote(key)}: operator {operator} needs exactly one "
                    f"integer value, got {vals!r}"
                )
            if operator == GT:
                if n == MAX_INT64:
                    # Nothing is greater than MaxInt. Upstream rebuilds a plain DoesNotExist
                    # here, dropping minValues [quirk, reproduced].
                    return cls(key, False, _EMPTY)
                return cls(key, True, _EMPTY, n + 1, None, min_values)
            if operator == LT:
                return cls(key, True, _EMPTY, None, n - 1, min_values)
            if operator == GTE:
                return cls(key, True, _EMPTY, n, None, min_values)
            return cls(key, True, _EMPTY, None, n, min_values)
        raise ValueError(
            f"requirement {_go_quote(key)}: unknown operator {_go_quote(str(operator))} "
            f"(expected one of In, NotIn, Exists, DoesNotExist, Gt, Lt, Gte, Lte)"
        )

    # --- read-only attributes -----------------------------------------------------------------
    @property
    def key(self) -> str:
        return self._key

    @property
    def complement(self) -> bool:
        return self._complement

    @property
    def values(self) -> frozenset[str]:
        """The raw value set: allowed values, or *excluded* values for a complement."""
        return self._values

    @property
    def gte(self) -> int | None:
        return self._gte

    @property
    def lte(self) -> int | None:
        return self._lte

    @property
    def min_values(self) -> int | None:
        return self._min_values

    # --- value semantics ----------------------------------------------------------------------
    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Requirement):
            return NotImplemented
        return (
            self._key == other._key
            and self._complement == other._complement
            and self._values == other._values
            and self._gte == other._gte
            and self._lte == other._lte
            and self._min_values == other._min_values
        )

    def __hash__(self) -> int:
        return hash(
            (self._key, self._complement, self._values, self._gte, self._lte, self._min_values)
        )

    def __repr__(self) -> str:
        return f"Requirement({self})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (
            Requirement,
            (self._key, self._complement, self._values, self._gte, self._lte, self._min_values),
        )

    # --- queries ------------------------------------------------------------------------------
    def has(self, value: str) -> bool:
        """True when ``value`` is allowed."""
        if (value in self._values) == self._complement:
            return False
        if self._gte is None and self._lte is None:
            return True
        return _within_bounds(value, self._gte, self._lte)

    def operator(self) -> str:
        """The node-selector operator this requirement reads as.

        Bounded requirements report ``Exists``/``NotIn``; the bounds print separately.
        """
        if self._complement:
            return NOT_IN if self._values else EXISTS
        return IN if self._values else DOES_NOT_EXIST

    def size(self) -> int:
        """How many values are allowed; complements are "practically infinite" (MaxInt64 based)."""
        if self._complement:
            return MAX_INT64 - len(self._values)
        return len(self._values)

    def any(self, rng: random.Random | None = None) -> str:
        """One allowed value, or ``""`` for ``DoesNotExist``.

        For ``In`` this is the smallest value (upstream picks an arbitrary member; we choose a
        deterministic one). For ``Exists``/``NotIn`` it is a random integer within the bounds
        (``[gte or 0, lte]``), which is how upstream materialises a custom label that a pod only
        requires to exist [quirk]. Unlike upstream we never return an excluded value.
        """
        if not self._complement:
            return min(self._values) if self._values else ""
        r = rng if rng is not None else _rng
        lte = self._lte
        if self._gte is not None:
            low = self._gte
        elif lte is not None:
            # Leave room below a small upper bound for every excluded value (``NotIn [0]``
            # with ``<= 0`` still admits -1), so the scan below always finds an admitted one.
            low = min(0, lte - len(self._values))
        else:
            low = 0
        high = lte if lte is not None else MAX_INT64 - 1
        if high < low:
            return ""
        for _ in range(64):
            candidate = str(r.randint(low, high))
            if candidate not in self._values:
                return candidate
        for n in range(low, min(high, low + len(self._values)) + 1):
            if str(n) not in self._values:
                return str(n)
        return ""

    # --- algebra ------------------------------------------------------------------------------
    def intersection(self, other: Requirement) -> Requirement:
        """The values allowed by both requirements (keeps this requirement's key).

        minValues becomes the larger of the two; bounds tighten; if they cross the result is
        ``DoesNotExist``. A non-complement result drops its bounds (they were already applied
        to the concrete values).
        """
        a_c = self._complement
        b_c = other._complement
        gte = self._gte
        o = other._gte
        if o is not None and (gte is None or o > gte):
            gte = o
        lte = self._lte
        o = other._lte
        if o is not None and (lte is None or o < lte):
            lte = o
        min_values = self._min_values
        o = other._min_values
        if o is not None and (min_values is None or o > min_values):
            min_values = o
        if gte is not None and lte is not None and gte > lte:
            return Requirement(self._key, False, _EMPTY, None, None, min_values)

        # frozensets are immutable, so an operand is shared instead of copied when the set
        # operation would not change it (e.g. anything intersected with a plain Exists).
        sv = self._values
        ov = other._values
        if a_c and b_c:
            values = (sv | ov) if sv and ov else (sv or ov)
        elif a_c:
            values = (ov - sv) if sv else ov
        elif b_c:
            values = (sv - ov) if ov else sv
        else:
            values = sv if sv is ov else sv & ov
        if values and (gte is not None or lte is not None):
            values = frozenset(v for v in values if _within_bounds(v, gte, lte))
        complement = a_c and b_c
        if not complement:
            gte = lte = None
        return Requirement(self._key, complement, values, gte, lte, min_values)

    def has_intersection(self, other: Requirement) -> bool:
        """Whether some value could satisfy both, without building any set.

        Exact unless both sides are complements: then the answer is True whenever the bounds
        do not cross, even if every value left inside them is excluded [quirk, reproduced].
        """
        if self._gte is None and self._lte is None and other._gte is None and other._lte is None:
            # Fast path (no numeric bounds anywhere): C-level set tests, no allocation.
            if self._complement:
                return other._complement or not other._values <= self._values
            if other._complement:
                return not self._values <= other._values
            return not self._values.isdisjoint(other._values)
        return self._has_intersection_bounded(other)

    def _has_intersection_bounded(self, other: Requirement) -> bool:
        gte = self._gte
        o = other._gte
        if o is not None and (gte is None or o > gte):
            gte = o
        lte = self._lte
        o = other._lte
        if o is not None and (lte is None or o < lte):
            lte = o
        if gte is not None and lte is not None and gte > lte:
            return False
        a_c = self._complement
        b_c = other._complement
        if a_c and b_c:
            return True
        unbounded = gte is None and lte is None
        if a_c or b_c:
            finite, excluded = (
                (other._values, self._values) if a_c else (self._values, other._values)
            )
            if unbounded:
                # C-level subset test: no allocation.
                return not finite <= excluded
            for v in finite:  # noqa: SIM110  (a plain loop allocates no generator)
                if v not in excluded and _within_bounds(v, gte, lte):
                    return True
            return False
        if unbounded:
            return not self._values.isdisjoint(other._values)
        small, large = (
            (self._values, other._values)
            if len(self._values) <= len(other._values)
            else (other._values, self._values)
        )
        for v in small:  # noqa: SIM110  (a plain loop allocates no generator)
            if v in large and _within_bounds(v, gte, lte):
                return True
        return False

    # --- serialisation ------------------------------------------------------------------------
    def to_node_selector_requirements(self) -> list[dict[str, Any]]:
        """The k8s node-selector form: one entry, or two (``Gte`` and ``Lte``) when both bounds
        are set. ``minValues`` is copied to every entry when set. NotIn values combined with a
        bound are dropped [quirk, reproduced]."""
        if self._gte is not None and self._lte is not None:
            return [
                self._entry(GTE, [str(self._gte)]),
                self._entry(LTE, [str(self._lte)]),
            ]
        return [self.to_node_selector_requirement()]

    def to_node_selector_requirement(self) -> dict[str, Any]:
        """A single node-selector entry (the lower bound wins when both bounds are set)."""
        if self._gte is not None:
            return self._entry(GTE, [str(self._gte)])
        if self._lte is not None:
            return self._entry(LTE, [str(self._lte)])
        if self._values:
            return self._entry(NOT_IN if self._complement else IN, sorted(self._values))
        return self._entry(EXISTS if self._complement else DOES_NOT_EXIST, None)

    def _entry(self, operator: str, values: list[str] | None) -> dict[str, Any]:
        entry: dict[str, Any] = {"key": self._key, "operator": operator}
        if values:
            entry["values"] = values
        if self._min_values is not None:
            entry["minValues"] = self._min_values
        return entry

    def __str__(self) -> str:
        op = self.operator()
        if op in (EXISTS, DOES_NOT_EXIST):
            s = f"{self._key} {op}"
        else:
            vals = sorted(self._values)
            if len(vals) > 5:
                vals = [*vals[:5], f"and {len(vals) - 5} others"]
            s = f"{self._key} {op} [{' '.join(vals)}]"
        if self._gte is not None:
            s += f" >={self._gte}"
        if self._lte is not None:
            s += f" <={self._lte}"
        if self._min_values is not None:
            s += f" minValues {self._min_values}"
        return s


def _exists(key: str) -> Requirement:
    return Requirement(key, True, _EMPTY)


# --- errors -------------------------------------------------------------------------------------
# The error values are NamedTuples rather than attrs classes: the scheduler builds one on every
# failed check (most checks fail), and a frozen attrs instance costs several times more to create.
class BadKeyError(NamedTuple):
    """One key whose incoming and existing requirements do not overlap."""

    key: str
    incoming: Requirement
    existing: Requirement

    def __str__(self) -> str:
        return f"key {self.key}, {self.incoming} not in {self.existing}"


class RequirementsError(NamedTuple):
    """Why two requirement sets are not compatible; formatted only when printed.

    Either ``undefined_key`` is set (the incoming side constrains a key the receiver does not
    define) or ``bad_keys`` lists every shared key without a common value.
    """

    undefined_key: str | None = None
    hint: str | None = None
    bad_keys: tuple[BadKeyError, ...] = ()

    @property
    def keys(self) -> tuple[str, ...]:
        """The label keys at fault."""
        if self.undefined_key is not None:
            return (self.undefined_key,)
        return tuple(b.key for b in self.bad_keys)

    def __str__(self) -> str:
        if self.undefined_key is not None:
            hint = f" (typo of {_go_quote(self.hint)}?)" if self.hint is not None else ""
            return f"label {_go_quote(self.undefined_key)} does not have known values{hint}"
        return "; ".join(str(b) for b in self.bad_keys)


# Direct tuple construction skips the generated keyword-handling ``__new__`` (hot path).
_new_bad_key = tuple.__new__
_new_requirements_error = tuple.__new__


def _suffix(key: str) -> str:
    _, sep, after = key.partition("/")
    return after if sep else key


def _label_hint(
    receiver: Mapping[str, Requirement], key: str, allow_undefined: AbstractSet[str]
) -> str | None:
    """Suggest a likely intended key for an unknown one (first the allowed-undefined keys, then
    the receiver's): a key containing it or ending in its name part, as upstream. Upstream
    takes the first such key in map order; here the best one, so the message does not
    depend on which providers are installed: one whose name part is the same (``zone`` ->
    ``topology.kubernetes.io/zone``) before one containing the key (``.../zone-id``),
    Kubernetes' and Karpenter's own keys before providers', then by name."""
    suffix = _suffix(key)
    for candidates in (allow_undefined, receiver):
        ranked = []
        for known in candidates:
            if _suffix(known) == suffix:
                tier = 0
            elif key in known:
                tier = 1
            elif known.endswith(suffix):
                tier = 2
            else:
                continue
            ranked.append((tier, known not in _labels.CORE_WELL_KNOWN_LABELS, known))
        if ranked:
            return min(ranked)[2]
    return None


# --- Requirements ---------------------------------------------------------------------------------
class Requirements:
    """A mutable map from label key to :class:`Requirement`.

    ``add`` intersects with what is already there, ``get`` of a missing key is an unconstrained
    ``Exists``, and ``copy`` is a cheap shallow copy (requirements are immutable).
    """

    __slots__ = ("_reqs",)

    _reqs: dict[str, Requirement]

    def __init__(self, *requirements: Requirement) -> None:
        self._reqs = {}
        if requirements:
            self.add(*requirements)

    # --- builders -----------------------------------------------------------------------------
    @classmethod
    def from_node_selector_requirements(cls, requirements: Iterable[Any]) -> Requirements:
        """Build from node-selector requirement dicts (``key``/``operator``/``values``/
        ``minValues``) or objects with ``key``/``operator``/``values``/``min_values``
        attributes (``NodeSelectorRequirementWithMinValues``).

        Raises ``ValueError`` naming the bad entry when one is malformed.
        """
        r = cls()
        for i, item in enumerate(requirements):
            if isinstance(item, Mapping):
                key = item.get("key")
                operator = item.get("operator")
                values = item.get("values") or ()
                min_values = item.get("minValues")
            else:
                key = getattr(item, "key", None)
                operator = getattr(item, "operator", None)
                values = getattr(item, "values", None) or ()
                min_values = getattr(item, "min_values", None)
            if not isinstance(key, str):
                raise ValueError(f"requirement [{i}]: key must be a string, got {key!r}")
            if not isinstance(operator, str):
                raise ValueError(
                    f"requirement [{i}] ({_go_quote(key)}): operator must be a string, got {operator!r}"
                )
            if isinstance(values, str) or not all(isinstance(v, str) for v in values):
                raise ValueError(
                    f"requirement [{i}] ({_go_quote(key)}): values must be a list of strings, got {values!r}"
                )
            if min_values is not None and (
                not isinstance(min_values, int) or isinstance(min_values, bool)
            ):
                raise ValueError(
                    f"requirement [{i}] ({_go_quote(key)}): minValues must be an integer, got {min_values!r}"
                )
            r.add(Requirement.new(key, operator, values, min_values))
        return r

    @classmethod
    def from_labels(cls, labels: Mapping[str, str] | None) -> Requirements:
        """Each label becomes ``key In [value]``."""
        r = cls()
        if labels:
            r.add(*(Requirement.new(k, IN, (v,)) for k, v in labels.items()))
        return r

    # --- mapping protocol ---------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._reqs)

    def __iter__(self) -> Iterator[str]:
        return iter(self._reqs)

    def __contains__(self, key: object) -> bool:
        return key in self._reqs

    def __getitem__(self, key: str) -> Requirement:
        """The stored requirement (``KeyError`` when missing; see :meth:`get`)."""
        return self._reqs[key]

    def __setitem__(self, key: str, requirement: Requirement) -> None:
        """Replace (not intersect) the requirement for ``key``."""
        self._reqs[key] = requirement

    def __delitem__(self, key: str) -> None:
        del self._reqs[key]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Requirements):
            return NotImplemented
        return self._reqs == other._reqs

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        return f"Requirements({self})"

    def keys(self) -> KeysView[str]:
        return self._reqs.keys()

    def values(self) -> ValuesView[Requirement]:
        return self._reqs.values()

    def items(self) -> ItemsView[str, Requirement]:
        return self._reqs.items()

    # --- operations ---------------------------------------------------------------------------
    def add(self, *requirements: Requirement) -> None:
        """Add requirements, intersecting with any existing one for the same key."""
        reqs = self._reqs
        for r in requirements:
            existing = reqs.get(r._key)
            reqs[r._key] = r if existing is None else r.intersection(existing)

    def get(self, key: str) -> Requirement:
        """The requirement for ``key``; an unconstrained ``Exists`` when there is none."""
        r = self._reqs.get(key)
        return r if r is not None else _exists(key)

    def has(self, key: str) -> bool:
        """Literal presence of ``key`` (``get`` never fails)."""
        return key in self._reqs

    def copy(self) -> Requirements:
        new = Requirements.__new__(Requirements)
        new._reqs = self._reqs.copy()
        return new

    def labels(self) -> dict[str, str]:
        """``{key: value}`` for every key pinned to exactly one value (``In [v]``)."""
        return {
            k: next(iter(r._values))
            for k, r in self._reqs.items()
            if not r._complement and len(r._values) == 1
        }

    def has_min_values(self) -> bool:
        return any(r._min_values is not None for r in self._reqs.values())

    def to_node_selector_requirements(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for r in self._reqs.values():
            out.extend(r.to_node_selector_requirements())
        return out

    def __str__(self) -> str:
        """Sorted, comma-separated; restricted keys (hostname) are left out."""
        restricted = _labels.RESTRICTED_LABELS
        return ", ".join(sorted(str(r) for k, r in self._reqs.items() if k not in restricted))

    # --- compatibility ------------------------------------------------------------------------
    def intersects(self, incoming: Requirements) -> RequirementsError | None:
        """Check every key both sides define has a common value; keys on one side are ignored.

        A non-overlapping key is still accepted when both sides read as ``NotIn`` or
        ``DoesNotExist`` (both only say what must *not* be there).
        """
        mine = self._reqs
        theirs = incoming._reqs
        bad: list[BadKeyError] | None = None
        if len(mine) <= len(theirs):
            for key, existing in mine.items():
                inc = theirs.get(key)
                if inc is None or existing.has_intersection(inc):
                    continue
                # Both NotIn/DoesNotExist (operator NotIn iff complement with values,
                # DoesNotExist iff neither; so complement == bool(values)): accepted.
                if inc._complement == bool(inc._values) and existing._complement == bool(
                    existing._values
                ):
                    continue
                if bad is None:
                    bad = []
                bad.append(_new_bad_key(BadKeyError, (key, inc, existing)))
        else:
            for key, inc in theirs.items():
                found = mine.get(key)
                if found is None or found.has_intersection(inc):
                    continue
                if inc._complement == bool(inc._values) and found._complement == bool(
                    found._values
                ):
                    continue
                if bad is None:
                    bad = []
                bad.append(_new_bad_key(BadKeyError, (key, inc, found)))
        if bad is None:
            return None
        if len(bad) > 1:
            bad.sort(key=_by_key)
        return _new_requirements_error(RequirementsError, (None, None, tuple(bad)))

    def compatible(
        self, incoming: Requirements, allow_undefined: AbstractSet[str] = _EMPTY
    ) -> RequirementsError | None:
        """Whether ``incoming`` can be met by this receiver.

        Every key ``incoming`` constrains must be defined here, unless it is in
        ``allow_undefined`` or ``incoming`` only excludes values (``NotIn``/``DoesNotExist``);
        the first such key fails with ``label "K" does not have known values`` (plus a typo
        hint). Then shared keys must intersect (:meth:`intersects`).
        """
        mine = self._reqs
        for key, inc in incoming._reqs.items():
            if key in mine or key in allow_undefined:
                continue
            if inc._complement:
                if inc._values:  # NotIn
                    continue
            elif not inc._values:  # DoesNotExist
                continue
            return RequirementsError(
                undefined_key=key, hint=_label_hint(mine, key, allow_undefined)
            )
        return self.intersects(incoming)

    def is_compatible(
        self, incoming: Requirements, allow_undefined: AbstractSet[str] = _EMPTY
    ) -> bool:
        return self.compatible(incoming, allow_undefined) is None


def _by_key(b: BadKeyError) -> str:
    return b.key


# --- pods ---------------------------------------------------------------------------------------
def _term_requirements(term: Any, where: str) -> list[Requirement]:
    if term is None:
        return []
    if not isinstance(term, Mapping):
        raise ValueError(f"{where}: expected a node selector term mapping, got {term!r}")
    exprs = term.get("matchExpressions") or []
    if not isinstance(exprs, list):
        raise ValueError(f"{where}.matchExpressions: expected a list, got {exprs!r}")
    try:
        return list(Requirements.from_node_selector_requirements(exprs).values())
    except ValueError as e:
        raise ValueError(f"{where}.matchExpressions: {e}") from None


_NA = "affinity.nodeAffinity"
_PREFERRED = f"{_NA}.preferredDuringSchedulingIgnoredDuringExecution"
_REQUIRED = f"{_NA}.requiredDuringSchedulingIgnoredDuringExecution"


def _weight(term: Any, i: int) -> int:
    weight = term.get("weight", 0) if isinstance(term, Mapping) else None
    if not isinstance(weight, int) or isinstance(weight, bool):
        raise ValueError(f"{_PREFERRED}[{i}].weight: expected an integer, got {weight!r}")
    return weight


def _pod_requirements(
    node_selector: Mapping[str, str] | None, affinity: Mapping[str, Any] | None, preferred: bool
) -> Requirements:
    if node_selector is not None and not isinstance(node_selector, Mapping):
        raise ValueError(f"nodeSelector: expected a mapping, got {node_selector!r}")
    reqs = Requirements.from_labels(node_selector)
    if not affinity:
        return reqs
    if not isinstance(affinity, Mapping):
        raise ValueError(f"affinity: expected a mapping, got {affinity!r}")
    node_affinity = affinity.get("nodeAffinity")
    if not node_affinity:
        return reqs
    if not isinstance(node_affinity, Mapping):
        raise ValueError(f"{_NA}: expected a mapping, got {node_affinity!r}")
    if preferred:
        terms = node_affinity.get("preferredDuringSchedulingIgnoredDuringExecution")
        if terms is None:
            terms = []
        if not isinstance(terms, list):
            raise ValueError(f"{_PREFERRED}: expected a list, got {terms!r}")
        if terms:
            # The heaviest preference is treated as required until relaxation removes it.
            # Stable sort: among equal weights the first listed wins (Go's sort is unstable).
            weights = [_weight(t, i) for i, t in enumerate(terms)]
            best = max(range(len(terms)), key=lambda i: (weights[i], -i))
            reqs.add(
                *_term_requirements(
                    terms[best].get("preference"), f"{_PREFERRED}[{best}].preference"
                )
            )
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    if required:
        if not isinstance(required, Mapping):
            raise ValueError(f"{_REQUIRED}: expected a mapping, got {required!r}")
        terms = required.get("nodeSelectorTerms")
        if terms is None:
            terms = []
        if not isinstance(terms, list):
            raise ValueError(f"{_REQUIRED}.nodeSelectorTerms: expected a list, got {terms!r}")
        if terms:
            # Only the first OR-term; later terms are reached through relaxation.
            reqs.add(*_term_requirements(terms[0], f"{_REQUIRED}.nodeSelectorTerms[0]"))
    return reqs


def pod_requirements(
    node_selector: Mapping[str, str] | None, affinity: Mapping[str, Any] | None
) -> Requirements:
    """A pod's requirements with its heaviest preferred node-affinity term treated as required:
    nodeSelector + heaviest preference + first required node-selector term."""
    return _pod_requirements(node_selector, affinity, preferred=True)


def strict_pod_requirements(
    node_selector: Mapping[str, str] | None, affinity: Mapping[str, Any] | None
) -> Requirements:
    """A pod's true requirements only: nodeSelector + first required node-selector term."""
    return _pod_requirements(node_selector, affinity, preferred=False)


def has_preferred_node_affinity(affinity: Mapping[str, Any] | None) -> bool:
    """Whether the pod has any preferred node-affinity term (so relaxation can drop one)."""
    if not affinity:
        return False
    node_affinity = affinity.get("nodeAffinity") or {}
    return bool(node_affinity.get("preferredDuringSchedulingIgnoredDuringExecution"))
