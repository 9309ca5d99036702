"""The kit's pytest plugin: installing karpenter-core registers it, and a plugin author's
test suite gets the fixtures with nothing to configure."""

from __future__ import annotations

from importlib.metadata import entry_points

import pytest

pytest_plugins = ("pytester",)


def test_installing_karpenter_core_registers_the_plugin_with_pytest() -> None:
    [ep] = [ep for ep in entry_points(group="pytest11") if ep.name == "karpenter_core"]
    assert ep.value == "karpenter_core.testing.pytest_plugin"
    assert ep.dist is not None and ep.dist.name == "karpenter-core"


def test_a_test_suite_gets_the_fixtures_and_the_marker(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import pytest

        from karpenter_core.testing import builders as b
        from karpenter_core.testing.expectations import expect_provisioned


        def test_provisions(karpenter_env):
            karpenter_env.apply(b.nodepool())
            nodes = expect_provisioned(karpenter_env, b.pod("web", cpu="1"))
            assert list(nodes) == ["web"]


        @pytest.mark.karpenter_env(controllers=["state"], kube_scheduler=False, kubelet=False)
        def test_the_marker_configures_the_environment(karpenter_env):
            assert karpenter_env.controllers[0] == "state.node"
            assert "provisioner" not in karpenter_env.controllers


        def test_several_environments(make_karpenter_env, fake_cloud_provider):
            first = make_karpenter_env(fake_cloud_provider, kubelet=False)
            second = make_karpenter_env(kubelet=False)
            assert first.provider is fake_cloud_provider
            assert second.provider is not fake_cloud_provider
        """
    )
    result = pytester.runpytest("-p", "no:cacheprovider", "--strict-markers")
    result.assert_outcomes(passed=3)
