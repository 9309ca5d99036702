"""Provider conformance: what every cloud-provider plugin must do, as tests to inherit.

A provider's test suite subclasses :class:`CloudProviderConformance` and gives it a
``conformance_target`` fixture returning a :class:`ConformanceTarget`: the provider's
:class:`~karpenter_core.hookspecs.CloudProviderSpec`, settings that build it, and -- for
the launching tests -- a cluster context, a NodeClaim it can launch, and optionally a way
to make a launch run out of capacity, all on the provider's own test double (the
in-memory API server for KWOK, moto's server for AWS)::

    from karpenter_core.testing.conformance import CloudProviderConformance, ConformanceTarget

    class TestExampleConformance(CloudProviderConformance):
        @pytest.fixture
        def conformance_target(self, example_cloud_double) -> ConformanceTarget:
            return ConformanceTarget(spec=..., settings=..., cluster=..., nodeclaim=...)

What is checked (each a test below): the registration object and its settings are
well-formed; the CRDs it ships parse and serve every NodeClass kind it declares; the
provider builds with no cluster and offers well-formed instance types with priced
offerings; with a cluster it creates, gets, lists and deletes an instance; a missing
instance is ``NodeClaimNotFoundError``; and a launch that runs out of capacity is an
insufficient-capacity error naming the offerings it tried. Upstream's provider test
suites check the same behaviour through ``pkg/test`` and the cloudprovider suite.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from typing import Any

import pytest
from attrs import field, frozen

from karpenter_core.apis import labels as wk
from karpenter_core.apis.v1 import NodeClaim
from karpenter_core.cloudprovider.errors import NodeClaimNotFoundError, is_insufficient_capacity
from karpenter_core.cloudprovider.protocol import CloudProvider
from karpenter_core.cloudprovider.types import InstanceType
from karpenter_core.hookspecs import CloudProviderSpec, ProviderContext
from karpenter_core.plugins import (
    PluginError,
    cloud_provider_crds,
    node_classes_without_crd,
    register_provider_labels,
    resolve_settings,
)
from karpenter_core.scheduling.requirements import Requirement, Requirements

__all__ = ["CloudProviderConformance", "ConformanceTarget"]


@frozen
class ConformanceTarget:
    """One provider under test.

    - ``spec`` / ``settings``: what registers it and settings that build it.
    - ``cluster``: a :class:`ProviderContext` with a cluster client, clock and recorder in
      which the provider can launch (None: the provider cannot launch, and the launching
      tests are skipped saying so).
    - ``nodeclaim(provider)``: a NodeClaim the provider can launch there (its NodeClass
      created, its requirements satisfiable).
    - ``exhaust_capacity(provider, nodeclaim)``: arrange that launching ``nodeclaim`` runs
      out of capacity (None: the double cannot, and that test is skipped saying so).
    - ``register(cluster, nodeclaim)``: what the core does once a launched instance's Node
      joins that the provider's ``delete`` relies on (KWOK's instance is its Node, which the
      core's registration makes the NodeClaim's dependent, so deleting the NodeClaim
      removes it); None when delete needs nothing of the kind.
    - ``missing_provider_id``: a provider id that names no instance.
    """

    spec: CloudProviderSpec
    settings: Mapping[str, str] = field(factory=dict)
    cluster: Callable[[], ProviderContext] | None = None
    nodeclaim: Callable[[CloudProvider], NodeClaim] | None = None
    exhaust_capacity: Callable[[CloudProvider, NodeClaim], None] | None = None
    register: Callable[[ProviderContext, NodeClaim], None] | None = None
    missing_provider_id: str = "nonexistent://instance"

    def build(self, context: ProviderContext | None = None) -> CloudProvider:
        """The provider from its own factory, as ``get_cloud_provider`` builds it (its
        well-known labels registered first, as selecting a provider does)."""
        resolved = resolve_settings(self.spec, self.settings)
        register_provider_labels(self.spec)
        base = context or ProviderContext()
        return self.spec.factory(
            ProviderContext(
                settings=resolved, kube=base.kube, clock=base.clock, recorder=base.recorder
            )
        )


def _launching(
    target: ConformanceTarget,
) -> tuple[CloudProvider, NodeClaim, ProviderContext]:
    if not target.spec.can_launch:
        pytest.skip(f"cloud provider {target.spec.name!r} declares it cannot launch")
    if target.cluster is None or target.nodeclaim is None:
        pytest.skip("the conformance target gives no cluster to launch in")
    cluster = target.cluster()
    provider = target.build(cluster)
    return provider, target.nodeclaim(provider), cluster


class CloudProviderConformance:
    """The conformance tests; subclass and provide a ``conformance_target`` fixture."""

    # ------------------------------------------------------------------ registration

    def test_the_registration_is_well_formed(self, conformance_target: ConformanceTarget) -> None:
        spec = conformance_target.spec
        assert isinstance(spec, CloudProviderSpec)
        names = [s.name for s in spec.settings]
        assert len(names) == len(set(names)), f"settings declared twice: {names}"
        envs = [s.env for s in spec.settings if s.env]
        assert len(envs) == len(set(envs)), f"environment variables shared: {envs}"
        if spec.can_launch:
            assert spec.node_classes, "a launching provider must declare its NodeClass kinds"

    def test_the_crds_parse_and_serve_every_declared_node_class(
        self, conformance_target: ConformanceTarget
    ) -> None:
        spec = conformance_target.spec
        try:
            crds = cloud_provider_crds(spec)
        except PluginError as e:
            pytest.fail(str(e))
        missing = node_classes_without_crd(spec, crds)
        assert missing == [], f"no shipped CRD serves {[str(k) for k in missing]}"

    def test_unknown_settings_are_refused(self, conformance_target: ConformanceTarget) -> None:
        spec = conformance_target.spec
        with pytest.raises(PluginError, match="unknown setting"):
            resolve_settings(spec, {**conformance_target.settings, "no-such-setting": "x"})

    # ------------------------------------------------------------------ no cluster

    def test_it_builds_with_no_cluster(self, conformance_target: ConformanceTarget) -> None:
        provider = conformance_target.build()
        assert provider.name == conformance_target.spec.name
        declared = set(conformance_target.spec.node_classes)
        assert set(provider.supported_node_classes()) <= declared

    def test_its_instance_types_are_well_formed_and_priced(
        self, conformance_target: ConformanceTarget
    ) -> None:
        types = list(conformance_target.build().get_instance_types(None))
        assert types, "no instance types without a cluster"
        names = [it.name for it in types]
        assert len(names) == len(set(names)), "instance type names repeat"
        for it in types:
            _check_instance_type(it)
        assert any(o.available for it in types for o in it.offerings), "nothing is available"

    # ------------------------------------------------------------------ launching

    def test_create_get_list_delete_round_trip(self, conformance_target: ConformanceTarget) -> None:
        provider, nodeclaim, cluster = _launching(conformance_target)
        if cluster.kube is not None:  # the NodeClaim object exists first, as the core makes it
            stored = cluster.kube.create(nodeclaim.to_dict())
            nodeclaim = NodeClaim.from_dict(stored)
        created = provider.create(nodeclaim)
        provider_id = created.provider_id
        assert provider_id, "the launched NodeClaim has no providerID"
        allowed = _allowed_types(nodeclaim)
        launched_type = created.metadata.labels.get(wk.LABEL_INSTANCE_TYPE, "")
        assert allowed.has(launched_type), f"launched {launched_type!r}, not an allowed type"
        assert provider.get(provider_id).provider_id == provider_id
        assert provider_id in {nc.provider_id for nc in provider.list()}
        # the NodeClaim as the launch controller records it: its own name, the status
        launched = NodeClaim.from_dict(
            {**nodeclaim.to_dict(), "status": created.to_dict()["status"]}
        )
        if conformance_target.register is not None:
            conformance_target.register(cluster, launched)
        with contextlib.suppress(NodeClaimNotFoundError):  # upstream's "instance terminated"
            provider.delete(launched)
        with pytest.raises(NodeClaimNotFoundError):
            _get_until_gone(provider, provider_id)

    def test_a_missing_instance_is_nodeclaim_not_found(
        self, conformance_target: ConformanceTarget
    ) -> None:
        provider, _, _ = _launching(conformance_target)
        with pytest.raises(NodeClaimNotFoundError):
            provider.get(conformance_target.missing_provider_id)

    def test_running_out_of_capacity_is_insufficient_capacity_naming_the_offerings(
        self, conformance_target: ConformanceTarget
    ) -> None:
        provider, nodeclaim, _ = _launching(conformance_target)
        if conformance_target.exhaust_capacity is None:
            pytest.skip("the conformance target cannot make a launch run out of capacity")
        conformance_target.exhaust_capacity(provider, nodeclaim)
        with pytest.raises(Exception) as raised:
            provider.create(nodeclaim)
        assert is_insufficient_capacity(raised.value), repr(raised.value)
        allowed = _allowed_types(nodeclaim).values
        assert any(name in str(raised.value) for name in allowed), (
            f"the error names none of the offerings tried ({sorted(allowed)}): {raised.value}"
        )


def _get_until_gone(provider: CloudProvider, provider_id: str, attempts: int = 3) -> Any:
    """``get`` after a delete: a provider whose instance lingers in a terminating state
    reports it as gone (NodeClaimNotFoundError) or as still there; ask a few times."""
    for _ in range(attempts):
        nc = provider.get(provider_id)
        if nc.metadata.deletion_timestamp:
            raise NodeClaimNotFoundError("terminating")
    return nc


def _allowed_types(nodeclaim: NodeClaim) -> Requirement:
    reqs = Requirements.from_node_selector_requirements(nodeclaim.spec.requirements)
    return reqs.get(wk.LABEL_INSTANCE_TYPE)


def _check_instance_type(it: InstanceType) -> None:
    where = f"instance type {it.name}"
    assert it.name, "an instance type without a name"
    req = it.requirements.get(wk.LABEL_INSTANCE_TYPE)
    assert req.has(it.name), f"{where}: its requirements do not name it"
    assert it.capacity.get("cpu", 0) > 0, f"{where}: no cpu capacity"
    assert it.capacity.get("memory", 0) > 0, f"{where}: no memory capacity"
    assert it.offerings, f"{where}: no offerings"
    for o in it.offerings:
        assert o.zone, f"{where}: an offering without a zone"
        assert o.capacity_type, f"{where}: an offering without a capacity type"
        if o.available:
            assert o.price > 0, f"{where}: available offering {o.zone}/{o.capacity_type} is free"
