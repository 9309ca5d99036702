"""README.md and docs/ say what is true of this repository: the distribution names they
use are the ones the pyproject files declare, the install commands they give work without
a package index holding karpenter's packages, and every doc is reachable from the README."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
DOCS = sorted((ROOT / "docs").glob("*.md"))


def project_names() -> dict[str, Path]:
    """Distribution name -> project directory, from every pyproject.toml we ship."""
    out = {}
    for pyproject in [ROOT / "pyproject.toml", *sorted(ROOT.glob("plugins/*/pyproject.toml"))]:
        name = tomllib.loads(pyproject.read_text())["project"]["name"]
        out[name] = pyproject.parent
    return out


def test_the_readme_package_table_lists_exactly_the_declared_distributions() -> None:
    section = README.split("## Packages", 1)[1].split("\n## ", 1)[0]
    listed = re.findall(r"^\| `([a-z0-9-]+)` \|", section, re.MULTILINE)
    assert sorted(listed) == sorted(project_names())


def test_the_core_extras_name_the_plugin_distributions() -> None:
    core = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    names = set(project_names())
    for extra in ("kwok", "aws", "azure", "gcp"):
        (requirement,) = core["optional-dependencies"][extra]
        assert requirement.split("==")[0] == f"karpenter-{extra}"
        assert f"karpenter-{extra}" in names


def _commands(text: str) -> list[str]:
    blocks = re.findall(r"```[a-z]*\n(.*?)```", text, re.DOTALL)
    return [line.split("#")[0].strip() for b in blocks for line in b.splitlines()]


def test_no_doc_tells_users_to_install_from_an_index_that_lacks_the_packages() -> None:
    """An index install of a karpenter package works only with --find-links until they are
    published; a plain one may appear in prose as the future form, never as a command."""
    for path in [ROOT / "README.md", *DOCS]:
        for command in _commands(path.read_text(encoding="utf-8")):
            if not command.startswith("pip install") or "--find-links" in command:
                continue
            named = re.findall(r"'?(karpenter-[a-z-]+)", command)
            assert not [n for n in named if n in project_names()], f"{path.name}: {command}"


def test_local_install_commands_name_existing_projects() -> None:
    for path in [ROOT / "README.md", *DOCS]:
        for command in _commands(path.read_text(encoding="utf-8")):
            if not command.startswith("pip install ."):
                continue
            for target in command.split()[2:]:
                if not target.startswith("-"):
                    assert (ROOT / target / "pyproject.toml").is_file(), f"{path.name}: {target}"


def test_the_readme_lists_every_doc() -> None:
    listed = set(re.findall(r"\]\((docs/[^)#]+\.md)\)", README))
    assert {f"docs/{p.name}" for p in DOCS} <= listed


_LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")


def _anchors(markdown: str) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens."""
    out = set()
    in_code = False
    for line in markdown.splitlines():
        if line.startswith("```"):
            in_code = not in_code
        if in_code or not line.startswith("#"):
            continue
        title = line.lstrip("#").strip().lower()
        out.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return out


def _relative_links(path: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.DOTALL)
    return [t for t in _LINK.findall(text) if not re.match(r"[a-z]+:", t)]


def test_every_relative_link_in_the_readme_and_docs_resolves() -> None:
    broken = []
    for path in [ROOT / "README.md", *DOCS]:
        for target in _relative_links(path):
            file, _, anchor = target.partition("#")
            dest = (path.parent / file).resolve() if file else path
            if not dest.exists():
                broken.append(f"{path.name}: {target} (no such file)")
            elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest.read_text()):
                broken.append(f"{path.name}: {target} (no such heading)")
    assert broken == []


def test_no_doc_names_a_markdown_file_that_is_not_in_the_repository() -> None:
    """A doc citing ``something.md`` by name (not as a link) means a file of this
    repository, unless it is upstream's (``designs/...``)."""
    known = {p.name for p in ROOT.rglob("*.md") if ".venv" not in p.parts}
    for path in [ROOT / "README.md", *DOCS]:
        for name in re.findall(r"`([\w./-]+\.md)`", path.read_text(encoding="utf-8")):
            if name.startswith("designs/"):
                continue
            assert Path(name).name in known, f"{path.name}: {name}"
