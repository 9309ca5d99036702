"""kubectl-style manifest loading."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from karpenter_core.apis.manifests import (
    ManifestError,
    load_file,
    load_manifests,
    manifest_files,
    parse_documents,
)

NP = "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata:\n  name: {name}\n"


def test_multi_document_file(tmp_path: Path) -> None:
    f = tmp_path / "a.yaml"
    f.write_text(NP.format(name="a") + "---\n" + NP.format(name="b") + "---\n")
    objs = load_manifests([str(f)])
    assert [(o.index, o.name) for o in objs] == [(0, "a"), (1, "b")]
    assert objs[0].source == str(f)


def test_empty_documents_and_comments_are_skipped() -> None:
    objs = parse_documents("# just a comment\n---\n---\n" + NP.format(name="x"), "s")
    assert [o.display for o in objs] == ["NodePool/x"]


def test_list_kinds_are_expanded() -> None:
    text = (
        "apiVersion: v1\nkind: List\nitems:\n"
        "- {apiVersion: karpenter.sh/v1, kind: NodePool, metadata: {name: a}}\n"
        "- apiVersion: karpenter.sh/v1\n  kind: NodePoolList\n  items:\n"
        "  - {apiVersion: karpenter.sh/v1, kind: NodePool, metadata: {name: b}}\n"
    )
    assert [o.name for o in parse_documents(text, "s")] == ["a", "b"]


def test_json_files_load(tmp_path: Path) -> None:
    f = tmp_path / "np.json"
    f.write_text('{"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "j"}}')
    assert [o.name for o in load_manifests([str(f)])] == ["j"]


def test_directories_load_manifest_files_in_name_order(tmp_path: Path) -> None:
    (tmp_path / "b.yml").write_text(NP.format(name="b"))
    (tmp_path / "a.yaml").write_text(NP.format(name="a"))
    (tmp_path / "notes.txt").write_text("not yaml: [")
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "c.yaml").write_text(NP.format(name="c"))
    assert [o.name for o in load_manifests([str(tmp_path)])] == ["a", "b"]
    assert [o.name for o in load_manifests([str(tmp_path)], recursive=True)] == ["a", "b", "c"]


def test_missing_path(tmp_path: Path) -> None:
    missing = tmp_path / "nope.yaml"
    with pytest.raises(ManifestError, match=r"nope\.yaml: no such file or directory"):
        manifest_files([str(missing)])


def test_invalid_yaml_names_file_document_and_line(tmp_path: Path) -> None:
    f = tmp_path / "bad.yaml"
    f.write_text(NP.format(name="ok") + "---\nkind: [unclosed\n")
    with pytest.raises(ManifestError) as e:
        load_file(str(f))
    message = str(e.value)
    assert message.startswith(f"{f}: invalid YAML in document 2: ")
    assert "line" in message and "\n" not in message


def test_non_mapping_document(tmp_path: Path) -> None:
    with pytest.raises(
        ManifestError, match=r"s: document 1: expected a Kubernetes object .* got a list"
    ):
        parse_documents("- a\n- b\n", "s")


def test_duplicate_keys_are_an_error() -> None:
    with pytest.raises(ManifestError, match="duplicate key 'name'"):
        parse_documents("metadata:\n  name: a\n  name: b\n", "s")


def test_timestamps_stay_strings() -> None:
    [o] = parse_documents("metadata:\n  creationTimestamp: 2026-01-01T00:00:00Z\n", "s")
    assert o.obj["metadata"]["creationTimestamp"] == "2026-01-01T00:00:00Z"


def test_unnamed_object_display() -> None:
    [o] = parse_documents("kind: NodePool\n", "s")
    assert o.display == "NodePool/<unnamed #1>"


def test_generate_name_is_used_for_display() -> None:
    [o] = parse_documents("kind: NodeClaim\nmetadata: {generateName: pool-}\n", "s")
    assert o.name == "pool-"


def test_non_utf8_file(tmp_path: Path) -> None:
    f = tmp_path / "bin.yaml"
    f.write_bytes(b"\xff\xfe\x00bad")
    with pytest.raises(ManifestError, match="not a UTF-8 text file"):
        load_file(str(f))


def test_stdin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(NP.format(name="in")))
    [o] = load_manifests(["-"])
    assert (o.source, o.name) == ("<stdin>", "in")
