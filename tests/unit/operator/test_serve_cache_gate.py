"""``serve`` starts its controllers only once every shared cache has listed (as
controller-runtime does), so nothing reads the API server in place of a cache that is
still filling — cluster state would keep those uncached copies."""

from __future__ import annotations

from karpenter_core.kube.informer import SharedInformers, compact_object
from karpenter_core.operator.serve import Operator, ServeConfig
from karpenter_core.runtime.clock import VirtualClock
from karpenter_core.sim.apiserver import InMemoryApiServer


def test_controllers_wait_for_every_shared_cache() -> None:
    server = InMemoryApiServer(VirtualClock(), seed=1)
    operator = Operator(ServeConfig(), client=server, configure_logs=False)
    informers = SharedInformers(server, transform=compact_object)
    pods, nodes = informers.informer("pods"), informers.informer("nodes")
    operator.informers = informers
    assert not operator._caches_synced()
    pods.pump()
    assert not operator._caches_synced()  # nodes still listing
    nodes.pump()
    assert operator._caches_synced()


def test_freeze_heap_leaves_what_exists_out_of_later_collections() -> None:
    import gc

    from karpenter_core.operator.serve import freeze_heap

    cached = [{"metadata": {"name": f"p{i}"}} for i in range(100)]
    try:
        freeze_heap()
        assert gc.get_freeze_count() >= len(cached)
        assert all(gc.is_tracked(o) for o in cached)  # still tracked, merely frozen
    finally:
        gc.unfreeze()


def test_the_second_freeze_waits_for_synced_state_and_idle_controllers() -> None:
    from types import SimpleNamespace

    server = InMemoryApiServer(VirtualClock(), seed=1)
    operator = Operator(ServeConfig(), client=server, configure_logs=False)
    assert not operator._first_burst_done()  # no controllers yet

    class Queue:
        ready = True

        def has_ready(self) -> bool:
            return self.ready

    queue = Queue()
    synced = SimpleNamespace(value=False)
    operator.manager = SimpleNamespace(controllers=[SimpleNamespace(queue=queue)])  # type: ignore[assignment]
    operator._cluster = SimpleNamespace(has_synced=lambda: synced.value)
    assert not operator._first_burst_done()  # state not synced
    synced.value = True
    assert not operator._first_burst_done()  # a controller has work ready
    queue.ready = False
    assert operator._first_burst_done()
    operator.manager = None
