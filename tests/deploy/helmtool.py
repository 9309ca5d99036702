"""A pinned ``helm`` binary for the chart tests, built from its Go module.

There is no helm on CI machines and downloading release tarballs would need network
access outside the Go module proxy, so the tests build ``helm.sh/helm/v3/cmd/helm`` at
:data:`HELM_VERSION` with the machine's Go toolchain (``go install module@version`` uses the
module's own go.sum, so the build is reproducible) and cache it under
``$XDG_CACHE_HOME/karpenter-core/helm/<version>/`` — the same cache root as the control
plane binaries. A warm run finds the binary and returns at once; a file lock makes parallel
pytest workers wait for one build. ``KARPENTER_HELM`` names a prebuilt helm to use instead.

Command line: ``python tests/deploy/helmtool.py`` builds (or finds) it and prints its path.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

HELM_VERSION = "v3.16.4"
HELM_MODULE = "helm.sh/helm/v3"
HELM_ENV = "KARPENTER_HELM"


class HelmBuildError(RuntimeError):
    """helm could not be built; the message says what failed and how to fix it."""


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "karpenter-core" / "helm" / HELM_VERSION


@contextlib.contextmanager
def _lock(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def helm_binary() -> Path:
    """The helm to use: ``$KARPENTER_HELM``, the cached build, or a fresh build."""
    explicit = os.environ.get(HELM_ENV)
    if explicit:
        path = Path(explicit)
        if not os.access(path, os.X_OK):
            raise HelmBuildError(f"{HELM_ENV}={explicit} is not an executable file")
        return path
    target = cache_dir() / "helm"
    if os.access(target, os.X_OK):
        return target
    with _lock(cache_dir().parent / f".{HELM_VERSION}.lock"):
        if os.access(target, os.X_OK):
            return target
        go = shutil.which("go")
        if go is None:
            raise HelmBuildError(
                "building helm needs the Go toolchain (`go` on PATH), or set "
                f"{HELM_ENV} to a helm {HELM_VERSION} binary"
            )
        with tempfile.TemporaryDirectory(prefix="helm-build-") as tmp:
            env = dict(os.environ, GOBIN=tmp, CGO_ENABLED="0", GOFLAGS="-buildvcs=false")
            ldflags = f"-s -w -X {HELM_MODULE}/internal/version.version={HELM_VERSION}"
            cmd = [go, "install", "-ldflags", ldflags, f"{HELM_MODULE}/cmd/helm@{HELM_VERSION}"]
            proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
            if proc.returncode != 0:
                tail = "\n".join(proc.stderr.strip().splitlines()[-5:])
                raise HelmBuildError(f"`{' '.join(cmd)}` failed:\n{tail}")
            target.parent.mkdir(parents=True, exist_ok=True)
            staged = target.with_suffix(".tmp")
            shutil.copy2(Path(tmp) / "helm", staged)
            staged.replace(target)
    return target


if __name__ == "__main__":
    try:
        print(helm_binary())
    except HelmBuildError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(1)
