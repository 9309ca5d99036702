"""Expectations: assertions about a cluster that say what was expected and what was found
(upstream's ``pkg/test/expectations``).

Each raises ``AssertionError`` with a message a reader can act on without a debugger --
the object, the state wanted, the state found -- and returns what it checked, so a test
can go on from it (``node = expect_scheduled(env, pod)``). Those that read the cluster
take an :class:`~karpenter_core.testing.environment.Environment` or any KubeClient and
read the stored objects, never a test's stale copy.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from karpenter_core.apis.conditions import conditions_of
from karpenter_core.kube.client import KubeClient, NotFound, resource_of

if TYPE_CHECKING:
    from karpenter_core.runtime.events import EventRecorder, RecordedEvent
    from karpenter_core.testing.environment import Environment

__all__ = [
    "expect_condition",
    "expect_deleted",
    "expect_event",
    "expect_exists",
    "expect_metric",
    "expect_no_event",
    "expect_nodeclaims",
    "expect_nodes",
    "expect_not_scheduled",
    "expect_provisioned",
    "expect_scheduled",
    "expect_terminating",
    "metric_samples",
    "metric_value",
]


def _kube(source: KubeClient | Environment) -> KubeClient:
    from karpenter_core.testing.environment import Environment

    return source.kube if isinstance(source, Environment) else source


def _describe(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    ns = meta.get("namespace")
    name = f"{ns}/{meta.get('name')}" if ns else str(meta.get("name"))
    return f"{obj.get('kind', 'object')} {name}"


def _stored(kube: KubeClient, obj: Mapping[str, Any]) -> dict[str, Any] | None:
    rt = resource_of(obj)
    meta = obj.get("metadata") or {}
    ns = str(meta.get("namespace") or "default") if rt.namespaced else None
    try:
        return kube.get(rt, str(meta.get("name")), ns)
    except NotFound:
        return None


def _condition_text(c: Mapping[str, Any]) -> str:
    text = f"{c.get('type')}={c.get('status')}"
    if c.get("reason"):
        text += f" ({c.get('reason')}"
        text += f": {c['message']})" if c.get("message") else ")"
    return text


# ---------------------------------------------------------------------- objects


def expect_exists(source: KubeClient | Environment, obj: Mapping[str, Any]) -> dict[str, Any]:
    """``obj`` is stored; returns the stored version."""
    stored = _stored(_kube(source), obj)
    if stored is None:
        raise AssertionError(f"expected {_describe(obj)} to exist, but it was not found")
    return stored


def expect_deleted(source: KubeClient | Environment, *objs: Mapping[str, Any]) -> None:
    """Every object is gone from the API server (not merely being deleted)."""
    kube = _kube(source)
    left = []
    for obj in objs:
        stored = _stored(kube, obj)
        if stored is None:
            continue
        meta = stored["metadata"]
        if meta.get("deletionTimestamp"):
            held = ", ".join(meta.get("finalizers") or []) or "a grace period"
            left.append(f"{_describe(obj)} is terminating, held by {held}")
        else:
            left.append(f"{_describe(obj)} still exists and is not being deleted")
    if left:
        raise AssertionError("expected to be deleted: " + "; ".join(left))


def expect_terminating(
    source: KubeClient | Environment, *objs: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """Every object still exists with a deletionTimestamp; returns them."""
    kube = _kube(source)
    out, wrong = [], []
    for obj in objs:
        stored = _stored(kube, obj)
        if stored is None:
            wrong.append(f"{_describe(obj)} is already gone")
        elif not stored["metadata"].get("deletionTimestamp"):
            wrong.append(f"{_describe(obj)} has no deletionTimestamp")
        else:
            out.append(stored)
    if wrong:
        raise AssertionError("expected to be terminating: " + "; ".join(wrong))
    return out


def expect_condition(
    obj: Mapping[str, Any],
    type_: str,
    status: str | bool = True,
    *,
    reason: str | None = None,
) -> dict[str, Any]:
    """``obj`` (as read: pass ``env.get(obj)`` for the stored one) has condition
    ``type_`` with ``status`` (and ``reason`` when given); returns the condition."""
    want = ("True" if status else "False") if isinstance(status, bool) else status
    conds = conditions_of(obj)
    found = next((c for c in conds if c.get("type") == type_), None)
    wanted = f"{type_}={want}" + (f" (reason {reason})" if reason is not None else "")
    if found is None:
        have = ", ".join(_condition_text(c) for c in conds) or "none"
        raise AssertionError(
            f"expected {_describe(obj)} to have condition {wanted}, but it has no {type_} "
            f"condition (conditions: {have})"
        )
    if found.get("status") != want or (reason is not None and found.get("reason") != reason):
        raise AssertionError(
            f"expected {_describe(obj)} to have condition {wanted}, found {_condition_text(found)}"
        )
    return dict(found)


def expect_nodeclaims(
    source: KubeClient | Environment, count: int | None = None
) -> list[dict[str, Any]]:
    """The stored NodeClaims (exactly ``count`` of them, when given)."""
    return _expect_count(_kube(source), "nodeclaims", "NodeClaims", count)


def expect_nodes(
    source: KubeClient | Environment, count: int | None = None
) -> list[dict[str, Any]]:
    """The stored Nodes (exactly ``count`` of them, when given)."""
    return _expect_count(_kube(source), "nodes", "Nodes", count)


def _expect_count(
    kube: KubeClient, resource: str, what: str, count: int | None
) -> list[dict[str, Any]]:
    items = sorted(kube.list(resource).items, key=lambda o: str(o["metadata"]["name"]))
    if count is not None and len(items) != count:
        names = ", ".join(str(o["metadata"]["name"]) for o in items) or "none"
        raise AssertionError(f"expected {count} {what}, found {len(items)}: {names}")
    return list(items)


# ---------------------------------------------------------------------- scheduling


def _pending_reason(pod: Mapping[str, Any]) -> str:
    scheduled = next((c for c in conditions_of(pod) if c.get("type") == "PodScheduled"), None)
    if scheduled is None:
        return "no PodScheduled condition"
    return _condition_text(scheduled)


def expect_scheduled(source: KubeClient | Environment, pod: Mapping[str, Any]) -> dict[str, Any]:
    """``pod`` is bound to a Node that exists; returns the Node."""
    kube = _kube(source)
    stored = _stored(kube, pod)
    if stored is None:
        raise AssertionError(f"expected {_describe(pod)} to be scheduled, but it was not found")
    node_name = (stored.get("spec") or {}).get("nodeName")
    if not node_name:
        raise AssertionError(
            f"expected {_describe(pod)} to be scheduled, but it is not bound "
            f"({_pending_reason(stored)})"
        )
    try:
        return kube.get("nodes", str(node_name))
    except NotFound:
        raise AssertionError(
            f"expected {_describe(pod)} to be scheduled, but its node {node_name} does not exist"
        ) from None


def expect_not_scheduled(
    source: KubeClient | Environment, pod: Mapping[str, Any]
) -> dict[str, Any]:
    """``pod`` exists and is not bound to a node; returns it."""
    stored = expect_exists(source, pod)
    node_name = (stored.get("spec") or {}).get("nodeName")
    if node_name:
        raise AssertionError(
            f"expected {_describe(pod)} not to be scheduled, but it is on {node_name}"
        )
    return stored


def expect_provisioned(
    env: Environment, *pods: Mapping[str, Any], within: float = 60.0, step: float = 1.0
) -> dict[str, dict[str, Any]]:
    """Apply the pods (those not stored yet), then run ``env`` until each is bound to a
    Node, for at most ``within`` seconds of virtual time; returns ``{pod name: Node}``.

    On failure the message lists every pod still pending with its PodScheduled condition,
    and the NodeClaims with their conditions, which is usually where the reason is.
    """
    kube = env.kube
    for pod in pods:
        if _stored(kube, pod) is None:
            env.apply(pod)
    waited = 0.0
    while True:
        env.settle()
        stored = [(p, _stored(kube, p)) for p in pods]
        pending = [(p, s) for p, s in stored if s is None or not s["spec"].get("nodeName")]
        if not pending:
            return {
                str(s["metadata"]["name"]): kube.get("nodes", str(s["spec"]["nodeName"]))
                for _, s in stored
                if s is not None
            }
        if waited >= within:
            break
        env.run_for(step)
        waited += step
    lines = [
        f"{_describe(p)}: " + ("deleted" if s is None else _pending_reason(s)) for p, s in pending
    ]
    claims = [
        f"{nc['metadata']['name']} ["
        + ", ".join(_condition_text(c) for c in conditions_of(nc))
        + "]"
        for nc in kube.list("nodeclaims").items
    ]
    raise AssertionError(
        f"expected {len(pods)} pod(s) to be scheduled within {within:g}s, "
        f"{len(pending)} still pending: "
        + "; ".join(lines)
        + ". NodeClaims: "
        + ("; ".join(claims) or "none")
    )


# ---------------------------------------------------------------------- events


def _recorder(source: EventRecorder | Environment) -> EventRecorder:
    from karpenter_core.testing.environment import Environment

    return source.recorder if isinstance(source, Environment) else source


def _matching(
    recorder: EventRecorder, reason: str, obj: Mapping[str, Any] | None, type_: str | None
) -> list[RecordedEvent]:
    out = []
    for e in recorder.events:
        if e.reason != reason or (type_ is not None and e.type != type_):
            continue
        if obj is not None:
            meta = obj.get("metadata") or {}
            if e.kind != obj.get("kind") or e.name != meta.get("name"):
                continue
        out.append(e)
    return out


def expect_event(
    source: EventRecorder | Environment,
    reason: str,
    *,
    obj: Mapping[str, Any] | None = None,
    type_: str | None = None,
) -> RecordedEvent:
    """An event with ``reason`` was recorded (about ``obj``, of ``type_`` Normal/Warning,
    when given); returns the latest such."""
    recorder = _recorder(source)
    found = _matching(recorder, reason, obj, type_)
    if not found:
        about = f" about {_describe(obj)}" if obj is not None else ""
        seen = sorted({f"{e.reason} ({e.kind} {e.name})" for e in recorder.events})
        raise AssertionError(
            f"expected a {type_ + ' ' if type_ else ''}{reason} event{about}, found "
            + (", ".join(seen) if seen else "no events")
        )
    return found[-1]


def expect_no_event(
    source: EventRecorder | Environment, reason: str, *, obj: Mapping[str, Any] | None = None
) -> None:
    """No event with ``reason`` (about ``obj``, when given) was recorded."""
    found = _matching(_recorder(source), reason, obj, None)
    if found:
        raise AssertionError(
            f"expected no {reason} event, found {len(found)}: "
            + "; ".join(f"{e.kind} {e.name}: {e.message}" for e in found)
        )


# ---------------------------------------------------------------------- metrics


def metric_samples(name: str, /, **labels: str) -> list[tuple[dict[str, str], float]]:
    """Every sample of ``name`` whose labels include ``labels``, as ``/metrics`` serves it
    now (the real exposition, parsed): ``[(labels, value), ...]``. Counters are named
    with their ``_total`` suffix."""
    from prometheus_client.parser import text_string_to_metric_families

    from karpenter_core import metrics

    text = metrics.exposition().decode()
    return [
        (dict(s.labels), float(s.value))
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == name and labels.items() <= s.labels.items()
    ]


def metric_value(name: str, /, **labels: str) -> float | None:
    """The one sample of ``name`` whose labels include ``labels``; None when there is none.
    Raises AssertionError when several match: name more labels."""
    found = metric_samples(name, **labels)
    if len(found) > 1:
        raise AssertionError(
            f"{len(found)} samples of {name} match {labels}: "
            + "; ".join(str(lbls) for lbls, _ in found)
        )
    return found[0][1] if found else None


def expect_metric(name: str, value: float, /, **labels: str) -> None:
    """The sample of ``name`` with ``labels`` has ``value``."""
    found = metric_value(name, **labels)
    if found != value:
        got = "no such sample" if found is None else f"{found:g}"
        raise AssertionError(f"expected {name}{labels} to be {value:g}, found {got}")
