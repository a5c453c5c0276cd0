import {
  applyPodDefaults,
  canonicalJson,
  fieldForbidden,
  type FieldError,
  milliCpu,
  type Pod,
  podCells,
  quantityValue,
  validatePod,
} from '@nodelet/api';
import { isObject, type KubeObject } from '../object.js';
import { ageColumn, allVerbs, nameColumn, type ResourceType } from '../apiserver/resource-type.js';
import { age } from './printers.js';
import { validateObjectMetaUpdate } from './meta-validation.js';

/** Guaranteed, Burstable or BestEffort, as upstream's GetPodQOS decides from requests and limits. */
export function podQosClass(pod: Pod): 'Guaranteed' | 'Burstable' | 'BestEffort' {
  const containers = [...(pod.spec?.containers ?? []), ...(pod.spec?.initContainers ?? [])];
  const requests = new Map<string, number>();
  const limits = new Map<string, number>();
  let zeroLimits = false;
  const value = (name: string, q: string | number) => (name === 'cpu' ? milliCpu(q) : quantityValue(q));
  for (const c of containers) {
    for (const [name, q] of Object.entries(c.resources?.requests ?? {})) {
      if (name !== 'cpu' && name !== 'memory') continue;
      const v = safe(() => value(name, q as string));
      if (v > 0) requests.set(name, (requests.get(name) ?? 0) + v);
    }
    const seen = new Set<string>();
    for (const [name, q] of Object.entries(c.resources?.limits ?? {})) {
      if (name !== 'cpu' && name !== 'memory') continue;
      const v = safe(() => value(name, q as string));
      if (v > 0) {
        seen.add(name);
        limits.set(name, (limits.get(name) ?? 0) + v);
      }
    }
    if (!seen.has('cpu') || !seen.has('memory')) zeroLimits = true;
  }
  if (requests.size === 0 && limits.size === 0) return 'BestEffort';
  if (!zeroLimits && limits.size === 2) {
    let same = true;
    for (const [name, v] of requests) if (limits.get(name) !== v) same = false;
    if (same) return 'Guaranteed';
  }
  return 'Burstable';
}

/**
 * The v1 conversion of the deprecated `serviceAccount`: it fills an empty `serviceAccountName`, and it
 * always reads as `serviceAccountName`. (The ServiceAccount admission step defaults the name.)
 */
function mirrorServiceAccount(spec: Record<string, any>): void {
  if (!spec.serviceAccountName && spec.serviceAccount) spec.serviceAccountName = spec.serviceAccount;
  if (spec.serviceAccountName) spec.serviceAccount = spec.serviceAccountName;
  else delete spec.serviceAccount;
}

function safe(f: () => number): number {
  try {
    return f();
  } catch {
    return 0;
  }
}

const allowedSpecChanges =
  'pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,' +
  '`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),' +
  '`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)';

/** The parts of a pod spec an update may change, blanked so the rest can be compared. */
function mutableBlanked(spec: Record<string, any>): Record<string, any> {
  const s = structuredClone(spec);
  for (const key of ['containers', 'initContainers']) {
    for (const c of Array.isArray(s[key]) ? s[key] : []) if (isObject(c)) delete c.image;
  }
  delete s.activeDeadlineSeconds;
  delete s.tolerations;
  delete s.schedulingGates;
  return s;
}

function validatePodUpdate(pod: KubeObject, old: KubeObject): FieldError[] {
  const errors = validateObjectMetaUpdate(pod.metadata, old.metadata);
  const spec = isObject(pod.spec) ? pod.spec : {};
  const oldSpec = isObject(old.spec) ? old.spec : {};
  if (canonicalJson(mutableBlanked(spec)) !== canonicalJson(mutableBlanked(oldSpec))) {
    errors.push(fieldForbidden('spec', allowedSpecChanges));
  }
  const oldTolerations = Array.isArray(oldSpec.tolerations) ? oldSpec.tolerations : [];
  const newTolerations = Array.isArray(spec.tolerations) ? spec.tolerations : [];
  for (const t of oldTolerations) {
    if (!newTolerations.some((n: unknown) => canonicalJson(n) === canonicalJson(t))) {
      errors.push(
        fieldForbidden(
          'spec.tolerations',
          'existing toleration can not be modified except its tolerationSeconds',
        ),
      );
      break;
    }
  }
  return errors;
}

/** The stored pod with the request's ephemeral containers, defaulted. */
function withEphemeralContainers(obj: KubeObject, old: KubeObject): KubeObject {
  const given =
    isObject(obj.spec) && Array.isArray(obj.spec.ephemeralContainers) ? obj.spec.ephemeralContainers : [];
  const defaulted = applyPodDefaults({ spec: { containers: [], ephemeralContainers: given } } as Pod);
  const next = structuredClone(old);
  next.metadata = { ...old.metadata, ...pickMeta(obj) };
  next.spec = { ...(old.spec ?? {}), ephemeralContainers: defaulted.spec?.ephemeralContainers ?? [] };
  return next;
}

/** Labels and annotations may change with the subresource; the rest of the metadata is the stored one. */
function pickMeta(obj: KubeObject): Record<string, unknown> {
  const meta = isObject(obj.metadata) ? obj.metadata : {};
  return {
    ...(meta.labels ? { labels: meta.labels } : {}),
    ...(meta.annotations ? { annotations: meta.annotations } : {}),
  };
}

/** Ephemeral containers are only ever added: one already there may be neither changed nor removed. */
function validateEphemeralUpdate(obj: KubeObject, old: KubeObject): FieldError[] {
  const now = new Map<string, string>();
  for (const c of (obj.spec?.ephemeralContainers ?? []) as Record<string, unknown>[]) {
    now.set(String(c.name), canonicalJson(c));
  }
  for (const c of (old.spec?.ephemeralContainers ?? []) as Record<string, unknown>[]) {
    if (now.get(String(c.name)) !== canonicalJson(c)) {
      return [
        fieldForbidden(
          'spec.ephemeralContainers',
          `existing ephemeral containers ${JSON.stringify(c.name)} may not be removed or changed`,
        ),
      ];
    }
  }
  return [];
}

export const pods: ResourceType = {
  group: '',
  version: 'v1',
  kind: 'Pod',
  listKind: 'PodList',
  plural: 'pods',
  singular: 'pod',
  namespaced: true,
  shortNames: ['po'],
  categories: ['all'],
  verbs: allVerbs,
  subresources: [
    { name: 'status', kind: 'Pod', verbs: ['get', 'patch', 'update'] },
    { name: 'binding', kind: 'Binding', verbs: ['create'] },
    { name: 'eviction', kind: 'Eviction', group: 'policy', version: 'v1', verbs: ['create'] },
    { name: 'log', kind: 'Pod', verbs: ['get'] },
    { name: 'exec', kind: 'PodExecOptions', verbs: ['create', 'get'] },
    { name: 'attach', kind: 'PodAttachOptions', verbs: ['create', 'get'] },
    { name: 'portforward', kind: 'PodPortForwardOptions', verbs: ['create', 'get'] },
    { name: 'ephemeralcontainers', kind: 'Pod', verbs: ['get', 'patch', 'update'] },
  ],
  model: 'V1Pod',
  storage: 'pods',
  statusSubresource: true,
  returnDeletedObject: true,
  columns: [
    nameColumn,
    {
      name: 'Ready',
      type: 'string',
      description: 'The aggregate readiness state of this pod for accepting traffic.',
      priority: 0,
    },
    {
      name: 'Status',
      type: 'string',
      description: 'The aggregate status of the containers in this pod.',
      priority: 0,
    },
    {
      name: 'Restarts',
      type: 'string',
      description:
        'The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.',
      priority: 0,
    },
    ageColumn,
    {
      name: 'IP',
      type: 'string',
      description:
        'IP address allocated to the pod. Routable at least within the cluster. Empty if not yet allocated.',
      priority: 1,
    },
    {
      name: 'Node',
      type: 'string',
      description: 'NodeName is a request to schedule this pod onto a specific node.',
      priority: 1,
    },
    {
      name: 'Nominated Node',
      type: 'string',
      description: 'nominatedNodeName is set when this pod preempts other pods on the node.',
      priority: 1,
    },
    {
      name: 'Readiness Gates',
      type: 'string',
      description: 'If specified, all readiness gates will be evaluated for pod readiness.',
      priority: 1,
    },
  ],
  row(obj, now) {
    const pod = obj as Pod;
    const cells = podCells(pod, now);
    return [
      pod.metadata?.name ?? '',
      cells.ready,
      cells.status,
      cells.restarts,
      age(obj, now),
      cells.ip,
      cells.node,
      cells.nominatedNode,
      cells.readinessGates,
    ];
  },
  fields: {
    'spec.nodeName': (o) => o.spec?.nodeName ?? '',
    'spec.restartPolicy': (o) => o.spec?.restartPolicy ?? '',
    'spec.schedulerName': (o) => o.spec?.schedulerName ?? '',
    'spec.serviceAccountName': (o) => o.spec?.serviceAccountName ?? '',
    'spec.hostNetwork': (o) => String(o.spec?.hostNetwork === true),
    'status.phase': (o) => o.status?.phase ?? '',
    'status.podIP': (o) => o.status?.podIP ?? '',
    'status.podIPs': (o) => o.status?.podIPs?.map((p: { ip: string }) => p.ip).join(',') ?? '',
    'status.nominatedNodeName': (o) => o.status?.nominatedNodeName ?? '',
  },
  strategy: {
    prepareForCreate(obj) {
      const defaulted = applyPodDefaults(obj as Pod) as KubeObject;
      Object.assign(obj, defaulted);
      const spec = isObject(obj.spec) ? obj.spec : undefined;
      if (spec) {
        mirrorServiceAccount(spec);
        spec.priority ??= 0;
        spec.preemptionPolicy ??= 'PreemptLowerPriority';
        // The default not-ready/unreachable tolerations are the DefaultTolerationSeconds admission's.
      }
      obj.status = { phase: 'Pending', qosClass: podQosClass(obj as Pod) };
    },
    validate: (obj) => validatePod(obj as Pod),
    prepareForUpdate(obj, old) {
      obj.status = old.status;
      if (isObject(obj.spec)) mirrorServiceAccount(obj.spec);
    },
    validateUpdate: (obj, old) => [...validatePod(obj as Pod), ...validatePodUpdate(obj, old)],
    // `pods/ephemeralcontainers` (kubectl debug): only spec.ephemeralContainers changes, by additions.
    prepareForSubresourceUpdate: (sub, obj, old) =>
      sub === 'ephemeralcontainers' ? withEphemeralContainers(obj, old) : undefined,
    validateSubresourceUpdate: (_sub, obj, old) => [
      ...validatePod(obj as Pod),
      ...validateEphemeralUpdate(obj, old),
    ],
    gracePeriodSeconds(obj, requested) {
      // A pod no node runs, or one that finished, has nothing to stop: it goes at once.
      if (!obj.spec?.nodeName) return 0;
      const phase = obj.status?.phase;
      if (phase === 'Succeeded' || phase === 'Failed') return 0;
      const grace = requested ?? obj.spec?.terminationGracePeriodSeconds ?? 30;
      return grace < 0 ? 1 : grace;
    },
  },
};
