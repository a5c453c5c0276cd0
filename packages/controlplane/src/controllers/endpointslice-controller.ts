import { canonicalJson } from '@nodelet/api';
import type { Clock, Logger } from '@nodelet/kernel';
import type { KubeObject } from '../object.js';
import type { Registry } from '../apiserver/registry.js';
import { labelSelectorFromObject, matchLabels } from '../apiserver/selectors.js';
import { ApiError } from '../apiserver/status.js';
import { WorkQueue } from './work-queue.js';

/**
 * The EndpointSlice controller: for every Service with a selector, the addresses of the pods it selects,
 * in EndpointSlices (discovery.k8s.io/v1) labelled `kubernetes.io/service-name`, as upstream's controller
 * keeps them:
 *
 * - an endpoint per pod with an IP that has not finished: `ready` (Ready condition true and not
 *   terminating, or the Service publishes not-ready addresses), `serving` (Ready condition true) and
 *   `terminating` (deletionTimestamp set);
 * - ports resolved per pod: a named targetPort is looked up among the pod's container ports, so pods that
 *   name the same port differently land in different slices;
 * - at most `maxEndpointsPerSlice` (100) endpoints per slice; endpoints stay in the slice that already
 *   holds them, new ones fill the slices with room first;
 * - a Service that selects nothing keeps one empty slice; a Service that is gone, or lost its selector,
 *   loses its slices.
 */
export const serviceNameLabel = 'kubernetes.io/service-name';
export const managedByLabel = 'endpointslice.kubernetes.io/managed-by';
export const controllerName = 'endpointslice-controller.k8s.io';

interface SlicePort {
  name: string;
  port: number;
  protocol: string;
}

interface Endpoint {
  addresses: string[];
  conditions: { ready: boolean; serving: boolean; terminating: boolean };
  nodeName?: string;
  targetRef: { kind: 'Pod'; namespace: string; name: string; uid: string };
}

function podReady(pod: KubeObject): boolean {
  return (pod.status?.conditions ?? []).some((c: any) => c.type === 'Ready' && c.status === 'True');
}

/** The slice ports of `svc` for `pod`, or undefined when a named targetPort is not on the pod. */
export function resolvePorts(svc: KubeObject, pod: KubeObject): SlicePort[] | undefined {
  const out: SlicePort[] = [];
  for (const p of svc.spec?.ports ?? []) {
    const protocol = p.protocol ?? 'TCP';
    let port: number | undefined;
    if (typeof p.targetPort === 'number') port = p.targetPort;
    else if (typeof p.targetPort === 'string' && /^\d+$/.test(p.targetPort)) port = Number(p.targetPort);
    else if (typeof p.targetPort === 'string' && p.targetPort) {
      for (const c of pod.spec?.containers ?? []) {
        const found = (c.ports ?? []).find(
          (cp: any) => cp.name === p.targetPort && (cp.protocol ?? 'TCP') === protocol,
        );
        if (found) {
          port = found.containerPort;
          break;
        }
      }
    } else port = p.port;
    if (port === undefined) return undefined;
    out.push({ name: p.name ?? '', port, protocol });
  }
  return out;
}

export function endpointFor(svc: KubeObject, pod: KubeObject): Endpoint | undefined {
  const ip = pod.status?.podIP;
  const phase = pod.status?.phase;
  if (!ip || phase === 'Succeeded' || phase === 'Failed') return undefined;
  const terminating = !!pod.metadata.deletionTimestamp;
  const serving = podReady(pod);
  const ready = svc.spec?.publishNotReadyAddresses === true || (serving && !terminating);
  return {
    addresses: [ip],
    conditions: { ready, serving, terminating },
    ...(pod.spec?.nodeName ? { nodeName: pod.spec.nodeName } : {}),
    targetRef: {
      kind: 'Pod',
      namespace: pod.metadata.namespace!,
      name: pod.metadata.name!,
      uid: pod.metadata.uid!,
    },
  };
}

export class EndpointSliceController {
  private readonly queue: WorkQueue;
  private readonly unsubscribe: (() => void)[] = [];

  constructor(
    private readonly registry: Registry,
    clock: Clock,
    logger: Logger,
    private readonly maxEndpointsPerSlice = 100,
  ) {
    this.queue = new WorkQueue('endpointslice', (k) => this.sync(k), clock, logger);
  }

  start(): void {
    const store = this.registry.store;
    this.unsubscribe.push(
      store.subscribe('services', (e) => this.queue.add(`${e.namespace}/${e.name}`)),
      store.subscribe('pods', (e) => {
        for (const svc of store.listAll('services', e.namespace)) {
          const selector = svc.object.spec?.selector;
          if (!selector || Object.keys(selector).length === 0) continue;
          const sel = labelSelectorFromObject({ matchLabels: selector });
          if (
            matchLabels(sel, e.object.metadata.labels) ||
            (e.prev && matchLabels(sel, e.prev.metadata.labels))
          ) {
            this.queue.add(`${e.namespace}/${svc.object.metadata.name}`);
          }
        }
      }),
      store.subscribe('endpointslices', (e) => {
        const labels = e.object.metadata.labels ?? {};
        if (labels[managedByLabel] === controllerName && labels[serviceNameLabel]) {
          this.queue.add(`${e.namespace}/${labels[serviceNameLabel]}`);
        }
      }),
    );
    for (const { object } of store.listAll('services'))
      this.queue.add(`${object.metadata.namespace}/${object.metadata.name}`);
    for (const { object } of store.listAll('endpointslices')) {
      const labels = object.metadata.labels ?? {};
      if (labels[managedByLabel] === controllerName && labels[serviceNameLabel]) {
        this.queue.add(`${object.metadata.namespace}/${labels[serviceNameLabel]}`);
      }
    }
  }

  stop(): void {
    for (const u of this.unsubscribe.splice(0)) u();
    this.queue.stop();
  }

  private managedSlices(namespace: string, service: string): KubeObject[] {
    return this.registry.store
      .listAll('endpointslices', namespace)
      .map((s) => s.object)
      .filter(
        (s) =>
          s.metadata.labels?.[serviceNameLabel] === service &&
          s.metadata.labels?.[managedByLabel] === controllerName,
      );
  }

  private sync(key: string): void {
    const [namespace, name] = key.split('/') as [string, string];
    const store = this.registry.store;
    const slicesType = this.registry.byStorage('endpointslices');
    const svc = store.get('services', namespace, name)?.object;
    const existing = this.managedSlices(namespace, name);
    const selector = svc?.spec?.selector;
    if (
      !svc ||
      svc.metadata.deletionTimestamp ||
      !selector ||
      Object.keys(selector).length === 0 ||
      svc.spec?.type === 'ExternalName'
    ) {
      for (const s of existing) this.registry.forceRemove('endpointslices', namespace, s.metadata.name!);
      return;
    }
    const sel = labelSelectorFromObject({ matchLabels: selector });
    // Desired endpoints, grouped by their resolved ports.
    const groups = new Map<string, { ports: SlicePort[]; endpoints: Map<string, Endpoint> }>();
    for (const { object: pod } of store.listAll('pods', namespace)) {
      if (!matchLabels(sel, pod.metadata.labels)) continue;
      const endpoint = endpointFor(svc, pod);
      const ports = resolvePorts(svc, pod);
      if (!endpoint || !ports) continue;
      const g = canonicalJson(ports);
      let group = groups.get(g);
      if (!group) groups.set(g, (group = { ports, endpoints: new Map() }));
      group.endpoints.set(pod.metadata.uid!, endpoint);
    }
    const keep = new Set<string>();
    // Slices whose ports no group wants are reused before new ones are made (less churn for watchers).
    const spare = existing.filter((s) => !groups.has(canonicalJson(s.ports ?? [])));
    for (const [g, group] of groups) {
      const slices = existing.filter((s) => canonicalJson(s.ports ?? []) === g);
      // Endpoints stay where they are; what is new fills slices with room, then new slices.
      const plan = slices.map((s) => ({
        slice: s,
        endpoints: (s.endpoints ?? [])
          .map((e: any) => group.endpoints.get(e.targetRef?.uid))
          .filter((e: Endpoint | undefined): e is Endpoint => !!e && !!e.targetRef),
      }));
      const placed = new Set(plan.flatMap((p) => p.endpoints.map((e: Endpoint) => e.targetRef.uid)));
      const fresh = [...group.endpoints.values()].filter((e) => !placed.has(e.targetRef.uid));
      for (const p of plan) {
        while (p.endpoints.length < this.maxEndpointsPerSlice && fresh.length)
          p.endpoints.push(fresh.shift()!);
      }
      while (fresh.length) {
        const chunk = fresh.splice(0, this.maxEndpointsPerSlice);
        plan.push({ slice: spare.shift() as KubeObject, endpoints: chunk });
      }
      for (const p of plan) {
        if (p.endpoints.length === 0 && plan.length > 1) continue;
        const name = this.write(svc, p.slice, group.ports, p.endpoints, slicesType);
        if (name) keep.add(name);
      }
    }
    if (groups.size === 0) {
      // A placeholder: a selecting Service always has a slice, empty when nothing matches.
      const placeholder = existing.find((s) => (s.endpoints ?? []).length === 0 && !s.ports) ?? spare[0];
      const n = this.write(svc, placeholder, null, [], slicesType);
      if (n) keep.add(n);
    }
    for (const s of existing)
      if (!keep.has(s.metadata.name!))
        this.registry.forceRemove('endpointslices', namespace, s.metadata.name!);
  }

  /** Creates or updates one slice; returns its name. */
  private write(
    svc: KubeObject,
    slice: KubeObject | undefined,
    ports: SlicePort[] | null,
    endpoints: Endpoint[],
    type: ReturnType<Registry['byStorage']>,
  ): string | undefined {
    const namespace = svc.metadata.namespace!;
    const sorted = [...endpoints].sort((a, b) =>
      a.targetRef.name < b.targetRef.name ? -1 : a.targetRef.name > b.targetRef.name ? 1 : 0,
    );
    const desired = {
      addressType: 'IPv4',
      endpoints: sorted,
      ports,
      labels: {
        ...(svc.metadata.labels ?? {}),
        [serviceNameLabel]: svc.metadata.name!,
        [managedByLabel]: controllerName,
      },
      ownerReferences: [
        {
          apiVersion: 'v1',
          kind: 'Service',
          name: svc.metadata.name!,
          uid: svc.metadata.uid!,
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    };
    if (slice) {
      const same =
        canonicalJson(slice.endpoints ?? []) === canonicalJson(desired.endpoints) &&
        canonicalJson(slice.ports ?? null) === canonicalJson(desired.ports) &&
        canonicalJson(slice.metadata.labels ?? {}) === canonicalJson(desired.labels) &&
        canonicalJson(slice.metadata.ownerReferences ?? []) === canonicalJson(desired.ownerReferences);
      if (same) return slice.metadata.name;
      this.registry.store.update('endpointslices', namespace, slice.metadata.name!, (s) => {
        s.endpoints = desired.endpoints;
        if (desired.ports) s.ports = desired.ports;
        else delete s.ports;
        s.metadata.labels = desired.labels;
        s.metadata.ownerReferences = desired.ownerReferences;
        return s;
      });
      return slice.metadata.name;
    }
    try {
      const { object } = this.registry.create(type, namespace, {
        apiVersion: 'discovery.k8s.io/v1',
        kind: 'EndpointSlice',
        metadata: {
          generateName: `${svc.metadata.name}-`,
          labels: desired.labels,
          ownerReferences: desired.ownerReferences,
          annotations: {},
        },
        addressType: desired.addressType,
        endpoints: desired.endpoints,
        ...(desired.ports ? { ports: desired.ports } : {}),
      });
      return object.metadata.name;
    } catch (err) {
      if (err instanceof ApiError && (err.code === 403 || err.code === 404)) return undefined;
      throw err;
    }
  }
}
