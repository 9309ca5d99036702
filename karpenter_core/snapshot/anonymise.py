"""Anonymising a snapshot: names and free-form values become keyed hashes, so a snapshot can
leave the company while every relation the engine reads from it still holds.

One function maps every string it hides (``a`` + 16 hex digits of a keyed BLAKE2b), whatever
field it sits in. That is what keeps the cluster's relations: a pod's ``spec.nodeName``, the
node's ``metadata.name`` and its ``kubernetes.io/hostname`` label all become the same
string; a label value and the selector value that matched it stay equal; an owner reference
still names its owner. The key is random per snapshot unless given, so hashes of guessable
names (``web``, ``default``) cannot be looked up in a table, and two anonymised snapshots
taken with the same key can be compared.

What changes (``docs/snapshot.md`` has the full list): object names and namespaces, every
field that names another object (``nodeName``, ``claimName``, ``storageClassName``,
``nodeClassRef.name``, owner references, ...), values of labels and annotations whose key
is not well-known (and of the well-known keys that hold a name, such as
``kubernetes.io/hostname``), the matching values in selectors, node selectors and
requirements, provider IDs, host names, images, commands and arguments, env values, and a
NodeClass's user data, role, instance profile, IDs and tags. What stays: label and
annotation keys, well-known values (zones, instance types, capacity types, architectures),
resource requests and limits, taints and tolerations, affinity keys and operators,
``Gt``/``Lt`` requirement values (numbers), IP addresses, uids and timestamps.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from karpenter_core.snapshot.fileformat import Obj, Snapshot, SnapshotBuilder, SnapshotSource

__all__ = ["Anonymiser", "anonymise", "is_well_known_key"]

WELL_KNOWN_DOMAINS = (
    "kubernetes.io",
    "k8s.io",
    "x-k8s.io",
    "karpenter.sh",
    "k8s.aws",
    "eks.aws",
    "amazonaws.com",
    "karpenter.azure.com",
    "kubernetes.azure.com",
    "karpenter.k8s.gcp",
    "cloud.google.com",
    "gke.io",
    "karpenter.kwok.sh",
)
"""Label and annotation key prefixes (and their sub-domains) whose values are kept."""

USER_DOMAINS = ("app.kubernetes.io",)
"""Sub-domains of a well-known domain whose values are the user's own (application names)."""

NAME_VALUED_KEYS = frozenset(
    {
        "kubernetes.io/hostname",
        "kubernetes.io/metadata.name",
        "statefulset.kubernetes.io/pod-name",
        "batch.kubernetes.io/job-name",
        "volume.kubernetes.io/selected-node",
        "csi.volume.kubernetes.io/nodeid",
        "karpenter.sh/nodepool",
        "karpenter.sh/nodeclaim",
    }
)
"""Well-known keys whose value is an object's name (or holds one): hashed like the name."""

HASHED_FIELDS = frozenset(
    {
        "namespace",
        "generateName",
        "nodeName",
        "nominatedNodeName",
        "claimName",
        "volumeName",
        "storageClassName",
        "serviceAccountName",
        "serviceAccount",
        "secretName",
        "resourceClaimName",
        "resourceClaimTemplateName",
        "deviceClassName",
        "priorityClassName",
        "providerID",
        "hostname",
        "subdomain",
        "image",
        "imageID",
        "containerID",
        "nodeID",
        "volumeHandle",
        "machineID",
        "systemUUID",
        "bootID",
        "userData",
        "role",
        "instanceProfile",
        "id",
        "pool",
        "serviceName",
        "externalName",
    }
)
"""Fields, wherever they appear, whose string value is a name, an identifier or free text."""

HASHED_LISTS = frozenset({"command", "args", "namespaces", "names", "volumesInUse"})
"""Fields whose value is a list of such strings."""

NAME_PARENTS = frozenset(
    {
        "metadata",
        "ownerReferences",
        "nodeClassRef",
        "claimRef",
        "configMap",
        "configMapKeyRef",
        "secretKeyRef",
        "configMapRef",
        "secretRef",
        "imagePullSecrets",
        "reservedFor",
        "volumesAttached",
        "dataSource",
        "dataSourceRef",
        "scaleTargetRef",
        "scalableRef",
        "podTemplateRef",
        "pool",
        "securityGroups",
    }
)
"""Objects (or lists of them) whose ``name`` field names another object."""

LABEL_MAPS = frozenset({"labels", "matchLabels", "nodeSelector"})
PLAIN_SELECTORS = "selector"
"""A Service's (and a ReplicationController's) ``selector`` is a plain label map, where a
workload's is a LabelSelector object (``matchLabels``...)."""
DNS_ADDRESS_TYPES = frozenset({"Hostname", "InternalDNS", "ExternalDNS"})
NUMERIC_OPERATORS = frozenset({"Gt", "Lt"})
KEPT_PRIORITY_CLASS_PREFIX = "system-"


def is_well_known_key(key: str) -> bool:
    """Whether a label or annotation key's value is kept: a well-known domain's key that
    does not hold a name."""
    if key in NAME_VALUED_KEYS or key.endswith("nodeclass"):
        return False
    domain, slash, _ = key.partition("/")
    if not slash:
        return False

    def under(domains: tuple[str, ...]) -> bool:
        return any(domain == d or domain.endswith("." + d) for d in domains)

    return under(WELL_KNOWN_DOMAINS) and not under(USER_DOMAINS)


class Anonymiser:
    """Anonymises objects one at a time with one key (see the module docstring); the same
    string always gives the same hash, in every object and field."""

    def __init__(self, key: bytes | None = None) -> None:
        self._key = secrets.token_bytes(16) if key is None else key
        self.hash = lru_cache(maxsize=1 << 16)(self._hash)

    def _hash(self, value: str) -> str:
        if not value:
            return value
        digest = hashlib.blake2b(value.encode(), key=self._key, digest_size=8).hexdigest()
        return "a" + digest

    def label_value(self, key: str, value: Any) -> Any:
        if not isinstance(value, str) or is_well_known_key(key):
            return value
        return self.hash(value)

    def object(self, obj: Mapping[str, Any]) -> Obj:
        """An anonymised copy of ``obj`` (``obj`` is not changed)."""
        out: Obj = self._walk(obj, "")
        return out

    def _walk(self, value: Any, field: str) -> Any:
        """``value`` found under ``field`` (list items inherit their list's field)."""
        if isinstance(value, Mapping):
            return {k: self._member(k, v, value, field) for k, v in value.items()}
        if isinstance(value, list):
            return [self._walk(v, field) for v in value]
        return value

    def _member(self, key: str, value: Any, parent: Mapping[str, Any], field: str) -> Any:
        if isinstance(value, str):
            return self.hash(value) if self._hides(key, value, parent, field) else value
        if isinstance(value, Mapping):
            if (
                key in LABEL_MAPS
                or key == "annotations"
                or (key == PLAIN_SELECTORS and all(isinstance(v, str) for v in value.values()))
            ):
                return {k: self.label_value(k, v) for k, v in value.items()}
            if key == "tags":
                return {k: self.hash(v) if isinstance(v, str) else v for k, v in value.items()}
        elif isinstance(value, list):
            if key in HASHED_LISTS:
                return [self.hash(v) if isinstance(v, str) else v for v in value]
            requirement_key = parent.get("key")
            if (
                key == "values"
                and isinstance(requirement_key, str)
                and parent.get("operator") not in NUMERIC_OPERATORS
            ):
                return [self.label_value(requirement_key, v) for v in value]
        return self._walk(value, key)

    def _hides(self, key: str, value: str, parent: Mapping[str, Any], field: str) -> bool:
        if key == "priorityClassName":
            return not value.startswith(KEPT_PRIORITY_CLASS_PREFIX)
        if key in HASHED_FIELDS:
            return True
        if key == "name":
            return field in NAME_PARENTS
        if key == "value":
            return field == "env"
        if key == "message":
            # free text that names objects: a Deployment's "ReplicaSet web-5d8f7c9b6 has
            # successfully progressed", a pod's "0/3 nodes are available: ..."
            return field == "conditions"
        if key == "address":
            return parent.get("type") in DNS_ADDRESS_TYPES
        return False


def anonymise(snapshot: Snapshot, *, key: bytes | None = None) -> Snapshot:
    """``snapshot`` with every object anonymised (decoded and re-encoded one at a time)."""
    anonymiser = Anonymiser(key)
    builder = SnapshotBuilder()
    for obj in snapshot.iter_objects():
        builder.add(anonymiser.object(obj))
    source = SnapshotSource(
        anonymiser.hash(snapshot.source.server), anonymiser.hash(snapshot.source.context)
    )
    return builder.build(taken_at=snapshot.taken_at, source=source, anonymised=True)
