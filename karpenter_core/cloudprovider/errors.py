"""Errors a cloud provider raises, and the helpers callers use to classify them.

Controllers react to *kinds* of failure, not to messages: an insufficient-capacity launch
deletes the NodeClaim so its pods are re-provisioned elsewhere, a NodeClaim that is not
found ends a deletion, and so on (see the spec's "error types -> caller reaction" table).
Providers therefore wrap whatever their SDK raised in one of these classes, and callers
test with the ``is_*`` helpers, which also look through ``raise ... from ...`` chains so a
provider may add context around the classified error without hiding it.

Each message starts with the same prefix upstream uses (``insufficient capacity, ...``),
so logs and condition messages read the same as Karpenter's.
"""

from __future__ import annotations

from typing import TypeVar

__all__ = [
    "CloudProviderError",
    "CreateError",
    "InsufficientCapacityError",
    "NodeClaimNotFoundError",
    "NodeClassNotReadyError",
    "UnevaluatedNodePoolError",
    "find_error",
    "ignore_nodeclaim_not_found",
    "is_create_error",
    "is_insufficient_capacity",
    "is_node_class_not_ready",
    "is_nodeclaim_not_found",
    "is_unevaluated_nodepool",
]

E = TypeVar("E", bound=BaseException)


class CloudProviderError(Exception):
    """A classified provider failure wrapping the underlying cause.

    ``cause`` may be another exception (kept as ``__cause__`` too, so tracebacks show it)
    or a plain message.
    """

    prefix = ""

    def __init__(self, cause: BaseException | str = "") -> None:
        self.cause = cause
        super().__init__(self._message())
        if isinstance(cause, BaseException):
            self.__cause__ = cause

    def _message(self) -> str:
        return f"{self.prefix}{self.cause}"

    def __str__(self) -> str:
        return self._message()

    def unwrap(self) -> BaseException | None:
        """The wrapped exception, or None when the cause was a message."""
        return self.cause if isinstance(self.cause, BaseException) else None


class NodeClaimNotFoundError(CloudProviderError):
    """The instance behind a NodeClaim no longer exists.

    From ``delete`` it means termination is complete; from ``get`` it lets node
    termination drop its finalizer without draining.
    """

    prefix = "nodeclaim not found, "


class InsufficientCapacityError(CloudProviderError):
    """The launch failed for lack of capacity matching the NodeClaim's requirements.

    Launch deletes the NodeClaim so the pods are scheduled again; remembering which
    offerings ran out is the provider's job.
    """

    prefix = "insufficient capacity, "


class NodeClassNotReadyError(CloudProviderError):
    """The NodeClass the NodeClaim references has not resolved everything a launch needs."""

    prefix = "NodeClassRef not ready, "


class CreateError(CloudProviderError):
    """A launch failure with a condition reason and message for ``Launched=Unknown``.

    The reconcile backs off and retries; the reason can surface in
    ``NodeRegistrationHealthy``.
    """

    prefix = "creating nodeclaim, "

    def __init__(
        self,
        cause: BaseException | str = "",
        condition_reason: str = "",
        condition_message: str = "",
    ) -> None:
        self.condition_reason = condition_reason
        self.condition_message = condition_message
        super().__init__(cause)


class UnevaluatedNodePoolError(CloudProviderError):
    """The overlay store has not evaluated this NodePool yet: skip it for this pass."""

    def __init__(self, nodepool_name: str) -> None:
        self.nodepool_name = nodepool_name
        super().__init__("")

    def _message(self) -> str:
        return f'nodepool "{self.nodepool_name}" is awaiting evaluation'


def find_error(err: BaseException | None, kind: type[E]) -> E | None:
    """The first exception of ``kind`` in ``err``'s chain (``__cause__``, then our wraps).

    Mirrors Go's ``errors.As``: a provider may raise ``RuntimeError("deleting node") from
    NodeClaimNotFoundError(...)`` and callers still see the NotFound. Cycles are guarded.
    """
    seen: set[int] = set()
    current = err
    while current is not None and id(current) not in seen:
        if isinstance(current, kind):
            return current
        seen.add(id(current))
        nxt: BaseException | None = current.__cause__
        if nxt is None and isinstance(current, CloudProviderError):
            nxt = current.unwrap()
        current = nxt
    return None


def is_nodeclaim_not_found(err: BaseException | None) -> bool:
    """True when ``err`` is, or wraps, a :class:`NodeClaimNotFoundError`."""
    return find_error(err, NodeClaimNotFoundError) is not None


def ignore_nodeclaim_not_found(err: BaseException | None) -> BaseException | None:
    """``None`` for a NotFound error, the error itself otherwise (Go's ``Ignore...``)."""
    return None if is_nodeclaim_not_found(err) else err


def is_insufficient_capacity(err: BaseException | None) -> bool:
    """True when ``err`` is, or wraps, an :class:`InsufficientCapacityError`."""
    return find_error(err, InsufficientCapacityError) is not None


def is_node_class_not_ready(err: BaseException | None) -> bool:
    """True when ``err`` is, or wraps, a :class:`NodeClassNotReadyError`."""
    return find_error(err, NodeClassNotReadyError) is not None


def is_create_error(err: BaseException | None) -> bool:
    """True when ``err`` is, or wraps, a :class:`CreateError`."""
    return find_error(err, CreateError) is not None


def is_unevaluated_nodepool(err: BaseException | None) -> bool:
    """True when ``err`` is, or wraps, an :class:`UnevaluatedNodePoolError`."""
    return find_error(err, UnevaluatedNodePoolError) is not None
