"""The simulator reaches a provider's optional capabilities through their protocols
(``InjectsOfferingOutages``, ``SimulatesNodes``), never by importing a plugin by name."""

from __future__ import annotations

from engine_helpers import make_scenario

from karpenter_core.cloudprovider.protocol import (
    InjectsOfferingOutages,
    OfferingOutage,
    SimulatesNodes,
)
from karpenter_core.sim.engine import Simulation

OUTAGE = {"at": "1m", "type": "OfferingOutage", "zone": "test-zone-a", "duration": "2m"}


class _Plain:
    """A provider with none of the optional capabilities (everything else delegated)."""

    def __init__(self, inner: object) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> object:
        if name in ("add_offering_outage", "simulated_node_annotation"):
            raise AttributeError(name)
        return getattr(self._inner, name)


def test_kwok_has_both_capabilities() -> None:
    sim = Simulation(make_scenario())
    assert isinstance(sim.provider, InjectsOfferingOutages)
    assert isinstance(sim.provider, SimulatesNodes)


def test_outages_reach_a_provider_that_injects_them_as_offering_outages() -> None:
    sim = Simulation(make_scenario(events=[OUTAGE]))
    seen: list[OfferingOutage] = []
    sim.provider = _Recording(sim.provider, seen)
    sim._install_outages()
    assert seen == [OfferingOutage(zone="test-zone-a", start=60.0, end=180.0)]


def test_a_provider_without_the_capability_gets_a_note_not_an_error() -> None:
    sim = Simulation(make_scenario(events=[OUTAGE]))
    sim.provider = _Plain(sim.provider)  # type: ignore[assignment]
    sim._install_outages()
    assert any("cannot inject offering outages" in n for n in sim.observer.notes)
    assert sim._kubelet_options() == ()


class _Recording:
    def __init__(self, inner: object, seen: list[OfferingOutage]) -> None:
        self._inner = inner
        self._seen = seen

    def add_offering_outage(self, outage: OfferingOutage) -> None:
        self._seen.append(outage)

    def __getattr__(self, name: str) -> object:
        return getattr(self._inner, name)
