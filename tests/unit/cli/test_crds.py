"""`karpenter crds`: the core's CRDs, then the CRDs the cloud provider plugins ship.

Most tests hand the command a plugin manager holding throwaway providers whose CRD files
live in a temporary directory; the last ones go through the plugins installed in this
environment (KWOK ships its KWOKNodeClass, the AWS skeleton ships nothing).
"""

from __future__ import annotations

from collections.abc import Callable
from importlib.resources import files
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from karpenter_core import builtins
from karpenter_core.apis.crds import crd_manifests
from karpenter_core.cli import crds as crds_cli
from karpenter_core.cli import main
from karpenter_core.cloudprovider.protocol import NodeClassKind
from karpenter_core.hookspecs import CloudProviderSpec
from karpenter_core.plugins import KarpenterPluginManager, PluginLoadError, hookimpl

CORE_NAMES = [c["metadata"]["name"] for c in crd_manifests()]


def crd_text(kind: str, group: str = "karpenter.test.dev", version: str = "v1") -> str:
    """A minimal CRD for ``kind`` (a NodeClass-like, cluster scoped), led by a comment."""
    plural = kind.lower() + "es"
    return (
        f"# The {kind} of a test provider.\n"
        "apiVersion: apiextensions.k8s.io/v1\n"
        "kind: CustomResourceDefinition\n"
        f"metadata: {{name: {plural}.{group}}}\n"
        "spec:\n"
        f"  group: {group}\n"
        f"  names: {{kind: {kind}, plural: {plural}, singular: {kind.lower()},"
        f" shortNames: [{kind.lower()[:3]}nc]}}\n"
        "  scope: Cluster\n"
        "  versions:\n"
        f"    - name: {version}\n"
        "      served: true\n"
        "      storage: true\n"
        "      schema: {openAPIV3Schema: {type: object}}\n"
    )


class ProviderPlugin:
    """A plugin object offering the given cloud providers."""

    def __init__(self, *specs: CloudProviderSpec) -> None:
        self.specs = specs

    @hookimpl
    def karpenter_cloud_providers(self) -> list[CloudProviderSpec]:
        return list(self.specs)


def provider(
    name: str, crds: tuple[Path, ...] = (), node_classes: tuple[NodeClassKind, ...] = ()
) -> CloudProviderSpec:
    return CloudProviderSpec(
        name=name, factory=lambda _: None, node_classes=node_classes, crds=crds
    )  # type: ignore[arg-type,return-value]


Use = Callable[..., KarpenterPluginManager]


@pytest.fixture
def use_plugins(monkeypatch: pytest.MonkeyPatch) -> Use:
    """``use_plugins(ProviderPlugin(...), ...)``: the plugin manager `karpenter crds`
    gets holds the built-ins and exactly these plugins (registered in this order)."""

    def install(*plugins: object) -> KarpenterPluginManager:
        pm = KarpenterPluginManager()
        assert pm.register_plugin(builtins, "builtins") is None
        for i, plugin in enumerate(plugins):
            assert pm.register_plugin(plugin, f"plugin-{i}") is None
        monkeypatch.setattr(crds_cli, "get_plugin_manager", lambda: pm)
        return pm

    return install


def write(tmp_path: Path, name: str, text: str | bytes) -> Path:
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


def run(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["crds", *args], env=env)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.stdout, result.stderr


def names(out: str) -> list[str]:
    return [d["metadata"]["name"] for d in yaml.safe_load_all(out) if d is not None]


def documents(out: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(out) if d is not None]


def test_default_prints_the_core_crds_then_every_providers_by_provider_name(
    tmp_path: Path, use_plugins: Use
) -> None:
    beta = write(tmp_path, "beta.yaml", crd_text("BetaNodeClass"))
    alpha = write(tmp_path, "alpha.yaml", crd_text("AlphaNodeClass"))
    use_plugins(
        ProviderPlugin(provider("beta", (beta,))), ProviderPlugin(provider("alpha", (alpha,)))
    )
    code, out, _ = run()
    assert code == 0
    assert names(out) == [
        *CORE_NAMES,
        "alphanodeclasses.karpenter.test.dev",
        "betanodeclasses.karpenter.test.dev",
    ]


def test_cloud_provider_option_prints_only_those_providers_in_the_order_given(
    tmp_path: Path, use_plugins: Use
) -> None:
    use_plugins(
        ProviderPlugin(
            provider("alpha", (write(tmp_path, "a.yaml", crd_text("AlphaNodeClass")),)),
            provider("beta", (write(tmp_path, "b.yaml", crd_text("BetaNodeClass")),)),
            provider("gamma", (write(tmp_path, "c.yaml", crd_text("GammaNodeClass")),)),
        )
    )
    code, out, _ = run("--cloud-provider", "gamma", "--cloud-provider", "alpha")
    assert code == 0
    assert names(out)[len(CORE_NAMES) :] == [
        "gammanodeclasses.karpenter.test.dev",
        "alphanodeclasses.karpenter.test.dev",
    ]


def test_a_provider_file_is_printed_verbatim_as_its_own_document(
    tmp_path: Path, use_plugins: Use
) -> None:
    text = crd_text("AlphaNodeClass")
    use_plugins(ProviderPlugin(provider("alpha", (write(tmp_path, "a.yaml", text),))))
    code, out, _ = run()
    assert code == 0
    # The file starts with a comment and no `---`: the stream gets a marker before it,
    # so it cannot run into the previous core CRD.
    assert out.endswith("\n---\n" + text)
    assert documents(out)[-1] == yaml.safe_load(text)


def test_a_file_without_a_final_newline_still_ends_its_document(
    tmp_path: Path, use_plugins: Use
) -> None:
    first = write(tmp_path, "a.yaml", crd_text("AlphaNodeClass").rstrip("\n"))
    second = write(tmp_path, "b.yaml", crd_text("BetaNodeClass"))
    use_plugins(ProviderPlugin(provider("alpha", (first, second))))
    code, out, _ = run()
    assert code == 0
    assert names(out)[len(CORE_NAMES) :] == [
        "alphanodeclasses.karpenter.test.dev",
        "betanodeclasses.karpenter.test.dev",
    ]


def test_unknown_cloud_provider_lists_the_installed_ones(tmp_path: Path, use_plugins: Use) -> None:
    use_plugins(ProviderPlugin(provider("alpha"), provider("beta")))
    code, out, err = run("--cloud-provider", "kwik")
    assert code == 1
    assert out == ""
    assert err.strip() == (
        "Error: unknown cloud provider 'kwik' (installed: alpha, beta); "
        "is karpenter-core[kwik] installed?"
    )


def test_unknown_cloud_provider_names_the_plugins_that_failed_to_load(use_plugins: Use) -> None:
    pm = use_plugins(ProviderPlugin(provider("alpha")))
    pm.load_errors.append(PluginLoadError("kwok", "karpenter-kwok", "0.1.0", "failed to import"))
    code, _, err = run("--cloud-provider", "kwok")
    assert code == 1
    assert "unknown cloud provider 'kwok' (installed: alpha)" in err
    assert "plugins that failed to load: plugin 'kwok' (karpenter-kwok 0.1.0): failed" in err


def test_default_warns_about_plugins_that_failed_to_load_and_prints_the_rest(
    use_plugins: Use,
) -> None:
    pm = use_plugins()
    pm.load_errors.append(PluginLoadError("kwok", "karpenter-kwok", "0.1.0", "failed to import"))
    code, out, err = run()
    assert code == 0
    assert names(out) == CORE_NAMES
    assert err.splitlines() == [
        "warning: plugin 'kwok' (karpenter-kwok 0.1.0): failed to import; "
        "the CRDs of the cloud providers it offers are not printed"
    ]


def test_a_nodeclass_whose_crd_no_provider_ships_is_noted_on_stderr(
    tmp_path: Path, use_plugins: Use
) -> None:
    shipped = NodeClassKind("karpenter.test.dev", "AlphaNodeClass", "v1")
    missing = NodeClassKind("karpenter.other.dev", "OtherNodeClass", "v2")
    crd = write(tmp_path, "a.yaml", crd_text("AlphaNodeClass"))
    use_plugins(ProviderPlugin(provider("alpha", (crd,), (shipped, missing))))
    code, out, err = run()
    assert code == 0
    assert names(out)[-1] == "alphanodeclasses.karpenter.test.dev"
    assert err.splitlines() == [
        "note: cloud provider 'alpha' ships no CRD for its NodeClass OtherNodeClass "
        "(karpenter.other.dev/v2); install that CRD from the provider's own release"
    ]


def test_the_missing_crd_note_is_left_out_when_filtering_by_kind(use_plugins: Use) -> None:
    use_plugins(ProviderPlugin(provider("alpha", (), (NodeClassKind("g.dev", "X", "v1"),))))
    code, out, err = run("--kind", "nodepool")
    assert code == 0
    assert names(out) == ["nodepools.karpenter.sh"]
    assert err == ""


def test_a_crd_serving_another_version_does_not_count_for_the_nodeclass(
    tmp_path: Path, use_plugins: Use
) -> None:
    crd = write(tmp_path, "a.yaml", crd_text("AlphaNodeClass", version="v1beta1"))
    nc = NodeClassKind("karpenter.test.dev", "AlphaNodeClass", "v1")
    use_plugins(ProviderPlugin(provider("alpha", (crd,), (nc,))))
    code, _, err = run()
    assert code == 0
    assert "ships no CRD for its NodeClass AlphaNodeClass (karpenter.test.dev/v1)" in err


BROKEN_FILES: list[tuple[str, str | bytes, str]] = [
    ("not yaml", "spec: [unclosed\n", "not valid YAML: "),
    ("not utf-8", b"kind: \xff\xfe\n", "cannot read it: "),
    ("two documents", crd_text("A") + "---\n" + crd_text("B"), "found 2 YAML documents"),
    ("empty", "# nothing\n", "expected exactly one CustomResourceDefinition, found 0"),
    ("a list", "- 1\n", "expected a CustomResourceDefinition object, got a list"),
    (
        "another kind",
        "apiVersion: v1\nkind: ConfigMap\n",
        "expected apiVersion apiextensions.k8s.io/v1 kind CustomResourceDefinition, "
        "got v1 ConfigMap",
    ),
    (
        "name not plural.group",
        crd_text("AlphaNodeClass").replace(
            "name: alphanodeclasses.karpenter.test.dev", "name: alpha"
        ),
        "metadata.name is 'alpha', must be 'alphanodeclasses.karpenter.test.dev'",
    ),
    (
        "no kind",
        crd_text("AlphaNodeClass").replace("kind: AlphaNodeClass, ", ""),
        "spec.names needs a kind and a plural",
    ),
    (
        "served missing",
        crd_text("AlphaNodeClass").replace("      served: true\n", ""),
        "spec.versions[0].served must be true or false",
    ),
]


@pytest.mark.parametrize(
    ("content", "message"),
    [(c, m) for _, c, m in BROKEN_FILES],
    ids=[i for i, _, _ in BROKEN_FILES],
)
def test_a_broken_crd_file_is_one_line_naming_the_provider_and_file(
    tmp_path: Path, use_plugins: Use, content: str | bytes, message: str
) -> None:
    use_plugins(ProviderPlugin(provider("alpha", (write(tmp_path, "bad.yaml", content),))))
    code, out, err = run("--cloud-provider", "alpha")
    assert code == 1
    assert out == ""
    [line] = err.splitlines()
    assert line.startswith("Error: cloud provider 'alpha': CRD file bad.yaml: ")
    assert message in line


def test_a_missing_crd_file_is_an_error_not_a_traceback(tmp_path: Path, use_plugins: Use) -> None:
    use_plugins(ProviderPlugin(provider("alpha", (tmp_path / "gone.yaml",))))
    code, _, err = run()
    assert code == 1
    assert err.startswith("Error: cloud provider 'alpha': CRD file gone.yaml: cannot read it: ")
    # Without --cloud-provider, the user learns how to leave the broken provider out.
    assert err.rstrip().endswith("(pick the providers to print with --cloud-provider NAME)")


def test_the_same_crd_shipped_by_two_providers_is_printed_once(
    tmp_path: Path, use_plugins: Use
) -> None:
    crd = write(tmp_path, "a.yaml", crd_text("AlphaNodeClass"))
    copy = write(tmp_path, "copy.yaml", crd_text("AlphaNodeClass"))
    use_plugins(ProviderPlugin(provider("alpha", (crd,)), provider("alpha-beta", (copy,))))
    code, out, _ = run()
    assert code == 0
    assert names(out) == [*CORE_NAMES, "alphanodeclasses.karpenter.test.dev"]


def test_two_providers_shipping_different_manifests_for_one_crd_is_an_error(
    tmp_path: Path, use_plugins: Use
) -> None:
    crd = write(tmp_path, "a.yaml", crd_text("AlphaNodeClass"))
    other = write(tmp_path, "b.yaml", crd_text("AlphaNodeClass").replace("Cluster", "Namespaced"))
    use_plugins(ProviderPlugin(provider("alpha", (crd,)), provider("beta", (other,))))
    code, out, err = run()
    assert code == 1
    assert out == ""
    assert err.strip() == (
        "Error: cloud providers 'alpha' and 'beta' ship different manifests for the CRD "
        "alphanodeclasses.karpenter.test.dev"
    )


def test_a_provider_cannot_redefine_a_core_crd(tmp_path: Path, use_plugins: Use) -> None:
    fake = crd_text("NodePool", group="karpenter.sh").replace("nodepooles", "nodepools")
    use_plugins(ProviderPlugin(provider("alpha", (write(tmp_path, "np.yaml", fake),))))
    code, _, err = run()
    assert code == 1
    assert "Error: cloud provider 'alpha': CRD file np.yaml redefines the core CRD " in err
    assert "nodepools.karpenter.sh" in err


def test_kind_filter_reaches_provider_crds_by_short_name(tmp_path: Path, use_plugins: Use) -> None:
    use_plugins(
        ProviderPlugin(provider("alpha", (write(tmp_path, "a.yaml", crd_text("AlphaNodeClass")),)))
    )
    code, out, _ = run("--kind", "ALPNC", "--kind", "nodeclaim")
    assert code == 0
    assert names(out) == ["nodeclaims.karpenter.sh", "alphanodeclasses.karpenter.test.dev"]


def test_unknown_kind_lists_the_provider_kinds_too(tmp_path: Path, use_plugins: Use) -> None:
    use_plugins(
        ProviderPlugin(provider("alpha", (write(tmp_path, "a.yaml", crd_text("AlphaNodeClass")),)))
    )
    code, _, err = run("--kind", "Pod")
    assert code == 1
    assert err.strip() == (
        "Error: unknown kind Pod; available: NodePool, NodeClaim, NodeOverlay, "
        "CapacityBuffer, AlphaNodeClass"
    )


def test_duplicate_provider_names_are_an_error_naming_both_plugins(use_plugins: Use) -> None:
    use_plugins(ProviderPlugin(provider("alpha")), ProviderPlugin(provider("alpha")))
    code, _, err = run()
    assert code == 1
    assert "cloud provider 'alpha' is registered twice: by plugin 'plugin-0' and by plugin" in err


def test_help_says_the_default_is_every_installed_provider() -> None:
    result = CliRunner().invoke(main, ["crds", "--help"])
    assert result.exit_code == 0
    assert "--cloud-provider NAME" in result.output
    assert "Default: the CRDs of every installed cloud provider." in " ".join(result.output.split())


# --- Through the plugins installed here -------------------------------------------------------


def test_with_no_plugins_only_the_core_crds_are_printed() -> None:
    code, out, err = run(env={"KARPENTER_PLUGINS": ""})
    assert code == 0
    assert documents(out) == crd_manifests()
    assert err == ""


def test_the_installed_kwok_plugin_contributes_its_kwoknodeclass_crd() -> None:
    pytest.importorskip("karpenter_kwok")
    shipped = files("karpenter_kwok") / "crds" / "karpenter.kwok.sh_kwoknodeclasses.yaml"
    code, out, err = run(env={"KARPENTER_PLUGINS": "kwok"})
    assert code == 0
    docs = documents(out)
    assert docs[:-1] == crd_manifests()
    assert docs[-1] == yaml.safe_load(shipped.read_text(encoding="utf-8"))
    assert docs[-1]["spec"]["names"]["kind"] == "KWOKNodeClass"
    assert err == ""


def test_the_installed_aws_plugin_contributes_its_ec2nodeclass_crd() -> None:
    pytest.importorskip("karpenter_aws")
    shipped = files("karpenter_aws") / "crds" / "karpenter.k8s.aws_ec2nodeclasses.yaml"
    code, out, err = run("--cloud-provider", "aws", env={"KARPENTER_PLUGINS": "aws,kwok"})
    assert code == 0
    docs = documents(out)
    assert names(out)[:-1] == CORE_NAMES
    assert docs[-1] == yaml.safe_load(shipped.read_text(encoding="utf-8"))
    assert docs[-1]["spec"]["names"]["kind"] == "EC2NodeClass"
    assert err == ""


def test_the_installed_azure_plugin_contributes_its_aksnodeclass_crd() -> None:
    pytest.importorskip("karpenter_azure")
    shipped = files("karpenter_azure") / "crds" / "karpenter.azure.com_aksnodeclasses.yaml"
    code, out, err = run("--cloud-provider", "azure", env={"KARPENTER_PLUGINS": "azure,kwok"})
    assert code == 0
    docs = documents(out)
    assert names(out)[:-1] == CORE_NAMES
    assert docs[-1] == yaml.safe_load(shipped.read_text(encoding="utf-8"))
    assert docs[-1]["spec"]["names"]["kind"] == "AKSNodeClass"
    assert err == ""


def test_the_installed_gcp_plugin_contributes_its_gcenodeclass_crd() -> None:
    pytest.importorskip("karpenter_gcp")
    shipped = files("karpenter_gcp") / "crds" / "karpenter.k8s.gcp_gcenodeclasses.yaml"
    code, out, err = run("--cloud-provider", "gcp", env={"KARPENTER_PLUGINS": "gcp,kwok"})
    assert code == 0
    docs = documents(out)
    assert names(out)[:-1] == CORE_NAMES
    assert docs[-1] == yaml.safe_load(shipped.read_text(encoding="utf-8"))
    assert docs[-1]["spec"]["names"]["kind"] == "GCENodeClass"
    assert err == ""
