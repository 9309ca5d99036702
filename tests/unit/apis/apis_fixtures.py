"""Manifests that set every field of each kind, for round-trip and validation tests."""

from __future__ import annotations

import copy
from typing import Any

import yaml

FULL_NODEPOOL = yaml.safe_load(
    """
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: full
  uid: 8b0a6c1e-0000-4000-8000-000000000001
  resourceVersion: "42"
  generation: 3
  creationTimestamp: "2026-01-01T00:00:00Z"
  labels: {app: karpenter}
  annotations: {karpenter.sh/nodepool-hash: "1", karpenter.sh/nodepool-hash-version: v3}
  finalizers: [example.com/keep]
  managedFields: [{manager: kubectl, operation: Apply}]
spec:
  template:
    metadata:
      labels: {team: a, example.com/tier: gold}
      annotations: {example.com/owner: me}
    spec:
      taints:
        - {key: example.com/special, value: "true", effect: NoSchedule}
        - {key: example.com/special, effect: NoExecute, timeAdded: "2026-01-01T00:00:00Z"}
      startupTaints:
        - {key: example.com/not-ready, value: "yes", effect: NoSchedule, timeAdded: "2026-01-01T00:00:00Z"}
      requirements:
        - {key: karpenter.sh/capacity-type, operator: In, values: [spot, on-demand]}
        - {key: node.kubernetes.io/instance-type, operator: Exists, minValues: 2}
        - {key: example.com/gen, operator: Gt, values: ["2"]}
        - {key: example.com/gen, operator: Lte, values: ["9"]}
        - {key: kubernetes.io/arch, operator: NotIn, values: [arm64]}
        - {key: example.com/legacy, operator: DoesNotExist}
      nodeClassRef: {group: karpenter.kwok.sh, kind: KWOKNodeClass, name: default}
      terminationGracePeriod: 1h30m
      expireAfter: 336h
  disruption:
    consolidateAfter: 30s
    consolidationPolicy: Balanced
    budgets:
      - nodes: "10%"
      - nodes: "0"
        reasons: [Underutilized, Drifted]
        schedule: "0 9 * * 1-5"
        duration: 8h
  limits: {cpu: "1000", memory: 1000Gi, nodes: 50}
  weight: 10
status:
  resources: {cpu: "8", memory: 32Gi, pods: "220", ephemeral-storage: 40Gi, nodes: "2"}
  nodes: 2
  nodeClassObservedGeneration: 1
  conditions:
    - type: ValidationSucceeded
      status: "True"
      reason: ValidationSucceeded
      message: ""
      lastTransitionTime: "2026-01-01T00:00:01Z"
      observedGeneration: 3
    - type: NodeClassReady
      status: "True"
      reason: NodeClassReady
      message: ""
      lastTransitionTime: "2026-01-01T00:00:01Z"
"""
)

FULL_NODECLAIM = yaml.safe_load(
    """
apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata:
  name: full-abcde
  generateName: full-
  labels: {karpenter.sh/nodepool: full, node.kubernetes.io/instance-type: c-4x}
  annotations: {karpenter.sh/nodepool-hash: "1"}
  ownerReferences:
    - {apiVersion: karpenter.sh/v1, kind: NodePool, name: full, uid: u1, blockOwnerDeletion: true, controller: false}
  finalizers: [karpenter.sh/termination]
  deletionTimestamp: "2026-01-02T00:00:00Z"
spec:
  taints: [{key: a, value: v, effect: NoSchedule, timeAdded: "2026-01-01T00:00:00Z"}]
  startupTaints: [{key: b, value: c, effect: NoExecute, timeAdded: "2026-01-01T00:00:01Z"}]
  requirements:
    - {key: karpenter.sh/nodepool, operator: In, values: [full]}
    - {key: node.kubernetes.io/instance-type, operator: In, values: [c-4x, c-8x], minValues: 2}
  resources: {requests: {cpu: 3500m, memory: 6Gi, pods: "12"}}
  nodeClassRef: {group: karpenter.kwok.sh, kind: KWOKNodeClass, name: default}
  terminationGracePeriod: 48h
  expireAfter: Never
status:
  nodeName: full-abcde
  providerID: kwok://full-abcde
  imageID: img-1
  capacity: {cpu: "4", memory: 16Gi}
  allocatable: {cpu: 3920m, memory: 15Gi}
  conditions:
    - {type: Launched, status: "True", reason: Launched, message: "", lastTransitionTime: "2026-01-01T00:00:05Z", observedGeneration: 1}
    - {type: Registered, status: "True", reason: "", message: "", lastTransitionTime: "2026-01-01T00:00:40Z"}
    - {type: Initialized, status: Unknown, reason: NodeNotReady, message: "not ready", lastTransitionTime: "2026-01-01T00:00:40Z"}
  lastPodEventTime: "2026-01-01T00:10:00Z"
"""
)

FULL_NODEOVERLAY = yaml.safe_load(
    """
apiVersion: karpenter.sh/v1alpha1
kind: NodeOverlay
metadata: {name: overlay}
spec:
  requirements:
    - {key: karpenter.sh/capacity-type, operator: In, values: [spot]}
    - {key: karpenter.sh/nodepool, operator: NotIn, values: [gpu]}
    - {key: example.com/gen, operator: Gte, values: ["3"]}
  priceAdjustment: "-10%"
  capacity: {smarter-devices/fuse: "2"}
  weight: 100
status:
  conditions:
    - {type: ValidationSucceeded, status: "True", reason: Valid, message: "", lastTransitionTime: "2026-01-01T00:00:00Z", observedGeneration: 2}
"""
)

FULL_CAPACITYBUFFER = yaml.safe_load(
    """
apiVersion: autoscaling.x-k8s.io/v1beta1
kind: CapacityBuffer
metadata: {name: buf, namespace: web}
spec:
  provisioningStrategy: buffer.x-k8s.io/active-capacity
  scalableRef: {apiGroup: apps, kind: Deployment, name: web}
  percentage: 20
  replicas: 2
  limits: {cpu: "10"}
status:
  podTemplateRef: {name: web-tmpl}
  replicas: 2
  podTemplateGeneration: 4
  provisioningStrategy: buffer.x-k8s.io/active-capacity
  conditions:
    - {type: ReadyForProvisioning, status: "True", reason: Resolved, message: ok, lastTransitionTime: "2026-01-01T00:00:00Z", observedGeneration: 1}
"""
)

# The fields that exclude ones above (replicas vs weight, price vs priceAdjustment,
# podTemplateRef vs scalableRef): with these, every CRD schema field appears in some fixture.
STATIC_NODEPOOL = yaml.safe_load(
    """
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: static}
spec:
  replicas: 3
  limits: {nodes: "5"}
  template:
    spec:
      nodeClassRef: {group: karpenter.kwok.sh, kind: KWOKNodeClass, name: default}
      requirements:
        - {key: node.kubernetes.io/instance-type, operator: In, values: [c-4x-amd64-linux]}
"""
)

PRICE_NODEOVERLAY = yaml.safe_load(
    """
apiVersion: karpenter.sh/v1alpha1
kind: NodeOverlay
metadata: {name: fixed-price}
spec:
  requirements:
    - {key: node.kubernetes.io/instance-type, operator: In, values: [c-4x-amd64-linux]}
  price: "0.125"
  weight: 10
"""
)

TEMPLATE_CAPACITYBUFFER = yaml.safe_load(
    """
apiVersion: autoscaling.x-k8s.io/v1beta1
kind: CapacityBuffer
metadata: {name: chunk, namespace: web}
spec:
  podTemplateRef: {name: web-chunk}
  replicas: 4
"""
)

MINIMAL_NODEPOOL: dict[str, Any] = {
    "apiVersion": "karpenter.sh/v1",
    "kind": "NodePool",
    "metadata": {"name": "default"},
    "spec": {
        "template": {
            "spec": {
                "requirements": [
                    {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}
                ],
                "nodeClassRef": {
                    "group": "karpenter.kwok.sh",
                    "kind": "KWOKNodeClass",
                    "name": "default",
                },
            }
        }
    },
}

MINIMAL_NODEOVERLAY: dict[str, Any] = {
    "apiVersion": "karpenter.sh/v1alpha1",
    "kind": "NodeOverlay",
    "metadata": {"name": "o"},
    "spec": {
        "requirements": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}]
    },
}


def fresh(obj: dict[str, Any]) -> dict[str, Any]:
    return copy.deepcopy(obj)
