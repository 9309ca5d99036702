"""KubeClient contract: watches on cluster-scoped kinds (Nodes) see later changes."""

from __future__ import annotations

from karpenter_core.kube.client import ADDED, DELETED, MODIFIED, KubeClient


def _node(name: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}}


def test_cluster_scoped_watch_sees_objects_created_after_it_opened(
    kube_client: KubeClient, namespace: str
) -> None:
    name = f"watched-{namespace}"
    start = kube_client.list("nodes").resource_version
    stream = kube_client.watch("nodes", resource_version=start)
    try:
        created = kube_client.create(_node(name))
        kube_client.update(dict(created, metadata=dict(created["metadata"], labels={"a": "b"})))
        kube_client.delete("nodes", name)
        seen: list[tuple[str, str]] = []
        while len(seen) < 3:
            batch = stream.poll(10.0)
            if not batch:
                break
            seen.extend(
                (e.type, e.object["metadata"]["name"])
                for e in batch
                if e.object["metadata"]["name"] == name
            )
    finally:
        stream.stop()
    assert seen == [(ADDED, name), (MODIFIED, name), (DELETED, name)]
