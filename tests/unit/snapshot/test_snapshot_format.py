"""The snapshot file format: round trips through JSON, gzip and YAML, and one-line errors."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from karpenter_core.snapshot import (
    API_VERSION,
    KIND,
    Snapshot,
    SnapshotBuilder,
    SnapshotError,
    SnapshotSource,
    read_snapshot,
    write_snapshot,
)


def _pod(name: str, node: str, namespace: str = "default") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": "web"}},
        "spec": {
            "nodeName": node,
            "containers": [
                {"name": "app", "image": "nginx", "resources": {"requests": {"cpu": "1.5"}}}
            ],
        },
        "status": {"phase": "Running"},
    }


def _objects() -> list[dict[str, Any]]:
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-ä"}},
        {
            "apiVersion": "karpenter.sh/v1",
            "kind": "NodePool",
            "metadata": {"name": "default"},
            "spec": {"limits": {"cpu": 1000}, "weight": 10},
        },
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "n1", "labels": {"karpenter.sh/nodepool": "default"}},
        },
        _pod("web-1", "n1"),
        _pod("web-2", "n1", "team-ä"),
        {
            "apiVersion": "karpenter.kwok.sh/v1alpha1",
            "kind": "KWOKNodeClass",
            "metadata": {"name": "default"},
        },
    ]


def _snapshot() -> Snapshot:
    return Snapshot.from_objects(
        _objects(),
        taken_at="2025-03-01T12:00:00Z",
        source=SnapshotSource("https://10.0.0.1:6443", "prod"),
    )


@pytest.mark.parametrize("name", ["snap.json", "snap.json.gz"])
def test_round_trip_keeps_header_and_objects(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    write_snapshot(_snapshot(), path)
    back = read_snapshot(path)
    assert back == _snapshot()
    assert back.taken_at == "2025-03-01T12:00:00Z"
    assert back.source == SnapshotSource("https://10.0.0.1:6443", "prod")
    assert back.anonymised is False
    assert list(back.iter_objects()) == _objects()


def test_gz_name_writes_gzip_and_plain_name_writes_json(tmp_path: Path) -> None:
    write_snapshot(_snapshot(), tmp_path / "a.json.gz")
    write_snapshot(_snapshot(), tmp_path / "a.json")
    unzipped = gzip.decompress((tmp_path / "a.json.gz").read_bytes())
    assert unzipped == (tmp_path / "a.json").read_bytes()
    doc = json.loads(unzipped)
    assert doc["apiVersion"] == API_VERSION and doc["kind"] == KIND
    assert doc["source"] == {"server": "https://10.0.0.1:6443", "context": "prod"}
    assert doc["items"] == _objects()


def test_written_file_has_one_item_per_line(tmp_path: Path) -> None:
    write_snapshot(_snapshot(), tmp_path / "a.json")
    lines = (tmp_path / "a.json").read_text().splitlines()
    start = lines.index('"items": [')
    assert lines[-1] == "]}"
    assert [json.loads(line.rstrip(",")) for line in lines[start + 1 : -1]] == _objects()


def test_gzip_is_recognised_by_content_not_name(tmp_path: Path) -> None:
    write_snapshot(_snapshot(), tmp_path / "a.json.gz")
    renamed = tmp_path / "snapshot"
    (tmp_path / "a.json.gz").rename(renamed)
    assert read_snapshot(renamed) == _snapshot()


def test_yaml_and_pretty_json_are_read(tmp_path: Path) -> None:
    doc = {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "takenAt": "2025-03-01T12:00:00Z",
        "anonymised": True,
        "items": _objects(),
    }
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(doc, allow_unicode=True))
    (tmp_path / "s.json").write_text(json.dumps(doc, indent=4))
    for name in ("s.yaml", "s.json"):
        snap = read_snapshot(tmp_path / name)
        assert list(snap.iter_objects()) == _objects()
        assert snap.anonymised is True
        assert snap.source == SnapshotSource()


def test_items_larger_than_the_read_buffer(tmp_path: Path) -> None:
    """An item split across the reader's chunks (and a number cut at a chunk's end)."""
    big = _pod("big", "n1")
    big["metadata"]["annotations"] = {"blob": "x" * 3_000_000}
    numbers = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "n"},
        "data": {str(i): i * 12345 for i in range(200_000)},
    }
    snap = Snapshot.from_objects([big, numbers, _pod("small", "n1")])
    write_snapshot(snap, tmp_path / "big.json")
    assert read_snapshot(tmp_path / "big.json").objects("Pod") == [big, _pod("small", "n1")]
    assert read_snapshot(tmp_path / "big.json").objects("ConfigMap") == [numbers]


def test_accessors_group_by_kind_and_return_fresh_copies() -> None:
    snap = _snapshot()
    assert snap.kinds == ("Namespace", "NodePool", "Node", "Pod", "KWOKNodeClass")
    assert snap.counts() == {"Namespace": 1, "NodePool": 1, "Node": 1, "Pod": 2, "KWOKNodeClass": 1}
    assert len(snap) == 6
    assert [p["metadata"]["name"] for p in snap.pods()] == ["web-1", "web-2"]
    assert [n["metadata"]["name"] for n in snap.nodes()] == ["n1"]
    assert [n["kind"] for n in snap.node_classes()] == ["KWOKNodeClass"]
    assert snap.pdbs() == []
    snap.pods()[0]["metadata"]["name"] = "changed"
    assert snap.pods()[0]["metadata"]["name"] == "web-1"


def test_builder_refuses_an_object_without_kind() -> None:
    with pytest.raises(ValueError, match="has no kind"):
        SnapshotBuilder().add({"apiVersion": "v1", "metadata": {"name": "x"}})


def test_stdout(tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    write_snapshot(_snapshot(), "-")
    out = capsysbinary.readouterr().out
    assert json.loads(out)["items"] == _objects()


def test_a_failed_write_leaves_no_file(tmp_path: Path) -> None:
    target = tmp_path / "missing-dir" / "s.json"
    with pytest.raises(SnapshotError, match=r"missing-dir/s\.json: cannot write"):
        write_snapshot(_snapshot(), target)
    assert not (tmp_path / "missing-dir").exists()


def test_write_replaces_an_existing_file_whole(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text("x" * 100_000)
    write_snapshot(Snapshot.from_objects([_pod("a", "n")]), path)
    assert read_snapshot(path).pods() == [_pod("a", "n")]
    assert [p.name for p in tmp_path.iterdir()] == ["s.json"]


_HEAD = f'{{"apiVersion": "{API_VERSION}", "kind": "{KIND}", '


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "empty file"),
        ("   \n", "empty file"),
        ('{"apiVersion": "v1", "kind": "List", "items": []}', "apiVersion is 'v1', expected"),
        (f'{{"apiVersion": "{API_VERSION}", "kind": "PodList", "items": []}}', "kind is 'PodList'"),
        (f'{{"kind": "{KIND}", "items": []}}', "no apiVersion"),
        (_HEAD + '"takenAt": 5, "items": []}', "takenAt is not a string"),
        (_HEAD + '"anonymised": "yes", "items": []}', "anonymised is not true or false"),
        (_HEAD + '"source": "x", "items": []}', "source is not an object"),
        (_HEAD.rstrip(", ") + "}", "no items list"),
        (_HEAD + '"items": {}}', r"expected '\[' \(items is a list\)"),
        (_HEAD + '"items": [1]}', r"items\[0\] is not an object"),
        (
            _HEAD + '"items": [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a"}},'
            '{"apiVersion": "v1", "metadata": {"name": "b"}}]}',
            r"items\[1\] has no kind",
        ),
        (
            _HEAD + '"items": [{"kind": "Pod", "metadata": {"name": "a"}}]}',
            r"\(Pod\) has no apiVersion",
        ),
        (_HEAD + '"items": [{"kind": "Pod", "apiVersion": "v1"}]}', "has no metadata.name"),
        (
            _HEAD + '"items": [{"kind": "Pod",\n  "apiVersion": v1}]}',
            r"not valid JSON: Expecting value \(line 2, column 17\)",
        ),
        (_HEAD + '"items": []} trailing', "more data after the document"),
        (_HEAD + '"items": [', "the file ends where a value was expected"),
        (_HEAD + '"items": [], "items": []}', "items appears twice"),
        ("apiVersion: [unclosed", "not valid YAML"),
        ("- a\n- b\n", "expected one YAML document holding a Snapshot object"),
    ],
)
def test_read_errors_are_one_line_naming_the_file(tmp_path: Path, text: str, problem: str) -> None:
    path = tmp_path / "s.json"
    path.write_text(text)
    with pytest.raises(SnapshotError, match=problem) as caught:
        read_snapshot(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: ")
    assert "\n" not in message


def test_read_errors_for_the_file_itself(tmp_path: Path) -> None:
    with pytest.raises(SnapshotError, match="no such file"):
        read_snapshot(tmp_path / "nope.json")
    with pytest.raises(SnapshotError, match="is a directory"):
        read_snapshot(tmp_path)
    (tmp_path / "bin").write_bytes(b"{\xff\xfe}")
    with pytest.raises(SnapshotError, match="not a UTF-8 text file"):
        read_snapshot(tmp_path / "bin")
    write_snapshot(_snapshot(), tmp_path / "s.json.gz")
    data = (tmp_path / "s.json.gz").read_bytes()
    (tmp_path / "cut.json.gz").write_bytes(data[: len(data) // 2])
    with pytest.raises(SnapshotError, match="damaged or truncated gzip"):
        read_snapshot(tmp_path / "cut.json.gz")
