"""AKSNodeClass validation and defaults: upstream's CEL/Validation suite
(``pkg/apis/v1beta1/crd_validation_cel_test.go``) run against the model, which must accept
and reject what the API server does with upstream's CRD."""

from __future__ import annotations

from typing import Any

import pytest
from karpenter_azure.nodeclass import (
    AKSNodeClass,
    NodeClassError,
    apply_defaults,
    validate_spec,
)

NOT_CHECKED = (
    "<nil>: Invalid value: null: some validation rules were not checked because the object was "
    "invalid; correct the existing errors to complete validation"
)
"""What the API server adds when a blocking error (wrong type, missing required field,
unsupported value, too long or too many) kept it from running the CEL rules."""

SUB = "/subscriptions/12345678-1234-1234-1234-123456789012"


def subnet(rg: str = "rgname", vnet: str = "vnet", name: str = "subnet") -> str:
    return f"{SUB}/resourceGroups/{rg}/providers/Microsoft.Network/virtualNetworks/{vnet}/subnets/{name}"


def zone(name: str, to_vnet: bool, **overrides: Any) -> dict[str, Any]:
    """upstream's ``createCompleteLocalDNSZoneOverride``."""
    item: dict[str, Any] = {
        "zone": name,
        "queryLogging": "Error",
        "protocol": "PreferUDP",
        "forwardDestination": "VnetDNS" if to_vnet else "ClusterCoreDNS",
        "forwardPolicy": "Sequential",
        "maxConcurrent": 100,
        "cacheDuration": "1h0m0s",
        "serveStaleDuration": "30m0s",
        "serveStale": "Verify",
    }
    item.update(overrides)
    return item


def local_dns(
    mode: str = "Required", vnet: list[Any] | None = None, kube: list[Any] | None = None
) -> dict[str, Any]:
    return {
        "mode": mode,
        "vnetDNSOverrides": vnet
        if vnet is not None
        else [zone(".", True), zone("cluster.local", False)],
        "kubeDNSOverrides": kube
        if kube is not None
        else [zone(".", False), zone("cluster.local", False)],
    }


def ok(spec: dict[str, Any]) -> bool:
    return not validate_spec(spec)


@pytest.mark.parametrize(
    ("subnet_id", "expected"),
    [
        (subnet(), True),
        (subnet("rgName", "vnetName", "subnetName"), True),
        (subnet(name="anotherSubnet"), True),
        (subnet(name="SUBNET"), True),
        (subnet("MyResourceGroup", "MyVirtualNetwork", "MySubnet"), True),
        (f"{SUB}/rgname/providers/Microsoft.Network/virtualNetworks/vnet/subnets/subnet", False),
        (
            f"{SUB}/resourceGroups/rgname/providers/Microsoft.Storage/virtualNetworks/vnet/subnets/subnet",
            False,
        ),
        (f"{SUB}/resourceGroups/rgname/providers/Microsoft.Network/subnets/subnet", False),
        (subnet("a" * 63, "b" * 63, "c" * 63), True),
        (subnet("my-resource_group"), True),
        (subnet(".starting.with.dot"), True),
        (subnet("ends-with-hyphen-"), True),
        (subnet("contains.(parentheses)"), True),
        (subnet("valid.name-with-multiple.characters"), True),
        (subnet("ends.with.dot."), False),
        (subnet("invalid#character"), False),
        (subnet("name@with*unsupported&chars"), False),
    ],
)
def test_vnet_subnet_id(subnet_id: str, expected: bool) -> None:
    """upstream: Context("VnetSubnetID") "Should only accept valid VnetSubnetID"."""
    assert ok({"vnetSubnetID": subnet_id}) is expected


def test_invalid_image_family_and_fips_mode_are_rejected_with_their_paths() -> None:
    """upstream: "should reject invalid ImageFamily" / "should reject invalid FIPSMode"."""
    assert validate_spec({"imageFamily": "ubuntu"})[0] == (
        'spec.imageFamily: Unsupported value: "ubuntu": supported values: "Ubuntu", '
        '"Ubuntu2204", "Ubuntu2404", "AzureLinux"'
    )
    assert validate_spec({"fipsMode": "fips"})[0] == (
        'spec.fipsMode: Unsupported value: "fips": supported values: "FIPS", "Disabled"'
    )


@pytest.mark.parametrize("enabled", [None, True, False])
def test_artifact_streaming(enabled: bool | None) -> None:
    """upstream: Context("ArtifactStreaming")."""
    spec = {} if enabled is None else {"artifactStreaming": {"enabled": enabled}}
    assert ok(spec)
    assert AKSNodeClass.from_dict({"spec": spec}).artifact_streaming is bool(enabled)


@pytest.mark.parametrize(
    ("size", "expected"),
    [
        (30, True),
        (128, True),
        (1024, True),
        (2048, True),
        (None, True),
        (29, False),
        (2049, False),
        (4096, False),
    ],
)
def test_os_disk_size(size: int | None, expected: bool) -> None:
    """upstream: Context("OSDiskSizeGB") "Should validate OSDiskSizeGB constraints"."""
    assert ok({} if size is None else {"osDiskSizeGB": size}) is expected


@pytest.mark.parametrize(
    ("family", "fips", "trusted_launch", "expected"),
    [
        ("Ubuntu", "Disabled", False, True),
        ("Ubuntu", None, False, True),
        ("Ubuntu", "FIPS", False, True),
        ("Ubuntu", None, True, True),
        ("Ubuntu", "FIPS", True, True),
        ("Ubuntu2204", "Disabled", False, True),
        ("Ubuntu2204", None, False, True),
        ("Ubuntu2204", None, True, True),
        ("Ubuntu2204", "FIPS", True, True),
        ("Ubuntu2204", "FIPS", False, False),
        ("Ubuntu2404", "Disabled", False, True),
        ("Ubuntu2404", None, False, True),
        ("Ubuntu2404", None, True, True),
        ("Ubuntu2404", "FIPS", True, False),
        ("Ubuntu2404", "FIPS", False, False),
        ("AzureLinux", "Disabled", False, True),
        ("AzureLinux", None, False, True),
        ("AzureLinux", "FIPS", False, True),
        ("AzureLinux", None, True, True),
        ("AzureLinux", "FIPS", True, False),
        ("", "Disabled", False, True),
        ("", None, False, True),
        ("", "FIPS", False, True),
        ("", None, True, True),
        ("", "FIPS", True, True),
    ],
)
def test_image_family_fips_and_trusted_launch(
    family: str, fips: str | None, trusted_launch: bool, expected: bool
) -> None:
    """upstream: Context("ImageFamily, FIPSMode, and TrustedLaunch") "should only accept
    valid ImageFamily, FIPSMode, and TrustedLaunch combinations" (an unset family is
    defaulted to Ubuntu before the rules run)."""
    spec: dict[str, Any] = {}
    if family:
        spec["imageFamily"] = family
    if fips:
        spec["fipsMode"] = fips
    if trusted_launch:
        spec["security"] = {"trustedLaunch": {"vtpm": True}}
    assert ok(spec) is expected


@pytest.mark.parametrize(
    ("mode", "expected"), [(None, True), ("Driver", True), ("None", True), ("Invalid", False)]
)
def test_gpu_mode(mode: str | None, expected: bool) -> None:
    """upstream: Context("GPU")."""
    spec: dict[str, Any] = {"gpu": {} if mode is None else {"mode": mode}}
    assert ok(spec) is expected
    if expected:
        assert AKSNodeClass.from_dict({"spec": spec}).gpu_mode == (mode or "Driver")


def test_local_dns_complete_configuration_is_accepted_and_omitting_it_too() -> None:
    """upstream: "should accept complete LocalDNS configuration with all required fields",
    "should accept when LocalDNS is completely omitted"."""
    assert ok({"localDNS": local_dns()})
    assert ok({})


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        ("Preferred", True),
        ("Required", True),
        ("Disabled", True),
        ("invalid-string", False),
        ("", False),
    ],
)
def test_local_dns_mode(mode: str, expected: bool) -> None:
    """upstream: "should validate LocalDNSMode" (errors name spec.localDNS.mode)."""
    errors = validate_spec({"localDNS": local_dns(mode)})
    assert (not errors) is expected
    if not expected:
        assert errors[0].startswith("spec.localDNS.mode:")


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [
        ("queryLogging", "Log", True),
        ("queryLogging", "Verbose", False),
        ("protocol", "ForceTCP", False),  # with serveStale Verify
        ("protocol", "Invalid", False),
        ("forwardPolicy", "RoundRobin", True),
        ("forwardPolicy", "Random", True),
        ("forwardPolicy", "Bad", False),
        ("serveStale", "Immediate", True),
        ("serveStale", "Bad", False),
        ("maxConcurrent", -1, False),
        ("cacheDuration", "1h30m", True),
        ("cacheDuration", "1d", False),
        ("serveStaleDuration", "10x", False),
        ("zone", "", False),
        ("zone", "a" * 64 + ".com", False),
        ("zone", "-bad.com", False),
    ],
)
def test_local_dns_zone_override_fields(field: str, value: Any, expected: bool) -> None:
    """upstream: "should validate LocalDNSQueryLogging", "...Protocol",
    "...ForwardPolicy", "...ServeStale", "...MaxConcurrent", "...CacheDuration",
    "...Zone" tables (an extra external zone forwarded to VnetDNS)."""
    extra = zone("test.domain", True, **{field: value})
    spec = {"localDNS": local_dns(vnet=[zone(".", True), zone("cluster.local", False), extra])}
    assert ok(spec) is expected


def test_local_dns_zone_rules() -> None:
    """upstream: "must contain required zones", "root zone '.' cannot be forwarded to
    ClusterCoreDNS", "external domains cannot be forwarded to ClusterCoreDNS",
    "'cluster.local' cannot be forwarded to VnetDNS", and listType=map duplicates."""
    missing = validate_spec({"localDNS": local_dns(vnet=[zone(".", True)])})
    assert missing == [
        'spec.localDNS.vnetDNSOverrides: Invalid value: "array": must contain required zones '
        "'.' and 'cluster.local'"
    ]
    root = validate_spec(
        {"localDNS": local_dns(vnet=[zone(".", False), zone("cluster.local", False)])}
    )
    assert any("root zone '.' cannot be forwarded" in e for e in root)
    external = local_dns(
        vnet=[zone(".", True), zone("cluster.local", False), zone("example.com", False)]
    )
    assert any("external domains" in e for e in validate_spec({"localDNS": external}))
    to_vnet = validate_spec(
        {"localDNS": local_dns(kube=[zone(".", False), zone("cluster.local", True)])}
    )
    assert to_vnet == [
        "spec.localDNS.kubeDNSOverrides[1]: Invalid value: \"object\": 'cluster.local' cannot be "
        "forwarded to VnetDNS"
    ]
    dup = local_dns(kube=[zone(".", False), zone("cluster.local", False), zone(".", False)])
    assert validate_spec({"localDNS": dup}) == [
        'spec.localDNS.kubeDNSOverrides[2]: Duplicate value: {"zone":"."}'
    ]
    required = validate_spec({"localDNS": {"mode": "Required"}})
    assert "spec.localDNS.vnetDNSOverrides: Required value" in required


@pytest.mark.parametrize(
    "key",
    [
        "invalid<key",
        "invalid>key",
        "invalid%key",
        "invalid&key",
        "invalid\\key",
        "invalid?key",
        "a" * 513,
    ],
)
def test_tags_with_invalid_keys_are_rejected(key: str) -> None:
    """upstream: Context("Tags") "should reject tags with invalid keys"."""
    errors = validate_spec({"tags": {key: "value"}})
    assert errors and errors[0].startswith('spec.tags: Invalid value: "object": tags keys')


def test_tags_values_and_limits() -> None:
    """upstream: "should allow tags with valid keys and values", "should reject tags with
    invalid values", "should allow tags with keys and values at max valid length"."""
    assert ok({"tags": {"valid-key": "valid-value", "anotherKey": "anotherValue"}})
    assert not ok({"tags": {"valid-key": "b" * 257}})
    assert ok({"tags": {"a" * 512: "b" * 256}})


@pytest.mark.parametrize(
    ("sysctls", "expected"),
    [
        ({"netCoreRmemDefault": 300000, "netCoreRmemMax": 212992}, False),
        ({"netCoreRmemDefault": 212992, "netCoreRmemMax": 300000}, True),
        ({"netCoreWmemDefault": 300000, "netCoreWmemMax": 212992}, False),
        ({"netCoreWmemDefault": 212992, "netCoreWmemMax": 300000}, True),
        ({"netCoreRmemDefault": 300000}, True),
        ({"netIPv4IPLocalPortRange": "32768 65535"}, True),
        ({"netIPv4IPLocalPortRange": "1024 32768"}, True),
        ({"netIPv4IPLocalPortRange": "1023 65535"}, False),
        ({"netIPv4IPLocalPortRange": "32768 65536"}, False),
        ({"netIPv4IPLocalPortRange": "61000 65535"}, False),
        ({"netIPv4IPLocalPortRange": "32768 32767"}, False),
        ({"netIPv4IPLocalPortRange": "50000 40000"}, False),
        ({}, True),
        ({"netIPv4NeighDefaultGcThresh1": 4096, "netIPv4NeighDefaultGcThresh2": 2048}, False),
        ({"netIPv4NeighDefaultGcThresh2": 8192, "netIPv4NeighDefaultGcThresh3": 4096}, False),
        (
            {
                "netIPv4NeighDefaultGcThresh1": 1024,
                "netIPv4NeighDefaultGcThresh2": 2048,
                "netIPv4NeighDefaultGcThresh3": 4096,
            },
            True,
        ),
        ({"netIPv4NeighDefaultGcThresh1": 4096}, True),
        (
            {
                "netIPv4NeighDefaultGcThresh1": 2048,
                "netIPv4NeighDefaultGcThresh2": 2048,
                "netIPv4NeighDefaultGcThresh3": 2048,
            },
            True,
        ),
    ],
)
def test_linux_os_config_sysctls(sysctls: dict[str, Any], expected: bool) -> None:
    """upstream: Contexts "LinuxOSConfig sysctl cross-field validation", "LinuxOSConfig
    netIPv4IPLocalPortRange CEL validation", "LinuxOSConfig gcThresh cross-field validation"."""
    assert ok({"linuxOSConfig": {"sysctls": sysctls}}) is expected


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({"linuxOSConfig": {"swapFileSize": "1Gi"}}, False),
        ({"linuxOSConfig": {"swapFileSize": "1Gi"}, "kubelet": {"failSwapOn": True}}, False),
        ({"linuxOSConfig": {"swapFileSize": "1Gi"}, "kubelet": {"failSwapOn": False}}, True),
        (
            {
                "linuxOSConfig": {"transparentHugePageEnabled": "never"},
                "kubelet": {"failSwapOn": True},
            },
            True,
        ),
        ({"kubelet": {"failSwapOn": False}}, True),
    ],
)
def test_fail_swap_on_with_swap_file_size(spec: dict[str, Any], expected: bool) -> None:
    """upstream: Context("failSwapOn cross-validation with swapFileSize")."""
    assert ok(spec) is expected


def test_kubelet_image_gc_thresholds_and_enums() -> None:
    """upstream's kubelet markers: GC thresholds 0..100 with high > low, enum policies,
    containerLogMaxFiles >= 2."""
    assert ok({"kubelet": {"imageGCHighThresholdPercent": 80, "imageGCLowThresholdPercent": 70}})
    assert validate_spec(
        {"kubelet": {"imageGCHighThresholdPercent": 70, "imageGCLowThresholdPercent": 70}}
    ) == [
        'spec.kubelet: Invalid value: "object": imageGCHighThresholdPercent must be greater '
        "than imageGCLowThresholdPercent"
    ]
    assert validate_spec({"kubelet": {"imageGCHighThresholdPercent": 101}}) == [
        "spec.kubelet.imageGCHighThresholdPercent: Invalid value: 101: "
        "spec.kubelet.imageGCHighThresholdPercent in body should be less than or equal to 100"
    ]
    assert not ok({"kubelet": {"cpuManagerPolicy": "dynamic"}})
    assert not ok({"kubelet": {"topologyManagerPolicy": "strict"}})
    assert not ok({"kubelet": {"containerLogMaxFiles": 1}})
    assert not ok({"kubelet": {"containerLogMaxSize": "50MB"}})


def test_max_pods_bounds_and_type_errors_name_the_field() -> None:
    """upstream's maxPods markers (10..250) and structural typing."""
    assert ok({"maxPods": 10}) and ok({"maxPods": 250})
    assert validate_spec({"maxPods": 9}) == [
        "spec.maxPods: Invalid value: 9: spec.maxPods in body should be greater than or equal to 10"
    ]
    assert validate_spec({"maxPods": "30"}) == [
        'spec.maxPods: Invalid value: "string": spec.maxPods in body must be of type integer: '
        '"string"',
        NOT_CHECKED,
    ]
    assert validate_spec({"security": {"encryptionAtHost": "yes"}}) == [
        'spec.security.encryptionAtHost: Invalid value: "string": '
        'spec.security.encryptionAtHost in body must be of type boolean: "string"',
        NOT_CHECKED,
    ]
    assert validate_spec({"bogus": 1}) == ['strict decoding error: unknown field "spec.bogus"']
    assert validate_spec([]) == [  # type: ignore[arg-type]
        'spec: Invalid value: "array": spec in body must be of type object: "array"',
        NOT_CHECKED,
    ]


def test_defaults_match_upstream_markers() -> None:
    """upstream's ``+default`` markers: imageFamily Ubuntu, osDiskSizeGB 128, kubelet's
    policies and log rotation, gpu.mode Driver (objects present only)."""
    assert apply_defaults(None) == {"imageFamily": "Ubuntu", "osDiskSizeGB": 128}
    defaulted = apply_defaults({"kubelet": {"cpuManagerPolicy": "static"}, "gpu": {}})
    assert defaulted["kubelet"] == {
        "cpuManagerPolicy": "static",
        "cpuCFSQuota": True,
        "cpuCFSQuotaPeriod": "100ms",
        "topologyManagerPolicy": "none",
        "containerLogMaxSize": "50Mi",
        "containerLogMaxFiles": 5,
    }
    assert defaulted["gpu"] == {"mode": "Driver"}


def test_from_dict_raises_with_every_error_and_exposes_the_resolved_view() -> None:
    with pytest.raises(NodeClassError) as err:
        AKSNodeClass.from_dict(
            {"metadata": {"name": "x"}, "spec": {"osDiskSizeGB": 1, "maxPods": 1}}
        )
    assert err.value.errors == (
        "spec.maxPods: Invalid value: 1: spec.maxPods in body should be greater than or equal to 10",
        "spec.osDiskSizeGB: Invalid value: 1: spec.osDiskSizeGB in body should be greater than "
        "or equal to 30",
    )
    nc = AKSNodeClass.from_dict(
        {
            "metadata": {"name": "default", "generation": 3},
            "spec": {
                "imageFamily": "AzureLinux",
                "fipsMode": "FIPS",
                "vnetSubnetID": subnet(),
                "maxPods": 50,
                "tags": {"team": "a"},
                "security": {"encryptionAtHost": True},
            },
        }
    )
    assert (nc.name, nc.generation, nc.image_family, nc.fips, nc.os_disk_size_gb) == (
        "default",
        3,
        "AzureLinux",
        True,
        128,
    )
    assert (nc.vnet_subnet_id, nc.max_pods, dict(nc.tags)) == (subnet(), 50, {"team": "a"})
    assert nc.encryption_at_host and not nc.trusted_launch


def test_schema_errors_and_rule_violations_are_reported_together() -> None:
    """As the API server (and ``karpenter validate``) reports them: a value out of bounds and
    a rule violation at once; a wrong type (a blocking error) stops the rules, so a rule never
    fails on a value of the wrong type, and the API server says the rules were not checked."""
    assert validate_spec({"osDiskSizeGB": 10, "fipsMode": "FIPS", "imageFamily": "Ubuntu2404"}) == [
        "spec.osDiskSizeGB: Invalid value: 10: spec.osDiskSizeGB in body should be greater than "
        "or equal to 30",
        'spec: Invalid value: "object": FIPS is not yet supported for Ubuntu2404',
    ]
    assert validate_spec(
        {
            "tags": ["a"],
            "kubelet": "x",
            "localDNS": {"mode": "Required", "vnetDNSOverrides": {}, "kubeDNSOverrides": 1},
        }
    ) == [
        'spec.kubelet: Invalid value: "string": spec.kubelet in body must be of type object: '
        '"string"',
        'spec.localDNS.kubeDNSOverrides: Invalid value: "integer": '
        'spec.localDNS.kubeDNSOverrides in body must be of type array: "integer"',
        'spec.localDNS.vnetDNSOverrides: Invalid value: "object": '
        'spec.localDNS.vnetDNSOverrides in body must be of type array: "object"',
        'spec.tags: Invalid value: "array": spec.tags in body must be of type object: "array"',
        NOT_CHECKED,
    ]
