"""The fixture's kube-scheduler client rate limit: the config it writes, what the real
binary makes of it, and one-line errors for bad values."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

import controlplane


def _binaries() -> Path:
    if controlplane.skip_requested():
        pytest.skip(f"{controlplane.SKIP_ENV} is set")
    try:
        return controlplane.ensure_binaries()
    except controlplane.ControlPlaneError as e:
        controlplane.unavailable(e)


def _effective_config(args: list[str], out: Path) -> dict[str, Any]:
    """What kube-scheduler resolves ``args`` to: ``--write-config-to`` writes the complete
    configuration (defaults applied) and exits, without contacting any API server."""
    proc = subprocess.run(
        [*args, f"--write-config-to={out}"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    loaded = yaml.safe_load(out.read_text())
    assert isinstance(loaded, dict)
    return loaded


def _kubeconfig(path: Path) -> None:
    """kube-scheduler reads the kubeconfig even when only writing its config; nothing
    listens at this address."""
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "t", "cluster": {"server": "https://127.0.0.1:1"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "t", "context": {"cluster": "t", "user": "u"}}],
                "current-context": "t",
            }
        )
    )


def test_the_config_carries_the_client_limit_when_given(tmp_path: Path) -> None:
    config = controlplane.scheduler_config(tmp_path / "kc", qps=500, burst=1000)
    assert config["kind"] == "KubeSchedulerConfiguration"
    assert config["clientConnection"] == {
        "kubeconfig": str(tmp_path / "kc"),
        "qps": 500.0,
        "burst": 1000,
    }
    assert config["leaderElection"] == {"leaderElect": False}


def test_the_config_leaves_the_limit_to_kube_scheduler_by_default(tmp_path: Path) -> None:
    config = controlplane.scheduler_config(tmp_path / "kc")
    assert config["clientConnection"] == {"kubeconfig": str(tmp_path / "kc")}


@pytest.mark.parametrize(
    ("qps", "burst", "named"),
    [
        (0, None, "QPS"),
        (-5.0, None, "QPS"),
        (float("nan"), None, "QPS"),
        (float("inf"), None, "QPS"),
        ("500", None, "QPS"),
        (True, None, "QPS"),
        (None, 0, "burst"),
        (None, 2.5, "burst"),
        (None, "1000", "burst"),
    ],
)
def test_a_bad_limit_is_refused_before_anything_starts(
    tmp_path: Path, qps: Any, burst: Any, named: str
) -> None:
    with pytest.raises(controlplane.ControlPlaneError, match=named):
        controlplane.ControlPlane(
            tmp_path, scheduler=True, scheduler_qps=qps, scheduler_burst=burst, workdir=tmp_path
        )
    assert list(tmp_path.iterdir()) == []  # no config written, nothing spawned


@pytest.mark.controlplane
def test_the_real_kube_scheduler_runs_with_the_configured_limit(tmp_path: Path) -> None:
    cp = controlplane.ControlPlane(
        _binaries(), scheduler=True, scheduler_qps=500, scheduler_burst=1000, workdir=tmp_path
    )
    _kubeconfig(cp.kubeconfig)
    got = _effective_config(cp.scheduler_args(), tmp_path / "effective.yaml")
    assert got["clientConnection"]["qps"] == 500
    assert got["clientConnection"]["burst"] == 1000
    assert got["clientConnection"]["kubeconfig"] == str(cp.kubeconfig)
    assert got["leaderElection"]["leaderElect"] is False


@pytest.mark.controlplane
def test_without_a_limit_kube_scheduler_keeps_its_own_default(tmp_path: Path) -> None:
    """The same client limit as kube-scheduler started with no config file at all."""
    binaries = _binaries()
    cp = controlplane.ControlPlane(binaries, scheduler=True, workdir=tmp_path)
    _kubeconfig(cp.kubeconfig)
    ours = _effective_config(cp.scheduler_args(), tmp_path / "ours.yaml")
    bare = _effective_config(
        [str(binaries / "kube-scheduler"), f"--kubeconfig={cp.kubeconfig}"],
        tmp_path / "bare.yaml",
    )
    for field in ("qps", "burst"):
        assert ours["clientConnection"][field] == bare["clientConnection"][field]
