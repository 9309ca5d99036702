"""A KubeClient that reads from informer caches: controller-runtime's delegating client.

Against a real API server every ``get`` and ``list`` costs a request, and the operator's
client-side rate limit (``KUBE_CLIENT_QPS``) is shared by all of them. Controllers that
re-read the object a watch just delivered — the state informers read each pod on each of
its events — would queue their writes (NodeClaim creates) behind thousands of reads. Like
upstream's manager client, :class:`CachedClient` serves reads of the cached kinds from the
:class:`~karpenter_core.kube.informer.SharedInformers` that every replica keeps warm, and
sends writes, watches and reads of other kinds to the API server.

What callers see, and why it is safe:

* Reads return deep copies: callers may mutate what they get, as they may with a fresh
  response, without corrupting the cache other controllers read.
* Reads are as fresh as the watch, plus this process's own writes: the result of a create,
  update or patch goes into the cache at once (:meth:`Informer.remember`), so a controller
  that writes and then reads sees its write. Other writers' changes arrive with the watch,
  milliseconds later; a stale read is harmless because every write carries the
  resourceVersion it read, and a conflict is retried, as upstream.
* Until an informer has synced, its reads go to the API server, so nothing reads an empty
  cache as "no objects".
* Selectors the cache cannot answer as the server would (a field the kind does not
  support) go to the server, which gives its usual error.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Mapping
from typing import Any

from karpenter_core.kube.client import (
    KubeClient,
    NotFound,
    Obj,
    ObjectList,
    ResourceLike,
    ResourceType,
    WatchStream,
    deep_copy,
    resource_for,
    resource_of,
)
from karpenter_core.kube.informer import POD_NODE_NAME_INDEX, Informer, SharedInformers
from karpenter_core.kube.selectors import (
    SelectorError,
    field_value,
    parse_field_selector,
    parse_label_selector,
)

__all__ = ["CacheListingClient", "CachedClient"]


def _not_found(rt: ResourceType, name: str) -> NotFound:
    what = rt.plural if not rt.group else f"{rt.plural}.{rt.group}"
    return NotFound(f'{what} "{name}" not found', code=404, reason="NotFound")


class CachedClient:
    """Reads of ``kinds`` from ``informers``; everything else through ``client``.

    The informers for ``kinds`` are created (not started) here; the caller starts
    ``informers`` and owns its lifecycle. Attributes this class does not define (the
    adapter's ``host``, ``server_version``, ``has_resource``, ...) are the client's.
    """

    def __init__(
        self,
        client: KubeClient,
        informers: SharedInformers,
        kinds: Iterable[ResourceLike],
    ) -> None:
        self.client = client
        self.informers = informers
        self._cached: dict[tuple[str, str], Informer] = {}
        for kind in kinds:
            rt = resource_for(kind)
            self._cached[rt.key] = informers.informer(rt)
        # diagnostics (tests, debugging); unsynchronised, so approximate under threads
        self.cache_reads = 0
        self.api_reads = 0

    def __getattr__(self, name: str) -> Any:
        # only reached for attributes not defined here: the wrapped client's extras
        return getattr(self.client, name)

    def uncached(self) -> KubeClient:
        """The client behind the cache, for reads that must see the API server's state
        now (see :func:`~karpenter_core.kube.client.api_reader`)."""
        return self.client

    def _informer(self, rt: ResourceType) -> Informer | None:
        inf = self._cached.get(rt.key)
        return inf if inf is not None and inf.has_synced() else None

    # ------------------------------------------------------------------ reads

    def get(self, resource: ResourceLike, name: str, namespace: str | None = None) -> Obj:
        obj, cached = self._get(resource, name, namespace)
        if not cached:
            return obj
        copied: Obj = deep_copy(obj)
        return copied

    def get_shared(self, resource: ResourceLike, name: str, namespace: str | None = None) -> Obj:
        """:meth:`get` without the copy: the cached object itself, which the caller must
        not change (nor anything it hands it to). For readers that keep what they read:
        cluster state keeps every pod it is told of, and a private copy of each of
        150,000 pods would double the memory the pod cache takes."""
        return self._get(resource, name, namespace)[0]

    def _get(self, resource: ResourceLike, name: str, namespace: str | None) -> tuple[Obj, bool]:
        """The object and whether it came from the cache (else from the API server)."""
        rt = resource_for(resource)
        inf = self._informer(rt)
        if inf is None:
            self.api_reads += 1
            return self.client.get(rt, name, namespace), False
        self.cache_reads += 1
        key = f"{namespace or 'default'}/{name}" if rt.namespaced else name
        obj = inf.get(key)
        if obj is None:
            raise _not_found(rt, name)
        return obj, True

    def list(
        self,
        resource: ResourceLike,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> ObjectList:
        return self._list(resource, namespace, label_selector, field_selector, copy=True)

    def list_shared(
        self,
        resource: ResourceLike,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> ObjectList:
        """:meth:`list` without copies: the cached objects themselves, which the caller must
        not change (see :meth:`get_shared`)."""
        return self._list(resource, namespace, label_selector, field_selector, copy=False)

    def indexed_shared(
        self, resource: ResourceLike, index: str, value: str
    ) -> builtins.list[Obj] | None:
        """The cached objects whose ``index`` (an informer index, e.g.
        :data:`~karpenter_core.kube.informer.NODECLAIM_PROVIDER_ID_INDEX`) holds ``value``,
        uncopied as :meth:`list_shared`; None when the kind is not cached and synced or has
        no such index (the caller then lists and filters: the API server has no index)."""
        inf = self._informer(resource_for(resource))
        if inf is None or not inf.has_index(index):
            return None
        self.cache_reads += 1
        return inf.by_index(index, value)

    def _list(
        self,
        resource: ResourceLike,
        namespace: str | None,
        label_selector: str | None,
        field_selector: str | None,
        *,
        copy: bool,
    ) -> ObjectList:
        rt = resource_for(resource)
        inf = self._informer(rt)
        try:
            labels = parse_label_selector(label_selector)
            fields = parse_field_selector(field_selector)
        except SelectorError:
            inf = None  # the server words the error
        else:
            if inf is not None and not all(rt.supports_field(f) for f in fields.fields()):
                inf = None
        if inf is None:
            self.api_reads += 1
            return self.client.list(
                rt, namespace, label_selector=label_selector, field_selector=field_selector
            )
        self.cache_reads += 1
        node = fields.exact("spec.nodeName") if rt.key == ("v1", "Pod") else None
        candidates = inf.by_index(POD_NODE_NAME_INDEX, node) if node else inf.objects()
        ns = namespace if rt.namespaced else None
        wanted = fields.fields()
        items: list[Obj] = []
        for obj in candidates:
            meta = obj.get("metadata") or {}
            if ns is not None and meta.get("namespace") != ns:
                continue
            if not labels.empty and not labels.matches(meta.get("labels") or {}):
                continue
            if wanted and not fields.matches({f: field_value(obj, f) for f in wanted}):
                continue
            items.append(deep_copy(obj) if copy else obj)
        return ObjectList(items=items, resource_version=inf.resource_version or "")

    def watch(
        self,
        resource: ResourceLike,
        namespace: str | None = None,
        *,
        resource_version: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        allow_watch_bookmarks: bool = False,
        send_initial_events: bool = False,
        timeout_seconds: float | None = None,
    ) -> WatchStream:
        return self.client.watch(
            resource,
            namespace,
            resource_version=resource_version,
            label_selector=label_selector,
            field_selector=field_selector,
            allow_watch_bookmarks=allow_watch_bookmarks,
            send_initial_events=send_initial_events,
            timeout_seconds=timeout_seconds,
        )

    # ------------------------------------------------------------------ writes

    def _remember(self, obj: Obj | None) -> None:
        if not obj:
            return
        try:
            rt = resource_of(obj)
        except (LookupError, ValueError, TypeError):
            return
        inf = self._cached.get(rt.key)
        if inf is not None:
            inf.remember(deep_copy(obj))

    def create(self, obj: Mapping[str, Any], namespace: str | None = None) -> Obj:
        result = self.client.create(obj, namespace)
        self._remember(result)
        return result

    def update(self, obj: Mapping[str, Any]) -> Obj:
        result = self.client.update(obj)
        self._remember(result)
        return result

    def update_status(self, obj: Mapping[str, Any]) -> Obj:
        result = self.client.update_status(obj)
        self._remember(result)
        return result

    def patch(
        self,
        resource: ResourceLike,
        name: str,
        patch: Any,
        namespace: str | None = None,
        *,
        patch_type: str = "merge",
        subresource: str | None = None,
    ) -> Obj:
        result = self.client.patch(
            resource, name, patch, namespace, patch_type=patch_type, subresource=subresource
        )
        self._remember(result)
        return result

    def delete(
        self,
        resource: ResourceLike,
        name: str,
        namespace: str | None = None,
        *,
        propagation_policy: str | None = None,
        grace_period_seconds: int | None = None,
        preconditions: Mapping[str, str] | None = None,
    ) -> Obj | None:
        result = self.client.delete(
            resource,
            name,
            namespace,
            propagation_policy=propagation_policy,
            grace_period_seconds=grace_period_seconds,
            preconditions=preconditions,
        )
        # still present (finalizers, a graceful pod): its deletionTimestamp is news worth
        # reading at once; a completed deletion is left to the watch's DELETED event
        self._remember(result)
        return result

    def evict(self, name: str, namespace: str, *, grace_period_seconds: int | None = None) -> None:
        self.client.evict(name, namespace, grace_period_seconds=grace_period_seconds)

    def bind(self, name: str, namespace: str, node_name: str) -> None:
        self.client.bind(name, namespace, node_name)


class CacheListingClient:
    """The cloud provider's client under ``karpenter serve``: the API server for everything,
    except lists, which come from the informer caches once :meth:`attach` gives it the
    operator's :class:`CachedClient` (and its informer for the kind has synced).

    The provider is built before the informers start (its NodeClass kinds decide what the
    operator checks and caches), so it cannot be handed the cached client itself; and its
    ``get`` right after its own ``create`` must not depend on a watch. Lists are what it
    does at scale: KWOK's ``list()`` (every 2 minutes, for garbage collection) would
    otherwise decode every Node of a 5,000-node cluster from the API server each time —
    upstream providers list through the manager's cache too. ``list_shared`` hands out the
    cached objects themselves (see :meth:`CachedClient.list_shared`); every other method
    is the API server's.
    """

    def __init__(self, client: KubeClient) -> None:
        self._client = client
        self._reader: CachedClient | None = None

    def attach(self, reader: CachedClient) -> None:
        """Serve lists from ``reader`` from now on."""
        self._reader = reader

    def uncached(self) -> KubeClient:
        """The API server, lists included (see
        :func:`~karpenter_core.kube.client.api_reader`)."""
        return self._client

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def list(
        self,
        resource: ResourceLike,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> ObjectList:
        source: Any = self._reader if self._reader is not None else self._client
        listed: ObjectList = source.list(
            resource, namespace, label_selector=label_selector, field_selector=field_selector
        )
        return listed

    def list_shared(
        self,
        resource: ResourceLike,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> ObjectList:
        """:meth:`list`, uncopied when it comes from the cache: the caller must not change
        what it gets."""
        if self._reader is None:
            return self.list(
                resource, namespace, label_selector=label_selector, field_selector=field_selector
            )
        return self._reader.list_shared(
            resource, namespace, label_selector=label_selector, field_selector=field_selector
        )
