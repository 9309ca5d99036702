"""A test kit for karpenter-core and its plugins (upstream's ``pkg/test``).

- :mod:`~karpenter_core.testing.builders`: Kubernetes objects as plain dicts with sensible
  defaults (``pod``, ``node``, ``nodepool``, ``nodeclaim``, ``daemonset``, ``pdb``...);
- :mod:`~karpenter_core.testing.expectations`: assertions that say what they expected and
  what they found (``expect_provisioned``, ``expect_condition``, ``expect_deleted``...);
- :class:`Environment`: the real controllers on a virtual clock, an in-memory API server
  and a cloud provider (the fake by default), driven with ``settle()`` and ``run_for()``;
- :mod:`~karpenter_core.testing.fake`: :class:`FakeCloudProvider`, and
  :mod:`~karpenter_core.testing.fakecatalog`, upstream's fake instance types;
- :mod:`~karpenter_core.testing.fakecloud`: :class:`FakeCloudServer`, the HTTP(S) plumbing of
  a fake cloud API (routes, request recording, fault injection, a self-signed certificate)
  that a provider plugin's tests point the cloud's official SDK at (the Azure and GCP
  plugins' fake ARM and fake Compute/GKE servers are built on it);
- :mod:`~karpenter_core.testing.pytest_plugin`: the ``karpenter_env``,
  ``make_karpenter_env`` and ``fake_cloud_provider`` fixtures, registered with pytest
  when karpenter-core is installed.

The project's own tests use this kit, so it is what they prove. Production code never
imports it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from karpenter_core.testing import builders, expectations, fakecatalog
    from karpenter_core.testing.environment import Environment
    from karpenter_core.testing.fake import KWOK_NODE_CLASS, TEST_NODE_CLASS, FakeCloudProvider

__all__ = [
    "KWOK_NODE_CLASS",
    "TEST_NODE_CLASS",
    "Environment",
    "FakeCloudProvider",
    "builders",
    "expectations",
    "fakecatalog",
]

_WHERE = {
    "KWOK_NODE_CLASS": "fake",
    "TEST_NODE_CLASS": "fake",
    "FakeCloudProvider": "fake",
    "Environment": "environment",
}


def __getattr__(name: str) -> Any:
    """Import on first use: pytest loads this package's plugin in every session of an
    environment where karpenter-core is installed, and that must not import the engine."""
    if name in ("builders", "expectations", "fakecatalog"):
        return importlib.import_module(f"karpenter_core.testing.{name}")
    if name in _WHERE:
        return getattr(importlib.import_module(f"karpenter_core.testing.{_WHERE[name]}"), name)
    raise AttributeError(f"module 'karpenter_core.testing' has no attribute {name!r}")
