"""Host-port bookkeeping for one node: each ``<hostIP, hostPort, protocol>`` may be used once.

Karpenter tracks this so it does not pack two pods that claim the same host port onto one
simulated node (kube-scheduler would refuse the second one and it would stay pending).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping
from typing import Any

from attrs import frozen

DEFAULT_HOST_IP = "0.0.0.0"
DEFAULT_PROTOCOL = "TCP"


def _normalise_ip(ip: str) -> tuple[str, bool]:
    """(canonical text, is-unspecified). IPv4-mapped IPv6 equals its IPv4 form, as in Go's
    ``net.IP.Equal``. An unparseable address becomes ``""``: such addresses only equal each
    other and are never "unspecified" (Go's nil ``net.IP``)."""
    try:
        addr = ipaddress.ip_address(ip)
    except ValueError:
        return "", False
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        addr = addr.ipv4_mapped
    return str(addr), addr.is_unspecified


@frozen
class HostPort:
    """One host port claim. ``ip`` is canonical text (``""`` if it did not parse)."""

    ip: str
    port: int
    protocol: str
    unspecified: bool = False

    @classmethod
    def new(cls, ip: str, port: int, protocol: str = DEFAULT_PROTOCOL) -> HostPort:
        """Build from raw values; an empty ``ip`` means ``0.0.0.0`` (all addresses)."""
        canonical, unspecified = _normalise_ip(ip or DEFAULT_HOST_IP)
        return cls(canonical, port, protocol, unspecified)

    def matches(self, other: HostPort) -> bool:
        """Same protocol and port, and the same IP or either side listening on all addresses
        (``0.0.0.0`` / ``::``)."""
        if self.protocol != other.protocol or self.port != other.port:
            return False
        return self.ip == other.ip or self.unspecified or other.unspecified

    def __str__(self) -> str:
        return f"IP={self.ip or '<nil>'} Port={self.port} Proto={self.protocol}"


def host_ports_of(pod_spec: Mapping[str, Any]) -> list[HostPort]:
    """The host ports a pod claims: ``spec.containers[*].ports`` with a non-zero ``hostPort``.

    Init containers do not count. A missing ``hostIP`` means ``0.0.0.0``; a missing
    ``protocol`` means ``TCP`` (the API server's default, so raw manifests behave like
    admitted pods). Raises ``ValueError`` naming the container for malformed entries.
    """
    out: list[HostPort] = []
    containers = pod_spec.get("containers")
    if containers is None:
        containers = []
    if not isinstance(containers, list):
        raise ValueError(f"spec.containers: expected a list, got {containers!r}")
    for ci, container in enumerate(containers):
        if not isinstance(container, Mapping):
            raise ValueError(f"spec.containers[{ci}]: expected a mapping")
        ports = container.get("ports")
        if ports is None:
            ports = []
        if not isinstance(ports, list):
            raise ValueError(f"spec.containers[{ci}].ports: expected a list, got {ports!r}")
        for pi, p in enumerate(ports):
            where = f"spec.containers[{ci}].ports[{pi}]"
            if not isinstance(p, Mapping):
                raise ValueError(f"{where}: expected a mapping")
            host_port = p.get("hostPort") or 0
            if not isinstance(host_port, int) or isinstance(host_port, bool):
                raise ValueError(f"{where}.hostPort: expected an integer, got {host_port!r}")
            if host_port == 0:
                continue
            host_ip = p.get("hostIP") or DEFAULT_HOST_IP
            protocol = p.get("protocol") or DEFAULT_PROTOCOL
            if not isinstance(host_ip, str) or not isinstance(protocol, str):
                raise ValueError(f"{where}: hostIP and protocol must be strings")
            out.append(HostPort.new(host_ip, host_port, protocol))
    return out


@frozen
class HostPortConflictError:
    """A requested host port is already claimed on the node by another pod."""

    pod_port: HostPort
    existing_port: HostPort
    existing_pod: str

    def __str__(self) -> str:
        p, e = self.pod_port, self.existing_port
        return (
            "pod hostport conflicts with existing hostport configuration ("
            f"existing-hostport-ip={e.ip or '<nil>'}, existing-hostport-port={e.port}, "
            f"existing-hostport-protocol={e.protocol}, pod-hostport-ip={p.ip or '<nil>'}, "
            f"pod-hostport-port={p.port}, pod-hostport-protocol={p.protocol})"
        )


class HostPortUsage:
    """Host ports claimed on one node, per pod key (``namespace/name``)."""

    __slots__ = ("_reserved",)

    def __init__(self) -> None:
        self._reserved: dict[str, tuple[HostPort, ...]] = {}

    def add(self, pod_key: str, ports: Iterable[HostPort]) -> None:
        """Record (replacing any previous record of) the ports ``pod_key`` uses. A pod
        without host ports leaves no record: most pods have none, and every StateNode
        copy copies the records."""
        reserved = tuple(ports)
        if reserved:
            self._reserved[pod_key] = reserved
        else:
            self._reserved.pop(pod_key, None)

    def conflicts(self, pod_key: str, ports: Iterable[HostPort]) -> HostPortConflictError | None:
        """The first clash between ``ports`` and another pod's ports (a pod never clashes with
        its own record), or ``None``."""
        for new in ports:
            for key, entries in self._reserved.items():
                if key == pod_key:
                    continue
                for existing in entries:
                    if new.matches(existing):
                        return HostPortConflictError(new, existing, key)
        return None

    def delete_pod(self, pod_key: str) -> None:
        self._reserved.pop(pod_key, None)

    def copy(self) -> HostPortUsage:
        new = HostPortUsage()
        new._reserved = self._reserved.copy()
        return new

    def ports(self) -> dict[str, tuple[HostPort, ...]]:
        """A snapshot of the claims, per pod key."""
        return dict(self._reserved)

    def __len__(self) -> int:
        return len(self._reserved)

    def __contains__(self, pod_key: object) -> bool:
        """Whether ``pod_key`` holds any ports here."""
        return pod_key in self._reserved
