/**
 * What `metrics.k8s.io` serves, gathered as metrics-server does: every node's kubelet `/metrics/resource`
 * (Prometheus text) scraped every 15 s; memory is the last working set, CPU the rate of the cumulative
 * usage counter between the last two scrapes (so a node or container shows up from its second scrape).
 */
import type { Clock, Logger, Loop } from '@nodelet/kernel';
import { errorMessage } from '@nodelet/kernel';
import type { KubeletClient } from '../apiserver/kubelet-client.js';
import { kubeletEndpoint } from '../apiserver/kubelet-client.js';
import type { RevisionStore } from '../storage/revision-store.js';

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
  /** Milliseconds since the epoch, when the line carries one. */
  timestampMs?: number;
}

/** Parses Prometheus text exposition lines (comments and malformed lines are skipped). */
export function parsePrometheusText(text: string): Sample[] {
  const out: Sample[] = [];
  const line = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+(-?\d+))?\s*$/;
  const label = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;
  for (const raw of text.split('\n')) {
    if (!raw || raw.startsWith('#')) continue;
    const m = line.exec(raw.trim());
    if (!m) continue;
    const value = Number(m[3]);
    if (!Number.isFinite(value)) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(label)) labels[l[1]!] = l[2]!.replace(/\\(.)/g, '$1');
    out.push({ name: m[1]!, labels, value, ...(m[4] ? { timestampMs: Number(m[4]) } : {}) });
  }
  return out;
}

/** One usage point: cumulative CPU seconds and working-set bytes at a time. */
interface Point {
  cpuSeconds: number;
  memoryBytes: number;
  atMs: number;
}

export interface Usage {
  /** Cores (a rate), and bytes. */
  cpuCores: number;
  memoryBytes: number;
  timestampMs: number;
  windowMs: number;
}

/** Last two points per key, and the usage they make. */
class Series {
  private readonly points = new Map<string, [Point | undefined, Point]>();

  record(key: string, point: Point): void {
    const prev = this.points.get(key);
    if (prev && prev[1].atMs === point.atMs) return; // the same sample again
    this.points.set(key, [prev?.[1], point]);
  }

  retain(keys: Set<string>): void {
    for (const key of this.points.keys()) if (!keys.has(key)) this.points.delete(key);
  }

  usage(key: string): Usage | undefined {
    const pair = this.points.get(key);
    if (!pair?.[0]) return undefined;
    const [a, b] = pair;
    const windowMs = b.atMs - a!.atMs;
    if (windowMs <= 0 || b.cpuSeconds < a!.cpuSeconds) return undefined; // restarted counter
    return {
      cpuCores: (b.cpuSeconds - a!.cpuSeconds) / (windowMs / 1000),
      memoryBytes: b.memoryBytes,
      timestampMs: b.atMs,
      windowMs,
    };
  }
}

export interface ResourceMetricsOptions {
  store: RevisionStore;
  kubelets: KubeletClient;
  clock: Clock;
  logger: Logger;
  /** metrics-server's `--metric-resolution`: 15 s. */
  resolutionMs?: number;
}

export class ResourceMetrics {
  private readonly nodes = new Series();
  private readonly containers = new Series();
  /** The container keys of each node's last scrape: what is gone from it is forgotten. */
  private readonly containersOf = new Map<string, Set<string>>();
  private loop?: Loop;

  constructor(private readonly o: ResourceMetricsOptions) {}

  start(): void {
    this.loop = this.o.clock.loop(() => this.scrapeAll(), {
      period: this.o.resolutionMs ?? 15_000,
      onError: (err) => this.o.logger.warn('metrics scrape failed', { err: errorMessage(err) }),
    });
  }

  stop(): void {
    this.loop?.stop();
  }

  /** Scrapes every node now (also what each period does). */
  async scrapeAll(): Promise<void> {
    const nodes = this.o.store.listAll('nodes').map((s) => s.object);
    const seenNodes = new Set<string>();
    await Promise.all(
      nodes.map(async (node) => {
        const name = node.metadata.name!;
        if (!node.status?.daemonEndpoints?.kubeletEndpoint?.Port) return;
        seenNodes.add(name);
        try {
          const res = await this.o.kubelets.request(kubeletEndpoint(node), '/metrics/resource');
          let text = '';
          for await (const chunk of res) text += String(chunk);
          if (res.statusCode !== 200) throw new Error(`status ${res.statusCode}: ${text.slice(0, 200)}`);
          this.ingest(name, text);
        } catch (err) {
          this.o.logger.debug('could not scrape a kubelet', { node: name, err: errorMessage(err) });
        }
      }),
    );
    this.nodes.retain(seenNodes);
    for (const node of this.containersOf.keys()) if (!seenNodes.has(node)) this.containersOf.delete(node);
    this.containers.retain(new Set([...this.containersOf.values()].flatMap((keys) => [...keys])));
  }

  /** Takes one node's `/metrics/resource` text. */
  ingest(node: string, text: string): void {
    const now = this.o.clock.now();
    const samples = parsePrometheusText(text);
    const at = (s: Sample | undefined) => s?.timestampMs ?? now;
    const cpu = samples.find((s) => s.name === 'node_cpu_usage_seconds_total');
    const mem = samples.find((s) => s.name === 'node_memory_working_set_bytes');
    if (cpu && mem) this.nodes.record(node, { cpuSeconds: cpu.value, memoryBytes: mem.value, atMs: at(cpu) });
    const byContainer = new Map<string, { cpu?: Sample; mem?: Sample }>();
    for (const s of samples) {
      if (s.name !== 'container_cpu_usage_seconds_total' && s.name !== 'container_memory_working_set_bytes')
        continue;
      const { namespace, pod, container } = s.labels;
      if (!namespace || !pod || !container) continue;
      const key = containerKey(namespace, pod, container);
      const entry = byContainer.get(key) ?? {};
      if (s.name.includes('cpu')) entry.cpu = s;
      else entry.mem = s;
      byContainer.set(key, entry);
    }
    this.containersOf.set(node, new Set(byContainer.keys()));
    for (const [key, { cpu: c, mem: m }] of byContainer) {
      if (c && m) this.containers.record(key, { cpuSeconds: c.value, memoryBytes: m.value, atMs: at(c) });
    }
  }

  node(name: string): Usage | undefined {
    return this.nodes.usage(name);
  }

  container(namespace: string, pod: string, container: string): Usage | undefined {
    return this.containers.usage(containerKey(namespace, pod, container));
  }
}

const containerKey = (namespace: string, pod: string, container: string) =>
  `${namespace}/${pod}/${container}`;
