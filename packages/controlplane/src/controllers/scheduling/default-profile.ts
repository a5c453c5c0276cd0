import type { Profile } from './framework.js';
import { interPodAffinityFilter, interPodAffinityScore } from './inter-pod-affinity.js';
import { nodeAffinityFilter, nodeAffinityScore } from './node-affinity.js';
import { nodeName } from './node-name.js';
import { nodePorts } from './node-ports.js';
import { nodeResourcesFitFilter, nodeResourcesFitScore } from './node-resources-fit.js';
import { nodeUnschedulable } from './node-unschedulable.js';
import { podTopologySpreadFilter, podTopologySpreadScore } from './pod-topology-spread.js';
import { taintTolerationFilter, taintTolerationScore } from './taint-toleration.js';

/**
 * kube-scheduler's default profile, in its order, without the volume plugins, ImageLocality and
 * NodeResourcesBalancedAllocation. Weights as upstream: TaintToleration 3, NodeAffinity 2,
 * PodTopologySpread 2, InterPodAffinity 2, NodeResourcesFit 1.
 */
export const defaultProfile: Profile = {
  filters: [
    nodeUnschedulable,
    nodeName,
    taintTolerationFilter,
    nodeAffinityFilter,
    nodePorts,
    nodeResourcesFitFilter,
    podTopologySpreadFilter,
    interPodAffinityFilter,
  ],
  scores: [
    taintTolerationScore,
    nodeAffinityScore,
    nodeResourcesFitScore,
    podTopologySpreadScore,
    interPodAffinityScore,
  ],
};
