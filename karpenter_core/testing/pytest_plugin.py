"""pytest fixtures for testing against karpenter-core, loaded through the ``pytest11``
entry point: installing karpenter-core is all a plugin's test suite needs to use them.

- ``karpenter_env``: an :class:`~karpenter_core.testing.environment.Environment` with the
  defaults (fake provider, every controller, simulated kube-scheduler and kubelet).
  Configure it for one test with the ``karpenter_env`` marker, whose keyword arguments are
  the Environment's: ``@pytest.mark.karpenter_env(controllers=["state", "provisioning"])``.
- ``make_karpenter_env``: a factory, for tests that need several environments or build
  one from their own provider: ``env = make_karpenter_env(cloud_provider=mine)``.
- ``fake_cloud_provider``: a fresh :class:`~karpenter_core.testing.fake.FakeCloudProvider`
  serving the five-type fake catalogue.

Environments are closed when the test ends. This module imports nothing of the engine at
load time, so a test session that uses none of it pays nothing for it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from karpenter_core.testing.environment import Environment
    from karpenter_core.testing.fake import FakeCloudProvider

MARKER = "karpenter_env"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(**options): keyword arguments for the karpenter_env fixture's Environment",
    )


@pytest.fixture
def make_karpenter_env() -> Iterator[Callable[..., Environment]]:
    """Build Environments (keyword arguments as ``Environment``'s); all are closed at the
    end of the test."""
    from karpenter_core.testing.environment import Environment

    made: list[Environment] = []

    def make(*args: Any, **kwargs: Any) -> Environment:
        env = Environment(*args, **kwargs)
        made.append(env)
        return env

    yield make
    for env in made:
        env.close()


@pytest.fixture
def karpenter_env(
    request: pytest.FixtureRequest, make_karpenter_env: Callable[..., Environment]
) -> Environment:
    """An Environment, configured by the test's ``karpenter_env`` marker if it has one."""
    marker = request.node.get_closest_marker(MARKER)
    kwargs = dict(marker.kwargs) if marker is not None else {}
    return make_karpenter_env(*(marker.args if marker is not None else ()), **kwargs)


@pytest.fixture
def fake_cloud_provider() -> FakeCloudProvider:
    """A fresh fake cloud provider (five fake instance types; launches pretend instances)."""
    from karpenter_core.testing.fake import FakeCloudProvider

    return FakeCloudProvider()
