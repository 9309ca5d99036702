"""The scheduling simulation behind disruption decisions (spec disruption §5)."""

from __future__ import annotations

import pytest
from disruption_harness import World

from karpenter_core.disruption.simulation import CandidateDeletingError, simulate_scheduling
from karpenter_core.disruption.types import CLASS_EVENTUAL, CLASS_GRACEFUL, Candidate


def candidate(world: World, name: str, cls: str = CLASS_GRACEFUL) -> Candidate:
    return next(c for c in world.candidates(cls) if c.name() == name)


def placed(results: object, node: str) -> list[str]:
    for e in results.existing_nodes:  # type: ignore[attr-defined]
        if e.name == node:
            return sorted(p.name for p in e.pods)
    return []


def test_pods_move_to_a_remaining_node_with_room() -> None:
    world = World()
    world.nodepool()
    world.node("a", instance_type="fake-it-3")
    world.node("b", instance_type="fake-it-3")
    world.pod("p1", "a")
    world.pod("p2", "b")
    results = world.simulate([candidate(world, "b")])
    assert results.all_non_pending_pods_scheduled()
    assert results.new_nodeclaims == []
    assert placed(results, "a") == ["p2"]
    # the candidate is not existing capacity any more
    assert all(e.name != "b" for e in results.existing_nodes)


def test_pods_without_room_need_a_new_nodeclaim() -> None:
    world = World()
    world.nodepool()
    world.node("a", instance_type="fake-it-0")
    world.pod("p1", "a", cpu="500m")
    results = world.simulate([candidate(world, "a")])
    assert results.all_non_pending_pods_scheduled()
    assert len(results.new_nodeclaims) == 1
    assert [p.name for p in results.new_nodeclaims[0].pods] == ["p1"]


def test_a_candidate_that_started_deleting_is_an_error() -> None:
    world = World()
    world.nodepool()
    world.node("a")
    c = candidate(world, "a")
    world.cluster.mark_for_deletion(world.pid("a"))
    with pytest.raises(CandidateDeletingError, match="a"):
        world.simulate([c])


def test_a_pod_only_fitting_on_an_uninitialized_node_is_an_error() -> None:
    world = World()
    world.nodepool()
    world.node("young", initialized=False, instance_type="fake-it-3")
    world.node("a", instance_type="fake-it-3")
    world.pod("p1", "a")
    results = world.simulate([candidate(world, "a")])
    assert placed(results, "young") == ["p1"]
    assert not results.all_non_pending_pods_scheduled()
    assert "uninitialized nodeclaim/young" in results.non_pending_pod_scheduling_errors()


def test_pods_held_by_do_not_disrupt_get_no_capacity() -> None:
    world = World()
    world.nodepool()
    world.node("a", termination_grace_period="300s")
    world.pod("held", "a", annotations={"karpenter.sh/do-not-disrupt": "true"})
    results = world.simulate([candidate(world, "a", CLASS_EVENTUAL)])
    assert results.new_nodeclaims == []
    assert results.all_non_pending_pods_scheduled()


def test_pods_behind_a_fully_blocking_pdb_get_no_capacity() -> None:
    world = World()
    world.nodepool()
    world.node("a", termination_grace_period="300s")
    world.pod("held", "a")
    world.pdb(max_unavailable=0)
    results = world.simulate([candidate(world, "a", CLASS_EVENTUAL)])
    assert results.new_nodeclaims == []


def test_pending_pods_are_scheduled_too_and_may_stay_pending() -> None:
    world = World()
    world.nodepool()
    world.node("a", instance_type="fake-it-3")
    world.node("b", instance_type="fake-it-3")
    world.pod("running", "b")
    world.pod("huge", cpu="500")  # pending, fits no instance type
    results = world.simulate([candidate(world, "b")])
    assert placed(results, "a") == ["running"]
    assert results.pod_errors  # the pending pod did not fit
    assert results.all_non_pending_pods_scheduled()


def test_pods_of_deleting_nodes_are_scheduled_alongside() -> None:
    world = World()
    world.nodepool()
    world.node("a", instance_type="fake-it-4")
    world.node("b", instance_type="fake-it-1")
    world.node("leaving", instance_type="fake-it-1")
    world.pod("p-leaving", "leaving", cpu="1")
    world.pod("p-b", "b", cpu="1")
    world.cluster.mark_for_deletion(world.pid("leaving"))
    results = world.simulate([candidate(world, "b")])
    assert placed(results, "a") == ["p-b", "p-leaving"]


def test_consolidation_keeps_running_pods_off_nodes_inside_consolidate_after() -> None:
    world = World()
    world.nodepool(consolidate_after="1m")
    world.node("recent", instance_type="fake-it-3")
    world.node("b", instance_type="fake-it-3")
    world.pod("p", "b")
    nc = world.kube.get("nodeclaims", "recent")
    nc["status"]["lastPodEventTime"] = world.clock.now().strftime("%Y-%m-%dT%H:%M:%SZ")
    world.cluster.update_nodeclaim(
        world.kube.patch("nodeclaims", "recent", {"status": nc["status"]}, subresource="status")
    )
    c = candidate(world, "b")
    gated = world.simulate([c], consolidation=True)
    assert placed(gated, "recent") == []
    assert len(gated.new_nodeclaims) == 1
    # drift does not gate
    ungated = world.simulate([c])
    assert placed(ungated, "recent") == ["p"]
    # once the window has passed the node takes pods again
    world.clock.advance(61)
    later = world.simulate([c], consolidation=True)
    assert placed(later, "recent") == ["p"]


def test_a_snapshot_simulates_the_objects_listed_when_it_was_taken() -> None:
    world = World()
    world.nodepool()
    world.node("a", termination_grace_period="300s")
    world.pod("held", "a")
    c = candidate(world, "a", CLASS_EVENTUAL)
    snapshot = world.snapshot()
    assert len(simulate_scheduling(snapshot, [c]).new_nodeclaims) == 1
    world.pdb(max_unavailable=0)  # a PDB created after the snapshot is not in it...
    assert len(simulate_scheduling(snapshot, [c]).new_nodeclaims) == 1
    # ...the next pass's snapshot has it
    assert world.simulate([c]).new_nodeclaims == []


def test_a_snapshot_keeps_cluster_state_as_it_was_and_the_next_one_sees_changes() -> None:
    world = World()
    world.nodepool()
    world.node("a", instance_type="fake-it-3")
    world.node("b", instance_type="fake-it-3")
    world.pod("p", "b")
    c = candidate(world, "b")
    snapshot = world.snapshot()
    assert placed(simulate_scheduling(snapshot, [c]), "a") == ["p"]
    world.cluster.mark_for_deletion(world.pid("a"))
    assert placed(simulate_scheduling(snapshot, [c]), "a") == ["p"]
    assert placed(world.simulate([c]), "a") == []


def test_capacity_buffer_pods_are_scheduled_as_pending_pods() -> None:
    from karpenter_core.apis.objects import Pod

    world = World()
    world.nodepool()
    world.node("a", instance_type="fake-it-3")
    world.node("b", instance_type="fake-it-3")
    world.pod("p1", "a")
    world.pod("p2", "b")
    # a virtual pod: in no API server and no cluster state, only in the buffers' cache
    buffer_pod = Pod.from_dict(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "buffer-0", "namespace": "default", "uid": "buffer-0"},
            "spec": {
                "containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "1"}}}]
            },
            "status": {
                "phase": "Pending",
                "conditions": [
                    {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}
                ],
            },
        }
    )
    world.dctx.provisioner.virtual_pods = lambda: [buffer_pod]  # type: ignore[method-assign]
    results = world.simulate([candidate(world, "b")])
    # the buffer's room is kept: it lands next to the moved pod, and consolidation is not
    # refused if it could not (pending pods may stay pending)
    assert "buffer-0" in placed(results, "a") or any(
        p.name == "buffer-0" for nc in results.new_nodeclaims for p in nc.pods
    )
    assert results.all_non_pending_pods_scheduled()
