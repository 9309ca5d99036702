"""karpenter-core cloud provider plugin: kwok."""
