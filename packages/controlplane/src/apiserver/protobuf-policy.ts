import type { Fields } from './protobuf.js';

/**
 * The protobuf messages of disruptions that kubectl's typed clients send: meta/v1 DeleteOptions (the body of
 * `kubectl drain`'s pod deletes when eviction is off or not served), policy/v1 Eviction (`kubectl drain`'s
 * `pods/eviction` POSTs) and PodDisruptionBudget (`kubectl create pdb`). Field numbers from upstream's
 * apimachinery and policy generated.proto.
 */
export const policyMessages: Record<string, Fields> = {
  DeleteOptions: {
    1: ['gracePeriodSeconds', 'int'],
    2: ['preconditions', { message: 'Preconditions' }],
    3: ['orphanDependents', 'bool'],
    4: ['propagationPolicy', 'string'],
    5: ['dryRun', { repeated: 'string' }],
  },
  Preconditions: {
    1: ['uid', 'string'],
    2: ['resourceVersion', 'string'],
  },
  Eviction: {
    1: ['metadata', { message: 'ObjectMeta' }],
    2: ['deleteOptions', { message: 'DeleteOptions' }],
  },
  PodDisruptionBudget: {
    1: ['metadata', { message: 'ObjectMeta' }],
    2: ['spec', { message: 'PodDisruptionBudgetSpec' }],
    3: ['status', { message: 'PodDisruptionBudgetStatus' }],
  },
  PodDisruptionBudgetSpec: {
    1: ['minAvailable', 'intOrString'],
    2: ['selector', { message: 'LabelSelector' }],
    3: ['maxUnavailable', 'intOrString'],
    4: ['unhealthyPodEvictionPolicy', 'string'],
  },
  // Server-owned: a client's status is not read.
  PodDisruptionBudgetStatus: {},
};
