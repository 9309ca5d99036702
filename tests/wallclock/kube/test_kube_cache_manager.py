"""A wall-clock Manager fed by shared informers (the CachedClient's caches under
``karpenter serve``): one watch per resource, and nothing heard once stopped."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from karpenter_core.kube.cache import CachedClient
from karpenter_core.kube.client import KubeClient
from karpenter_core.kube.informer import SharedInformers
from karpenter_core.runtime.clock import VirtualClock, WallClock
from karpenter_core.runtime.manager import Manager
from karpenter_core.runtime.reconciler import ObjectKey, Result, Watch
from karpenter_core.sim.apiserver import InMemoryApiServer


class Counting:
    """The in-memory server, counting the reads and watches that reach it."""

    def __init__(self, server: InMemoryApiServer) -> None:
        self.server = server
        self.calls: dict[str, int] = {"get": 0, "list": 0, "watch": 0}

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.server, name)
        if name in self.calls:

            def counted(*args: Any, **kwargs: Any) -> Any:
                self.calls[name] += 1
                return attr(*args, **kwargs)

            return counted
        return attr


def _ns(server: InMemoryApiServer, name: str) -> None:
    server.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})


def _pod(name: str, ns: str = "a", node: str | None = None, **labels: str) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "i"}]}
    if node:
        spec["nodeName"] = node
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "labels": labels},
        "spec": spec,
    }


def _wait(check: Callable[[], bool], timeout: float = 10.0) -> bool:
    done = threading.Event()
    for _ in range(int(timeout / 0.01)):
        if check():
            return True
        done.wait(0.01)
    return check()


def test_a_manager_with_shared_informers_opens_one_watch_per_resource() -> None:
    server = InMemoryApiServer(WallClock(), seed=1)
    _ns(server, "a")
    counting = Counting(server)
    client: KubeClient = counting  # type: ignore[assignment]
    informers = SharedInformers(client)
    cached = CachedClient(client, informers, ["pods"])
    seen: dict[str, list[ObjectKey]] = {"one": [], "two": []}
    reads: list[str] = []

    class Recorder:
        def __init__(self, name: str) -> None:
            self.name = name

        def reconcile(self, key: ObjectKey) -> Result:
            # what the watch woke us for is already in the cache we read
            reads.append(cached.get("pods", key.name, key.namespace)["metadata"]["name"])
            seen[self.name].append(key)
            return Result()

    server.create(_pod("before"))
    manager = Manager(WallClock(), cached, informers=informers)
    manager.add_controller("one", Recorder("one"), watches=[Watch("pods")])
    manager.add_controller("two", Recorder("two"), watches=[Watch("pods")])
    informers.start()
    try:
        with manager:
            server.create(_pod("later"))
            assert _wait(lambda: all(len(v) >= 2 for v in seen.values()))
            watches = counting.calls["watch"]
            gets = counting.calls["get"]
    finally:
        informers.stop()
    for keys in seen.values():
        assert {ObjectKey("a", "before"), ObjectKey("a", "later")} <= set(keys)
    assert watches == 1
    assert gets == 0
    assert sorted(set(reads)) == ["before", "later"]


def test_a_stopped_manager_no_longer_hears_from_the_informers() -> None:
    server = InMemoryApiServer(VirtualClock(), seed=1)
    _ns(server, "a")
    informers = SharedInformers(server)
    manager = Manager(WallClock(), server, informers=informers)

    class Nothing:
        def reconcile(self, key: ObjectKey) -> Result:
            return Result()

    manager.add_controller("c", Nothing(), watches=[Watch("pods")])
    manager.start()
    inf = informers.informer("pods")
    assert len(inf._handlers) == 1
    manager.stop()
    assert inf._handlers == []
