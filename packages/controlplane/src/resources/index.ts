import type { ResourceType } from '../apiserver/resource-type.js';
import type { ServiceAllocator } from './allocators.js';
import { selfSubjectReviews, tokenReviews } from './authentication.js';
import { selfSubjectAccessReviews, selfSubjectRulesReviews, subjectAccessReviews } from './authorization.js';
import { certificateSigningRequests } from './certificates.js';
import { pods } from './pods.js';
import { deployments } from './deployments.js';
import { replicaSets } from './replica-sets.js';
import { podDisruptionBudgets } from './pod-disruption-budgets.js';
import { daemonSets } from './daemon-sets.js';
import { statefulSets } from './stateful-sets.js';
import { controllerRevisions } from './controller-revisions.js';
import { jobs } from './jobs.js';
import { cronJobs } from './cron-jobs.js';
import { clusterRoleBindings, clusterRoles, roleBindings, roles } from './rbac.js';
import { makeServices } from './services.js';
import { configMaps, secrets } from './config-data.js';
import { endpointSlices } from './endpoint-slices.js';
import { coreEvents, eventsV1 } from './events.js';
import { leases } from './leases.js';
import { namespaces } from './namespaces.js';
import { nodes } from './nodes.js';
import { serviceAccounts } from './service-accounts.js';

/** Every resource the control plane serves, in discovery order. */
export function servedResources(allocator: ServiceAllocator): ResourceType[] {
  return [
    namespaces,
    pods,
    makeServices(allocator),
    nodes,
    configMaps,
    secrets,
    serviceAccounts,
    coreEvents,
    endpointSlices,
    leases,
    deployments,
    replicaSets,
    podDisruptionBudgets,
    daemonSets,
    statefulSets,
    controllerRevisions,
    jobs,
    cronJobs,
    eventsV1,
    certificateSigningRequests,
    tokenReviews,
    selfSubjectReviews,
    subjectAccessReviews,
    selfSubjectAccessReviews,
    selfSubjectRulesReviews,
    clusterRoles,
    clusterRoleBindings,
    roles,
    roleBindings,
  ];
}

export { pods, podQosClass } from './pods.js';
export * from './allocators.js';
export { eventToEventsV1, eventsV1ToEvent } from './events.js';
export { immortalNamespaces } from './namespaces.js';
export * from './certificates.js';
