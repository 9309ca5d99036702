"""What wakes the static controllers, and the StaticCapacity gate."""

from __future__ import annotations

import copy
from typing import Any

from static_harness import NODEPOOL_LABEL, World

from karpenter_core.controllers.state import informers
from karpenter_core.controllers.static import (
    NodeClaimDeleting,
    NodePoolChanged,
    nodepool_of_nodeclaim,
)
from karpenter_core.operator.controllers import CONTROLLER_PACKAGES, register_all
from karpenter_core.runtime.manager import Manager
from karpenter_core.runtime.options import Options
from karpenter_core.runtime.reconciler import ObjectKey


def np_obj(replicas: int | None = 3, ready: bool = True) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "template": {
            "spec": {
                "nodeClassRef": {
                    "group": "karpenter.kwok.sh",
                    "kind": "KWOKNodeClass",
                    "name": "default",
                }
            }
        }
    }
    if replicas is not None:
        spec["replicas"] = replicas
    return {
        "metadata": {"name": "p"},
        "spec": spec,
        "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
    }


def test_nodepool_predicate_for_provisioning() -> None:
    pred = NodePoolChanged(World().ctx, on_ready=True)
    assert pred("ADDED", np_obj(ready=False))
    assert not pred("MODIFIED", np_obj(ready=False))  # nothing it cares about changed
    assert pred("MODIFIED", np_obj(ready=True))  # NotReady -> Ready
    assert not pred("MODIFIED", np_obj(ready=True))
    assert not pred("MODIFIED", np_obj(ready=False))  # Ready -> NotReady
    assert pred("MODIFIED", np_obj(replicas=5, ready=False))  # replicas changed
    assert not pred("DELETED", np_obj(replicas=5))


def test_nodepool_predicate_for_deprovisioning_ignores_readiness() -> None:
    pred = NodePoolChanged(World().ctx, on_ready=False)
    assert pred("ADDED", np_obj(ready=False))
    assert not pred("MODIFIED", np_obj(ready=True))
    assert pred("MODIFIED", np_obj(replicas=1))


def test_nodepool_predicate_ignores_dynamic_and_unmanaged_pools() -> None:
    pred = NodePoolChanged(World().ctx, on_ready=True)
    assert not pred("ADDED", np_obj(replicas=None))
    unmanaged = np_obj()
    unmanaged["spec"]["template"]["spec"]["nodeClassRef"]["kind"] = "OtherNodeClass"
    unmanaged["metadata"]["name"] = "q"
    assert not pred("ADDED", unmanaged)


def nc_obj(deleting: bool = False, pool: str | None = "p") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "nc", "labels": {NODEPOOL_LABEL: pool} if pool else {}}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {"metadata": meta}


def test_nodeclaim_predicate_wakes_on_deletion_start_and_removal_only() -> None:
    pred = NodeClaimDeleting()
    assert not pred("ADDED", nc_obj())
    assert not pred("MODIFIED", nc_obj())
    assert pred("MODIFIED", nc_obj(deleting=True))
    assert not pred("MODIFIED", nc_obj(deleting=True))  # already known to be deleting
    assert pred("DELETED", nc_obj(deleting=True))


def test_nodeclaim_events_map_to_their_nodepool() -> None:
    assert list(nodepool_of_nodeclaim("DELETED", nc_obj())) == [ObjectKey("", "p")]
    assert list(nodepool_of_nodeclaim("DELETED", nc_obj(pool=None))) == []


def running(options: Options) -> tuple[World, Manager, list[str]]:
    """A world whose manager runs the state informers and whatever the registry turns on
    of the static package."""
    w = World(options)
    manager = Manager(w.clock, w.kube)
    w.cluster.set_synced(False)
    informers.register(manager, w.ctx)
    static = [p for p in CONTROLLER_PACKAGES if p.name == "static"]
    reg = register_all(manager, w.ctx, packages=static)
    return w, manager, list(reg.controllers)


def test_gate_off_registers_nothing_and_nothing_is_launched() -> None:
    w, manager, controllers = running(Options())
    assert controllers == []
    w.nodepool(replicas=3)
    manager.run_for(120)
    assert w.nodeclaims() == []


def test_gate_on_a_new_static_pool_is_filled_and_a_replicas_change_is_followed() -> None:
    w, manager, controllers = running(Options.from_env({"FEATURE_GATES": "StaticCapacity=true"}))
    assert controllers == ["static.provisioning", "static.deprovisioning"]
    w.nodepool(replicas=3)
    manager.run_for(5)
    assert len(w.live_nodeclaims()) == 3
    w.set_replicas(1)
    manager.run_for(5)
    assert len(w.live_nodeclaims()) == 1


def test_gate_on_a_deleted_nodeclaim_is_replaced_before_the_periodic_look() -> None:
    w, manager, _ = running(Options.from_env({"FEATURE_GATES": "StaticCapacity=true"}))
    w.nodepool(replicas=2)
    manager.run_for(5)
    (victim, _other) = sorted(w.live_nodeclaims())
    w.kube.delete("nodeclaims", victim)
    manager.run_for(5)  # well inside the one-minute resync
    live = w.live_nodeclaims()
    assert victim not in live and len(live) == 2


def test_copy_of_predicate_state_is_per_instance() -> None:
    a = NodePoolChanged(World().ctx, on_ready=True)
    b = NodePoolChanged(World().ctx, on_ready=True)
    obj = np_obj()
    assert a("ADDED", obj)
    assert b("MODIFIED", copy.deepcopy(obj))  # b never saw it: treated as new
