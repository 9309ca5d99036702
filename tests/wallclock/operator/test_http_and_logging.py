"""Probe and metrics endpoints, and the JSON log format."""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest
from prometheus_client import CollectorRegistry, Counter

from karpenter_core.operator.health import (
    HttpServer,
    ServeError,
    metrics_routes,
    probe_routes,
)


def fetch(port: int, path: str) -> tuple[int, str, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as r:
            return r.status, r.headers["Content-Type"], r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers["Content-Type"], e.read().decode()


@pytest.fixture
def probes() -> Iterator[tuple[HttpServer, dict[str, str | None]]]:
    state: dict[str, str | None] = {"caches": "waiting for caches: pods"}
    server = HttpServer(
        "health", 0, probe_routes({"informer-sync": lambda: state["caches"]}), "127.0.0.1"
    ).start()
    yield server, state
    server.stop()


def test_healthz_is_a_ping_that_passes_while_not_ready(
    probes: tuple[HttpServer, dict[str, str | None]],
) -> None:
    server, _ = probes
    assert fetch(server.port, "/healthz")[0::2] == (200, "ok")


def test_readyz_fails_with_each_failing_check_and_its_reason(
    probes: tuple[HttpServer, dict[str, str | None]],
) -> None:
    server, _ = probes
    status, _, body = fetch(server.port, "/readyz")
    assert status == 500
    assert "[+]ping ok" in body
    assert "[-]informer-sync failed: waiting for caches: pods" in body
    assert body.rstrip().endswith("readyz check failed")


def test_readyz_passes_once_every_check_passes(
    probes: tuple[HttpServer, dict[str, str | None]],
) -> None:
    server, state = probes
    state["caches"] = None
    assert fetch(server.port, "/readyz")[0::2] == (200, "ok")
    status, _, body = fetch(server.port, "/readyz?verbose")
    assert status == 200
    assert "[+]informer-sync ok" in body


def test_unknown_path_is_404(probes: tuple[HttpServer, dict[str, str | None]]) -> None:
    server, _ = probes
    assert fetch(server.port, "/nope")[0] == 404


def test_metrics_endpoint_serves_the_registry_in_prometheus_text_format() -> None:
    registry = CollectorRegistry()
    Counter("karpenter_nodeclaims_created", "doc", ["nodepool"], registry=registry).labels(
        nodepool="default"
    ).inc()
    server = HttpServer("metrics", 0, metrics_routes(registry), "127.0.0.1").start()
    try:
        status, ctype, body = fetch(server.port, "/metrics")
    finally:
        server.stop()
    assert status == 200
    assert ctype.startswith("text/plain")
    assert 'karpenter_nodeclaims_created_total{nodepool="default"} 1.0' in body


def test_a_port_in_use_is_one_error_naming_the_port() -> None:
    first = HttpServer("metrics", 0, {}, "127.0.0.1")
    try:
        with pytest.raises(
            ServeError, match=rf"metrics server: cannot listen on port {first.port}"
        ):
            HttpServer("metrics", first.port, {}, "127.0.0.1")
    finally:
        first.stop()
