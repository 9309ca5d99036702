"""Which controller is reconciling right now, for labels that upstream takes from the
request context (``karpenter_cloudprovider_duration_seconds{controller=...}`` and friends).

It lives in the runtime because the runtime is what knows: :meth:`Controller.run_one`
wraps every reconcile in :func:`controller_scope` with the controller's name, so code
deep inside a reconcile (a cloud-provider call, a scheduling simulation) can label its
metrics without each controller remembering to say who it is. A :class:`ContextVar`
keeps worker threads apart in ``serve`` and costs nothing on the virtual clock.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar

__all__ = ["CURRENT_CONTROLLER", "controller_scope", "current_controller"]

CURRENT_CONTROLLER: ContextVar[str] = ContextVar("karpenter_controller", default="")
"""Name of the controller whose reconcile is running in this thread / context."""


@contextlib.contextmanager
def controller_scope(name: str) -> Iterator[None]:
    """Attribute work done inside the block to controller ``name``; nests, and restores
    the outer name on exit (also when the block raises)."""
    token = CURRENT_CONTROLLER.set(name)
    try:
        yield
    finally:
        CURRENT_CONTROLLER.reset(token)


def current_controller() -> str:
    """The running controller's name, or ``""`` outside any reconcile."""
    return CURRENT_CONTROLLER.get()
