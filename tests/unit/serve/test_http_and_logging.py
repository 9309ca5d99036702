"""Probe and metrics endpoints, and the JSON log format."""

from __future__ import annotations

import io
import json
import logging
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
    run_checks,
)
from karpenter_core.operator.logging import JsonFormatter, configure_logging


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


def test_a_check_that_raises_fails_readiness_instead_of_erroring() -> None:
    def broken() -> str | None:
        raise RuntimeError("boom")

    ok, lines = run_checks({"crds": broken})
    assert not ok
    assert lines == ["[-]crds failed: RuntimeError: boom"]


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


def _record(logger: logging.Logger, level: int, msg: str, **extra: object) -> dict[str, object]:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter(commit="abc123"))
    logger.addHandler(handler)
    try:
        logger.log(level, msg, extra=extra)
    finally:
        logger.removeHandler(handler)
    line = stream.getvalue()
    assert line.count("\n") == 1
    parsed: dict[str, object] = json.loads(line)
    return parsed


def test_log_lines_are_json_with_upstream_field_names() -> None:
    logger = logging.getLogger("karpenter.provisioner.test")
    logger.setLevel(logging.INFO)
    rec = _record(logger, logging.WARNING, "found %d pods", controller="provisioner")
    assert rec["level"] == "WARN"
    assert rec["logger"] == "provisioner.test"
    assert rec["message"] == "found %d pods"
    assert rec["commit"] == "abc123"
    assert rec["controller"] == "provisioner"
    assert str(rec["time"]).endswith("Z")
    assert "caller" not in rec


def test_exceptions_become_error_and_stacktrace_fields() -> None:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    logger = logging.getLogger("karpenter.test.exc")
    logger.addHandler(handler)
    try:
        try:
            raise ValueError("bad thing")
        except ValueError:
            logger.exception("reconcile failed")
    finally:
        logger.removeHandler(handler)
    rec = json.loads(stream.getvalue())
    assert rec["level"] == "ERROR"
    assert rec["error"] == "bad thing"
    assert "ValueError: bad thing" in rec["stacktrace"]


@pytest.mark.parametrize(
    ("level", "shown"),
    [
        ("debug", {"DEBUG", "INFO", "ERROR"}),
        ("info", {"INFO", "ERROR"}),
        ("", {"INFO", "ERROR"}),
        ("error", {"ERROR"}),
    ],
)
def test_log_level_filters_lines(tmp_path: object, level: str, shown: set[str]) -> None:
    import pathlib

    path = pathlib.Path(str(tmp_path)) / "out.log"
    root = logging.getLogger("karpenter.leveltest")
    root.propagate = False
    configure_logging(level, str(path), root=root)
    root.debug("d")
    root.info("i")
    root.error("e")
    for h in root.handlers:
        h.flush()
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    assert {x["level"] for x in lines} == shown
    assert all(("caller" in x) == (level == "debug") for x in lines)


def test_configuring_twice_does_not_duplicate_lines(tmp_path: object) -> None:
    import pathlib

    path = pathlib.Path(str(tmp_path)) / "out.log"
    root = logging.getLogger("karpenter.twice")
    root.propagate = False
    configure_logging("info", str(path), root=root)
    configure_logging("info", str(path), root=root)
    root.info("once")
    for h in root.handlers:
        h.flush()
    assert len(path.read_text().splitlines()) == 1


def test_an_unwritable_log_path_is_a_clear_error(tmp_path: object) -> None:
    with pytest.raises(ValueError, match="log-output-paths: cannot open"):
        configure_logging("info", f"{tmp_path}/missing-dir/x.log", root=logging.getLogger("k.x"))
