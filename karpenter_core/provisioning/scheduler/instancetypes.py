"""Per-solve views of instance types and the cached requirement checks over them.

Filtering instance types is the solver's hottest loop (spec scheduling.md §7.2, §8.7). Two
facts make it cheap: an instance type's compatibility with a NodeClaim's requirements (and
which of its offering groups are compatible) depends only on those requirements, so it is
cached per requirement *signature*; and allocatable is computed once per type as integers.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from karpenter_core.apis.labels import LABEL_HOSTNAME, WELL_KNOWN_LABELS
from karpenter_core.provisioning.scheduler import resourcelist as rl

# A requirement signature: the requirement values except the per-NodeClaim hostname, which
# neither instance types nor offerings ever define, so it cannot change a compatibility answer.
Signature = frozenset[Any]


def signature(reqs: Any) -> Signature:
    return frozenset(r for k, r in reqs.items() if k != LABEL_HOSTNAME)


class AllocGroup:
    """Offerings sharing one allocatable (base, or one capacity/overhead override)."""

    __slots__ = ("allocatable", "nonnegative", "offerings")

    def __init__(self, allocatable: Mapping[str, int], offerings: Sequence[Any]) -> None:
        self.allocatable = dict(allocatable)
        self.nonnegative = all(v >= 0 for v in self.allocatable.values())
        self.offerings = tuple(offerings)


def _alloc_groups(it: Any) -> tuple[AllocGroup, ...]:
    method = getattr(it, "allocatable_offerings_list", None)
    groups: list[AllocGroup] = []
    if callable(method):
        for g in method():
            if isinstance(g, tuple):
                alloc, offerings = g
            else:
                alloc, offerings = g.allocatable, g.offerings
            groups.append(AllocGroup(alloc, offerings))
        return tuple(groups)
    alloc_attr = it.allocatable
    alloc = alloc_attr() if callable(alloc_attr) else alloc_attr
    return (AllocGroup(alloc, [o for o in it.offerings if o.available]),)


class ITInfo:
    """One instance type as the solver sees it: integers, offering groups, a stable index."""

    __slots__ = ("capacity", "groups", "index", "it", "max_alloc", "name", "requirements")

    def __init__(self, it: Any, index: int) -> None:
        self.it = it
        self.index = index
        self.name: str = it.name
        self.requirements = it.requirements
        self.capacity: dict[str, int] = dict(it.capacity)
        self.groups = _alloc_groups(it)
        self.max_alloc = rl.max_of(*(g.allocatable for g in self.groups)) if self.groups else {}

    def __repr__(self) -> str:
        return f"ITInfo({self.name})"


class CompatEntry:
    """Whether a type intersects some requirements, and which offering groups are compatible."""

    __slots__ = ("compatible", "groups")

    def __init__(self, compatible: bool, groups: tuple[int, ...]) -> None:
        self.compatible = compatible
        self.groups = groups


class InstanceTypeIndex:
    """Wraps every instance type of a solve once, and caches compatibility by signature."""

    def __init__(self) -> None:
        self._by_id: dict[int, ITInfo] = {}
        self._cache: dict[Signature, dict[int, CompatEntry]] = {}
        self._prices: dict[Signature, dict[ITInfo, float]] = {}
        self._capacity_types: dict[Signature, dict[ITInfo, tuple[str, ...]]] = {}
        self._flags: dict[tuple[Signature, int], tuple[list[ITInfo], list[bool]]] = {}
        # Interned NodeClaim signatures (template id, requirement signature) -> int token.
        self.signature_tokens: dict[tuple[int, Signature], int] = {}
        self.allow_undefined = frozenset(WELL_KNOWN_LABELS)
        # Reference mode (tests): no bisection shortcuts in instance-type filtering.
        self.reference = False

    def wrap(self, its: Iterable[Any]) -> list[ITInfo]:
        out = []
        for it in its:
            info = self._by_id.get(id(it))
            if info is None:
                info = ITInfo(it, len(self._by_id))
                self._by_id[id(it)] = info
            out.append(info)
        return out

    def entries(self, sig: Signature) -> dict[int, CompatEntry]:
        table = self._cache.get(sig)
        if table is None:
            table = {}
            self._cache[sig] = table
        return table

    def entry(self, table: dict[int, CompatEntry], info: ITInfo, reqs: Any) -> CompatEntry:
        e = table.get(info.index)
        if e is None:
            e = self._compute(info, reqs)
            table[info.index] = e
        return e

    def _compute(self, info: ITInfo, reqs: Any) -> CompatEntry:
        compatible = info.requirements.intersects(reqs) is None
        groups = []
        for gi, g in enumerate(info.groups):
            for o in g.offerings:
                if reqs.is_compatible(o.requirements, self.allow_undefined):
                    groups.append(gi)
                    break
        return CompatEntry(compatible, tuple(groups))

    def compatible_flags(self, sig: Signature, root: list[ITInfo], reqs: Any) -> list[bool]:
        """For each of ``root``'s types: meets ``reqs`` and has a compatible offering."""
        key = (sig, id(root))
        hit = self._flags.get(key)
        if hit is not None and hit[0] is root:
            return hit[1]
        table = self.entries(sig)
        flags = []
        for info in root:
            e = table.get(info.index)
            if e is None:
                e = self.entry(table, info, reqs)
            flags.append(e.compatible and bool(e.groups))
        if len(self._flags) > 512:  # bound memory when many ad-hoc option lists appear
            self._flags.clear()
        self._flags[key] = (root, flags)
        return flags

    def prices(self, sig: Signature) -> dict[ITInfo, float]:
        table = self._prices.get(sig)
        if table is None:
            table = {}
            self._prices[sig] = table
        return table

    def capacity_type_table(self, sig: Signature) -> dict[ITInfo, tuple[str, ...]]:
        table = self._capacity_types.get(sig)
        if table is None:
            table = self._capacity_types[sig] = {}
        return table

    def capacity_types(
        self, table: dict[ITInfo, tuple[str, ...]], info: ITInfo, reqs: Any
    ) -> tuple[str, ...]:
        """Capacity types of ``info``'s available offerings compatible with ``reqs``, cached
        in ``table`` (from :meth:`capacity_type_table` for the signature of ``reqs``)."""
        hit = table.get(info)
        if hit is None:
            from karpenter_core.provisioning.scheduler.offerings import capacity_type_of

            found: list[str] = []
            for o in info.it.offerings:
                if o.available and self.offering_compatible(reqs, o):
                    ct = capacity_type_of(o)
                    if ct and ct not in found:
                        found.append(ct)
            hit = table[info] = tuple(found)
        return hit

    def offering_compatible(self, reqs: Any, offering: Any) -> bool:
        return bool(reqs.is_compatible(offering.requirements, self.allow_undefined))


def order_by_price(index: InstanceTypeIndex, infos: Sequence[ITInfo], reqs: Any) -> list[ITInfo]:
    """Cheapest compatible available offering first; ties keep their order (stable).

    Prices are cached per requirement signature, keyed by the ITInfo itself so the sort's
    key function is a C-level dict lookup.
    """
    prices = index.prices(signature(reqs))
    for info in infos:
        if info not in prices:
            p = float("inf")
            for o in info.it.offerings:
                if o.available and o.price < p and index.offering_compatible(reqs, o):
                    p = o.price
            prices[info] = p
    return sorted(infos, key=prices.__getitem__)


def min_values_check(infos: Sequence[ITInfo], reqs: Any) -> dict[str, int]:
    """Keys whose minValues the types do not reach, with the distinct count they reach.

    Walks the list accumulating distinct values per key and stops as soon as every key is
    satisfied (upstream ``SatisfiesMinValues``); an empty result means satisfied.
    """
    wanted = {k: r.min_values for k, r in reqs.items() if r.min_values is not None}
    if not wanted:
        return {}
    seen: dict[str, set[str]] = {k: set() for k in wanted}
    deficient: dict[str, int] = {}
    for info in infos:
        for k, values in seen.items():
            values.update(info.requirements.get(k).values)
        deficient = {k: len(v) for k, v in seen.items() if len(v) < wanted[k]}
        if not deficient:
            return {}
    if not infos:
        return {k: 0 for k in wanted}
    return deficient


def has_min_values(reqs: Any) -> bool:
    return any(r.min_values is not None for r in reqs.values())


FAST_KEYS = ("cpu", "memory", "pods")


class OptionSet:
    """Instance-type options sorted by allocatable CPU, with suffix minima for fast fits.

    ``cpu_keys[j]`` is option *j*'s largest allocatable CPU (non-decreasing), so types too
    small for a request form a prefix found by bisection. When every option has a single,
    non-negative allocatable group (``simple``), ``suffix_min[k][j]`` is the smallest
    allocatable of resource *k* among options *j..*; every option from the first *j* where
    all suffix minima reach the request fits, without checking them one by one.
    """

    __slots__ = (
        "_max",
        "cols",
        "cpu_keys",
        "offset",
        "options",
        "root",
        "sig",
        "simple",
        "sorted",
        "suffix_min",
    )

    def __init__(
        self,
        options: list[ITInfo],
        cpu_keys: list[int] | None = None,
        suffix_min: dict[str, list[int]] | None = None,
        simple: bool | None = None,
        sig: Signature | None = None,
        cols: dict[str, list[int]] | None = None,
        is_sorted: bool | None = None,
        root: list[ITInfo] | None = None,
        offset: int = 0,
    ) -> None:
        self.options = options
        # ``options == root[offset:]`` when this set is a suffix of a template's options, so
        # per-signature compatibility flags computed once over ``root`` can be sliced.
        self.root = root if root is not None else options
        self.offset = offset if root is not None else 0
        # The requirement signature under which every option is known to be compatible and
        # to have a compatible offering (None: unknown).
        self.sig = sig
        self._max: dict[str, int] | None = None
        if cpu_keys is None:
            cpu_keys = [i.max_alloc.get("cpu", 0) for i in options]
        self.cpu_keys = cpu_keys
        # Bisection needs CPU order; lists in any other order are scanned in full.
        if is_sorted is None:
            is_sorted = all(a <= b for a, b in itertools.pairwise(cpu_keys))
        self.sorted = is_sorted
        if simple is None:
            simple = self.sorted and all(
                len(i.groups) == 1 and i.groups[0].nonnegative for i in options
            )
        self.simple = simple
        if suffix_min is None and simple:
            suffix_min = {}
            for k in FAST_KEYS:
                arr = [0] * len(options)
                running = None
                for j in range(len(options) - 1, -1, -1):
                    v = options[j].groups[0].allocatable.get(k, 0)
                    running = v if running is None or v < running else running
                    arr[j] = running
                suffix_min[k] = arr
        self.suffix_min = suffix_min or {}
        # Per-option largest allocatable of the common resources, for C-speed maxima.
        if cols is None:
            cols = {k: [i.max_alloc.get(k, 0) for i in options] for k in FAST_KEYS}
        self.cols = cols

    def suffix(self, j: int, sig: Signature | None) -> OptionSet:
        return OptionSet(
            self.options[j:],
            self.cpu_keys[j:],
            {k: v[j:] for k, v in self.suffix_min.items()},
            self.simple,
            sig,
            {k: v[j:] for k, v in self.cols.items()},
            self.sorted,
            self.root,
            self.offset + j,
        )

    def max_allocatable(self, key: str) -> int:
        """Largest allocatable of ``key`` over the options (an upper bound for fits)."""
        cache = self._max
        if cache is None:
            cache = self._max = {}
        v = cache.get(key)
        if v is None:
            col = self.cols.get(key)
            if col is not None:
                v = max(col, default=0)
            else:
                v = max((i.max_alloc.get(key, 0) for i in self.options), default=0)
            cache[key] = v
        return v


def sort_by_cpu(infos: Sequence[ITInfo]) -> list[ITInfo]:
    return sorted(infos, key=lambda i: i.max_alloc.get("cpu", 0))
