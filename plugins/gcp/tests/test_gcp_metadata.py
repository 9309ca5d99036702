"""Rewriting a GKE node pool template's metadata for a Karpenter node (kube-env entries,
KUBELET_ARGS flags, kube-labels, kubelet-config), with upstream-shaped template fixtures."""

from __future__ import annotations

import yaml
from karpenter_gcp.metadata import (
    KUBE_ENV_KEY,
    KUBE_LABELS_KEY,
    KUBELET_CONFIG_KEY,
    UNREGISTERED_TAINT,
    NodeMetadataInput,
    Taint,
    format_labels,
    inherited_readiness_labels,
    metadata_items,
    node_metadata,
    parse_kube_env,
    parse_kubelet_args,
    parse_labels,
)

CA = "-----BEGIN CERTIFICATE-----\n  MIIB\n  -----END CERTIFICATE-----"

# The shape of a GKE node pool template's metadata (values shortened).
SOURCE = {
    "cluster-name": "test-cluster",
    "cluster-location": "us-central1",
    "configure-sh": "#!/bin/bash\necho configure",
    "user-data": "#cloud-config\n",
    "gci-update-strategy": "update_disabled",
    "enable-oslogin": "false",
    "goog-k8s-node-pool-name": "default-pool",
    "kube-labels": (
        "cloud.google.com/gke-nodepool=default-pool,cloud.google.com/gke-netd-ready=true,"
        "iam.gke.io/gke-metadata-server-enabled=true"
    ),
    "kube-env": "\n".join(
        [
            "CLUSTER_NAME: test-cluster",
            "ZONE: us-central1-f",
            f"CA_CERT: {CA}",
            "SECONDARY_BOOT_DISKS: /mnt/disks/gke-secondary-disks/x",
            'ENABLE_NODE_BFQ_IO_SCHEDULER: "true"',
            "KUBELET_ARGS: --v=2 --cloud-provider=external --max-pods=110 "
            "--node-labels=cloud.google.com/gke-nodepool=default-pool,"
            "node.kubernetes.io/masq-agent-ds-ready=true "
            "--register-with-taints=pool=x:NoSchedule",
        ]
    ),
    "kubelet-config": "kind: KubeletConfiguration\nkubeReserved:\n  pid: '1000'\nmaxPods: 110\n",
}


def spec(**kw: object) -> NodeMetadataInput:
    base: dict[str, object] = {
        "zone": "us-central1-a",
        "capacity_type": "on-demand",
        "nodepool": "default",
        "nodeclass": "gce",
        "max_pods": 64,
        "machine_family": "e2",
        "kube_reserved": {"cpu": "80m", "memory": "1024Mi"},
    }
    base.update(kw)
    return NodeMetadataInput(**base)  # type: ignore[arg-type]


def test_parse_kube_env_keeps_multiline_values() -> None:
    env = parse_kube_env(SOURCE["kube-env"])
    assert env["CA_CERT"] == CA
    assert env["ZONE"] == "us-central1-f"
    assert env["KUBELET_ARGS"].startswith("--v=2")


def test_kubelet_args_drop_the_flags_karpenter_owns() -> None:
    args = parse_kubelet_args(
        "--v=2 --max-pods=110 --node-labels=a=b --register-with-taints=x:NoSchedule --foo"
    )
    assert args.other == ("--v=2", "--foo")
    assert str(args) == "--v=2 --foo"


def test_labels_round_trip_sorted() -> None:
    assert format_labels({"b": "2", "a": "1"}) == "a=1,b=2"
    assert parse_labels("a=1, b=2,broken") == {"a": "1", "b": "2"}


def test_taints_render_as_register_with_taints() -> None:
    assert str(UNREGISTERED_TAINT) == "karpenter.sh/unregistered=true:NoExecute"
    assert str(Taint("dedicated", "", "NoSchedule")) == "dedicated:NoSchedule"


def test_readiness_labels_are_inherited_from_both_places() -> None:
    kube, node = inherited_readiness_labels(SOURCE)
    assert kube == {
        "cloud.google.com/gke-netd-ready": "true",
        "iam.gke.io/gke-metadata-server-enabled": "true",
    }
    assert node == {"node.kubernetes.io/masq-agent-ds-ready": "true"}


def test_only_retained_template_keys_survive() -> None:
    out = node_metadata(SOURCE, spec(custom_metadata={"team": "a", "cluster-name": "override"}))
    assert "goog-k8s-node-pool-name" not in out
    assert "enable-oslogin" not in out  # not a retained key
    assert out["configure-sh"] == SOURCE["configure-sh"]
    assert out["team"] == "a"
    assert out["cluster-name"] == "override"  # the GCENodeClass's metadata wins
    assert list(out) == sorted(out)


def test_kube_env_is_rewritten_for_the_node() -> None:
    out = node_metadata(
        SOURCE, spec(labels={"team": "a"}, taints=[Taint("dedicated", "gpu", "NoSchedule")])
    )
    env = parse_kube_env(out[KUBE_ENV_KEY])
    assert env["ZONE"] == "us-central1-a"
    assert env["CA_CERT"] == CA
    assert "SECONDARY_BOOT_DISKS" not in env
    assert env["ENABLE_NODE_BFQ_IO_SCHEDULER"] == '"true"'
    assert env["NODE_BFQ_IO_SCHEDULER_IO_WEIGHT"] == '"1200"'
    assert out[KUBE_ENV_KEY].splitlines()[-1].startswith("KUBELET_ARGS: ")
    flags = env["KUBELET_ARGS"].split()
    assert flags[:2] == ["--v=2", "--cloud-provider=external"]
    assert "--max-pods=64" in flags
    (node_labels,) = [f for f in flags if f.startswith("--node-labels=")]
    registration = parse_labels(node_labels.removeprefix("--node-labels="))
    assert registration == {
        "max-pods-per-node": "64",
        "cloud.google.com/gke-os-distribution": "cos",
        "karpenter.sh/nodepool": "default",
        "karpenter.k8s.gcp/gcenodeclass": "gce",
        "max-pods": "64",
        "gke-provisioning": "standard",
        "cloud.google.com/machine-family": "e2",
        "team": "a",
        "node.kubernetes.io/masq-agent-ds-ready": "true",
    }
    (taints,) = [f for f in flags if f.startswith("--register-with-taints=")]
    assert taints == (
        "--register-with-taints=karpenter.sh/unregistered=true:NoExecute,dedicated=gpu:NoSchedule"
    )


def test_kube_labels_add_registered_and_template_readiness() -> None:
    out = node_metadata(SOURCE, spec(capacity_type="spot"))
    labels = parse_labels(out[KUBE_LABELS_KEY])
    assert labels["karpenter.sh/registered"] == "true"
    assert labels["gke-provisioning"] == "spot"
    assert labels["cloud.google.com/gke-netd-ready"] == "true"
    assert "cloud.google.com/gke-nodepool" not in labels  # the template's pool identity


def test_ubuntu_drops_the_cos_io_scheduler_entries() -> None:
    out = node_metadata(SOURCE, spec(image_family="Ubuntu"))
    env = parse_kube_env(out[KUBE_ENV_KEY])
    assert "ENABLE_NODE_BFQ_IO_SCHEDULER" not in env
    assert parse_labels(out[KUBE_LABELS_KEY])["cloud.google.com/gke-os-distribution"] == "ubuntu"


def test_kubelet_config_merges_reserved_nodeclass_and_spot_shutdown() -> None:
    out = node_metadata(
        SOURCE,
        spec(
            capacity_type="spot",
            kubelet={"evictionHard": {"memory.available": "200Mi"}, "podsPerCore": 4},
        ),
    )
    config = yaml.safe_load(out[KUBELET_CONFIG_KEY])
    assert config["kubeReserved"] == {"pid": "1000", "cpu": "80m", "memory": "1024Mi"}
    assert config["evictionHard"] == {"memory.available": "200Mi"}
    assert config["podsPerCore"] == 4
    assert config["featureGates"]["GracefulNodeShutdown"] is True
    assert config["shutdownGracePeriod"] == "30s"
    assert config["shutdownGracePeriodCriticalPods"] == "15s"
    on_demand = yaml.safe_load(node_metadata(SOURCE, spec())[KUBELET_CONFIG_KEY])
    assert "shutdownGracePeriod" not in on_demand


def test_template_without_kubelet_config_and_nothing_to_add_has_none() -> None:
    source = {k: v for k, v in SOURCE.items() if k != KUBELET_CONFIG_KEY}
    assert KUBELET_CONFIG_KEY not in node_metadata(source, spec(kube_reserved={}))


def test_metadata_items_shape() -> None:
    assert metadata_items({"b": "2", "a": "1"}) == [
        {"key": "a", "value": "1"},
        {"key": "b", "value": "2"},
    ]
