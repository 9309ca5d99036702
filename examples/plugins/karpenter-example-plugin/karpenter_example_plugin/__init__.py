"""karpenter-example-plugin: a worked third-party plugin for karpenter-core.

- :mod:`~karpenter_example_plugin.discount`: the ``negotiated-discount`` instance-type
  overlay (``karpenter_instance_type_overlays``);
- :mod:`~karpenter_example_plugin.recycling`: the ``max-node-age`` disruption method
  (``karpenter_disruption_methods``);
- :mod:`~karpenter_example_plugin.nvme`: the ``nvme.example.com`` DRA driver
  (``karpenter_dra_drivers``; its devices are simulated with ``IGNORE_DRA_REQUESTS=false``);
- :mod:`~karpenter_example_plugin.controller`: the ``example.recycle-schedule``
  controller (``karpenter_controllers``);
- :mod:`~karpenter_example_plugin.plugin`: the hook implementations, the entry point.

NodePools opt in through annotations (:mod:`~karpenter_example_plugin.policy`).
"""
