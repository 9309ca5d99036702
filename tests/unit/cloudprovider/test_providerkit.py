"""The provider kit: NodeClass resolution for a launch, a NodePool and drift; the
NodeClaim view of an instance; the description of a request; ``as_nodeclaim``."""

from __future__ import annotations

import logging
from datetime import UTC, datetime

import attrs
import pytest

from karpenter_core.apis import labels as wk
from karpenter_core.apis.v1 import NodeClaim, NodePool
from karpenter_core.cloudprovider.errors import (
    CreateError,
    InsufficientCapacityError,
    NodeClassNotReadyError,
)
from karpenter_core.cloudprovider.providerkit import (
    as_nodeclaim,
    describe_requested,
    drift_nodeclass,
    instance_nodeclaim,
    launch_nodeclass,
    nodepool_nodeclass,
)
from karpenter_core.kube.client import KubeClient
from karpenter_core.runtime.clock import VirtualClock
from karpenter_core.runtime.events import EventRecorder
from karpenter_core.scheduling.requirements import IN, NOT_IN, Requirement, Requirements
from karpenter_core.sim.apiserver import InMemoryApiServer
from karpenter_core.testing import builders
from karpenter_core.testing.fakecatalog import instance_type

KIND = "TestNodeClass"
REF = {"group": "test.karpenter.sh", "kind": KIND, "name": "main"}
log = logging.getLogger("test.providerkit")


class MalformedError(ValueError):
    """The test provider's own error for a NodeClass it cannot parse."""


@attrs.frozen
class FakeNodeClass:
    name: str
    deletion_timestamp: str | None = None
    readiness: bool | None = True
    message: str = "all good"
    generation: int = 1

    def ready(self) -> bool | None:
        return self.readiness

    def ready_message(self) -> str:
        return self.message


class Classes:
    """A provider's ``get(kube, name)``: None for a missing class, MalformedError for
    one named ``bad``."""

    def __init__(self, *classes: FakeNodeClass) -> None:
        self.classes = {c.name: c for c in classes}
        self.asked: list[str] = []

    def __call__(self, kube: KubeClient, name: str) -> FakeNodeClass | None:
        self.asked.append(name)
        if name == "bad":
            raise MalformedError("spec.thing: must be a string")
        return self.classes.get(name)


@pytest.fixture
def clock() -> VirtualClock:
    return VirtualClock()


@pytest.fixture
def kube(clock: VirtualClock) -> InMemoryApiServer:
    return InMemoryApiServer(clock)


@pytest.fixture
def recorder(clock: VirtualClock) -> EventRecorder:
    return EventRecorder(clock)


def _claim(name: str = "main", **kw: object) -> NodeClaim:
    ref = {**REF, "name": name}
    return NodeClaim.from_dict(builders.nodeclaim("claim-1", node_class=ref, **kw))  # type: ignore[arg-type]


def _launch(kube: KubeClient, nc: NodeClaim, get: Classes, rec: EventRecorder | None, **kw):  # type: ignore[no-untyped-def]
    return launch_nodeclass(kube, nc, get, kind=KIND, malformed=MalformedError, recorder=rec, **kw)


# ---------------------------------------------------------------- launch


def test_a_ready_class_is_returned(kube: InMemoryApiServer, recorder: EventRecorder) -> None:
    main = FakeNodeClass("main")
    assert _launch(kube, _claim(), Classes(main), recorder) is main
    assert recorder.events == []


@pytest.mark.parametrize(
    ("classes", "why"),
    [
        ((), "not found"),
        ((FakeNodeClass("main", deletion_timestamp="2026-01-01T00:00:00Z"),), "is terminating"),
    ],
)
def test_a_missing_or_terminating_class_is_insufficient_capacity_with_an_event(
    kube: InMemoryApiServer, recorder: EventRecorder, classes: tuple[FakeNodeClass, ...], why: str
) -> None:
    with pytest.raises(InsufficientCapacityError) as err:
        _launch(kube, _claim(), Classes(*classes), recorder)
    assert str(err.value).endswith(f", resolving nodeclass, {KIND} 'main' {why}")
    [event] = recorder.for_object("NodeClaim", "claim-1")
    assert (event.type, event.reason) == ("Warning", "FailedResolveNodeClass")
    assert event.message == f"Failed resolving NodeClass: {KIND} 'main' {why}"


def test_without_a_recorder_no_event_is_needed(kube: InMemoryApiServer) -> None:
    with pytest.raises(InsufficientCapacityError):
        _launch(kube, _claim(), Classes(), None)


def test_a_claim_without_a_reference_is_not_looked_up(
    kube: InMemoryApiServer, recorder: EventRecorder
) -> None:
    get = Classes(FakeNodeClass(""))
    with pytest.raises(InsufficientCapacityError, match="'' not found"):
        _launch(kube, _claim(name=""), get, recorder)
    assert get.asked == []


def test_a_malformed_class_is_not_ready(kube: InMemoryApiServer, recorder: EventRecorder) -> None:
    with pytest.raises(NodeClassNotReadyError, match=r"spec\.thing: must be a string$") as err:
        _launch(kube, _claim("bad"), Classes(), recorder)
    assert isinstance(err.value.__cause__, MalformedError)
    assert recorder.events == []


def test_ready_false_is_not_ready_with_the_condition_message(kube: InMemoryApiServer) -> None:
    main = FakeNodeClass("main", readiness=False, message="no subnets")
    with pytest.raises(NodeClassNotReadyError, match=r", no subnets$"):
        _launch(kube, _claim(), Classes(main), None)


def test_ready_unknown_is_a_create_error(kube: InMemoryApiServer) -> None:
    main = FakeNodeClass("main", readiness=None, message="waiting")
    with pytest.raises(CreateError) as err:
        _launch(kube, _claim(), Classes(main), None)
    assert str(err.value).endswith(
        ", resolving nodeclass readiness, nodeclass is in Ready=Unknown, waiting"
    )
    assert err.value.condition_reason == "NodeClassReadinessUnknown"
    assert err.value.condition_message == "NodeClass is in Ready=Unknown"


def test_on_unknown_may_raise_something_more_precise(kube: InMemoryApiServer) -> None:
    seen: list[FakeNodeClass] = []

    def stale(nodeclass: FakeNodeClass) -> None:
        seen.append(nodeclass)
        if nodeclass.generation > 1:
            raise NodeClassNotReadyError("not reconciled")

    fresh, newer = (
        FakeNodeClass("main", readiness=None),
        FakeNodeClass("new", readiness=None, generation=2),
    )
    with pytest.raises(CreateError):
        _launch(kube, _claim(), Classes(fresh), None, on_unknown=stale)
    with pytest.raises(NodeClassNotReadyError, match="not reconciled"):
        _launch(kube, _claim("new"), Classes(newer), None, on_unknown=stale)
    assert seen == [fresh, newer]


def test_a_provider_keeps_its_wording(kube: InMemoryApiServer) -> None:
    kw = {"missing_noun": "node class", "unknown_noun": "NodeClass"}
    with pytest.raises(
        InsufficientCapacityError, match=f", resolving node class, {KIND} 'main' not found$"
    ):
        _launch(kube, _claim(), Classes(), None, **kw)
    with pytest.raises(
        CreateError, match=r", resolving NodeClass readiness, NodeClass is in Ready=Unknown, x$"
    ):
        _launch(
            kube, _claim(), Classes(FakeNodeClass("main", readiness=None, message="x")), None, **kw
        )


# ---------------------------------------------------------------- NodePool / drift


def _pool(name: str = "main") -> NodePool:
    return NodePool.from_dict(builders.nodepool("pool", node_class={**REF, "name": name}))


def _nodepool_nodeclass(kube: KubeClient, pool: NodePool, get: Classes, rec: EventRecorder):  # type: ignore[no-untyped-def]
    return nodepool_nodeclass(
        kube, pool, get, kind=KIND, malformed=MalformedError, recorder=rec, log=log
    )


def test_a_nodepools_class(kube: InMemoryApiServer, recorder: EventRecorder) -> None:
    main = FakeNodeClass("main")
    assert _nodepool_nodeclass(kube, _pool(), Classes(main), recorder) is main


@pytest.mark.parametrize(
    "classes", [(), (FakeNodeClass("main", deletion_timestamp="2026-01-01T00:00:00Z"),)]
)
def test_a_nodepools_missing_class_is_none_with_an_event(
    kube: InMemoryApiServer, recorder: EventRecorder, classes: tuple[FakeNodeClass, ...]
) -> None:
    assert _nodepool_nodeclass(kube, _pool(), Classes(*classes), recorder) is None
    [event] = recorder.for_object("NodePool", "pool")
    assert (event.type, event.reason) == ("Warning", "FailedResolveNodeClass")
    assert event.message == f"Failed resolving NodeClass: {KIND} 'main' not found"


def test_a_nodepools_malformed_class_is_none_with_a_warning(
    kube: InMemoryApiServer, recorder: EventRecorder, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger=log.name):
        assert _nodepool_nodeclass(kube, _pool("bad"), Classes(), recorder) is None
    assert "nodepool pool: spec.thing: must be a string" in caplog.text
    assert recorder.events == []


def test_a_nodepool_without_a_reference(kube: InMemoryApiServer, recorder: EventRecorder) -> None:
    get = Classes()
    assert _nodepool_nodeclass(kube, _pool(""), get, recorder) is None
    assert get.asked == []
    assert recorder.events == []


def test_drift_is_judged_against_the_pools_class(kube: InMemoryApiServer) -> None:
    kube.create(builders.nodepool("pool", node_class=REF))
    main = FakeNodeClass("main")
    found = drift_nodeclass(
        kube, _claim(nodepool="pool"), Classes(main), malformed=MalformedError, log=log
    )
    assert found is not None
    pool, nodeclass = found
    assert (pool.name, nodeclass) == ("pool", main)


def test_no_drift_class_without_a_cluster_a_pool_or_a_class(
    kube: InMemoryApiServer, caplog: pytest.LogCaptureFixture
) -> None:
    get = Classes(FakeNodeClass("main", deletion_timestamp="2026-01-01T00:00:00Z"))
    assert (
        drift_nodeclass(None, _claim(nodepool="pool"), get, malformed=MalformedError, log=log)
        is None
    )
    assert (
        drift_nodeclass(kube, _claim(), get, malformed=MalformedError, log=log) is None
    )  # no nodepool label
    assert (
        drift_nodeclass(kube, _claim(nodepool="pool"), get, malformed=MalformedError, log=log)
        is None
    )  # no such pool
    kube.create(builders.nodepool("pool", node_class=REF))
    assert (
        drift_nodeclass(kube, _claim(nodepool="pool"), get, malformed=MalformedError, log=log)
        is None
    )  # terminating
    assert (
        drift_nodeclass(kube, _claim(nodepool="pool"), Classes(), malformed=MalformedError, log=log)
        is None
    )  # missing
    kube.create(builders.nodepool("other", node_class={**REF, "name": "bad"}))
    with caplog.at_level(logging.WARNING, logger=log.name):
        assert (
            drift_nodeclass(kube, _claim(nodepool="other"), get, malformed=MalformedError, log=log)
            is None
        )
    assert "drift of claim-1: spec.thing: must be a string" in caplog.text


# ---------------------------------------------------------------- the NodeClaim view


def test_the_nodeclaim_view_of_an_instance() -> None:
    it = instance_type(
        "big",
        cpu=4,
        requirements=[
            Requirement.new("example.com/reserved", IN, ["r-1"]),
            Requirement.new(wk.LABEL_INSTANCE_TYPE, IN, ["Big"]),
        ],
    )
    now = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
    out = instance_nodeclaim(
        it,
        name="claim-1",
        defaults={wk.LABEL_INSTANCE_TYPE: "big"},
        labels={wk.LABEL_TOPOLOGY_ZONE: "zone-a", wk.CAPACITY_TYPE_LABEL_KEY: "spot"},
        provider_id="fake:///zone-a/i-1",
        image_id="image-1",
        created=datetime(2026, 5, 1, 11, 0, tzinfo=UTC),
        deleting_since=now,
        skip_labels={"example.com/reserved"},
    )
    labels = out.metadata.labels
    assert labels[wk.LABEL_INSTANCE_TYPE] == "Big"  # the type's label beats a default
    assert labels[wk.LABEL_ARCH] == "amd64"
    assert "example.com/reserved" not in labels
    assert labels[wk.LABEL_TOPOLOGY_ZONE] == "zone-a"  # the instance's own labels win
    assert labels[wk.CAPACITY_TYPE_LABEL_KEY] == "spot"
    assert wk.LABEL_OS not in labels  # several values: not a label
    assert out.name == "claim-1"
    assert out.metadata.creation_timestamp == "2026-05-01T11:00:00Z"
    assert out.metadata.deletion_timestamp == "2026-05-01T12:00:00Z"
    assert out.status is not None
    assert (out.status.provider_id, out.status.image_id) == ("fake:///zone-a/i-1", "image-1")
    assert out.status.capacity["cpu"] == "4"
    assert out.status.capacity["pods"] == "5"
    assert set(out.status.allocatable) <= set(out.status.capacity)


def test_the_nodeclaim_view_without_a_type_drops_zeros_and_timestamps() -> None:
    out = instance_nodeclaim(
        None,
        name=None,
        labels={"a": "1"},
        provider_id="p",
        image_id=None,
        created=None,
        deleting_since=None,
    )
    assert out.metadata.labels == {"a": "1"}
    assert out.metadata.creation_timestamp is None and out.metadata.deletion_timestamp is None
    assert out.status is not None and out.status.capacity == {} and out.status.allocatable == {}
    zero = instance_nodeclaim(
        instance_type("gpu", extra={"example.com/gpu": 0}),
        name=None,
        labels={},
        provider_id="p",
        image_id=None,
        created=None,
        deleting_since=None,
    )
    assert zero.status is not None and "example.com/gpu" not in zero.status.capacity


# ---------------------------------------------------------------- describing a request


def test_describe_requested() -> None:
    assert describe_requested(Requirements()) == "any offering"
    reqs = Requirements(
        Requirement.new(wk.LABEL_INSTANCE_TYPE, IN, [f"t{i:02}" for i in range(12)]),
        Requirement.new(wk.LABEL_TOPOLOGY_ZONE, NOT_IN, ["zone-b"]),
        Requirement.new(wk.CAPACITY_TYPE_LABEL_KEY, IN, ["spot", "on-demand"]),
    )
    assert describe_requested(reqs) == (
        "instance types t00, t01, t02, t03, t04, t05, t06, t07, t08, t09 and 2 more; "
        "capacity types on-demand, spot"
    )
    assert describe_requested(reqs, shown=1).startswith("instance types t00 and 11 more; ")


# ---------------------------------------------------------------- as_nodeclaim


def test_as_nodeclaim() -> None:
    nc = _claim()
    assert as_nodeclaim(nc) is nc
    assert as_nodeclaim(nc.to_dict()) == nc
    with pytest.raises(TypeError, match="expected a NodeClaim, got int"):
        as_nodeclaim(3)  # type: ignore[arg-type]


def test_ensure_hash_annotations_stamps_the_class_and_restamps_its_nodeclaims() -> None:
    from karpenter_core.cloudprovider.providerkit import ensure_hash_annotations

    server = InMemoryApiServer(VirtualClock())
    cls = server.create(builders.nodeclass("test", ready=None))
    resource = (cls["apiVersion"], cls["kind"])
    ref = {"group": cls["apiVersion"].split("/")[0], "kind": cls["kind"], "name": "test"}

    def claim(name: str, drifted: bool = False, kind: str = cls["kind"]) -> None:
        obj = builders.nodeclaim(name)
        obj["spec"]["nodeClassRef"] = {**ref, "kind": kind}
        obj["metadata"]["annotations"] = {"h": "old", "v": "1"}
        server.create(obj)
        if drifted:
            status = {"conditions": [builders.condition("Drifted", "True")]}
            server.patch(
                ("karpenter.sh/v1", "NodeClaim"), name, {"status": status}, subresource="status"
            )

    claim("fresh")
    claim("drifted", drifted=True)
    claim("other", kind="OtherNodeClass")
    kw = {"hash_key": "h", "version_key": "v", "kind": cls["kind"]}
    out = ensure_hash_annotations(server, resource, cls, {"h": "new", "v": "2"}, **kw)
    assert out is not None and out["metadata"]["annotations"] == {"h": "new", "v": "2"}

    def annotations(name: str) -> dict[str, str]:
        return dict(server.get(("karpenter.sh/v1", "NodeClaim"), name)["metadata"]["annotations"])

    assert annotations("fresh") == {"h": "new", "v": "2"}
    assert annotations("drifted") == {"h": "old", "v": "2"}
    assert annotations("other") == {"h": "old", "v": "1"}
    # already current: returned as is, nothing written
    assert ensure_hash_annotations(server, resource, out, {"h": "new", "v": "2"}, **kw) is out
