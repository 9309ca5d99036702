"""The hand-off between the NodeClaim's finalizer (nodeclaim.lifecycle) and the Node's
(node.termination): deleting either object ends with both gone, the node drained first
and the instance terminated."""

from __future__ import annotations

from datetime import timedelta

import pytest
from termination_helpers import Env

from karpenter_core.apis import labels as wk
from karpenter_core.controllers import nodeclaim as nodeclaim_controllers
from karpenter_core.runtime.clock import format_time
from karpenter_core.testing import builders as b

READY = [
    {"type": t, "status": "True", "reason": t, "message": ""}
    for t in ("Launched", "Registered", "Initialized", "Ready")
]


def _env() -> Env:
    env = Env()
    nodeclaim_controllers.register(env.manager, env.ctx)
    node = env.node()
    env.nodeclaim(node, conditions=READY)
    env.server.patch(
        "nodes",
        "node-a",
        {"metadata": {"labels": {wk.NODE_REGISTERED_LABEL_KEY: "true"}}},
    )
    return env


@pytest.mark.parametrize("delete", ["nodeclaim", "node"])
def test_deleting_either_object_drains_then_removes_both(delete: str) -> None:
    env = _env()
    env.pod("app", grace=10)
    env.run_for(5)
    drained_while_node_existed: list[bool] = []
    real_delete = env.cloud.delete

    def observed(nodeclaim):  # type: ignore[no-untyped-def]
        drained_while_node_existed.append(env.get_pod("app") is None)
        return real_delete(nodeclaim)

    env.cloud.delete = observed  # type: ignore[method-assign]
    if delete == "nodeclaim":
        env.server.delete("nodeclaims", "node-a-claim")
    else:
        env.delete_node()
    env.run_for(120)
    assert env.get_node() is None
    assert env.get_nodeclaim("node-a-claim") is None
    assert env.get_pod("app") is None
    assert env.cloud.instances == {}
    assert drained_while_node_existed and all(drained_while_node_existed)
    assert [e.name for e in env.events("Evicted")] == ["app"]


def test_a_nodeclaim_termination_grace_period_forces_a_blocked_drain() -> None:
    env = _env()
    env.server.patch("nodeclaims", "node-a-claim", {"spec": {"terminationGracePeriod": "2m"}})
    env.pod("guarded", labels={"app": "a"}, grace=30)
    env.create(b.pdb("guard", labels={"app": "a"}, max_unavailable=0))
    env.run_for(5)
    start = env.clock.now()
    env.server.delete("nodeclaims", "node-a-claim")
    env.run_for(60)
    nc = env.get_nodeclaim("node-a-claim")
    assert nc is not None
    deadline = nc["metadata"]["annotations"][wk.NODECLAIM_TERMINATION_TIMESTAMP_ANNOTATION_KEY]
    assert deadline == format_time(start + timedelta(minutes=2))
    assert env.get_pod("guarded") is not None
    env.run_for(120)
    assert env.events("Disrupted")
    assert env.get_node() is None
    assert env.get_nodeclaim("node-a-claim") is None
