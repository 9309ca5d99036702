"""The chart takes upstream Karpenter's values: the AWS chart's default values file
(fixtures/aws-karpenter-values.yaml, copied from upstream) renders, each value it sets
lands where upstream's chart puts it, upstream keys with no effect here are named in
NOTES.txt, and values.schema.json reports a misspelt key instead of ignoring it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import attrs
import pytest
import yaml
from chartrender import CHART, NS, container_of, env_of, helm_template, one, render

from karpenter_core.operator.serve import provider_settings
from karpenter_core.plugins import cloud_providers, get_plugin_manager, resolve_settings
from karpenter_core.provisioning.scheduler.config import load_scheduler_config
from karpenter_core.runtime.options import Options

pytestmark = pytest.mark.helm

FIXTURES = Path(__file__).parent / "fixtures"
UPSTREAM_FILE = FIXTURES / "aws-karpenter-values.yaml"
UPSTREAM: dict[str, Any] = yaml.safe_load(UPSTREAM_FILE.read_text())
OURS_FILE = CHART / "values.yaml"
SCHEMA: dict[str, Any] = json.loads((CHART / "values.schema.json").read_text())
PROVIDERS = ["kwok", "aws", "azure", "gcp"]

# upstream's settings.<key> -> the variable its chart writes (charts/karpenter deployment)
PROVIDER_SETTING_ENV = {
    "clusterName": "CLUSTER_NAME",
    "clusterEndpoint": "CLUSTER_ENDPOINT",
    "clusterCABundle": "CLUSTER_CA_BUNDLE",
    "interruptionQueue": "INTERRUPTION_QUEUE",
    "isolatedVPC": "ISOLATED_VPC",
    "reservedENIs": "RESERVED_ENIS",
    "vmMemoryOverheadPercent": "VM_MEMORY_OVERHEAD_PERCENT",
}
IGNORED_SETTINGS = [
    "eksControlPlane",
    "enableZonalShift",
    "disableDryRun",
    "amiRefreshInterval",
    "subnetRefreshInterval",
    "awsFeatureGates",
]
# what a kubelet resolves the chart's valueFrom entries to
FROM_KUBELET = {"MEMORY_LIMIT": "1073741824", "CPU_REQUESTS": "1000", "POD_NAMESPACE": NS}


def write(tmp_path: Path, values: dict[str, Any], name: str = "values.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(values))
    return path


def pod_spec(docs: list[dict[str, Any]]) -> dict[str, Any]:
    spec: dict[str, Any] = one(docs, "Deployment")["spec"]["template"]["spec"]
    return spec


def resolved_env(deployment: dict[str, Any]) -> dict[str, str]:
    env = env_of(deployment)
    return {k: v if isinstance(v, str) else FROM_KUBELET[k] for k, v in env.items()}


def gate_name(key: str) -> str:
    return key[0].upper() + key[1:]


@pytest.fixture(scope="module")
def upstream_docs(helm: Path) -> list[dict[str, Any]]:
    return render(helm, values=UPSTREAM_FILE)


# ------------------------------------------------------------------ upstream's defaults


def test_upstreams_image_values_take_effect(upstream_docs: list[dict[str, Any]]) -> None:
    container = container_of(one(upstream_docs, "Deployment"))
    image = UPSTREAM["controller"]["image"]
    assert container["image"] == f"{image['repository']}:{image['tag']}@{image['digest']}"
    assert container["imagePullPolicy"] == UPSTREAM["imagePullPolicy"]


def test_upstreams_settings_become_its_environment_variables(
    upstream_docs: list[dict[str, Any]],
) -> None:
    env = env_of(one(upstream_docs, "Deployment"))
    settings = UPSTREAM["settings"]
    assert env["BATCH_MAX_DURATION"] == settings["batchMaxDuration"]
    assert env["BATCH_IDLE_DURATION"] == settings["batchIdleDuration"]
    assert env["PREFERENCE_POLICY"] == settings["preferencePolicy"]
    assert env["MIN_VALUES_POLICY"] == settings["minValuesPolicy"]
    assert env["IGNORE_DRA_REQUESTS"] == str(settings["ignoreDRARequests"]).lower()
    assert (
        env["DISABLE_CLUSTER_STATE_OBSERVABILITY"]
        == str(settings["disableClusterStateObservability"]).lower()
    )
    gates = dict(part.split("=") for part in env["FEATURE_GATES"].split(","))
    assert gates == {gate_name(k): str(v).lower() for k, v in settings["featureGates"].items()}
    assert env["LOG_LEVEL"] == UPSTREAM["logLevel"]
    assert env["LOG_OUTPUT_PATHS"] == ",".join(UPSTREAM["logOutputPaths"])
    assert env["LOG_ERROR_OUTPUT_PATHS"] == ",".join(UPSTREAM["logErrorOutputPaths"])
    for key, name in PROVIDER_SETTING_ENV.items():
        value = settings[key]
        if value == "":  # unset upstream (clusterName and the others it discovers)
            assert name not in env, key
        else:
            assert env[name] == (str(value).lower() if isinstance(value, bool) else str(value))
    for key in IGNORED_SETTINGS:
        assert not any(key.upper() in name.replace("_", "") for name in env), key


def test_upstreams_pod_values_take_effect(upstream_docs: list[dict[str, Any]]) -> None:
    deployment = one(upstream_docs, "Deployment")
    pod = pod_spec(upstream_docs)
    assert deployment["spec"]["replicas"] == UPSTREAM["replicas"]
    assert deployment["spec"]["revisionHistoryLimit"] == UPSTREAM["revisionHistoryLimit"]
    assert deployment["spec"]["strategy"] == UPSTREAM["strategy"]
    assert pod["securityContext"] == UPSTREAM["podSecurityContext"]
    assert pod["priorityClassName"] == UPSTREAM["priorityClassName"]
    assert pod["dnsPolicy"] == UPSTREAM["dnsPolicy"]
    assert pod["schedulerName"] == UPSTREAM["schedulerName"]
    assert "hostNetwork" not in pod and "initContainers" not in pod  # false and {} upstream
    assert pod["nodeSelector"] == UPSTREAM["nodeSelector"]
    assert pod["tolerations"] == UPSTREAM["tolerations"]
    selector = deployment["spec"]["selector"]
    # upstream's terms and constraints, each given the pods' own selector, as upstream's chart
    [spread] = pod["topologySpreadConstraints"]
    assert spread == {**UPSTREAM["topologySpreadConstraints"][0], "labelSelector": selector}
    assert pod["affinity"]["nodeAffinity"] == UPSTREAM["affinity"]["nodeAffinity"]
    [anti] = pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert anti == {"topologyKey": "kubernetes.io/hostname", "labelSelector": selector}
    pdb = one(upstream_docs, "PodDisruptionBudget")
    assert pdb["metadata"]["name"] == UPSTREAM["podDisruptionBudget"]["name"]
    assert pdb["spec"]["maxUnavailable"] == UPSTREAM["podDisruptionBudget"]["maxUnavailable"]
    assert not [d for d in upstream_docs if d["kind"] == "ServiceMonitor"]


def test_upstreams_empty_container_security_fields_keep_the_charts(
    helm: Path, upstream_docs: list[dict[str, Any]]
) -> None:
    """Upstream's values hold appArmorProfile/seLinuxOptions/seccompProfile as {}: the
    container keeps the chart's hardening."""
    ours = container_of(one(render(helm), "Deployment"))["securityContext"]
    upstream = container_of(one(upstream_docs, "Deployment"))["securityContext"]
    assert upstream == ours
    assert ours["runAsNonRoot"] is True and ours["readOnlyRootFilesystem"] is True
    assert ours["seccompProfile"] == {"type": "RuntimeDefault"}


# ------------------------------------------------------------------ both files, each provider


@pytest.mark.parametrize("values", [OURS_FILE, UPSTREAM_FILE], ids=["ours", "upstream"])
@pytest.mark.parametrize("provider", PROVIDERS)
def test_the_operator_and_the_provider_accept_every_variable_the_chart_sets(
    helm: Path, values: Path, provider: str
) -> None:
    """Every variable is an operator option, the pod's namespace, or a setting the selected
    provider declares; options and provider settings parse."""
    docs = render(
        helm,
        f"cloudProvider.name={provider}",
        "settings.clusterName=prod",
        values=values,
    )
    env = resolved_env(one(docs, "Deployment"))
    assert Options.from_env(env).log_level == "info"
    spec = cloud_providers(get_plugin_manager({}))[provider]
    known = {f.name.upper() for f in attrs.fields(Options)} | {"POD_NAMESPACE"}
    assert set(env) - known <= set(PROVIDER_SETTING_ENV.values())
    read = provider_settings(spec, env, {})
    declared = {s.env: s.name for s in spec.settings if s.env}
    assert set(read) == {declared[name] for name in set(env) & set(declared)}
    if provider == "aws":
        aws = pytest.importorskip("karpenter_aws.settings")
        parsed = aws.AWSSettings.from_mapping(resolve_settings(spec, read))
        assert parsed.cluster_name == "prod"
        if values == UPSTREAM_FILE:
            assert parsed.reserved_enis == int(UPSTREAM["settings"]["reservedENIs"])
            assert (
                parsed.vm_memory_overhead_percent
                == (UPSTREAM["settings"]["vmMemoryOverheadPercent"])
            )


def test_each_upstream_provider_setting_is_written_to_its_variable(helm: Path) -> None:
    given = {
        "clusterName": "prod",
        "clusterEndpoint": "https://api.example",
        "clusterCABundle": "Q0E=",
        "interruptionQueue": "prod-q",
        "isolatedVPC": "true",
        "reservedENIs": "2",
        "vmMemoryOverheadPercent": "0.1",
    }
    assert set(given) == set(PROVIDER_SETTING_ENV)
    sets = [f"settings.{key}={value}" for key, value in given.items()]
    env = env_of(one(render(helm, "cloudProvider.name=aws", *sets), "Deployment"))
    assert {name: env[name] for name in PROVIDER_SETTING_ENV.values()} == {
        PROVIDER_SETTING_ENV[key]: value for key, value in given.items()
    }


def test_provider_settings_are_expanded_with_tpl_as_upstream(helm: Path, tmp_path: Path) -> None:
    values = write(tmp_path, {"settings": {"clusterName": "{{ .Release.Name }}-cluster"}})
    docs = render(helm, "cloudProvider.name=aws", values=values, release="prod")
    assert env_of(one(docs, "Deployment"))["CLUSTER_NAME"] == "prod-cluster"


# ------------------------------------------------------------------ every upstream key set


def test_every_upstream_pod_and_container_value_lands(helm: Path, tmp_path: Path) -> None:
    values = {
        "controller": {
            "containerName": "karpenter-controller",
            "image": {"repository": "registry.example/kc", "tag": "1.2.3", "digest": ""},
            "env": [{"name": "AWS_REGION", "value": "eu-west-1"}],
            "envFrom": [{"configMapRef": {"name": "extra"}}],
            "securityContext": {
                "appArmorProfile": {"type": "RuntimeDefault"},
                "seLinuxOptions": {"level": "s0:c123,c456"},
                "seccompProfile": {"type": "Localhost", "localhostProfile": "k.json"},
            },
            "resources": {
                "requests": {"cpu": "2", "memory": "2Gi"},
                "limits": {"cpu": "2", "memory": "3Gi"},
            },
            "extraVolumeMounts": [{"name": "token", "mountPath": "/var/run/token"}],
            "sidecarContainer": [{"name": "proxy", "image": "proxy:1"}],
            "sidecarVolumeMounts": [{"name": "cache", "mountPath": "/cache"}],
            "metrics": {"port": 9000},
            "healthProbe": {"port": 9001},
        },
        "imagePullPolicy": "Always",
        "imagePullSecrets": [{"name": "pull"}],
        "additionalLabels": {"team": "infra"},
        "additionalAnnotations": {"owner": "infra"},
        "podLabels": {"tier": "control"},
        "podAnnotations": {"scrape": "yes"},
        "podSecurityContext": {"fsGroup": 1000, "runAsNonRoot": True},
        "priorityClassName": "high",
        "terminationGracePeriodSeconds": 90,
        "hostNetwork": True,
        "dnsPolicy": "ClusterFirstWithHostNet",
        "dnsConfig": {"options": [{"name": "ndots", "value": "1"}]},
        "schedulerName": "other-scheduler",
        "initContainers": [{"name": "wait", "image": "busybox"}],
        "extraVolumes": [{"name": "token", "emptyDir": {}}, {"name": "cache", "emptyDir": {}}],
        "tolerations": [{"key": "dedicated", "operator": "Exists"}],
        "topologySpreadConstraints": [
            {"maxSkew": 2, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "X"}
        ],
        "affinity": {
            "podAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 1, "podAffinityTerm": {"topologyKey": "zone"}}
                ]
            }
        },
        "podDisruptionBudget": {"name": "karpenter", "maxUnavailable": "50%"},
        "serviceAccount": {"create": True, "name": "kc", "annotations": {"iam": "role"}},
        "logLevel": "debug",
        "logOutputPaths": ["stdout", "/var/log/k.log"],
    }
    docs = render(helm, values=[UPSTREAM_FILE, write(tmp_path, values)])
    deployment = one(docs, "Deployment")
    pod = pod_spec(docs)
    container = container_of(deployment)
    selector = deployment["spec"]["selector"]
    assert container["name"] == "karpenter-controller"
    refs = [e["valueFrom"] for e in container["env"] if "valueFrom" in e]
    assert [r["resourceFieldRef"]["containerName"] for r in refs if "resourceFieldRef" in r] == [
        "karpenter-controller"
    ] * 2
    assert container["image"] == "registry.example/kc:1.2.3"
    assert container["imagePullPolicy"] == "Always"
    assert pod["imagePullSecrets"] == [{"name": "pull"}]
    env = env_of(deployment)
    assert env["AWS_REGION"] == "eu-west-1"
    assert env["LOG_LEVEL"] == "debug"
    assert env["LOG_OUTPUT_PATHS"] == "stdout,/var/log/k.log"
    assert (env["METRICS_PORT"], env["HEALTH_PROBE_PORT"]) == ("9000", "9001")
    assert {p["containerPort"] for p in container["ports"]} == {9000, 9001}
    assert container["envFrom"] == values["controller"]["envFrom"]  # type: ignore[index]
    security = container["securityContext"]
    for key, value in values["controller"]["securityContext"].items():  # type: ignore[index]
        assert security[key] == value, key
    assert security["runAsNonRoot"] is True  # the chart's other fields stay
    assert container["resources"] == values["controller"]["resources"]  # type: ignore[index]
    assert container["volumeMounts"] == values["controller"]["extraVolumeMounts"]  # type: ignore[index]
    [_, sidecar] = pod["containers"]
    assert sidecar["name"] == "proxy"
    assert [m["name"] for m in sidecar["volumeMounts"]] == ["token", "cache"]
    assert pod["volumes"] == values["extraVolumes"]
    assert pod["initContainers"] == values["initContainers"]
    for key in ("priorityClassName", "terminationGracePeriodSeconds", "hostNetwork"):
        assert pod[key] == values[key], key
    for key in ("dnsPolicy", "dnsConfig", "schedulerName", "tolerations"):
        assert pod[key] == values[key], key
    for key, value in values["podSecurityContext"].items():  # type: ignore[attr-defined]
        assert pod["securityContext"][key] == value, key
    [spread] = pod["topologySpreadConstraints"]
    assert spread["maxSkew"] == 2 and spread["labelSelector"] == selector
    [term] = pod["affinity"]["podAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
    assert term["podAffinityTerm"] == {"topologyKey": "zone", "labelSelector": selector}
    assert pod["serviceAccountName"] == "kc"
    account = one(docs, "ServiceAccount")
    assert account["metadata"]["annotations"] == {"iam": "role", "owner": "infra"}
    template = deployment["spec"]["template"]["metadata"]
    assert template["labels"]["tier"] == "control"
    assert template["annotations"] == {"scrape": "yes"}
    pdb = one(docs, "PodDisruptionBudget", "karpenter")
    assert pdb["spec"]["maxUnavailable"] == "50%"
    for doc in (deployment, pdb, one(docs, "Service")):
        assert doc["metadata"]["labels"]["team"] == "infra", doc["kind"]
        assert doc["metadata"]["annotations"]["owner"] == "infra", doc["kind"]


def test_scheduler_config_is_passed_inline_as_upstream(helm: Path, tmp_path: Path) -> None:
    document = (
        "podTopologySpread:\n  defaultConstraints:\n    - maxSkew: 1\n"
        "      topologyKey: topology.kubernetes.io/zone\n      whenUnsatisfiable: ScheduleAnyway\n"
    )
    expected = yaml.safe_load(document)
    as_text = write(tmp_path, {"settings": {"schedulerConfig": document}}, "text.yaml")
    as_map = write(tmp_path, {"settings": {"schedulerConfig": expected}}, "map.yaml")
    for values in (as_text, as_map):
        env = resolved_env(one(render(helm, values=values), "Deployment"))
        assert load_scheduler_config(env["SCHEDULER_CONFIG"]) == expected
        assert Options.from_env(env).scheduler_config == env["SCHEDULER_CONFIG"]
    at_file = render(helm, "settings.schedulerConfig=@/etc/karpenter/scheduler.yaml")
    assert env_of(one(at_file, "Deployment"))["SCHEDULER_CONFIG"] == (
        "@/etc/karpenter/scheduler.yaml"
    )
    assert "SCHEDULER_CONFIG" not in env_of(one(render(helm), "Deployment"))


def test_service_monitor_as_upstreams(helm: Path, tmp_path: Path) -> None:
    monitor = {
        "enabled": True,
        "additionalLabels": {"release": "prom"},
        "relabelings": [{"action": "labeldrop", "regex": "pod"}],
        "metricRelabelings": [{"action": "drop", "regex": "go_.*"}],
        "endpointConfig": {"interval": "15s"},
        "sampleLimit": 5000,
    }
    values = write(tmp_path, {"serviceMonitor": monitor})
    api = ["--api-versions", "monitoring.coreos.com/v1"]
    docs = render(helm, values=values, extra=api)
    sm = one(docs, "ServiceMonitor")
    service = one(docs, "Service")
    assert sm["metadata"]["labels"]["release"] == "prom"
    assert sm["spec"]["selector"]["matchLabels"] == service["spec"]["selector"]
    assert sm["spec"]["namespaceSelector"] == {"matchNames": [NS]}
    assert sm["spec"]["sampleLimit"] == 5000
    assert sm["spec"]["endpoints"] == [
        {
            "port": service["spec"]["ports"][0]["name"],
            "path": "/metrics",
            "interval": "15s",
            "relabelings": monitor["relabelings"],
            "metricRelabelings": monitor["metricRelabelings"],
        }
    ]
    # upstream's default (disabled), and a cluster without the Prometheus operator's API
    assert not [d for d in render(helm, extra=api) if d["kind"] == "ServiceMonitor"]
    assert not [d for d in render(helm, values=values) if d["kind"] == "ServiceMonitor"]


# ------------------------------------------------------------------ this chart's aliases


def test_this_charts_image_values_replace_upstreams_as_a_group(helm: Path) -> None:
    """image.* set over an upstream file: the upstream digest is not combined with it."""
    docs = render(
        helm,
        "image.repository=registry.example/kc",
        "image.tag=0.2.0",
        "image.pullPolicy=Always",
        values=UPSTREAM_FILE,
    )
    container = container_of(one(docs, "Deployment"))
    assert container["image"] == "registry.example/kc:0.2.0"
    assert container["imagePullPolicy"] == "Always"
    tag_only = container_of(one(render(helm, "image.tag=0.2.0"), "Deployment"))
    assert tag_only["image"] == "ghcr.io/karpenter-core/karpenter-core:0.2.0"
    digest = container_of(one(render(helm, "controller.image.digest=sha256:ab"), "Deployment"))
    assert digest["image"] == "ghcr.io/karpenter-core/karpenter-core@sha256:ab"


def test_an_empty_repository_is_this_charts_image(helm: Path) -> None:
    """Upstream's KWOK chart leaves controller.image.repository empty."""
    ours = yaml.safe_load(OURS_FILE.read_text())["controller"]["image"]["repository"]
    docs = render(helm, "controller.image.repository=")
    assert container_of(one(docs, "Deployment"))["image"] == f"{ours}:0.1.0"


def test_min_available_replaces_max_unavailable(helm: Path) -> None:
    pdb = one(render(helm, "podDisruptionBudget.minAvailable=1"), "PodDisruptionBudget")
    assert pdb["spec"]["minAvailable"] == 1 and "maxUnavailable" not in pdb["spec"]


def test_upstream_v1_0_keys_are_accepted(helm: Path, tmp_path: Path) -> None:
    """Keys only older v1 charts had: the webhook, the post-install hook, v1.8.0's
    StaticCapacity spelling (taken as the gate)."""
    values = {
        "webhook": {"enabled": False, "port": 8443, "metrics": {"port": 8001}},
        "postInstallHook": {"image": {"repository": "kubectl", "tag": "1.30", "digest": ""}},
        "settings": {"featureGates": {"staticCapacity": None, "StaticCapacity": True}},
    }
    docs = render(helm, values=write(tmp_path, values))
    assert "StaticCapacity=true" in env_of(one(docs, "Deployment"))["FEATURE_GATES"]


# ------------------------------------------------------------------ the schema


def helm_fails(helm: Path, *sets: str, values: list[Path] | None = None) -> str:
    proc = helm_template(helm, *sets, values=values or [])
    assert proc.returncode != 0, "rendered, but should not have"
    return proc.stderr


@pytest.mark.parametrize(
    ("item", "message"),
    [
        ("imagePullPolicyy=Always", "(root): Additional property imagePullPolicyy is not allowed"),
        ("settings.clusterNmae=prod", "settings: Additional property clusterNmae is not allowed"),
        ("controller.imag.tag=1", "controller: Additional property imag is not allowed"),
        (
            "settings.featureGates.nodeRepiar=true",
            "settings.featureGates: Additional property nodeRepiar is not allowed",
        ),
        ("serviceMonitor.enable=true", "serviceMonitor: Additional property enable is not allowed"),
        ("cloudProvider.nme=aws", "cloudProvider: Additional property nme is not allowed"),
        ("replicas=two", "replicas: Invalid type. Expected: integer, given: string"),
        (
            "settings.preferencePolicy=respect",
            "settings.preferencePolicy: settings.preferencePolicy must be one of",
        ),
    ],
)
def test_a_misspelt_or_mistyped_value_is_reported(helm: Path, item: str, message: str) -> None:
    stderr = helm_fails(helm, item)
    assert "values don't meet the specifications of the schema" in stderr
    assert message in stderr


def test_helm_lint_reports_a_misspelt_key(helm: Path) -> None:
    import subprocess

    proc = subprocess.run(
        [str(helm), "lint", str(CHART), "--set", "logLevell=debug"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode != 0
    assert "Additional property logLevell is not allowed" in proc.stdout + proc.stderr


def test_the_schema_refuses_what_the_hostile_values_test_renders_without_it(
    helm: Path, tmp_path: Path
) -> None:
    values = write(tmp_path, {"replicas": "2\n  paused: true", "logLevel": "x\ny"})
    stderr = helm_fails(helm, values=[values])
    assert "replicas: Invalid type" in stderr and "logLevel: logLevel must be one of" in stderr


def test_the_schema_accepts_every_key_of_the_upstream_file_and_ours() -> None:
    """Checked on the files themselves too (not only through a render), key by key."""

    def walk(values: dict[str, Any], schema: dict[str, Any], path: str) -> None:
        props = schema.get("properties", {})
        for key, value in values.items():
            if key in props:
                sub = props[key]
                sub = SCHEMA["definitions"][sub["$ref"].split("/")[-1]] if "$ref" in sub else sub
                if isinstance(value, dict) and "properties" in sub:
                    walk(value, sub, f"{path}{key}.")
            else:
                assert schema.get("additionalProperties", True) is not False, f"{path}{key}"

    for values in (UPSTREAM, yaml.safe_load(OURS_FILE.read_text())):
        walk(values, SCHEMA, "")
    assert SCHEMA["$schema"] == "http://json-schema.org/draft-07/schema#"
    assert SCHEMA["additionalProperties"] is False


# ------------------------------------------------------------------ NOTES.txt


@pytest.fixture(scope="module")
def notes_chart(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the chart that also renders NOTES.txt into a ConfigMap (``helm template``
    does not print the notes, and ``helm install --dry-run`` needs a cluster)."""
    chart = tmp_path_factory.mktemp("chart") / "karpenter-core"
    shutil.copytree(CHART, chart)
    (chart / "files" / "notes-probe.txt").write_text((CHART / "templates/NOTES.txt").read_text())
    (chart / "templates" / "notes-probe.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: notes-probe\ndata:\n"
        '  notes: {{ tpl (.Files.Get "files/notes-probe.txt") . | toJson }}\n'
    )
    return chart


def notes(helm: Path, chart: Path, *sets: str, values: Path | None = None) -> list[str]:
    """The warning lines of NOTES.txt ("- key: why")."""
    docs = render(helm, *sets, chart=chart, values=[values] if values else [])
    text: str = one(docs, "ConfigMap", "notes-probe")["data"]["notes"]
    return [line for line in text.splitlines() if line.startswith("- ")]


def test_our_defaults_need_no_warning(helm: Path, notes_chart: Path) -> None:
    assert notes(helm, notes_chart) == []


def test_upstreams_defaults_warn_of_the_image_and_what_differs(
    helm: Path, notes_chart: Path
) -> None:
    lines = notes(helm, notes_chart, "cloudProvider.name=aws", values=UPSTREAM_FILE)
    assert [line.split(":")[0] for line in lines] == [
        "- settings.amiRefreshInterval=1m",
        "- controller.image",
    ]
    assert "upstream's Go controller" in lines[1]


@pytest.mark.parametrize(
    "item",
    [
        "settings.eksControlPlane=true",
        "settings.enableZonalShift=true",
        "settings.disableDryRun=true",
        "settings.amiRefreshInterval=10m",
        "settings.subnetRefreshInterval=5m",
        "settings.awsFeatureGates.nodeClassCEL=true",
        "webhook.enabled=true",
        "logErrorOutputPaths={stdout}",
    ],
)
def test_each_ignored_value_that_matters_is_named(helm: Path, notes_chart: Path, item: str) -> None:
    key = item.split("=")[0]
    [line] = notes(helm, notes_chart, "cloudProvider.name=aws", item)
    assert line.startswith(f"- {key}=") and "ignored" in line


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_provider_setting_the_selected_provider_does_not_read_is_named(
    helm: Path, notes_chart: Path, provider: str
) -> None:
    """The chart's table of who reads what agrees with the providers' declarations."""
    spec = cloud_providers(get_plugin_manager({}))[provider]
    declared = {s.env for s in spec.settings if s.env}
    sets = [f"settings.{key}=v" for key in PROVIDER_SETTING_ENV if key != "isolatedVPC"]
    lines = notes(helm, notes_chart, f"cloudProvider.name={provider}", *sets)
    named = {line.split(":")[0].removeprefix("- settings.") for line in lines}
    expected = {
        key
        for key, env in PROVIDER_SETTING_ENV.items()
        if key != "isolatedVPC" and env not in declared
    }
    assert named == expected


def test_docs_and_schema_name_every_ignored_key() -> None:
    docs = (Path(__file__).resolve().parents[2] / "docs" / "serve.md").read_text()
    settings = SCHEMA["properties"]["settings"]["properties"]
    ignored = [k for k, v in settings.items() if "no effect" in v.get("description", "")]
    assert sorted(ignored) == sorted(IGNORED_SETTINGS)
    for key in [f"settings.{k}" for k in ignored] + ["webhook", "postInstallHook"]:
        assert f"`{key}" in docs, key
