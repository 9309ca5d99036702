"""`karpenter crds` and `karpenter validate` through click's CliRunner."""

from __future__ import annotations

from pathlib import Path

import yaml
from click.testing import CliRunner

from karpenter_core.apis.crds import crd_manifests
from karpenter_core.cli import main

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
GOOD = """apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: good}
spec:
  template:
    spec:
      requirements: [{key: kubernetes.io/arch, operator: In, values: [amd64]}]
      nodeClassRef: {group: karpenter.kwok.sh, kind: KWOKNodeClass, name: default}
"""
BAD = GOOD.replace("name: good", "name: bad").replace("operator: In", "operator: Foo")


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.stdout, result.stderr


def test_crds_prints_the_core_four_first_as_a_yaml_stream() -> None:
    code, out, _ = _run("crds")
    assert code == 0
    docs = [d for d in yaml.safe_load_all(out) if d is not None]
    core = crd_manifests()
    assert docs[: len(core)] == core
    # then the installed providers' NodeClass CRDs (only those), never a core one again
    extra = docs[len(core) :]
    assert all(d["kind"] == "CustomResourceDefinition" for d in extra)
    assert not {d["metadata"]["name"] for d in extra} & {d["metadata"]["name"] for d in core}


def test_crds_kind_filter_accepts_aliases() -> None:
    code, out, _ = _run("crds", "--kind", "nodepool", "--kind", "cb")
    assert code == 0
    names = [d["metadata"]["name"] for d in yaml.safe_load_all(out) if d]
    assert names == ["nodepools.karpenter.sh", "capacitybuffers.autoscaling.x-k8s.io"]


def test_crds_unknown_kind() -> None:
    code, _, err = _run("crds", "--kind", "Pod")
    assert code == 1
    assert "unknown kind Pod; available: NodePool, NodeClaim, NodeOverlay, CapacityBuffer" in err


def test_validate_examples_pass() -> None:
    code, out, err = _run("validate", "-f", str(EXAMPLES))
    assert code == 0, out + err
    assert out.startswith("OK: ")
    assert "3 NodePool" in out
    # the KWOK provider ships its NodeClass CRD: the example is checked against it
    assert "1 KWOKNodeClass" in out
    assert "KWOKNodeClass/default: skipped" not in err


def test_validate_reports_each_error_with_file_kind_name_and_path(tmp_path: Path) -> None:
    f = tmp_path / "pools.yaml"
    f.write_text(GOOD + "---\n" + BAD)
    code, out, err = _run("validate", "-f", str(f))
    assert code == 1
    assert out.splitlines() == [
        f"{f}: NodePool/bad: spec.template.spec.requirements[0].operator: Unsupported value: "
        '"Foo": supported values: "In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte"'
    ]
    assert "FAILED: 1 of 2 object(s) invalid" in err


def test_validate_several_files_and_skips_other_kinds(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(GOOD)
    (tmp_path / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n")
    code, out, err = _run(
        "validate", "-f", str(tmp_path / "a.yaml"), "-f", str(tmp_path / "cm.yaml")
    )
    assert code == 0
    assert (
        out.strip() == "OK: 1 object(s) valid (1 NodePool) in 2 file(s); 1 other object(s) skipped"
    )
    assert "ConfigMap/c: skipped" in err


def test_validate_quiet_hides_skipped(tmp_path: Path) -> None:
    (tmp_path / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n")
    code, _, err = _run("validate", "-q", "-f", str(tmp_path))
    assert code == 0
    assert "skipped (" not in err


def test_validate_malformed_yaml_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(GOOD)
    bad = tmp_path / "b.yaml"
    bad.write_text("spec: [\n")
    code, out, _ = _run("validate", "-f", str(tmp_path))
    assert code == 1
    lines = out.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"{bad}: invalid YAML in document 1: ")
    assert "Traceback" not in out


def test_validate_missing_path(tmp_path: Path) -> None:
    code, _, err = _run("validate", "-f", str(tmp_path / "nope"))
    assert code == 1
    assert "nope: no such file or directory" in err


def test_validate_empty_directory(tmp_path: Path) -> None:
    code, _, err = _run("validate", "-f", str(tmp_path))
    assert code == 1
    assert "no manifest files" in err


def test_validate_wrong_api_version_is_an_error(tmp_path: Path) -> None:
    f = tmp_path / "old.yaml"
    f.write_text(GOOD.replace("karpenter.sh/v1", "karpenter.sh/v1beta1", 1))
    code, out, _ = _run("validate", "-f", str(f))
    assert code == 1
    assert 'NodePool/good: apiVersion: unsupported version "karpenter.sh/v1beta1"' in out


def test_validate_unknown_cloud_provider(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(GOOD)
    code, _, err = _run("validate", "--cloud-provider", "no-such-cloud", "-f", str(tmp_path))
    assert code == 1
    assert "unknown cloud provider 'no-such-cloud'" in err


def test_validate_requires_filename() -> None:
    code, _, err = _run("validate")
    assert code == 2
    assert "Missing option '-f'" in err


def test_validate_cloud_provider_restricts_its_label_domain(
    tmp_path: Path, restore_label_sets: None
) -> None:
    f = tmp_path / "np.yaml"
    f.write_text(
        GOOD.replace(
            "kubernetes.io/arch, operator: In, values: [amd64]",
            "karpenter.kwok.sh/not-a-real-label, operator: Exists",
        )
    )
    assert _run("validate", "-f", str(f))[0] == 0
    code, out, _ = _run("validate", "--cloud-provider", "kwok", "-f", str(f))
    assert code == 1
    assert "using label karpenter.kwok.sh/not-a-real-label is not allowed" in out
