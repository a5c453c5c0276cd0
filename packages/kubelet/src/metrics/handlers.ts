/**
 * The kubelet's metrics and stats endpoints as a route list, for the server on `port` (10250):
 * `/metrics`, `/metrics/probes`, `/metrics/resource`, `/metrics/cadvisor`, `/stats/summary`.
 * Each handler answers every request it is given (a failed read is a 500 naming what failed).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { StatsProvider, Summary } from '@nodelet/cri';
import type { Registry } from 'prom-client';
import { TEXT_CONTENT_TYPE } from './exposition.js';
import type { KubeletMetrics } from './kubelet-metrics.js';
import { cadvisorMetricsText, resourceMetricsText } from './stats-metrics.js';

export type Handler = (req: IncomingMessage, res: ServerResponse) => Promise<void>;

export interface MetricsRoute {
  path: string;
  /** Upstream's authorization subresource of the path (`nodes/metrics`, `nodes/stats`). */
  subresource: 'metrics' | 'stats';
  handle: Handler;
}

function send(res: ServerResponse, status: number, type: string, body: string): void {
  res.writeHead(status, { 'Content-Type': type, 'Content-Length': Buffer.byteLength(body) });
  res.end(body);
}

function failed(res: ServerResponse, what: string, err: unknown): void {
  send(
    res,
    500,
    'text/plain; charset=utf-8',
    `failed to get ${what}: ${(err as Error)?.message ?? String(err)}\n`,
  );
}

function registryHandler(registry: Registry): Handler {
  return async (_req, res) => {
    try {
      send(res, 200, registry.contentType, await registry.metrics());
    } catch (err) {
      failed(res, 'metrics', err);
    }
  };
}

function textHandler(what: string, produce: () => Promise<string>): Handler {
  return async (_req, res) => {
    try {
      send(res, 200, TEXT_CONTENT_TYPE, await produce());
    } catch (err) {
      failed(res, what, err);
    }
  };
}

/** `/stats/summary`, with upstream's `only_cpu_and_memory` query parameter. */
export function summaryHandler(stats: StatsProvider): Handler {
  return async (req, res) => {
    const query = new URL(req.url ?? '/', 'http://kubelet').searchParams;
    const only = query.get('only_cpu_and_memory');
    if (only !== null && !['true', 'false', '1', '0', ''].includes(only)) {
      send(
        res,
        400,
        'text/plain; charset=utf-8',
        `invalid value of only_cpu_and_memory: "${only}" (true or false)\n`,
      );
      return;
    }
    let summary: Summary;
    try {
      summary = toSummary(await stats.snapshot(), only === 'true' || only === '1');
    } catch (err) {
      failed(res, 'node stats summary', err);
      return;
    }
    send(res, 200, 'application/json', JSON.stringify(summary));
  };
}

/** The Summary API object: the snapshot without its runtime identities; cpu and memory alone on request. */
export function toSummary(snapshot: Summary, onlyCpuAndMemory = false): Summary {
  if (!onlyCpuAndMemory) return { node: snapshot.node, pods: snapshot.pods };
  const { nodeName, startTime, cpu, memory, systemContainers } = snapshot.node;
  return {
    node: { nodeName, startTime, cpu, memory, systemContainers },
    pods: snapshot.pods.map((p) => ({
      podRef: p.podRef,
      startTime: p.startTime,
      cpu: p.cpu,
      memory: p.memory,
      containers: p.containers.map((c) => ({
        name: c.name,
        startTime: c.startTime,
        cpu: c.cpu,
        memory: c.memory,
      })),
    })),
  };
}

/** The provider, with the kubelet's node name where the provider left it empty. */
export function withNodeName(stats: StatsProvider, nodeName: string): StatsProvider {
  return {
    snapshot: async () => {
      const snapshot = await stats.snapshot();
      return snapshot.node.nodeName ? snapshot : { ...snapshot, node: { ...snapshot.node, nodeName } };
    },
    ...(stats.hasDedicatedImageFs ? { hasDedicatedImageFs: () => stats.hasDedicatedImageFs!() } : {}),
  };
}

export function kubeletMetricsRoutes(metrics: KubeletMetrics, provider: StatsProvider): MetricsRoute[] {
  const stats = withNodeName(provider, metrics.nodeName);
  return [
    { path: '/metrics', subresource: 'metrics', handle: registryHandler(metrics.registry) },
    { path: '/metrics/probes', subresource: 'metrics', handle: registryHandler(metrics.probesRegistry) },
    {
      path: '/metrics/resource',
      subresource: 'metrics',
      handle: textHandler('resource metrics', () => resourceMetricsText(stats)),
    },
    {
      path: '/metrics/cadvisor',
      subresource: 'metrics',
      handle: textHandler('cadvisor metrics', () => cadvisorMetricsText(stats)),
    },
    { path: '/stats/summary', subresource: 'stats', handle: summaryHandler(stats) },
  ];
}
