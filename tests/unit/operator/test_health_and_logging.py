"""Readiness checks evaluated without a server, and the JSON log format."""

from __future__ import annotations

import io
import json
import logging

import pytest

from karpenter_core.operator.health import (
    run_checks,
)
from karpenter_core.operator.logging import JsonFormatter, configure_logging


def test_a_check_that_raises_fails_readiness_instead_of_erroring() -> None:
    def broken() -> str | None:
        raise RuntimeError("boom")

    ok, lines = run_checks({"crds": broken})
    assert not ok
    assert lines == ["[-]crds failed: RuntimeError: boom"]


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
