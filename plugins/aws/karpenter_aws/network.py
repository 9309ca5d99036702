"""Networking of launched instances: interfaces, EFA, IPv6, prefixes and pod ENIs.

What the EC2NodeClass's networking fields do, as upstream
(``pkg/providers/launchtemplate``, ``pkg/providers/instancetype``):

* **The cluster's IP family** follows the cluster DNS address (``spec.kubelet.clusterDNS``
  or the ``kube-dns`` Service): an IPv6 address makes an IPv6 cluster. Its instances get a
  primary IPv6 address and one IPv6 address on each IP interface, the instance metadata
  service's IPv6 endpoint, and AL2's bootstrap ``--ip-family ipv6``.
* **``ipPrefixCount``** asks EC2 for that many prefixes on each IP interface: IPv4 (/28)
  prefixes in an IPv4 cluster, IPv6 (/80) prefixes in an IPv6 one. As upstream, it does not
  change max pods (the VPC CNI's prefix mode is the CNI's setting; set
  ``kubelet.maxPods`` to use the extra addresses).
* **``networkInterfaces``** replace the single default interface with the listed ones
  (each ENA ``interface`` gets the security groups, prefixes, IPv6 and connection
  tracking; ``efa-only`` ones get none of them). Their ``efa-only`` count is the
  ``vpc.amazonaws.com/efa`` the type offers, and ``efa-only`` interfaces on card 0 take an
  ENI from the pods' count.
* Without ``networkInterfaces``, a NodeClaim requesting ``vpc.amazonaws.com/efa`` launches
  with one EFA interface per network card the type supports (card 0 device 0, the others
  device 1).
* **``connectionTracking``** sets idle timeouts on every IP interface (Nitro types only).
* **``vpc.amazonaws.com/pod-eni``** (security groups for pods): the branch ENIs of
  trunking-capable types, from ``pod_eni.json`` (``hack/refresh_pod_eni.py``), since EC2
  does not report them.

:func:`compatible` says which instance types a NodeClass's settings rule out (the
interfaces it asks for, nested virtualization, connection tracking).
"""

from __future__ import annotations

import functools
import ipaddress
import json
from collections.abc import Mapping, Sequence
from importlib import resources
from typing import Any, Protocol

from attrs import frozen

__all__ = [
    "IP_FAMILY_IPV4",
    "IP_FAMILY_IPV6",
    "RESOURCE_POD_ENI",
    "ConnectionTrackingLike",
    "InterfaceLike",
    "Interfaces",
    "capacity",
    "compatible",
    "compatible_with_nodeclass",
    "ip_family",
    "pod_eni",
]

IP_FAMILY_IPV4 = "ipv4"
IP_FAMILY_IPV6 = "ipv6"
RESOURCE_POD_ENI = "vpc.amazonaws.com/pod-eni"
EFA_ONLY = "efa-only"


class InterfaceLike(Protocol):
    """One ``spec.networkInterfaces`` entry."""

    @property
    def network_card_index(self) -> int: ...
    @property
    def device_index(self) -> int: ...
    @property
    def interface_type(self) -> str: ...


class ConnectionTrackingLike(Protocol):
    @property
    def tcp_established_timeout(self) -> int | None: ...
    @property
    def udp_stream_timeout(self) -> int | None: ...
    @property
    def udp_timeout(self) -> int | None: ...


def ip_family(cluster_dns: Sequence[str]) -> str:
    """``ipv6`` when the first cluster DNS address is an IPv6 one, else ``ipv4``."""
    if not cluster_dns:
        return IP_FAMILY_IPV4
    try:
        address = ipaddress.ip_address(cluster_dns[0])
    except ValueError:
        return IP_FAMILY_IPV4
    return IP_FAMILY_IPV6 if address.version == 6 else IP_FAMILY_IPV4


@functools.cache
def _pod_eni_table() -> Mapping[str, int]:
    text = resources.files("karpenter_aws").joinpath("pod_eni.json").read_text()
    table: dict[str, int] = json.loads(text)
    return table


def pod_eni(instance_type: str) -> int:
    """Branch ENIs (``vpc.amazonaws.com/pod-eni``) of a trunking-capable type, else 0."""
    return _pod_eni_table().get(instance_type, 0)


def capacity(instance_type: str) -> dict[str, int]:
    """The networking extended resources of a type (milli-units), zeros left out."""
    branches = pod_eni(instance_type)
    return {RESOURCE_POD_ENI: branches * 1000} if branches else {}


@frozen
class _Interface:
    network_card_index: int
    device_index: int
    interface_type: str


@frozen
class Interfaces:
    """What a launch template's ``NetworkInterfaces`` are made of (part of the template's
    content, so of its name)."""

    security_group_ids: tuple[str, ...]
    associate_public_ip: bool | None = None
    ip_family: str = IP_FAMILY_IPV4
    ip_prefix_count: int | None = None
    # (tcpEstablished, udpStream, udp) seconds; None: EC2's defaults
    connection_tracking: tuple[int | None, int | None, int | None] | None = None
    # the NodeClass's own list; None: one default interface (or EFA interfaces)
    configured: tuple[_Interface, ...] | None = None
    efa_count: int = 0

    @classmethod
    def of(
        cls,
        security_group_ids: Sequence[str],
        *,
        associate_public_ip: bool | None,
        cluster_dns: Sequence[str],
        ip_prefix_count: int | None,
        connection_tracking: ConnectionTrackingLike | None,
        configured: Sequence[InterfaceLike] | None,
    ) -> Interfaces:
        ct = (
            None
            if connection_tracking is None
            else (
                connection_tracking.tcp_established_timeout,
                connection_tracking.udp_stream_timeout,
                connection_tracking.udp_timeout,
            )
        )
        return cls(
            security_group_ids=tuple(sorted(security_group_ids)),
            associate_public_ip=associate_public_ip,
            ip_family=ip_family(cluster_dns),
            ip_prefix_count=ip_prefix_count,
            connection_tracking=ct if ct and any(v is not None for v in ct) else None,
            configured=None
            if configured is None
            else tuple(
                _Interface(n.network_card_index, n.device_index, n.interface_type)
                for n in configured
            ),
        )

    def _ip(self, nic: dict[str, Any]) -> dict[str, Any]:
        """``nic`` with the cluster's addressing: prefixes, IPv6, connection tracking."""
        if self.ip_prefix_count is not None:
            key = "Ipv6PrefixCount" if self.ip_family == IP_FAMILY_IPV6 else "Ipv4PrefixCount"
            nic[key] = self.ip_prefix_count
        if self.ip_family == IP_FAMILY_IPV6:
            nic["PrimaryIpv6"] = True
            nic["Ipv6AddressCount"] = 1
        if self.connection_tracking is not None:
            tcp, udp_stream, udp = self.connection_tracking
            spec = {
                k: v
                for k, v in (
                    ("TcpEstablishedTimeout", tcp),
                    ("UdpStreamTimeout", udp_stream),
                    ("UdpTimeout", udp),
                )
                if v is not None
            }
            nic["ConnectionTrackingSpecification"] = spec
        return nic

    def request(self) -> list[dict[str, Any]]:
        """The ``LaunchTemplateData.NetworkInterfaces`` list."""
        groups = list(self.security_group_ids)
        if self.configured:
            out = []
            for n in self.configured:
                nic: dict[str, Any] = {
                    "NetworkCardIndex": n.network_card_index,
                    "DeviceIndex": n.device_index,
                    "InterfaceType": n.interface_type,
                    "Groups": groups,
                }
                # EC2 rejects prefixes, public IPs and the like on EFA-only interfaces
                if n.interface_type != EFA_ONLY:
                    if self.associate_public_ip is not None:
                        nic["AssociatePublicIpAddress"] = self.associate_public_ip
                    self._ip(nic)
                out.append(nic)
            return out
        if self.efa_count:
            out = []
            for card in range(self.efa_count):
                nic = {
                    "NetworkCardIndex": card,
                    # one card ranks first, so a public IP needs no EIP on every card
                    "DeviceIndex": 0 if card == 0 else 1,
                    "InterfaceType": "efa",
                    "Groups": groups,
                }
                if self.associate_public_ip is not None:
                    nic["AssociatePublicIpAddress"] = self.associate_public_ip
                out.append(self._ip(nic))
            return out
        nic = {"DeviceIndex": 0, "Groups": groups}
        if self.associate_public_ip is not None:
            nic["AssociatePublicIpAddress"] = self.associate_public_ip
        return [self._ip(nic)]


def _dict(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _interfaces_fit(info: Mapping[str, Any], interfaces: Sequence[InterfaceLike]) -> bool:
    network = _dict(info.get("NetworkInfo"))
    cards = [_dict(c) for c in network.get("NetworkCards") or []]
    if not cards or network.get("EnaSupport") == "unsupported":
        return False
    by_index = {c.get("NetworkCardIndex"): c for c in cards}
    for nic in interfaces:
        card = by_index.get(nic.network_card_index)
        if card is None or int(card.get("MaximumNetworkInterfaces") or 0) <= nic.device_index:
            return False
    efas = sum(1 for nic in interfaces if nic.interface_type == EFA_ONLY)
    if efas:
        limit = _dict(network.get("EfaInfo")).get("MaximumEfaInterfaces")
        if not isinstance(limit, int) or efas > limit:
            return False
    return True


def compatible(
    info: Mapping[str, Any],
    *,
    network_interfaces: Sequence[InterfaceLike] | None,
    nested_virtualization: str | None,
    connection_tracking: bool,
) -> bool:
    """Whether an instance type can take a NodeClass's settings (upstream's compatibility
    checks): the cards, device indexes and EFA interfaces it lists; nested virtualization
    when enabled; a Nitro hypervisor for connection tracking."""
    if network_interfaces is not None and not _interfaces_fit(info, network_interfaces):
        return False
    if nested_virtualization == "enabled":
        features = _dict(info.get("ProcessorInfo")).get("SupportedFeatures") or []
        if "nested-virtualization" not in features:
            return False
    return not (connection_tracking and info.get("Hypervisor") != "nitro")


class _NodeClassLike(Protocol):
    @property
    def network_interfaces(self) -> Sequence[InterfaceLike] | None: ...
    @property
    def nested_virtualization(self) -> str | None: ...
    @property
    def connection_tracking(self) -> ConnectionTrackingLike | None: ...


def compatible_with_nodeclass(info: Mapping[str, Any], nodeclass: _NodeClassLike) -> bool:
    """:func:`compatible` for an EC2NodeClass."""
    return compatible(
        info,
        network_interfaces=nodeclass.network_interfaces,
        nested_virtualization=nodeclass.nested_virtualization,
        connection_tracking=nodeclass.connection_tracking is not None,
    )
