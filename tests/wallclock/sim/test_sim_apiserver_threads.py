"""The in-memory API server under concurrent writers (it is a thread-safe KubeClient for
``karpenter serve`` on the in-memory server)."""

from __future__ import annotations

import threading
from typing import Any

from karpenter_core.sim.apiserver import InMemoryApiServer


def cm(name: str, namespace: str = "default", **meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, **meta},
    }


def test_concurrent_writers_get_unique_resource_versions() -> None:
    server = InMemoryApiServer()
    rvs: list[int] = []
    lock = threading.Lock()

    def writer(w: int) -> None:
        for i in range(200):
            created = server.create(cm(f"w{w}-{i}"))
            with lock:
                rvs.append(int(created["metadata"]["resourceVersion"]))

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert len(rvs) == 1600
    assert len(set(rvs)) == 1600
    assert server.count("configmaps", "default") == 1600
