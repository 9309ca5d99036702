"""The Dockerfile and the chart agree, and the build context holds what the Dockerfile copies.

(No container runtime is available to the tests; the image build itself is exercised by
the wheel builds in tests/integration/test_wheels.py, which is what the image installs.)"""

from __future__ import annotations

import fnmatch
import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[3]
DOCKERFILE = (ROOT / "Dockerfile").read_text()


def ignored(path: str) -> bool:
    patterns = [
        line.strip()
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    return any(fnmatch.fnmatch(path, p) or path.startswith(p.rstrip("/") + "/") for p in patterns)


def test_every_copied_source_exists_and_is_in_the_build_context() -> None:
    copied = re.findall(r"^COPY (?!--from)(.+) \S+$", DOCKERFILE, re.MULTILINE)
    sources = [s for line in copied for s in line.split()]
    assert sources == ["pyproject.toml", "README.md", "karpenter_core", "plugins"]
    for source in sources:
        assert (ROOT / source).exists(), source
        assert not ignored(source), f"{source} is excluded by .dockerignore"


def test_every_default_provider_has_a_plugin_to_build() -> None:
    providers = re.search(r'^ARG PROVIDERS="([^"]+)"', DOCKERFILE, re.MULTILINE)
    assert providers is not None
    for name in providers.group(1).split():
        assert (ROOT / "plugins" / name / "pyproject.toml").is_file(), name


def test_image_user_and_ports_match_the_chart() -> None:
    values = yaml.safe_load((ROOT / "charts/karpenter-core/values.yaml").read_text())
    deployment = (ROOT / "charts/karpenter-core/templates/deployment.yaml").read_text()
    assert "USER 65536:65536" in DOCKERFILE
    assert "runAsUser: 65536" in deployment and "runAsGroup: 65536" in deployment
    exposed = re.search(r"^EXPOSE (.+)$", DOCKERFILE, re.MULTILINE)
    assert exposed is not None
    ports = {int(p) for p in exposed.group(1).split()}
    assert ports == {
        values["controller"]["metrics"]["port"],
        values["controller"]["healthProbe"]["port"],
    }
    assert 'ENTRYPOINT ["karpenter"]' in DOCKERFILE
    assert "- serve" in deployment
