"""The Helm chart, rendered by a real ``helm template`` (pinned, built from its Go module):
RBAC as upstream's chart for each provider (rbac_expected.yaml), values wired into args
and env, and env the operator accepts."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import attrs
import pytest
import yaml
from chartrender import CHART, NS, env_of, one, render  # tests/deploy, on sys.path (conftest)

from karpenter_core.apis.crds import crd_yaml_files
from karpenter_core.cli.serve import command as serve_command
from karpenter_core.cli.serve import parse_provider_settings
from karpenter_core.runtime.options import Options

pytestmark = pytest.mark.helm


def grants(rules: list[dict[str, Any]], group: str, resource: str, verb: str) -> bool:
    return any(
        group in r.get("apiGroups", [])
        and resource in r.get("resources", [])
        and verb in r.get("verbs", [])
        and not r.get("resourceNames")
        for r in rules
    )


@pytest.fixture(scope="module")
def default_docs(helm: Path) -> list[dict[str, Any]]:
    return render(helm)


EXPECTED_RBAC = yaml.safe_load((Path(__file__).parent / "rbac_expected.yaml").read_text())
PROVIDERS = ["kwok", "aws", "azure", "gcp"]

Grant = tuple[str, str, str, str | None]  # API group, resource, verb, resource name


def expand(rules: Iterable[dict[str, Any]]) -> set[Grant]:
    """Single grants of RBAC rules, or of the expectation file's {g, r, v, n} shorthand."""
    out: set[Grant] = set()
    for rule in rules:
        groups = [rule["g"]] if "g" in rule else rule["apiGroups"]
        names = rule.get("n", rule.get("resourceNames")) or [None]
        for g in groups:
            for r in rule.get("r", rule.get("resources", [])):
                for v in rule.get("v", rule.get("verbs", [])):
                    out |= {(g, r, v, n) for n in names}
    return out


def rendered_rbac(docs: list[dict[str, Any]]) -> dict[str, set[Grant]]:
    """What the rendered chart grants its service account, per scope (see the file)."""
    roles = {
        (d["kind"], d["metadata"].get("namespace"), d["metadata"]["name"]): d.get("rules") or []
        for d in docs
        if d["kind"] in ("Role", "ClusterRole")
    }
    scopes: dict[str, set[Grant]] = {}
    for b in docs:
        if b["kind"] not in ("RoleBinding", "ClusterRoleBinding"):
            continue
        ns = b["metadata"].get("namespace")
        ref = b["roleRef"]
        rules = roles[(ref["kind"], ns if ref["kind"] == "Role" else None, ref["name"])]
        scope = "cluster" if ns is None else "namespace" if ns == NS else ns
        scopes.setdefault(scope, set()).update(expand(rules))
    for d in docs:
        if d["kind"] == "ClusterRole" and d["metadata"]["labels"].get(
            "rbac.authorization.k8s.io/aggregate-to-admin"
        ):
            scopes.setdefault("admin", set()).update(expand(d["rules"]))
    return scopes


def expected_rbac(provider: str) -> dict[str, set[Grant]]:
    """upstream - removed + added, per scope, from rbac_expected.yaml."""
    spec = EXPECTED_RBAC[provider]
    scopes = {scope: expand(rules) for scope, rules in spec["upstream"].items()}
    for change in spec.get("removed", []):
        for scope, rules in change.items():
            if scope != "why":
                scopes[scope] -= expand(rules)
    for change in spec.get("added", []):
        for scope, rules in change.items():
            if scope != "why":
                scopes.setdefault(scope, set()).update(expand(rules))
    return {scope: grants for scope, grants in scopes.items() if grants}


@pytest.mark.parametrize("provider", PROVIDERS)
def test_rbac_is_upstreams_for_the_provider_but_for_the_listed_differences(
    helm: Path, provider: str
) -> None:
    rendered = rendered_rbac(render(helm, f"cloudProvider.name={provider}"))
    expected = expected_rbac(provider)
    assert set(rendered) == set(expected)
    for scope in expected:
        extra = sorted(rendered[scope] - expected[scope], key=str)
        missing = sorted(expected[scope] - rendered[scope], key=str)
        assert (extra, missing) == ([], []), f"{provider} {scope}"


@pytest.mark.parametrize("provider", PROVIDERS)
def test_each_listed_difference_is_one(provider: str) -> None:
    spec = EXPECTED_RBAC[provider]
    upstream = {scope: expand(rules) for scope, rules in spec["upstream"].items()}
    for kind, wanted in (("removed", True), ("added", False)):
        for change in spec.get(kind, []):
            assert change["why"].strip()
            for scope, rules in change.items():
                if scope != "why":
                    inside = expand(rules) <= upstream.get(scope, set())
                    disjoint = not expand(rules) & upstream.get(scope, set())
                    assert inside if wanted else disjoint, f"{provider} {kind} {scope}"


def test_only_kwok_may_create_nodes(helm: Path) -> None:
    for provider in PROVIDERS:
        cluster = rendered_rbac(render(helm, f"cloudProvider.name={provider}"))["cluster"]
        assert (("", "nodes", "create", None) in cluster) == (provider == "kwok"), provider


@pytest.mark.parametrize("provider", PROVIDERS)
def test_dra_grants_follow_the_settings(helm: Path, provider: str) -> None:
    """ignoreDRARequests=false adds the read grants of ``dra`` in rbac_expected.yaml; the
    KWOK DRA driver's dra-config setting adds ``kwok-dra-driver`` (KWOK only)."""
    base = expected_rbac(provider)["cluster"]
    read = expand(EXPECTED_RBAC["dra"]["cluster"])
    write = expand(EXPECTED_RBAC["kwok-dra-driver"]["cluster"])
    name = f"cloudProvider.name={provider}"
    dra_on = rendered_rbac(render(helm, name, "settings.ignoreDRARequests=false"))["cluster"]
    assert dra_on == base | read
    driver = rendered_rbac(render(helm, name, "cloudProvider.settings.dra-config=dra.yaml"))
    assert driver["cluster"] == (base | write if provider == "kwok" else base)


def test_core_cluster_role_grants_nothing_on_dra_by_default(
    default_docs: list[dict[str, Any]],
) -> None:
    rules = one(default_docs, "ClusterRole", "karpenter-core-core")["rules"]
    assert not any("resource.k8s.io" in r["apiGroups"] for r in rules)


def test_every_role_is_bound_to_the_service_account(default_docs: list[dict[str, Any]]) -> None:
    sa = one(default_docs, "ServiceAccount")["metadata"]["name"]
    roles = {
        (d["kind"], d["metadata"]["name"], d["metadata"].get("namespace"))
        for d in default_docs
        if d["kind"] in ("Role", "ClusterRole")
    }
    bound = set()
    for b in default_docs:
        if b["kind"] not in ("RoleBinding", "ClusterRoleBinding"):
            continue
        assert b["subjects"] == [{"kind": "ServiceAccount", "name": sa, "namespace": NS}]
        bound.add((b["roleRef"]["kind"], b["roleRef"]["name"], b["metadata"].get("namespace")))
    aggregate = {r for r in roles if r[1].endswith("-admin")}  # aggregated, not bound
    assert roles - aggregate == bound


def test_leader_election_role_lets_the_operator_create_and_renew_its_lease(
    default_docs: list[dict[str, Any]],
) -> None:
    role = one(default_docs, "Role", "karpenter-core")
    assert role["metadata"]["namespace"] == NS
    rules = role["rules"]
    assert grants(rules, "coordination.k8s.io", "leases", "get")
    assert grants(rules, "coordination.k8s.io", "leases", "create")
    renew = [r for r in rules if "update" in r["verbs"]]
    assert renew == [
        {
            "apiGroups": ["coordination.k8s.io"],
            "resources": ["leases"],
            "verbs": ["patch", "update"],
            "resourceNames": ["karpenter-leader-election"],
        }
    ]


def test_the_dns_role_lives_in_kube_system(default_docs: list[dict[str, Any]]) -> None:
    dns = one(default_docs, "Role", "karpenter-core-dns")
    assert dns["metadata"]["namespace"] == "kube-system"
    assert dns["rules"][0]["resourceNames"] == ["kube-dns"]


def test_kwok_is_the_default_provider_with_its_nodeclass_rbac_and_crd(
    default_docs: list[dict[str, Any]],
) -> None:
    deployment = one(default_docs, "Deployment")
    args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    assert args == ["serve", "--cloud-provider=kwok"]
    rules = one(default_docs, "ClusterRole", "karpenter-core")["rules"]
    assert grants(rules, "karpenter.kwok.sh", "kwoknodeclasses", "watch")
    assert grants(rules, "karpenter.kwok.sh", "kwoknodeclasses/status", "patch")
    crd = one(default_docs, "CustomResourceDefinition")
    assert crd["metadata"]["name"] == "kwoknodeclasses.karpenter.kwok.sh"


def test_selecting_another_provider_wires_its_settings_and_rbac(helm: Path) -> None:
    docs = render(
        helm,
        "cloudProvider.name=aws",
        "cloudProvider.settings.cluster-name=prod",
        "cloudProvider.settings.interruption-queue=prod-q",
    )
    args = one(docs, "Deployment")["spec"]["template"]["spec"]["containers"][0]["args"]
    assert args == [
        "serve",
        "--cloud-provider=aws",
        "--provider-setting=cluster-name=prod",
        "--provider-setting=interruption-queue=prod-q",
    ]
    rules = one(docs, "ClusterRole", "karpenter-core")["rules"]
    assert grants(rules, "karpenter.k8s.aws", "ec2nodeclasses", "list")
    assert not grants(rules, "karpenter.kwok.sh", "kwoknodeclasses", "list")
    crd = one(docs, "CustomResourceDefinition")
    assert crd["metadata"]["name"] == "ec2nodeclasses.karpenter.k8s.aws"


def test_selecting_azure_installs_the_aksnodeclass_crd(helm: Path) -> None:
    docs = render(helm, "cloudProvider.name=azure", "cloudProvider.settings.cluster-name=prod")
    rules = one(docs, "ClusterRole", "karpenter-core")["rules"]
    assert grants(rules, "karpenter.azure.com", "aksnodeclasses/status", "patch")
    crd = one(docs, "CustomResourceDefinition")
    assert crd["metadata"]["name"] == "aksnodeclasses.karpenter.azure.com"
    assert [v["name"] for v in crd["spec"]["versions"]] == ["v1alpha2", "v1beta1"]


def test_selecting_gcp_installs_the_gcenodeclass_crd(helm: Path) -> None:
    docs = render(helm, "cloudProvider.name=gcp", "cloudProvider.settings.cluster-name=prod")
    rules = one(docs, "ClusterRole", "karpenter-core")["rules"]
    assert grants(rules, "karpenter.k8s.gcp", "gcenodeclasses/status", "patch")
    crd = one(docs, "CustomResourceDefinition")
    assert crd["metadata"]["name"] == "gcenodeclasses.karpenter.k8s.gcp"
    assert [v["name"] for v in crd["spec"]["versions"]] == ["v1alpha1"]


def test_the_nodeclass_crd_can_be_left_out_and_providers_without_one_get_none(
    helm: Path,
) -> None:
    for args in (
        ("cloudProvider.installNodeClassCRD=false",),
        ("cloudProvider.name=gcp", "cloudProvider.installNodeClassCRD=false"),
        ("cloudProvider.name=kwok", "cloudProvider.nodeClassCRDs.kwok="),
    ):
        docs = render(helm, *args)
        assert not [d for d in docs if d["kind"] == "CustomResourceDefinition"], args


def test_deployment_defaults_two_replicas_probes_and_resources(
    default_docs: list[dict[str, Any]],
) -> None:
    deployment = one(default_docs, "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert deployment["spec"]["replicas"] == 2
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {"http-metrics": 8080, "http": 8081}
    assert container["resources"]["requests"] == {"cpu": "1", "memory": "1Gi"}
    terms = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert terms["nodeSelectorTerms"][0]["matchExpressions"] == [
        {"key": "karpenter.sh/nodepool", "operator": "DoesNotExist"}
    ]
    anti = pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert anti[0]["labelSelector"]["matchLabels"] == deployment["spec"]["selector"]["matchLabels"]


def test_service_exposes_metrics_and_pdb_allows_one_unavailable(
    default_docs: list[dict[str, Any]],
) -> None:
    service = one(default_docs, "Service")
    assert service["spec"]["ports"] == [
        {"name": "http-metrics", "port": 8080, "targetPort": "http-metrics", "protocol": "TCP"}
    ]
    assert one(default_docs, "PodDisruptionBudget")["spec"]["maxUnavailable"] == 1


def test_settings_values_become_upstream_environment_variables(helm: Path) -> None:
    docs = render(
        helm,
        "settings.batchIdleDuration=5s",
        "settings.batchMaxDuration=30s",
        "settings.featureGates.nodeRepair=true",
        "settings.preferencePolicy=Ignore",
        "logLevel=debug",
        "controller.metrics.port=9090",
        "replicas=3",
    )
    deployment = one(docs, "Deployment")
    env = env_of(deployment)
    assert deployment["spec"]["replicas"] == 3
    assert env["BATCH_IDLE_DURATION"] == "5s"
    assert env["BATCH_MAX_DURATION"] == "30s"
    assert "NodeRepair=true" in env["FEATURE_GATES"]
    assert env["PREFERENCE_POLICY"] == "Ignore"
    assert env["LOG_LEVEL"] == "debug"
    assert env["METRICS_PORT"] == "9090"
    assert env["POD_NAMESPACE"] == {"fieldRef": {"fieldPath": "metadata.namespace"}}


def test_the_operator_accepts_every_value_the_chart_sets(
    default_docs: list[dict[str, Any]],
) -> None:
    env = env_of(one(default_docs, "Deployment"))
    # valueFrom entries resolve at run time; give them what the kubelet would.
    from_kubelet = {"MEMORY_LIMIT": "1073741824", "CPU_REQUESTS": "1000", "POD_NAMESPACE": NS}
    resolved = {k: v if isinstance(v, str) else from_kubelet[k] for k, v in env.items()}
    options = Options.from_env(resolved)
    assert options.batch_idle_duration == 1.0
    assert options.feature_gates == {
        "NodeRepair": False,
        "ReservedCapacity": True,
        "SpotToSpotConsolidation": False,
        "NodeOverlay": False,
        "StaticCapacity": False,
        "CapacityBuffer": False,
    }
    assert options.cpu_requests == 1000
    known = {f.name.upper() for f in attrs.fields(Options)}
    assert set(env) - known == {"POD_NAMESPACE"}


def test_chart_crds_are_the_packaged_crds() -> None:
    packaged = crd_yaml_files()
    shipped = {p.name: p.read_text() for p in (CHART / "crds").glob("*.yaml")}
    assert shipped == packaged


def test_kwok_nodeclass_crd_serves_the_kind_the_provider_declares() -> None:
    kwok = pytest.importorskip("karpenter_kwok.labels")
    crd = yaml.safe_load((CHART / "files" / "karpenter.kwok.sh_kwoknodeclasses.yaml").read_text())
    nc = kwok.KWOK_NODE_CLASS
    assert crd["spec"]["group"] == nc.group
    assert crd["spec"]["names"]["kind"] == nc.kind
    assert [v["name"] for v in crd["spec"]["versions"]] == [nc.version]


HOSTILE = "x\n- --disable-leader-election=true\n\"q\" 'r' $(reboot) `id`; # {a: b}"
# indented as the chart's args are: unquoted, it would become an argument of its own
INJECTED_FLAG = "q\n            - --disable-leader-election=true"


def test_hostile_values_stay_single_strings(helm: Path, tmp_path: Path) -> None:
    """The templates quote what they write even where values.schema.json would have refused
    the value (a string replica count, a log level or pull policy of several lines):
    rendered here without the schema, which test_chart_values.py checks on its own."""
    values = tmp_path / "hostile.yaml"
    values.write_text(
        yaml.safe_dump(
            {
                "cloudProvider": {
                    "name": "aws",
                    "settings": {
                        "cluster-name": HOSTILE,
                        "interruption-queue": INJECTED_FLAG,
                        "reserved-enis": 1,
                    },
                },
                "image": {"repository": "repo\n          command: [sh]", "pullPolicy": HOSTILE},
                "nameOverride": "evil\nkind: Secret",
                "serviceAccount": {"name": 'sa"\n  namespace: kube-system'},
                "replicas": "2\n  paused: true",
                "podDisruptionBudget": {"maxUnavailable": "1\nminAvailable: 0"},
                "logLevel": HOSTILE,
            }
        )
    )
    docs = render(helm, values=values, extra=["--skip-schema-validation"])
    plain = render(helm, "cloudProvider.name=aws")
    assert sorted(d["kind"] for d in docs) == sorted(d["kind"] for d in plain)
    deployment = one(docs, "Deployment")
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["args"] == [
        "serve",
        "--cloud-provider=aws",
        f"--provider-setting=cluster-name={HOSTILE}",
        f"--provider-setting=interruption-queue={INJECTED_FLAG}",
        "--provider-setting=reserved-enis=1",
    ]
    # the operator's own flag parser reads the args as the container runtime passes them
    params = serve_command.make_context("serve", container["args"][1:]).params
    assert params["disable_leader_election"] is None
    settings = parse_provider_settings(params["provider_settings"])
    assert settings == {
        "cluster-name": HOSTILE,
        "interruption-queue": INJECTED_FLAG,
        "reserved-enis": "1",
    }
    assert container["image"] == "repo\n          command: [sh]:0.1.0"
    assert container["imagePullPolicy"] == HOSTILE
    assert "command" not in container
    assert env_of(deployment)["LOG_LEVEL"] == HOSTILE
    assert deployment["spec"]["replicas"] == "2\n  paused: true"
    assert "paused" not in deployment["spec"]
    labels = deployment["spec"]["selector"]["matchLabels"]
    assert labels["app.kubernetes.io/name"] == "evil\nkind: Secret"
    account = one(docs, "ServiceAccount")["metadata"]
    assert (account["name"], account["namespace"]) == ('sa"\n  namespace: kube-system', NS)
    pdb = one(docs, "PodDisruptionBudget")["spec"]
    assert pdb["maxUnavailable"] == "1\nminAvailable: 0" and "minAvailable" not in pdb
