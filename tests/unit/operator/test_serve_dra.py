"""``karpenter serve`` with DRA requests simulated (IGNORE_DRA_REQUESTS=false, issue 11):
the resource.k8s.io kinds are cached, and an API server without them is refused."""

from __future__ import annotations

from karpenter_core.kube.client import ApiError, ResourceType
from karpenter_core.operator.serve import CACHED_KINDS, DRA_KINDS, cached_kinds, dra_api_problem
from karpenter_core.runtime.clock import VirtualClock
from karpenter_core.runtime.options import Options
from karpenter_core.sim.apiserver import InMemoryApiServer


class Discovery:
    """A client whose discovery serves ``served`` plurals (or fails)."""

    def __init__(self, *served: str, error: ApiError | None = None) -> None:
        self.served = served
        self.error = error

    def has_resource(self, rt: ResourceType) -> bool:
        if self.error is not None:
            raise self.error
        return rt.plural in self.served


def test_the_dra_kinds_are_cached_only_when_dra_requests_are_simulated() -> None:
    assert cached_kinds(Options()) == CACHED_KINDS
    assert cached_kinds(Options(ignore_dra_requests=False)) == CACHED_KINDS + DRA_KINDS
    assert {kind for _, kind in DRA_KINDS} == {
        "ResourceSlice",
        "ResourceClaim",
        "ResourceClaimTemplate",
        "DeviceClass",
    }


def test_an_api_server_without_resource_k8s_io_v1_is_refused() -> None:
    served = ("resourceslices", "resourceclaims", "resourceclaimtemplates", "deviceclasses")
    assert dra_api_problem(Discovery(*served)) is None
    problem = dra_api_problem(Discovery("resourceslices"))
    assert problem == (
        "IGNORE_DRA_REQUESTS=false needs the API server to serve resource.k8s.io/v1 "
        "ResourceClaim (Kubernetes 1.34 or newer); it does not"
    )
    failing = Discovery(error=ApiError("connection refused", code=503))
    assert "cannot check resource.k8s.io/v1 ResourceSlice" in str(dra_api_problem(failing))


def test_a_client_without_discovery_serves_them() -> None:
    assert dra_api_problem(InMemoryApiServer(VirtualClock())) is None
