"""Reconcilers: the two controller shapes Karpenter uses.

* An object reconciler is handed one key at a time (``ObjectKey(namespace, name)``,
  enqueued from watch events) and returns a :class:`Result`.
* A singleton reconciler has no key: it runs once at start and then whenever its own
  ``Result`` says (``requeue_after``), like upstream's provisioner or garbage collector.

What a result means, as in controller-runtime: an exception is a failure and the key is
retried with per-item exponential back-off; ``requeue=True`` retries the same way without
being an error; ``requeue_after=s`` forgets the failure history and runs again in ``s``
seconds; an empty result forgets the key until the next event.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import Any, Protocol, runtime_checkable

from attrs import field, frozen

from karpenter_core.kube.client import ResourceLike

__all__ = [
    "ObjectKey",
    "Reconciler",
    "Result",
    "SingletonReconciler",
    "Watch",
    "key_of",
]


@frozen
class Result:
    """What a reconcile asks for next."""

    requeue: bool = False
    requeue_after: float = 0.0

    def __attrs_post_init__(self) -> None:
        if self.requeue_after < 0:
            raise ValueError(f"requeue_after must not be negative, got {self.requeue_after}")

    @classmethod
    def after(cls, seconds: float) -> Result:
        return cls(requeue_after=seconds)


@frozen(order=True, cache_hash=True)
class ObjectKey:
    """The namespace/name of an object (namespace "" for cluster-scoped kinds)."""

    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name


def key_of(obj: Mapping[str, Any]) -> ObjectKey:
    """The key of an API object dict."""
    meta = obj.get("metadata") or {}
    return ObjectKey(str(meta.get("namespace") or ""), str(meta.get("name") or ""))


@runtime_checkable
class Reconciler(Protocol):
    """Brings the world in line with one object's desired state."""

    def reconcile(self, key: Any) -> Result: ...


@runtime_checkable
class SingletonReconciler(Protocol):
    """A loop with no key, paced by its own ``requeue_after``."""

    def reconcile(self) -> Result: ...


Mapper = Callable[[str, dict[str, Any]], Iterable[Hashable]]
Predicate = Callable[[str, dict[str, Any]], bool]


def _own_key(event_type: str, obj: dict[str, Any]) -> Iterable[Hashable]:
    return (key_of(obj),)


@frozen
class Watch:
    """Enqueue keys for a controller from the watch events of one resource.

    ``mapper(event_type, obj)`` turns an event into keys (default: the object's own key);
    ``predicate(event_type, obj)`` filters events before mapping.
    """

    resource: ResourceLike
    mapper: Mapper = field(default=_own_key)
    predicate: Predicate | None = None
    namespace: str | None = None
    label_selector: str | None = None
    field_selector: str | None = None
