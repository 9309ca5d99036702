"""The control-plane fixture machinery: build cache, overrides, and the optional scheduler."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

import controlplane
from karpenter_core.kube.adapter import KubernetesClient


def _fake_binaries(directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for name in controlplane.ALL_BINARIES:
        path = directory / name
        path.write_text("#!/bin/sh\n")
        path.chmod(0o755)


def test_versions_come_from_the_committed_go_modules() -> None:
    assert controlplane.versions() == {"kubernetes": "v1.34.4", "etcd": "v3.6.6"}


def test_the_cache_lives_under_xdg_cache_home_keyed_by_version(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert controlplane.binaries_dir() == (
        tmp_path / "karpenter-core" / "controlplane" / "kubernetes-v1.34.4_etcd-v3.6.6"
    )


def test_a_warm_cache_is_used_without_go(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv("PATH", "")  # building would need `go`: it must not be looked for
    monkeypatch.delenv(controlplane.BINARIES_ENV, raising=False)
    target = controlplane.binaries_dir()
    _fake_binaries(target)
    (target / "STAMP").write_text(controlplane.fingerprint() + "\n")
    assert controlplane.ensure_binaries() == target


def test_a_stale_stamp_means_a_rebuild_which_needs_go(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv("PATH", "")
    monkeypatch.delenv(controlplane.BINARIES_ENV, raising=False)
    target = controlplane.binaries_dir()
    _fake_binaries(target)
    (target / "STAMP").write_text("from-other-sources\n")
    with pytest.raises(controlplane.ControlPlaneError, match="Go toolchain"):
        controlplane.ensure_binaries()


def test_a_binaries_override_missing_one_names_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _fake_binaries(tmp_path)
    (tmp_path / "kube-scheduler").unlink()
    monkeypatch.setenv(controlplane.BINARIES_ENV, str(tmp_path))
    with pytest.raises(controlplane.ControlPlaneError, match="kube-scheduler"):
        controlplane.ensure_binaries()


def test_the_fingerprint_covers_the_module_sources() -> None:
    sources = {
        p.relative_to(controlplane.MODULES).as_posix()
        for p in controlplane.MODULES.rglob("*")
        if p.suffix == ".go" or p.name in ("go.mod", "go.sum")
    }
    assert {
        "kubernetes/go.mod",
        "kubernetes/go.sum",
        "kubernetes/kube-apiserver/main.go",
        "etcd/go.mod",
        "etcd/main.go",
    } <= sources


@pytest.mark.controlplane
def test_the_built_scheduler_binds_a_pod_to_a_fitting_node() -> None:
    """kube-scheduler from the same build runs (for end-to-end tests): it binds a pending
    pod to the one node with room. A control plane of its own, so no other test's nodes
    attract pods."""
    if controlplane.skip_requested():
        pytest.skip(f"{controlplane.SKIP_ENV} is set")
    try:
        binaries = controlplane.ensure_binaries()
    except controlplane.ControlPlaneError as e:
        controlplane.unavailable(e)
    with controlplane.ControlPlane(binaries, controller_manager=False, scheduler=True) as cp:
        kube = KubernetesClient.from_kubeconfig(str(cp.kubeconfig))
        resources = {"cpu": "4", "memory": "8Gi", "pods": "10"}
        node: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "worker", "labels": {"kubernetes.io/hostname": "worker"}},
        }
        created = kube.create(node)
        created["status"] = {
            "capacity": resources,
            "allocatable": resources,
            "conditions": [{"type": "Ready", "status": "True"}],
        }
        kube.update_status(created)
        # the API server taints new nodes not-ready (TaintNodesByCondition); the node
        # lifecycle controller would lift it for a Ready node, which this plane does not run
        kube.patch("nodes", "worker", {"spec": {"taints": None}})
        kube.create(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "p", "namespace": "default"},
                "spec": {
                    "containers": [
                        {
                            "name": "c",
                            "image": "registry.k8s.io/pause:3.9",
                            "resources": {"requests": {"cpu": "1"}},
                        }
                    ]
                },
            }
        )
        deadline = time.monotonic() + 60
        node_name = None
        while node_name is None and time.monotonic() < deadline:
            node_name = kube.get("pods", "p", "default")["spec"].get("nodeName")
            time.sleep(0.2)
        assert node_name == "worker", cp.processes[-1].log_tail(60)
