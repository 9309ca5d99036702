"""The Manager on a wall clock: reconcilers in worker threads fed by watches, singletons on
timers, and a guard that holds every reconcile until it allows."""

from __future__ import annotations

import threading
from typing import Any

from karpenter_core.kube.client import ApiError
from karpenter_core.runtime.clock import WallClock
from karpenter_core.runtime.manager import Manager
from karpenter_core.runtime.reconciler import Result, Watch
from karpenter_core.sim.apiserver import InMemoryApiServer


def configmap(name: str, namespace: str = "default") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace},
    }


# ---------------------------------------------------------------- real time


def test_wall_clock_manager_reconciles_watch_events_in_threads() -> None:
    clock = WallClock()
    server = InMemoryApiServer(clock)
    seen: list[Any] = []
    arrived = threading.Event()

    class Collect:
        def reconcile(self, key: Any) -> Result:
            seen.append(key)
            if len(seen) >= 2:
                arrived.set()
            return Result()

    manager = Manager(clock, server)
    manager.add_controller("cm", Collect(), watches=[Watch("configmaps")], workers=2)
    with manager:
        server.create(configmap("a"))
        server.create(configmap("b"))
        assert arrived.wait(10)
    assert sorted(str(k) for k in seen) == ["default/a", "default/b"]


def test_wall_clock_singleton_runs_after_start() -> None:
    clock = WallClock()
    ran = threading.Event()

    class Once:
        def reconcile(self) -> Result:
            ran.set()
            return Result()

    manager = Manager(clock)
    manager.add_singleton("once", Once())
    with manager:
        assert ran.wait(10)


def test_a_guard_that_refuses_holds_every_reconcile_until_it_allows() -> None:
    clock = WallClock()
    server = InMemoryApiServer(clock)
    allowed = threading.Event()
    asked = threading.Event()
    seen: list[Any] = []
    done = threading.Event()

    def guard() -> None:
        asked.set()
        if not allowed.is_set():
            raise ApiError("not the leader", code=503, reason="LeadershipLost")

    class Collect:
        def reconcile(self, key: Any) -> Result:
            seen.append(key)
            done.set()
            return Result()

    manager = Manager(clock, server, guard=guard)
    manager.add_controller("cm", Collect(), watches=[Watch("configmaps")])
    with manager:
        server.create(configmap("a"))
        assert asked.wait(10)
        assert seen == []  # refused: nothing reconciled
        allowed.set()
        assert done.wait(10)
    assert [str(k) for k in seen] == ["default/a"]
