"""Host-port usage: entry matching (upstream ``hostportusage_test.go``), extraction from pod
specs, and per-node conflict tracking."""

from __future__ import annotations

from typing import Any

import pytest

from karpenter_core.apis.hostports import (
    HostPort,
    HostPortConflictError,
    HostPortUsage,
    host_ports_of,
)


def test_str_output() -> None:
    assert str(HostPort.new("10.0.0.0", 4443, "TCP")) == "IP=10.0.0.0 Port=4443 Proto=TCP"


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        (("10.0.0.0", 4443, "TCP"), ("10.0.0.0", 4443, "TCP"), True),  # identical
        (("10.0.0.0", 4443, "TCP"), ("0.0.0.0", 4443, "TCP"), True),  # unspecified IPv4
        (("10.0.0.0", 4443, "TCP"), ("::", 4443, "TCP"), True),  # unspecified IPv6
        (("10.0.0.0", 4443, "TCP"), ("", 4443, "TCP"), True),  # empty means 0.0.0.0
        (("10.0.0.0", 4443, "TCP"), ("10.0.0.0", 4443, "SCTP"), False),  # protocol
        (("10.0.0.0", 4443, "TCP"), ("10.0.0.0", 443, "TCP"), False),  # port
        (("10.0.0.0", 4443, "TCP"), ("10.0.0.1", 4443, "TCP"), False),  # both specific
        (("10.0.0.1", 80, "TCP"), ("::ffff:10.0.0.1", 80, "TCP"), True),  # IPv4-mapped
        (("fe80::1", 80, "UDP"), ("FE80:0:0::1", 80, "UDP"), True),  # same IPv6, other spelling
        (("not-an-ip", 80, "TCP"), ("10.0.0.1", 80, "TCP"), False),
        (("not-an-ip", 80, "TCP"), ("0.0.0.0", 80, "TCP"), True),
    ],
)
def test_matches_is_symmetric_and_follows_upstream(
    a: tuple[str, int, str], b: tuple[str, int, str], expected: bool
) -> None:
    x, y = HostPort.new(*a), HostPort.new(*b)
    assert x.matches(y) is expected
    assert y.matches(x) is expected


def _pod_spec(
    *containers: list[dict[str, Any]], init: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [{"name": f"c{i}", "ports": p} for i, p in enumerate(containers)]
    }
    if init is not None:
        spec["initContainers"] = [{"name": "init", "ports": init}]
    return spec


def test_host_ports_of_counts_only_containers_with_a_host_port() -> None:
    spec = _pod_spec(
        [{"containerPort": 8080}, {"containerPort": 80, "hostPort": 80}],
        [{"containerPort": 53, "hostPort": 53, "protocol": "UDP", "hostIP": "10.1.1.1"}],
        init=[{"containerPort": 9000, "hostPort": 9000}],
    )
    assert host_ports_of(spec) == [
        HostPort.new("0.0.0.0", 80, "TCP"),
        HostPort.new("10.1.1.1", 53, "UDP"),
    ]


def test_host_ports_of_a_pod_without_ports_is_empty() -> None:
    assert host_ports_of({}) == []
    assert host_ports_of({"containers": [{"name": "c"}]}) == []


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"containers": {}}, r"spec.containers: expected a list"),
        ({"containers": [{"ports": {}}]}, r"spec.containers\[0\].ports: expected a list"),
        (
            {"containers": [{"ports": [{"hostPort": "80"}]}]},
            r"spec.containers\[0\].ports\[0\].hostPort",
        ),
        (
            {"containers": [{"ports": [{"hostPort": 80, "hostIP": 1}]}]},
            "hostIP and protocol must be strings",
        ),
    ],
)
def test_host_ports_of_rejects_malformed_specs(spec: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        host_ports_of(spec)


def test_usage_detects_a_conflict_with_another_pod() -> None:
    usage = HostPortUsage()
    usage.add("default/a", [HostPort.new("0.0.0.0", 80, "TCP")])
    err = usage.conflicts("default/b", [HostPort.new("10.0.0.1", 80, "TCP")])
    assert err == HostPortConflictError(
        HostPort.new("10.0.0.1", 80, "TCP"), HostPort.new("0.0.0.0", 80, "TCP"), "default/a"
    )
    assert str(err) == (
        "pod hostport conflicts with existing hostport configuration (existing-hostport-ip=0.0.0.0, "
        "existing-hostport-port=80, existing-hostport-protocol=TCP, pod-hostport-ip=10.0.0.1, "
        "pod-hostport-port=80, pod-hostport-protocol=TCP)"
    )


def test_usage_allows_different_ports_and_protocols() -> None:
    usage = HostPortUsage()
    usage.add("default/a", [HostPort.new("", 80, "TCP")])
    assert (
        usage.conflicts("default/b", [HostPort.new("", 81, "TCP"), HostPort.new("", 80, "UDP")])
        is None
    )


def test_a_pod_never_conflicts_with_itself() -> None:
    usage = HostPortUsage()
    ports = [HostPort.new("", 80, "TCP")]
    usage.add("default/a", ports)
    assert usage.conflicts("default/a", ports) is None


def test_delete_pod_frees_its_ports() -> None:
    usage = HostPortUsage()
    usage.add("default/a", [HostPort.new("", 80, "TCP")])
    usage.delete_pod("default/a")
    usage.delete_pod("default/missing")
    assert usage.conflicts("default/b", [HostPort.new("", 80, "TCP")]) is None
    assert len(usage) == 0


def test_add_replaces_a_pods_previous_ports() -> None:
    usage = HostPortUsage()
    usage.add("default/a", [HostPort.new("", 80, "TCP")])
    usage.add("default/a", [HostPort.new("", 81, "TCP")])
    assert usage.conflicts("default/b", [HostPort.new("", 80, "TCP")]) is None
    assert usage.conflicts("default/b", [HostPort.new("", 81, "TCP")]) is not None


def test_copy_is_independent() -> None:
    usage = HostPortUsage()
    usage.add("default/a", [HostPort.new("", 80, "TCP")])
    clone = usage.copy()
    clone.add("default/b", [HostPort.new("", 81, "TCP")])
    clone.delete_pod("default/a")
    assert usage.ports() == {"default/a": (HostPort.new("", 80, "TCP"),)}
    assert clone.ports() == {"default/b": (HostPort.new("", 81, "TCP"),)}
