"""The Dockerfile and the chart agree, the build context holds what the Dockerfile copies,
and nothing the image is built from floats: the base image is pinned by digest and every
Python package comes from a hash-locked requirements file that covers what the image
installs.

(No container runtime is available to the tests; the image build itself is exercised by
the wheel builds in tests/integration/test_wheels.py, which is what the image installs.
pip's --require-hashes mode fails the build when the lock misses any dependency, direct or
transitive; these tests catch a stale or hand-edited lock before that.)"""

from __future__ import annotations

import fnmatch
import importlib.metadata
import re
import tomllib
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = (ROOT / "Dockerfile").read_text()
LOCKS = {"image": ROOT / "requirements-image.txt", "build": ROOT / "requirements-build.txt"}


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
    assert sources == [
        "requirements-build.txt",
        "pyproject.toml",
        "README.md",
        "karpenter_core",
        "plugins",
        "requirements-image.txt",
    ]
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


def _arg_defaults() -> dict[str, str]:
    return dict(re.findall(r'^ARG (\w+)="?([^"\n]*)"?$', DOCKERFILE, re.MULTILINE))


def test_every_base_image_is_pinned_by_digest() -> None:
    args = _arg_defaults()
    images = re.findall(r"^FROM (\S+)", DOCKERFILE, re.MULTILINE)
    assert images
    for image in images:
        resolved = re.sub(r"\$\{(\w+)\}", lambda m: args[m.group(1)], image)
        assert re.fullmatch(r"[\w./:-]+@sha256:[0-9a-f]{64}", resolved), resolved


def test_python_packages_are_installed_only_from_the_hash_locks() -> None:
    installs = re.findall(r"pip (install|wheel) ([^\n\\&]*)", DOCKERFILE)
    assert installs
    for verb, args in installs:
        if "--no-deps" in args:  # our own wheels or sources, nothing from an index
            assert "--require-hashes" not in args and " -r " not in f" {args}"
            continue
        assert verb == "install" and "--require-hashes" in args, args
        locked = re.search(r"-r (\S+)", args)
        assert locked and Path(locked.group(1)).name in {p.name for p in LOCKS.values()}


def _pins(path: Path) -> dict[str, tuple[str, int, list[str]]]:
    """name -> (version, number of hashes, the packages it is there for)."""
    text = path.read_text()
    pins: dict[str, tuple[str, int, list[str]]] = {}
    for block in re.split(r"\n(?=\S)", text):
        first = block.split("\n", 1)[0]
        if not first or first.startswith("#"):
            continue
        name, sep, version = first.rstrip(" \\").partition("==")
        assert sep and re.fullmatch(r"[\w.!+]+", version), f"not pinned with ==: {first!r}"
        hashes = re.findall(r"--hash=sha256:[0-9a-f]{64}\b", block)
        notes = [line.split("#", 1)[1] for line in block.split("\n")[1:] if "#" in line]
        words = " ".join(notes).split()  # "via a b", "via -r requirements-image.in"
        via = [w for i, w in enumerate(words) if w not in ("via", "-r") and words[i - 1] != "-r"]
        pins[canonicalize_name(name)] = (version, len(hashes), via)
    return pins


def _inputs(path: Path) -> list[Requirement]:
    """The requirements a pip-compile input file lists."""
    lines = path.read_text().splitlines()
    return [Requirement(line) for line in lines if line.strip() and not line.startswith("#")]


@pytest.mark.parametrize("lock", sorted(LOCKS))
def test_every_locked_requirement_is_pinned_with_hashes(lock: str) -> None:
    pins = _pins(LOCKS[lock])
    assert pins
    for name, (_, hashes, _) in pins.items():
        assert hashes >= 1, f"{name}: no --hash"


@pytest.mark.parametrize("lock", sorted(LOCKS))
def test_each_lock_is_complete_for_its_input(lock: str) -> None:
    """Every requirement of the .in file is pinned at a version it allows, and every other
    pin is there for a locked package (no orphans from a hand edit)."""
    pins = _pins(LOCKS[lock])
    wanted = _inputs(LOCKS[lock].with_suffix(".in"))
    for req in wanted:
        name = canonicalize_name(req.name)
        assert name in pins, f"{req} is not in {LOCKS[lock].name}"
        assert req.specifier.contains(pins[name][0], prereleases=True), (req, pins[name][0])
    direct = {canonicalize_name(r.name) for r in wanted}
    for name, (_, _, via) in pins.items():
        assert name in direct or {canonicalize_name(v) for v in via} & set(pins), (
            f"{name} is locked for nothing"
        )


def _third_party(pyproject: Path) -> set[str]:
    deps = tomllib.loads(pyproject.read_text())["project"]["dependencies"]
    return {str(Requirement(d)) for d in deps if not d.startswith("karpenter-")}


def test_the_image_lock_input_is_what_the_image_packages_require() -> None:
    providers = _arg_defaults()["PROVIDERS"].split()
    required = _third_party(ROOT / "pyproject.toml")
    for name in providers:
        required |= _third_party(ROOT / "plugins" / name / "pyproject.toml")
    assert {str(r) for r in _inputs(ROOT / "requirements-image.in")} == required


def test_the_build_lock_holds_the_build_backend_of_every_package() -> None:
    backends = {
        str(Requirement(r))
        for p in [ROOT / "pyproject.toml", *ROOT.glob("plugins/*/pyproject.toml")]
        for r in tomllib.loads(p.read_text())["build-system"]["requires"]
    }
    assert {str(r) for r in _inputs(ROOT / "requirements-build.in")} == backends


def _image_python() -> str:
    image = _arg_defaults()["PYTHON_IMAGE"]
    version = re.match(r"python:(\d+\.\d+)-", image)
    assert version, image
    return version.group(1)


def test_the_locks_were_resolved_for_the_images_python() -> None:
    for lock in LOCKS.values():
        assert f"by pip-compile with Python {_image_python()}\n" in lock.read_text(), lock.name


def test_the_image_lock_holds_the_dependencies_of_what_it_pins() -> None:
    """For each locked package installed here at the locked version, its requirements (on
    the image's Python) are locked too, so a dependency cannot go missing by hand."""
    pins = _pins(LOCKS["image"])
    py = _image_python()
    env = {"python_version": py, "python_full_version": f"{py}.0", "extra": ""}
    checked = []
    for name, (version, _, _) in pins.items():
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue
        if dist.version != version:
            continue
        checked.append(name)
        for raw in dist.requires or []:
            req = Requirement(raw)
            if req.marker is None or req.marker.evaluate(env):
                assert canonicalize_name(req.name) in pins, f"{name} needs {req}"
    if not checked:  # every release moved on since the lock: nothing to compare against
        pytest.skip("no locked package is installed here at its locked version (make lock)")
