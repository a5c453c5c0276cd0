/**
 * `metrics.k8s.io/v1beta1` as metrics-server serves it behind its APIService: NodeMetrics and PodMetrics,
 * get and list (namespaced or across namespaces), filtered by label selector, read-only. It is listed in
 * discovery beside the built-in groups so `kubectl top` finds it.
 */
import type { ServerResponse } from 'node:http';
import { rfc3339, type KubeObject } from '../object.js';
import { matchLabels, parseLabelSelector } from '../apiserver/selectors.js';
import { send } from '../apiserver/responses.js';
import { ApiError, badRequest, methodNotAllowed } from '../apiserver/status.js';
import type { RevisionStore } from '../storage/revision-store.js';
import type { ResourceMetrics, Usage } from './resource-metrics.js';

export const metricsGroup = 'metrics.k8s.io';
export const metricsVersion = 'v1beta1';
const groupVersion = `${metricsGroup}/${metricsVersion}`;

const version = { groupVersion, version: metricsVersion };
/** The group's entry in `/apis`. */
export const metricsGroupEntry = { name: metricsGroup, versions: [version], preferredVersion: version };

/** The group's entry in aggregated discovery (`/apis` as APIGroupDiscoveryList). */
export const metricsAggregatedEntry = {
  metadata: { name: metricsGroup, creationTimestamp: null },
  versions: [
    {
      version: metricsVersion,
      resources: [
        ['nodes', 'NodeMetrics', 'Cluster'],
        ['pods', 'PodMetrics', 'Namespaced'],
      ].map(([resource, kind, scope]) => ({
        resource,
        responseKind: { group: metricsGroup, version: metricsVersion, kind },
        scope,
        singularResource: '',
        verbs: ['get', 'list'],
      })),
      freshness: 'Current',
    },
  ],
};

const resourceList = {
  kind: 'APIResourceList',
  apiVersion: 'v1',
  groupVersion,
  resources: [
    { name: 'nodes', singularName: '', namespaced: false, kind: 'NodeMetrics', verbs: ['get', 'list'] },
    { name: 'pods', singularName: '', namespaced: true, kind: 'PodMetrics', verbs: ['get', 'list'] },
  ],
};

const cpu = (cores: number) => `${Math.round(cores * 1e9)}n`;
const memory = (bytes: number) => `${Math.round(bytes / 1024)}Ki`;
const window = (u: Usage) => `${Math.round(u.windowMs / 1000)}s`;

const notFound = (resource: string, name: string) =>
  new ApiError(404, 'NotFound', `${resource}.${metricsGroup} "${name}" not found`);

/** Serves a path under `/apis/metrics.k8s.io`; `segments` is what follows the group. */
export function serveMetrics(
  store: RevisionStore,
  metrics: ResourceMetrics | undefined,
  method: string,
  res: ServerResponse,
  segments: string[],
  q: URLSearchParams,
): void {
  if (method !== 'GET' && method !== 'HEAD') throw methodNotAllowed();
  if (segments.length === 0)
    return send(res, 200, { kind: 'APIGroup', apiVersion: 'v1', ...metricsGroupEntry });
  if (segments[0] !== metricsVersion)
    throw new ApiError(404, 'NotFound', 'the server could not find the requested resource');
  const rest = segments.slice(1);
  if (rest.length === 0) return send(res, 200, resourceList);
  let selector;
  try {
    selector = parseLabelSelector(q.get('labelSelector') ?? undefined);
  } catch (err) {
    throw badRequest(`labelSelector: Invalid value: ${(err as Error).message}`);
  }
  const fit = (o: KubeObject) =>
    matchLabels(selector, o.metadata.labels as Record<string, string> | undefined);
  if (rest[0] === 'nodes' && rest.length <= 2) {
    const nodes = store.listAll('nodes').map((s) => s.object);
    if (rest[1] !== undefined) {
      const node = nodes.find((n) => n.metadata.name === rest[1]);
      const item = node && nodeMetrics(metrics, node);
      if (!item) throw notFound('nodemetrics', rest[1]);
      return send(res, 200, item);
    }
    const items = nodes.filter(fit).flatMap((n) => nodeMetrics(metrics, n) ?? []);
    return send(res, 200, { kind: 'NodeMetricsList', apiVersion: groupVersion, metadata: {}, items });
  }
  let namespace: string | undefined;
  let podPath = rest;
  if (rest[0] === 'namespaces' && rest[1] && rest[2] === 'pods') {
    namespace = rest[1];
    podPath = rest.slice(2);
  }
  if (podPath[0] === 'pods' && podPath.length <= 2 && (podPath.length === 1 || namespace !== undefined)) {
    const pods = store
      .listAll('pods')
      .map((s) => s.object)
      .filter((p) => namespace === undefined || p.metadata.namespace === namespace);
    if (podPath[1] !== undefined) {
      const pod = pods.find((p) => p.metadata.name === podPath[1]);
      const item = pod && podMetrics(metrics, pod);
      if (!item) throw notFound('podmetrics', podPath[1]);
      return send(res, 200, item);
    }
    const items = pods.filter(fit).flatMap((p) => podMetrics(metrics, p) ?? []);
    return send(res, 200, { kind: 'PodMetricsList', apiVersion: groupVersion, metadata: {}, items });
  }
  throw new ApiError(404, 'NotFound', 'the server could not find the requested resource');
}

function meta(o: KubeObject, timestampMs: number): object {
  return {
    name: o.metadata.name,
    ...(o.metadata.namespace ? { namespace: o.metadata.namespace } : {}),
    creationTimestamp: rfc3339(timestampMs),
    ...(o.metadata.labels ? { labels: o.metadata.labels } : {}),
  };
}

function nodeMetrics(metrics: ResourceMetrics | undefined, node: KubeObject): object | undefined {
  const u = metrics?.node(node.metadata.name!);
  if (!u) return undefined;
  return {
    kind: 'NodeMetrics',
    apiVersion: groupVersion,
    metadata: meta(node, u.timestampMs),
    timestamp: rfc3339(u.timestampMs),
    window: window(u),
    usage: { cpu: cpu(u.cpuCores), memory: memory(u.memoryBytes) },
  };
}

/** A pod's metrics, only when every one of its containers has been measured (as metrics-server). */
function podMetrics(metrics: ResourceMetrics | undefined, pod: KubeObject): object | undefined {
  const names = ((pod.spec?.containers ?? []) as { name: string }[]).map((c) => c.name);
  const ns = pod.metadata.namespace ?? 'default';
  const usages = names.map((c) => metrics?.container(ns, pod.metadata.name!, c));
  if (!usages.length || usages.some((u) => !u)) return undefined;
  const first = usages[0]!;
  return {
    kind: 'PodMetrics',
    apiVersion: groupVersion,
    metadata: meta(pod, first.timestampMs),
    timestamp: rfc3339(first.timestampMs),
    window: window(first),
    containers: names.map((name, i) => ({
      name,
      usage: { cpu: cpu(usages[i]!.cpuCores), memory: memory(usages[i]!.memoryBytes) },
    })),
  };
}
