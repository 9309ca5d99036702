"""The universe of domains for one topology key, each tagged with the taints it comes with.

A topology group needs to know every domain a pod *could* land in, including domains where
no pod runs yet (otherwise a zone spread would never open a new zone). Domains come from the
NodePools (upstream ``topologydomaingroup.go``). A domain may be offered by several pools with
different taints; a pod whose spread honours taints (``nodeTaintsPolicy: Honor``) only counts
the domains of pools whose taints it tolerates.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

from karpenter_core.apis.taints import Taint, Toleration, tolerates
from karpenter_core.scheduling.spread import IGNORE


class TopologyDomainGroup:
    """Map domain -> list of taint sets (each the taints of one NodePool offering it).

    Once a domain is offered without taints it stays "untainted" and stops collecting taint
    sets: every pod tolerates the empty set, so further sets could never matter.
    """

    __slots__ = ("_domains",)

    def __init__(self) -> None:
        self._domains: dict[str, list[tuple[Taint, ...]]] = {}

    def insert(self, domain: str, taints: Sequence[Taint] = ()) -> None:
        """Record that ``domain`` is offered by a NodePool with ``taints``."""
        current = self._domains.get(domain)
        if current is None or not taints:
            self._domains[domain] = [tuple(taints)]
            return
        if not current[0]:
            return
        current.append(tuple(taints))

    def __contains__(self, domain: object) -> bool:
        return domain in self._domains

    def __iter__(self) -> Iterator[str]:
        return iter(self._domains)

    def __len__(self) -> int:
        return len(self._domains)

    def taint_sets(self, domain: str) -> list[tuple[Taint, ...]]:
        return list(self._domains.get(domain, ()))

    def for_each_domain(
        self,
        tolerations: Sequence[Toleration],
        taint_policy: str,
        f: Callable[[str], None],
    ) -> None:
        """Call ``f`` for every domain; under an Honor taint policy only for domains offered
        by some pool whose taints ``tolerations`` tolerate."""
        for domain, taint_sets in self._domains.items():
            if taint_policy == IGNORE:
                f(domain)
                continue
            for taints in taint_sets:
                if not taints or tolerates(taints, tolerations) is None:
                    f(domain)
                    break

    def domains(self, tolerations: Sequence[Toleration], taint_policy: str) -> list[str]:
        """The domains :meth:`for_each_domain` would visit, as a list."""
        out: list[str] = []
        self.for_each_domain(tolerations, taint_policy, out.append)
        return out
